"""One streaming completion or chat as text deltas (BackendClient.stream_complete, .stream_chat).

`TextStream` turns the transport's server-sent events into text, keeps the summary (finish
reason, usage, time to first token, the audit id) as it runs, and retries a request the server
shed inside the stream before its first token.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from codectx.backend.errors import BackendTimeout, BackendUnavailable
from codectx.backend.eventstream import EventStream
from codectx.backend.gate import Prepared, Sources
from codectx.backend.retries import RETRY_STATUSES, backoff
from codectx.backend.wire import Usage

if TYPE_CHECKING:  # the client creates streams; a stream only calls back into it
    from codectx.backend.client import BackendClient, RequestOptions


class TextStream:
    """Text deltas of one streaming completion or chat; summary fields filled as it runs."""

    def __init__(
        self,
        client: BackendClient,
        endpoint: str,
        payload: str | Sequence[dict[str, str]],  # a prompt, or chat messages
        sources: Sources,
        options: RequestOptions,
        *,
        chat: bool,
    ) -> None:
        self._client = client
        self._endpoint = endpoint
        self._payload = payload
        self._sources = sources
        self._options = options
        self._chat = chat
        self._events: EventStream | None = None
        self.text = ""
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model = ""
        self.response_id: str | None = None
        self.audit_id: str | None = None
        self.prepared: Prepared | None = None
        self.ttft_s: float | None = None
        self.total_s = 0.0
        self._started = 0.0
        self.body: dict[str, Any] = {}

    async def __aenter__(self) -> TextStream:
        c = self._client
        payload = self._payload
        if isinstance(payload, str):
            self.body = await c.completion_body(payload, stream=True, **self._options)
        else:
            self.body = await c.chat_body(payload, stream=True, **self._options)
        self.model = self.body["model"]
        self._started = time.monotonic()
        self._events = c.transport.stream(self._endpoint, self.body, self._sources)
        self.prepared = self._events.prepared
        with c._model_check():
            await self._events.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._events is not None:
            await self._events.aclose()
            self.audit_id = self._events.audit_id
        if self._started:
            self.total_s = time.monotonic() - self._started

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas()

    async def _deltas(self) -> AsyncIterator[str]:
        if self._events is None:
            raise RuntimeError("TextStream used outside `async with`")
        try:
            async for delta in self._event_deltas(self._shed_retried()):
                yield delta
        except BackendTimeout as exc:
            exc.partial = self.text  # a slow stream cut by the total timeout: what arrived is kept
            raise
        self.total_s = time.monotonic() - self._started

    async def _event_deltas(self, events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
        async for event in events:
            self.response_id = self.response_id or event.get("id")
            self.model = str(event.get("model") or self.model)
            usage = Usage.parse(event.get("usage"))
            if usage is not None:
                self.usage = usage
            for choice in event.get("choices") or ():
                if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                    continue
                if self._chat:
                    delta = (choice.get("delta") or {}).get("content") or ""
                else:
                    delta = choice.get("text") or ""
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
                if delta:
                    if self.ttft_s is None:
                        self.ttft_s = time.monotonic() - self._started
                    self.text += delta
                    yield delta

    async def _shed_retried(self) -> AsyncIterator[dict[str, Any]]:
        """The stream's events; a 429/503 shed inside the stream before any text is retried.

        vLLM sheds a streaming request past --max-num-queued-reqs with HTTP 200 and an
        error event (no Retry-After), so the transport's status-level retry never sees it.
        Like that one, this retries only before the first token, with the same backoff
        and retry budget (backend.retries); once text has arrived, an error is final.
        """
        c = self._client
        for attempt in range(int(c.settings.backend.retries) + 1):
            assert self._events is not None
            try:
                async for event in self._events:
                    yield event
                return
            except BackendUnavailable as exc:
                delay = backoff(attempt)
                if self.text or exc.status not in RETRY_STATUSES or attempt >= c.transport.retries:
                    raise
                if time.monotonic() + delay >= self._started + c.transport.timeouts.first_token_s:
                    raise
            await self._events.aclose()
            await asyncio.sleep(delay)
            self._events = c.transport.stream(self._endpoint, self.body, self._sources)
            self.prepared = self._events.prepared
            with c._model_check():
                await self._events.open()
