"""Backend and index health for editors: the `codectx/health` request and `codectx/healthChanged`.

`codectx/health` with `{"probe": true}` asks the model server now (GET
/v1/models through the backend client, with a short timeout, never blocking
the event loop); without it, it answers the last known state, which every
completion, refactor and explanation also updates. Whenever the backend's
state changes (say ok -> unreachable), the server pushes
`codectx/healthChanged` with the same backend object, so a status bar can
follow the server without polling.

Backend states: ok, unreachable (refused, timed out, 5xx, circuit open),
error (reachable but wrong: 4xx, bad answers, model not served), disabled
(no backend.url, or offline mode), unknown (nothing tried yet).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from codectx.backend.client import BackendClient
from codectx.backend.gate import Gate
from codectx.lsp.handlers import guarded, in_worker

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.lsp.folders import Folder
    from codectx.lsp.server import CodectxServer

    from codectx.app.session import WorkspaceSession

log = logging.getLogger(__name__)

HEALTH = "codectx/health"
HEALTH_CHANGED = "codectx/healthChanged"
PROBE_TIMEOUT_S = 5.0  # a health check must answer quickly; completions keep their own timeouts


@dataclass(frozen=True)
class BackendHealth:
    state: str = "unknown"  # ok | unreachable | error | disabled | unknown
    endpoint: str = ""
    model: str | None = None
    latency_ms: float | None = None
    error: str | None = None
    checked_at: float = 0.0  # Unix time of the observation; 0 when never checked

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def public_endpoint(url: str | None) -> str:
    """The configured server URL without credentials (user:password@ never reaches the editor)."""
    if not url:
        return ""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def classify(exc: BaseException) -> str:
    """The health state a failed backend call means."""
    from codectx.backend import errors

    if isinstance(exc, (errors.BackendNotConfigured, errors.BackendOffline)):
        return "disabled"
    if isinstance(exc, (errors.BackendUnavailable, errors.BackendTimeout, TimeoutError, OSError)):
        return "unreachable"
    return "error"


def disabled_reason(settings: Settings) -> str | None:
    """Why no request can reach a model server under these settings, or None."""
    if not settings.backend.url:
        return "no model server configured (backend.url)"
    if settings.privacy.offline:
        return "offline mode (privacy.offline): requests are logged, never sent"
    return None


class HealthMonitor:
    """The last known backend state; tells the editor when the state changes."""

    def __init__(self, notify: Callable[[dict[str, Any]], None], clock: Callable[[], float] = time.time):
        self._notify = notify
        self._clock = clock
        self.backend = BackendHealth()

    def observe(self, health: BackendHealth) -> BackendHealth:
        previous = self.backend.state
        self.backend = health
        if health.state != previous:
            try:
                self._notify(health.as_json())
            except Exception:  # the client went away; nothing to tell
                log.debug("could not send %s", HEALTH_CHANGED, exc_info=True)
        return health

    def ok(self, settings: Settings, model: str | None, latency_ms: float | None) -> BackendHealth:
        endpoint = public_endpoint(settings.backend.url)
        same = self.backend.state == "ok" and self.backend.endpoint == endpoint
        known = model or (self.backend.model if same else None)
        return self.observe(BackendHealth("ok", endpoint, known or None, latency_ms, None, self._clock()))

    def failed(self, settings: Settings, exc: BaseException) -> BackendHealth:
        message = str(exc) or type(exc).__name__
        return self.observe(
            BackendHealth(
                classify(exc),
                public_endpoint(settings.backend.url),
                None,  # which model a failing server serves is not known
                None,
                message,
                self._clock(),
            )
        )

    def observe_exception(self, settings: Settings, exc: BaseException) -> None:
        """Record a failed request, if the failure says something about the model server."""
        from codectx.backend.errors import BackendError

        if isinstance(exc, (BackendError, TimeoutError, OSError)):
            self.failed(settings, exc)

    def current(self, settings: Settings) -> BackendHealth:
        """The last observation; before any, what the settings alone say (disabled or unknown)."""
        if self.backend.state != "unknown":
            return self.backend
        reason = disabled_reason(settings)
        if reason:
            return BackendHealth("disabled", public_endpoint(settings.backend.url), None, None, reason, 0.0)
        return BackendHealth("unknown", public_endpoint(settings.backend.url))


def pick_model(settings: Settings, served: list[str]) -> tuple[str | None, str | None]:
    """(model, problem): the configured model if served, else the server's first."""
    wanted = settings.backend.model
    if wanted:
        if wanted in served:
            return wanted, None
        listed = ", ".join(served[:5]) or "none"
        return None, f"backend.model '{wanted}' is not served by this server (it serves: {listed})"
    if not served:
        return None, "the model server serves no models (/v1/models is empty)"
    return served[0], None


