"""The index's symbol, chunk and import tables held as Arrow columns, rows decoded on lookup.

Decoding a Django-size index into Python objects takes seconds (54k definitions, 44k chunks);
reading the same tables as Arrow and indexing the rows by name and path takes a few hundred
milliseconds, and a lookup then decodes only the rows it returns. A language server answers its
first requests from this while its full in-memory snapshot loads in the background
(retriever/snapshot.py): each lookup returns what the store's own `symbols_named`,
`chunks_for_file` and `file_imports` return, in the same order, without one LanceDB scan each.
Each table is read on first use.
"""

from __future__ import annotations

import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from codectx.indexer.model import Chunk, Definition, Import
from codectx.indexer.storage.tables import (
    CHUNK_COLUMNS,
    SYMBOLS_SCHEMA,
    chunk_from_row,
    definition_from_row,
    imports_from_json,
)


class TableColumns:
    """Lookups by name and path over Arrow copies of one index version's tables (thread-safe)."""

    def __init__(self, tables: Any) -> None:
        self._open = tables  # name -> a LanceDB table (IndexReader._table); None: copies given
        self._lock = threading.Lock()
        self._symbols: pa.Table | None = None
        self._chunks: pa.Table | None = None
        self._files: pa.Table | None = None
        self._imports: dict[str, str | None] | None = None

    @classmethod
    def from_arrow(cls, tables: dict[str, pa.Table]) -> TableColumns:
        """Lookups over tables already read (the index's lookup files, lookupfiles.py)."""
        columns = cls(None)
        columns._symbols = tables["symbols"].combine_chunks()
        columns._chunks = tables["chunks"]
        columns._files = tables["files"]
        return columns

    def arrow_tables(self) -> dict[str, pa.Table]:
        """The three tables as read (each read now if it was not yet): what the lookup files copy."""
        self._imports_by_path()
        assert self._files is not None
        return {"symbols": self._symbol_table(), "chunks": self._chunk_table(), "files": self._files}

    def _scan(self, name: str, columns: list[str]) -> pa.Table:
        return self._open(name).search().select(columns).limit(None).to_arrow()

    def symbols_named(self, name: str) -> list[Definition]:
        table = self._symbol_table()
        # A vectorised comparison per lookup (well under a millisecond at 54k rows) costs less
        # than indexing every name in Python first (~0.3 s), and the snapshot caches the answer.
        mask = pc.or_(pc.equal(table.column("name"), name), pc.equal(table.column("qualname"), name))
        found = [definition_from_row(r) for r in table.filter(mask).to_pylist()]
        return sorted(found, key=lambda d: (d.path, d.start_line))

    def symbols_in_file(self, path: str) -> list[Definition]:
        """A file's definitions in line order, as the store's `symbols_in_file` gives them."""
        table = self._symbol_table()
        found = [
            definition_from_row(r) for r in table.filter(pc.equal(table.column("path"), path)).to_pylist()
        ]
        return sorted(found, key=lambda d: d.start_line)

    def _symbol_table(self) -> pa.Table:
        with self._lock:
            if self._symbols is None:
                # One chunk per column (small: no text): comparisons then run in one pass each.
                self._symbols = self._scan("symbols", [f.name for f in SYMBOLS_SCHEMA]).combine_chunks()
            return self._symbols

    def read_all(self) -> None:
        """Read every table now (a warm-up: the first lookups then find them read)."""
        self._symbol_table()
        self._chunk_table()
        self._imports_by_path()

    def _chunk_table(self) -> pa.Table:
        with self._lock:
            if self._chunks is None:
                self._chunks = self._scan("chunks", list(CHUNK_COLUMNS))
            return self._chunks

    def chunks_for_file(self, path: str) -> list[Chunk]:
        table = self._chunk_table()
        found = [chunk_from_row(r) for r in table.filter(pc.equal(table.column("path"), path)).to_pylist()]
        return sorted(found, key=lambda c: (c.start_line, c.start_byte))

    def _imports_by_path(self) -> dict[str, str | None]:
        with self._lock:
            if self._imports is None:
                if self._files is None:
                    self._files = self._scan("files", ["path", "imports"])
                table = self._files
                paths = table.column("path").to_pylist()
                self._imports = dict(zip(paths, table.column("imports").to_pylist(), strict=True))
            return self._imports

    def file_imports(self, path: str) -> list[Import]:
        return imports_from_json(self._imports_by_path().get(path))
