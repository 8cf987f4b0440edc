"""The only place in codectx that opens network connections (the only httpx user).

Every request body takes ONE path: build the body dict -> `gate.prepare(endpoint,
body, sources)` (redaction, size limits, never-send rules; it fails closed) ->
`gate.intend(prepared)` makes its audit entry durable (if it cannot, nothing
is sent) -> send `prepared.content` verbatim -> `gate.record(prepared, sent,
status, intent)` appends each attempt's outcome. GET requests (/v1/models,
/metrics) carry no code; when they carry the API key they get the same entry
through `gate.bodyless`. Offline mode builds and records but never sends.
The API key goes only to the origin it was configured for
(Settings.api_key_for); a redirect (3xx) is an error, never followed.

Here too: split timeouts (connect / first byte / first token / total), retries with backoff
only where safe (connect errors, 429/503 before any token, honouring
Retry-After), the circuit breaker, and the translation of every httpx failure
into codectx.backend.errors, exactly once.

One file on purpose (about 600 lines): it is the egress choke point a reviewer must read whole,
and `EventStream` shares the transport's deadlines, retries, breaker and error translation.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import random
import ssl
import time
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import httpx
from codectx.backend.breaker import CircuitBreaker
from codectx.backend.errors import (
    BackendError,
    BackendNotConfigured,
    BackendOffline,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
)
from codectx.backend.wire import Reply, ServerURLs, Timeouts, retry_after, status_error

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.privacy.egress import SourceSpan

Sources = Sequence["SourceSpan"]  # the file regions whose text is in a request (for the audit log)
RETRY_STATUSES = (429, 503)
log = logging.getLogger("codectx.backend")
MAX_ANSWER_BYTES = 32 * 2**20  # a non-streaming answer larger than this is not a completion


class Finding(Protocol):
    """One redaction the gate made in a request (codectx.privacy.egress.RedactionEvent); never a value."""

    @property
    def rule(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def hmac8(self) -> str: ...

    def as_dict(self) -> dict[str, Any]: ...


class Prepared(Protocol):
    """A request body as the gate let it out (codectx.privacy.egress.PreparedRequest)."""

    @property
    def content(self) -> bytes: ...  # exactly the bytes that are sent
    @property
    def endpoint(self) -> str: ...
    @property
    def findings(self) -> Sequence[Finding]: ...


class Gate(Protocol):
    """What codectx.privacy.egress.EgressGate provides (redaction + audit)."""

    @property
    def offline(self) -> bool: ...

    def prepare(self, endpoint: str, body: dict[str, Any], sources: list[SourceSpan]) -> Prepared: ...

    # `prepared` is what this gate's own `prepare` returned (hence Any: each gate has its own type).
    def intend(self, prepared: Any) -> str: ...

    def bodyless(self, method: str, url: str) -> Prepared: ...

    def record(self, prepared: Any, sent: bool, status: str, intent: str | None = None) -> str: ...


def default_gate(settings: Settings) -> Gate:
    """The privacy choke point for these settings: redaction, never-send rules, audit log."""
    from codectx.privacy.egress import EgressGate

    gate: Gate = EgressGate(settings)
    return gate


def _ssl_context(settings: Settings) -> ssl.SSLContext | bool:
    if not settings.backend.verify_tls:
        return False
    ca = settings.backend.ca_bundle
    try:
        return ssl.create_default_context(cafile=ca) if ca else ssl.create_default_context()
    except (OSError, ssl.SSLError) as exc:
        raise BackendNotConfigured(f"backend.ca_bundle '{ca}' cannot be used: {exc}") from None


class Transport:
    """One connection pool to one server, shared by every request of a process."""

    def __init__(
        self,
        settings: Settings,
        gate: Gate | None = None,
        *,
        http_transport: Any = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.settings = settings
        self.urls = ServerURLs.parse(settings.backend.url)
        self.gate: Gate = gate if gate is not None else default_gate(settings)
        self.timeouts = Timeouts.from_settings(settings)
        self.retries = int(settings.backend.retries)
        self.breaker = breaker or CircuitBreaker(float(settings.backend.breaker_interval_s))
        # Audit entries are written (and fsynced) off the event loop, one at a time so the log's
        # hash chain stays in order, and without delaying the first token.
        self._audit = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codectx-audit")
        headers = {"User-Agent": "codectx", "Accept": "application/json"}
        api_key = settings.api_key_for(settings.backend.url)
        if settings.backend.api_key and api_key is None:
            log.warning("codectx: %s", settings.key_withheld())
        self.credentials = api_key is not None
        if api_key:
            from codectx.logsafe import register_secret

            register_secret(api_key)  # whatever logs a header or an option, the key is scrubbed
            headers["Authorization"] = f"Bearer {api_key}"
            host = urlsplit(self.urls.root).hostname or ""
            if self.urls.root.startswith("http://") and host not in ("127.0.0.1", "localhost", "::1"):
                log.warning(
                    "codectx: the API key (and your code) go to %s over plain HTTP; use https://", host
                )
        t = self.timeouts
        self._http = httpx.AsyncClient(
            headers=headers,
            verify=_ssl_context(settings),
            # Reads are bounded by our own first-token / total deadlines, not per-read timeouts.
            timeout=httpx.Timeout(connect=t.connect_s, read=None, write=t.total_s, pool=t.connect_s),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            transport=http_transport,
            trust_env=False,  # never route code through a proxy from the environment
        )

    @property
    def offline(self) -> bool:
        return bool(getattr(self.gate, "offline", False))

    async def aclose(self) -> None:
        await self._http.aclose()
        self._audit.shutdown(wait=True)

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def pool_connections(self) -> int:
        """Open connections in the pool (for leak checks)."""
        pool = getattr(self._http._transport, "_pool", None)
        return len(getattr(pool, "connections", ()))

    # -- the single send path -------------------------------------------------------------

    def prepare(self, endpoint: str, body: dict[str, Any], sources: Sources) -> Prepared:
        """Run the body through the privacy gate; the result's bytes are what would be sent."""
        return self.gate.prepare(self.urls.url(endpoint), body, list(sources))

    def dry_run(
        self, endpoint: str, body: dict[str, Any], sources: Sources, *, status: str = "dry-run"
    ) -> tuple[Prepared, str]:
        """Build and record a request without sending it: (prepared, audit id)."""
        prepared = self.prepare(endpoint, body, sources)
        return prepared, self._audit.submit(self.gate.record, prepared, False, status).result()

    def _submit_record(
        self, prepared: Prepared, sent: bool, status: str, intent: str | None = None
    ) -> concurrent.futures.Future[str]:
        """Queue an audit entry; it is written even if the awaiting task is cancelled."""
        return self._audit.submit(self.gate.record, prepared, sent, status, intent)

    async def _record(self, prepared: Prepared, sent: bool, status: str, intent: str | None = None) -> str:
        return await _settled(self._submit_record(prepared, sent, status, intent))

    async def _intend(self, prepared: Prepared) -> str:
        """Write the request's audit entry (fsynced) before its first byte leaves; AuditError stops it."""
        future = self._audit.submit(self.gate.intend, prepared)
        try:
            return await _settled(future)
        except asyncio.CancelledError:
            # Cancelled while the entry was being written: nothing was sent; say so in the log.
            def unsent(done: concurrent.futures.Future[str]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self._submit_record(prepared, False, "cancelled before sending", done.result())

            future.add_done_callback(unsent)
            raise

    async def post(self, endpoint: str, body: dict[str, Any], sources: Sources = ()) -> Reply:
        """POST a JSON body (through the gate) and return the whole answer."""
        prepared = self.prepare(endpoint, body, sources)
        started = time.monotonic()
        deadline = started + self.timeouts.total_s
        # A generated answer that is not streamed sends its headers only when it is done: the
        # total budget. Anything else (/tokenize) starts answering at once: the first-byte one.
        generated = endpoint.endswith("/completions")
        first = deadline if generated else min(deadline, started + self.timeouts.first_byte_s)
        response, recorded = await self._open(prepared, deadline, first, "first_byte")
        try:
            text = await self._read_text(response, deadline, prepared.endpoint)
        finally:
            await response.aclose()
            audit_id = await _settled(recorded)
        return Reply(response.status_code, text, audit_id, prepared, time.monotonic() - started)

    def stream(self, endpoint: str, body: dict[str, Any], sources: Sources = ()) -> EventStream:
        """POST a JSON body and iterate over its server-sent events (use `async with`)."""
        return EventStream(self, self.prepare(endpoint, body, sources))

    async def get(self, endpoint: str) -> Reply:
        """GET without a body (/v1/models, /metrics): no code leaves, so no gate."""
        url = self.urls.url(endpoint)
        if self.offline:
            raise BackendOffline(f"offline mode: not contacting {url}")
        # No code leaves, but the API key does: such a request gets its audit entry first.
        bodyless = self.gate.bodyless("GET", url) if self.credentials else None
        intent = await self._intend(bodyless) if bodyless is not None else None
        self.breaker.before_request()
        started = time.monotonic()
        deadline = started + self.timeouts.total_s
        # A server that accepts and then says nothing is told apart within the first-byte budget.
        first = min(deadline, started + self.timeouts.first_byte_s)
        try:
            async with asyncio.timeout_at(_loop_time(first)):
                response = await self._http.send(self._http.build_request("GET", url), stream=True)
            try:
                text = await self._read_text(response, deadline, url)
            finally:
                await response.aclose()
        except TimeoutError:
            phase = "first_byte" if first < deadline else "total"
            err: BackendError = BackendTimeout(self.timeouts.message(phase, url), phase=phase)
            self._note(bodyless, intent, True, "timeout")
            self.breaker.failure(str(err))
            raise err from None
        except httpx.HTTPError as exc:
            err = self._translate(exc, url)
            self._note(bodyless, intent, not _not_sent(exc), f"error: {type(exc).__name__}")
            self.breaker.failure(str(err))
            raise err from None
        except BackendError as exc:
            self._note(bodyless, intent, True, f"error: {type(exc).__name__}")
            self.breaker.failure(str(exc))
            raise
        except BaseException:
            self._note(bodyless, intent, True, "cancelled")
            self.breaker.release_probe()
            raise
        self._note(bodyless, intent, True, str(response.status_code))
        if 300 <= response.status_code < 400:
            self.breaker.release_probe()
            raise _redirect_error(response, url)
        if response.status_code >= 400:
            err = status_error(response.status_code, text, url)
            if response.status_code >= 500:
                self.breaker.failure(str(err))
            else:
                self.breaker.release_probe()
            raise err
        self.breaker.success()
        return Reply(response.status_code, text, None, None, time.monotonic() - started)

    async def _open(
        self, prepared: Prepared, deadline: float, first_deadline: float, first_phase: str
    ) -> tuple[httpx.Response, concurrent.futures.Future[str]]:
        """Send the prepared bytes until headers arrive, retrying where safe. Records every attempt.

        Headers must come by `first_deadline` (a BackendTimeout of `first_phase` if not,
        "total" when that is the overall deadline).

        Returns the response and the pending audit record of the successful attempt; callers
        await it before they report the request finished (an audit failure is an error).
        """
        url = prepared.endpoint
        if self.offline:
            audit_id = await self._record(prepared, False, "offline")
            raise BackendOffline(
                f"offline mode: request to {url} built and logged (audit id {audit_id}), not sent",
                audit_id=audit_id,
                body=prepared.content,
            )
        intent = await self._intend(prepared)  # durable before the first byte; if not, nothing is sent
        attempt = 0
        self.breaker.before_request()  # once: retries belong to the same (possibly probing) request
        while True:
            request = self._http.build_request(
                "POST", url, content=prepared.content, headers={"Content-Type": "application/json"}
            )
            try:
                async with asyncio.timeout_at(_loop_time(min(deadline, first_deadline))):
                    response = await self._http.send(request, stream=True)
            except TimeoutError:
                await self._record(prepared, True, "timeout", intent)
                phase = first_phase if first_deadline < deadline else "total"
                err: BackendError = BackendTimeout(self.timeouts.message(phase, url), phase=phase)
                self.breaker.failure(str(err))
                raise err from None
            except httpx.HTTPError as exc:
                not_sent = _not_sent(exc)
                await self._record(prepared, not not_sent, f"error: {type(exc).__name__}", intent)
                err = self._translate(exc, url)
                delay = self._backoff(attempt)
                retry = not_sent and "CERTIFICATE_VERIFY_FAILED" not in str(exc)
                if retry and attempt < self.retries and time.monotonic() + delay < deadline:
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
                self.breaker.failure(str(err))
                raise err from None
            except BaseException:
                # Cancelled (a newer keystroke) after the bytes may have left: log it all the same.
                cancelled = self._submit_record(prepared, True, "cancelled", intent)
                cancelled.add_done_callback(_log_record_failure)
                self.breaker.release_probe()
                raise
            status = response.status_code
            recorded = self._submit_record(prepared, True, str(status), intent)
            if 300 <= status < 400:
                await response.aclose()
                await _settled(recorded)
                self.breaker.release_probe()
                raise _redirect_error(response, url)
            if status < 400:
                self.breaker.success()
                return response, recorded
            try:
                await _settled(recorded)
            except BaseException:
                await response.aclose()
                raise
            try:
                text = await self._read_text(response, deadline, url)
            finally:
                await response.aclose()
            if status in RETRY_STATUSES and attempt < self.retries:
                wait = retry_after(response.headers.get("Retry-After"), time.time())
                delay = self._backoff(attempt) if wait is None else wait
                if time.monotonic() + delay < deadline:
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
            err = status_error(status, text, url)
            if status >= 500:
                self.breaker.failure(str(err))
            else:
                self.breaker.release_probe()
            raise err

    def _backoff(self, attempt: int) -> float:
        return min(2.0, 0.1 * 2**attempt) * (1 + random.random() * 0.2)

    async def _read_text(self, response: httpx.Response, deadline: float, url: str) -> str:
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        raise BackendProtocolError(
                            f"the answer from {url} is larger than {MAX_ANSWER_BYTES // 2**20} MiB"
                        )
                    chunks.append(chunk)
        except TimeoutError:
            raise BackendTimeout(self.timeouts.message("total", url), phase="total") from None
        except httpx.HTTPError as exc:
            raise self._translate(exc, url) from None
        return b"".join(chunks).decode("utf-8", errors="replace")

    def _translate(self, exc: httpx.HTTPError, url: str) -> BackendError:
        if isinstance(exc, httpx.ConnectTimeout):
            return BackendTimeout(
                f"cannot connect to the model server at {url} within "
                f"{self.timeouts.connect_s:g}s (backend.connect_timeout_s)",
                phase="connect",
            )
        if isinstance(exc, httpx.ConnectError) and "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return BackendUnavailable(
                f"the TLS certificate of {url} is not trusted ({exc}). If the server uses your own CA, "
                "set backend.ca_bundle to its certificate file (backend.verify_tls = false turns "
                "checking off, which lets anyone on the network read your code)"
            )
        if isinstance(exc, httpx.ConnectError):
            return BackendUnavailable(
                f"cannot connect to the model server at {url}: {exc or 'connection refused'}. "
                "Is it running? (codectx backend serve --profile cpu-dev; codectx backend check)"
            )
        if isinstance(exc, httpx.TimeoutException):
            return BackendTimeout(f"timed out talking to {url}: {exc}", phase="total")
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            return BackendUnavailable(f"the model server at {url} closed the connection: {exc}")
        if isinstance(exc, httpx.DecodingError):
            return BackendProtocolError(f"undecodable answer from {url}: {exc}")
        return BackendUnavailable(f"request to {url} failed: {type(exc).__name__}: {exc}")

    def _note(self, bodyless: Prepared | None, intent: str | None, sent: bool, status: str) -> None:
        """The outcome of a bodyless request that has an audit entry (queued; never blocks)."""
        if bodyless is not None and intent is not None:
            self._submit_record(bodyless, sent, status, intent).add_done_callback(_log_record_failure)


