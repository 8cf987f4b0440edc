"""`codectx mcp` with an index that cannot be built, and with one damaged under it: tool errors an
agent can read, never a crash; the server goes on answering, and repairs a damaged index."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from tests.support.mcp_helpers import CODECTX, planted_workspace, server_env, stdio_session


def test_an_index_that_cannot_be_built_gives_tool_errors(tmp_path: Path) -> None:
    root = planted_workspace(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be\n")

    async def go() -> list[tuple[bool, str]]:
        args = ["--index-dir", str(blocker), str(root)]
        async with stdio_session(args, server_env(tmp_path / "state")) as rec:
            out = [await rec.call("index_status", {"wait": True})]
            out.append(await rec.call("search_code", {"query": "payment"}))
            out.append(await rec.call("find_definition", {"symbol": "charge"}))
            out.append(await rec.call("get_context", {"path": "shipyard/payments.py", "line": 3}))
            out.append(await rec.call("read_code", {"path": "README.md", "end_line": 2}))  # no index needed
            return [(a.is_error, a.text) for a in out]

    (status_error, status), search, definition, context, read = asyncio.run(go())
    assert not status_error and '"state":"failed"' in status and '"available":false' in status
    for is_error, text in (search, definition, context):
        assert is_error and "index" in text and "Traceback" not in text, text
    assert not read[0] and "# shipyard" in read[1]


def test_a_damaged_index_is_a_tool_error_then_rebuilt(tmp_path: Path) -> None:
    root = planted_workspace(tmp_path)
    built = subprocess.run([*CODECTX, "index", str(root)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr

    async def go() -> tuple[list[tuple[bool, str]], tuple[bool, str]]:
        args = ["--recheck-s", "3600", str(root)]  # no refresh but the first and the asked-for ones
        async with stdio_session(args, server_env(tmp_path / "state")) as rec:
            await rec.call("index_status", {"wait": True})
            healthy = await rec.call("search_code", {"query": "charge"})
            assert not healthy.is_error and '"results":[{' in healthy.text
            for data in (root / ".codectx" / "db").rglob("*.lance"):
                if data.is_file():
                    data.write_bytes(b"\0" * 64)  # every data file of every table: garbage
            # search answers from its in-memory copy of the tables; the others read the files
            after = [
                await rec.call("search_code", {"query": "refund payment"}),
                await rec.call("find_references", {"symbol": "charge"}),
                await rec.call("find_definition", {"symbol": "refund"}),
                await rec.call("get_context", {"path": "shipyard/payments.py", "line": 10}),
            ]
            await rec.call("index_status", {"wait": True})
            again = await rec.call("search_code", {"query": "charge"})
            return [(a.is_error, a.text) for a in after], (again.is_error, again.text)

    after, again = asyncio.run(go())
    for is_error, text in after:
        assert "Traceback" not in text
        assert (is_error and "index" in text) or text.startswith("{"), text
    assert any(is_error for is_error, _ in after), after  # the damage was noticed, not papered over
    # ... and repaired by the server, not left to the agent (the store's own message says to run
    # `codectx index`, which an agent cannot do)
    assert any("being checked and rebuilt" in text for _, text in after), after
    assert not again[0] and '"results":[{' in again[1], again


def test_search_answers_while_vectors_are_pending_and_says_so(tmp_path: Path) -> None:
    import json
    import threading
    from typing import Any

    from codectx.app.cli import CommandIndex
    from codectx.app.embedders import Embedders
    from codectx.app.session import WorkspaceSession
    from codectx.mcp.tools import Tools
    from codectx.mcp.workspaces import Roots, Workspace
    from codectx.settings import load_settings

    root = planted_workspace(tmp_path)
    built = subprocess.run([*CODECTX, "index", str(root)], capture_output=True, text=True)  # no vectors
    assert built.returncode == 0, built.stderr
    (root / ".codectx.toml").write_text("")  # now vectors are wanted, and none is there yet
    settings = load_settings(root, {})
    embedders = Embedders()
    session = WorkspaceSession(
        settings, index=CommandIndex(settings), embedder=lambda: embedders.get(settings)
    )
    index: Any = CommandIndex(settings)
    tools = Tools(Roots([Workspace("planted", root, settings, index, session, threading.Lock())]))
    answer = json.loads(tools.search_code("charge the customer's card", 5).text)
    assert answer["results"] and answer["vectors_pending"] > 0
    assert any("no vector yet" in note for note in answer["notes"])
