"""Workspace folders → their settings, index, session and background (re)indexing.

Each folder gets one `Folder`: its Settings, its index store (opened as soon
as one exists, so requests are served from whatever is ready), its
WorkspaceSession (codectx.app, built on first use and rebuilt when the
folder's settings change), and a single background job that builds or
refreshes the index. Reindex requests (save,
watched-file events, the internal watcher, `codectx.reindex`) are coalesced:
while a run is going, further requests only mark the folder dirty and one
more run follows.

Indexing is CPU-bound and runs in a worker thread; its progress callback
hops back onto the event loop, where it becomes `$/progress`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codectx.lsp.errors import ServiceUnavailable, UriRefused
from codectx.lsp.uris import folder_for, relative_posix, uri_to_path

from codectx.app.embedders import Embedders
from codectx.app.index import (
    IndexRun,
    Store,
    first_files,
    index_folder,
    load_in_background,
    open_existing,
    see_changes,
    snapshot_phase,
)
from codectx.app.session import WorkspaceSession
from codectx.errors import CodectxError
from codectx.settings import Settings
from codectx.tuning import background_thread

log = logging.getLogger(__name__)

FIRST_OPEN_WAIT_S = 0.5  # how long an unindexed folder's first run waits for an open document
FIRST_FILES = 40  # at most this many files go first (each costs ~40 ms to index on 2 cores)


@dataclass
class IndexProgress:
    """What the indexer reported last; any field may stay 0 if it is not reported."""

    stage: str = ""
    files: int = 0
    files_total: int = 0
    chunks: int = 0
    vectors: int = 0
    vectors_total: int = 0
    vectors_pending: int = 0  # chunks still without a vector (the indexer's last report)

    def message(self) -> str:
        files = f"{self.files}/{self.files_total}" if self.files_total else str(self.files)
        vectors = f"{self.vectors}/{self.vectors_total}" if self.vectors_total else str(self.vectors)
        prefix = f"{self.stage}: " if self.stage else ""
        return f"{prefix}{files} files, {self.chunks} chunks, {vectors} vectors"

    def percentage(self) -> int | None:
        if self.vectors_total:
            return min(100, 50 + int(50 * self.vectors / self.vectors_total))
        if self.files_total:
            return min(50, int(50 * self.files / self.files_total))
        return None


_FIELDS = ("stage", "files", "files_total", "chunks", "vectors", "vectors_total")
_ALIASES = {
    "total_files": "files_total",
    "vectors_done": "vectors",
    "total_vectors": "vectors_total",
    "chunks_total": "chunks",
    "phase": "stage",
}


def progress_from(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """Read a progress callback's arguments whatever their shape (object, dict, kwargs)."""
    values: dict[str, Any] = {}
    if len(args) == 1 and all(hasattr(args[0], n) for n in ("stage", "done", "total")):
        # indexer.pipeline.ProgressEvent(stage, done, total, message)
        event = args[0]
        stage, done, total = str(event.stage), int(event.done), int(event.total)
        values["stage"] = stage
        if stage in ("discover", "parse", "done"):
            values["files"] = done
            values["files_total"] = total
        elif stage == "embed":
            values["vectors"] = done
            values["vectors_total"] = total
        return values
    sources: list[Any] = [*args, kwargs]
    for src in sources:
        items: Iterable[tuple[str, Any]]
        if isinstance(src, dict):
            items = src.items()
        elif hasattr(src, "__dict__") or hasattr(src, "__slots__"):
            names = [*_FIELDS, *_ALIASES]
            items = ((n, getattr(src, n)) for n in names if hasattr(src, n))
        else:
            continue
        for name, value in items:
            name = _ALIASES.get(name, name)
            is_count = name in _FIELDS and isinstance(value, int) and not isinstance(value, bool)
            if (name == "stage" and isinstance(value, str)) or is_count:
                values[name] = value
    return values


ProgressSink = Callable[["Folder", IndexProgress, str], None]  # (folder, progress, event: begin|report|end)


