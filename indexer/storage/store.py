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
chunks whose vector is pending simply have no row there yet. The columns lookups filter on
(`LOOKUP_COLUMNS`: names, content hashes, paths) carry B-tree indexes.

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

Reading is `IndexReader` (indexer/storage/reader.py), which this class extends; the tables'
schemas and row conversions are in indexer/storage/tables.py.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from codectx.indexer.embedding.embedder import NAME_SUFFIX
from codectx.indexer.errors import IndexCorrupt, IndexNotFound, IndexSchemaMismatch
from codectx.indexer.storage import lookupfiles
from codectx.indexer.storage.layout import (
    JOURNAL_FILE,
    META_FILE,
    SCHEMA_VERSION,
    index_exists,
    require_index,
    write_json_atomic,
)
from codectx.indexer.storage.owner import check_deletable, claim
from codectx.indexer.storage.reader import IndexReader
from codectx.indexer.storage.storeguard import (
    guard_methods,
    intact_vector_tables,
    is_lance_failure,
    remove_tables,
)
from codectx.indexer.storage.tables import (
    CHUNKS_SCHEMA,
    FILES_SCHEMA,
    SYMBOLS_SCHEMA,
    ChunkHit,
    FileData,
    FileRecord,
    IndexStats,
    batched,
    chunk_row,
    filter_sql,
    flat,
    imports_json,
    in_list,
    references_json,
    vectors_table_name,
)
from codectx.indexer.walk.manifest import Manifest
from lancedb.index import FTS, BTree

__all__ = ["JOURNAL_FILE", "ChunkHit", "FileData", "FileRecord", "IndexStats", "IndexStore", "filter_sql"]

# Rebuild the FTS index once this share of rows is unindexed (they are still searched, just slower).
FTS_REBUILD_SHARE = 0.1
FTS_REBUILD_MIN_ROWS = 2000
COMPACT_FRAGMENTS = 48
# Columns the lookups filter on (definitions by name, chunks by content hash, rows by path):
# a B-tree index turns each such filter from a scan of the table into a lookup (Django: one
# name 6.7 -> 2.3 ms, 100 content hashes 14 -> 4 ms; a lookup that reads thousands of rows'
# text gains little). Building them takes 0.1 s there. Rows added later stay unindexed, and
# are scanned, until `compact` merges them into the index.
LOOKUP_COLUMNS = {
    "chunks": ("content_hash", "path"),
    "symbols": ("name", "qualname", "path"),
    "files": ("path",),
}


class IndexStore(IndexReader):
    """Read and write access to one index folder. Readers always see the latest commit."""

    # ---- opening -------------------------------------------------------------------------------

    @staticmethod
    def exists(index_dir: Path) -> bool:
        return index_exists(index_dir)

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
                require_index(index_dir)
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
        if not gitignore.exists() and not gitignore.is_symlink():  # never through a dangling link
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
        write_json_atomic(index_dir / META_FILE, meta)
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
        lookupfiles.remove(index_dir)
        db_dir = index_dir / "db"
        keep = intact_vector_tables(db_dir) if keep_vectors else set()
        remove_tables(db_dir, keep_vectors=False, keep=keep)

    def update_meta(self, **values: Any) -> None:
        self._meta.update(values)
        write_json_atomic(self.index_dir / META_FILE, self._meta)

    # ---- checking -------------------------------------------------------------------------------

    def verify(self, deep: bool = False) -> list[str]:
        """Check the tables codectx trusts: open, row count, schema; with `deep`, read every row
        and query the full-text and lookup indexes. Raises IndexCorrupt; returns what was
        repaired in place (an index that no longer reads is built again)."""
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
            return self._check_vectors() + self._check_fts() + self._check_lookups()
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

    def _check_lookups(self) -> list[str]:
        """Query each B-tree index once; build again those that no longer read back (a lookup
        through a damaged one fails although every row is intact)."""
        repaired = []
        for name, columns in LOOKUP_COLUMNS.items():
            table = self._table(name)
            have = _indexed_columns(table)
            for column in columns:
                if column not in have:
                    continue  # none yet: ensure_lookup_indexes builds it
                try:
                    # A range over every key reads every page of the index (a lookup of one key, one).
                    table.search().where(f"{column} >= ''").select([column]).limit(None).to_arrow()
                except BaseException as exc:
                    if not is_lance_failure(exc):
                        raise
                    table.create_index(column, config=BTree(), replace=True)
                    repaired.append(f"the lookup index of {name}.{column} did not read back; built it again")
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
        for part in batched(list(paths)):
            clause = in_list("path", part)
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
        write_json_atomic(self.index_dir / JOURNAL_FILE, sorted(set(paths) | set(removed)))
        self._delete_paths(stale)
        chunk_rows = [chunk_row(c) for f in files for c in f.chunks]
        if chunk_rows:
            self._table("chunks").add(pa.Table.from_pylist(chunk_rows, schema=CHUNKS_SCHEMA))
        symbol_rows = [flat(d) for f in files for d in f.definitions]
        if symbol_rows:
            self._table("symbols").add(pa.Table.from_pylist(symbol_rows, schema=SYMBOLS_SCHEMA))
        now = time.time()
        file_rows = []
        for f in files:
            row = flat(f.record)
            row["indexed_at"] = now
            row["imports"] = imports_json(f.imports)
            row["references"] = references_json(f.references)
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

    def ensure_lookup_indexes(self) -> list[str]:
        """Build the B-tree index of each `LOOKUP_COLUMNS` column that has none (an index made
        before they existed, or a table that was empty). Returns the `table.column`s built."""
        built = []
        for name, columns in LOOKUP_COLUMNS.items():
            table = self._table(name)
            have = _indexed_columns(table)
            missing = [c for c in columns if c not in have]
            if not missing or table.count_rows() == 0:
                continue
            for column in missing:
                table.create_index(column, config=BTree(), replace=True)
                built.append(f"{name}.{column}")
        return built

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
        for part in batched(orphans):
            table.delete(in_list("content_hash", part))
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


def _indexed_columns(table: Any) -> set[str]:
    """The columns of a table that carry an index of their own."""
    return {i.columns[0] for i in table.list_indices() if len(i.columns) == 1}


guard_methods(IndexStore, skip=("exists",))
