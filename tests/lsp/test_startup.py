"""Editor start-up through the real server: context before the in-memory snapshot is ready, the
logged switch to it, stable answers within each phase, and what an unindexed workspace indexes first.

"Before ready" is made deterministic by the server's test hook `CODECTX_TEST_SNAPSHOT_GATE`:
background snapshot loads wait until that file exists (retriever/snapshotload.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.support.lsp_helpers import lsp_session, open_doc, plain, progress_events, wait_for

REPORT_CURSOR = {"line": 7, "character": 14}  # in summary() of calc/report.py: `    result = 0`


def _ended(lsp: Any) -> int:
    return sum(isinstance(v, types.WorkDoneProgressEnd) for v in progress_events(lsp))


async def _status(lsp: Any) -> dict[str, Any]:
    status = await lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="codectx.status"))
    folder: dict[str, Any] = status["folders"][0]
    return folder


async def _context(lsp: Any, uri: str) -> dict[str, Any]:
    answer = await lsp.protocol.send_request_async("codectx/context", {"uri": uri, "position": REPORT_CURSOR})
    result: dict[str, Any] = plain(answer)
    return result


def _order(context: dict[str, Any]) -> list[tuple[str, int, str, str]]:
    return [(i["path"], i["start_line"], i["reason"], i["text"]) for i in context["items"]]


def _other_file_definitions(context: dict[str, Any]) -> set[str]:
    return {
        i["symbol"] for i in context["items"] if i["reason"] == "definition" and i["path"] != "calc/report.py"
    }


async def test_context_before_the_snapshot_is_ready_then_a_logged_switch(tmp_path: Path, repo: Path) -> None:
    gate = tmp_path / "release-snapshot"
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"debounce_ms": 0}}}
    env = {"CODECTX_TEST_SNAPSHOT_GATE": str(gate)}
    async with lsp_session(tmp_path, repo, opts, env=env) as lsp:
        await wait_for(lambda: _ended(lsp) >= 1, timeout=240)
        uri = open_doc(lsp, repo / "calc" / "report.py")

        first = await _context(lsp, uri)
        assert (await _status(lsp))["snapshot"] == "lookup"  # the background load is held
        # Definitions from another file, resolved through the file's imports by index lookups.
        assert {"scale", "add"} <= _other_file_definitions(first), first["items"]
        assert any("index lookups" in note for note in first["notes"]), first["notes"]
        again = await _context(lsp, uri)
        assert _order(again) == _order(first)  # stable within the lookup phase
        assert not any("switched from" in m.message for m in lsp.log_messages)

        gate.touch()
        switched = await wait_for(
            lambda: [m.message for m in lsp.log_messages if "switched from" in m.message], timeout=120
        )
        assert "in-memory snapshot" in switched[0]
        assert (await _status(lsp))["snapshot"] == "memory"

        loaded = await _context(lsp, uri)
        assert {"scale", "add"} <= _other_file_definitions(loaded), loaded["items"]
        assert not any("index lookups" in note for note in loaded["notes"])
        assert _order(await _context(lsp, uri)) == _order(loaded)  # stable within the memory phase


UNINDEXED = {
    "app/main.py": "from lib.helpers import helper\n\n\ndef run(value):\n    return helper(value)\n",
    "app/sibling.py": "def sibling():\n    return 1\n",
    "lib/__init__.py": "",
    "lib/helpers.py": "from lib.deep import inner\n\n\ndef helper(value):\n    return inner(value) + 1\n",
    "lib/deep.py": "def inner(value):\n    return value * 2\n",
    **{f"other/unrelated_{n}.py": f"def unrelated_{n}():\n    return {n}\n" for n in range(6)},
}


def _files_of(message: str) -> int:
    match = re.search(r"(\d+)(?:/\d+)? files", message)
    assert match, message
    return int(match.group(1))


async def test_unindexed_workspace_indexes_the_open_files_imports_before_others(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for rel, text in UNINDEXED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".git").mkdir()
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"index_on_open": False, "debounce_ms": 0}}}
    async with lsp_session(tmp_path, root, opts, wait_warm=False) as lsp:
        open_doc(lsp, root / "app" / "main.py")  # then indexing starts: the document is open by then
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.reindex", arguments=[{"wait": True}])
        )
        await wait_for(lambda: _ended(lsp) >= 2, timeout=240)
        first = [m.message for m in lsp.log_messages if "files first" in m.message]
        assert len(first) == 1, first
        listed = first[0].split("folders): ", 1)[1].split(", ")
        # The open file, what it imports (and what that imports), its folder; nothing unrelated.
        assert listed[0] == "app/main.py"
        assert {"lib/helpers.py", "lib/deep.py", "app/sibling.py"} <= set(listed), listed
        assert not any(name.startswith("other/") for name in listed), listed
        ends = [v for v in progress_events(lsp) if isinstance(v, types.WorkDoneProgressEnd)]
        assert _files_of(ends[0].message or "") == len(listed)  # the first run indexed just those
        assert _files_of(ends[1].message or "") == len(UNINDEXED)  # then the whole folder
        status = await _status(lsp)
        assert status["state"] == "ready" and status["files"] == len(UNINDEXED)
