"""codectx.app.keeper: one folder's index kept by a long-running front end, on the real indexer
and LanceDB. Runs are held at their `begin` event by a gate the test opens, so "a request while a
run is going" is a state the test waits for, not a timing guess."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codectx.app.embedders import Embedders
from codectx.app.keeper import IndexKeeper, RunEvent
from codectx.settings import Settings, load_settings
from codectx.tuning import BACKGROUND_NICE
from tests.support.workspace import lexical_settings, write_workspace

FILES = {
    "app/main.py": "from app.util import helper\n\n\ndef run():\n    return helper(2)\n",
    "app/util.py": "def helper(x):\n    return x * 2\n",
    "other/far.py": "def far_away():\n    return 'far'\n",
    "other/more.py": "def more():\n    return 'more'\n",
}


def settings_for(root: Path) -> Settings:
    return lexical_settings(root)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", FILES)


class Recorder:
    """The keeper's listener: records each run's paths and can hold runs at `begin`."""

    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[Path, ...] | None, str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.begun = threading.Semaphore(0)
        self.fail_on: str | None = None

    def __call__(self, keeper: IndexKeeper, event: RunEvent) -> None:
        if event.kind == "progress":
            return
        self.events.append((event.kind, event.paths, keeper.state))
        if event.kind == "begin":
            self.begun.release()
            assert self.gate.wait(30), "the test never released the run"
        if self.fail_on == event.kind:
            raise RuntimeError("a broken listener")

    def runs(self) -> list[tuple[Path, ...] | None]:
        return [paths for kind, paths, _ in self.events if kind == "begin"]


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(1)
    yield executor
    executor.shutdown(wait=True)


def keeper_of(root: Path, pool: ThreadPoolExecutor, recorder: Recorder, **kwargs: object) -> IndexKeeper:
    return IndexKeeper(root, settings_for(root), Embedders(), pool, listener=recorder, **kwargs)  # type: ignore[arg-type]


def index_once(keeper: IndexKeeper, recorder: Recorder) -> None:
    """A first full run, waited for, with its `begin` counted off."""
    keeper.request()
    assert keeper.wait_idle(60)
    assert recorder.begun.acquire(timeout=0)


def test_requests_during_a_run_coalesce_into_one_more_run(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder)
    index_once(keeper, recorder)
    assert keeper.state == "ready" and keeper.open_store() is not None
    recorder.gate.clear()
    keeper.request([ws / "app/util.py"])
    assert recorder.begun.acquire(timeout=30)
    # While that run is held: three more requests for files.
    for rel in ("app/main.py", "other/far.py", "app/main.py"):
        keeper.request([ws / rel])
    assert keeper.busy
    recorder.gate.set()
    assert keeper.wait_idle(60)
    assert recorder.runs() == [None, (ws / "app/util.py",), (ws / "app/main.py", ws / "other/far.py")]
    assert keeper.started == keeper.finished == 3


def test_a_full_request_during_a_run_makes_the_next_run_full(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder)
    index_once(keeper, recorder)
    recorder.gate.clear()
    keeper.request([ws / "app/util.py"])
    assert recorder.begun.acquire(timeout=30)
    keeper.request([ws / "app/main.py"])
    keeper.request()
    recorder.gate.set()
    assert keeper.wait_idle(60)
    assert recorder.runs()[1:] == [(ws / "app/util.py",), None]


def test_an_unindexed_folder_indexes_the_open_files_neighbourhood_first(
    ws: Path, pool: ThreadPoolExecutor
) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder, opened_wait_s=30.0)
    keeper.request()
    assert keeper.busy and keeper.started == 0  # waiting for an open document
    keeper.note_opened(ws / "app/main.py")
    assert keeper.wait_idle(60)
    first, second = recorder.runs()
    assert first is not None and first[0] == ws / "app/main.py"
    assert ws / "app/util.py" in first  # what it imports
    assert ws / "other/far.py" not in first
    assert second is None  # then the whole folder
    assert keeper.first_indexed == list(first)
    store = keeper.open_store()
    assert store is not None
    assert {d.path for d in store.symbols_named("far_away")} == {"other/far.py"}


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="per-thread priorities are Linux's")
def test_the_first_files_run_at_the_requests_priority_and_the_rest_lower(ws: Path) -> None:
    # Each run's begin is reported in the index thread: it records that thread's nice value then.
    seen: list[tuple[tuple[Path, ...] | None, int]] = []

    def record(_keeper: IndexKeeper, event: RunEvent) -> None:
        if event.kind == "begin":
            seen.append((event.paths, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

    base = os.getpriority(os.PRIO_PROCESS, 0)
    pool = ThreadPoolExecutor(1)  # a fresh thread, at the process's priority
    try:
        keeper = IndexKeeper(ws, settings_for(ws), Embedders(), pool, listener=record, opened_wait_s=30.0)
        keeper.request()
        keeper.note_opened(ws / "app/main.py")
        assert keeper.wait_idle(60)
        keeper.request()  # a later run, on the same (now lowered) thread
        assert keeper.wait_idle(60)
    finally:
        pool.shutdown(wait=True)
    (first, first_nice), (whole, whole_nice), (_, later_nice) = seen
    assert first is not None and whole is None
    assert first_nice == base  # what a waiting request's context needs: not behind other processes
    expected = min(19, base + BACKGROUND_NICE)
    assert whole_nice == later_nice == expected  # lowered once, not again for each run


def test_without_an_open_document_the_first_run_is_the_whole_folder(
    ws: Path, pool: ThreadPoolExecutor
) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder)  # opened_wait_s=0: nothing waits
    keeper.request()
    assert keeper.wait_idle(60)
    assert recorder.runs() == [None]


def test_a_failed_run_is_reported_and_the_next_request_runs_again(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder)
    keeper.settings = load_settings(
        ws,
        {"index.embed": False, "index.index_dir": str(ws / "app/main.py")},  # a file, not a folder
        environ={},
        user_config=ws.parent / "none.toml",
    )
    keeper.request()
    assert keeper.wait_idle(60)
    assert keeper.state == "failed" and keeper.error
    assert recorder.events[-1] == ("end", None, "failed")
    keeper.settings = settings_for(ws)
    keeper.request()
    assert keeper.wait_idle(60)
    assert keeper.state == "ready" and keeper.error == ""


def test_a_broken_listener_does_not_stop_indexing(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    recorder.fail_on = "begin"
    keeper = keeper_of(ws, pool, recorder)
    keeper.request()
    assert keeper.wait_idle(60)
    assert keeper.state == "ready" and keeper.finished == 1


def test_refresh_and_wait_sees_an_edit(ws: Path, pool: ThreadPoolExecutor) -> None:
    keeper = keeper_of(ws, pool, Recorder())
    keeper.request()
    assert keeper.wait_idle(60)
    (ws / "other/new.py").write_text("def brand_new_function():\n    return 1\n")
    assert keeper.refresh_and_wait(60)
    store = keeper.open_store()
    assert store is not None and [d.path for d in store.symbols_named("brand_new_function")] == [
        "other/new.py"
    ]


def test_refresh_and_wait_while_the_last_runs_listener_still_holds_the_worker(
    ws: Path, pool: ThreadPoolExecutor
) -> None:
    """The MCP server warms its session up in the listener of a run's end. An `index_status` wait
    that came then (an agent's first call on an indexed folder) counted that run as still going,
    waited for one run more than it got, and answered only at its timeout."""
    ended = threading.Event()
    release = threading.Event()

    def hold_at_end(_keeper: IndexKeeper, event: RunEvent) -> None:
        if event.kind == "end" and not release.is_set():
            ended.set()
            assert release.wait(60), "the test never released the listener"

    keeper = keeper_of(ws, pool, Recorder())
    keeper.listener = hold_at_end
    keeper.request()
    assert ended.wait(60)  # the run has ended; its listener still holds the worker
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(keeper.refresh_and_wait(60)))
    waiter.start()
    for _ in range(600):  # until the waiter's request is in: it marks the keeper dirty
        if keeper._dirty:
            break
        threading.Event().wait(0.05)
    release.set()
    waiter.join(90)
    assert waited == [True]
    assert keeper.finished == 2  # the run that was asked for, no more


def test_closed_keeper_runs_nothing_more(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder)
    recorder.gate.clear()
    keeper.request()
    assert recorder.begun.acquire(timeout=30)
    keeper.request([ws / "app/main.py"])  # would follow
    keeper.close()
    recorder.gate.set()
    assert keeper.wait_idle(60)
    keeper.request()
    assert keeper.wait_idle(60)
    assert recorder.runs() == [None]


def test_closing_with_a_run_queued_on_a_stopped_executor_releases_its_waiters(ws: Path) -> None:
    executor = ThreadPoolExecutor(1)
    blocker = threading.Event()
    executor.submit(blocker.wait, 30)  # the executor's one thread is busy: the run stays queued
    keeper = keeper_of(ws, executor, Recorder())  # type: ignore[arg-type]
    keeper.request()
    waiting = keeper.idle()
    assert not waiting.done()
    keeper.close()
    executor.shutdown(wait=False, cancel_futures=True)  # the queued run is dropped, as at exit
    blocker.set()
    assert waiting.result(timeout=30) is None
    assert keeper.wait_idle(30) and keeper.started == 0


def test_an_indexed_folders_first_check_and_store_wait_for_the_first_answer(
    ws: Path, pool: ThreadPoolExecutor
) -> None:
    recorder = Recorder()
    index_once(keeper_of(ws, pool, recorder), recorder)  # yesterday's server: the index exists
    (ws / "app" / "new.py").write_text("def fresh():\n    return 1\n")  # an edit made meanwhile
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder, check_wait_s=120.0)
    opening = threading.Thread(target=keeper.prepare)
    opening.start()
    keeper.request()  # the start's check for edits made while nothing was watching
    early = keeper.context_source()
    assert early is not None and getattr(early, "phase", "") == "early"
    assert keeper.answering_early and keeper.store is None
    assert [d.path for d in early.symbols_named("helper")] == ["app/util.py"]
    assert not early.symbols_named("fresh")  # the lookup files are yesterday's index
    assert keeper.busy and keeper.started == 0  # the check waits for the first answer
    keeper.note_answered()
    opening.join(60)
    assert keeper.store is not None and not keeper.answering_early
    assert keeper.wait_idle(60)
    assert recorder.runs() == [None]
    assert keeper.context_source() is keeper.store
    assert [d.path for d in keeper.store.symbols_named("fresh")] == ["app/new.py"]


def test_close_releases_a_deferred_open(ws: Path, pool: ThreadPoolExecutor) -> None:
    recorder = Recorder()
    index_once(keeper_of(ws, pool, recorder), recorder)
    keeper = keeper_of(ws, pool, Recorder(), check_wait_s=600.0)
    opening = threading.Thread(target=keeper.prepare)
    opening.start()
    keeper.close()
    opening.join(60)
    assert not opening.is_alive()


def test_runs_over_saved_files_copy_the_lookup_files_once_saves_pause(
    ws: Path, pool: ThreadPoolExecutor
) -> None:
    from codectx.indexer.storage import lookupfiles

    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder, lookups_idle_s=0.2)
    index_once(keeper, recorder)
    index_dir = keeper.settings.index_dir()
    assert lookupfiles.is_current(index_dir)  # a full run writes them itself
    (ws / "app" / "util.py").write_text("def helper(x):\n    return x * 3\n\n\ndef saved():\n    pass\n")
    keeper.request([ws / "app" / "util.py"])
    assert keeper.wait_idle(60)
    for _ in range(600):  # the copy comes after the pause, on the index thread
        reader = lookupfiles.LookupReader.open(index_dir)
        if reader is not None and reader.columns().symbols_named("saved"):
            break
        threading.Event().wait(0.05)
    else:
        raise AssertionError("the lookup files were never brought up to date")
    keeper.close()


def test_closing_stops_a_run_at_its_next_step_and_the_next_start_finishes_it(tmp_path: Path) -> None:
    """An editor closing in the middle of a long run (tens of minutes of embedding on a large tree)
    must not keep the process busy until the run ends, nor log a crash when the interpreter's
    executors refuse work at exit: the run stops at its next progress step, as a stop, not a failure."""
    files = {f"pkg/mod{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(40)}
    root = write_workspace(tmp_path / "ws", files)

    class CloseOnFirstStep(Recorder):
        steps = 0

        def __call__(self, keeper: IndexKeeper, event: RunEvent) -> None:
            if event.kind == "progress":
                type(self).steps += 1
                keeper.close()
            super().__call__(keeper, event)

    with ThreadPoolExecutor(1) as executor:
        recorder = CloseOnFirstStep()
        keeper = keeper_of(root, executor, recorder)
        keeper.request()
        assert keeper.wait_idle(60)
    assert CloseOnFirstStep.steps == 1, "the run went on after the keeper closed"
    assert keeper.state == "idle" and not keeper.error
    assert keeper.report is None
    assert [kind for kind, _, _ in recorder.events] == ["begin", "end"]

    with ThreadPoolExecutor(1) as executor:
        again = keeper_of(root, executor, Recorder())
        again.request()
        assert again.wait_idle(60)
    assert again.state == "ready", again.error
    assert again.report is not None and again.report.files == 40


def test_a_file_saved_during_embedding_is_indexed_before_the_rest_of_the_vectors(tmp_path: Path) -> None:
    """A large folder's embedding takes many minutes; a file saved meanwhile must not wait for all
    of it: the run stops at its next commit, the saved file is indexed, then the vectors go on."""
    from codectx.indexer.pipeline import index_workspace
    from codectx.indexer.storage.store import IndexStore

    files = {f"pkg/m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(300)}
    root = write_workspace(tmp_path / "ws", files)
    index_workspace(root, lexical_settings(root))  # indexed, every vector owed
    settings = load_settings(
        root,
        {"index.embed": True, "index.embed_backend": "torch"},
        environ={},
        user_config=root.parent / "none.toml",
    )
    saved = root / "pkg" / "saved.py"
    starts: list[tuple[int, int]] = []  # (run, vectors owed) at each run's embedding start

    class SaveWhileEmbedding(Recorder):
        def __call__(self, keeper: IndexKeeper, event: RunEvent) -> None:
            step = event.args[0] if event.kind == "progress" and len(event.args) == 1 else None
            if getattr(step, "stage", None) == "embed" and step.done == 0:
                starts.append((keeper.started, step.total))
                if keeper.started == 1:  # the editor saves a new file as the first run embeds
                    saved.write_text("def saved_marker():\n    return 1\n")
                    keeper.request([saved])
            super().__call__(keeper, event)

    with ThreadPoolExecutor(1) as executor:
        recorder = SaveWhileEmbedding()
        keeper = IndexKeeper(root, settings, Embedders(), executor, listener=recorder)
        keeper.request()
        assert keeper.wait_idle(300)
        keeper.close()
    assert keeper.state == "ready", keeper.error
    # The second run began with all 301 vectors still owed: the first stopped before embedding
    # any, so the saved file did not wait for them (without stopping: 1 owed, the saved file's).
    assert starts == [(1, 300), (2, 301)]
    assert len(recorder.runs()) == 2  # one stop only: the second run finished everything
    store = IndexStore.open(settings.index_dir())
    assert [d.path for d in store.symbols_named("saved_marker")] == ["pkg/saved.py"]
    assert keeper.report is not None and keeper.report.vectors_pending == 0


def test_an_error_once_the_keeper_is_closed_is_a_stop_not_a_crash(
    ws: Path, pool: ThreadPoolExecutor, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """At exit the interpreter's executors refuse work ("cannot schedule new futures after
    interpreter shutdown") before the run reaches its next progress step: a closed keeper's run
    then ends as a stop, logged at INFO, not as a crash with a traceback."""
    import codectx.app.keeper as keeper_module

    keeper = keeper_of(ws, pool, Recorder())

    def refused(*args: object, **kwargs: object) -> None:
        keeper.close()
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(keeper_module, "index_folder", refused)
    with caplog.at_level("INFO", logger="codectx.app.keeper"):
        keeper.request()
        pool.shutdown(wait=True)  # the run has ended (closing released its waiters at once)
    assert keeper.finished == 1
    assert keeper.state == "idle" and not keeper.error
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert any("stopped as the workspace closed" in r.getMessage() for r in caplog.records)


def test_a_refused_index_folder_is_the_folders_error_also_when_the_keeper_waits_for_answers(
    ws: Path, tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    """With `check_wait_s` (as the language server builds it) the refusal of a workspace's
    `.codectx` link escaped the worker thread: the folder stayed idle, with no error to show."""
    other = tmp_path / "other-index"
    other.mkdir()
    (ws / ".codectx").symlink_to(other)
    recorder = Recorder()
    keeper = keeper_of(ws, pool, recorder, check_wait_s=0.5)
    keeper.request()
    assert keeper.wait_idle(60)
    assert keeper.state == "failed" and ".codectx is a link" in keeper.error
    assert list(other.iterdir()) == []
