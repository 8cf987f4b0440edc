"""`:CodectxChat` in real Neovim 0.11 (headless) against a chat server: the plugin in lua/codectx/.

tests/e2e/nvim/chat_init.lua plays the scenario (ask, stream, citations in the quickfix list, a refused
`@file:.env`, apply a code block after its diff, stop, new, resume, export, context sent) and writes
what it saw as JSON. The server is chosen by tests/support/chat_scenario.py's `server_command()`:
`codectx lsp` with a loopback model server whose answers the scenario fixes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import chat_scenario
from tests.support.lsp_helpers import REPO_ROOT, make_repo, server_env
from tests.support.nvim import nvim_binary

pytestmark = [pytest.mark.nvim, pytest.mark.slow]

CHAT_INIT = REPO_ROOT / "tests" / "e2e" / "nvim" / "chat_init.lua"


def run_chat(tmp: Path, root: Path, settings: dict[str, Any]) -> dict[str, Any]:
    out = tmp / "nvim-chat.json"
    env = server_env(tmp)
    env.update(
        {
            "XDG_STATE_HOME": str(tmp / "nvim-state"),
            "XDG_DATA_HOME": str(tmp / "nvim-data"),
            "XDG_CONFIG_HOME": str(tmp / "nvim-config"),
            "CODECTX_NVIM_PLUGIN_ROOT": str(REPO_ROOT),
            "CODECTX_NVIM_CMD": json.dumps(chat_scenario.server_command()),
            "CODECTX_NVIM_FILE": str(root / "calc" / "report.py"),
            "CODECTX_NVIM_INIT": json.dumps(settings),
            "CODECTX_NVIM_OUT": str(out),
            "CODECTX_CHAT_QUESTIONS": json.dumps(
                {
                    "question": chat_scenario.QUESTION,
                    "long": chat_scenario.LONG_QUESTION,
                    "refused": chat_scenario.REFUSED_QUESTION,
                    "note": chat_scenario.NOTE,
                    "block_path": "calc/ops.py",
                }
            ),
        }
    )
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-u", str(CHAT_INIT)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.exists(), f"nvim wrote no result (rc {proc.returncode})\n{proc.stderr[-3000:]}"
    result: dict[str, Any] = json.loads(out.read_text())
    assert proc.returncode == 0 and result.get("ok"), f"{result}\nstderr: {proc.stderr[-3000:]}"
    return result


def test_chat_buffer_stream_citations_apply_stop_resume(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / ".env").write_text("API_TOKEN=do-not-send-this\n", encoding="utf-8")
    ops = root / "calc" / "ops.py"
    ops_before = ops.read_text("utf-8")
    backend = chat_scenario.real_mode_backend(root)
    settings: dict[str, Any] = {"index": {"embed": False}}
    if backend is not None:
        settings["backend"] = {"url": backend.url}
    try:
        result = run_chat(tmp_path, root, settings)
    finally:
        if backend is not None:
            backend.stop()
    notes = [n["msg"] for n in result["notes"]]
    question, note = chat_scenario.QUESTION, chat_scenario.NOTE
    expected = chat_scenario.answer_for(question, root).rstrip("\n").split("\n")

    # The chat: answer above, question below, in one column on the right.
    assert result["layout"]["answer_row"] < result["layout"]["input_row"] and result["layout"]["same_col"]
    assert result["layout"]["answer_filetype"] == "markdown"
    # Streamed: many deltas, and the buffer grew through several states before the final text.
    assert result["deltas"] >= 5, result["deltas"]
    assert len(set(result["snapshots"])) >= 5, result["snapshots"]
    first = result["first_answer"]
    assert first[:2] == ["## You", question] and first[3] == "## codectx"
    assert first[4 : 4 + len(expected)] == expected
    # Citations: listed under the answer and as the quickfix list, real files at real lines.
    assert "Citations:" in first
    assert result["qf_title"] == f"codectx chat: {question}"
    cited = {
        (Path(item["file"]).relative_to(root).as_posix(), item["lnum"], item["end_lnum"])
        for item in result["qf"]
    }
    assert ("calc/ops.py", 9, 11) in cited, cited  # def scale .. its return line (1-based)
    for path, start, end in cited:
        assert (root / path).is_file() and 1 <= start <= end <= len((root / path).read_text().splitlines())
    assert any("citation" in n and "quickfix" in n for n in notes)

    # @-mention completion in the question buffer: the kinds, then the files the server offers.
    assert "codectx" in result["omnifunc"]
    assert "@file:" in result["mention_kinds"] and "@problems" in result["mention_kinds"]
    assert "@file:calc/ops.py" in result["mention_files"], result["mention_files"]

    # The refused mention: a notice line in the answer, a warning, and nothing from .env shown.
    refused = result["refused_answer"]
    assert any(line.startswith("> [refused]") and ".env" in line for line in refused), refused
    assert any(n["level"] == 3 and ".env" in n["msg"] and "refused" in n["msg"] for n in result["notes"])
    assert not any("do-not-send-this" in line for line in refused)

    # Apply: the diff (two diff windows) holds the note; reject leaves the buffer, accept changes it.
    proposal = result["proposal"]
    assert proposal["diff_windows"] == 2
    assert note in "\n".join(proposal["lines"]) and note not in "\n".join(proposal["target_before"])
    assert result["after_reject"]["lines"] == ops_before.rstrip("\n").split("\n")
    assert not result["after_reject"]["modified"] and result["after_reject"]["tabs"] == 1
    accepted = result["after_accept"]["lines"]
    at = accepted.index("def scale(values, factor):")
    assert accepted[at + 1] == f"    {note}" and accepted.count(f"    {note}") == 1
    assert result["after_accept"]["modified"] and result["after_accept"]["tabs"] == 1
    assert ops.read_text("utf-8") == ops_before  # accepted into the buffer; saving is the user's

    # Stop: the long answer ends early, marked stopped.
    stopped = result["stopped_answer"]
    tail = stopped[stopped.index("## codectx", len(stopped) - stopped[::-1].index("## You") - 1) :]
    assert "> [stopped]" in tail
    full = chat_scenario.answer_for(chat_scenario.LONG_QUESTION, root).count("\n")
    assert 0 < sum(1 for line in tail if line.startswith("Part ")) < full

    # New conversation: an empty chat; list offers the first one and resumes it with its turns.
    assert result["new_conversation"]["id"] != result["conversation"]
    assert result["new_conversation"]["lines"] == [""]
    assert any(label.startswith(question) for label in result["select"]["labels"]), result["select"]
    assert result["resumed"]["id"] == result["conversation"]
    resumed = result["resumed"]["lines"]
    assert question in resumed and "Citations:" in resumed and note.join(["    ", ""]) in resumed

    # Export as Markdown and the context sent for the first turn.
    export = "\n".join(result["export"])
    assert "## You" in export and question in export
    context = "\n".join(result["context"])
    assert "Context items" in context and "calc/ops.py" in context and "Exact payload" in context


def test_apply_never_picks_a_git_path_the_answer_names(tmp_path: Path) -> None:
    """Red team 5 (S6b): `:CodectxChat apply` on a block labelled ```ini path=.git/config proposed
    an edit of .git/config (after accept and :w, `git status` ran its `core.fsmonitor` command).
    The label is skipped like one with `..`, and the block is refused outright rather than proposed
    for the current file (the server refuses such targets in any case)."""
    root = make_repo(tmp_path / "repo")
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / ".git" / "hooks").mkdir()
    (root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n", encoding="utf-8")
    script = tmp_path / "targets.lua"
    script.write_text(
        """
vim.opt.runtimepath:prepend(vim.env.PLUGIN_ROOT)
local chat = require("codectx.chat")
local client = { root_dir = vim.env.ROOT }
local out = {}
for _, label in ipairs({ ".git/config", ".GIT/config", ".git./config", "calc/../.git/hooks/pre-commit",
                         "GIT~1/config", ".g\\u{200c}it/hooks/x", ".git::$INDEX_ALLOCATION/config",
                         "digit~1/x",
                         ".git\\\\config", "calc/ops.py", ".gitignore" }) do
  local target = chat._target_for({ path = label }, client) or vim.NIL
  out[label] = { target, chat._fence_refusal({ path = label }) or vim.NIL }
end
io.stdout:write(vim.json.encode(out))
vim.cmd("qa!")
""",
        encoding="utf-8",
    )
    (root / ".gitignore").write_text("*.log\n", encoding="utf-8")
    env = server_env(tmp_path)
    env.update({"PLUGIN_ROOT": str(REPO_ROOT), "ROOT": str(root)})
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-l", str(script)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    targets = json.loads(proc.stdout)
    picked = {label: target for label, (target, _) in targets.items() if target is not None}
    assert set(picked) == {"calc/ops.py", ".gitignore"}, targets
    assert picked["calc/ops.py"].endswith("/calc/ops.py")
    # A fence under .git/ refuses the block (no proposal for the current file either).
    refused = {label for label, (_, why) in targets.items() if why is not None}
    assert refused == {
        ".git/config",
        ".GIT/config",
        ".git./config",
        ".git\\config",
        "calc/../.git/hooks/pre-commit",
        "GIT~1/config",
        ".g\u200cit/hooks/x",
        ".git::$INDEX_ALLOCATION/config",
    }
    assert "never applies a block there" in targets[".git/config"][1]
