"""docs/chat-protocol.md from a plain LSP client: the contract both editors are written to.

The server is the one tests/support/chat_scenario.py's `server_command()` picks (`codectx lsp` unless
CODECTX_CHAT_SERVER names another command), with a loopback model server whose answers the scenario
fixes. The checks: deltas before the response and the result authoritative, one running turn per
conversation, both ways of cancelling giving a result, the error codes, a refused never-send
mention, mention completion, applyBlock's whole-file `newText` (and the targets and secrets it
refuses), list/get/export/delete, the context sent per turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support import chat_scenario
from tests.support.lsp_helpers import (
    FixedBackend,
    apply_text_edits,
    capabilities,
    make_repo,
    open_doc,
    plain,
    server_env,
    wait_for,
)

REQUEST_FAILED, INVALID_PARAMS = -32803, -32602


@contextlib.asynccontextmanager
async def chat_session(tmp: Path, root: Path, backend: Any = None) -> AsyncIterator[Any]:
    """The chosen chat server, initialized on `root`, with its chat notifications recorded in order
    (`backend`: a started model server of the test's own, stopped here; else the scenario's)."""
    from pytest_lsp import make_test_lsp_client

    lsp: Any = make_test_lsp_client()
    lsp.chat_events = []
    backend = backend if backend is not None else chat_scenario.real_mode_backend(root)

    @lsp.feature("codectx/chat/delta")
    def _delta(params: Any) -> None:
        lsp.chat_events.append(("delta", plain(params)))

    @lsp.feature("codectx/chat/notice")
    def _notice(params: Any) -> None:
        lsp.chat_events.append(("notice", plain(params)))

    env = {"XDG_STATE_HOME": str(tmp / "state")}
    await lsp.start_io(*chat_scenario.server_command(), env=server_env(tmp, env), cwd=str(root))
    try:
        options = {"backend": {"url": backend.url}, "index": {"embed": False}} if backend else None
        await asyncio.wait_for(
            lsp.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities(),
                    workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
                    root_uri=root.as_uri(),
                    initialization_options=options,
                )
            ),
            timeout=60,
        )
        yield lsp
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(lsp.shutdown_session(), timeout=20)
        with contextlib.suppress(Exception):
            await lsp.stop()
        if backend is not None:
            backend.stop()


async def call(lsp: Any, method: str, params: dict[str, Any], msg_id: str | None = None) -> Any:
    return plain(await asyncio.wait_for(lsp.protocol.send_request_async(method, params, msg_id=msg_id), 120))


async def refused(lsp: Any, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await call(lsp, method, params)
    return caught.value


def deltas_of(lsp: Any, conversation: str) -> list[dict[str, Any]]:
    return [e for k, e in lsp.chat_events if k == "delta" and e["conversationId"] == conversation]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    (root / ".env").write_text("API_TOKEN=do-not-send-this\n", encoding="utf-8")
    return root


async def test_a_turn_streams_cites_and_applies(tmp_path: Path, repo: Path) -> None:
    async with chat_session(tmp_path, repo) as lsp:
        conv = await call(lsp, "codectx/chat/start", {})
        assert set(conv) >= {"conversationId", "title", "createdAt", "updatedAt", "turns"}
        assert conv["turns"] == 0
        cid = conv["conversationId"]
        report = (repo / "calc" / "report.py").as_uri()
        result = await call(
            lsp,
            "codectx/chat/send",
            {"conversationId": cid, "message": chat_scenario.QUESTION, "uri": report},
        )
        # Every delta came before the response; together they are the authoritative text.
        deltas = deltas_of(lsp, cid)
        assert len(deltas) >= 3
        assert {d["turnId"] for d in deltas} == {result["turnId"]}
        assert "".join(d["text"] for d in deltas) == result["text"]
        assert result["text"] == chat_scenario.answer_for(chat_scenario.QUESTION, repo)
        assert result["cancelled"] is False and result["conversationId"] == cid
        assert {"notices", "auditId", "contextTokens", "budgetTokens"} <= set(result)
        # Citations: real files at real lines (0-based, endLine inclusive); `def scale` is lines 8-10.
        scale = [c for c in result["citations"] if c.get("symbol") == "scale"]
        assert scale and scale[0]["path"] == "calc/ops.py"
        assert (scale[0]["startLine"], scale[0]["endLine"]) == (8, 10)
        assert scale[0]["uri"] == (repo / "calc" / "ops.py").as_uri() and scale[0]["reason"]
        # The answer's code block, with the path its info string names.
        (block,) = result["blocks"]
        assert block["index"] == 0 and block["language"] == "python" and block["path"] == "calc/ops.py"
        assert chat_scenario.NOTE in block["text"] and "```" not in block["text"]

        # applyBlock: the whole file after the edit; the edit changes only that file.
        before = (repo / "calc" / "ops.py").read_text("utf-8")
        ops_uri = open_doc(lsp, repo / "calc" / "ops.py")
        applied = await call(
            lsp,
            "codectx/chat/applyBlock",
            {"conversationId": cid, "turnId": result["turnId"], "blockIndex": 0, "uri": ops_uri},
        )
        new = applied["newText"]
        assert f"def scale(values, factor):\n    {chat_scenario.NOTE}\n" in new
        assert new.replace(f"    {chat_scenario.NOTE}\n", "", 1) == before
        # One file changed (pygls's client decodes objects as namedtuples: a URI key is renamed).
        (changes,) = applied["edit"]["changes"].values()
        edits = [
            types.TextEdit(
                range=types.Range(
                    start=types.Position(**e["range"]["start"]), end=types.Position(**e["range"]["end"])
                ),
                new_text=e["newText"],
            )
            for e in changes
        ]
        assert apply_text_edits(before, edits) == new
        bad = await refused(
            lsp,
            "codectx/chat/applyBlock",
            {"conversationId": cid, "turnId": result["turnId"], "blockIndex": 5, "uri": ops_uri},
        )
        assert bad.code == REQUEST_FAILED and bad.message

        # The context sent for that turn.
        context = await call(lsp, "codectx/chat/context", {"conversationId": cid, "turnId": result["turnId"]})
        assert context["kind"] == "chat"
        assert any(item["path"] == "calc/ops.py" for item in context["items"])
        assert context["payload"] and "redactions" in context

        # list, get (resume), export, delete.
        listed = (await call(lsp, "codectx/chat/list", {}))["conversations"]
        assert [c["conversationId"] for c in listed] == [cid] and listed[0]["turns"] == 1
        got = await call(lsp, "codectx/chat/get", {"conversationId": cid})
        assert [t["role"] for t in got["turns"]] == ["user", "assistant"]
        assert got["turns"][0]["text"] == chat_scenario.QUESTION
        assert got["turns"][1]["turnId"] == result["turnId"] and got["turns"][1]["text"] == result["text"]
        markdown = (await call(lsp, "codectx/chat/export", {"conversationId": cid}))["markdown"]
        assert chat_scenario.QUESTION in markdown and "calc/ops.py" in markdown
        assert (await call(lsp, "codectx/chat/delete", {"conversationId": cid}))["deleted"] is True
        assert (await call(lsp, "codectx/chat/delete", {"conversationId": cid}))["deleted"] is False
        assert (await call(lsp, "codectx/chat/list", {}))["conversations"] == []
        gone = await refused(lsp, "codectx/chat/send", {"conversationId": cid, "message": "hello"})
        assert gone.code in (REQUEST_FAILED, INVALID_PARAMS) and gone.message


async def test_cancel_both_ways_gives_a_result(tmp_path: Path, repo: Path) -> None:
    long_answer = chat_scenario.answer_for(chat_scenario.LONG_QUESTION, repo)
    async with chat_session(tmp_path, repo) as lsp:
        cid = (await call(lsp, "codectx/chat/start", {}))["conversationId"]
        assert (await call(lsp, "codectx/chat/cancel", {"conversationId": cid}))["cancelled"] is False

        # codectx/chat/cancel; meanwhile a second send in the same conversation is refused.
        params = {"conversationId": cid, "message": chat_scenario.LONG_QUESTION}
        running = asyncio.ensure_future(call(lsp, "codectx/chat/send", params))
        await wait_for(lambda: deltas_of(lsp, cid), timeout=60)
        busy = await refused(lsp, "codectx/chat/send", {"conversationId": cid, "message": "and?"})
        assert busy.code == REQUEST_FAILED and busy.message
        assert (await call(lsp, "codectx/chat/cancel", {"conversationId": cid}))["cancelled"] is True
        result = await running
        assert result["cancelled"] is True
        assert 0 < len(result["text"]) < len(long_answer) and long_answer.startswith(result["text"])

        # $/cancelRequest on the send's id: a result too, not a RequestCancelled error.
        lsp.chat_events.clear()
        running = asyncio.ensure_future(call(lsp, "codectx/chat/send", params, msg_id="send-2"))
        await wait_for(lambda: deltas_of(lsp, cid), timeout=60)
        lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="send-2"))
        result = await running
        assert result["cancelled"] is True and 0 < len(result["text"]) < len(long_answer)
        # The conversation is free again, and kept both stopped turns.
        got = await call(lsp, "codectx/chat/get", {"conversationId": cid})
        assert [t.get("cancelled") for t in got["turns"] if t["role"] == "assistant"] == [True, True]


async def test_cancel_right_behind_the_send_gives_a_result(tmp_path: Path, repo: Path) -> None:
    """$/cancelRequest written right behind the send on the same pipe: it reaches the server while
    the turn is still getting ready (waiting for the index, gathering the context), before the
    answer streams. The caller still gets a result with `cancelled`, not RequestCancelled."""
    long_answer = chat_scenario.answer_for(chat_scenario.LONG_QUESTION, repo)
    async with chat_session(tmp_path, repo) as lsp:
        cid = (await call(lsp, "codectx/chat/start", {}))["conversationId"]
        params = {"conversationId": cid, "message": chat_scenario.LONG_QUESTION}
        # pygls's send_request writes at once (pytest-lsp's async variant writes only when awaited).
        pending = lsp.protocol.send_request("codectx/chat/send", params, msg_id="send-early")
        lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="send-early"))
        result = plain(await asyncio.wait_for(asyncio.wrap_future(pending), 120))
        assert result["cancelled"] is True
        assert len(result["text"]) < len(long_answer) and long_answer.startswith(result["text"])
        got = await call(lsp, "codectx/chat/get", {"conversationId": cid})
        assert [t.get("cancelled") for t in got["turns"] if t["role"] == "assistant"] == [True]
        # The conversation is free again: the next turn runs to its end.
        question = {"conversationId": cid, "message": chat_scenario.QUESTION}
        again = await call(lsp, "codectx/chat/send", question)
        assert again["cancelled"] is False
        assert again["text"] == chat_scenario.answer_for(chat_scenario.QUESTION, repo)


async def test_refusals_errors_and_mentions(tmp_path: Path, repo: Path) -> None:
    async with chat_session(tmp_path, repo) as lsp:
        cid = (await call(lsp, "codectx/chat/start", {}))["conversationId"]
        result = await call(
            lsp, "codectx/chat/send", {"conversationId": cid, "message": chat_scenario.REFUSED_QUESTION}
        )
        notices = [e for k, e in lsp.chat_events if k == "notice"]
        assert any(n["kind"] == "refused" and ".env" in n["message"] for n in notices), notices
        assert any(".env" in n for n in result["notices"])
        assert not any(c["path"].endswith(".env") for c in result["citations"])
        assert "do-not-send-this" not in repr(lsp.chat_events) + repr(result)

        empty = await refused(lsp, "codectx/chat/send", {"conversationId": cid, "message": "  "})
        assert empty.code in (REQUEST_FAILED, INVALID_PARAMS) and empty.message
        unknown = await refused(lsp, "codectx/chat/send", {"conversationId": "nope", "message": "hi"})
        assert unknown.code in (REQUEST_FAILED, INVALID_PARAMS) and unknown.message

        items = (await call(lsp, "codectx/chat/mentions", {"query": "calc/o", "kind": "file"}))["items"]
        assert any(i["kind"] == "file" and i["value"] == "calc/ops.py" and i["label"] for i in items)
        assert len(items) <= 50
        symbols = (await call(lsp, "codectx/chat/mentions", {"query": "sca", "kind": "symbol"}))["items"]
        assert any(i["value"] == "scale" for i in symbols) and all(i["kind"] == "symbol" for i in symbols)
        # An @file mention includes that file.
        mentioned = await call(
            lsp,
            "codectx/chat/send",
            {"conversationId": cid, "message": "Summarise @file:calc/report.py please"},
        )
        assert any(c["path"] == "calc/report.py" for c in mentioned["citations"]), mentioned["citations"]


async def test_implicit_context_params_and_titles(tmp_path: Path, repo: Path) -> None:
    async with chat_session(tmp_path, repo) as lsp:
        conv = await call(lsp, "codectx/chat/start", {"title": "Reports"})
        assert conv["title"] == "Reports"
        cid = conv["conversationId"]
        # Params of the wrong shape are InvalidParams.
        bad = await refused(lsp, "codectx/chat/send", {"conversationId": cid, "message": 42})
        assert bad.code == INVALID_PARAMS and bad.message
        # The cursor inside `summary` (report.py line 7, 0-based 6): its definition is in the context.
        report = open_doc(lsp, repo / "calc" / "report.py")
        result = await call(
            lsp,
            "codectx/chat/send",
            {
                "conversationId": cid,
                "message": "What does this do? See also @symbol:add",
                "uri": report,
                "position": {"line": 6, "character": 4},
            },
        )
        spans = {(c["path"], c["startLine"], c["endLine"]) for c in result["citations"]}
        assert ("calc/report.py", 5, 10) in spans, spans  # def summary .. return result
        assert ("calc/ops.py", 3, 5) in spans, spans  # @symbol:add
        assert len(spans) == len(result["citations"])  # each snippet once
        listed = (await call(lsp, "codectx/chat/list", {}))["conversations"]
        assert listed[0]["title"] == "Reports" and listed[0]["turns"] == 1
        # Mention completion ranks the editor's own file first.
        items = (await call(lsp, "codectx/chat/mentions", {"query": "", "kind": "file", "uri": report}))[
            "items"
        ]
        assert items[0]["value"] == "calc/report.py"


async def test_a_title_made_of_the_first_question_is_as_the_request_had_it(
    tmp_path: Path, repo: Path
) -> None:
    """Red team 2: a token pasted into the first question was masked in the request and kept whole
    as the conversation's title, shown by chat/list and chat/get."""
    pasted = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    async with chat_session(tmp_path, repo) as lsp:
        cid = (await call(lsp, "codectx/chat/start", {}))["conversationId"]
        await call(lsp, "codectx/chat/send", {"conversationId": cid, "message": f"why does {pasted} fail?"})
        (listed,) = (await call(lsp, "codectx/chat/list", {}))["conversations"]
        assert pasted not in listed["title"] and listed["title"].startswith(
            "why does [REDACTED:github-token:"
        )


