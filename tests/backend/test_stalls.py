"""Backend faults as the shell sees them: a clear message from the budget that fired.

A server that accepts and never answers is told apart by the first-byte budget
(`backend.first_byte_timeout_s`), not the total one; a slow but live stream cut by the total
timeout says "slow" (not "stalled") and keeps what arrived; a 200 that is not an event stream
says so. The server is tests/support/faultserver.py; assertions are on the error's kind, its message
and the setting it names, never on how long anything took.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendProtocolError, BackendTimeout

from codectx.cli import main
from codectx.settings import load_settings
from tests.support import faultserver as fs

TOKENS = [f"tok{i} " for i in range(40)]


@pytest.fixture
def server() -> Iterator[fs.FaultServer]:
    srv = fs.FaultServer().start()
    srv.routes = {"/tokenize": fs.tokenize(), "/v1/models": fs.models("m")}
    yield srv
    srv.stop()


def client_for(tmp_path: Path, url: str, **backend: Any) -> BackendClient:
    overrides = {"backend.url": url, "backend.model": "m", "backend.retries": 0}
    overrides.update({f"backend.{k}": v for k, v in backend.items()})
    settings = load_settings(None, overrides, environ={}, user_config=tmp_path / "none.toml")
    return BackendClient(settings, gate=fs.RecordingGate())


def complete_cli(
    tmp_path: Path,
    url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    **backend: Any,
) -> tuple[int, str, str]:
    doc = tmp_path / "ws" / "doc.py"
    doc.parent.mkdir(exist_ok=True)
    doc.write_text("def add(a, b):\n    \n")
    for key, value in backend.items():
        monkeypatch.setenv(f"CODECTX_BACKEND_{key.upper()}", str(value))
    monkeypatch.setenv("CODECTX_BACKEND_RETRIES", "0")
    argv = ["complete", str(doc), "--line", "2", "--character", "5", "--backend-url", url, "--no-context"]
    argv += ["--root", str(doc.parent)]  # the document's folder is the workspace
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


async def test_models_from_a_server_that_never_answers_hits_the_first_byte_budget(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.routes = {}
    server.default = fs.stall_before_headers()
    client = client_for(tmp_path, server.url, first_byte_timeout_s=0.3, total_timeout_s=60)
    with pytest.raises(BackendTimeout) as info:
        await client.models()
    assert info.value.phase == "first_byte"
    assert "accepted the connection but sent nothing" in str(info.value)
    assert "0.3 s (backend.first_byte_timeout_s)" in str(info.value)
    await client.aclose()
    assert server.wait_idle() == 0


async def test_stream_headers_that_never_come_hit_the_first_byte_budget(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.default = fs.stall_before_headers()
    client = client_for(tmp_path, server.url, first_byte_timeout_s=0.3, first_token_timeout_s=30)
    with pytest.raises(BackendTimeout) as info:
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    assert info.value.phase == "first_byte"
    await client.aclose()


def test_shell_complete_against_a_server_that_never_answers(
    tmp_path: Path,
    server: fs.FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.routes = {}
    server.default = fs.stall_before_headers()
    code, out, err = complete_cli(
        tmp_path, server.url, capsys, monkeypatch, first_byte_timeout_s=0.4, total_timeout_s=60
    )
    assert code == 3 and out == ""
    assert "accepted the connection but sent nothing within 0.4 s (backend.first_byte_timeout_s)" in err
    assert "total_timeout_s" not in err and "Traceback" not in err


async def test_a_slow_live_stream_says_slow_and_keeps_what_arrived(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.routes["/v1/completions"] = fs.sse(TOKENS, delay_s=0.1)
    client = client_for(tmp_path, server.url, first_token_timeout_s=30, total_timeout_s=1.5)
    got: list[str] = []
    with pytest.raises(BackendTimeout) as info:
        async with client.stream_complete("x") as stream:
            async for delta in stream:
                got.append(delta)
    err = info.value
    assert err.phase == "total" and err.slow
    assert "is slow" in str(err) and "stalled" not in str(err)
    assert "backend.total_timeout_s" in str(err) and "1.5 s" in str(err)
    assert got and err.partial == "".join(got) == stream.text
    assert "".join(TOKENS).startswith(err.partial) and len(got) < len(TOKENS)
    await client.aclose()


def test_shell_complete_shows_and_keeps_a_slow_stream(
    tmp_path: Path,
    server: fs.FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.routes["/v1/completions"] = fs.sse(TOKENS, delay_s=0.1)
    code, out, err = complete_cli(
        tmp_path, server.url, capsys, monkeypatch, first_token_timeout_s=30, total_timeout_s=2.5
    )
    assert code == 3
    kept = out.rstrip("\n")
    assert kept and "".join(TOKENS).startswith(kept)  # what arrived, on stdout
    assert "as it arrives:" in err  # shown live on stderr while it streamed
    assert "is slow" in err and "stalled" not in err and "(2.5 s, backend.total_timeout_s)" in err


def test_shell_complete_json_keeps_a_slow_stream(
    tmp_path: Path,
    server: fs.FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.routes["/v1/completions"] = fs.sse(TOKENS, delay_s=0.1)
    monkeypatch.setattr("sys.argv", ["codectx"])
    doc = tmp_path / "doc.py"
    doc.write_text("x = 1\n")
    monkeypatch.setenv("CODECTX_BACKEND_TOTAL_TIMEOUT_S", "1.5")
    argv = ["complete", str(doc), "--line", "1", "--backend-url", server.url, "--no-context", "--json"]
    code = main([*argv, "--root", str(tmp_path)])
    out, _ = capsys.readouterr()
    data = json.loads(out)
    assert code == 3 and data["partial"] is True and data["phase"] == "total"
    assert data["text"] and "".join(TOKENS).startswith(data["text"])


async def test_a_200_that_is_not_an_event_stream_says_so(tmp_path: Path, server: fs.FaultServer) -> None:
    server.routes["/v1/completions"] = fs.raw_reply(
        b"<html><body>proxy login</body></html>", content_type="text/html"
    )
    client = client_for(tmp_path, server.url)
    with pytest.raises(BackendProtocolError) as info:
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    assert "answered 200 but not with an event stream (Content-Type: text/html)" in str(info.value)
    assert "proxy login" in str(info.value)
    await client.aclose()
    assert server.wait_idle() == 0


async def test_a_garbage_body_labelled_as_a_stream_says_it_is_not_one(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.routes["/v1/completions"] = fs.raw_reply(
        b"garbage\nmore garbage\n", content_type="text/event-stream"
    )
    client = client_for(tmp_path, server.url)
    with pytest.raises(BackendProtocolError, match="not server-sent events: 'garbage'"):
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    await client.aclose()


async def test_a_server_that_ignores_stream_true_still_completes(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.routes["/v1/completions"] = fs.completion("whole answer")
    client = client_for(tmp_path, server.url)
    async with client.stream_complete("x") as stream:
        deltas = [d async for d in stream]
    assert deltas == ["whole answer"] and stream.finish_reason == "stop"
    await client.aclose()
