"""The language server's own metrics: each request observed as it finishes, and the endpoint.

Off by default, and then free: nothing is imported or counted. With
`lsp.metrics_port` set (user config, editor settings or CODECTX_LSP_METRICS_PORT;
never a workspace's `.codectx.toml`) the server counts from start-up on and serves
codectx.backend.metrics on http://127.0.0.1:PORT/metrics; another address needs
`lsp.metrics_allow_remote = true` as well.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from codectx.errors import CodectxError

if TYPE_CHECKING:
    from codectx.lsp.history import RequestRecord
    from codectx.lsp.server import CodectxServer

log = logging.getLogger(__name__)


def breakers(ls: CodectxServer) -> Iterator[tuple[str, str]]:
    """(server URL, breaker state) of every folder whose completion client has connected."""
    for folder in list(ls.workspaces.folders.values()):
        state = folder.session.client.breaker_state() if folder.session is not None else None
        if state is not None and folder.settings.backend.url:
            yield folder.settings.backend.url, state


def register(server: CodectxServer) -> None:
    server.metrics = None
    server.metrics_endpoint = None


def start_endpoint(ls: CodectxServer) -> None:
    """Count and serve the metrics if the user asked for it; a refusal is told once, never fatal."""
    lsp = ls.default_settings.lsp
    if not lsp.metrics_port or ls.metrics_endpoint is not None:
        return
    from codectx.backend.metrics import Metrics, serve_metrics

    ls.metrics = Metrics()
    ls.metrics.watch_breakers(lambda: breakers(ls))
    try:
        ls.metrics_endpoint = serve_metrics(
            ls.metrics,
            str(lsp.metrics_host),
            int(lsp.metrics_port),
            allow_remote=bool(lsp.metrics_allow_remote),
        )
    except CodectxError as exc:
        ls.metrics = None
        ls.notices.once_ever(f"codectx metrics not served: {exc}")
        return
    log.info("codectx metrics at %s", ls.metrics_endpoint.url)


def stop_endpoint(ls: CodectxServer) -> None:
    endpoint, ls.metrics_endpoint = ls.metrics_endpoint, None
    if endpoint is not None:
        endpoint.close()


def started(ls: CodectxServer, kind: str) -> None:
    if ls.metrics is not None:
        ls.metrics.started(kind)


def finished(ls: CodectxServer, record: RequestRecord, error: BaseException | None = None) -> None:
    if ls.metrics is None:
        return
    from codectx.backend.metrics import observe_record

    try:
        observe_record(ls.metrics, record, error)
    except Exception:  # metrics must never fail a request
        log.exception("recording metrics failed")
