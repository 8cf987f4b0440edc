"""The on-disk index: LanceDB tables for chunks, symbols, files and vectors.

An index folder holds `meta.json` (schema version, model id, last run),
`db/` (LanceDB), a `.gitignore` of `*`, the lock file (indexer/storage/lock.py), the
`.codectx-index` marker (indexer/storage/owner.py: codectx deletes only in folders
that carry it) and, only while a write is in progress, `journal.json`.

Tables: `chunks` (every Chunk field, its id and an FTS-indexed `search`
column), `symbols` (definitions), `files` (one record per indexed file, with
its imports and references as JSON) and one `vectors_<model>` table per
embedding model, keyed by chunk content hash. The vectors table is the
embedding cache: unchanged or renamed chunks find their vector by hash, and
chunks whose vector is pending simply have no row there yet.

Crash safety: every LanceDB write is an atomic commit. Before rewriting any
file's rows, the paths are written to `journal.json` (fsynced); the file
records are written last and the journal removed after. A writer that finds a
journal on open deletes all rows of those paths, so a kill -9 at any moment
leaves files either fully indexed or absent (and re-indexed by the next run).

Damage: every LanceDB or Lance failure is translated once (`storeguard.lance_failure`) into
IndexCorrupt (rebuild) or IndexUnwritable (a full disk or read-only folder: nothing to
rebuild). `verify` checks the tables (open, count, schema; with `deep`, every row read and
the full-text index queried); `reset` deletes only what codectx itself writes in an index
folder and can keep the vectors tables, the embedding cache, when they read back whole.

Filters: read calls take `languages` (list of language names) and `path_glob`
(a glob on the workspace-relative path: `*` and `**` match any characters,
`/` included; `?` one character), or a raw LanceDB SQL `where` clause over the
chunk columns; all given filters are combined with AND.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import timedelta
from hashlib import sha1
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from codectx.indexer.embedding.embedder import NAME_SUFFIX
from codectx.indexer.errors import IndexCorrupt, IndexNotFound, IndexSchemaMismatch
from codectx.indexer.model import Chunk, Definition, Import, Reference
from codectx.indexer.storage.fulltext import chunk_search_text, query_text
from codectx.indexer.storage.owner import check_deletable, claim
from codectx.indexer.storage.storeguard import (
    guard_methods,
    intact_vector_tables,
    is_lance_failure,
    remove_tables,
)
from codectx.indexer.walk.manifest import JOURNAL_FILE, META_FILE, SCHEMA_VERSION, Manifest
from lancedb.index import FTS

# Rebuild the FTS index once this share of rows is unindexed (they are still searched, just slower).
FTS_REBUILD_SHARE = 0.1
FTS_REBUILD_MIN_ROWS = 2000
COMPACT_FRAGMENTS = 48

_CHUNK_FIELDS: list[tuple[str, pa.DataType]] = [
    ("id", pa.string()),
    ("path", pa.string()),
    ("language", pa.string()),
    ("kind", pa.string()),
    ("symbol", pa.string()),
    ("qualname", pa.string()),
    ("signature", pa.string()),
    ("doc", pa.string()),
    ("start_line", pa.int32()),
    ("end_line", pa.int32()),
    ("start_byte", pa.int64()),
    ("end_byte", pa.int64()),
    ("text", pa.string()),
    ("content_hash", pa.string()),
]
CHUNKS_SCHEMA = pa.schema([*_CHUNK_FIELDS, ("search", pa.string())])
CHUNK_COLUMNS = [name for name, _ in _CHUNK_FIELDS if name != "id"]
SYMBOLS_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("qualname", pa.string()),
        ("kind", pa.string()),
        ("path", pa.string()),
        ("language", pa.string()),
        ("start_line", pa.int32()),
        ("end_line", pa.int32()),
        ("exported", pa.bool_()),
    ]
)
FILES_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("content_hash", pa.string()),
        ("language", pa.string()),
        ("n_chunks", pa.int32()),
        ("syntax_errors", pa.int32()),
        ("imports", pa.string()),
        ("references", pa.string()),
        ("indexed_at", pa.float64()),
    ]
)


@dataclass(frozen=True)
class ChunkHit:
    chunk: Chunk
    score: float  # higher is better; BM25 for fts_search, cosine similarity for vector_search


@dataclass(frozen=True)
class FileRecord:
    """What the index knows about one file; size+mtime spot changes, content_hash confirms them."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    language: str
    n_chunks: int = 0
    syntax_errors: int = 0
    indexed_at: float = 0.0


