"""Chat against the real vLLM CPU engine (random weights: protocol, streaming and budgets, not
answer quality), through the loopback recorder (tests/support/recording_proxy.py) that keeps every byte.

The engine serves the generated tiny Qwen3-MoE model with a 1024-token window and prefix caching
(the cpu-dev profile), so a few turns already overflow it: the tests see the history carried from
turn to turn byte for byte (and the engine's prefix cache hit), compaction through a summary
request that still fits, `@file` included and cited exactly as sent, a never-send `@file` refused,
a stop that ends generation in the engine, and a conversation resumed after a restart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codectx.app.chat import ChatService, TurnInput
from codectx.app.chat_model import mentions_in
from codectx.app.chat_prompt import SUMMARY_ASK, SUMMARY_LEAD, SUMMARY_SYSTEM
from codectx.app.chat_store import ChatStore
from codectx.app.cli import CommandIndex
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings
from tests.support.lsp_helpers import make_repo, wait_for
from tests.support.recording_proxy import RecordingProxy
from tests.support.vllm_engine import Engine, vllm_model, vllm_server  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
SECRET = "do-not-send-this-token-value"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    from codectx.cli import main

    root = make_repo(tmp_path / "repo")
    (root / ".env").write_text(f"API_TOKEN={SECRET}\n", encoding="utf-8")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    return root


@pytest.fixture
def proxy(vllm_server: Engine) -> Iterator[RecordingProxy]:  # noqa: F811
    recorder = RecordingProxy(vllm_server.root).start()
    try:
        yield recorder
    finally:
        recorder.stop()


def session(repo: Path, url: str, **over: Any) -> WorkspaceSession:
    # The CPU engine on a loaded CI machine can take longer than the 3 s default to answer.
    settings = load_settings(repo, {"backend.url": url, "backend.first_byte_timeout_s": 120.0, **over})
    return WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)


def metric(engine: Engine, name: str) -> float:
    text = httpx.get(engine.root + "/metrics", timeout=10, trust_env=False).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


def ask(message: str, **kw: Any) -> TurnInput:
    return TurnInput(message, mentions=mentions_in(message), **kw)


async def test_history_carried_byte_for_byte_and_resumed_after_restart(
    repo: Path,
    proxy: RecordingProxy,
    vllm_server: Engine,  # noqa: F811
    tmp_path: Path,
) -> None:
    store = tmp_path / "chats"
    chat = ChatService(ChatStore(store))
    cid = chat.start().conversation_id
    small = {"retriever.chat_budget_tokens": 128, "backend.chat_max_tokens": 48}  # two turns fit the window
    async with session(repo, proxy.url, **small) as s:
        first = await chat.send(s, cid, ask("How does scale work?"))
    assert not first.turn.cancelled and first.turn.citations
    # A restart: a new service and session over the same saved conversation.
    chat = ChatService(ChatStore(store))
    assert [t.role for t in chat.get(cid).turns] == ["user", "assistant"]
    kinds: list[str] = []
    async with session(repo, proxy.url, **small) as s:
        hits = metric(vllm_server, "vllm:prefix_cache_hits_total")
        second = await chat.send(s, cid, ask("And add?"), on_notice=lambda k, _m, _t: kinds.append(k))
        after = metric(vllm_server, "vllm:prefix_cache_hits_total")
    assert not second.turn.cancelled and kinds == []
    one, two = proxy.chats()
    # The second request is the first one, then the first answer (as the model wrote it), then the new turn.
    assert two["messages"][: len(one["messages"])] == one["messages"]
    assert two["messages"][len(one["messages"])] == {"role": "assistant", "content": first.turn.text}
    assert two["messages"][-1]["content"].startswith("And add?")
    # The first turn's snippets are in the conversation already: not sent again.
    sent_before = {(c.path, c.start_line) for c in first.turn.citations}
    assert not sent_before & {(c.path, c.start_line) for c in second.turn.citations}
    assert after > hits  # the engine's prefix cache served the repeated history
    assert chat.get(cid).user_turns == 2


async def test_long_conversation_is_compacted_and_fits(
    repo: Path, proxy: RecordingProxy, tmp_path: Path
) -> None:
    chat = ChatService(ChatStore(tmp_path / "chats"))
    cid = chat.start().conversation_id
    kinds: list[str] = []
    files = ["calc/ops.py", "calc/report.py", "README.md", "calc/ops.py", "calc/report.py", "README.md"]
    async with session(repo, proxy.url) as s:
        for i, name in enumerate(files):
            result = await chat.send(
                s,
                cid,
                ask(f"Turn {i}: explain @file:{name} in detail"),
                on_notice=lambda kind, _m, _t: kinds.append(kind),
            )
            assert result.prompt_tokens + 256 <= 1024, result.prompt_tokens  # the answer's reserve kept
    assert "compacted" in kinds or "dropped" in kinds, kinds
    chats = proxy.chats()

    def is_summary(c: dict[str, Any]) -> bool:  # the follow-up form, or the transcript form
        return c["messages"][-1]["content"] == SUMMARY_ASK or c["messages"][0]["content"] == SUMMARY_SYSTEM

    assert any(is_summary(c) for c in chats), "no summary request was made"
    turns = [c for c in chats if not is_summary(c)]
    assert len(turns) == len(files)  # every turn was answered: each request fitted the window
    assert any(m["content"].startswith(SUMMARY_LEAD) for t in turns[1:] for m in t["messages"])
    assert turns[-1]["messages"][-1]["content"].startswith("Turn 5:")  # the last turn is never dropped


async def test_file_mention_cited_as_sent_and_never_send_refused(
    repo: Path, proxy: RecordingProxy, tmp_path: Path
) -> None:
    chat = ChatService(ChatStore(tmp_path / "chats"))
    cid = chat.start().conversation_id
    notices: list[tuple[str, str]] = []
    async with session(repo, proxy.url) as s:
        result = await chat.send(
            s,
            cid,
            ask("Summarise @file:calc/report.py and @file:.env please"),
            on_notice=lambda k, m, _t: notices.append((k, m)),
        )
    (sent,) = proxy.chats()
    last = sent["messages"][-1]["content"]
    cited = [(c.path, c.start_line, c.end_line) for c in result.turn.citations]
    assert ("calc/report.py", 0, 17) in cited, cited
    assert "def summary(values):" in last and "def main():" in last
    # Citations equal the items sent: the same spans, each labelled in the request, in order.
    items = [(i["path"], i["start_line"], i["end_line"]) for i in result.turn.record["items"]]
    assert items == cited
    labels = [f"{p}#L{a + 1}-L{b + 1}" for p, a, b in cited]
    assert [last.index(label) for label in labels] == sorted(last.index(label) for label in labels)
    assert any(k == "refused" and ".env" in m for k, m in notices)
    assert all(SECRET.encode() not in r.body for r in proxy.requests)


async def _answer_begun(chat: ChatService, s: WorkspaceSession) -> tuple[str, list[str], asyncio.Task]:
    """A new conversation's first turn, sent; returned once a delta arrived or the answer ended."""
    cid = chat.start().conversation_id
    seen: list[str] = []
    task = asyncio.ensure_future(
        chat.send(s, cid, ask("Explain everything"), on_delta=lambda _t, d: seen.append(d))
    )
    await wait_for(lambda: seen or task.done(), timeout=300)
    return cid, seen, task


async def test_stop_ends_generation_in_the_engine(
    repo: Path,
    vllm_server: Engine,  # noqa: F811
    tmp_path: Path,
) -> None:
    chat = ChatService(ChatStore(tmp_path / "chats"))
    async with session(repo, vllm_server.api_url) as s:
        # The test model's random weights can sample its end token (or one of the stop list's
        # special tokens, a sizeable share of its small vocabulary) within the first few: such an
        # answer is over before it can be stopped, so a new conversation tries again. Four tries
        # all ended early once in a fresh-clone run (stop 47); twelve make that vanishingly rare,
        # and an answer that ends early costs a fraction of a second.
        for _attempt in range(12):
            cid, seen, task = await _answer_begun(chat, s)
            if not task.done():
                break
            assert not (await task).turn.cancelled
        assert not task.done(), "every answer ended before it could be stopped"
        assert chat.cancel(cid) is True
        result = await task
        assert result.turn.cancelled and result.turn.text == "".join(seen)
        await wait_for(lambda: metric(vllm_server, "vllm:num_requests_running") == 0, timeout=30)
    assert chat.get(cid).turns[-1].cancelled
