"""Helpers for the language-server tests: a loopback model server with fixed answers,
a small fixture repository, and the command that starts the real `codectx lsp`.

The fixed server speaks the OpenAI API like vLLM does (`/v1/models`,
`/v1/completions` with and without SSE streaming, `/v1/chat/completions`), so
the real server and the real backend client run unchanged; only the model's
words are fixed, which makes editor tests deterministic. It can also stall
before the first token, to exercise cancellation and budgets.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SERVER_COMMAND = [PYTHON, "-m", "codectx", "lsp"]

FIXED_COMPLETION = "total = left + right"
FIXED_REFACTOR = '''```python
def add(left: int, right: int) -> int:
    """Add two numbers."""
    total = left + right
    return total
```'''


@dataclass
class FixedBackend:
    """A loopback OpenAI-compatible server returning fixed text; records what it received."""

    completion: str = FIXED_COMPLETION
    chat: Callable[[dict[str, Any]], str] = field(default=lambda body: FIXED_REFACTOR)
    first_token_delay_s: float = 0.0
    chunk_delay_s: float = 0.0
    model: str = "fixed-test-model"
    max_model_len: int | None = None  # announced in /v1/models when set, as vLLM does
    requests: list[dict[str, Any]] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)  # the paths of GET requests, in order
    disconnects: int = 0
    streams_open: int = 0
    pieces_sent: int = 0  # completion text events written (not keep-alives)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name}:{port}/v1"

    def completions(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                r for r in self.requests if r["path"].endswith("/completions") and "messages" not in r["body"]
            ]

    def start(self) -> FixedBackend:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, data: Any) -> None:
                body = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                with backend._lock:
                    backend.gets.append(self.path)
                if self.path.rstrip("/").endswith("/models"):
                    entry: dict[str, Any] = {"id": backend.model, "object": "model"}
                    if backend.max_model_len:
                        entry["max_model_len"] = backend.max_model_len
                    self._json(200, {"object": "list", "data": [entry]})
                elif self.path == "/health":
                    self._json(200, {})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "bad json"}})
                    return
                with backend._lock:
                    backend.requests.append(
                        {"path": self.path, "body": body, "raw": raw, "time": time.time()}
                    )
                if self.path.endswith("/chat/completions"):
                    text = backend.chat(body)
                    kind = "chat"
                elif self.path.endswith("/completions"):
                    text = backend.completion
                    kind = "text"
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if body.get("stream"):
                    self._stream(text, kind)
                else:
                    time.sleep(backend.first_token_delay_s)
                    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                    if kind == "chat":
                        choice["message"] = {"role": "assistant", "content": text}
                    else:
                        choice["text"] = text
                    self._json(
                        200,
                        {
                            "id": "cmpl-fixed",
                            "object": "chat.completion" if kind == "chat" else "text_completion",
                            "model": backend.model,
                            "choices": [choice],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                        },
                    )

            def _stream(self, text: str, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                with backend._lock:
                    backend.streams_open += 1
                try:
                    deadline = time.monotonic() + backend.first_token_delay_s
                    while time.monotonic() < deadline:
                        time.sleep(0.02)
                        # An empty SSE comment detects a client that went away while we stall.
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                    pieces = [text[i : i + 4] for i in range(0, len(text), 4)] or [""]
                    for piece in pieces:
                        if kind == "chat":
                            delta: dict[str, Any] = {
                                "index": 0,
                                "delta": {"content": piece},
                                "finish_reason": None,
                            }
                        else:
                            delta = {"index": 0, "text": piece, "finish_reason": None}
                        self._event({"id": "cmpl-fixed", "model": backend.model, "choices": [delta]})
                        with backend._lock:
                            backend.pieces_sent += 1
                        if backend.chunk_delay_s:
                            time.sleep(backend.chunk_delay_s)
                    final: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
                    ending: dict[str, Any] = {"delta": {}} if kind == "chat" else {"text": ""}
                    final.update(ending)
                    self._event(
                        {
                            "id": "cmpl-fixed",
                            "model": backend.model,
                            "choices": [final],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                        }
                    )
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    with backend._lock:
                        backend.disconnects += 1
                finally:
                    with backend._lock:
                        backend.streams_open -= 1
                    self.close_connection = True

            def _event(self, data: dict[str, Any]) -> None:
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


SAMPLE_FILES: dict[str, str] = {
    "calc/__init__.py": "",
    "calc/ops.py": '''"""Arithmetic helpers."""


def add(left, right):
    total = left + right
    return total


def scale(values, factor):
    """Multiply every value by factor."""
    return [v * factor for v in values]
''',
    "calc/report.py": '''"""Reports built on the helpers."""

from calc.ops import add, scale


def summary(values):
    doubled = scale(values, 2)
    result = 0
    for v in doubled:
        result = add(result, v)
    return result


def main():
    left = 1
    right = 2
'''
    + "    \n"  # the indented blank line where completion tests put the cursor (line 16)
    + """    print(summary([left, right]))
