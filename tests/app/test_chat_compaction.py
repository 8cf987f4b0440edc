"""Compaction asks for its summary as the conversation's next user message, so its request begins
with the messages the earlier turn sent (the server's prefix cache serves them), and the turn after
it carries the summary. Real indexer, LanceDB and retriever; a loopback model server that announces
a 2,048-token window and records every request (tests/support/lsp_helpers.FixedBackend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codectx.app.chat import ChatService, TurnInput
from codectx.app.chat_model import mentions_in
from codectx.app.chat_prompt import SUMMARY_ASK, SUMMARY_LEAD, SUMMARY_SYSTEM
from codectx.app.chat_store import ChatStore
from codectx.app.cli import CommandIndex
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings
from tests.support.lsp_helpers import FixedBackend, make_repo

SUMMARY = "We discussed calc/ops.py and calc/report.py."
ANSWER = "The helpers scale and add values; report prints their summary. " * 4


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    from codectx.cli import main

    root = make_repo(tmp_path / "repo")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    return root


@pytest.fixture
def backend() -> Iterator[FixedBackend]:
    def chat(body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        return SUMMARY if last == SUMMARY_ASK or body["messages"][0]["content"] == SUMMARY_SYSTEM else ANSWER

    server = FixedBackend(chat=chat, max_model_len=2048).start()
    try:
        yield server
    finally:
        server.stop()


def chats(backend: FixedBackend) -> list[dict[str, Any]]:
    return [r["body"] for r in backend.requests if r["path"].endswith("/chat/completions")]


async def test_compaction_request_begins_with_the_messages_already_sent(
    repo: Path, backend: FixedBackend, tmp_path: Path
) -> None:
    settings = load_settings(repo, {"backend.url": backend.url, "backend.chat_max_tokens": 128})
    chat = ChatService(ChatStore(tmp_path / "chats"))
    cid = chat.start().conversation_id
    kinds: list[str] = []
    files = ["calc/ops.py", "calc/report.py", "README.md"] * 3
    async with WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None) as s:
        for i, name in enumerate(files):
            text = f"Turn {i}: explain @file:{name} in detail"
            await chat.send(
                s,
                cid,
                TurnInput(text, mentions=mentions_in(text)),
                on_notice=lambda k, _m, _t: kinds.append(k),
            )
    assert "compacted" in kinds, kinds
    sent = chats(backend)
    asks = [i for i, body in enumerate(sent) if body["messages"][-1]["content"] == SUMMARY_ASK]
    assert asks, "no summary was asked as a follow-up"
    assert not any(body["messages"][0]["content"] == SUMMARY_SYSTEM for body in sent)  # all fitted
    for i in asks:
        ask, before, after = sent[i]["messages"], sent[i - 1]["messages"], sent[i + 1]["messages"]
        # Everything before the ask is the start of the turn request before it, message for message.
        assert len(ask) >= 3 and ask[:-1] == before[: len(ask) - 1]
        # The turn that follows carries the summary after the same system prompt.
        assert after[0] == ask[0] and after[1]["content"] == SUMMARY_LEAD + SUMMARY
    turns = [b for b in sent if b["messages"][-1]["content"] != SUMMARY_ASK]
    assert len(turns) == len(files) and turns[-1]["messages"][-1]["content"].startswith("Turn 8:")
    # Each request's audit entry names the files whose lines its body carries: a summary ask sends
    # earlier turns' snippets again (red team 9, A01: its entry said `files: none`).
    import hashlib
    import json

    from codectx.settings import state_dir

    entries = [json.loads(line) for line in (state_dir() / "audit.jsonl").read_text().splitlines()]
    by_hash = {e["sha256"]: e for e in entries if e.get("kind") == "request"}
    raws = [r["raw"] for r in backend.requests if r["path"].endswith("/chat/completions")]
    for i in asks:
        carried = {name for name in files if f"{name}#L" in raws[i].decode()}
        entry = by_hash[hashlib.sha256(raws[i]).hexdigest()]
        assert carried and carried <= {src["path"] for src in entry["sources"]}, (carried, entry["sources"])
