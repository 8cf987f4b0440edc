"""Keys and logs: no key, header or document text in any log; the key goes only where it was meant to.

A real `codectx lsp --log-file F --log-level DEBUG` session (API key in
initializationOptions, a document holding a secret, a completion) leaves a
0600 log with neither the key nor the document's text in it. The API key is
bound to the backend.url origin of the settings layer that set it; a redirect
is an error, never followed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendProtocolError

from codectx.logsafe import PrivateFileHandler, SafeLogFilter, register_secret
from codectx.settings import load_settings, user_config_path
from tests.support import faultserver as fs

API_KEY = "sk-live-" + "Zq81NcVt3Lm9Xp2Rw7Ks"
SECRET = "ghp_" + "R8x2Lq9ZmW4tY7pK3vB6nC1dF5gH0jS8aE2u"
MARKER_TEXT = "distinctive_function_name_for_the_log_test"
DOC = f"GITHUB = '{SECRET}'\n\n\ndef {MARKER_TEXT}(a, b):\n    return a + b\n"


@pytest.fixture
def server() -> Any:
    srv = fs.FaultServer(
        routes={"/v1/models": fs.models("m"), "/tokenize": fs.tokenize()}, default=fs.sse(["x = 1"])
    ).start()
    yield srv
    srv.stop()


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read_message(stream: Any) -> dict[str, Any]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return dict(json.loads(stream.read(length)))


def _until(proc: subprocess.Popen[bytes], want_id: int) -> dict[str, Any]:
    while True:
        message = _read_message(proc.stdout)
        if message.get("id") == want_id and "method" not in message:
            return message


def test_debug_log_of_a_real_lsp_session_holds_no_key_no_secret_no_text(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "app.py").write_text(DOC)
    log_file = tmp_path / "lsp.log"
    env = dict(os.environ)
    env["CODECTX_LSP_INDEX_ON_OPEN"] = "false"
    proc = subprocess.Popen(
        [sys.executable, "-m", "codectx", "lsp", "--log-file", str(log_file), "--log-level", "DEBUG"],
        cwd=ws,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    uri = (ws / "app.py").as_uri()
    options = {
        "codectx": {
            "backend": {"url": server.url, "api_key": API_KEY},
            "lsp": {"debounce_ms": 0, "request_budget_ms": 120000},
        }
    }

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(_frame({"jsonrpc": "2.0", **message}))
        proc.stdin.flush()

    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": ws.as_uri(),
                    "capabilities": {},
                    "initializationOptions": options,
                },
            }
        )
        _until(proc, 1)
        send({"method": "initialized", "params": {}})
        send(
            {
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": DOC}},
            }
        )
        change = {
            "range": {"start": {"line": 4, "character": 15}, "end": {"line": 4, "character": 15}},
            "text": " ",
        }
        send(
            {
                "method": "textDocument/didChange",
                "params": {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]},
            }
        )
        send(
            {
                "id": 2,
                "method": "textDocument/completion",
                "params": {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 11}},
            }
        )
        answer = _until(proc, 2)
        assert "result" in answer
        send({"id": 3, "method": "shutdown"})
        _until(proc, 3)
        send({"method": "exit"})
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    completions = [r for r in server.requests if r.path.endswith("/completions")]
    assert completions and completions[0].headers["authorization"] == f"Bearer {API_KEY}"  # it was sent ...
    text = log_file.read_text()
    assert "sha256" in text and "initialize" in text  # ... and the log is still useful
    for needle in (API_KEY, SECRET, MARKER_TEXT, "return a + b", "Bearer"):
        assert needle not in text, needle
    assert log_file.stat().st_mode & 0o777 == 0o600


def test_filter_scrubs_every_level_and_private_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "existing.log"
    path.write_text("")
    os.chmod(path, 0o644)
    handler = PrivateFileHandler(str(path), encoding="utf-8")
    handler.addFilter(SafeLogFilter())
    logger = logging.getLogger("third.party.lib")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    mine = logging.getLogger("codectx.test")
    mine.addHandler(handler)
    register_secret("sk-registered-abcdef")
    try:
        logger.debug("message %s", json.dumps({"text": DOC}))
        logger.error("headers %s", {"Authorization": "Bearer abc.def.ghi"})
        mine.warning("url http://user:pa55word@host/v1 key sk-registered-abcdef api_key=xyz123")
        # Red team 2: a token a client sent as a request parameter, quoted back by codectx's error.
        mine.warning("no conversation %r", "ghp_" + "R3dT3amT0kenInAParam0000000000000000")
        try:
            raise ValueError(f"failed with Bearer {API_KEY}")
        except ValueError:
            mine.exception("boom")
        # Red team 4: a malformed param's value in a validation error's traceback.
        try:
            int("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8t3Vx9Lk")
        except ValueError:
            mine.warning("could not structure a message", exc_info=True)
    finally:
        logger.removeHandler(handler)
        mine.removeHandler(handler)
        handler.close()
    text = path.read_text()
    for needle in (SECRET, MARKER_TEXT, "abc.def.ghi", "pa55word", "sk-registered-abcdef", "xyz123", API_KEY):
        assert needle not in text, needle
    assert "R3dT3amT0ken" not in text and "no conversation '[REDACTED]'" in text
    assert "wJalrXUtnFEMI" not in text and "aws_secret_access_key=[REDACTED]" in text
    assert "sha256" in text and "boom" in text and "ValueError" in text
    assert path.stat().st_mode & 0o777 == 0o600


def _user_config(text: str) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)


def test_api_key_is_bound_to_the_origin_it_was_configured_for(tmp_path: Path) -> None:
    _user_config('[backend]\nurl = "https://models.corp.example/v1"\napi_key = "sk-user"\n')
    s = load_settings(tmp_path, environ={})
    assert s.api_key_for(s.backend.url) == "sk-user" and not s.warnings
    # Same origin, other path (flag): still the user's server.
    s = load_settings(tmp_path, {"backend.url": "https://models.corp.example:443/other/v1"}, environ={})
    assert s.api_key_for(s.backend.url) == "sk-user"
    # Another origin from the environment, without a key of its own: no key, and the user is told.
    s = load_settings(tmp_path, environ={"CODECTX_BACKEND_URL": "http://127.0.0.1:8000/v1"})
    assert s.api_key_for(s.backend.url) is None
    assert any("not sent there" in w and "127.0.0.1:8000" in w for w in s.warnings)
    # A key and a URL from the same source go together.
    s = load_settings(
        tmp_path, environ={"CODECTX_BACKEND_URL": "http://127.0.0.1:8000/v1", "CODECTX_API_KEY": "sk-env"}
    )
    assert s.api_key_for(s.backend.url) == "sk-env" and not s.warnings
    # CODECTX_API_KEY alone is for the URL in effect below it (the user's config).
    s = load_settings(tmp_path, environ={"CODECTX_API_KEY": "sk-env"})
    assert s.api_key_for("https://models.corp.example/v1") == "sk-env"
    s = load_settings(
        tmp_path, {"backend.url": "http://evil.example/v1"}, environ={"CODECTX_API_KEY": "sk-env"}
    )
    assert s.api_key_for(s.backend.url) is None


async def test_a_withheld_key_is_not_sent_and_a_redirect_is_an_error(tmp_path: Path) -> None:
    target = fs.FaultServer(default=fs.completion("should not be reached")).start()
    redirect = fs.FaultServer(
        routes={"/v1/models": fs.models("m")},
        default=fs.status(307, "moved", headers={"Location": target.url + "/completions"}),
    ).start()
    try:
        _user_config('[backend]\nurl = "https://models.corp.example/v1"\napi_key = "sk-user"\n')
        settings = load_settings(tmp_path, {"backend.url": redirect.url, "backend.retries": 0}, environ={})
        async with BackendClient(settings) as client:
            with pytest.raises(BackendProtocolError, match=r"307.*does not follow redirects"):
                await client.complete("def f():", max_tokens=4)
        assert all("authorization" not in r.headers for r in redirect.requests)
        assert target.requests == []
        requests = client.gate.audit.requests()  # type: ignore[attr-defined]
        assert requests[-1]["status"] == "307"
    finally:
        redirect.stop()
        target.stop()