""",
    "README.md": "# calc\n\nA tiny arithmetic package used by the language-server tests.\n",
}


@pytest.fixture
def backend() -> Iterator[FixedBackend]:
    """A started FixedBackend, stopped after the test (the LSP and editor conftest.py files use it)."""
    server = FixedBackend().start()
    yield server
    server.stop()


def make_repo(root: Path) -> Path:
    """A small git-less Python project (the workspace folder for the tests)."""
    for rel, text in SAMPLE_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)  # marks the workspace root; discovery skips it
    return root


# One embedding-model cache (the exported ONNX model) for every server a test session starts:
# exporting it takes tens of seconds. A temporary folder, never the user's cache.
_SHARED_CACHE = Path(tempfile.mkdtemp(prefix="codectx-lsp-cache-"))


def server_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the server process: isolated XDG dirs, offline, no user CODECTX_* leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODECTX_")}
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp / "_xdg_server" / var.lower())
    env["XDG_CACHE_HOME"] = str(_SHARED_CACHE)
    env["HOME"] = str(tmp / "_home")
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["TOKENIZERS_PARALLELISM"] = "false"
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


# --- a protocol client driving the real `codectx lsp` process ---------------------------------

import asyncio  # noqa: E402
import contextlib  # noqa: E402
from collections.abc import AsyncIterator  # noqa: E402

from lsprotocol import types  # noqa: E402


def capabilities(client: str = "visual-studio-code", inline: bool = True) -> types.ClientCapabilities:
    """Real editors' published capabilities (bundled with pytest-lsp), plus inline completion."""
    from pytest_lsp import client_capabilities

    caps = client_capabilities(client)
    if inline and caps.text_document is not None:
        caps.text_document.inline_completion = types.InlineCompletionClientCapabilities()
    return caps


@contextlib.asynccontextmanager
async def lsp_session(
    tmp: Path,
    root: Path,
    init_options: Any = None,
    client: str = "visual-studio-code",
    configuration: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    caps: types.ClientCapabilities | None = None,
    wait_warm: bool = True,
    stderr: list[bytes] | None = None,
) -> AsyncIterator[Any]:
    """Start `python -m codectx lsp`, initialize it on `root`, yield the client, shut down cleanly.

    With `stderr`, the server's stderr lines are collected there instead of forwarded.
    """
    from pytest_lsp import make_test_lsp_client

    lsp: Any = make_test_lsp_client()
    lsp.registrations = []

    @lsp.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        lsp.registrations.extend(params.registrations)

    @lsp.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        lsp.applied_edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    lsp.applied_edits = []
    lsp.health_events = []

    @lsp.feature("codectx/healthChanged")
    def _health_changed(params: Any) -> None:
        lsp.health_events.append(plain(params))

    if configuration:
        for scope, value in configuration.items():
            lsp.set_configuration(value, scope_uri=scope)
    await lsp.start_io(*SERVER_COMMAND, env=server_env(tmp, env), cwd=str(root))
    if stderr is not None and lsp._server is not None and lsp._server.stderr is not None:
        forwarder = getattr(lsp, "_stderr_forwarder", None)
        if forwarder is not None:
            forwarder.cancel()
        lsp._stderr_forwarder = asyncio.create_task(_collect(lsp._server.stderr, stderr))
    try:
        result = await asyncio.wait_for(
            lsp.initialize_session(
                types.InitializeParams(
                    capabilities=caps or capabilities(client),
                    workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                    root_uri=root.as_uri(),
                    initialization_options=init_options,
                )
            ),
            timeout=60,
        )
        lsp.init_result = result
        if wait_warm:
            await wait_until_warm(lsp)
        yield lsp
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(lsp.shutdown_session(), timeout=20)
        with contextlib.suppress(Exception):
            await lsp.stop()


async def _collect(stream: asyncio.StreamReader, sink: list[bytes]) -> None:
    while line := await stream.readline():
        sink.append(line)


def plain(value: Any) -> Any:
    """A custom request's or notification's params/result (pygls objects) as plain JSON values."""
    as_dict = getattr(value, "_asdict", None)
    if callable(as_dict):
        return {k: plain(v) for k, v in as_dict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def wait_until_warm(lsp: Any, timeout: float = 600.0) -> None:
    """Wait until the server has imported its heavy modules (first requests are then on budget)."""

    async def status() -> Any:
        return await lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="codectx.status"))

    deadline = asyncio.get_running_loop().time() + timeout
    while not (await status())["warm"]:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("the server did not warm up in time")
        await asyncio.sleep(0.1)


async def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.05) -> Any:
    """Poll until predicate() is truthy (the value is returned) or fail after timeout seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(interval)


def open_doc(
    lsp: Any, path: Path, text: str | None = None, language: str = "python", version: int = 1
) -> str:
    uri = path.as_uri()
    lsp.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id=language,
                version=version,
                text=path.read_text("utf-8") if text is None else text,
            )
        )
    )
    return uri


def progress_events(lsp: Any) -> list[Any]:
    return [v for values in lsp.progress_reports.values() for v in values]


def index_finished(lsp: Any) -> bool:
    """True once some indexing progress has ended."""
    return any(isinstance(v, types.WorkDoneProgressEnd) for v in progress_events(lsp))


def apply_text_edits(text: str, edits: list[Any]) -> str:
    """Apply LSP TextEdits (UTF-16 positions; ASCII test files) to text, last first."""
    lines = text.split("\n")

    def index(pos: Any) -> int:
        return sum(len(x) + 1 for x in lines[: pos.line]) + pos.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = index(edit.range.start), index(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


def edits_for(edit: Any, uri: str) -> list[Any]:
    """The TextEdits a WorkspaceEdit makes to one document (changes or documentChanges)."""
    if edit.changes:
        return list(edit.changes.get(uri, []))
    out: list[Any] = []
    for change in edit.document_changes or []:
        if getattr(change, "text_document", None) is not None and change.text_document.uri == uri:
            out.extend(change.edits)
    return out
