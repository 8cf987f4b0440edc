"""An in-memory view of the index's small tables, refreshed when the index changes.

Context assembly looks up dozens of names per keystroke; one LanceDB scan
costs ~10 ms, so the symbol table, per-file imports and per-file chunks are
cached here (`preload` reads all of them in two scans, for long-lived
processes). When a table's version moves (checked at most once per
`CHECK_INTERVAL_S`) only the files whose record changed are re-read, so a
re-index (didSave) is seen within that interval.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import fields
from typing import Any

from codectx.indexer.model import Chunk, Definition, Import
from codectx.retriever.lexical import LexicalIndex
from codectx.retriever.receivers import ReceiverCalls, chains_of, receiver_calls_from_rows

from codectx.tuning import query_threads, settle_heap

CHECK_INTERVAL_S = 1.0
SYNC_LEXICAL_CHUNKS = 5000  # up to this many chunks, preload builds the full-text index at once
MAX_FILES_CACHED = 2048
APPROX_MIN_ROWS = 20_000  # from this many vectors, context's similar-code search scans a projection
APPROX_DIMS = 96
APPROX_POOL = 256  # candidates of the projected pass that get an exact cosine


def _versions(store: Any, method: str = "table_versions") -> tuple[Any, ...]:
    versions = getattr(store, method, None)
    if versions is None:
        return ()
    try:
        return tuple(versions())
    except Exception:
        return ()


class IndexSnapshot:
    """Cached reads of one store; safe to share between threads."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._versions: tuple[Any, ...] = ()
        self._vector_versions: tuple[Any, ...] = ()
        self._checked = 0.0
        self._by_name: dict[str, list[Definition]] | None = None
        self._imports: dict[str, list[Import]] = {}
        self._chunks: dict[str, list[Chunk]] = {}
        self._progress: tuple[int, int] | None = None
        self._dense: dict[str, tuple[list[str], Any]] = {}
        self._dense_rows: dict[str, tuple[Any, dict[str, int]]] = {}
        self._projections: dict[str, tuple[Any, Any, Any]] = {}
        self._by_hash: dict[str, Chunk] = {}
        self._stamps: dict[str, float] = {}
        self._loaded = False  # every file's chunks and imports are in memory
        self._lexical: LexicalIndex | None = None  # built by preload(lexical=True)
        self._by_id: dict[str, Chunk] = {}
        self._lexical_thread: threading.Thread | None = None
        self._receivers: ReceiverCalls | None = None

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._checked < CHECK_INTERVAL_S:
            return
        versions = _versions(self.store)
        vectors = _versions(self.store, "vector_versions")
        with self._lock:
            self._checked = now
            if vectors != self._vector_versions:
                # Vectors fill in after the lexical commit: the next dense request reloads them.
                self._vector_versions = vectors
                reload_meta = getattr(self.store, "reload_meta", None)
                if reload_meta is not None:
                    reload_meta()  # the model id may be new too
                self._progress = None
                self._dense = {}
                self._dense_rows = {}
                self._projections = {}
            if not force and versions and versions == self._versions:
                return
            self._versions = versions
            self._by_name = None
            self._progress = None
            self._dense = {}
            self._dense_rows = {}
            self._projections = {}
            if self._loaded and not force:
                self._reload_changed()
            else:
                self._loaded = False
                self._imports = {}
                self._chunks = {}
                self._by_hash = {}
                self._by_id = {}
                self._lexical = None
                self._receivers = None

    def _files(self) -> dict[str, tuple[float, list[Import]]]:
        rows = self.store.rows("files", ["path", "indexed_at", "imports"])
        return {r["path"]: (float(r["indexed_at"] or 0.0), _imports_from_json(r["imports"])) for r in rows}

    def _chunks_of(
        self, paths: list[str] | None, texts: dict[str, str] | None = None
    ) -> dict[str, list[Chunk]]:
        """Chunks of some files (all when None); with `texts`, also their full-text column by id."""
        names = [f.name for f in fields(Chunk)]
        columns = [*names, "search"] if texts is not None else names
        out: dict[str, list[Chunk]] = {p: [] for p in paths or []}
        batches = [None] if paths is None else [paths[i : i + 500] for i in range(0, len(paths), 500)]
        for batch in batches:
            where = None if batch is None else "path IN (" + ", ".join(_sql(p) for p in batch) + ")"
            for row in self.store.rows("chunks", columns, where):
                chunk = Chunk(**{n: row[n] for n in names})
                out.setdefault(row["path"], []).append(chunk)
                if texts is not None:
                    texts[chunk.id] = row["search"] or ""
        for chunks in out.values():
            chunks.sort(key=lambda c: (c.start_line, c.start_byte))
        return out

    def preload(self, lexical: bool = True, wait: bool = False) -> None:
        """Read every file's chunks and imports into memory (two scans), if the store allows.

        With `lexical`, also build the in-memory full-text index that replaces LanceDB's
        full-text search for this process: seconds on a Django-size index, so on a background
        thread unless `wait` or the index is small (LanceDB answers meanwhile).
        """
        if not hasattr(self.store, "rows"):
            return
        # The full-text column comes with the one chunk scan, for the index built below.
        texts: dict[str, str] | None = {} if lexical and self._lexical is None else None
        versions = self._versions
        if not self._loaded:
            versions = _versions(self.store)
            files = self._files()
            chunks = self._chunks_of(None, texts)
            with self._lock:
                self._versions = versions
                self._checked = time.monotonic()
                self._stamps = {p: stamp for p, (stamp, _i) in files.items()}
                self._imports = {p: imports for p, (_s, imports) in files.items()}
                self._chunks = {p: chunks.get(p, []) for p in files}
                self._by_hash = {c.content_hash: c for cs in self._chunks.values() for c in cs}
                self._by_id = {c.id: c for cs in self._chunks.values() for c in cs}
                self._loaded = True
            settle_heap()
        if not lexical or self._lexical is not None:
            return
        seed = (versions, texts) if texts else None  # None: already loaded, the build scans
        if wait or len(self._by_id) <= SYNC_LEXICAL_CHUNKS:
            # Small indexes build in well under a second: do it now, so answers never change
            # under the caller when the index appears.
            self._warm_up(seed)
        elif self._lexical_thread is None or not self._lexical_thread.is_alive():
            self._lexical_thread = threading.Thread(
                target=self._warm_up, args=(seed,), name="codectx-lexical", daemon=True
            )
            self._lexical_thread.start()

    def _warm_up(self, seed: tuple[tuple[Any, ...], dict[str, str]] | None = None) -> None:
        self._rebuild_lexical(seed)
        self._build_receivers()
        self._warm_token_counts()
        self._warm_projection()
        settle_heap()

    def _warm_projection(self) -> None:
        """Load the vectors and their projection now rather than on the first completion."""
        model_id = getattr(self.store, "model_id", None)
        if not isinstance(model_id, str) or not model_id:
            return
        try:
            loaded = self.dense_matrix(model_id)
            if loaded is not None and len(loaded[0]) >= APPROX_MIN_ROWS:
                self._projection(model_id, loaded[1])
        except Exception:  # the store changed under us: the first request loads it
            return

    def _build_receivers(self) -> ReceiverCalls | None:
        """Count what every file calls on each receiver name (one scan of the files table)."""
        if self._receivers is not None or not hasattr(self.store, "rows"):
            return self._receivers
        versions = _versions(self.store)
        try:
            calls = receiver_calls_from_rows(self.store.rows("files", ["path", "references"]))
        except Exception:  # the store changed under us: the next request tries again
            return None
        with self._lock:
            if versions == self._versions or not self._versions:
                self._receivers = calls
        return calls

    def receiver_calls(self) -> ReceiverCalls | None:
        """Receiver -> member uses over the workspace; None while a large index builds it in the
        background (small ones build it on first use, so answers do not change under the caller)."""
        self.refresh()
        if self._receivers is None and (not self._loaded or len(self._by_id) <= SYNC_LEXICAL_CHUNKS):
            return self._build_receivers()
        return self._receivers

    def _warm_token_counts(self, batch: int = 512) -> None:
        """Count every chunk's tokens once, up front: context assembly counts candidates on every
        request, and a first-time count is what makes a cold request slow. The tokenizer runs
        outside the GIL, so requests are served meanwhile."""
        from codectx.retriever.tokens import default_counter

        count_many = getattr(default_counter(), "count_many", None)
        if count_many is None:
            return
        texts = [c.text for chunks in list(self._chunks.values()) for c in chunks]
        for start in range(0, len(texts), batch):
            count_many(texts[start : start + batch])

    @property
    def lexical_ready(self) -> bool:
        return self._lexical is not None

    def _rebuild_lexical(
        self, seed: tuple[tuple[Any, ...], dict[str, str]] | None = None, attempts: int = 3
    ) -> None:
        """Build a fresh full-text index; swapped in only if no change landed while it was built.

        `seed`: (table versions, texts by chunk id) already read by the caller, for the first try.
        """
        for _ in range(attempts):
            if seed is not None:
                (versions, texts), seed = seed, None
                index = LexicalIndex(list(texts.items()))
            else:
                versions = _versions(self.store)
                try:
                    rows = self.store.rows("chunks", ["id", "search"])
                    index = LexicalIndex([(r["id"], r["search"] or "") for r in rows])
                except Exception:  # the store changed under us: try again
                    continue
            self.refresh(force=False)
            with self._lock:
                if not self._loaded or self._lexical is not None:
                    return
                if versions == self._versions:
                    self._lexical = index
                    return

    def _reload_changed(self) -> None:
        """After a re-index, re-read only the files whose record changed (called under the lock)."""
        files = self._files()
        changed = [p for p, (stamp, _i) in files.items() if self._stamps.get(p) != stamp]
        gone = set(self._stamps) - set(files)
        stale = [c.id for p in (*changed, *gone) for c in self._chunks.get(p, [])]
        for path in gone:
            self._chunks.pop(path, None)
            self._imports.pop(path, None)
        texts: dict[str, str] | None = {} if self._lexical is not None else None
        fresh = self._chunks_of(changed, texts) if changed else {}
        for p in changed:
            self._chunks[p] = fresh.get(p, [])
            self._imports[p] = files[p][1]
        self._by_hash = {c.content_hash: c for cs in self._chunks.values() for c in cs}
        self._by_id = {c.id: c for cs in self._chunks.values() for c in cs}
        if self._receivers is not None:
            for path in gone:
                self._receivers.drop_file(path)
            if changed:
                where = "path IN (" + ", ".join(_sql(p) for p in changed[:500]) + ")"
                if len(changed) > 500:
                    self._receivers = None  # a branch switch: rebuilt on next use or warm-up
                else:
                    for row in self.store.rows("files", ["path", "references"], where):
                        self._receivers.set_file(row["path"], chains_of(row["references"]))
        if self._lexical is not None and texts is not None:
            self._lexical.update(stale, list(texts.items()))
            if self._lexical.needs_rebuild():
                # Many files changed (a branch switch): LanceDB's full text serves while a fresh
                # index is built off the request path.
                self._lexical = None
                self._lexical_thread = threading.Thread(
                    target=self._warm_up, name="codectx-lexical", daemon=True
                )
                self._lexical_thread.start()
        self._stamps = {p: stamp for p, (stamp, _i) in files.items()}

    def _load_symbols(self) -> dict[str, list[Definition]]:
        rows = getattr(self.store, "rows", None)
        table: dict[str, list[Definition]] = {}
        if rows is None:
            return table
        for row in rows("symbols"):
            d = Definition(**row)
            table.setdefault(d.name, []).append(d)
            if d.qualname and d.qualname != d.name:
                table.setdefault(d.qualname, []).append(d)
        for defs in table.values():
            defs.sort(key=lambda d: (d.path, d.start_line))
        return table

    def symbols_named(self, name: str) -> list[Definition]:
        self.refresh()
        table = self._by_name
        if table is None:
            if not hasattr(self.store, "rows"):
                return list(self.store.symbols_named(name))
            table = self._load_symbols()
            with self._lock:
                self._by_name = table
        return table.get(name, [])

    def file_imports(self, path: str) -> list[Import]:
        self.refresh()
        if self._loaded:
            return self._imports.get(path, [])
        found = self._imports.get(path)
        if found is None:
            try:
                found = list(self.store.file_imports(path))
            except Exception:
                found = []
            if len(self._imports) > MAX_FILES_CACHED:
                self._imports.clear()
            self._imports[path] = found
        return found

    def chunks_for_file(self, path: str) -> list[Chunk]:
        self.refresh()
        if self._loaded:
            return self._chunks.get(path, [])
        found = self._chunks.get(path)
        if found is None:
            found = list(self.store.chunks_for_file(path))
            if len(self._chunks) > MAX_FILES_CACHED:
                self._chunks.clear()
            self._chunks[path] = found
        return found

    def progress(self) -> tuple[int, int]:
        """(vectors done, vectors pending)."""
        self.refresh()
        if self._progress is None:
            try:
                stats = self.store.stats()
                self._progress = (int(stats.vectors_done or 0), int(stats.vectors_pending or 0))
            except Exception:
                self._progress = (0, 0)
        return self._progress

    def dense_matrix(self, model_id: str) -> tuple[list[str], Any] | None:
        """All vectors of a model as one normalized matrix (hashes, matrix), loaded once per index version."""
        found = self._dense.get(model_id)
        if found is not None:
            return found
        bulk = getattr(self.store, "vector_matrix", None)
        found = bulk(model_id) if bulk is not None else None
        if found is None:
            return None
        with self._lock:
            self._dense[model_id] = found
        return found

    def dense_rows(self, model_id: str) -> tuple[Any, dict[str, int]] | None:
        """The model's matrix and each chunk hash's row in it (built once per loaded matrix)."""
        loaded = self.dense_matrix(model_id)
        if loaded is None:
            return None
        hashes, matrix = loaded
        found = self._dense_rows.get(model_id)
        if found is None or found[0] is not matrix:
            found = (matrix, {h: i for i, h in enumerate(hashes)})
            with self._lock:
                self._dense_rows[model_id] = found
        return found

    def vector_search(self, vector: Any, k: int, model_id: str, **kwargs: Any) -> list[Any]:
        """Nearest chunks by cosine: an exact scan of the in-memory matrix (~10x faster than a
        LanceDB query at 50k rows); falls back to the store's own search."""
        self.refresh()
        loaded = None if kwargs else self.dense_matrix(model_id)
        if loaded is None:
            return list(self.store.vector_search(vector, k, model_id, **kwargs))
        import numpy as np

        hashes, matrix = loaded
        if not hashes or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).ravel()
        sims = matrix @ query
        take = min(len(hashes), k)
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.argsort(-sims[top], kind="stable")]
        return self._hits(hashes, [int(i) for i in top], [float(sims[i]) for i in top])

    def approx_vector_search(self, vector: Any, k: int, model_id: str) -> list[Any]:
        """Nearest chunks, for completion context on large indexes: a first pass over the vectors
        projected on their top principal axes, then exact cosines for the best few hundred.

        The exact scan reads every vector (~65 MB at 44k chunks: 6-20 ms here, the more under
        load); the first pass reads a quarter of that. Small indexes are scanned exactly.
        """
        self.refresh()
        loaded = self.dense_matrix(model_id)
        if loaded is None or len(loaded[0]) < APPROX_MIN_ROWS or k <= 0:
            return self.vector_search(vector, k, model_id)
        import numpy as np

        hashes, matrix = loaded
        basis, projected = self._projection(model_id, matrix)
        query = np.asarray(vector, dtype=np.float32).ravel()
        coarse = projected @ (query @ basis)
        pool = min(len(hashes), max(APPROX_POOL, 8 * k))
        found = np.argpartition(-coarse, pool - 1)[:pool]
        found.sort()  # a fixed order for the exact pass, so equal cosines break ties by row
        sims = matrix[found] @ query
        order = np.argsort(-sims, kind="stable")[:k]
        return self._hits(hashes, [int(found[i]) for i in order], [float(sims[i]) for i in order])

    def _projection(self, model_id: str, matrix: Any) -> tuple[Any, Any]:
        """The top principal axes of a model's vectors (uncentred: cosines are dot products) and
        every vector projected on them; computed once per loaded matrix (~1 s at 44k chunks)."""
        found = self._projections.get(model_id)
        if found is not None and found[0] is matrix:
            return found[1], found[2]
        import numpy as np

        _values, vectors = np.linalg.eigh(matrix.T @ matrix)
        basis = np.ascontiguousarray(vectors[:, ::-1][:, :APPROX_DIMS], dtype=np.float32)
        projected = np.ascontiguousarray(matrix @ basis)
        with self._lock:
            self._projections[model_id] = (matrix, basis, projected)
        return basis, projected

    def _hits(self, hashes: list[str], rows: list[int], scores: list[float]) -> list[Any]:
        """Chunk hits for matrix rows, best first (chunks missing from memory read by hash)."""
        wanted = [hashes[i] for i in rows]
        missing = [h for h in wanted if h not in self._by_hash]
        if missing:
            found = self.store.chunks_with_hashes(missing)
            with self._lock:
                self._by_hash.update(found)
        from codectx.indexer.storage.store import ChunkHit

        return [
            ChunkHit(self._by_hash[h], score)
            for h, score in zip(wanted, scores, strict=True)
            if h in self._by_hash
        ]

    def fts_search(self, query: str, k: int, *args: Any, **kwargs: Any) -> Any:
        """Full-text search: the in-memory index when built and unfiltered, else the store's."""
        self.refresh()
        lexical = self._lexical
        if lexical is None or args or kwargs:
            return self.store.fts_search(query, k, *args, **kwargs)
        from codectx.indexer.storage.fulltext import query_text
        from codectx.indexer.storage.store import ChunkHit

        by_id = self._by_id
        return [
            ChunkHit(by_id[h.key], h.score) for h in lexical.search(query_text(query), k) if h.key in by_id
        ]


def _sql(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _imports_from_json(raw: str | None) -> list[Import]:
    if not raw:
        return []
    return [
        Import(
            module=d["module"],
            names=tuple((n, a) for n, a in d.get("names", ())),
            alias=d.get("alias", ""),
            resolved=d.get("resolved", ""),
            line=d.get("line", 0),
        )
        for d in json.loads(raw)
    ]


def snapshot_of(store: Any) -> IndexSnapshot:
    """The shared snapshot of a store (one per store object)."""
    if isinstance(store, IndexSnapshot):
        return store
    snap: IndexSnapshot | None = getattr(store, "_codectx_snapshot", None)
    if snap is None:
        query_threads()  # in a process tuned for queries (codectx/tuning.py)
        snap = IndexSnapshot(store)
        try:
            store._codectx_snapshot = snap
        except AttributeError:
            pass
    return snap
