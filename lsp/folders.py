"""Workspace folders → their settings, index keeper, session and progress.

Each folder gets one `Folder`: its Settings, its `IndexKeeper` (codectx.app.keeper: the store,
opened as soon as one exists so requests are served from whatever is ready, and the background
runs that build and refresh it, coalesced), its WorkspaceSession (codectx.app, built on first use
and rebuilt when the folder's settings change) and the progress of its current run.

Runs happen in one worker thread at a lower CPU priority; their events hop onto the event loop,
where they become `$/progress` and, on failure, one error message.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.lsp.errors import ServiceUnavailable, UriRefused
from codectx.lsp.uris import folder_for, relative_posix, uri_to_path

from codectx.app.embedders import Embedders
from codectx.app.index import Store, snapshot_phase
from codectx.app.keeper import IndexKeeper, RunEvent
from codectx.app.session import WorkspaceSession
from codectx.errors import CodectxError
from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.retriever.snapshot import IndexSnapshot

log = logging.getLogger(__name__)

FIRST_OPEN_WAIT_S = 0.5  # how long an unindexed folder's first run waits for an open document
# How long an indexed folder's check for edits made while the editor was closed waits for the
# first completion's context (the editor's first answer then does not share the interpreter
# with the check's walk; measured on Django, about a second of it).
FIRST_CHECK_WAIT_S = 5.0


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
    near: int = 0  # vectors embedded near the open documents (stage "near"), of `near_total`
    near_total: int = 0

    def message(self) -> str:
        files = f"{self.files}/{self.files_total}" if self.files_total else str(self.files)
        vectors = f"{self.vectors}/{self.vectors_total}" if self.vectors_total else str(self.vectors)
        prefix = f"{self.stage}: " if self.stage else ""
        near = f" ({self.near}/{self.near_total} near the open files)" if self.near_total else ""
        return f"{prefix}{files} files, {self.chunks} chunks, {vectors} vectors{near}"

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
        elif stage in ("embed", "embedded"):
            values["stage"] = "embed"
            values["vectors"] = done
            values["vectors_total"] = total
        elif stage == "near":
            values["near"] = done
            values["near_total"] = total
        elif stage == "chunks":  # the index's chunks once its lexical part is written
            values["chunks"] = done
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


def _index_dir(settings: Settings) -> Path | None:
    """The folder's index folder; None where settings refuse it (a workspace's `.codectx` link)."""
    try:
        return settings.index_dir()
    except CodectxError:
        return None


class Folder:
    """A workspace folder: its settings, index keeper, session and the progress of its run."""

    def __init__(self, root: Path, settings: Settings, keeper: IndexKeeper) -> None:
        self.root = root
        self.keeper = keeper
        self.progress = IndexProgress()
        self.session: WorkspaceSession | None = None  # built by CodectxServer.session
        self.reported_at = 0.0  # when the last `report` progress went out
        self._settings = settings

    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        if _index_dir(settings) != _index_dir(self._settings):
            self.keeper.forget_store()
        self._settings = self.keeper.settings = settings
        self.session = None  # rebuilt with the new settings on next use

    @property
    def state(self) -> str:
        """idle | indexing | ready | failed | unavailable"""
        return self.keeper.state

    @property
    def error(self) -> str:
        return self.keeper.error

    @property
    def runs(self) -> int:
        """Index runs begun."""
        return self.keeper.started

    @property
    def store(self) -> Store | None:
        return self.keeper.store

    def open_store(self) -> Store | None:
        """The folder's index store, opened on first use; None while there is none yet."""
        return self.keeper.open_store()

    def context_source(self) -> Store | IndexSnapshot | None:
        """The store, or its lookup files while the server's start opens it (IndexKeeper)."""
        return self.keeper.context_source()

    def snapshot_phase(self) -> str:
        """ "early" while the index's lookup files answer (the store opens), "lookup" while the
        index loads into memory, "memory" after, "direct", "" with no store."""
        store = self.keeper.store
        if store is None:
            return "early" if self.keeper.answering_early else ""
        return snapshot_phase(store)

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
        self._loop: asyncio.AbstractEventLoop | None = None
        # Index runs get their own thread, which lowers its CPU priority after an unindexed
        # folder's first files (codectx/app/keeper.py): requests are served from the default
        # pool, and under contention they get the core first.
        self._index_pool = ThreadPoolExecutor(1, thread_name_prefix="codectx-index")

    def set_folder(self, root: Path, settings: Settings) -> Folder:
        root = root.resolve()
        existing = self.folders.get(root)
        if existing is not None:
            existing.settings = settings
            return existing
        keeper = IndexKeeper(
            root,
            settings,
            self._embedders,
            self._index_pool,
            listener=self._on_run,
            background_load=True,
            opened_wait_s=FIRST_OPEN_WAIT_S,
            check_wait_s=FIRST_CHECK_WAIT_S,
        )
        folder = Folder(root, settings, keeper)
        self.folders[root] = folder
        for path in self._open_files():  # documents the editor opened before this folder came
            if _inside(path, root):
                keeper.note_opened(path)
        return folder

    def remove(self, root: Path) -> None:
        folder = self.folders.pop(root.resolve(), None)
        if folder is not None:
            folder.keeper.close()

    def locate(self, uri: str) -> tuple[Folder, Path, str]:
        """(folder, absolute path, workspace-relative POSIX path) of a document URI, or UriRefused."""
        path = uri_to_path(uri)
        root = folder_for(path, self.folders)
        folder, rel = self.folders[root], relative_posix(path, root)
        # Judged on the real path (rel) by the gate, and here on a symlink's own name as well.
        if os.path.realpath(path) != os.path.abspath(path):
            from codectx.privacy.policy import never_send_match

            for own in lexical_names(path, self.folders):
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
        self._loop = asyncio.get_running_loop()  # where the runs' events are reported
        folder.keeper.request(paths)

    async def wait_idle(self, folder: Folder) -> None:
        await asyncio.shield(asyncio.wrap_future(folder.keeper.idle()))

    def note_opened(self, folder: Folder, path: Path) -> None:
        folder.keeper.note_opened(path)

    def _on_run(self, keeper: IndexKeeper, event: RunEvent) -> None:
        """A run's event, in the worker thread: onto the event loop."""
        folder = self.folders.get(keeper.root)
        loop = self._loop
        if folder is None or folder.keeper is not keeper or loop is None or loop.is_closed():
            return
        if event.kind == "progress":
            values = progress_from(*event.args, **(event.kwargs or {}))
            if values:
                loop.call_soon_threadsafe(self._progressed, folder, values)
            return
        loop.call_soon_threadsafe(self._begun if event.kind == "begin" else self._ended, folder)

    def _begun(self, folder: Folder) -> None:
        # The index keeps its chunks while a run updates it: health and the status line go on
        # showing the last run's count (not 0) until this run reports its own at the end.
        last = folder.progress
        folder.progress = IndexProgress(
            stage="starting", chunks=last.chunks, vectors_pending=last.vectors_pending
        )
        folder.reported_at = 0.0
        self._sink(folder, folder.progress, "begin")

    def _progressed(self, folder: Folder, values: dict[str, Any]) -> None:
        for name, value in values.items():
            setattr(folder.progress, name, value)
        now = time.monotonic()
        if now - folder.reported_at >= 0.1:  # keep $/progress to a readable rate
            folder.reported_at = now
            self._sink(folder, folder.progress, "report")

    def _ended(self, folder: Folder) -> None:
        report = folder.keeper.report
        if folder.state == "ready" and report is not None:
            folder.progress.files = report.files
            folder.progress.chunks = report.chunks
            folder.progress.vectors = report.vectors_embedded
            folder.progress.vectors_pending = report.vectors_pending
        elif folder.state == "failed":
            self._on_error(f"indexing {folder.root} failed: {folder.error}")
        folder.progress.stage = folder.state
        self._sink(folder, folder.progress, "end")

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
        self.close_keepers()

    def close_keepers(self) -> None:
        """Every folder's keeper told that no run follows, so that a run going stops at its next
        step (what was committed stays); idempotent, and safe once the event loop has closed."""
        for folder in self.folders.values():
            folder.keeper.close()
        self._index_pool.shutdown(wait=False, cancel_futures=True)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def lexical_names(path: Path, folders: Iterable[Path]) -> list[str]:
    """`path` relative to each folder it lies in by name (a symlink's own name, not its target)."""
    names = []
    for folder in folders:
        try:
            names.append(path.relative_to(folder).as_posix())
        except ValueError:
            continue
    return names
