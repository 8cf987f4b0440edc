"""The language server against the real vLLM CPU engine: a completion, and the typing-burst load test.

The engine (tests/support/vllm_engine.py) serves the generated tiny Qwen3-MoE model:
its words are noise, but the protocol, streaming, cancellation and timings
are real.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import psutil
import pytest
from lsprotocol import types

from tests.support.lsp_helpers import lsp_session, make_repo, open_doc, plain, progress_events, wait_for
from tests.support.vllm_engine import Engine, vllm_model, vllm_server  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

CURSOR = types.Position(line=16, character=4)


def options(url: str, **lsp: object) -> dict:
    return {
        "codectx": {
            # The CPU engine on a loaded CI machine can take longer than the 3 s default to answer.
            "backend": {"url": url, "max_tokens": 16, "first_byte_timeout_s": 120.0},
            "lsp": {"debounce_ms": 0, **lsp},
        }
    }


def running(engine: Engine) -> float:
    text = httpx.get(engine.root + "/metrics", timeout=10, trust_env=False).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith("vllm:num_requests_running"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def params(uri: str) -> types.CompletionParams:
    return types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=CURSOR)


async def test_completion_through_real_engine(tmp_path: Path, vllm_server: Engine) -> None:  # noqa: F811
    repo = make_repo(tmp_path / "repo")
    opts = options(vllm_server.api_url, index_on_open=False)
    opts["codectx"]["index"] = {"embed": False}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        result = await lsp.text_document_completion_async(params(uri))
        shown = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.showContext")
        )
        assert shown["status"] in ("ok", "empty"), shown
        assert "<|fim_prefix|>" in shown["payload"] and "right = 2" in shown["payload"]
        assert shown["timings"]["backend_total_ms"] > 0  # the request went through the engine
        if shown["status"] == "ok":  # random weights may end the text at once: no first token then
            assert shown["timings"]["ttft_ms"] > 0
        for item in result.items:  # random weights: the text may be empty after post-processing
            assert item.data["source"] == "codectx"
            assert item.text_edit.range.end == CURSOR
        assert not [m for m in lsp.messages if "suggestion" in m.message]
        # The completion left its verdict behind; an explicit probe asks the engine again.
        known = plain(await lsp.protocol.send_request_async("codectx/health", {}))["backend"]
        assert known["state"] == "ok" and known["model"] == vllm_server.model_name
        probed = plain(await lsp.protocol.send_request_async("codectx/health", {"probe": True}))["backend"]
        assert probed["state"] == "ok", probed
        assert probed["model"] == vllm_server.model_name
        assert probed["endpoint"] == vllm_server.api_url
        assert probed["latency_ms"] > 0 and probed["checked_at"] >= known["checked_at"]


async def test_typing_burst_load(tmp_path: Path, vllm_server: Engine) -> None:  # noqa: F811
    """50 requests 30 ms apart: the last is answered, the rest superseded, search answers mid-burst,
    RSS stays flat. (How fast search answers under load is bench/bench_lsp.py's business: no
    wall-clock assertion here.)"""
    repo = make_repo(tmp_path / "repo")
    async with lsp_session(tmp_path, repo, options(vllm_server.api_url, request_budget_ms=20000)) as lsp:
        await wait_for(
            lambda: any(isinstance(v, types.WorkDoneProgressEnd) for v in progress_events(lsp)), timeout=300
        )
        server = psutil.Process(lsp._server.pid)
        uri = open_doc(lsp, repo / "calc" / "report.py")
        await lsp.text_document_completion_async(params(uri))  # warm path

        async def burst() -> tuple[list, list]:
            futures = []
            found: list = []
            for i in range(50):
                futures.append(asyncio.ensure_future(lsp.text_document_completion_async(params(uri))))
                if i == 25:  # a search in the middle of the burst is answered, not queued behind it
                    found.append(
                        await lsp.protocol.send_request_async(
                            "codectx/search", {"query": "scale values", "k": 5}
                        )
                    )
                await asyncio.sleep(0.03)
            return await asyncio.wait_for(asyncio.gather(*futures), timeout=120), found

        async def statuses(first: int) -> list[str]:
            out = []
            for n in range(first, first + 50):
                shown = await lsp.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="codectx.showContext", arguments=[{"requestId": f"completion-{n}"}]
                    )
                )
                out.append(shown["status"])
            return out

        rss_before = server.memory_info().rss
        results, searched = await burst()
        first = await statuses(2)
        rss_after_one = server.memory_info().rss
        results2, searched2 = await burst()
        second = await statuses(52)
        rss_after_two = server.memory_info().rss

        for batch, batch_statuses in ((results, first), (results2, second)):
            assert batch_statuses[-1] in ("ok", "empty"), batch_statuses  # the last one is answered
            # Each newer keystroke supersedes the request before it. A request the engine finishes
            # within the 30 ms before the next keystroke legitimately completes first, and how many
            # do depends on the machine's speed (29 of 49 in one CI run, once codectx's modules were
            # compiled), so the count is no assertion: some are superseded, none fails.
            superseded = [s in ("superseded", "cancelled") for s in batch_statuses[:-1]]
            assert any(superseded), batch_statuses
            allowed = ("superseded", "cancelled", "ok", "empty")
            assert all(s in allowed for s in batch_statuses), batch_statuses
            assert all(list(r.items) == [] for r, gone in zip(batch[:-1], superseded, strict=True) if gone)
        # The engine is not left generating for abandoned requests.
        await wait_for(lambda: running(vllm_server) == 0, timeout=30, interval=0.2)
        for answer in searched + searched2:
            hits = plain(answer)["results"]
            assert any(h["symbol"] == "scale" for h in hits), hits
        print(
            f"\nload: RSS {rss_before / 2**20:.0f} -> {rss_after_one / 2**20:.0f} -> "
            f"{rss_after_two / 2**20:.0f} MiB"
        )
        # Flat: the second identical burst adds (almost) nothing.
        assert rss_after_two - rss_after_one < 40 * 2**20
