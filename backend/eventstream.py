"""One streaming request's server-sent events, as parsed JSON objects (Transport.stream).

`EventStream` opens through the transport's send path (the gate, the audit entry, retries
before the headers, the breaker), then reads the events under the request's own deadlines:
the first token within backend.first_token_timeout_s, the whole stream within
backend.total_timeout_s. Closing it, or cancelling the task that iterates, closes the HTTP
response at once, which makes vLLM abort the request. A 200 answer that is not an event
stream is taken as one event when it is a completion object, and is an error otherwise.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from codectx.backend.errors import BackendError, BackendProtocolError, BackendTimeout
from codectx.backend.gate import Prepared
from codectx.backend.recorder import settled
from codectx.backend.wire import status_error

if TYPE_CHECKING:  # the transport creates streams; a stream calls back into it
    from codectx.backend.transport import Transport


class StreamedResponse(Protocol):
    """The part of an HTTP response (httpx.Response, opened by the transport) a stream reads."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    def aiter_lines(self) -> AsyncIterator[str]: ...
    def aiter_bytes(self) -> AsyncIterator[bytes]: ...
    async def aclose(self) -> None: ...


def loop_time(monotonic_deadline: float) -> float:
    """asyncio.timeout_at wants the loop's clock; ours is time.monotonic (the same on CPython)."""
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())


class EventStream:
    """Server-sent events of one streaming request, as parsed JSON objects.

    Use as `async with transport.stream(...) as events: async for event in events`.
    Leaving the block, or cancelling the task that iterates, closes the HTTP
    response at once, which makes vLLM abort the request.
    """

    def __init__(self, transport: Transport, prepared: Prepared) -> None:
        self._t = transport
        self.prepared = prepared
        self.audit_id: str | None = None
        self.started = 0.0
        self.first_event_at: float | None = None
        self.headers_at: float | None = None
        self._response: StreamedResponse | None = None
        self._recorded: concurrent.futures.Future[str] | None = None
        self._deadline = 0.0
        self._first_deadline = 0.0
        self.done = False

    async def open(self) -> EventStream:
        t = self._t.timeouts
        self.started = time.monotonic()
        self._deadline = self.started + t.total_s
        self._first_deadline = min(self._deadline, self.started + t.first_token_s)
        # vLLM sends a stream's headers before the prompt is even scheduled: a server that does
        # not within the first-byte budget is not going to stream (unless the first token is due
        # sooner still).
        headers_by = min(self._first_deadline, self.started + t.first_byte_s)
        phase = "first_byte" if headers_by < self._first_deadline else "first_token"
        opened = await self._t.open_response(self.prepared, self._deadline, headers_by, phase)
        self._response, self._recorded = opened
        self.headers_at = time.monotonic()
        return self

    async def __aenter__(self) -> EventStream:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the response (vLLM aborts the request), then wait for its audit entry."""
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()
        recorded, self._recorded = self._recorded, None
        if recorded is not None:
            self.audit_id = await settled(recorded)

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[dict[str, Any]]:
        if self._response is None:
            raise RuntimeError("EventStream used outside `async with`")
        url = self.prepared.endpoint
        content_type = self._response.headers.get("content-type", "")
        if not content_type.lower().startswith("text/event-stream"):
            # A 200 that is not an event stream: a completion object from a server that does not
            # stream is accepted as one event; anything else is said to be what it is.
            event = await self._not_sse(url, content_type)
            self.first_event_at = time.monotonic()
            self.done = True
            yield event
            return
        lines = self._response.aiter_lines()
        data_lines: list[str] = []
        events = 0
        stray = ""  # the first line that is not server-sent events
        while True:
            got_token = self.first_event_at is not None
            deadline = self._deadline if got_token else self._first_deadline
            try:
                line = await self._t.read_line(lines, deadline, url)
            except TimeoutError:
                await self.aclose()
                raise self._timed_out(url, got_token, events) from None
            except StopAsyncIteration:
                if not self.done:
                    detail = (
                        f", and what came is not server-sent events: {stray[:200]!r}"
                        if stray and not events
                        else ""
                    )
                    raise BackendProtocolError(
                        f"the stream from {url} ended without [DONE]{detail}"
                    ) from None
                return
            except BackendError:  # the connection failed (translated by the transport)
                await self.aclose()
                raise
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
                continue
            if line and not stray and not line.startswith((":", "event:", "id:", "retry:")):
                stray = line
            if line or not data_lines:
                continue  # comments (":"), "event:"/"id:" fields
            payload = "\n".join(data_lines)
            data_lines = []
            if payload.strip() == "[DONE]":
                self.done = True
                continue
            try:
                event = json.loads(payload)
            except ValueError:
                await self.aclose()
                raise BackendProtocolError(
                    f"malformed event in the stream from {url}: {payload[:200]!r}"
                ) from None
            if not isinstance(event, dict):
                await self.aclose()
                raise BackendProtocolError(f"unexpected event in the stream from {url}: {payload[:200]!r}")
            if "error" in event and "choices" not in event:
                await self.aclose()
                error = event["error"]
                code = error.get("code") if isinstance(error, dict) else None
                status = code if isinstance(code, int) else 500
                raise status_error(status, json.dumps(event), url)
            if self.first_event_at is None:
                self.first_event_at = time.monotonic()
            events += 1
            yield event

    def _timed_out(self, url: str, got_token: bool, events: int) -> BackendTimeout:
        """The timeout that ended the stream: stalled before the first token, or a live stream
        that is slow (events kept coming) when the total budget ran out."""
        t = self._t.timeouts
        if got_token:
            elapsed = time.monotonic() - self.started
            return BackendTimeout(
                f"the model server at {url} is slow: {events} events in {elapsed:.0f} s, and the total "
                f"timeout ({t.total_s:g} s, backend.total_timeout_s) ended the stream; what arrived is kept",
                phase="total",
                slow=True,
            )
        phase = "first_token" if self._first_deadline < self._deadline else "total"
        err = BackendTimeout(t.message(phase, url), phase=phase)
        self._t.breaker.failure(str(err))
        return err

    async def _not_sse(self, url: str, content_type: str) -> dict[str, Any]:
        """The one event of a 200 answer that is not an event stream, or BackendProtocolError."""
        assert self._response is not None
        try:
            text = await self._t.read_text(self._response, self._deadline, url)
        finally:
            await self.aclose()
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("choices"), list):
            for choice in data["choices"]:
                if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                    choice.setdefault("delta", choice["message"])  # a chat answer, as one delta
            return data
        raise BackendProtocolError(
            f"the model server at {url} answered 200 but not with an event stream (Content-Type: "
            f"{content_type or 'none'}): {text[:200]!r}"
        )
