"""Chat leaks no planted secret: every planted file asked about through the chat service.

The planted repository (tests/fixtures/planted, see tests/privacy/test_channels.py) is indexed for
real; the loopback capture server keeps every request's bytes, and its chat answers echo the code
they were given (placeholders included). For every file with a planted secret, one conversation
asks about it with the file open at the secret's line, mentions it (`@file`), names its symbols,
and sends diagnostics quoting the secret's line and the secret alone (`@problems`); a second turn
resends the first.
No 12-character window of any secret may reach the server; never-send files are refused by path,
and the answers the user sees have every placeholder put back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codectx.app.chat import ChatService, TurnInput
from codectx.app.chat_model import mentions_in
from codectx.app.chat_store import ChatStore
from codectx.app.cli import CommandIndex
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings
from tests.privacy.test_channels import _cli, assert_no_secret, capture, planted, planted_repo  # noqa: F401
from tests.support import faultserver as fs

pytestmark = pytest.mark.slow


async def test_chat_leaks_no_planted_secret(
    planted_repo: Path,  # noqa: F811
    capture: fs.FaultServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = _cli(["index", str(planted_repo), "--no-embed"], planted_repo, capsys)
    assert code == 0, err
    secrets = planted()
    settings = load_settings(planted_repo, {"backend.url": capture.url, "backend.model": "m"})
    chat = ChatService(ChatStore(tmp_path / "chats"))
    refused = answered = 0
    notices: list[tuple[str, str]] = []
    async with WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None) as session:
        for file in sorted({s.file for s in secrets}):
            line = min(s.line for s in secrets if s.file == file)
            text = (planted_repo / file).read_text("utf-8")
            row = text.split("\n")[line]
            cid = chat.start().conversation_id
            message = f"@problems What does @file:{file} do?"  # the problems first: nothing known yet
            turn = TurnInput(
                message,
                path=file,
                text=text,
                position=(line, len(row) // 2),
                mentions=mentions_in(message),
                diagnostics=[
                    {"range": {"start": {"line": line, "character": 0}}, "message": f"check: {row}"},
                    # A type checker quotes the value alone, without the name that makes it secret
                    # (red team 5): masked because the same line's value was found secret.
                    *(
                        {
                            "range": {"start": {"line": s.line, "character": 0}},
                            "message": f'Type "Literal[\'{s.value}\']" is not assignable to "int"',
                        }
                        for s in secrets
                        if s.file == file and "\n" not in s.value
                    ),
                ],
            )
            notices.clear()
            result = await chat.send(session, cid, turn, on_notice=lambda k, m, _t: notices.append((k, m)))
            never = any(s.never_send for s in secrets if s.file == file)
            if never:
                assert any(k == "refused" and file in m for k, m in notices), (file, notices)
                assert not any(c.path == file for c in result.turn.citations)
                refused += 1
            else:
                assert any(c.path == file for c in result.turn.citations), (file, notices)
                answered += 1
            assert "[REDACTED:" not in result.turn.text, (file, result.turn.text[:300])
            follow = TurnInput("And the rest of it?", path=file, text=text, position=(line, 0))
            await chat.send(session, cid, follow)
    assert refused and answered
    chats = [r for r in capture.requests if r.path == "/v1/chat/completions"]
    assert len(chats) == 2 * (refused + answered)
    assert_no_secret(capture.requests, secrets, "chat")
