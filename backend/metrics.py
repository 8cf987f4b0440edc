"""codectx's own Prometheus metrics: what each editor request cost, seen from the editor's side.

One `Metrics` object per process holds its own registry (never the global
one, so tests and two servers in one process do not mix). Entry points feed it
finished requests (`observe`) and tell it where the circuit breakers are
(`watch_breakers`); `serve_metrics` exposes it over HTTP, on loopback only
unless the operator explicitly allows another address. Nothing here reads or
records code: label values are request kinds, outcomes, rule names, error class
names and the server's scheme://host:port.

Families (all prefixed `codectx_`):
  requests_total{kind,status}        status: ok, empty, superseded, cancelled, timeout, error
  requests_in_flight{kind}
  context_seconds{kind}              context assembly (retrieval, ranking, packing)
  backend_ttft_seconds{kind}         request sent -> first token
  backend_seconds{kind}              request sent -> stream closed
  request_seconds{kind}              the whole request as the editor saw it
  redactions_total{rule}             secrets replaced before sending
  bytes_sent_total{kind}             request bodies handed to the connection (as the audit log
                                     records them: cancelled ones too, failed connects not)
  errors_total{kind,error}           failed requests by exception class
  backend_circuit_state{url,state}   1 for the breaker's current state (closed, open, half-open)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from codectx.errors import ConfigError

SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BREAKER_STATES = ("closed", "open", "half-open")
KINDS = ("completion", "inline", "refactor", "explain")
STATUSES = ("ok", "empty", "superseded", "cancelled", "timeout", "error")

BreakerSource = Callable[[], Iterable[tuple[str, str]]]  # -> (server URL, breaker state)


def server_label(url: str) -> str:
    """scheme://host:port of a server URL: no path, no user:password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


class _Breakers(Collector):
    """Reads the breakers' states at scrape time (they change between requests too)."""

    def __init__(self) -> None:
        self.sources: list[BreakerSource] = []

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "codectx_backend_circuit_state",
            "Circuit breaker of each model server: 1 for its current state",
            labels=["url", "state"],
        )
        seen: dict[str, str] = {}
        for source in self.sources:
            for url, state in source():
                seen[server_label(url)] = state
        for url, state in sorted(seen.items()):
            for name in BREAKER_STATES:
                family.add_metric([url, name], 1.0 if state == name else 0.0)
        yield family


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "codectx_requests", "Editor requests by outcome", ["kind", "status"], registry=r
        )
        self.in_flight = Gauge("codectx_requests_in_flight", "Requests being answered", ["kind"], registry=r)
        self.context = Histogram(
            "codectx_context_seconds", "Context assembly time", ["kind"], buckets=SECONDS, registry=r
        )
        self.ttft = Histogram(
            "codectx_backend_ttft_seconds",
            "Time from sending a request to its first token",
            ["kind"],
            buckets=SECONDS,
            registry=r,
        )
        self.backend = Histogram(
            "codectx_backend_seconds",
            "Time from sending a request to the end of its answer",
            ["kind"],
            buckets=SECONDS,
            registry=r,
        )
        self.total = Histogram(
            "codectx_request_seconds",
            "Whole request as the editor saw it",
            ["kind"],
            buckets=SECONDS,
            registry=r,
        )
        self.redactions = Counter(
            "codectx_redactions", "Secrets redacted before sending, by rule", ["rule"], registry=r
        )
        self.bytes_sent = Counter(
            "codectx_bytes_sent", "Request body bytes sent to the model server", ["kind"], registry=r
        )
        self.errors = Counter(
            "codectx_errors", "Failed requests by error class", ["kind", "error"], registry=r
        )
        self._breakers = _Breakers()
        r.register(self._breakers)
        # Zero series for every kind and outcome, so rates exist before the first request.
        for kind in KINDS:
            for status in STATUSES:
                self.requests.labels(kind, status)
            self.in_flight.labels(kind)

    def watch_breakers(self, source: BreakerSource) -> None:
        self._breakers.sources.append(source)

    def started(self, kind: str) -> None:
        self.in_flight.labels(kind).inc()

    def observe(
        self,
        kind: str,
        status: str,
        timings_ms: Mapping[str, float],
        *,
        redactions: Sequence[Mapping[str, Any]] = (),
        bytes_sent: int = 0,
        error: BaseException | None = None,
    ) -> None:
        """One finished request. `timings_ms`: context_ms, ttft_ms, backend_total_ms, total_ms."""
        self.in_flight.labels(kind).dec()
        self.requests.labels(kind, status).inc()
        for key, histogram in (
            ("context_ms", self.context),
            ("ttft_ms", self.ttft),
            ("backend_total_ms", self.backend),
            ("total_ms", self.total),
        ):
            value = timings_ms.get(key)
            if value:  # 0 or absent: that phase did not happen (superseded before it)
                histogram.labels(kind).observe(value / 1000)
        for finding in redactions:
            self.redactions.labels(str(finding.get("rule") or "unknown")).inc()
        if bytes_sent:
            self.bytes_sent.labels(kind).inc(bytes_sent)
        if error is not None:
            self.errors.labels(kind, type(error).__name__).inc()


def observe_record(metrics: Metrics, record: Any, error: BaseException | None = None) -> None:
    """Feed a finished codectx.lsp.history.RequestRecord (or anything shaped like one)."""
    payload = getattr(record, "payload", "") or ""
    sent = bool(payload) and (record.status != "error" or _reached_server(error))
    metrics.observe(
        record.kind,
        record.status,
        dict(getattr(record, "timings", {}) or {}),
        redactions=list(getattr(record, "redactions", ()) or ()) if sent else [],
        bytes_sent=len(payload.encode("utf-8")) if sent else 0,
        error=error if record.status == "error" else None,
    )


def _reached_server(error: BaseException | None) -> bool:
    """Whether a failed request's body left the machine (the server answered, or timed out on it)."""
    if error is None:
        return False
    if getattr(error, "status", None) is not None or type(error).__name__ == "BackendProtocolError":
        return True
    return getattr(error, "phase", "connect") != "connect"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class MetricsEndpoint:
    url: str
    _server: Any

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def serve_metrics(metrics: Metrics, host: str, port: int, *, allow_remote: bool = False) -> MetricsEndpoint:
    """Serve /metrics on host:port in a daemon thread (port 0: any free one)."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"lsp.metrics_host '{host}' is not a loopback address: codectx's metrics stay on this "
            "machine unless you also set lsp.metrics_allow_remote = true (user config only)"
        )
    from prometheus_client import start_http_server  # the HTTP server's imports only when serving

    try:
        server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    bound = server.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    return MetricsEndpoint(f"http://{shown}:{bound}/metrics", server)
