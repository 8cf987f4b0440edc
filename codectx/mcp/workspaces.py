"""The roots an MCP server serves: one session and one kept index per root.

Each root's index is an `IndexKeeper` (codectx.app.keeper, shared with the language server): opened
when a call needs it and refreshed in the background, at start (built if there is none) and again
when a call comes in more than `recheck_s` after the last check ended. A refresh is the indexer's
own incremental run, which starts with the quick no-op check (the walk and the manifest; no table
is opened when nothing changed), so an idle agent costs nothing and a busy one one walk every few
seconds. Calls never wait for a refresh: they answer from the index as it is (vectors may be
pending, and the answer says so), except `index_status` with `wait`. Paths an agent gives and gets
are relative to the root; with several roots they start with the root's name (`api/src/app.py`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from codectx.app.index import Store
from codectx.app.keeper import IndexKeeper, RunEvent
from codectx.app.session import WorkspaceSession
from codectx.errors import ConfigError, UsageError
from codectx.settings import Settings

log = logging.getLogger(__name__)


class PathRefused(UsageError):
    """A path an agent gave is not a workspace-relative path inside a root."""


class KeptIndex:
    """A root's keeper, checked again when a call comes `recheck_s` after the last check ended
    (an IndexSource for the root's session). Thread-safe: tool calls run in worker threads."""

    def __init__(self, keeper: IndexKeeper, recheck_s: float) -> None:
        self.keeper = keeper
        self.recheck_s = recheck_s
        self._checked_at = float("-inf")
        # Called (in the index thread) when a run has put a new index in place, so the next call
        # does not pay for loading its tables into memory.
        self.on_ready: Callable[[], None] | None = None

    def open_store(self) -> Store | None:
        self.poke()
        return self.keeper.open_store()

    def context_source(self) -> Store | None:
        return self.open_store()

    def damaged(self) -> None:
        """A read failed: drop the open store and check the index now (the run repairs it)."""
        self.keeper.damaged()

    def poke(self, force: bool = False) -> None:
        """Start a refresh unless one runs or the last ended less than `recheck_s` ago."""
        if not force and (self.keeper.busy or time.monotonic() - self._checked_at < self.recheck_s):
            return
        self.keeper.request()

    def wait(self, timeout_s: float) -> bool:
        """Check for changes now and wait until that refresh is over; False on timeout."""
        return self.keeper.refresh_and_wait(timeout_s)

    def ran(self, keeper: IndexKeeper, event: RunEvent) -> None:
        """The keeper's listener (in the index thread): a run ended."""
        if event.kind != "end":
            return
        self._checked_at = time.monotonic()
        report = keeper.report if keeper.state == "ready" else None
        if report is None or (keeper.finished > 1 and report.quick) or self.on_ready is None:
            return
        try:
            self.on_ready()
        except Exception as exc:  # a warm-up only; the call that needs it will say what is wrong
            log.warning("warming up the index of %s failed: %r", keeper.root, exc)


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
        if "\0" in given:  # refused here: the OS's ValueError would read as a damaged index
            shown = given.replace("\0", "\\0")
            raise PathRefused(f"'{shown}' contains a NUL character; no file name can")
        pure = PurePosixPath(given)
        if pure.is_absolute() or (len(given) > 1 and given[1] == ":"):
            raise PathRefused(f"'{path}' is absolute; give a path relative to the workspace root")
        if ".." in pure.parts:
            raise PathRefused(f"'{path}' leaves the workspace ('..'); give a path inside it")
        parts = [p for p in pure.parts if p != "."]
        if not parts:
            raise PathRefused(f"'{path}' is the workspace itself; give a file inside it")
        if not self.several:
            workspace, rel = self.workspaces[0], "/".join(parts)
        else:
            named = self.by_name.get(parts[0])
            if named is None or len(parts) < 2:
                raise PathRefused(f"'{path}' does not start with a root's name ({', '.join(self.by_name)})")
            workspace, rel = named, "/".join(parts[1:])
        if _in_index(workspace, rel):
            raise PathRefused(f"'{path}' is in codectx's index folder, not the workspace's code")
        return workspace, rel

    def shown(self, workspace: Workspace, rel: str) -> str:
        """How a workspace path is shown to the agent."""
        return f"{workspace.name}/{rel}" if self.several else rel


def _in_index(workspace: Workspace, rel: str) -> bool:
    """The index folder's files (its manifest lists the workspace's paths and settings) are no code."""
    try:
        index = workspace.settings.index_dir().resolve()
    except ConfigError:  # no index folder can be named (a planted link): nothing to keep out
        return False
    where = (workspace.root / rel).resolve()
    return where == index or index in where.parents


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