@dataclass
class Folder:
    root: Path
    settings: Settings
    store: Store | None = None
    state: str = "idle"  # idle | indexing | ready | failed | unavailable
    error: str = ""
    progress: IndexProgress = field(default_factory=IndexProgress)
    runs: int = 0
    dirty: bool = False
    task: asyncio.Task[None] | None = None
    session: WorkspaceSession | None = None  # built by CodectxServer.session, dropped on new settings
    missing_logged: bool = False
    pending_paths: set[Path] = field(default_factory=set)
    full_pending: bool = False
    opened: asyncio.Event = field(default_factory=asyncio.Event)  # a document of it was opened
    first_indexed: list[Path] = field(default_factory=list)  # what an unindexed folder indexed first
    # Worker threads open the store at once (warm-up, the first requests): one opens it.
    opening: threading.Lock = field(default_factory=threading.Lock)

    def open_store(self) -> Store | None:
        """The folder's index store, opened on first use; None while there is none yet."""
        if self.store is not None:
            return self.store
        with self.opening:
            return self.store if self.store is not None else self._open()

    def _open(self) -> Store | None:
        try:
            store = open_existing(self.settings.index_dir())
        except ImportError:
            return None
        except CodectxError as exc:
            if not self.missing_logged:
                self.missing_logged = True
                log.info("no index yet for %s: %s", self.root, exc)
            return None
        except Exception:  # a corrupt index must not take requests down
            log.exception("opening the index of %s failed", self.root)
            return None
        try:
            # Requests are answered from index lookups until the in-memory snapshot is in.
            load_in_background(store)
        except Exception:
            log.warning("loading the index of %s in the background failed", self.root, exc_info=True)
        self.store = store
        return store

    def snapshot_phase(self) -> str:
        """ "lookup" while the index loads into memory, "memory" after, "direct", "" with no store."""
        store = self.store
        return snapshot_phase(store) if store is not None else ""

    def require_store(self) -> Store:
        store = self.open_store()
        if store is None:
            state = "being built" if self.state == "indexing" else "missing"
            raise ServiceUnavailable(f"the index of {self.root} is {state}; try again shortly")
        return store


