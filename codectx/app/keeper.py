"""One folder's index kept fresh for a long-running front end (the language server, the MCP server).

An `IndexKeeper` owns the folder's open store and the background runs that build and refresh it:
- Requests are coalesced. While a run is going, more requests only mark it dirty and one more run
  follows, over the union of what was asked (`None`: the whole folder, incrementally).
- Runs happen on the executor it is given: one worker thread, which lowers its own CPU priority
  after an unindexed folder's first files (`background_thread`), so requests, served from other
  threads, get the cores first; the first files, which those requests wait for, do not wait behind
  other processes (a model server on the same machine, a build).
- An unindexed folder whose front end reports open files indexes those files' neighbourhood first
  (`first_files`), then the whole folder, so context comes within seconds.
- Every run's vectors start with the same neighbourhood (`neighbourhood`, asked again before each
  part of the embedding: a document opened during a long run moves to the front), so search and
  completions near the open files get vectors within a minute, not after the whole folder's;
  `near_vectors` says how far that has got.
- After a full run that changed tables the store is reopened; after a run over saved files the
  kept store's snapshot is told to read what changed.
- Each run's begin, progress and end go to one listener, called in the worker thread; front ends
  turn them into `$/progress` or a status answer.

Calls never wait for a run: they read the index as it is. `wait_idle` and `refresh_and_wait` are
for the callers that ask to wait (`codectx.reindex` with wait, the MCP tool `index_status`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.app.embedders import Embedders
from codectx.app.index import (
    IndexRun,
    Store,
    early_snapshot,
    first_files,
    hand_over,
    index_folder,
    load_in_background,
    open_existing,
    see_changes,
    write_lookup_files,
)
from codectx.errors import CodectxError
from codectx.indexer.storage.layout import index_exists
from codectx.settings import Settings
from codectx.tuning import background_thread

if TYPE_CHECKING:
    from codectx.retriever.snapshot import IndexSnapshot

log = logging.getLogger(__name__)


class _Closing(Exception):
    """Raised from a run's progress callback once the keeper is closed (not a CodectxError)."""


class _Yielding(Exception):
    """Raised from a run's progress callback, between two embedding commits, when files were saved
    meanwhile: the run stops there and the next one indexes them first, then embeds the rest."""


# Embedding all of Django takes 8-30 minutes; a file saved meanwhile would have waited for all of
# it before its symbols and full text were updated. A run embedding vectors therefore stops at the
# next commit when files were saved meanwhile, but at most once per YIELD_EVERY_S, so that saves
# every few seconds cannot starve the embedding (each stop costs the next run a walk of the folder).
YIELD_EVERY_S = 30.0


FIRST_FILES = 40  # at most this many files go first (each costs ~40 ms to index on 2 cores)
# After runs over saved files, the lookup files are copied once no run came for this long: the copy
# reads three whole tables (0.33 s on Django, where a one-file run takes 0.2 s).
LOOKUPS_IDLE_S = 30.0


@dataclass(frozen=True)
class RunEvent:
    """What a run reports: `begin`, `progress` (the indexer's callback arguments) or `end` (the
    keeper's state, error and report are already updated)."""

    kind: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] | None = None
    paths: tuple[Path, ...] | None = None  # the files this run covers; None: the whole folder


Listener = Callable[["IndexKeeper", RunEvent], None]


def _ignore(_keeper: IndexKeeper, _event: RunEvent) -> None:
    """No listener: nothing is reported."""


