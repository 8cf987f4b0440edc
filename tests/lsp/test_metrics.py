"""codectx's own metrics: the language server's /metrics, scraped and parsed with prometheus-client.

The server is the real `codectx lsp` process; the model server is the loopback
FixedBackend here (fault injection: superseded, cancelled, dead), and the real vLLM
CPU engine in the slow test at the end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from codectx.backend.metrics import Metrics, serve_metrics
from lsprotocol import types
from prometheus_client.parser import text_string_to_metric_families
from pygls.exceptions import JsonRpcException

from codectx.errors import ConfigError
from codectx.settings import load_settings
from tests.support.lsp_helpers import FixedBackend, lsp_session, open_doc, wait_for
from tests.support.vllm_engine import Engine, free_port, vllm_model, vllm_server  # noqa: F401

CURSOR = types.Position(line=16, character=4)


def options(url: str, **lsp: object) -> dict:
    return {
        "codectx": {
            "backend": {"url": url, "breaker_interval_s": 30.0},
            "index": {"embed": False},
            "lsp": {"index_on_open": False, "debounce_ms": 0, **lsp},
        }
    }


def params(uri: str, pos: types.Position = CURSOR) -> types.CompletionParams:
    return types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=pos)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} from the server's /metrics, via the library's parser."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10, trust_env=False).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


async def test_outcomes_bytes_redactions_and_breaker(tmp_path: Path, repo: Path) -> None:
    slow = FixedBackend(first_token_delay_s=1.0).start()
    port = free_port()
    try:
        async with lsp_session(tmp_path, repo, options(slow.url, metrics_port=port)) as lsp:
            path = repo / "calc" / "report.py"
            secret = '    token = "ghp_' + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + '"\n'
            uri = open_doc(lsp, path, path.read_text().replace("    left = 1\n", "    left = 1\n" + secret))
            at = types.Position(line=17, character=4)
            before = scrape(port)  # served from start-up on, every series at zero
            assert value(before, "codectx_requests_total", kind="completion", status="ok") == 0

            ok = await lsp.text_document_completion_async(params(uri, at))
            shown = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="codectx.showContext", arguments=[{"requestId": ok.items[0].data["requestId"]}]
                )
            )
            after_ok = scrape(port)
            assert value(after_ok, "codectx_requests_total", kind="completion", status="ok") == 1
            assert value(after_ok, "codectx_bytes_sent_total", kind="completion") == len(
                shown["payload"].encode("utf-8")
            )
            rules = [r["rule"] for r in shown["redactions"]]
            assert rules and value(after_ok, "codectx_redactions_total", rule=rules[0]) == rules.count(
                rules[0]
            )
            assert value(after_ok, "codectx_backend_ttft_seconds_count", kind="completion") == 1
            assert value(after_ok, "codectx_context_seconds_count", kind="completion") == 1
            assert value(after_ok, "codectx_backend_circuit_state", state="closed") == 1

            # A newer keystroke supersedes the pending request; $/cancelRequest cancels one.
            first = asyncio.ensure_future(lsp.text_document_completion_async(params(uri, at)))
            await wait_for(lambda: len(slow.completions()) >= 2, timeout=10)
            during = scrape(port)
            assert value(during, "codectx_requests_in_flight", kind="completion") == 1
            second = asyncio.ensure_future(lsp.text_document_completion_async(params(uri, at)))
            await asyncio.gather(first, second)
            third = asyncio.ensure_future(
                lsp.protocol.send_request_async(types.TEXT_DOCUMENT_COMPLETION, params(uri, at), msg_id="c1")
            )
            await wait_for(lambda: len(slow.completions()) >= 4, timeout=10)
            lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="c1"))
            with pytest.raises(JsonRpcException):
                await asyncio.wait_for(third, timeout=10)

            def cancelled_counted() -> dict | None:
                got = scrape(port)
                return got if value(got, "codectx_requests_total", status="cancelled") else None

            done = await wait_for(cancelled_counted, timeout=10)
            assert value(done, "codectx_requests_total", kind="completion", status="superseded") == 1
            assert value(done, "codectx_requests_total", kind="completion", status="ok") == 2
            assert value(done, "codectx_requests_in_flight") == 0
    finally:
        slow.stop()


async def test_dead_backend_counts_errors_by_class_and_opens_the_circuit(tmp_path: Path, repo: Path) -> None:
    dead = FixedBackend().start()
    url = dead.url
    dead.stop()
    port = free_port()
    async with lsp_session(tmp_path, repo, options(url, metrics_port=port)) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        for _ in range(3):
            assert list((await lsp.text_document_completion_async(params(uri))).items) == []
        got = scrape(port)
    assert value(got, "codectx_requests_total", kind="completion", status="error") == 3
    # The start-up's questions to the server (or, on a machine slow enough for the breaker's
    # interval to pass, the first completion) found it down; the breaker failed the others fast.
    down = value(got, "codectx_errors_total", kind="completion", error="BackendUnavailable")
    fast = value(got, "codectx_errors_total", kind="completion", error="BackendCircuitOpen")
    assert down + fast == 3 and fast >= 2
    assert value(got, "codectx_bytes_sent_total") == 0  # nothing left the machine
    assert value(got, "codectx_backend_circuit_state", state="open") == 1


async def test_a_non_loopback_address_is_refused_and_said(
    tmp_path: Path, repo: Path, backend: FixedBackend
) -> None:
    port = free_port()
    async with lsp_session(
        tmp_path, repo, options(backend.url, metrics_port=port, metrics_host="0.0.0.0")
    ) as lsp:
        await wait_for(lambda: lsp.messages, timeout=10)
        assert "metrics_allow_remote" in lsp.messages[0].message
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5, trust_env=False)


def test_off_by_default_and_a_workspace_cannot_turn_it_on(tmp_path: Path) -> None:
    assert load_settings(None).lsp.metrics_port == 0
    (tmp_path / ".codectx.toml").write_text('[lsp]\nmetrics_port = 9464\nmetrics_host = "0.0.0.0"\n')
    settings = load_settings(tmp_path)
    assert settings.lsp.metrics_port == 0 and settings.lsp.metrics_host == "127.0.0.1"


def test_serve_metrics_refuses_remote_without_the_setting() -> None:
    metrics = Metrics()
    with pytest.raises(ConfigError, match="metrics_allow_remote"):
        serve_metrics(metrics, "0.0.0.0", 0)
    for host in ("127.0.0.1", "localhost", "::1"):
        endpoint = serve_metrics(metrics, host, 0)
        try:
            assert "codectx_requests_total" in httpx.get(endpoint.url, timeout=5, trust_env=False).text
        finally:
            endpoint.close()
    endpoint = serve_metrics(metrics, "0.0.0.0", 0, allow_remote=True)
    endpoint.close()


@pytest.mark.slow
@pytest.mark.vllm
async def test_scraped_during_a_real_completion(tmp_path: Path, repo: Path, vllm_server: Engine) -> None:  # noqa: F811
    port = free_port()
    opts = options(vllm_server.api_url, metrics_port=port)
    opts["codectx"]["backend"]["max_tokens"] = 16
    # Greedy: sampled at the default temperature, the random-weight model's first token is now
    # and then a stop token, and an answer with no token has no time to first token.
    opts["codectx"]["backend"]["temperature"] = 0.0
    async with lsp_session(tmp_path, repo, opts) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        request = asyncio.ensure_future(lsp.text_document_completion_async(params(uri)))
        scrapes = []
        while not request.done():  # scraped and parsed while the completion runs
            scrapes.append(await asyncio.to_thread(scrape, port))
            await asyncio.sleep(0.02)
        await request
        final = scrape(port)
    assert scrapes, "the completion finished before the first scrape"
    answered = value(final, "codectx_requests_total", kind="completion", status="ok") + value(
        final, "codectx_requests_total", kind="completion", status="empty"
    )
    assert answered == 1
    assert value(final, "codectx_requests_total", kind="completion", status="ok") == 1
    assert value(final, "codectx_backend_ttft_seconds_count", kind="completion") == 1
    assert value(final, "codectx_backend_ttft_seconds_sum", kind="completion") > 0
    assert value(final, "codectx_bytes_sent_total", kind="completion") > 0
    assert value(final, "codectx_backend_circuit_state", url=vllm_server.root, state="closed") == 1
    assert all(value(s, "codectx_requests_in_flight", kind="completion") <= 1 for s in scrapes)


async def test_a_request_over_budget_counts_as_timeout_with_the_bytes_it_sent(
    tmp_path: Path, repo: Path
) -> None:
    stalled = FixedBackend(first_token_delay_s=8.0).start()
    port = free_port()
    try:
        async with lsp_session(
            tmp_path, repo, options(stalled.url, metrics_port=port, request_budget_ms=500)
        ) as lsp:
            uri = open_doc(lsp, repo / "calc" / "report.py")
            assert list((await lsp.text_document_completion_async(params(uri))).items) == []

            def counted() -> dict | None:
                got = scrape(port)
                return got if value(got, "codectx_requests_total", status="timeout") else None

            got = await wait_for(counted, timeout=30)
            # Counted once the cancelled request had unwound: its bytes are the body it handed to the
            # connection, as the audit log records it (none if the budget ran out before the send).
            shown = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.showContext")
            )
            sent = len(shown["payload"].encode("utf-8"))
            assert value(got, "codectx_bytes_sent_total", kind="completion") == sent
            assert value(got, "codectx_requests_in_flight") == 0
    finally:
        stalled.stop()


async def test_refactor_requests_are_counted_by_kind(
    tmp_path: Path, repo: Path, backend: FixedBackend
) -> None:
    port = free_port()
    async with lsp_session(tmp_path, repo, options(backend.url, metrics_port=port)) as lsp:
        uri = open_doc(lsp, repo / "calc" / "ops.py")
        args = {
            "uri": uri,
            "range": {"start": {"line": 3, "character": 0}, "end": {"line": 6, "character": 0}},
            "instruction": "annotate the types",
        }
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.refactor", arguments=[args])
        )
        got = scrape(port)
    sent = [r for r in backend.requests if r["path"].endswith("/chat/completions")]
    assert value(got, "codectx_requests_total", kind="refactor", status="ok") == 1
    assert value(got, "codectx_requests_total", kind="completion") == 0
    assert value(got, "codectx_bytes_sent_total", kind="refactor") == sum(len(r["raw"]) for r in sent)
    assert value(got, "codectx_requests_in_flight", kind="refactor") == 0
