"""`codectx mcp` over stdio, driven by the MCP SDK's own client on the planted repository.

One real server (tests/fixtures/planted indexed for real, no vectors) answers a script of calls
that exercises every tool: searches, definitions by name and by position, references, completion
context at every planted secret, whole-file reads of every file, refusals, malformed arguments,
20 concurrent calls, and a file edit. The tests then check the recorded answers: tools and their
schemas, no 12-character window of any planted secret in any answer, refusals as tool errors, one
audit entry per answer with the sha256 of exactly the bytes returned, and the edit seen.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_helpers import (
    Answer,
    Recorder,
    audit_entries,
    leaks,
    planted_secrets,
    planted_workspace,
    server_env,
    sha256,
    stdio_session,
)

TOOLS = {"search_code", "find_definition", "find_references", "get_context", "read_code", "index_status"}
QUERIES = [
    "api key",
    "password",
    "secret token",
    "database connection",
    "stripe charge",
    "send notification",
    "aws credentials",
    "private key",
    "webhook url",
    "config",
]
REFUSED = {
    "../outside.py": "leaves the workspace",
    "/etc/passwd": "absolute",
    "shipyard/elsewhere.py": "outside",  # a symlink to a file out of the workspace
    ".env": "never-send",
    "deploy/keys/id_rsa": "never-send",
    "shipyard/../.env": "leaves the workspace",
    "web/.npmrc": "never-send",
    ".codectx/meta.json": "index folder",  # the index lists the workspace's paths and settings
}
PROBE = "\n\ndef zebra_unicorn_probe(order):\n    return order['zebra']\n"


def _files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".codectx"]
        for name in filenames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                out.append(path.relative_to(root).as_posix())
    return sorted(out)


def _position_of(root: Path, rel: str, needle: str) -> tuple[int, int]:
    """1-based (line, character) of the middle of `needle`'s first occurrence in `rel`."""
    for number, row in enumerate((root / rel).read_text().split("\n"), 1):
        at = row.find(needle)
        if at >= 0:
            return number, at + len(needle) // 2 + 1
    raise AssertionError(f"{needle!r} not in {rel}")


async def _script(rec: Recorder, root: Path) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    facts["tools"] = (await rec.session.list_tools()).tools
    facts["status"] = await rec.call("index_status", {"wait": True})
    for q in QUERIES:
        await rec.call("search_code", {"query": q, "k": 10})
    await rec.call("search_code", {"query": "charge", "k": 5, "glob": "shipyard/**", "language": "python"})
    symbols = {"charge", "refund", "Session.send"}
    for a in rec.answers:
        if a.tool == "search_code" and not a.is_error:
            symbols.update(r["symbol"] for r in a.data()["results"] if r["symbol"])
    for name in sorted(symbols)[:25]:
        await rec.call("find_definition", {"symbol": name})
    line, character = _position_of(root, "shipyard/payments.py", "STRIPE_SECRET_KEY")
    facts["at_use"] = await rec.call(
        "find_definition", {"path": "shipyard/payments.py", "line": line, "character": character}
    )
    for name in ("get", "charge", "api_key", "environ"):
        await rec.call("find_references", {"symbol": name, "limit": 200})
    for s in planted_secrets():
        if s.get("never_send_file"):
            continue
        rows = (root / s["file"]).read_text().split("\n")
        col = rows[s["line"]].find(s["value"][:8])
        await rec.call(
            "get_context", {"path": s["file"], "line": s["line"] + 1, "character": max(col, 0) + 5}
        )
    for rel in _files(root):
        await rec.call("read_code", {"path": rel, "start_line": 1, "end_line": 400})
    facts["refused"] = {p: await rec.call("read_code", {"path": p}) for p in REFUSED}
    facts["bad"] = [
        await rec.call("search_code", {"query": "x", "k": 0}),
        await rec.call("search_code", {"k": 3}),
        await rec.call("read_code", {"path": "README.md", "start_line": 0}),
        await rec.call("find_definition", {}),
        await rec.call("get_context", {"path": "nope/missing.py", "line": 1}),
        await rec.call("search_code", {"query": "charge", "language": "pyhton"}),
        await rec.call("get_context", {"path": "shipyard/payments.py", "line": 0}),
        await rec.call("get_context", {"path": "shipyard/payments.py", "line": 100000}),
    ]
    nul = "shipyard/pay\u0000ments.py"
    facts["nul"] = [
        await rec.call("read_code", {"path": nul}),
        await rec.call("get_context", {"path": nul, "line": 1}),
        await rec.call("find_definition", {"path": nul, "line": 1}),
    ]
    facts["past"] = [
        await rec.call("get_context", {"path": "shipyard/payments.py", "line": 1, "character": 999}),
        await rec.call("find_definition", {"path": "shipyard/payments.py", "line": 999}),
        await rec.call("find_definition", {"path": "shipyard/payments.py", "line": 1, "character": 999}),
    ]
    burst = [
        rec.call("search_code", {"query": QUERIES[i % len(QUERIES)], "k": 5})
        if i % 3 == 0
        else rec.call("find_definition", {"symbol": "charge"})
        if i % 3 == 1
        else rec.call("read_code", {"path": "shipyard/payments.py", "start_line": 1 + i, "end_line": 10 + i})
        for i in range(20)
    ]
    facts["burst"] = await asyncio.gather(*burst)
    facts["before_edit"] = await rec.call("search_code", {"query": "zebra_unicorn_probe", "k": 3})
    with (root / "shipyard" / "notify.py").open("a") as fh:
        fh.write(PROBE)
    facts["after_wait"] = await rec.call("index_status", {"wait": True})
    facts["after_edit"] = await rec.call("search_code", {"query": "zebra_unicorn_probe", "k": 3})
    facts["probe_def"] = await rec.call("find_definition", {"symbol": "zebra_unicorn_probe"})
    return facts


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("mcp")
    root = planted_workspace(base)
    state = base / "state"

    async def go() -> dict[str, Any]:
        async with stdio_session([str(root)], server_env(state)) as rec:
            facts = await _script(rec, root)
            facts["answers"] = rec.answers
            return facts

    facts = asyncio.run(go())
    facts.update(root=root, state=state)
    return facts


