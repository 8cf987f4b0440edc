"""An in-memory view of the index's small tables, refreshed when the index changes.

Context assembly looks up dozens of names per keystroke; one LanceDB scan
costs ~10 ms, so the symbol table, per-file imports and per-file chunks are
cached here (`preload` reads all of them in two scans, for long-lived
processes). When a table's version moves (checked at most once per
`CHECK_INTERVAL_S`) only the files whose record changed are re-read, so a
re-index (didSave) is seen within that interval. The vectors are held by a
`VectorCache` (retriever/vectorcache.py), the in-memory full-text index is a
`LexicalIndex` (retriever/lexical.py); every read goes through the store's
typed `IndexReader` API.

Two ways to fill it. `preload` reads everything now (the shell's `--batch`, small indexes).
`load_in_background` (the language server) answers from index lookups (Arrow copies of the
tables, indexer/storage/columns.py) while a background thread reads everything
(retriever/snapshotload.py), then swaps it all in at once: the "lookup" phase, then the
"memory" phase. Answers are stable within a phase (each phase reads one way); they may change
at the switch, which is logged. Before either, a starting server can answer from the index's
lookup files (`over_lookup_files`, indexer/storage/lookupfiles.py): the "early" phase, lookups
only, no search, while LanceDB opens.

Why this module is longer than ~450 lines: `IndexSnapshot` is one object whose cached tables,
version stamps and phase are read and replaced under one lock by refreshes, the background
swap and every lookup; the loading work itself (reading, building the maps and the BM25 index)
is already in retriever/snapshotload.py, and what is left here is the state and its readers.
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from codectx.indexer.model import Chunk, Definition, Import
from codectx.indexer.storage.columns import TableColumns
from codectx.indexer.storage.fulltext import chunk_search_text, query_text
from codectx.indexer.storage.tables import ChunkHit, StoredChunk
from codectx.retriever.lexical import LexicalIndex
from codectx.retriever.namewords import NameWords
from codectx.retriever.receivers import ReceiverCalls
from codectx.retriever.snapshotload import (
    Loaded,
    Pacer,
    load_all,
    loads_held,
    symbol_table,
    wait_for_gate,
)
from codectx.retriever.terms import TermSets
from codectx.retriever.vectorcache import VectorCache

from codectx.tuning import background_thread, query_threads, settle_heap

if TYPE_CHECKING:  # the store's module imports LanceDB (over a second): types only here
    from codectx.indexer.storage.reader import IndexReader

CHECK_INTERVAL_S = 1.0
SYNC_LEXICAL_CHUNKS = 5000  # up to this many chunks, preload builds the full-text index at once
MAX_FILES_CACHED = 2048
MAX_NAMES_CACHED = 8192
# Without a background load (the "direct" phase: shell commands), the first few names are looked
# up one by one (a LanceDB scan each, ~10 ms on Django) before the whole name table is read
# (~0.5 s there): a one-shot `codectx ask` names a handful, a long-lived process many more.
DIRECT_NAME_LOOKUPS = 8
LOAD_ATTEMPTS = 3

log = logging.getLogger(__name__)


def _versions(read: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    try:
        return tuple(read())
    except Exception:
        return ()


class IndexSnapshot:
    """Cached reads of one store; safe to share between threads."""

    def __init__(self, store: IndexReader) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._versions: tuple[Any, ...] = ()
        self._vector_versions: tuple[Any, ...] = ()
        self._checked = 0.0
        self._by_name: dict[str, list[Definition]] | None = None
        self._name_words: tuple[dict[str, list[Definition]], NameWords] | None = None  # (its table, it)
        self._by_path: dict[str, list[Definition]] | None = None
        self._imports: dict[str, list[Import]] = {}
        self._chunks: dict[str, list[Chunk]] = {}
        self._progress: tuple[int, int] | None = None
        self.vectors = VectorCache(store)
        self._by_hash: dict[str, Chunk] = {}
        self._stamps: dict[str, float] = {}
        self._loaded = False  # every file's chunks and imports are in memory
        self._lexical: LexicalIndex | None = None  # built by preload(lexical=True)
        self._by_id: dict[str, Chunk] = {}
        self._lexical_thread: threading.Thread | None = None
        self._receivers: ReceiverCalls | None = None
        self.context_searcher: Any = None  # retriever/context.py's searcher over this snapshot
        self.term_sets = TermSets()  # definition heads' terms, compared with each scope
        self.pacer = Pacer()  # requests in flight, for a background load to give way to
        self._named: dict[str, list[Definition]] = {}  # lookup phase (and a few direct): per name
        self._direct_names = 0  # names looked up one by one in the direct phase (DIRECT_NAME_LOOKUPS)
        self._columns: TableColumns | None = None  # lookup phase: the tables as Arrow columns
        self._loader: threading.Thread | None = None  # the background load, once started
        self._switched = False  # the background load's structures are in (the "memory" phase)
        self._early = False  # over the index's lookup files while the store opens ("early")
        self.load_timings_ms: dict[str, float] = {}

    @classmethod
    def over_lookup_files(cls, reader: Any) -> IndexSnapshot:
        """The snapshot of a LookupReader (indexer/storage/lookupfiles.py): lookups only, no load."""
        snap = cls(reader)
        snap._early = True
        reader.views["snapshot"] = snap
        return snap

    @property
    def phase(self) -> str:
        """ "direct" (read on demand, no background load), "lookup" (index lookups while the
        background load runs), "memory" (the background load swapped in) or "early" (the index's
        lookup files, while the store opens)."""
        if self._early:
            return "early"
        if self._loader is None:
            return "direct"
        return "memory" if self._switched else "lookup"

    @property
    def in_memory(self) -> bool:
        """Every file's chunks and imports are in memory (preloaded, or the background load is in):
        lookups that would each read the index are cheap."""
        return self._loaded

    @property
    def _lookup(self) -> bool:
        return self._early or (self._loader is not None and not self._switched)

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._checked < CHECK_INTERVAL_S:
            return
        versions = _versions(self.store.table_versions)
        vectors = _versions(self.store.vector_versions)
        with self._lock:
            self._checked = now
            if vectors != self._vector_versions:
                # Vectors fill in after the lexical commit: the next dense request reloads them.
                self._vector_versions = vectors
                self.store.reload_meta()  # the model id may be new too
                self._progress = None
                self.vectors.clear()
            if not force and versions and versions == self._versions:
                return
            self._versions = versions
            self._by_name = None
            self._by_path = None
            self._named = {}
            self._columns = None
            self._progress = None
            self.vectors.clear()
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

    def refresh_now(self) -> None:
        """Check the table versions now: the caller has just written to the index."""
        with self._lock:
            self._checked = 0.0
        self.refresh()

    def _files(self) -> dict[str, tuple[float, list[Import]]]:
        return {p: (f.indexed_at, f.imports) for p, f in self.store.imports_by_file().items()}

    def _chunks_of(
        self, paths: list[str] | None, texts: dict[str, str] | None = None
    ) -> dict[str, list[Chunk]]:
        """Chunks of some files (all when None); with `texts`, also their full-text column by id."""
        out: dict[str, list[Chunk]] = {p: [] for p in paths or []}
        stored: list[StoredChunk] = self.store.chunks_of_files(paths, search_text=texts is not None)
        for item in stored:
            chunk = item.chunk
            out.setdefault(chunk.path, []).append(chunk)
            if texts is not None:
                texts[chunk.id] = item.search_text
        for chunks in out.values():
            chunks.sort(key=lambda c: (c.start_line, c.start_byte))
        return out

    def preload(self, lexical: bool = True, wait: bool = False) -> None:
        """Read every file's chunks and imports into memory (two scans), if the store allows.

        With `lexical`, also build the in-memory full-text index that replaces LanceDB's
        full-text search for this process: seconds on a Django-size index, so on a background
        thread unless `wait` or the index is small (LanceDB answers meanwhile).
        """
        if self._early:
            return  # the lookup files answer single lookups; the store's snapshot loads the rest
        if self._loader is not None:
            if wait:
                self._loader.join()
            return  # the background load fills everything
        # The full-text column comes with the one chunk scan, for the index built below.
        texts: dict[str, str] | None = {} if lexical and self._lexical is None else None
        versions = self._versions
        if not self._loaded:
            versions = _versions(self.store.table_versions)
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

    def load_in_background(self, after: Callable[[], object] | None = None) -> None:
        """Start reading everything into memory on a background thread (once); until it is in,
        requests are answered from index lookups (the "lookup" phase). The thread first calls
        `after` (a bounded wait), if given."""
        if not loads_held():
            try:
                if self.store.chunk_count() <= SYNC_LEXICAL_CHUNKS:
                    return  # small: the first request loads it at once (well under a second)
            except Exception:  # no chunks table yet: the first request reads what there is
                return
        with self._lock:
            if self._loader is not None or self._loaded:
                return
            self._loader = threading.Thread(
                target=self._load_loop, args=(after,), name="codectx-snapshot", daemon=True
            )
        log.info("index %s: answering from index lookups while the snapshot loads", self.store.index_dir)
        self._loader.start()

    def _load_loop(self, after: Callable[[], object] | None = None) -> None:
        background_thread()
        wait_for_gate()
        if after is not None:
            after()
        started = time.perf_counter()
        failures = 0
        while failures < LOAD_ATTEMPTS:
            try:
                loaded = load_all(self.store, lambda: _versions(self.store.table_versions), self.pacer.pause)
                self._warm_token_counts(loaded.chunks)
                self._warm_projection()
            except Exception:  # the store changed or broke under us: try again, then stay on lookups
                failures += 1
                log.info("loading the snapshot of %s failed", self.store.index_dir, exc_info=True)
                continue
            self.refresh_now()
            # A write landed while it was read (an index run): read it again.
            if self._install(loaded):
                self.load_timings_ms = {**loaded.timings_ms, "total": _ms(started)}
                log.info(
                    "index %s: switched from index lookups to the in-memory snapshot after %.0f ms "
                    "(%d files, %d chunks; %s)",
                    self.store.index_dir,
                    self.load_timings_ms["total"],
                    len(loaded.chunks),
                    sum(len(c) for c in loaded.chunks.values()),
                    ", ".join(f"{k} {v:.0f} ms" for k, v in loaded.timings_ms.items()),
                )
                settle_heap()
                return
        log.warning("index %s: the snapshot did not load; answering from lookups", self.store.index_dir)

    def _install(self, loaded: Loaded) -> bool:
        """Swap in a background load, all at once, if no change landed while it was read."""
        with self._lock:
            if self._versions and loaded.versions != self._versions:
                return False
            self._versions = loaded.versions
            self._checked = time.monotonic()
            self._stamps = loaded.stamps
            self._imports = loaded.imports
            self._chunks = loaded.chunks
            self._by_hash = {c.content_hash: c for cs in loaded.chunks.values() for c in cs}
            self._by_id = {c.id: c for cs in loaded.chunks.values() for c in cs}
            self._by_name = loaded.by_name
            self._lexical = loaded.lexical
            self._receivers = loaded.receivers
            self._loaded = True
            self._switched = True
            self._columns = None  # the lookup phase's Arrow copies: memory answers from now on
            self._named = {}
            return True

    def _warm_up(self, seed: tuple[tuple[Any, ...], dict[str, str]] | None = None) -> None:
        self._rebuild_lexical(seed)
        self._build_receivers()
        self._warm_name_words()
        self._warm_token_counts()
        self._warm_projection()
        settle_heap()

    def _warm_name_words(self) -> None:
        """Build the name-word index now rather than on the first prose search (0.6 s on Django),
        while the index has no vectors: searches with vectors use it only when
        `retriever.name_words_dense_weight` is set (retriever/search.py), and the first builds it."""
        try:
            if self.progress()[0] == 0:
                self.name_words()
        except Exception:  # the store changed under us: the first search builds it
            return

    def _warm_projection(self) -> None:
        """Load the vectors and their projection now rather than on the first completion."""
        model_id = self.store.model_id
        if not isinstance(model_id, str) or not model_id:
            return
        try:
            self.vectors.warm(model_id)
        except Exception:  # the store changed under us: the first request loads it
            return

    def _build_receivers(self) -> ReceiverCalls | None:
        """Count what every file calls on each receiver name (one scan of the files table)."""
        if self._receivers is not None:
            return self._receivers
        versions = _versions(self.store.table_versions)
        try:
            calls = ReceiverCalls.of_files(self.store.reference_chains())
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
        if self._lookup:
            return None  # the workspace-wide counts come with the snapshot
        if self._receivers is None and (not self._loaded or len(self._by_id) <= SYNC_LEXICAL_CHUNKS):
            return self._build_receivers()
        return self._receivers

    def _warm_token_counts(self, chunks: dict[str, list[Chunk]] | None = None, batch: int = 512) -> None:
        """Count every chunk's tokens once, up front: context assembly counts candidates on every
        request, and a first-time count is what makes a cold request slow. The tokenizer runs
        outside the GIL, so requests are served meanwhile."""
        from codectx.retriever.tokens import default_counter

        count_many = getattr(default_counter(), "count_many", None)
        if count_many is None:
            return
        by_file = self._chunks if chunks is None else chunks
        texts = [c.text for cs in list(by_file.values()) for c in cs]
        for start in range(0, len(texts), batch):
            count_many(texts[start : start + batch])
            self.pacer.pause()

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
                versions = _versions(self.store.table_versions)
                try:
                    index = LexicalIndex(list(self.store.search_texts().items()))
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
                if len(changed) > 500:
                    self._receivers = None  # a branch switch: rebuilt on next use or warm-up
                else:
                    for path, chains in self.store.reference_chains(changed).items():
                        self._receivers.set_file(path, chains)
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
        return symbol_table(self.store.all_symbols())

    def _symbol_table(self) -> dict[str, list[Definition]]:
        """The whole name -> definitions table, scanned once and kept until the tables change."""
        table = self._by_name
        if table is None:
            table = self._load_symbols()
            with self._lock:
                self._by_name = table
        return table

    def symbols_named(self, name: str) -> list[Definition]:
        self.refresh()
        if not self._lookup and self._by_name is None:
            found = self._named.get(name)
            if found is None and self._direct_names < DIRECT_NAME_LOOKUPS:
                found = list(self.store.symbols_named(name))  # sorted as the table's lists are
                with self._lock:
                    self._direct_names += 1
                    self._named[name] = found
            if found is not None:
                return found
        if self._lookup:
            found = self._named.get(name)
            if found is None:
                found = self._lookups().symbols_named(name)  # as the store answers, in its order
                with self._lock:
                    if len(self._named) > MAX_NAMES_CACHED:
                        self._named = {}
                    self._named[name] = found
            return found
        return self._symbol_table().get(name, [])

    def name_words(self) -> NameWords | None:
        """The name-word index of the symbol table (retriever/namewords.py), built on first use
        and again after the table changes; None in the lookup phase (no whole-table decode)."""
        self.refresh()
        if self._lookup:
            return None
        table = self._symbol_table()
        cached = self._name_words
        if cached is not None and cached[0] is table:
            return cached[1]
        words = NameWords(table)
        with self._lock:
            self._name_words = (table, words)
        return words

    def symbols_in_file(self, path: str) -> list[Definition]:
        """A file's definitions in line order (a module's members, a class's methods)."""
        self.refresh()
        if self._lookup:  # the lookup phase: the Arrow copy answers; no whole-table decode here
            return self._lookups().symbols_in_file(path)
        table = self._by_path
        if table is None:
            table = {}
            # From the loaded name table when there is one (each definition once): no scan.
            known = self._by_name
            every = {id(d): d for defs in known.values() for d in defs}.values() if known else None
            for d in every if every is not None else self.store.all_symbols():
                table.setdefault(d.path, []).append(d)
            for defs in table.values():
                defs.sort(key=lambda d: d.start_line)
            with self._lock:
                self._by_path = table
        return table.get(path, [])

    def symbols_in_folder(self, folder: str) -> list[Definition]:
        """The definitions of a folder's own files (a Go package's: a type's methods may be in any
        of them); [] in the lookup phase (no whole-table decode there)."""
        if self._lookup:
            return []
        self.symbols_in_file("")  # the table by path, built once per symbol table
        table = self._by_path or {}
        return [d for path, defs in table.items() if posixpath.dirname(path) == folder for d in defs]

    @property
    def version(self) -> tuple[Any, ...]:
        """The tables' versions as last read: changes whenever an index run commits."""
        return self._versions

    def file_imports(self, path: str) -> list[Import]:
        self.refresh()
        if self._loaded:
            return self._imports.get(path, [])
        found = self._imports.get(path)
        if found is None:
            try:
                found = list(self._lookups().file_imports(path))
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
            found = list(self._lookups().chunks_for_file(path))
            if len(self._chunks) > MAX_FILES_CACHED:
                self._chunks.clear()
            self._chunks[path] = found
        return found

    def warm_lookups(self) -> None:
        """In the lookup phase, read the tables the first lookups need now (the language server's
        warm-up: the first request then finds them read); the background load gives way meanwhile,
        as it does to a request. Nothing in the other phases."""
        if not self._lookup:
            return
        with self.pacer.serving():
            lookups = self._lookups()
            if isinstance(lookups, TableColumns):
                lookups.read_all()

    def seed_lookups(self, columns: TableColumns) -> None:
        """In the lookup phase, answer lookups from `columns`, tables already read at the store's
        current versions (the lookup files a starting server answered from); nothing otherwise."""
        self.refresh_now()  # the versions are read first: a later move still resets the copies
        with self._lock:
            if self._lookup and self._columns is None:
                self._columns = columns

    def _lookups(self) -> IndexReader | TableColumns:
        """Where single lookups go: Arrow copies of the tables in the lookup phase (a few hundred
        ms to read, then no LanceDB scan per name or file), else the store."""
        if not self._lookup:
            return self.store
        columns = self._columns
        if columns is None:
            columns = self._columns = self.store.columns()
        return columns

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
        """All vectors of a model as one normalized matrix (hashes, matrix), loaded once per index
        version; None while the snapshot loads in the background."""
        return None if self._lookup else self.vectors.matrix(model_id)

    def dense_rows(self, model_id: str) -> tuple[Any, dict[str, int]] | None:
        """The model's matrix and each chunk hash's row in it (built once per loaded matrix); None
        while the snapshot loads in the background."""
        return None if self._lookup else self.vectors.rows(model_id)

    def vector_search(self, vector: Any, k: int, model_id: str, **kwargs: Any) -> list[ChunkHit]:
        """Nearest chunks by cosine: an exact scan of the in-memory matrix (~10x faster than a
        LanceDB query at 50k rows); falls back to the store's own search (filters, no vectors)."""
        self.refresh()
        found = None if kwargs or self._lookup else self.vectors.nearest(vector, k, model_id)
        if found is None:
            return list(self.store.vector_search(vector, k, model_id, **kwargs))
        return self._hits(found)

    def nearest_hashes(self, vector: Any, k: int, model_id: str) -> list[tuple[str, float]] | None:
        """The `k` nearest content hashes by cosine with their scores, no chunk read: a caller that
        re-ranks them reads only the chunks it keeps (`hits_for`). None while the snapshot loads
        in the background or without vectors for the model."""
        self.refresh()
        return None if self._lookup else self.vectors.nearest(vector, k, model_id)

    def hits_for(self, scored: list[tuple[str, float]]) -> list[ChunkHit]:
        """Chunk hits for (content hash, score) pairs, in their order; a hash whose chunk is gone
        is left out."""
        return self._hits(scored)

    def approx_vector_search(self, vector: Any, k: int, model_id: str) -> list[ChunkHit]:
        """Nearest chunks for completion context: approximate on large indexes (vectorcache.py)."""
        self.refresh()
        found = None if self._lookup else self.vectors.approx_nearest(vector, k, model_id)
        if found is None:
            return list(self.store.vector_search(vector, k, model_id))
        return self._hits(found)

    def _hits(self, scored: list[tuple[str, float]]) -> list[ChunkHit]:
        """Chunk hits for (content hash, score) pairs, best first (chunks missing from memory read
        by hash)."""
        missing = [h for h, _score in scored if h not in self._by_hash]
        if missing:
            found = self.store.chunks_with_hashes(missing)
            with self._lock:
                self._by_hash.update(found)
        return [ChunkHit(self._by_hash[h], score) for h, score in scored if h in self._by_hash]

    def fts_search(self, query: str, k: int, *args: Any, **kwargs: Any) -> list[ChunkHit]:
        """Full-text search: the in-memory index when built and unfiltered, else the store's."""
        self.refresh()
        lexical = self._lexical
        if lexical is None or args or kwargs:
            return self.store.fts_search(query, k, *args, **kwargs)

        by_id = self._by_id
        return [
            ChunkHit(by_id[h.key], h.score) for h in lexical.search(query_text(query), k) if h.key in by_id
        ]

    def text_scores(self, query: str, chunks: list[Chunk]) -> list[float] | None:
        """The full-text (BM25) score each chunk's text would get for `query` in the in-memory
        index, whether or not it made the full-text list (search's reranker, retriever/rerank.py);
        None until that index is built."""
        lexical = self._lexical
        if lexical is None:
            return None
        terms = query_text(query)
        return [lexical.score_text(terms, chunk_search_text(c)) for c in chunks]


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


# What the retriever's entry points take: an index reader, or a snapshot already made of one.
IndexSource: TypeAlias = "IndexReader | IndexSnapshot"


def snapshot_of(store: IndexSource) -> IndexSnapshot:
    """The shared snapshot of a store (one per store object, kept in its `views`)."""
    if isinstance(store, IndexSnapshot):
        return store
    snap: IndexSnapshot | None = store.views.get("snapshot")
    if snap is None:
        query_threads()  # in a process tuned for queries (codectx/tuning.py)
        snap = store.views.setdefault("snapshot", IndexSnapshot(store))
    return snap