TOKEN = "ghp_" + "Zq8mL2xR7tN4vW9yZ1bC3dF6gH0jK5pS8aE9"
PLACEHOLDER = re.compile(r"\[REDACTED:github-token:[0-9a-f]{8}\]")


def hostile_answer(body: dict[str, Any]) -> str:
    """A model prompted by hostile workspace text: a block for .git/config (a command git runs), and
    one for a tracked file that echoes the placeholder of a secret sent from another file."""
    placeholder = PLACEHOLDER.search(json.dumps(body))
    echoed = placeholder.group(0) if placeholder else "none"
    return (
        'Here is the fix.\n\n```ini path=.git/config\n[core]\n\tfsmonitor = "touch pwned #"\n```\n\n'
        f'```python path=calc/settings.py\nimport os\nGITHUB_TOKEN = "{echoed}"\n```\n'
    )


async def test_apply_refuses_git_and_never_send_targets_and_keeps_foreign_secrets(
    tmp_path: Path, repo: Path
) -> None:
    """Red team 5: applyBlock made an edit of .git/config (its `core.fsmonitor` ran on the next
    `git status`) and of .env (whose text came back in newText); and it put a token from a
    git-ignored local_settings.py back into a tracked file the answer named."""
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n", encoding="utf-8")
    (repo / ".gitignore").write_text("local_settings.py\n", encoding="utf-8")
    (repo / "local_settings.py").write_text(f'GITHUB_TOKEN = "{TOKEN}"\n', encoding="utf-8")
    (repo / "calc" / "settings.py").write_text("import os\n", encoding="utf-8")
    backend = FixedBackend(chat=hostile_answer).start()
    async with chat_session(tmp_path, repo, backend) as lsp:
        cid = (await call(lsp, "codectx/chat/start", {}))["conversationId"]
        result = await call(
            lsp, "codectx/chat/send", {"conversationId": cid, "message": "tidy @file:local_settings.py"}
        )
        assert [b.get("path") for b in result["blocks"]] == [".git/config", "calc/settings.py"]
        assert TOKEN in result["text"]  # the answer the user sees has it put back

        def apply(index: int, target: Path) -> dict[str, Any]:
            return {
                "conversationId": cid,
                "turnId": result["turnId"],
                "blockIndex": index,
                "uri": target.as_uri(),
            }

        for target in (repo / ".git" / "config", repo / ".env"):
            error = await refused(lsp, "codectx/chat/applyBlock", apply(0, target))
            assert error.code == REQUEST_FAILED, error
            assert "refused to apply the code block" in error.message and (
                ".git/" in error.message or "never-send" in error.message
            ), error.message
            assert "do-not-send-this" not in error.message
        assert "fsmonitor" not in (repo / ".git" / "config").read_text("utf-8")

        # The token goes back only into the file that holds it; elsewhere it stays a placeholder.
        tracked = await call(lsp, "codectx/chat/applyBlock", apply(1, repo / "calc" / "settings.py"))
        assert TOKEN not in tracked["newText"] and PLACEHOLDER.search(tracked["newText"])
        assert any("placeholder" in w and "does not hold" in w for w in tracked["warnings"]), tracked[
            "warnings"
        ]
        origin = await call(lsp, "codectx/chat/applyBlock", apply(1, repo / "local_settings.py"))
        assert origin["newText"].count(TOKEN) == 2 and not PLACEHOLDER.search(origin["newText"])
        assert not [w for w in origin["warnings"] if "placeholder" in w]
    assert not any(TOKEN in json.dumps(r["body"]) for r in backend.requests)
