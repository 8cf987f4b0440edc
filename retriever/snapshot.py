"""An in-memory view of the index's small tables, refreshed when the index changes.

Context assembly looks up dozens of names per keystroke; one LanceDB scan
costs ~10 ms, so the symbol table, per-file imports and per-file chunks are
cached here. The cache is dropped when a table's version moves (checked at
most once per `CHECK_INTERVAL_S`), so a re-index (didSave) is seen within
that interval.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from codectx.indexer.model import Chunk, Definition, Import

CHECK_INTERVAL_S = 1.0
MAX_FILES_CACHED = 2048


def _versions(store: Any) -> tuple[Any, ...]:
    table = getattr(store, "_table", None)
    if table is None:
        return ()
    try:
        return tuple(table(name).version for name in ("symbols", "files", "chunks"))
    except Exception:
        return ()


class IndexSnapshot:
    """Cached reads of one store; safe to share between threads."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._versions: tuple[Any, ...] = ()
        self._checked = 0.0
        self._by_name: dict[str, list[Definition]] | None = None
        self._imports: dict[str, list[Import]] = {}
        self._chunks: dict[str, list[Chunk]] = {}
        self._progress: tuple[int, int] | None = None

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._checked < CHECK_INTERVAL_S:
            return
        versions = _versions(self.store)
        with self._lock:
            self._checked = now
            if force or not versions or versions != self._versions:
                self._versions = versions
                self._by_name = None
                self._imports = {}
                self._chunks = {}
                self._progress = None

    def _load_symbols(self) -> dict[str, list[Definition]]:
        scan = getattr(self.store, "_scan", None)
        table: dict[str, list[Definition]] = {}
        if scan is None:
            return table
        for row in scan("symbols", None):
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
            if not hasattr(self.store, "_scan"):
                return list(self.store.symbols_named(name))
            table = self._load_symbols()
            with self._lock:
                self._by_name = table
        return table.get(name, [])

    def file_imports(self, path: str) -> list[Import]:
        self.refresh()
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

    # Pass-throughs so the snapshot can stand in for the store.
    def fts_search(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.fts_search(*args, **kwargs)

    def vector_search(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.vector_search(*args, **kwargs)


def snapshot_of(store: Any) -> IndexSnapshot:
    """The shared snapshot of a store (one per store object)."""
    if isinstance(store, IndexSnapshot):
        return store
    snap: IndexSnapshot | None = getattr(store, "_codectx_snapshot", None)
    if snap is None:
        snap = IndexSnapshot(store)
        try:
            store._codectx_snapshot = snap
        except AttributeError:
            pass
    return snap