@dataclass(frozen=True)
class FileData:
    """A parsed file ready to be written: its record and everything extracted from it."""

    record: FileRecord
    chunks: Sequence[Chunk] = ()
    definitions: Sequence[Definition] = ()
    imports: Sequence[Import] = ()
    references: Sequence[Reference] = ()


@dataclass(frozen=True)
class IndexStats:
    index_dir: str
    schema_version: int
    model_id: str | None
    files: int
    chunks: int
    symbols: int
    chunks_per_language: dict[str, int] = field(default_factory=dict)
    files_per_language: dict[str, int] = field(default_factory=dict)
    vectors_done: int = 0  # distinct chunk contents that have a vector for model_id
    vectors_pending: int = 0
    last_indexed: float | None = None  # epoch seconds of the last completed run
    syntax_error_files: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _glob_to_like(glob: str) -> str:
    out = []
    for ch in glob:
        if ch in "%_\\":
            out.append("\\" + ch)
        elif ch == "*":
            if not out or out[-1] != "%":
                out.append("%")
        elif ch == "?":
            out.append("_")
        else:
            out.append(ch)
    return "".join(out)


def filter_sql(
    languages: Sequence[str] | None = None, path_glob: str | None = None, where: str | None = None
) -> str | None:
    """One SQL filter from the helper arguments (see the module docstring), or None."""
    parts: list[str] = []
    if languages:
        parts.append(f"language IN ({', '.join(sql_str(lang) for lang in languages)})")
    if path_glob:
        parts.append(f"path LIKE {sql_str(_glob_to_like(path_glob))} ESCAPE '\\'")
    if where:
        parts.append(f"({where})")
    return " AND ".join(parts) if parts else None


