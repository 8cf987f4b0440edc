"""The roots an MCP server serves: one session and one index kept fresh per root.

Each root's index is opened when a call needs it and refreshed in a background thread: at start
(built if there is none), and again when a call comes in more than `recheck_s` after the last
check ended. A refresh is the indexer's own incremental run, which starts with the quick no-op
check (the walk and the manifest; no table is opened when nothing changed), so an idle agent costs
nothing and a busy one one walk every few seconds. Calls never wait for a refresh: they answer
from the index as it is (vectors may be pending, and the answer says so), except `index_status`
with `wait`. Paths an agent gives and gets are relative to the root; with several roots they
start with the root's name (`api/src/app.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from codectx.app.embedders import Embedders
from codectx.app.index import IndexRun, Store, index_folder, open_existing
from codectx.app.session import WorkspaceSession
from codectx.errors import CodectxError, UsageError
from codectx.settings import Settings

log = logging.getLogger(__name__)


class PathRefused(UsageError):
    """A path an agent gave is not a workspace-relative path inside a root."""


class KeptIndex:
    """A root's index for its session (an IndexSource): opened at first need, refreshed in the
    background. Thread-safe: tool calls run in worker threads."""

    def __init__(self, root: Path, settings: Settings, embedders: Embedders, recheck_s: float) -> None:
        self.root = root
        self.settings = settings
        self.embedders = embedders
        self.recheck_s = recheck_s
        self.state = "idle"  # idle | indexing | ready | failed
        self.error = ""
        self.open_error = ""
        self.runs = 0
        self.report: IndexRun | None = None
        self._store: Store | None = None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None
        self._checked_at = float("-inf")
        self._again = False
        # Called (in the refresh thread) when a run has put a new index in place, so the next call
        # does not pay for loading its tables into memory.
        self.on_ready: Callable[[], None] | None = None

    def open_store(self) -> Store | None:
        self.poke()
        with self._lock:
            if self._store is None:
                try:
                    self._store = open_existing(self.settings.index_dir())
                    self.open_error = ""
                except (CodectxError, ImportError) as exc:
                    self.open_error = str(exc)
                except Exception as exc:  # a damaged index must not take the server down
                    log.warning("opening the index of %s failed: %r", self.root, exc)
                    self.open_error = f"the index cannot be opened ({type(exc).__name__})"
            return self._store

    def damaged(self) -> None:
        """A read failed: drop the open store and check the index now (the run repairs it)."""
        with self._lock:
            self._store = None
        self.poke(force=True)

    def poke(self, force: bool = False) -> None:
        """Start a refresh unless one runs or the last ended less than `recheck_s` ago."""
        with self._lock:
            if self._worker is not None:
                self._again = self._again or force
                return
            if not force and time.monotonic() - self._checked_at < self.recheck_s:
                return
            self._worker = threading.Thread(target=self._refresh, name=f"index {self.root.name}", daemon=True)
            self.state = "indexing" if self.runs == 0 or self.state == "failed" else self.state
            self._worker.start()

    def wait(self, timeout_s: float) -> bool:
        """Check for changes now and wait until that refresh is over; False on timeout."""
        with self._lock:
            runs = self.runs
            running = self._worker is not None
        self.poke(force=True)
        target = runs + (2 if running else 1)  # a run already going may have missed the change
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self.runs < target:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _refresh(self) -> None:
        while True:
            try:
                embedder = self.embedders.get_or_none(self.settings)
                report = index_folder(self.root, self.settings, None, progress=_quiet, embedder=embedder)
            except CodectxError as exc:
                outcome: tuple[str, str, IndexRun | None] = ("failed", str(exc), None)
            except Exception as exc:
                log.exception("indexing %s crashed", self.root)
                outcome = ("failed", f"indexing crashed ({type(exc).__name__})", None)
            else:
                outcome = ("ready", "", report)
            with self._idle:
                self.state, self.error, report_or_none = outcome
                renewed = report_or_none is not None and (self.runs == 0 or not report_or_none.quick)
                if report_or_none is not None:
                    self.report = report_or_none
                    if not report_or_none.quick:
                        self._store = None  # reopen: the run may have created or replaced tables
                self.runs += 1
                self._checked_at = time.monotonic()
                again, self._again = self._again, False
                if not again:
                    self._worker = None
                self._idle.notify_all()
            if renewed and self.on_ready is not None:
                try:
                    self.on_ready()
                except Exception as exc:  # a warm-up only; the call that needs it will say what is wrong
                    log.warning("warming up the index of %s failed: %r", self.root, exc)
            if not again:
                return


def _quiet(*_args: Any, **_kwargs: Any) -> None:
    """Indexing progress: nowhere (stdout is the protocol; index_status reports the outcome)."""


@dataclass
class Workspace:
    name: str  # how paths of this root start when the server has several roots
    root: Path
    settings: Settings
    index: KeptIndex
    session: WorkspaceSession
    lock: threading.Lock  # one session call at a time per root (the session caches its searcher)


class Roots:
    """The server's workspaces and the mapping between an agent's paths and theirs."""

    def __init__(self, workspaces: list[Workspace]) -> None:
        if not workspaces:
            raise UsageError("give at least one workspace folder")
        self.workspaces = workspaces
        self.by_name = {w.name: w for w in workspaces}

    @property
    def several(self) -> bool:
        return len(self.workspaces) > 1

    def named(self, name: str | None) -> Workspace:
        """The root a call names (its name), or the first when none is named."""
        if not name:
            return self.workspaces[0]
        found = self.by_name.get(name.strip("/"))
        if found is None:
            raise UsageError(f"no root named '{name}'; the roots are: {', '.join(self.by_name)}")
        return found

    def locate(self, path: str) -> tuple[Workspace, str]:
        """(workspace, workspace-relative POSIX path) of an agent's path, or PathRefused."""
        given = path.strip().replace("\\", "/")
        if not given:
            raise PathRefused("give a path relative to the workspace, e.g. src/app.py")
        pure = PurePosixPath(given)
        if pure.is_absolute() or (len(given) > 1 and given[1] == ":"):
            raise PathRefused(f"'{path}' is absolute; give a path relative to the workspace root")
        if ".." in pure.parts:
            raise PathRefused(f"'{path}' leaves the workspace ('..'); give a path inside it")
        parts = [p for p in pure.parts if p != "."]
        if not parts:
            raise PathRefused(f"'{path}' is the workspace itself; give a file inside it")
        if not self.several:
            return self.workspaces[0], "/".join(parts)
        workspace = self.by_name.get(parts[0])
        if workspace is None or len(parts) < 2:
            raise PathRefused(f"'{path}' does not start with a root's name ({', '.join(self.by_name)})")
        return workspace, "/".join(parts[1:])

    def shown(self, workspace: Workspace, rel: str) -> str:
        """How a workspace path is shown to the agent."""
        return f"{workspace.name}/{rel}" if self.several else rel


def root_names(roots: list[Path]) -> list[str]:
    """Each root's name: its folder's name, made unique with -2, -3, ..."""
    names: list[str] = []
    for root in roots:
        base, n = root.name or "root", 1
        name = base
        while name in names:
            n += 1
            name = f"{base}-{n}"
        names.append(name)
    return names
