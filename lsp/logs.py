"""Where `codectx lsp` logs go: the editor's LSP log (window/logMessage), not stderr.

Editors show everything a server writes to stderr as errors (VS Code's
output channel prints each line as `[error]`), so a library's harmless
warning looked like a failure. Over stdio the server's own records, Python
warnings (logging.captureWarnings) and the transformers library's records
(its private stderr handler is replaced by propagation) all become
window/logMessage notifications with the matching message type. Records from
worker threads hop onto the event loop first. Before the editor connects,
and after it is gone, only errors are written to stderr, so a genuine
failure stays visible. ONNX Runtime logs from C++ straight to stderr; its
default severity is raised to errors before any session is created.
Every handler carries codectx.logsafe's filter, and a --log-file is 0600.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

from codectx.errors import UsageError

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

_TYPES = (
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
)
FORMAT = "%(levelname)s %(name)s: %(message)s"
_quieted = False
_quiet_lock = threading.Lock()


def message_type(levelno: int) -> types.MessageType:
    for threshold, kind in _TYPES:
        if levelno >= threshold:
            return kind
    return types.MessageType.Log


class LspLogHandler(logging.Handler):
    """Sends log records to the client as window/logMessage once the session is up."""

    def __init__(self, fallback: logging.Handler, keep: int = 200) -> None:
        super().__init__()
        self._fallback = fallback
        self._server: LanguageServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._early: collections.deque[tuple[int, str]] = collections.deque(maxlen=keep)
        self._local = threading.local()

    def attach(self, server: LanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        """From now on records go to `server`'s client; records logged before are sent first."""
        self._server, self._loop = server, loop
        while self._early:
            self._send(*self._early.popleft())

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._local, "sending", False):
            return  # pygls logging about the very notification we are sending
        if record.name.startswith("pygls") and record.levelno < logging.WARNING:
            return
        try:
            message = self.format(record)
        except Exception:
            self.handleError(record)
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            if record.levelno >= logging.ERROR:
                self._fallback.handle(record)
            elif loop is None:
                self._early.append((record.levelno, message))
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._send(record.levelno, message)
            return
        try:
            loop.call_soon_threadsafe(self._send, record.levelno, message)
        except RuntimeError:  # the loop closed meanwhile
            if record.levelno >= logging.ERROR:
                self._fallback.handle(record)

    def _send(self, levelno: int, message: str) -> None:
        server = self._server
        if server is None:
            return
        self._local.sending = True
        try:
            server.window_log_message(types.LogMessageParams(type=message_type(levelno), message=message))
        except Exception:
            if levelno >= logging.ERROR:
                print(message, file=sys.stderr)
        finally:
            self._local.sending = False


def configure(level_name: str, log_file: str | None, to_client: bool) -> LspLogHandler | None:
    """Set up the server's logging; returns the handler to attach when logs go to the client."""
    from codectx.logsafe import PrivateFileHandler, SafeLogFilter

    if log_file:
        try:
            handler: logging.Handler = PrivateFileHandler(log_file, encoding="utf-8")  # mode 0600
        except OSError as exc:
            raise UsageError(f"--log-file {log_file}: cannot write it ({exc.strerror})") from None
        handler.setFormatter(logging.Formatter("%(asctime)s " + FORMAT))
    else:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(logging.Formatter("%(asctime)s " + FORMAT))
        stderr.addFilter(SafeLogFilter())
        if to_client:
            handler = LspLogHandler(stderr)
            handler.setFormatter(logging.Formatter(FORMAT))
        else:
            handler = stderr
    # No key, authorization header or document text reaches any log, at any level (sizes and
    # hashes of library messages instead): codectx.logsafe.
    handler.addFilter(SafeLogFilter())
    # Libraries (pygls, httpx, onnx quantization) log a lot at INFO; keep the log about codectx.
    level = getattr(logging, level_name)
    logging.basicConfig(
        level=min(level, logging.WARNING) if level_name == "DEBUG" else logging.WARNING,
        handlers=[handler],
        force=True,
    )
    logging.getLogger("codectx").setLevel(level)
    logging.captureWarnings(True)
    # The Rust tokenizers print a warning to stderr when the process forks after using threads.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return handler if isinstance(handler, LspLogHandler) else None


def quiet_libraries() -> None:
    """Route or silence the model libraries that log to stderr on their own. Idempotent.

    Called before the embedding model is loaded (so before any ONNX session
    exists), in a worker thread: importing these libraries takes seconds.
    """
    global _quieted
    with _quiet_lock:
        if _quieted:
            return
        _quieted = True
        from codectx.runtime import no_onnx_telemetry

        no_onnx_telemetry()  # before ONNX Runtime loads: it writes its telemetry store at import
        try:
            import onnxruntime

            onnxruntime.set_default_logger_severity(3)  # errors and fatal only
        except ImportError:
            pass
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_default_handler()
            hf_logging.enable_propagation()
        except ImportError:
            pass