def _in_list(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def _batched(values: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _chunk_from_row(row: dict[str, Any]) -> Chunk:
    return Chunk(**{name: row[name] for name in CHUNK_COLUMNS})


def _chunk_row(chunk: Chunk) -> dict[str, Any]:
    row = {name: getattr(chunk, name) for name in CHUNK_COLUMNS}
    row["id"] = chunk.id
    row["search"] = chunk_search_text(chunk)
    return row


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _flat(item: Any) -> dict[str, Any]:
    """A flat dataclass as a dict: `asdict` without its deep copy (a third of a big file's commit)."""
    return {name: getattr(item, name) for name in _field_names(type(item))}


def vectors_table_name(model_id: str) -> str:
    return "vectors_" + sha1(model_id.encode()).hexdigest()[:16]


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:  # a full disk: no half-written temp file left behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


class IndexStore:
    """Read and write access to one index folder. Readers always see the latest commit."""

    def __init__(self, index_dir: Path, db: Any, meta: dict[str, Any]) -> None:
        self.index_dir = index_dir
        self._db = db
        self._meta = meta
        self._tables: dict[str, Any] = {}

    # ---- opening -------------------------------------------------------------------------------

    @staticmethod
    def exists(index_dir: Path) -> bool:
        return (index_dir / META_FILE).is_file()

    @classmethod
    def read_meta(cls, index_dir: Path) -> dict[str, Any]:
        try:
            meta = json.loads((index_dir / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexNotFound(
                f"no index at {index_dir}; run `codectx index` in the workspace first"
            ) from None
        except (OSError, ValueError) as exc:
            raise IndexCorrupt(
                f"cannot read {index_dir / META_FILE} ({exc}); run `codectx index` to rebuild the index"
            ) from None
        if not isinstance(meta, dict):
            raise IndexCorrupt(f"{index_dir / META_FILE} is malformed; run `codectx index` to rebuild")
        return meta

    @classmethod
    def open(cls, index_dir: Path, create: bool = False) -> IndexStore:
        """Open an index; with `create`, make an empty one if none exists.

        Raises IndexNotFound (no index), IndexSchemaMismatch (another codectx version wrote
        it: `reset` then `open(create=True)` rebuilds) or IndexCorrupt.
        """
        index_dir = Path(index_dir)
        if not cls.exists(index_dir):
            if not create:
                raise IndexNotFound(f"no index at {index_dir}; run `codectx index` in the workspace first")
            return cls._create(index_dir)
        meta = cls.read_meta(index_dir)
        version = meta.get("schema_version")
        if version != SCHEMA_VERSION:
            raise IndexSchemaMismatch(
                f"the index at {index_dir} has schema version {version!r}, this codectx needs "
                f"{SCHEMA_VERSION}; run `codectx index` to rebuild it"
            )
        db = lancedb.connect(index_dir / "db", read_consistency_interval=timedelta(0))
        store = cls(index_dir, db, meta)
        for name in ("chunks", "symbols", "files"):
            store._table(name)  # a missing or unreadable table: IndexCorrupt (see _translated)
        return store

    @classmethod
    def _create(cls, index_dir: Path) -> IndexStore:
        claim(index_dir)  # created and marked, or refused if it holds what codectx did not create
        gitignore = index_dir / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("*\n", encoding="utf-8")
        db_dir = index_dir / "db"
        if db_dir.exists() or db_dir.is_symlink():
            # Leftovers of a creation that died before meta.json was written (the folder is ours:
            # claimed above); vectors tables (the embedding cache, keyed by content) stay.
            check_deletable(index_dir, db_dir)
            remove_tables(db_dir, keep_vectors=True)
        db = lancedb.connect(db_dir, read_consistency_interval=timedelta(0))
        db.create_table("chunks", schema=CHUNKS_SCHEMA)
        db.create_table("symbols", schema=SYMBOLS_SCHEMA)
        db.create_table("files", schema=FILES_SCHEMA)
        meta = {"schema_version": SCHEMA_VERSION, "created_at": time.time(), "model_id": None}
        # meta.json last: its presence means the tables exist.
        _write_json_atomic(index_dir / META_FILE, meta)
        return cls(index_dir, db, meta)

    @staticmethod
    def reset(index_dir: Path, keep_vectors: bool = False) -> None:
        """Delete an index's data (not the lock) so that it can be rebuilt; with `keep_vectors`,
        the vectors tables that read back whole stay (the embedding cache).

        Only in a folder codectx created (its marker, indexer/storage/owner.py), and only what codectx
        writes: its own files and LanceDB's table folders (`<name>.lance`) under `db/`."""
        check_deletable(index_dir, index_dir / "db")
        Manifest.drop(index_dir)
        (index_dir / META_FILE).unlink(missing_ok=True)
        (index_dir / JOURNAL_FILE).unlink(missing_ok=True)
        db_dir = index_dir / "db"
        keep = intact_vector_tables(db_dir) if keep_vectors else set()
        remove_tables(db_dir, keep_vectors=False, keep=keep)

    def _table(self, name: str) -> Any:
        table = self._tables.get(name)
        if table is None:
            table = self._db.open_table(name)
            self._tables[name] = table
        return table

    def _vectors(self, model_id: str) -> Any | None:
        name = vectors_table_name(model_id)
        if name in self._tables:
            return self._tables[name]
        try:
            table = self._db.open_table(name)
        except (ValueError, FileNotFoundError, RuntimeError):
            return None
        self._tables[name] = table
        return table

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    @property
    def model_id(self) -> str | None:
        return self._meta.get("model_id")

    def reload_meta(self) -> None:
        """Re-read meta.json: another writer (the CLI beside a language server) may have moved the
        model or the last run. A missing or damaged file keeps what was read at open."""
        try:
            meta = json.loads((self.index_dir / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(meta, dict):
            self._meta = meta

    def update_meta(self, **values: Any) -> None:
        self._meta.update(values)
        _write_json_atomic(self.index_dir / META_FILE, self._meta)

    # ---- reading -------------------------------------------------------------------------------

    def _scan(self, table: str, where: str | None, columns: list[str] | None = None) -> list[dict[str, Any]]:
        query = self._table(table).search()
        if where:
            query = query.where(where)
        if columns:
            query = query.select(columns)
        return query.limit(None).to_arrow().to_pylist()  # type: ignore[no-any-return]

    # Bulk reads for in-memory views (the retriever's snapshot): one scan instead of many lookups.

    def rows(
        self, table: str, columns: list[str] | None = None, where: str | None = None
    ) -> list[dict[str, Any]]:
        """Every row of `chunks`, `symbols` or `files` (optionally filtered by a SQL `where`)."""
        if table not in ("chunks", "symbols", "files"):
            raise ValueError(f"no table {table!r}")
        return self._scan(table, where, columns)

    def table_versions(self) -> tuple[int, ...]:
        """Versions of the symbols, files and chunks tables: any write moves at least one."""
        return tuple(int(self._table(name).version) for name in ("symbols", "files", "chunks"))

    def vector_versions(self) -> tuple[tuple[str, int], ...]:
        """(table, version) of every vectors table (body and name vectors): embedding moves them."""
        found = []
        for name in sorted(self._db.list_tables().tables):
            if name.startswith("vectors_"):
                table = self._tables.get(name)
                if table is None:
                    try:
                        table = self._tables[name] = self._db.open_table(name)
                    except (ValueError, FileNotFoundError, RuntimeError):
                        continue
                found.append((name, int(table.version)))
        return tuple(found)

    def vector_matrix(self, model_id: str) -> tuple[list[str], np.ndarray] | None:
        """All vectors of a model: (content hashes, float32 matrix with one row each), or None."""
        table = self._vectors(model_id)
        if table is None:
            return None
        data = table.search().select(["content_hash", "vector"]).limit(None).to_arrow()
        hashes = data.column("content_hash").to_pylist()
        flat = data.column("vector").combine_chunks()
        dims = flat.type.list_size
        values = flat.values.to_numpy(zero_copy_only=False)
        return hashes, np.asarray(values, dtype=np.float32).reshape(-1, dims)

    def row_count(self, table: str) -> int:
        return int(self._table(table).count_rows())

    def fts_search(
        self,
        query: str,
        k: int,
        where: str | None = None,
        *,
        languages: Sequence[str] | None = None,
        path_glob: str | None = None,
    ) -> list[ChunkHit]:
        """Best `k` chunks for a keyword query (BM25 over names, signature, doc, body and path)."""
        if not query.strip() or k <= 0:
            return []
        search = (
            self._table("chunks")
            .search(query_text(query), query_type="fts", fts_columns="search")
            .select([*CHUNK_COLUMNS, "_score"])
        )
        sql = filter_sql(languages, path_glob, where)
        if sql:
            search = search.where(sql, prefilter=True)
        rows = search.limit(k).to_arrow().to_pylist()
        return [ChunkHit(_chunk_from_row(row), float(row["_score"])) for row in rows]

    def vector_search(
        self,
        vector: np.ndarray,
        k: int,
        model_id: str,
        where: str | None = None,
        *,
        languages: Sequence[str] | None = None,
        path_glob: str | None = None,
    ) -> list[ChunkHit]:
        """Nearest `k` chunks by cosine similarity among chunks that have a vector for `model_id`.

        Exact search. Chunks with identical content share a vector; each copy is returned.
        """
        table = self._vectors(model_id)
        if table is None or k <= 0:
            return []
        sql = filter_sql(languages, path_glob, where)
        total = table.count_rows()
        fetch = max(4 * k, 64)
        query = np.asarray(vector, dtype=np.float32).ravel()
        while True:
            near = (
                table.search(query, vector_column_name="vector")
                .distance_type("cosine")
                .select(["content_hash", "_distance"])
                .limit(fetch)
                .to_arrow()
            )
            score_of: dict[str, float] = {}
            for h, dist in zip(
                near.column("content_hash").to_pylist(), near.column("_distance").to_pylist(), strict=True
            ):
                score_of.setdefault(h, 1.0 - float(dist))
            hits: list[ChunkHit] = []
            if score_of:
                clause = _in_list("content_hash", score_of)
                rows = self._scan("chunks", f"{clause} AND ({sql})" if sql else clause, CHUNK_COLUMNS)
                hits = [ChunkHit(_chunk_from_row(r), score_of[r["content_hash"]]) for r in rows]
            if len(hits) >= k or fetch >= total:
                hits.sort(key=lambda h: (-h.score, h.chunk.path, h.chunk.start_line))
                return hits[:k]
            fetch *= 4

    def symbols_named(self, name: str) -> list[Definition]:
        """Definitions whose short name or qualified name is `name`."""
        rows = self._scan("symbols", f"name = {sql_str(name)} OR qualname = {sql_str(name)}")
        return sorted((Definition(**row) for row in rows), key=lambda d: (d.path, d.start_line))

    def symbols_in_file(self, path: str) -> list[Definition]:
        rows = self._scan("symbols", f"path = {sql_str(path)}")
        return sorted((Definition(**row) for row in rows), key=lambda d: d.start_line)

    def _file_json(self, path: str, column: str) -> list[dict[str, Any]]:
        rows = self._scan("files", f"path = {sql_str(path)}", [column])
        if not rows or not rows[0][column]:
            return []
        return json.loads(rows[0][column])  # type: ignore[no-any-return]

    def file_imports(self, path: str) -> list[Import]:
        return [
            Import(
                module=d["module"],
                names=tuple((n, a) for n, a in d.get("names", ())),
                alias=d.get("alias", ""),
                resolved=d.get("resolved", ""),
                line=d.get("line", 0),
            )
            for d in self._file_json(path, "imports")
        ]

    def file_references(self, path: str) -> list[Reference]:
        return [Reference(**d) for d in self._file_json(path, "references")]

    def chunks_for_file(self, path: str) -> list[Chunk]:
        rows = self._scan("chunks", f"path = {sql_str(path)}", CHUNK_COLUMNS)
        return sorted((_chunk_from_row(r) for r in rows), key=lambda c: (c.start_line, c.start_byte))

    def all_chunks(self, batch_size: int = 2048) -> Iterator[Chunk]:
        """Every chunk, in no particular order, streamed in batches."""
        reader = self._table("chunks").search().select(CHUNK_COLUMNS).limit(None).to_batches(batch_size)
        for batch in reader:
            for row in batch.to_pylist():
                yield _chunk_from_row(row)

    def chunk_count(self) -> int:
        """Chunks in the index (cheap: no rows read)."""
        return int(self._table("chunks").count_rows())

    def file_records(self) -> dict[str, FileRecord]:
        columns = [f.name for f in FILES_SCHEMA if f.name not in ("imports", "references")]
        rows = self._scan("files", None, columns)
        return {row["path"]: FileRecord(**row) for row in rows}

    def chunk_hashes(self) -> set[str]:
        return set(
            self._table("chunks")
            .search()
            .select(["content_hash"])
            .limit(None)
            .to_arrow()
            .column("content_hash")
            .to_pylist()
        )

    def vector_hashes(self, model_id: str) -> set[str]:
        table = self._vectors(model_id)
        if table is None:
            return set()
        return set(
            table.search().select(["content_hash"]).limit(None).to_arrow().column("content_hash").to_pylist()
        )

    def chunks_with_hashes(self, hashes: Sequence[str]) -> dict[str, Chunk]:
        """One chunk per content hash (any copy: they have the same text)."""
        out: dict[str, Chunk] = {}
        for part in _batched(list(hashes)):
            for row in self._scan("chunks", _in_list("content_hash", part), CHUNK_COLUMNS):
                out.setdefault(row["content_hash"], _chunk_from_row(row))
        return out

    def stats(self, model_id: str | None = None) -> IndexStats:
        model_id = model_id or self.model_id
        chunk_rows = (
            self._table("chunks").search().select(["language", "content_hash"]).limit(None).to_arrow()
        )
        per_lang: dict[str, int] = {}
        for lang in chunk_rows.column("language").to_pylist():
            per_lang[lang] = per_lang.get(lang, 0) + 1
        hashes = set(chunk_rows.column("content_hash").to_pylist())
        done = len(hashes & self.vector_hashes(model_id)) if model_id else 0
        files = self._table("files").search().select(["language", "syntax_errors"]).limit(None).to_arrow()
        files_per_lang: dict[str, int] = {}
        for lang in files.column("language").to_pylist():
            files_per_lang[lang] = files_per_lang.get(lang, 0) + 1
        return IndexStats(
            index_dir=str(self.index_dir),
            schema_version=SCHEMA_VERSION,
            model_id=model_id,
            files=files.num_rows,
            chunks=chunk_rows.num_rows,
            symbols=self._table("symbols").count_rows(),
            chunks_per_language=dict(sorted(per_lang.items())),
            files_per_language=dict(sorted(files_per_lang.items())),
            vectors_done=done,
            vectors_pending=len(hashes) - done,
            last_indexed=self._meta.get("last_indexed"),
            syntax_error_files=sum(1 for n in files.column("syntax_errors").to_pylist() if n),
        )

    def verify(self, deep: bool = False) -> list[str]:
        """Check the tables codectx trusts: open, row count, schema; with `deep`, read every row
        and query the full-text index. Raises IndexCorrupt; returns what was repaired in place
        (a full-text index that no longer reads is built again)."""
        expected = {"chunks": CHUNKS_SCHEMA, "symbols": SYMBOLS_SCHEMA, "files": FILES_SCHEMA}
        for name, schema in expected.items():
            table = self._table(name)
            rows = int(table.count_rows())
            have = [(f.name, f.type) for f in table.schema]
            if have != [(f.name, f.type) for f in schema]:
                raise IndexCorrupt(
                    f"the {name} table of the index at {self.index_dir} has an unexpected layout; "
                    "run `codectx index` to rebuild it"
                )
            if deep:
                seen = sum(b.num_rows for b in table.search().limit(None).to_batches(4096))
                if seen != rows:
                    raise IndexCorrupt(
                        f"the {name} table of the index at {self.index_dir} lists {rows} rows but "
                        f"{seen} read back; run `codectx index` to rebuild it"
                    )
        if deep:
            return self._check_vectors() + self._check_fts()
        return []

    def _check_vectors(self) -> list[str]:
        """Drop each vectors table that no longer reads back whole: only its vectors are lost,
        and the next embedding pass computes them again."""
        db_dir = self.index_dir / "db"
        intact = intact_vector_tables(db_dir)
        repaired = []
        for entry in sorted(db_dir.glob("vectors_*.lance")):
            name = entry.name.removesuffix(".lance")
            if name not in intact:
                self._tables.pop(name, None)
                shutil.rmtree(entry, ignore_errors=True)
                repaired.append(f"the vectors table {name} did not read back; its vectors are computed again")
        return repaired

    def _check_fts(self) -> list[str]:
        table = self._table("chunks")
        if not any(i.index_type == "FTS" for i in table.list_indices()):
            return []  # none yet (or dropped): ensure_fts builds it
        try:
            table.search("codectx", query_type="fts", fts_columns="search").limit(1).to_arrow()
        except BaseException as exc:
            if not is_lance_failure(exc):
                raise
            table.create_index("search", config=FTS(), replace=True)
            return ["the full-text index did not read back; built it again"]
        return []

    # ---- writing (callers hold the index lock) -------------------------------------------------

    def recover(self) -> list[str]:
        """Undo a write that died midway: drop every row of the journalled paths. Returns them."""
        journal = self.index_dir / JOURNAL_FILE
        if not journal.exists():
            return []
        try:
            paths = json.loads(journal.read_text(encoding="utf-8"))
            if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
                raise ValueError("not a list of paths")
        except (OSError, ValueError):
            # An unreadable journal names nothing we can trust: start from a clean slate.
            for name in ("chunks", "symbols", "files"):
                self._table(name).delete("true")
            journal.unlink(missing_ok=True)
            return ["*"]
        self._delete_paths(paths)
        journal.unlink(missing_ok=True)
        return paths

    def _delete_paths(self, paths: Sequence[str]) -> None:
        for part in _batched(list(paths)):
            clause = _in_list("path", part)
            # File records first: a path without a record is re-indexed by the next run.
            self._table("files").delete(clause)
            self._table("chunks").delete(clause)
            self._table("symbols").delete(clause)

    def write_files(
        self, files: Sequence[FileData], removed: Sequence[str] = (), known: Iterable[str] = ()
    ) -> None:
        """Replace the rows of `files`, drop those of `removed`, as one journalled unit.

        `known` are the paths that may already have rows (the others are new and need no delete).
        """
        if not files and not removed:
            return
        known_set = set(known)
        paths = [f.record.path for f in files]
        stale = [p for p in paths if p in known_set] + list(removed)
        Manifest.drop(self.index_dir)
        _write_json_atomic(self.index_dir / JOURNAL_FILE, sorted(set(paths) | set(removed)))
        self._delete_paths(stale)
        chunk_rows = [_chunk_row(c) for f in files for c in f.chunks]
        if chunk_rows:
            self._table("chunks").add(pa.Table.from_pylist(chunk_rows, schema=CHUNKS_SCHEMA))
        symbol_rows = [_flat(d) for f in files for d in f.definitions]
        if symbol_rows:
            self._table("symbols").add(pa.Table.from_pylist(symbol_rows, schema=SYMBOLS_SCHEMA))
        now = time.time()
        file_rows = []
        for f in files:
            row = _flat(f.record)
            row["indexed_at"] = now
            row["imports"] = json.dumps([_flat(i) for i in f.imports], separators=(",", ":"))
            row["references"] = json.dumps([_flat(r) for r in f.references], separators=(",", ":"))
            file_rows.append(row)
        if file_rows:
            self._table("files").add(pa.Table.from_pylist(file_rows, schema=FILES_SCHEMA))
        (self.index_dir / JOURNAL_FILE).unlink(missing_ok=True)

    def add_vectors(self, model_id: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store embeddings for content hashes (one atomic commit)."""
        if not len(hashes):
            return
        Manifest.drop(self.index_dir)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        dims = int(vectors.shape[1])
        table = self._vectors(model_id)
        schema = pa.schema([("content_hash", pa.string()), ("vector", pa.list_(pa.float32(), dims))])
        data = pa.table(
            {
                "content_hash": pa.array(list(hashes), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dims),
            },
            schema=schema,
        )
        if table is None:
            table = self._db.create_table(vectors_table_name(model_id), data=data)
            self._tables[vectors_table_name(model_id)] = table
        else:
            table.add(data)

    def ensure_fts(self) -> bool:
        """Build or rebuild the FTS index when missing or when many rows are unindexed. True if built."""
        table = self._table("chunks")
        rows = table.count_rows()
        indices = [i for i in table.list_indices() if i.index_type == "FTS"]
        if indices:
            stats = table.index_stats(indices[0].name)
            unindexed = stats.num_unindexed_rows if stats else rows
            if unindexed < max(FTS_REBUILD_MIN_ROWS, FTS_REBUILD_SHARE * rows):
                return False
        elif rows == 0:
            return False
        table.create_index("search", config=FTS(), replace=True)
        return True

    def prune_vectors(self, model_id: str, keep_share: float = 0.5) -> int:
        """Drop cached vectors no chunk uses once they outnumber `keep_share` of the live ones.

        Orphans are kept up to that point: they make a file that comes back (a revert, a branch
        switch) free to re-index. Returns how many were dropped.
        """
        table = self._vectors(model_id)
        if table is None:
            return 0
        orphans = sorted(self.vector_hashes(model_id) - self.chunk_hashes())
        if len(orphans) <= max(1000, keep_share * table.count_rows()):
            return 0
        for part in _batched(orphans):
            table.delete(_in_list("content_hash", part))
        return len(orphans)

    def compact(self, force: bool = False) -> None:
        """Merge small fragments and drop old versions once writes have piled up."""
        names = ["chunks", "symbols", "files"]
        if self.model_id:
            names.append(vectors_table_name(self.model_id))
            names.append(vectors_table_name(self.model_id + NAME_SUFFIX))
        present = set(self._db.list_tables().tables)
        for name in names:
            if name not in present:
                continue  # no vectors for this model (yet, or no longer)
            table = self._table(name)
            fragments = table.stats()["fragment_stats"]["num_fragments"]
            if force or fragments > COMPACT_FRAGMENTS:
                table.optimize(cleanup_older_than=timedelta(minutes=2))


# Every way into the store translates LanceDB's failures (one place: storeguard.lance_failure).
guard_methods(IndexStore, skip=("exists", "meta", "model_id"))