def test_lists_the_six_tools_with_schemas_and_descriptions(recorded: dict[str, Any]) -> None:
    tools = {t.name: t for t in recorded["tools"]}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object"
    search = tools["search_code"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["k"]["maximum"] == 50
    assert {"glob", "language"} <= set(search["properties"])
    assert tools["read_code"].input_schema["required"] == ["path"]
    assert {"path", "line", "character", "symbol"} <= set(tools["find_definition"].input_schema["properties"])


def test_every_tool_answers_with_paths_lines_symbols_and_text(recorded: dict[str, Any]) -> None:
    answers: list[Answer] = recorded["answers"]
    searches = [a for a in answers if a.tool == "search_code" and not a.is_error and a.data()["results"]]
    assert len(searches) >= len(QUERIES) - 2
    hit = searches[0].data()["results"][0]
    assert {"path", "start_line", "end_line", "symbol", "kind", "text"} <= set(hit)
    text = (recorded["root"] / hit["path"]).read_text().split("\n")
    # 1-based lines: the first line of the hit is the first line of its text (unless redacted there)
    first = hit["text"].split("\n")[0].split("[REDACTED")[0]
    assert hit["start_line"] >= 1 and first in text[hit["start_line"] - 1]
    charge = next(a for a in answers if a.tool == "find_definition" and a.arguments.get("symbol") == "charge")
    site = charge.data()["definitions"][0]
    assert site["path"] == "shipyard/payments.py" and site["kind"] == "function"
    assert site["text"].startswith("def charge(")
    at_use = recorded["at_use"].data()["definitions"]
    assert at_use and at_use[0]["path"] == "shipyard/config.py", at_use
    refs = next(a for a in answers if a.tool == "find_references" and a.arguments["symbol"] == "get").data()
    assert refs["references"] and all(r["text"] for r in refs["references"])
    refused = recorded["bad"] + recorded["nul"] + recorded["past"]
    contexts = [a for a in answers if a.tool == "get_context" and a not in refused]
    assert contexts and not any(a.is_error for a in contexts), [a.text for a in contexts if a.is_error][:2]
    ctx = contexts[0].data()
    assert {"prefix", "suffix", "items", "budget"} <= set(ctx)
    reads = [a for a in answers if a.tool == "read_code" and not a.is_error]
    readme = next(a.data() for a in reads if a.arguments["path"] == "README.md")
    assert readme["start_line"] == 1 and readme["text"].startswith("# shipyard")
    status = recorded["status"].data()["roots"][0]
    assert status["state"] == "ready" and status["files"] > 20 and status["chunks"] > 0


def test_no_planted_secret_in_any_answer(recorded: dict[str, Any]) -> None:
    secrets = planted_secrets()
    answers: list[Answer] = recorded["answers"]
    assert len(answers) > 80
    found = {f"{a.tool} {a.arguments}": hit for a in answers if (hit := leaks(a.text, secrets))}
    assert found == {}
    # the answers did carry the secrets' files, redacted
    assert any("[REDACTED:" in a.text for a in answers if a.tool == "read_code")


def test_read_code_refuses_paths_outside_and_never_send_files(recorded: dict[str, Any]) -> None:
    for path, why in REFUSED.items():
        answer = recorded["refused"][path]
        assert answer.is_error, (path, answer.text)
        assert why in answer.text, (path, answer.text)
    assert "OUTSIDE_ONLY" not in " ".join(a.text for a in recorded["answers"])
    reads = {a.arguments["path"]: a for a in recorded["answers"] if a.tool == "read_code"}
    for s in planted_secrets():
        if s.get("never_send_file"):
            assert reads[s["file"]].is_error and "never-send" in reads[s["file"]].text


def test_malformed_arguments_are_tool_errors(recorded: dict[str, Any]) -> None:
    k0, no_query, line0, nothing, missing, typo, context0, past = recorded["bad"]
    assert all(a.is_error for a in recorded["bad"])
    assert "unknown language" in typo.text and "python" in typo.text
    assert "k" in k0.text and "query" in no_query.text and "start_line" in line0.text
    assert "symbol" in nothing.text
    # Positions in errors are the agent's own, 1-based (the schema refuses 0), with the file's length.
    assert "line" in context0.text and "greater than or equal to 1" in context0.text
    assert "line 100000 is past the end of shipyard/payments.py (it has" in past.text
    assert "nope/missing.py: no such file" in missing.text
    assert str(recorded["root"]) not in missing.text  # the agent is told workspace paths only
    assert "Traceback" not in " ".join(a.text for a in recorded["bad"])


def test_a_nul_character_in_a_path_is_refused_as_a_path_not_taken_for_a_damaged_index(
    recorded: dict[str, Any],
) -> None:
    """The OS's ValueError for the name was read as a damaged index: "could not be read
    (ValueError); it is being checked and rebuilt", and the index was checked again."""
    for answer in recorded["nul"]:
        assert answer.is_error, answer.text
        assert "contains a NUL character" in answer.text and "rebuilt" not in answer.text, answer.text


def test_a_position_past_the_end_of_the_line_or_file_is_refused_as_on_the_command_line(
    recorded: dict[str, Any],
) -> None:
    """get_context took character 999 as the line's end and find_definition line 999 as nothing
    found, answering for a place the agent did not name; the CLI refuses both."""
    column, line, def_column = recorded["past"]
    length = len((recorded["root"] / "shipyard/payments.py").read_text().split("\n")[0])
    past_line = f"column 999 is past the end of line 1 of shipyard/payments.py ({length} characters"
    assert column.is_error and past_line in column.text, column.text
    assert line.is_error and "line 999 is past the end of shipyard/payments.py (it has" in line.text
    assert def_column.is_error and past_line in def_column.text, def_column.text


def test_audit_entries_match_the_bytes_returned(recorded: dict[str, Any]) -> None:
    entries = audit_entries(recorded["state"])
    answered = [a for a in recorded["answers"] if not a.is_error]
    by_hash: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_hash.setdefault(e["sha256"], []).append(e)
    assert len(entries) == len(answered)
    for a in answered:
        matches = by_hash.get(sha256(a.text), [])
        assert matches, (a.tool, a.arguments)
        assert any(m["call"]["tool"] == a.tool and m["bytes"] == len(a.text.encode()) for m in matches)
    search = next(e for e in entries if e["call"]["tool"] == "search_code")
    assert search["call"]["arguments"]["query"] in QUERIES and search["endpoint"] == "mcp:search_code"
    assert search["sources"] and all("path" in s for s in search["sources"])
    assert any(e["redactions"] for e in entries)  # the gate's record says what it replaced
    # errors leave nothing: no entry for a refused read
    assert not any(e["call"]["arguments"].get("path") in REFUSED for e in entries)


def test_twenty_concurrent_calls_all_answer(recorded: dict[str, Any]) -> None:
    burst: list[Answer] = recorded["burst"]
    assert len(burst) == 20 and not any(a.is_error for a in burst), [a.text for a in burst if a.is_error]
    reads = [a.data() for a in burst if a.tool == "read_code"]
    assert sorted(r["start_line"] for r in reads) == sorted(1 + i for i in range(20) if i % 3 == 2)


def test_the_index_follows_a_file_edit(recorded: dict[str, Any]) -> None:
    def paths(answer: Answer) -> list[str]:
        return [r["text"] for r in answer.data()["results"]]

    assert not any("zebra_unicorn_probe" in t for t in paths(recorded["before_edit"]))
    assert any("def zebra_unicorn_probe" in t for t in paths(recorded["after_edit"]))
    site = recorded["probe_def"].data()["definitions"][0]
    lines = (recorded["root"] / "shipyard" / "notify.py").read_text().split("\n")
    assert site["path"] == "shipyard/notify.py"
    assert lines[site["start_line"] - 1].startswith("def zebra_unicorn_probe")
