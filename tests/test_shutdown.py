"""A codectx process that loaded LanceDB ends by hand (codectx/shutdown.py): what a normal exit
does must still happen, with the command's status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
{imports}
from codectx.shutdown import exit_process

out = sys.argv[1]
atexit.register(lambda: open(out + ".atexit", "w").write("ran"))
def late():
    time.sleep(0.3)
    open(out + ".thread", "w").write("done")
threading.Thread(target=late).start()  # non-daemon: a normal exit waits for it
pool = ThreadPoolExecutor(2)
pool.submit(lambda: 1).result()  # an idle pool worker: must not keep the exit waiting
for _ in range(1000):
    sys.stdout.write("x" * 200)  # a pipe's block buffer holds the last few kB until a flush
exit_process(7)
"""


def _run(tmp_path: Path, imports: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "mark"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(imports=imports), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        # Buffered output, as a user's shell gives it (this machine's environment unbuffers it).
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )
    return done, out


def test_a_process_that_loaded_lancedb_exits_by_hand_and_loses_nothing(tmp_path: Path) -> None:
    done, out = _run(tmp_path, "import lancedb")
    assert done.returncode == 7, done.stderr[-2000:]
    assert len(done.stdout) == 200_000
    assert (out.parent / "mark.atexit").read_text() == "ran"
    assert (out.parent / "mark.thread").read_text() == "done"
    assert "Fatal Python error" not in done.stderr


def test_a_process_without_lancedb_exits_the_ordinary_way(tmp_path: Path) -> None:
    done, out = _run(tmp_path, "")
    assert done.returncode == 7 and len(done.stdout) == 200_000
    assert (out.parent / "mark.atexit").exists() and (out.parent / "mark.thread").exists()


@pytest.mark.parametrize(
    ("raised", "shown", "status"),
    [
        ("SystemExit('server stopped early')", "server stopped early", 1),
        ("RuntimeError('a bug')", "internal error (a bug in codectx", 70),
    ],
)
def test_the_console_entry_ends_by_hand_after_an_exception(raised: str, shown: str, status: int) -> None:
    # A library's sys.exit, argparse's, or a bug escaping `main` must not bring back the
    # finalization skipped here. SystemExit's status is the interpreter's (1 for a message); a bug
    # has its own (70), so that a script tells it from "no index" (1).
    probe = (
        "import lancedb, sys, codectx.cli\n"
        # Interpreter finalization would call this (the step a hand exit skips).
        "class Finalized:\n    def __del__(self):\n        sys.stderr.write('FINALIZED')\n"
        "witness = Finalized()\n"
        f"def main():\n    raise {raised}\n"
        "codectx.cli.main = main\n"
        "codectx.cli.entry()\n"
        "print('not reached')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == status and "not reached" not in done.stdout
    assert shown in done.stderr and "FINALIZED" not in done.stderr
    assert ("Traceback" in done.stderr) == (status == 70)


def test_closed_standard_streams_keep_the_status() -> None:
    # Started with stdout and stderr closed (`2>&-`), Python has them as None.
    probe = (
        "import lancedb, sys\n"
        "from codectx.shutdown import exit_process\n"
        "sys.stdout = None\nsys.stderr = None\n"
        "exit_process(5)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 5, done.stderr[-2000:]


def test_ctrl_c_while_a_thread_finishes_still_ends_cleanly(tmp_path: Path) -> None:
    # A second Ctrl-C while the exit waits for a worker: stop waiting, run the atexit handlers,
    # keep the status (the interpreter's own exit would print a traceback and die by the signal).
    marker = tmp_path / "atexit"
    probe = (
        "import atexit, signal, sys, threading, time\n"
        "import lancedb\n"
        "from codectx.shutdown import exit_process\n"
        # As in a terminal: a test runner started in the background inherits SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\n"
        # To the main thread itself: a signal another thread takes would not wake its wait.
        "main = threading.main_thread().ident\n"
        "threading.Timer(1.0, lambda: signal.pthread_kill(main, signal.SIGINT)).start()\n"
        "exit_process(130)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=50)
    assert done.returncode == 130, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "interrupted" in done.stderr
    assert marker.read_text() == "ran"
