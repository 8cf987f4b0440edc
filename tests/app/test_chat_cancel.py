"""A chat turn whose caller is cancelled before the answer starts (the language server's
`$/cancelRequest` cancels the handler's task): the caller still gets a result with `cancelled`, the
conversation keeps the stopped turn, and no chat request reaches the model server.

The model server is the loopback fault server, its `/v1/models` answer held until the test lets it
go, so "before the answer starts" is a state the test waits for, not a moment it guesses."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from codectx.backend.client import BackendClient

from codectx.app.chat import ChatService
from codectx.app.chat_context import TurnInput
from codectx.app.chat_store import ChatStore
from codectx.app.cli import NoIndexSource
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings
from tests.support import faultserver as fs


def held(inner: fs.Behaviour, release: threading.Event) -> fs.Behaviour:
    async def run(conn: fs.Conn) -> None:
        while not release.is_set():  # polls, not a time limit: the test releases it
            await asyncio.sleep(0.01)
        await inner(conn)

    return run


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave the server's handler waiting


async def test_cancelled_caller_before_the_answer_gets_a_cancelled_result(
    tmp_path: Path, release: threading.Event
) -> None:
    server = fs.FaultServer().start()
    try:
        server.routes["/v1/models"] = held(fs.models("m", max_model_len=4096), release)
        server.routes["/tokenize"] = fs.tokenize()
        server.default = fs.sse(["It adds.", " Both."], chat=True)
        (tmp_path / "ws").mkdir()
        settings = load_settings(
            tmp_path / "ws", {"backend.url": server.url}, environ={}, user_config=tmp_path / "none.toml"
        )
        chat = ChatService(ChatStore(tmp_path / "chats"))
        cid = chat.start().conversation_id
        async with BackendClient(settings) as client:
            session = WorkspaceSession(settings, index=NoIndexSource(), embedder=lambda: None, client=client)
            task = asyncio.ensure_future(chat.send(session, cid, TurnInput("what does add do?")))
            for _ in range(3000):  # polls, not a time limit
                if any(r.path == "/v1/models" for r in server.requests):
                    break
                await asyncio.sleep(0.01)
            else:
                pytest.fail("the turn never asked the server for its model")
            task.cancel()  # what pygls does on $/cancelRequest
            await asyncio.sleep(0)
            release.set()
            result = await task  # a result, not CancelledError
            assert result.turn.cancelled and result.turn.text == ""
            assert not any(r.path == "/v1/chat/completions" for r in server.requests)
            assert chat.get(cid).turns[-1].cancelled
            # The conversation is free again; the next turn is answered.
            again = await chat.send(session, cid, TurnInput("and then?"))
        assert again.turn.text == "It adds. Both." and not again.turn.cancelled
        assert sum(r.path == "/v1/chat/completions" for r in server.requests) == 1
    finally:
        server.stop()
