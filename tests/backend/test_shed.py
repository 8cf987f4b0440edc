"""Load shedding: a busy server's 429/503 is retried before the first token, never after it.

vLLM past --max-num-queued-reqs answers a streaming request with HTTP 200 and an
error event (code 503, no Retry-After), as seen from vLLM 0.32 here; a gateway in
front of it may answer an HTTP 429/503 with Retry-After. Both are load shedding,
both are safe to retry while no text has arrived. The server is our own loopback
fault injector (tests/support/faultserver.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from codectx.backend.errors import BackendRejected, BackendUnavailable

from tests.support import faultserver as fs
from tests.support.backendclient import client_for

SHED = (
    b'data: {"error": {"message": "The engine is currently busy and cannot accept new requests.", '
    b'"type": "Service Unavailable", "param": null, "code": 503}}\n\ndata: [DONE]\n\n'
)


@pytest.fixture
def server() -> Iterator[fs.FaultServer]:
    srv = fs.FaultServer().start()
    yield srv
    srv.stop()


def text_then_shed(text: str) -> fs.Behaviour:
    async def run(conn: fs.Conn) -> None:
        await conn.start_chunked()
        event = {"id": "c", "model": "m", "choices": [{"index": 0, "text": text, "finish_reason": None}]}
        await conn.chunk(f"data: {json.dumps(event)}\n\n".encode())
        await conn.chunk(SHED)
        await conn.end_chunked()

    return run


async def stream_text(client: object) -> str:
    async with client.stream_complete("x") as stream:  # type: ignore[attr-defined]
        async for _ in stream:
            pass
    return str(stream.text)


async def test_in_stream_shed_before_any_text_is_retried(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [fs.sse([], raw_events=[SHED]), fs.sse([], raw_events=[SHED]), fs.sse(["served"])]
    client, gate = client_for(tmp_path, server.url, retries=2)
    assert await stream_text(client) == "served"
    assert len(server.requests) == 3
    assert len(gate.records) == 3  # every attempt is in the audit log
    await client.aclose()
    assert server.wait_idle() == 0


async def test_in_stream_shed_retries_are_bounded(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.sse([], raw_events=[SHED])
    client, _ = client_for(tmp_path, server.url, retries=1)
    with pytest.raises(BackendUnavailable, match="busy") as info:
        await stream_text(client)
    assert info.value.status == 503
    assert len(server.requests) == 2  # 1 + backend.retries
    await client.aclose()


async def test_shed_after_the_first_token_is_never_retried(tmp_path: Path, server: fs.FaultServer) -> None:
    server.script = [text_then_shed("half"), fs.sse(["again"])]
    client, _ = client_for(tmp_path, server.url, retries=2)
    with pytest.raises(BackendUnavailable):
        await stream_text(client)
    assert len(server.requests) == 1
    await client.aclose()


async def test_other_in_stream_errors_are_final(tmp_path: Path, server: fs.FaultServer) -> None:
    error = b'data: {"error": {"message": "prompt too long", "code": 400}}\n\n'
    server.script = [fs.sse([], raw_events=[error]), fs.sse(["never"])]
    client, _ = client_for(tmp_path, server.url, retries=2)
    with pytest.raises(BackendRejected):
        await stream_text(client)
    assert len(server.requests) == 1
    await client.aclose()


async def test_http_429_retry_after_then_served(tmp_path: Path, server: fs.FaultServer) -> None:
    """A gateway's 429 with Retry-After: waited out (the header, not our backoff), then served."""
    server.script = [fs.status(429, "slow down", {"Retry-After": "0"}), fs.sse(["served"])]
    client, gate = client_for(tmp_path, server.url, retries=2)
    assert await stream_text(client) == "served"
    assert [r[2] for r in gate.records] == ["429", "200"]
    await client.aclose()