class IndexKeeper:
    """A folder's store and its background (re)indexing. Thread-safe; also an `IndexSource`."""

    def __init__(
        self,
        root: Path,
        settings: Settings,
        embedders: Embedders,
        executor: Executor,
        *,
        listener: Listener = _ignore,
        background_load: bool = False,
        opened_wait_s: float = 0.0,
        check_wait_s: float = 0.0,
        lookups_idle_s: float = LOOKUPS_IDLE_S,
    ) -> None:
        self.root = root
        self.settings = settings
        self.state = "idle"  # idle | indexing | ready | failed | unavailable
        self.error = ""  # why the last run failed
        self.open_error = ""  # why the store could not be opened
        self.started = 0  # runs begun
        self.finished = 0  # runs ended (also failed ones)
        self.report: IndexRun | None = None  # the last successful run's
        self.first_indexed: list[Path] = []  # what an unindexed folder indexed first
        # (vectors done, vectors owed) of the open documents' neighbourhood, as the last run's
        # embedding reported it; None until a run embedded (or found nothing owed) near them.
        self.near_vectors: tuple[int, int] | None = None
        self._near_key: tuple[Path, ...] = ()
        self._near: list[str] = []
        self._embedders = embedders  # the process's models: indexing loads no second copy
        self._executor = executor
        self.listener = listener  # set later by a front end that needs the keeper to build it
        # Long-lived editors: open stores load into memory on a background thread and are
        # answered from index lookups meanwhile (codectx.app.index.load_in_background).
        self._background_load = background_load
        self._opened_wait_s = opened_wait_s  # how long a first run waits for an open document
        # How long an indexed folder's first run (the check for edits made while nothing was
        # watching) waits for the first request's context: on a large folder that check holds
        # the interpreter lock for a second or more, which the first answer would wait for.
        self._check_wait_s = check_wait_s
        self._lookups_idle_s = lookups_idle_s
        self._lookups_timer: threading.Timer | None = None
        self._store: Store | None = None
        self._preparing = False  # `prepare` was called: the store is being opened
        self._early_lock = threading.Lock()
        self._early_read = False
        self._early_snapshot: IndexSnapshot | None = None
        self._missing_logged = False
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one thread opens the store; the others wait for it
        self._changed = threading.Condition(self._lock)
        self._busy = False  # a job is queued or running
        self._dirty = False
        # Requests are numbered; `_covered` is the number of the last request a finished run had
        # taken in when it began. A waiter waits for its own request's number, not for a count of
        # runs: a run that has ended but whose listener still holds the worker (the MCP server's
        # warm-up) is neither "going" nor "done", and counting runs got that wrong.
        self._requested = 0
        self._covered = 0
        self._closed = False
        self._full = False
        self._yielded_at = -YIELD_EVERY_S  # when a run last stopped for saved files (monotonic)
        self._paths: set[Path] = set()
        self._opened: list[Path] = []
        self._opened_event = threading.Event()
        self._answered_event = threading.Event()
        self._idle: list[Future[None]] = []

    # --- the store -------------------------------------------------------------

    @property
    def store(self) -> Store | None:
        """The store if it is open (never opens it)."""
        return self._store

    def open_store(self) -> Store | None:
        """The folder's store, opened on first use; None while there is none (see `open_error`)."""
        store = self._store
        if store is not None:
            return store
        with self._opening:
            if self._store is None:
                self._store = self._open()
            return self._store

    def prepare(self) -> None:
        """Open the store for a front end that is starting. At once; or, when the index's lookup
        files can answer the first requests meanwhile (`context_source`), after the first of them
        (at most `check_wait_s`), because LanceDB's import and open hold the interpreter lock for
        over a second and that answer would wait behind them."""
        self._preparing = True
        if self.answers_early():
            self._wait_answered()
        store = self.open_store()
        with self._early_lock:
            early, self._early_snapshot = self._early_snapshot, None  # the store answers from now on
        if store is not None and early is not None:
            hand_over(early, store)

    def answers_early(self) -> bool:
        """Whether, until the store opens, the index's lookup files answer (read here on first
        call); only for a front end that defers the opening (`check_wait_s`)."""
        return self._check_wait_s > 0 and self._store is None and self._early() is not None

    @property
    def answering_early(self) -> bool:
        """The lookup files answer now (read, and the store not open yet)."""
        return self._store is None and self._early_snapshot is not None

    def context_source(self) -> Store | IndexSnapshot | None:
        """Where a request's context reads the index: the open store; while `prepare` opens it,
        the index's lookup files if they match the index (codectx.app.index.early_snapshot);
        else the store, opened now (None: no index yet)."""
        store = self._store
        if store is not None:
            return store
        if self._preparing:
            early = self._early()
            if early is not None:
                return early
        return self.open_store()

    def _early(self) -> IndexSnapshot | None:
        """The lookup files' snapshot, read on first use (once: the store replaces it)."""
        with self._early_lock:
            if not self._early_read:
                self._early_read = True
                try:
                    self._early_snapshot = early_snapshot(self.settings.index_dir())
                except Exception:  # unreadable copies: the store answers, as without them
                    log.info("the lookup files of %s were not read", self.root, exc_info=True)
            return self._early_snapshot

    def _open(self) -> Store | None:
        try:
            store = open_existing(self.settings.index_dir())
        except ImportError as exc:
            self.open_error = f"the indexer is not installed ({exc.name})"
            return None
        except CodectxError as exc:
            self.open_error = str(exc)
            if not self._missing_logged:
                self._missing_logged = True
                log.info("no index yet for %s: %s", self.root, exc)
            return None
        except Exception as exc:  # a damaged index must not take the server down
            log.warning("opening the index of %s failed: %r", self.root, exc)
            self.open_error = f"the index cannot be opened ({type(exc).__name__})"
            return None
        self.open_error = ""
        if self._background_load:
            try:
                # The load holds the interpreter lock for seconds; a first answer goes before it.
                load_in_background(store, after=self._wait_answered if self._check_wait_s > 0 else None)
            except Exception:
                log.warning("loading the index of %s in the background failed", self.root, exc_info=True)
        return store

    def forget_store(self) -> None:
        """Drop the open store (new settings, or a read failed); the next use opens it again."""
        with self._opening:
            self._store = None

    def damaged(self) -> None:
        """A read failed: drop the store and check the index now (the run repairs it)."""
        self.forget_store()
        self.request()

    # --- runs ------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A run is queued or going."""
        return self._busy

    def note_opened(self, path: Path) -> None:
        """A document of this folder is open in the editor: an unindexed folder indexes it first."""
        with self._lock:
            if path not in self._opened:
                self._opened.append(path)
        self._opened_event.set()

    def _wait_answered(self) -> None:
        """Until a first request was answered (`note_answered`), or at most `check_wait_s`."""
        self._answered_event.wait(self._check_wait_s)

    def note_answered(self) -> None:
        """A first request from this folder was answered: the deferred opening and first check start."""
        self._answered_event.set()

    def request(self, paths: list[Path] | None = None) -> int:
        """Index now, or once more after the current run (coalesced); `paths`: only these files.
        Returns the request's number (`refresh_and_wait` waits for the run that takes it in)."""
        with self._lock:
            if self._closed:
                return self._requested
            if paths:
                self._paths.update(paths)
            else:
                self._full = True
            self._requested += 1
            ticket = self._requested
            if self._busy:
                self._dirty = True
                return ticket
            self._busy = True
        try:
            self._executor.submit(self._work)
        except RuntimeError:  # the executor is shut down: the process is stopping
            with self._lock:
                self._busy = False
                self._settle()
        return ticket

    def idle(self) -> Future[None]:
        """A future that is done when no run is queued or going (at once if none is)."""
        future: Future[None] = Future()
        with self._lock:
            if self._busy and not self._closed:
                self._idle.append(future)
                return future
        future.set_result(None)
        return future

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Block until no run is queued or going; False on timeout."""
        try:
            self.idle().result(timeout_s)
        except TimeoutError:
            return False
        return True

    def refresh_and_wait(self, timeout_s: float) -> bool:
        """Check for changes now and wait until that check is over; False on timeout."""
        ticket = self.request()
        with self._changed:
            return self._changed.wait_for(lambda: self._covered >= ticket or self._closed, timeout_s)

    def close(self) -> None:
        """No more runs (a run that is going finishes; nothing follows it). Nobody waits for one
        any more: a queued job may be dropped with its executor."""
        with self._lock:
            self._closed = True
            self._answered_event.set()  # a deferred first check stops waiting (and then runs nothing)
            if self._lookups_timer is not None:
                self._lookups_timer.cancel()
            waiting, self._idle = self._idle, []
            for future in waiting:
                future.set_result(None)
            self._changed.notify_all()

    def _settle(self) -> None:
        """Under the lock: wake whoever waits for the keeper to be idle."""
        if not self._busy:
            waiting, self._idle = self._idle, []
            for future in waiting:
                future.set_result(None)
        self._changed.notify_all()

    def _work(self) -> None:
        """The worker thread's job: the first run's files, then runs until nothing is asked."""
        try:
            if self.started == 0:
                if self._check_wait_s > 0 and self._indexed_already():
                    self._wait_answered()  # an indexed folder: its first answer goes first
                if self.open_store() is None:
                    self._first_run()
            # The first run's files at the priority of the requests that wait for their context;
            # everything after them at a lower one (a no-op once the thread is lowered).
            background_thread()
            while True:
                with self._lock:
                    if self._closed:
                        return
                    self._dirty = False
                    paths = None if self._full or self.started == 0 else sorted(self._paths)
                    self._full = False
                    self._paths.clear()
                    taking_in = self._requested  # every request so far is in this run
                self._run(paths)
                with self._lock:
                    self._covered = taking_in
                    self._changed.notify_all()
                    if not self._dirty:
                        # Idle in the same hold as the look at `_dirty`: a request between two
                        # holds saw the keeper busy, set `_dirty`, and was never run.
                        self._busy = False
                        self._settle()
                        return
        finally:
            with self._lock:
                if self._busy:  # left by `_closed` or an exception, not by the idle return above
                    self._busy = False
                    self._settle()

    def _indexed_already(self) -> bool:
        """Whether the folder has an index; False where settings refuse the index folder (a
        workspace's `.codectx` link): the run that follows reports why, as the folder's error."""
        try:
            return bool(index_exists(self.settings.index_dir()))
        except CodectxError:
            return False

    def _first_run(self) -> None:
        """An unindexed folder: the open files, their imports and their folders first (requests get
        context from them within seconds), then the whole folder."""
        if self._opened_wait_s > 0:
            # The editor opens its first document right after `initialized`; a moment's wait lets
            # that document go first. Without one the whole folder is indexed in one run.
            self._opened_event.wait(self._opened_wait_s)
        with self._lock:
            opened = list(self._opened)
        if not opened:
            return
        first = first_files(self.root, self.settings, opened, FIRST_FILES)
        self.first_indexed = first
        names = [p.relative_to(self.root).as_posix() for p in first]
        log.info(
            "indexing %s: %d files first (the open files, their imports and folders): %s",
            self.root,
            len(first),
            ", ".join(names[:40]) + (", ..." if len(names) > 40 else ""),
        )
        self._run(first, may_yield=False)
        with self._lock:
            self._full = True  # then the rest (the next run)

    def neighbourhood(self) -> list[str]:
        """Workspace-relative paths of the files near the documents open in the editor, nearest
        first: the most recently opened documents, their imports, their folders' files, and the
        imports' imports (`first_files`, at most FIRST_FILES). Recomputed when a document opens."""
        with self._lock:
            opened = tuple(reversed(self._opened))
        if opened != self._near_key:
            root = self.root.resolve()
            try:
                files = first_files(root, self.settings, list(opened), FIRST_FILES) if opened else []
            except OSError:  # a folder vanished under the walk: no neighbourhood this time
                files = []
            self._near_key = opened
            self._near = [p.relative_to(root).as_posix() for p in files]
        return self._near

    def _run(self, paths: list[Path] | None, may_yield: bool = True) -> None:
        """One run over `paths` (None: the whole folder); `may_yield`: it may stop between two
        embedding commits for files saved meanwhile (not the first files, whose vectors are next)."""
        with self._lock:
            if self._lookups_timer is not None:  # this run writes them, or schedules them again
                self._lookups_timer.cancel()
                self._lookups_timer = None
        before, self.state = self.state, "indexing"
        self.started += 1
        shown = tuple(paths) if paths else None
        self._tell(RunEvent("begin", paths=shown))

        def progress(*args: Any, **kwargs: Any) -> None:
            if self._closed:  # the server is closing: stop at this step, what was committed stays
                raise _Closing
            event: Any = args[0] if len(args) == 1 else None
            if getattr(event, "stage", None) == "near":
                self.near_vectors = (int(event.done), int(event.total))
            self._tell(RunEvent("progress", args, kwargs, paths=shown))
            if may_yield and _between_commits(event) and self._may_yield():
                raise _Yielding

        try:
            embedder = self._embedders.get_or_none(self.settings)
            report = index_folder(
                self.root, self.settings, paths, progress=progress, embedder=embedder, near=self.neighbourhood
            )
        except _Closing:
            log.info("indexing %s stopped: the workspace was closed (committed parts are kept)", self.root)
            self.state = before
        except _Yielding:
            log.info("indexing %s: files were saved; they go first, then the vectors go on", self.root)
            self.state = before
            with self._lock:
                self._yielded_at = time.monotonic()
                if paths is None:
                    self._full = True  # the whole-folder run is not finished: it runs again
        except ImportError as exc:
            self.state, self.error = "unavailable", f"the indexer is not installed ({exc.name})"
        except CodectxError as exc:
            self.state, self.error = "failed", str(exc)
        except Exception as exc:
            if self._closed:  # the process is exiting: its executors refuse work before a step
                log.info("indexing %s stopped as the workspace closed (%r)", self.root, exc)
                self.state = before
            else:
                log.exception("indexing %s crashed", self.root)
                self.state, self.error = "failed", f"indexing crashed ({type(exc).__name__}: {exc})"
        else:
            self._done(report, paths)
        with self._lock:
            self.finished += 1
            self._changed.notify_all()
        self._tell(RunEvent("end", paths=shown))

    def _may_yield(self) -> bool:
        """Files were saved during this run (a whole-folder request, as the polling watcher sends,
        waits for the run's end), and no run stopped for them in the last YIELD_EVERY_S."""
        with self._lock:
            return bool(self._paths) and time.monotonic() - self._yielded_at >= YIELD_EVERY_S

    def _done(self, report: IndexRun, paths: list[Path] | None) -> None:
        # Bad ignore lines, undecodable names, files that changed kind: the log, no popup.
        for warning in list(report.warnings)[:100]:
            log.warning("indexing %s: %s", self.root, warning)
        self.report = report
        self.state, self.error = "ready", ""
        store = self._store
        if paths:
            self._lookups_later()  # the run left the lookup files stale (index_folder)
        if paths and store is not None:
            see_changes(store)  # the kept store's snapshot reads the saved files now
        elif not report.quick:
            # Reopen: a full run may have created or replaced tables. A quick run (nothing
            # changed) keeps the store, and with it the snapshot that is loading or loaded.
            self.forget_store()

    def _lookups_later(self) -> None:
        """Copy the lookup files once no run has come for `lookups_idle_s`."""
        with self._lock:
            if self._closed:
                return
            if self._lookups_timer is not None:
                self._lookups_timer.cancel()
            timer = self._lookups_timer = threading.Timer(self._lookups_idle_s, self._lookups_due)
        timer.daemon = True
        timer.start()

    def _lookups_due(self) -> None:
        with self._lock:
            self._lookups_timer = None
            if self._closed:
                return
        try:  # on the index thread, after (or before) whatever run is queued there
            self._executor.submit(self._write_lookups)
        except RuntimeError:  # the executor is shut down: the server is stopping
            pass

    def _write_lookups(self) -> None:
        if self._closed:
            return
        background_thread()
        try:
            if not write_lookup_files(self.settings):
                log.info("lookup files of %s not written: another writer holds the index", self.root)
        except Exception:  # a cache: the next start opens the store first, as without one
            log.warning("writing the lookup files of %s failed", self.root, exc_info=True)

    def _tell(self, event: RunEvent) -> None:
        try:
            self.listener(self, event)
        except Exception:  # a listener's failure must not stop indexing
            log.warning("an index listener failed on %s", event.kind, exc_info=True)


def _between_commits(event: Any) -> bool:
    """A progress event sent between two embedding commits (indexer/stages.py: embed_pending):
    stopping there loses no vector."""
    stage, done = getattr(event, "stage", None), getattr(event, "done", None)
    return stage in ("near", "embedded", "names") or (stage == "embed" and done == 0)