def _probe_client(settings: Settings, gate: Gate) -> BackendClient:
    """A client of its own, without a circuit breaker, so an explicit probe really asks the server.

    Built in a worker thread: creating its TLS context reads certificate files.
    """
    from codectx.backend.breaker import CircuitBreaker
    from codectx.backend.transport import Transport

    transport = Transport(settings, gate, breaker=CircuitBreaker(0.0))
    return BackendClient(settings, transport=transport)


async def probe(ls: CodectxServer, folder: Folder | None, settings: Settings) -> BackendHealth:
    """Ask the model server for its models now; records and returns the verdict."""
    monitor: HealthMonitor = ls.health
    reason = disabled_reason(settings)
    if reason:
        endpoint = public_endpoint(settings.backend.url)
        return monitor.observe(BackendHealth("disabled", endpoint, None, None, reason, time.time()))
    session = ls.session(folder) if folder is not None else None
    try:
        gate = await in_worker(_gate, session, settings)
        client = await in_worker(_probe_client, settings, gate)
    except Exception as exc:  # e.g. an unusable CA bundle: the backend cannot work as configured
        return monitor.failed(settings, exc)
    timeout = min(PROBE_TIMEOUT_S, float(settings.backend.total_timeout_s))
    started = time.perf_counter()
    try:
        async with asyncio.timeout(timeout):
            served = await client.models()
    except TimeoutError:
        url = public_endpoint(settings.backend.url)
        return monitor.failed(settings, TimeoutError(f"no answer from {url} within {timeout:g} s"))
    except Exception as exc:
        return monitor.failed(settings, exc)
    finally:
        await client.aclose()
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    model, problem = pick_model(settings, served)
    if problem:
        health = BackendHealth(
            "error", public_endpoint(settings.backend.url), None, latency_ms, problem, time.time()
        )
        return monitor.observe(health)
    # The server answers again: completions need not wait out the circuit breaker's interval.
    ls.notices.resolved("backend")
    if session is not None:
        session.client.server_recovered()
    return monitor.ok(settings, model, latency_ms)


def _gate(session: WorkspaceSession | None, settings: Settings) -> Gate:
    """The folder session's privacy gate, else one for these settings (built in a worker thread)."""
    from codectx.backend.gate import default_gate

    return session.client.gate if session is not None else default_gate(settings)


def index_health(folders: Iterable[Folder]) -> dict[str, Any]:
    """One summary over every workspace folder's index."""
    folders = list(folders)
    files = sum(f.progress.files for f in folders)
    chunks = sum(f.progress.chunks for f in folders)
    pending = sum(_pending(f) for f in folders)
    states = {f.state for f in folders}
    if states & {"failed", "unavailable"}:
        state = "error"
    elif "indexing" in states:
        state = "indexing"
    elif chunks == 0 and files == 0 and not any(f.store is not None for f in folders):
        state = "empty"
    else:
        state = "ready"
    return {
        "state": state,
        "files": files,
        "chunks": chunks,
        "vectors_pending": pending,
        "near_open_files": _near(folders),
    }


def _near(folders: list[Folder]) -> dict[str, int] | None:
    """Vectors of the open documents' neighbourhood (IndexKeeper.near_vectors) over every folder
    that has reported them: {"vectors", "vectors_total"}; None while none has, or vectors are off."""
    reported = [f.keeper.near_vectors for f in folders if f.settings.index.embed]
    known = [r for r in reported if r is not None]
    if not known:
        return None
    return {"vectors": sum(d for d, _ in known), "vectors_total": sum(t for _, t in known)}


def _pending(folder: Folder) -> int:
    """Chunks still owed a vector; none when vectors are off (nothing will ever embed them)."""
    if not folder.settings.index.embed:
        return 0
    progress = folder.progress
    if folder.state == "indexing":
        return max(progress.vectors_pending, progress.vectors_total - progress.vectors)
    return progress.vectors_pending


def register(server: CodectxServer) -> None:
    from codectx.lsp.custom import _params
    from codectx.lsp.errors import LspError

    @server.feature(HEALTH)
    @guarded()
    async def health(ls: CodectxServer, params: Any) -> dict[str, Any]:
        """{} -> the last known state (never blocks); {"probe": true} -> asks the backend now."""
        args = _params(params)
        want_probe = args.get("probe", False)
        if not isinstance(want_probe, bool):
            raise LspError('codectx/health takes {} or {"probe": true}')
        folder = next(iter(ls.workspaces.folders.values()), None)
        settings = folder.settings if folder is not None else ls.default_settings
        if want_probe:
            backend = await probe(ls, folder, settings)
        else:
            backend = ls.health.current(settings)
        return {"backend": backend.as_json(), "index": index_health(ls.workspaces.folders.values())}