class Workspaces:
    """All workspace folders and their background indexing."""

    def __init__(
        self,
        sink: ProgressSink,
        on_error: Callable[[str], None],
        embedders: Embedders,
        open_files: Callable[[], list[Path]] = list,
    ) -> None:
        self.folders: dict[Path, Folder] = {}
        self._open_files = open_files  # the documents open in the editor
        self._sink = sink
        self._on_error = on_error
        self._embedders = embedders  # the server's models: indexing shares them, loads no second copy
        self._watch_task: asyncio.Task[None] | None = None
        # Index runs get their own thread at a lower CPU priority: requests are served from the
        # default pool, and under contention they get the core first.
        self._index_pool = ThreadPoolExecutor(
            1, thread_name_prefix="codectx-index", initializer=background_thread
        )

    def _run_index(
        self, folder: Folder, paths: list[Path] | None, on_progress: Callable[..., None]
    ) -> IndexRun:
        embedder = self._embedders.get(folder.settings)
        report = index_folder(folder.root, folder.settings, paths, progress=on_progress, embedder=embedder)
        if paths and folder.store is not None:
            see_changes(folder.store)  # the kept store's snapshot reads the saved files now
        return report

    def set_folder(self, root: Path, settings: Settings) -> Folder:
        root = root.resolve()
        existing = self.folders.get(root)
        if existing is not None:
            if existing.settings.index_dir() != settings.index_dir():
                existing.store = None
            existing.settings = settings
            existing.session = None  # rebuilt with the new settings on next use
            return existing
        folder = Folder(root=root, settings=settings)
        self.folders[root] = folder
        return folder

    def remove(self, root: Path) -> None:
        folder = self.folders.pop(root.resolve(), None)
        if folder and folder.task:
            folder.task.cancel()

    def locate(self, uri: str) -> tuple[Folder, Path, str]:
        """(folder, absolute path, workspace-relative POSIX path) of a document URI, or UriRefused."""
        path = uri_to_path(uri)
        root = folder_for(path, self.folders)
        folder, rel = self.folders[root], relative_posix(path, root)
        # Judged on the real path (rel) by the gate, and here on a symlink's own name as well.
        if os.path.realpath(path) != os.path.abspath(path):
            from codectx.privacy.policy import never_send_match

            for own in _lexical_names(path, self.folders):
                pattern = never_send_match(own, folder.settings)
                if pattern:
                    raise UriRefused(f"{path} matches the never-send pattern '{pattern}'; codectx ignores it")
        return folder, path, rel

    def by_root(self, root: Path | None = None) -> Folder:
        if root is None:
            if not self.folders:
                raise ServiceUnavailable("no workspace folder is open")
            return next(iter(self.folders.values()))
        return self.folders[root.resolve()]

    # --- background indexing -------------------------------------------------

    def request_reindex(self, folder: Folder, paths: list[Path] | None = None) -> None:
        """Start a run now, or one more after the current run (coalesced); `paths`: only these files."""
        if paths:
            folder.pending_paths.update(paths)
        else:
            folder.full_pending = True
        if folder.task is not None and not folder.task.done():
            folder.dirty = True
            return
        folder.task = asyncio.get_running_loop().create_task(self._index_loop(folder))

    async def wait_idle(self, folder: Folder) -> None:
        while folder.task is not None and not folder.task.done():
            await asyncio.shield(folder.task)

    async def _index_loop(self, folder: Folder) -> None:
        if folder.runs == 0 and folder.open_store() is None:
            await self._index_first(folder)
        while True:
            folder.dirty = False
            paths = None if folder.full_pending or folder.runs == 0 else sorted(folder.pending_paths)
            folder.full_pending = False
            folder.pending_paths.clear()
            await self._index_once(folder, paths)
            if not folder.dirty:
                return

    async def _index_first(self, folder: Folder) -> None:
        """An unindexed folder: the open files, their imports and their folders first (requests get
        context from them within seconds), then the whole folder."""
        if not self._opened_in(folder):
            # The editor opens its first document right after `initialized`; a moment's wait lets
            # that document go first. Without one the whole folder is indexed in one run.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(folder.opened.wait(), FIRST_OPEN_WAIT_S)
        opened = self._opened_in(folder)
        if not opened:
            return
        loop = asyncio.get_running_loop()
        first = await loop.run_in_executor(
            self._index_pool, first_files, folder.root, folder.settings, opened, FIRST_FILES
        )
        folder.first_indexed = first
        names = [relative_posix(p, folder.root) for p in first]
        log.info(
            "indexing %s: %d files first (the open files, their imports and folders): %s",
            folder.root,
            len(first),
            ", ".join(names[:40]) + (", ..." if len(names) > 40 else ""),
        )
        await self._index_once(folder, first)
        folder.full_pending = True  # then the rest (the loop's next run)

    def _opened_in(self, folder: Folder) -> list[Path]:
        out = []
        for path in self._open_files():
            try:
                if folder_for(path, self.folders) == folder.root:
                    out.append(path)
            except Exception:
                continue
        return out

    def note_opened(self, folder: Folder) -> None:
        folder.opened.set()

    async def _index_once(self, folder: Folder, paths: list[Path] | None = None) -> None:
        loop = asyncio.get_running_loop()
        folder.state = "indexing"
        folder.progress = IndexProgress(stage="starting")
        folder.runs += 1
        self._sink(folder, folder.progress, "begin")
        last_sent = 0.0

        def on_loop(values: dict[str, Any]) -> None:
            nonlocal last_sent
            for name, value in values.items():
                setattr(folder.progress, name, value)
            now = time.monotonic()
            if now - last_sent >= 0.1:  # keep $/progress to a readable rate
                last_sent = now
                self._sink(folder, folder.progress, "report")

        def on_progress(*args: Any, **kwargs: Any) -> None:
            values = progress_from(*args, **kwargs)
            if values:
                loop.call_soon_threadsafe(on_loop, values)

        try:
            report = await loop.run_in_executor(self._index_pool, self._run_index, folder, paths, on_progress)
        except asyncio.CancelledError:
            folder.state = "idle"
            self._sink(folder, folder.progress, "end")
            raise
        except ImportError:
            folder.state = "unavailable"
            folder.error = "the indexer is not installed"
        except CodectxError as exc:
            folder.state = "failed"
            folder.error = str(exc)
            self._on_error(f"indexing {folder.root} failed: {exc}")
        except Exception as exc:
            log.exception("indexing %s crashed", folder.root)
            folder.state = "failed"
            folder.error = f"{type(exc).__name__}: {exc}"
            self._on_error(f"indexing {folder.root} failed: {folder.error}")
        else:
            folder.state = "ready"
            folder.error = ""
            # Bad ignore lines, undecodable names, files that changed kind: the LSP log, no popup.
            for warning in list(report.warnings)[:100]:
                log.warning("indexing %s: %s", folder.root, warning)
            self._apply_report(folder, report)
            if not (report.quick or paths):
                # Reopen: a full run may have created or replaced tables. A quick run (nothing
                # changed) and a run over saved files keep the store, and with it the snapshot
                # that is loading or loaded (it follows the changed rows itself).
                folder.store = None
        folder.progress.stage = folder.state
        self._sink(folder, folder.progress, "end")

    @staticmethod
    def _apply_report(folder: Folder, report: IndexRun) -> None:
        folder.progress.files = report.files
        folder.progress.chunks = report.chunks
        folder.progress.vectors = report.vectors_embedded
        folder.progress.vectors_pending = report.vectors_pending

    # --- internal watcher (clients without didChangeWatchedFiles) ------------

    def start_watcher(self, interval_of: Callable[[Folder], float]) -> None:
        if self._watch_task is None:
            self._watch_task = asyncio.get_running_loop().create_task(self._watch(interval_of))

    async def _watch(self, interval_of: Callable[[Folder], float]) -> None:
        last: dict[Path, float] = {}
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for folder in list(self.folders.values()):
                interval = interval_of(folder)
                if interval <= 0:
                    continue
                if now - last.setdefault(folder.root, now) >= interval:
                    last[folder.root] = now
                    # The incremental pipeline finds what changed (size+mtime), cheaply.
                    self.request_reindex(folder)

    def stop(self) -> None:
        if self._watch_task:
            self._watch_task.cancel()
        for folder in self.folders.values():
            if folder.task:
                folder.task.cancel()
        self._index_pool.shutdown(wait=False, cancel_futures=True)


def _lexical_names(path: Path, folders: Iterable[Path]) -> list[str]:
    """`path` relative to each folder it lies in by name (a symlink's own name, not its target)."""
    names = []
    for folder in folders:
        try:
            names.append(path.relative_to(folder).as_posix())
        except ValueError:
            continue
    return names
