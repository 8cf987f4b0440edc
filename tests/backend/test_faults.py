"""Fault injection: a real loopback server of our own misbehaves; the client must fail cleanly.

Each case ends in the right exception from codectx.backend.errors (for a timeout: which
one fired), after the right number of attempts and waits, and leaves no connection open on
the server once the client closes. Nothing here measures time.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from codectx.backend.breaker import CircuitBreaker
from codectx.backend.errors import (
    BackendCircuitOpen,
    BackendProtocolError,
    BackendRejected,
    BackendTimeout,
    BackendUnavailable,
)

from tests.support import faultserver as fs
from tests.support.backendclient import RetryWaits, client_for


@pytest.fixture
def server() -> Iterator[fs.FaultServer]:
    srv = fs.FaultServer().start()
    yield srv
    srv.stop()


async def test_connection_refused_is_unavailable_and_retried(tmp_path: Path) -> None:
    client, gate = client_for(tmp_path, f"http://127.0.0.1:{fs.free_port()}/v1", retries=2)
    with pytest.raises(BackendUnavailable, match="cannot connect"):  # refused, not timed out
        await client.complete("x")
    # three attempts (1 + 2 retries), none of which sent a byte
    assert [r[1:] for r in gate.records] == [(False, "error: ConnectError")] * 3
    await client.aclose()


async def test_500_is_unavailable_not_retried(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.status(500, "engine died"), fs.completion("never")]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendUnavailable, match="engine died") as info:
        await client.complete("x")
    assert info.value.status == 500
    assert len(server.requests) == 1
    await client.aclose()
    assert server.wait_idle() == 0


async def test_429_with_retry_after_is_retried_then_succeeds(
    tmp_path: Path, server: fs.FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script = [fs.status(429, "slow down", {"Retry-After": "7"}), fs.completion("fine")]
    client, gate = client_for(tmp_path, server.url)
    waits = RetryWaits(monkeypatch)
    result = await client.complete("x")
    assert result.text == "fine"
    assert waits.delays == [7.0]  # Retry-After was honoured, not the backoff (0.1-0.12 s)
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    assert [r[2] for r in gate.records] == ["429", "200"]
    await client.aclose()
    assert server.wait_idle() == 0


async def test_429_retry_after_beyond_total_timeout_fails_at_once(
    tmp_path: Path, server: fs.FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script = [fs.status(429, "busy", {"Retry-After": "120"}), fs.completion("late")]
    client, _ = client_for(tmp_path, server.url, total_timeout_s=3)
    waits = RetryWaits(monkeypatch)
    with pytest.raises(BackendRejected) as info:
        await client.complete("x")
    assert info.value.status == 429 and info.value.server_message == "busy"
    assert waits.delays == []  # the wait would overrun the 3 s total timeout: not waited out
    assert len(server.requests) == 1
    await client.aclose()


async def test_503_retries_are_bounded(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.status(503, "overloaded", {"Retry-After": "0"})
    client, _ = client_for(tmp_path, server.url, retries=3)
    with pytest.raises(BackendUnavailable, match="overloaded"):
        await client.complete("x")
    assert len(server.requests) == 4
    await client.aclose()


async def test_4xx_is_rejected_with_server_message(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.status(400, "This model's maximum context length is 1024 tokens")]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendRejected, match="maximum context length") as info:
        await client.complete("x")
    assert info.value.status == 400
    assert len(server.requests) == 1
    await client.aclose()


async def test_stall_before_headers_hits_first_token_timeout(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.stall_before_headers()
    client, _ = client_for(tmp_path, server.url, first_token_timeout_s=0.5, total_timeout_s=20)
    with pytest.raises(BackendTimeout) as info:
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    assert info.value.phase == "first_token"  # not "total": it fired before the 20 s total timeout
    assert not info.value.slow
    assert len(server.requests) == 1  # a stall is not retried
    await client.aclose()
    assert server.wait_idle() == 0


async def test_stream_stalls_after_headers_first_token_timeout(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.script = [fs.sse([], end="stall")]
    client, _ = client_for(tmp_path, server.url, first_token_timeout_s=0.5, total_timeout_s=20)
    with pytest.raises(BackendTimeout) as info:
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    assert info.value.phase == "first_token"  # not "total": it fired before the 20 s total timeout
    assert not info.value.slow
    assert len(server.requests) == 1  # a stall is not retried
    await client.aclose()
    assert server.wait_idle() == 0


async def test_stream_stalls_mid_way_total_timeout_and_no_retry(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.script = [fs.sse(["a", "b"], end="stall"), fs.sse(["again"])]
    client, _ = client_for(tmp_path, server.url, first_token_timeout_s=0.5, total_timeout_s=1.5)
    got: list[str] = []
    with pytest.raises(BackendTimeout) as info:
        async with client.stream_complete("x") as stream:
            async for delta in stream:
                got.append(delta)
    assert got == ["a", "b"]
    assert info.value.phase == "total"  # tokens had come: the first-token timeout no longer applies
    assert info.value.slow  # told apart from a stall: "slow", and what arrived is kept
    assert len(server.requests) == 1  # never retried after a token was delivered
    await client.aclose()
    assert server.wait_idle() == 0


async def test_stream_cut_mid_way(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.sse(["a", "b"], end="cut"), fs.sse(["again"])]
    client, _ = client_for(tmp_path, server.url)
    got: list[str] = []
    with pytest.raises(BackendUnavailable, match="closed the connection"):
        async with client.stream_complete("x") as stream:
            async for delta in stream:
                got.append(delta)
    assert got == ["a", "b"]
    assert len(server.requests) == 1
    await client.aclose()
    assert server.wait_idle() == 0


async def test_malformed_json_answer(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.raw_reply(b"{not json"), fs.json_reply({"choices": "nope"})]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendProtocolError, match="not JSON") as caught:
        await client.complete("x")
    assert f"from {server.url}" in str(caught.value)  # which server (it named none)
    with pytest.raises(BackendProtocolError, match="unexpected completion answer"):
        await client.complete("x")
    await client.aclose()
    assert server.wait_idle() == 0


async def test_malformed_sse_event(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.sse(["a"], raw_events=[b"data: {broken\n\n"])]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendProtocolError, match="malformed event"):
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    await client.aclose()
    assert server.wait_idle() == 0


async def test_stream_without_done_is_protocol_error(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.raw_reply(b'{"choices": [{"text": "x"}]}', content_type="text/event-stream")]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendProtocolError, match="without \\[DONE\\]"):
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    await client.aclose()


async def test_error_event_inside_stream(tmp_path: Path, server: fs.FaultServer) -> None:
    error = b'data: {"error": {"message": "prompt too long", "code": 400}}\n\n'
    server.script = [fs.sse([], raw_events=[error])]
    client, _ = client_for(tmp_path, server.url)
    with pytest.raises(BackendRejected, match="prompt too long"):
        async with client.stream_complete("x") as stream:
            async for _ in stream:
                pass
    await client.aclose()


async def test_circuit_breaker_fails_fast_then_probes(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.stall_before_headers()]
    server.default = fs.completion("back")
    client, _ = client_for(tmp_path, server.url, first_token_timeout_s=0.4, total_timeout_s=0.4)
    now = [1000.0]
    client.transport.breaker = CircuitBreaker(10.0, clock=lambda: now[0])  # a clock the test moves
    with pytest.raises(BackendTimeout):
        await client.complete("x")
    for _ in range(20):
        with pytest.raises(BackendCircuitOpen, match=r"not retrying for 10\.0s"):
            await client.complete("x")
    assert len(server.requests) == 1  # twenty keystrokes, none reached the server
    now[0] += 10.0
    assert (await client.complete("x")).text == "back"  # the probe closes the circuit
    assert (await client.complete("x")).text == "back"
    assert len(server.requests) == 3
    await client.aclose()


async def test_circuit_breaker_on_dead_server(tmp_path: Path) -> None:
    client, gate = client_for(
        tmp_path, f"http://127.0.0.1:{fs.free_port()}/v1", retries=0, breaker_interval_s=30
    )
    with pytest.raises(BackendUnavailable):
        await client.complete("x")
    with pytest.raises(BackendCircuitOpen, match="not retrying"):
        await client.complete("y")
    assert len(gate.records) == 1  # the second request never reached the network
    await client.aclose()


async def test_cancelling_the_consumer_closes_the_stream_promptly(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    server.script = [fs.sse(["t"] * 1000, delay_s=0.05)]
    client, _ = client_for(tmp_path, server.url)
    got: list[str] = []

    async def consume() -> None:
        async with client.stream_complete("x") as stream:
            async for delta in stream:
                got.append(delta)

    task = asyncio.create_task(consume())
    while len(got) < 3:
        await asyncio.sleep(0.01)
    assert server.open_connections == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the client closed the socket; the server sees EOF without the client pool being closed
    assert await asyncio.to_thread(server.wait_idle, 10.0) == 0
    assert client.transport.pool_connections() == 0
    await client.aclose()


async def test_keepalive_connection_is_reused_and_released(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.completion("ok")
    client, _ = client_for(tmp_path, server.url)
    for _ in range(3):
        assert (await client.complete("x")).text == "ok"
    assert server.open_connections == 1
    await client.aclose()
    assert server.wait_idle() == 0


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (needed to make a test certificate)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_tls_is_verified_and_a_custom_ca_is_honoured(
    tmp_path: Path, tls_files: tuple[Path, Path]
) -> None:
    cert, key = tls_files
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    srv = fs.FaultServer(tls=context).start()
    srv.default = fs.completion("secure")
    try:
        client, gate = client_for(tmp_path, srv.url, retries=2)
        with pytest.raises(BackendUnavailable, match=r"not trusted.*backend\.ca_bundle"):
            await client.complete("x")
        assert len(gate.records) == 1  # a certificate failure is not retried
        await client.aclose()
        client, _ = client_for(tmp_path, srv.url, ca_bundle=str(cert))
        assert (await client.complete("x")).text == "secure"
        await client.aclose()
        assert srv.wait_idle() == 0
    finally:
        srv.stop()


async def test_cancel_before_headers_is_still_audited(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.stall_before_headers()
    client, gate = client_for(tmp_path, server.url)
    task = asyncio.create_task(client.complete("x"))
    while not server.requests:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await client.aclose()  # waits for queued audit writes
    assert gate.records == [(f"{server.url}/completions", True, "cancelled")]
    assert server.wait_idle() == 0
    # a cancelled request is not a server failure: the breaker stays closed
    assert client.transport.breaker.state == "closed"


async def test_chat_stream_deltas(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.sse(["```py\n", "x = 1\n", "```"], chat=True)]
    client, _ = client_for(tmp_path, server.url)
    async with client.stream_chat([{"role": "user", "content": "hi"}], max_tokens=20) as stream:
        got = [delta async for delta in stream]
    assert got == ["```py\n", "x = 1\n", "```"] and stream.finish_reason == "stop"
    assert stream.usage is not None and stream.usage.completion_tokens == 3
    assert server.requests[-1].path == "/v1/chat/completions"
    assert server.requests[-1].json()["messages"] == [{"role": "user", "content": "hi"}]
    await client.aclose()
