"""The only place in codectx that opens network connections (the only httpx user).

Every request body takes ONE path: build the body dict -> `gate.prepare(endpoint,
body, sources)` (redaction, size limits, never-send rules; it fails closed) ->
`gate.intend(prepared)` makes its audit entry durable (if it cannot, nothing
is sent) -> send `prepared.content` verbatim -> `gate.record(prepared, sent,
status, intent)` appends each attempt's outcome. GET requests (/v1/models,
/metrics, health probes) carry no code; they get the same entry through
`gate.bodyless`. Offline mode builds and records but never sends.
The API key goes only to the origin it was configured for
(Settings.api_key_for); a redirect (3xx) is an error, never followed.

Here too: split timeouts (connect / first byte / first token / total), retries only where
safe, the circuit breaker. Around it, one module per part, so that a reviewer reads the
send path here whole: the gate's types (`gate.py`), the audit writes off the event loop
(`recorder.py`), the retry policy (`retries.py`), and a streaming answer's events
(`eventstream.py`). httpx is imported here only: the last section translates its failures
into codectx.backend.errors, once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any
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
from codectx.backend.eventstream import EventStream, StreamedResponse, loop_time
from codectx.backend.gate import Gate, Prepared, Sources, default_gate
from codectx.backend.recorder import AuditRecorder, log_record_failure, settled
from codectx.backend.retries import RETRY_STATUSES, backoff
from codectx.backend.wire import Reply, ServerURLs, Timeouts, retry_after, status_error

from codectx.settings import Settings

log = logging.getLogger("codectx.backend")
MAX_ANSWER_BYTES = 32 * 2**20  # a non-streaming answer larger than this is not a completion


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
        self.recorder = AuditRecorder(self.gate)  # audit writes off the event loop, in order
        headers = {"User-Agent": "codectx", "Accept": "application/json"}
        api_key = settings.api_key_for(settings.backend.url)
        if settings.backend.api_key and api_key is None:
            log.warning("codectx: %s", settings.key_withheld())
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
        auth = None
        if self.urls.userinfo is not None:
            from codectx.logsafe import register_secret

            register_secret(self.urls.userinfo[1])
            auth = httpx.BasicAuth(*self.urls.userinfo)
        self._http = httpx.AsyncClient(
            headers=headers,
            auth=auth,
            verify=_ssl_context(settings),
            # Reads are bounded by our own first-token / total deadlines, not per-read timeouts.
            timeout=httpx.Timeout(connect=t.connect_s, read=None, write=t.total_s, pool=t.connect_s),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            transport=http_transport,
            trust_env=False,  # never route code through a proxy from the environment
        )

    @property
    def offline(self) -> bool:
        return bool(self.gate.offline)

    async def aclose(self) -> None:
        await self._http.aclose()
        self.recorder.close()

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
        return prepared, self.recorder.record_now(prepared, False, status)

    async def post(self, endpoint: str, body: dict[str, Any], sources: Sources = ()) -> Reply:
        """POST a JSON body (through the gate) and return the whole answer."""
        prepared = self.prepare(endpoint, body, sources)
        started = time.monotonic()
        deadline = started + self.timeouts.total_s
        # A generated answer that is not streamed sends its headers only when it is done: the
        # total budget. Anything else (/tokenize) starts answering at once: the first-byte one.
        generated = endpoint.endswith("/completions")
        first = deadline if generated else min(deadline, started + self.timeouts.first_byte_s)
        response, recorded = await self.open_response(prepared, deadline, first, "first_byte")
        try:
            text = await self.read_text(response, deadline, prepared.endpoint)
        finally:
            await response.aclose()
            audit_id = await settled(recorded)
        return Reply(
            response.status_code, text, audit_id, prepared, time.monotonic() - started, prepared.endpoint
        )

    def stream(self, endpoint: str, body: dict[str, Any], sources: Sources = ()) -> EventStream:
        """POST a JSON body and iterate over its server-sent events (use `async with`)."""
        return EventStream(self, self.prepare(endpoint, body, sources))

    async def get(self, endpoint: str) -> Reply:
        """GET without a body (/v1/models, /metrics): no code leaves, so no gate."""
        url = self.urls.url(endpoint)
        if self.offline:
            raise BackendOffline(f"offline mode: not contacting {url}")
        # No code leaves, but bytes do (the URL, the API key if any): every request gets its audit
        # entry first.
        bodyless = self.gate.bodyless("GET", url)
        intent = await self.recorder.intend(bodyless)
        self.breaker.before_request()
        started = time.monotonic()
        deadline = started + self.timeouts.total_s
        # A server that accepts and then says nothing is told apart within the first-byte budget.
        first = min(deadline, started + self.timeouts.first_byte_s)
        try:
            async with asyncio.timeout_at(loop_time(first)):
                response = await self._http.send(self._http.build_request("GET", url), stream=True)
            try:
                text = await self.read_text(response, deadline, url)
            finally:
                await response.aclose()
        except TimeoutError:
            phase = "first_byte" if first < deadline else "total"
            err: BackendError = BackendTimeout(self.timeouts.message(phase, url), phase=phase)
            self.recorder.note(bodyless, intent, True, "timeout")
            self.breaker.failure(str(err))
            raise err from None
        except httpx.HTTPError as exc:
            err = translate(exc, url, self.timeouts)
            self.recorder.note(bodyless, intent, not not_sent(exc), f"error: {type(exc).__name__}")
            self.breaker.failure(str(err))
            raise err from None
        except BackendError as exc:
            self.recorder.note(bodyless, intent, True, f"error: {type(exc).__name__}")
            self.breaker.failure(str(exc))
            raise
        except BaseException:
            self.recorder.note(bodyless, intent, True, "cancelled")
            self.breaker.release_probe()
            raise
        self.recorder.note(bodyless, intent, True, str(response.status_code))
        if 300 <= response.status_code < 400:
            self.breaker.release_probe()
            raise redirect_error(response, url)
        if response.status_code >= 400:
            err = status_error(response.status_code, text, url)
            if response.status_code >= 500:
                self.breaker.failure(str(err))
            else:
                self.breaker.release_probe()
            raise err
        self.breaker.success()
        return Reply(response.status_code, text, None, None, time.monotonic() - started, url)

    async def open_response(
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
            audit_id = await self.recorder.record(prepared, False, "offline")
            raise BackendOffline(
                f"offline mode: request to {url} built and logged (audit id {audit_id}), not sent",
                audit_id=audit_id,
                body=prepared.content,
            )
        # Durable before the first byte; if it cannot be written, nothing is sent.
        intent = await self.recorder.intend(prepared)
        attempt = 0
        self.breaker.before_request()  # once: retries belong to the same (possibly probing) request
        while True:
            request = self._http.build_request(
                "POST", url, content=prepared.content, headers={"Content-Type": "application/json"}
            )
            try:
                async with asyncio.timeout_at(loop_time(min(deadline, first_deadline))):
                    response = await self._http.send(request, stream=True)
            except TimeoutError:
                await self.recorder.record(prepared, True, "timeout", intent)
                phase = first_phase if first_deadline < deadline else "total"
                err: BackendError = BackendTimeout(self.timeouts.message(phase, url), phase=phase)
                self.breaker.failure(str(err))
                raise err from None
            except httpx.HTTPError as exc:
                unsent = not_sent(exc)
                await self.recorder.record(prepared, not unsent, f"error: {type(exc).__name__}", intent)
                err = translate(exc, url, self.timeouts)
                delay = backoff(attempt)
                retry = unsent and "CERTIFICATE_VERIFY_FAILED" not in str(exc)
                if retry and attempt < self.retries and time.monotonic() + delay < deadline:
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
                self.breaker.failure(str(err))
                raise err from None
            except BaseException:
                # Cancelled (a newer keystroke) after the bytes may have left: log it all the same.
                cancelled = self.recorder.submit(prepared, True, "cancelled", intent)
                cancelled.add_done_callback(log_record_failure)
                self.breaker.release_probe()
                raise
            status = response.status_code
            recorded = self.recorder.submit(prepared, True, str(status), intent)
            if 300 <= status < 400:
                await response.aclose()
                await settled(recorded)
                self.breaker.release_probe()
                raise redirect_error(response, url)
            if status < 400:
                self.breaker.success()
                return response, recorded
            try:
                await settled(recorded)
            except BaseException:
                await response.aclose()
                raise
            try:
                text = await self.read_text(response, deadline, url)
            finally:
                await response.aclose()
            if status in RETRY_STATUSES and attempt < self.retries:
                wait = retry_after(response.headers.get("Retry-After"), time.time())
                delay = backoff(attempt) if wait is None else wait
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

    async def read_line(self, lines: AsyncIterator[str], deadline: float, url: str) -> str:
        """The next line of a streamed answer, by `deadline` (TimeoutError if not; StopAsyncIteration
        at its end); a failure of the connection as a codectx error."""
        try:
            async with asyncio.timeout_at(loop_time(deadline)):
                return await anext(lines)
        except httpx.HTTPError as exc:
            raise translate(exc, url, self.timeouts) from None

    async def read_text(self, response: StreamedResponse, deadline: float, url: str) -> str:
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout_at(loop_time(deadline)):
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
            raise translate(exc, url, self.timeouts) from None
        return b"".join(chunks).decode("utf-8", errors="replace")


# ---- httpx's failures, translated once ----------------------------------------------------------


def translate(exc: httpx.HTTPError, url: str, timeouts: Timeouts) -> BackendError:
    """The codectx error for an httpx failure talking to `url`."""
    if isinstance(exc, httpx.ConnectTimeout):
        return BackendTimeout(
            f"cannot connect to the model server at {url} within "
            f"{timeouts.connect_s:g}s (backend.connect_timeout_s)",
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


def not_sent(exc: httpx.HTTPError) -> bool:
    """True for failures before any byte of the request left (no connection was made)."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def redirect_error(response: httpx.Response, url: str) -> BackendError:
    """A 3xx: codectx never follows one (the code and the key would go to another place)."""
    target = response.headers.get("Location", "?")
    return BackendProtocolError(
        f"the model server at {url} answered {response.status_code} (redirect to {target}); codectx "
        "does not follow redirects: set backend.url to the address that answers"
    )
