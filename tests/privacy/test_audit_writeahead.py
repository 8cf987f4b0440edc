"""Write-ahead audit: a process killed with a request in flight still leaves its entry.

A loopback server of our own answers /v1/models and /tokenize and holds every
completion open (no headers). When it has received a completion's body, the
test kills `codectx complete` with SIGKILL (20 runs) or `codectx lsp` with
SIGTERM; the audit log must hold an entry for every request the server
received (same sha256 of the exact bytes, or the same method and URL for a
GET), and the chain must still verify.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.audit import AuditLog
from tests.support import faultserver as fs

DOC = "import os\n\n\ndef add(a, b):\n    return a + b\n"


@pytest.fixture
def holding_server() -> Any:
    server = fs.FaultServer(
        routes={"/v1/models": fs.models("m"), "/tokenize": fs.tokenize()},
        default=fs.stall_before_headers(),
    ).start()
    yield server
    server.stop()


def _env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODECTX_")}
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(tmp_path / "xdg" / var.lower())
    env["HOME"] = str(tmp_path / "home")
    # The key and the URL from the same source: the key goes with the requests (and GETs are logged).
    env["CODECTX_BACKEND_URL"] = url
    env["CODECTX_API_KEY"] = "sk-writeahead-test"
    return env


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").mkdir()
    (ws / "calc.py").write_text(DOC)
    return ws


def _wait_for_completion(server: fs.FaultServer, seen: int, proc: subprocess.Popen[bytes]) -> None:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if sum(r.path.endswith("/completions") for r in list(server.requests)) > seen:
            return
        if proc.poll() is not None:
            raise AssertionError(
                f"the client exited first: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        time.sleep(0.005)
    raise AssertionError("the server never received the completion")


def _assert_logged(server: fs.FaultServer, log: AuditLog) -> int:
    requests = log.requests()
    by_digest = {e["sha256"] for e in requests if e.get("method", "POST") == "POST"}
    gets = {e["endpoint"] for e in requests if e.get("method") == "GET"}
    for received in list(server.requests):
        if received.method == "POST":
            assert hashlib.sha256(received.body).hexdigest() in by_digest, received.path
        else:
            assert f"http://127.0.0.1:{server.port}{received.path}" in gets, received.path
    verdict = log.verify()
    assert verdict.ok, verdict.message()
    return len(server.requests)


@pytest.mark.slow
def test_kill_9_of_complete_with_a_request_in_flight_leaves_its_entry_20_of_20(
    tmp_path: Path, holding_server: fs.FaultServer
) -> None:
    ws = _workspace(tmp_path)
    env = _env(tmp_path, holding_server.url)
    log = AuditLog(Path(env["XDG_STATE_HOME"]) / "codectx" / "audit.jsonl")
    command = [sys.executable, "-m", "codectx", "complete", "calc.py", "--line", "5", "--character", "12"]
    for run in range(20):
        proc = subprocess.Popen([*command, "--no-context"], cwd=ws, env=env, stderr=subprocess.PIPE)
        try:
            _wait_for_completion(holding_server, run, proc)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(30)
        assert proc.returncode == -signal.SIGKILL
        _assert_logged(holding_server, log)
    completions = [r for r in log.requests() if r["endpoint"].endswith("/v1/completions")]
    assert len(completions) == 20
    assert all(not r["outcomes"] for r in completions)  # killed before any outcome: the entry came first
    assert all(r["root"] == str(ws.resolve()) for r in completions)
    assert all(s["real"] == str(ws.resolve() / "calc.py") for r in completions for s in r["sources"])


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.mark.slow
def test_sigterm_of_lsp_with_a_request_in_flight_leaves_its_entry(
    tmp_path: Path, holding_server: fs.FaultServer
) -> None:
    ws = _workspace(tmp_path)
    env = _env(tmp_path, holding_server.url)
    log = AuditLog(Path(env["XDG_STATE_HOME"]) / "codectx" / "audit.jsonl")
    uri = (ws / "calc.py").as_uri()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codectx", "lsp"],
        cwd=ws,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    # A first request imports the model libraries: a long budget, so it is not given up before it is sent.
    options = {"codectx": {"lsp": {"index_on_open": False, "debounce_ms": 0, "request_budget_ms": 120000}}}
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": None,
                "rootUri": ws.as_uri(),
                "capabilities": {},
                "initializationOptions": options,
            },
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": DOC}},
        },
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "textDocument/completion",
            "params": {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 11}},
        },
    ):
        proc.stdin.write(_frame(message))
        proc.stdin.flush()
    try:
        _wait_for_completion(holding_server, 0, proc)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert _assert_logged(holding_server, log) >= 1
    completions = [r for r in log.requests() if r["endpoint"].endswith("/v1/completions")]
    assert completions and completions[-1]["sources"][0]["path"] == "calc.py"


def test_nothing_is_sent_when_the_entry_cannot_be_written(
    tmp_path: Path, holding_server: fs.FaultServer
) -> None:
    """A log whose last anchored line was cut (a torn tail inside the head record) takes no entry: no send."""
    ws = _workspace(tmp_path)
    env = _env(tmp_path, holding_server.url)
    log = AuditLog(Path(env["XDG_STATE_HOME"]) / "codectx" / "audit.jsonl")
    log.append({"endpoint": "earlier", "bytes": 0, "sources": []})
    log.path.write_bytes(log.path.read_bytes()[:-20])  # the last line torn
    command = [sys.executable, "-m", "codectx", "complete", "calc.py", "--line", "5", "--character", "12"]
    done = subprocess.run(
        [*command, "--no-context", "--model", "m"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "audit" in done.stderr and "codectx audit verify" in done.stderr and "Traceback" not in done.stderr
    assert holding_server.requests == []  # not a byte left: not even the GET that carries the key


async def test_bodyless_requests_are_logged_before_they_leave(tmp_path: Path) -> None:
    from codectx.backend.client import BackendClient

    from codectx.privacy.egress import EgressGate
    from codectx.settings import load_settings

    server = fs.FaultServer(
        routes={"/v1/models": fs.models("m"), "/metrics": fs.raw_reply(b"x 1\n", 200, "text/plain")}
    )
    server.start()
    try:
        for key in ("sk-metrics", None):
            log = AuditLog(tmp_path / f"{key}" / "audit.jsonl")
            overrides = {"backend.url": server.url, "backend.api_key": key}
            settings = load_settings(None, overrides, environ={})
            async with BackendClient(settings, gate=EgressGate(settings, log)) as client:
                await client.models()
                await client.metrics_text()
            entries = log.requests()
            # With a key or without one (red team 12: every byte that leaves is logged, a GET's too).
            assert [(e["method"], e["endpoint"].rsplit("/", 1)[-1], e["bytes"]) for e in entries] == [
                ("GET", "models", 0),
                ("GET", "metrics", 0),
            ]
            assert all(e["status"] == "200" and e["sent"] for e in entries)
        assert all(r.headers.get("authorization") == "Bearer sk-metrics" for r in server.requests[:2])
        assert not any("authorization" in r.headers for r in server.requests[2:])
    finally:
        server.stop()
