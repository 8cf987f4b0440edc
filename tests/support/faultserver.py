"""A small loopback HTTP/1.1 server of our own for fault injection.

It runs in a background thread with its own event loop, so a stalled answer
never blocks the client under test. Each request takes the next behaviour
from `script` (or `default`); behaviours write raw bytes, so they can send
anything a broken server might: wrong status, malformed JSON or SSE, a stream
that stalls or is cut mid-way. `open_connections` counts live TCP connections,
so tests can check that the client leaked none.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Behaviour = Callable[["Conn"], Awaitable[None]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Conn:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    request: Request

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def respond(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        await self.send(f"{head}{extra}\r\n".encode() + body)

    async def start_chunked(self, content_type: str = "text/event-stream") -> None:
        await self.send(
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )

    async def chunk(self, data: bytes) -> None:
        await self.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    async def end_chunked(self) -> None:
        await self.send(b"0\r\n\r\n")

    async def wait_closed_by_client(self, limit_s: float = 60.0) -> None:
        """Stall: hold the connection until the client goes away."""
        try:
            await asyncio.wait_for(self.reader.read(), limit_s)
        except (TimeoutError, ConnectionError):
            pass


# -- behaviours -------------------------------------------------------------------------


def json_reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Behaviour:
    async def run(conn: Conn) -> None:
        await conn.respond(status, json.dumps(data).encode(), headers=headers)

    return run


def raw_reply(body: bytes, status: int = 200, content_type: str = "application/json") -> Behaviour:
    async def run(conn: Conn) -> None:
        await conn.respond(status, body, content_type)

    return run


def completion(text: str = "ok", model: str = "m") -> Behaviour:
    return json_reply(
        {
            "id": "cmpl-1",
            "model": model,
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        }
    )


def sse(
    deltas: list[str],
    *,
    delay_s: float = 0.0,
    end: str = "done",
    chat: bool = False,
    raw_events: list[bytes] | None = None,
) -> Behaviour:
    """Stream deltas as SSE; `end` is "done" ([DONE]), "cut" (close mid-stream) or "stall"."""

    async def run(conn: Conn) -> None:
        await conn.start_chunked()
        for raw in raw_events or ():
            await conn.chunk(raw)
        for i, delta in enumerate(deltas):
            choice: dict[str, Any] = {"index": 0, "finish_reason": None}
            if chat:
                choice["delta"] = {"content": delta}
            else:
                choice["text"] = delta
            if i == len(deltas) - 1 and end == "done":
                choice["finish_reason"] = "stop"
            event = {"id": "cmpl-s", "model": "m", "choices": [choice]}
            await conn.chunk(f"data: {json.dumps(event)}\n\n".encode())
            if delay_s:
                await asyncio.sleep(delay_s)
        if end == "done":
            final = {
                "id": "cmpl-s",
                "model": "m",
                "choices": [],
                "usage": {"prompt_tokens": 3, "completion_tokens": len(deltas)},
            }
            await conn.chunk(f"data: {json.dumps(final)}\n\n".encode())
            await conn.chunk(b"data: [DONE]\n\n")
            await conn.end_chunked()
        elif end == "cut":
            await conn.send(b'40\r\ndata: {"trunc')  # half a chunk, then the socket closes
            conn.writer.close()
        elif end == "stall":
            await conn.wait_closed_by_client()

    return run


def models(*names: str, max_model_len: int | None = None) -> Behaviour:
    data = [{"id": n, "object": "model", "max_model_len": max_model_len} for n in names]
    return json_reply({"object": "list", "data": data})


def tokenize() -> Behaviour:
    """vLLM's /tokenize, roughly: each <|special|> token is one id, other text one id per word."""

    async def run(conn: Conn) -> None:
        import re

        prompt = conn.request.json().get("prompt", "")
        pieces = re.findall(r"<\|[^|]+\|>|\S+", prompt)
        ids = [1000 + i for i, _ in enumerate(pieces)]
        await conn.respond(200, json.dumps({"tokens": ids, "count": len(ids)}).encode())

    return run


def stall_before_headers() -> Behaviour:
    async def run(conn: Conn) -> None:
        await conn.wait_closed_by_client()

    return run


def status(code: int, message: str = "boom", headers: dict[str, str] | None = None) -> Behaviour:
    return json_reply({"error": {"message": message, "code": code}}, status=code, headers=headers)


# -- the server -------------------------------------------------------------------------


@dataclass
class FaultServer:
    script: list[Behaviour] = field(default_factory=list)
    default: Behaviour | None = None
    routes: dict[str, Behaviour] = field(default_factory=dict)  # by path, before the script
    tls: ssl.SSLContext | None = None  # serve HTTPS with this context
    requests: list[Request] = field(default_factory=list)
    open_connections: int = 0
    port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _server: asyncio.Server | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            # Handlers still waiting on a client are ended here, inside their own loop.
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._server.close()
            loop.run_until_complete(self._server.wait_closed())
            loop.close()

        self._thread = threading.Thread(target=main, daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def wait_idle(self, limit_s: float = 10.0) -> int:
        """Wait until the client has closed every connection; returns how many stay open."""
        import time

        end = time.monotonic() + limit_s
        while self.open_connections and time.monotonic() < end:
            time.sleep(0.01)
        return self.open_connections

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.open_connections += 1
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                with self._lock:
                    behaviour = self.routes.get(request.path)
                    if behaviour is None:
                        behaviour = self.script.pop(0) if self.script else self.default
                if behaviour is None:
                    behaviour = status(500, "no behaviour scripted")
                await behaviour(Conn(reader, writer, request))
                if reader.at_eof() or writer.is_closing():
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass
            with self._lock:
                self.open_connections -= 1


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, path, headers, body)


def free_port() -> int:
    """A loopback port nobody listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RecordingGate:
    """A stand-in for the privacy EgressGate with the same methods, for tests of the send path.

    It rewrites every "SECRET" in the body to "[REDACTED]", so a test can tell
    that the transport sent the gate's bytes and not its own serialisation.
    """

    offline: bool = False
    prepared: list[Any] = field(default_factory=list)
    records: list[tuple[str, bool, str]] = field(default_factory=list)

    def prepare(self, endpoint: str, body: dict[str, Any], sources: list[Any]) -> Any:
        content = json.dumps(body).replace("SECRET", "[REDACTED]").encode()
        item = _Prepared(content=content, endpoint=endpoint, sources=list(sources), body=body)
        self.prepared.append(item)
        return item

    intents: list[Any] = field(default_factory=list)

    def intend(self, prepared: Any) -> str:
        self.intents.append(prepared)
        return f"intent-{len(self.intents)}"

    def bodyless(self, method: str, url: str) -> Any:
        return _Prepared(content=b"", endpoint=url, sources=[], body={})

    def record(self, prepared: Any, sent: bool, status: str, intent: str | None = None) -> str:
        self.records.append((prepared.endpoint, sent, status))
        return f"audit-{len(self.records)}"

    refused: dict[str, str] = field(default_factory=dict)  # path -> why, for tests of refusals

    def refusal(self, path: str) -> str | None:
        return self.refused.get(path)


@dataclass
class _Prepared:
    content: bytes
    endpoint: str
    sources: list[Any]
    body: dict[str, Any]
    findings: list[Any] = field(default_factory=list)
    sha256: str = ""