def _not_sent(exc: httpx.HTTPError) -> bool:
    """True for failures before any byte of the request left (no connection was made)."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def _redirect_error(response: httpx.Response, url: str) -> BackendError:
    """A 3xx: codectx never follows one (the code and the key would go to another place)."""
    target = response.headers.get("Location", "?")
    return BackendProtocolError(
        f"the model server at {url} answered {response.status_code} (redirect to {target}); codectx "
        "does not follow redirects: set backend.url to the address that answers"
    )


async def _settled(future: concurrent.futures.Future[str]) -> str:
    """Await an audit write; cancelling the waiter never cancels the write itself."""
    return await asyncio.shield(asyncio.wrap_future(future))


def _log_record_failure(future: concurrent.futures.Future[str]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("codectx: could not write the audit entry of a cancelled request: %s", future.exception())


def _loop_time(monotonic_deadline: float) -> float:
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
        self._response: httpx.Response | None = None
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
        self._response, self._recorded = await self._t._open(self.prepared, self._deadline, headers_by, phase)
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
            self.audit_id = await _settled(recorded)

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
                async with asyncio.timeout_at(_loop_time(deadline)):
                    line = await anext(lines)
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
            except httpx.HTTPError as exc:
                await self.aclose()
                raise self._t._translate(exc, url) from None
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
            text = await self._t._read_text(self._response, self._deadline, url)
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
