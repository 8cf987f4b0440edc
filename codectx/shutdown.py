"""How a codectx process ends: by hand once LanceDB is loaded, so that it never aborts at exit.

LanceDB 0.40 runs native worker threads that the interpreter does not know about. When one of
them touches Python state while the interpreter finalizes, the process aborts with "Fatal Python
error: PyGILState_Release: thread state ... must be current when releasing" (SIGABRT, exit
status 134) after the command has printed its whole answer; a script sees the failure, not the
answer. LanceDB 0.40 already stops its own tokio runtime from an atexit hook (lancedb/lancedb#4175,
`lancedb._lancedb.shutdown_runtime`), and still one `codectx context --lexical --json` on Django in
about 85 aborted this way here (the aborting thread had no Python frame: a native worker).

So `exit_process` does what a normal exit does, in order, and then skips finalization:
non-daemon threads joined, atexit handlers run (LanceDB's runtime shutdown, logging's flush,
caches saved), the standard streams flushed, then `os._exit` with the command's status: no
finalization is left for a native thread to race with. A process that never loaded LanceDB
exits the ordinary way. Called by the console script and `python -m codectx`, never by `main`
itself: tests and hosts that call `main` in-process get its status back.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

# Modules whose native runtimes may outlive the interpreter's finalization.
NATIVE_RUNTIMES = ("lancedb",)


def status_of(code: object) -> int:
    """A `SystemExit`'s code as the interpreter makes it an exit status: None is 0, a message is
    printed on stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    _say(str(code))
    return 1


def exit_process(code: int) -> NoReturn:
    """End the process with status `code` (see the module docstring)."""
    if not any(name in sys.modules for name in NATIVE_RUNTIMES):
        sys.exit(code)
    # The interpreter's own exit, step by step (Py_FinalizeEx): first the threading module's
    # shutdown, which tells executors' workers to stop and joins every non-daemon thread (joining
    # them without it would wait forever on idle pool workers), then the atexit handlers.
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        try:
            shutdown()
        except KeyboardInterrupt:  # Ctrl-C while a thread finishes: stop waiting, still end cleanly
            _say("codectx: interrupted; not waiting for background work to finish")
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed when the process started
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can be written
            pass
    os._exit(code)


def _say(message: str) -> None:
    try:
        if sys.stderr is not None:
            print(message, file=sys.stderr)
    except (OSError, ValueError):
        pass
