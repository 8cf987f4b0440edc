"""The client's request bodies, headers, URLs and answer parsing (httpx.MockTransport), and the gate.

The send path is checked with the real privacy EgressGate where it matters:
what goes on the wire is the gate's redacted bytes, byte for byte.
"""

from __future__ import annotations

import base64
import json
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest
from codectx.backend.client import BackendClient, parse_metrics
from codectx.backend.errors import (
    BackendNotConfigured,
    BackendOffline,
    BackendProtocolError,
    BackendRejected,
)
from codectx.backend.transport import _ssl_context
from codectx.backend.wire import ServerURLs, retry_after

from codectx.privacy.egress import EgressGate, SourceSpan
from codectx.settings import load_settings
from tests.support.faultserver import RecordingGate
from tests.support.paths import REPO_ROOT

SECRET = (
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
)  # a GitHub token shape, split so no scanner flags this file


def settings(tmp_path: Path, **over: Any) -> Any:
    base: dict[str, Any] = {"backend.url": "http://model.test:8000/v1"}
    base.update(over)
    return load_settings(None, base, environ={}, user_config=tmp_path / "none.toml")


class Recorder:
    """A MockTransport handler that answers like vLLM and keeps every request."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "qwen-coder-test"}, {"id": "other"}]})
        if path == "/tokenize":
            return httpx.Response(200, json={"tokens": [1, 2, 3], "count": 3})
        if path == "/metrics":
            return httpx.Response(200, text=METRICS)
        if path == "/v1/chat/completions":
            return httpx.Response(
                200,
                json={
                    "id": "chat-1",
                    "model": "qwen-coder-test",
                    "choices": [{"message": {"content": "```py\nx = 1\n```"}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 4},
                },
            )
        body = json.loads(request.content)
        if body.get("stream"):
            events = [
                {
                    "id": "c",
                    "model": "qwen-coder-test",
                    "choices": [{"index": 0, "text": "ab", "finish_reason": None}],
                },
                {
                    "id": "c",
                    "model": "qwen-coder-test",
                    "choices": [{"index": 0, "text": "cd", "finish_reason": "length"}],
                },
                {
                    "id": "c",
                    "model": "qwen-coder-test",
                    "choices": [],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 2},
                },
            ]
            text = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
        return httpx.Response(
            200,
            json={
                "id": "c1",
                "model": "qwen-coder-test",
                "choices": [{"text": "return 1", "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
            },
        )


METRICS = """# HELP vllm:num_requests_running Number of requests
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
vllm:prefix_cache_hits_total{model_name="m"} 30.0
vllm:prefix_cache_queries_total{model_name="m"} 40.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 5.0
vllm:time_to_first_token_seconds_count{model_name="m"} 5.0
"""


def make(tmp_path: Path, gate: Any = None, **over: Any) -> tuple[BackendClient, Recorder]:
    rec = Recorder()
    client = BackendClient(settings(tmp_path, **over), gate=gate, http_transport=httpx.MockTransport(rec))
    return client, rec


def test_server_urls() -> None:
    assert ServerURLs.parse("http://h:8000/v1").url("/v1/completions") == "http://h:8000/v1/completions"
    assert ServerURLs.parse("http://h:8000/v1/").url("/tokenize") == "http://h:8000/tokenize"
    assert ServerURLs.parse("http://h:8000").url("/v1/models") == "http://h:8000/v1/models"
    assert ServerURLs.parse("https://h/proxy/v1").url("/metrics") == "https://h/proxy/metrics"
    with pytest.raises(BackendNotConfigured, match="not an http"):
        ServerURLs.parse("h:8000")
    with pytest.raises(BackendNotConfigured, match="CODECTX_BACKEND_URL"):
        ServerURLs.parse(None)


def test_not_configured_message_says_how(tmp_path: Path) -> None:
    client = BackendClient(settings(tmp_path, **{"backend.url": None}))
    with pytest.raises(BackendNotConfigured) as info:
        _ = client.transport
    message = str(info.value)
    for hint in (
        "config.toml",
        "CODECTX_BACKEND_URL=http://127.0.0.1:8000/v1",
        "--backend-url",
        "codectx backend serve --profile cpu-dev",
    ):
        assert hint in message


async def test_completion_body_headers_and_model_discovery(tmp_path: Path) -> None:
    gate = RecordingGate()
    client, rec = make(tmp_path, gate, **{"backend.api_key": "sk-test"})
    result = await client.complete(
        "<|fim_prefix|>x<|fim_suffix|><|fim_middle|>", stop=["<|endoftext|>"], max_tokens=5
    )
    assert result.text == "return 1" and result.usage.completion_tokens == 3
    assert result.audit_id == "audit-2" and result.finish_reason == "stop"
    models, post = rec.requests
    assert models.url.path == "/v1/models" and models.content == b""
    assert post.url == "http://model.test:8000/v1/completions"
    assert post.headers["authorization"] == "Bearer sk-test"
    assert post.headers["content-type"] == "application/json"
    body = json.loads(post.content)
    assert body["model"] == "qwen-coder-test"  # the first served model
    assert body["prompt"].startswith("<|fim_prefix|>") and "suffix" not in body
    assert body["stop"] == ["<|endoftext|>"] and body["max_tokens"] == 5 and body["stream"] is False
    # The GET carries the key, so it is logged too (a metadata entry, written before it is sent).
    assert gate.records == [
        ("http://model.test:8000/v1/models", True, "200"),
        ("http://model.test:8000/v1/completions", True, "200"),
    ]
    assert [p.endpoint for p in gate.intents] == [r[0] for r in gate.records]
    await client.complete("y")
    assert [r.url.path for r in rec.requests].count("/v1/models") == 1  # asked once
    await client.aclose()


async def test_sent_bytes_are_the_gates_bytes(tmp_path: Path) -> None:
    gate = RecordingGate()
    client, rec = make(tmp_path, gate, **{"backend.model": "m"})
    await client.complete("token = 'SECRET'")
    sent = rec.requests[-1].content
    assert sent == gate.prepared[-1].content
    assert b"SECRET" not in sent and b"[REDACTED]" in sent
    await client.aclose()


async def test_real_egress_gate_redacts_and_audits(tmp_path: Path) -> None:
    s = settings(tmp_path, **{"backend.model": "m"})
    rec = Recorder()
    gate = EgressGate(s)
    client = BackendClient(s, gate=gate, http_transport=httpx.MockTransport(rec))
    await client.complete(f'GITHUB_TOKEN = "{SECRET}"\n', sources=[SourceSpan("app.py", 0, 0)])
    sent = rec.requests[-1].content
    assert SECRET.encode() not in sent
    raw = [json.loads(line) for line in gate.audit.path.read_text().splitlines() if line.strip()]
    # Written before the send (kind request), then the outcome of the attempt.
    assert [e["kind"] for e in raw] == ["request", "outcome"] and raw[1]["request"] == raw[0]["id"]
    entries = gate.audit.requests()
    assert entries[-1]["sent"] is True and entries[-1]["status"] == "200"
    assert entries[-1]["bytes"] == len(sent)
    await client.aclose()


async def test_no_token_of_api_key_when_unset(tmp_path: Path) -> None:
    client, rec = make(tmp_path, RecordingGate(), **{"backend.model": "m"})
    await client.complete("x")
    assert "authorization" not in rec.requests[-1].headers
    await client.aclose()


async def test_stream_deltas_usage_and_finish(tmp_path: Path) -> None:
    client, rec = make(tmp_path, RecordingGate(), **{"backend.model": "m"})
    got = []
    async with client.stream_complete("p", max_tokens=2) as stream:
        async for delta in stream:
            got.append(delta)
    assert got == ["ab", "cd"] and stream.text == "abcd"
    assert stream.finish_reason == "length"
    assert stream.usage is not None and stream.usage.completion_tokens == 2
    assert stream.ttft_s is not None and stream.audit_id == "audit-1"
    body = json.loads(rec.requests[-1].content)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    await client.aclose()


async def test_chat_tokenize_and_metrics(tmp_path: Path) -> None:
    client, rec = make(tmp_path, RecordingGate(), **{"backend.model": "m"})
    answer = await client.chat([{"role": "user", "content": "refactor"}])
    assert answer.text == "```py\nx = 1\n```"
    assert rec.requests[-1].url.path == "/v1/chat/completions"
    assert await client.tokenize("abc") == [1, 2, 3]
    assert rec.requests[-1].url == "http://model.test:8000/tokenize"  # server root, not /v1
    metrics = parse_metrics(await client.metrics_text())
    assert rec.requests[-1].url == "http://model.test:8000/metrics"
    assert metrics["vllm:num_requests_running"] == 2.0
    assert metrics["vllm:prefix_cache_hits_total"] / metrics["vllm:prefix_cache_queries_total"] == 0.75
    assert "vllm:time_to_first_token_seconds_bucket" not in metrics
    await client.aclose()


async def test_offline_builds_records_and_never_sends(tmp_path: Path) -> None:
    gate = RecordingGate(offline=True)
    client, rec = make(tmp_path, gate, **{"backend.model": "m"})
    with pytest.raises(BackendOffline) as info:
        await client.complete("x = SECRET")
    assert rec.requests == []
    assert gate.records == [("http://model.test:8000/v1/completions", False, "offline")]
    assert b"[REDACTED]" in info.value.body
    await client.aclose()


async def test_dry_run_without_server(tmp_path: Path) -> None:
    gate = RecordingGate()
    client = BackendClient(settings(tmp_path, **{"backend.url": None}), gate=gate)
    prepared, audit_id = client.dry_run("/v1/completions", {"prompt": "SECRET"})
    assert prepared.content == b'{"prompt": "[REDACTED]"}'
    assert gate.records == [("<backend.url>/v1/completions", False, "dry-run")] and audit_id == "audit-1"


async def test_rejected_and_protocol_errors(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list"})
        return httpx.Response(401, json={"error": {"message": "bad key"}})

    client = BackendClient(
        settings(tmp_path), gate=RecordingGate(), http_transport=httpx.MockTransport(handler)
    )
    with pytest.raises(BackendProtocolError, match="model list"):
        await client.models()
    with pytest.raises(BackendRejected, match="CODECTX_API_KEY") as info:
        await client.complete("x", model="m")
    assert info.value.status == 401 and info.value.server_message == "bad key"
    await client.aclose()


def test_tls_verification_is_on_by_default(tmp_path: Path) -> None:
    ctx = _ssl_context(settings(tmp_path))
    assert isinstance(ctx, ssl.SSLContext) and ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert _ssl_context(settings(tmp_path, **{"backend.verify_tls": False})) is False
    with pytest.raises(BackendNotConfigured, match="ca_bundle"):
        _ssl_context(settings(tmp_path, **{"backend.ca_bundle": str(tmp_path / "missing.pem")}))


def test_retry_after_parsing() -> None:
    assert retry_after("3", 0) == 3.0
    assert retry_after(None, 0) is None
    assert retry_after("garbage", 0) is None
    assert retry_after("Wed, 21 Oct 2015 07:28:10 GMT", 1445412480.0) == pytest.approx(10.0)


def test_only_transport_imports_httpx() -> None:
    root = REPO_ROOT
    offenders = []
    for folder in ("codectx", "indexer", "retriever", "backend", "lsp"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if ("import httpx" in text or "from httpx" in text) and path.name != "transport.py":
                offenders.append(str(path.relative_to(root)))
    assert offenders == [], f"only backend/transport.py may open connections: {offenders}"


async def test_model_is_rediscovered_after_a_404(tmp_path: Path) -> None:
    served = ["old-model"]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": served[0]}]})
        model = json.loads(request.content)["model"]
        if model != served[0]:
            return httpx.Response(404, json={"message": f"The model `{model}` does not exist."})
        return httpx.Response(
            200, json={"model": model, "choices": [{"text": "ok", "finish_reason": "stop"}]}
        )

    client = BackendClient(
        settings(tmp_path), gate=RecordingGate(), http_transport=httpx.MockTransport(handler)
    )
    assert (await client.complete("x")).text == "ok"
    served[0] = "new-model"  # the operator restarted the server with another model
    with pytest.raises(BackendRejected, match="does not exist"):
        await client.complete("x")
    assert (await client.complete("x")).model == "new-model"
    await client.aclose()


async def test_oversized_answer_is_a_protocol_error(tmp_path: Path) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * (33 * 2**20))

    client = BackendClient(
        settings(tmp_path), gate=RecordingGate(), http_transport=httpx.MockTransport(handler)
    )
    with pytest.raises(BackendProtocolError, match="larger than 32 MiB"):
        await client.complete("x", model="m")
    await client.aclose()


async def test_every_get_is_logged_and_a_urls_password_goes_as_basic_auth(tmp_path: Path) -> None:
    """Red team 12 (F2-F4): a GET without an API key had no audit entry, and a `user:password@` in
    backend.url was sent by httpx as Basic auth while the audit entry, errors and messages quoted
    the URL, password and all."""
    gate = RecordingGate()
    client, rec = make(tmp_path, gate, **{"backend.url": "http://ops:Pa%24%24w0rdQ7@model.test:8000/v1"})
    await client.complete("x")
    models, post = rec.requests
    assert models.url.path == "/v1/models" and "ops" not in str(models.url)
    expected = "Basic " + base64.b64encode(b"ops:Pa$$w0rdQ7").decode()
    assert models.headers["authorization"] == expected and post.headers["authorization"] == expected
    assert [r[0] for r in gate.records] == [
        "http://model.test:8000/v1/models",
        "http://model.test:8000/v1/completions",
    ]
    assert [p.endpoint for p in gate.intents] == [r[0] for r in gate.records]
    await client.aclose()
    # Without any credentials the GET is logged too: every byte that leaves is.
    gate = RecordingGate()
    client, rec = make(tmp_path, gate)
    await client.complete("x")
    assert gate.records[0][0] == "http://model.test:8000/v1/models"
    await client.aclose()
