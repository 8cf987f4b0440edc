"""Real Neovim 0.11 (headless) driving the real `codectx lsp`: completion, code action, progress.

Neovim runs `tests/e2e/nvim/init.lua`, which registers the server with
vim.lsp.config + vim.lsp.enable, opens a file of a fixture repository from
a VimEnter autocmd, plays a scenario through Neovim's own LSP client and
writes what it saw as JSON. The model server is the loopback fixed-answer
server, so the expected buffer is known exactly.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp_helpers import (
    FIXED_COMPLETION,
    REPO_ROOT,
    SERVER_COMMAND,
    FixedBackend,
    make_repo,
    server_env,
)
from tests.support.nvim import nvim_binary

pytestmark = [pytest.mark.nvim, pytest.mark.slow]

INIT_LUA = REPO_ROOT / "tests" / "e2e" / "nvim" / "init.lua"


def run_nvim(
    tmp: Path, root: Path, file: Path, scenario: str, init: dict[str, Any], **extra: str
) -> dict[str, Any]:
    out = tmp / f"nvim-{scenario}.json"
    env = server_env(tmp)
    env.update(
        {
            "XDG_STATE_HOME": str(tmp / "nvim-state"),
            "XDG_DATA_HOME": str(tmp / "nvim-data"),
            "CODECTX_NVIM_CMD": json.dumps([*SERVER_COMMAND, "--log-file", str(tmp / "server.log")]),
            "CODECTX_NVIM_ROOT": str(root),
            "CODECTX_NVIM_FILE": str(file),
            "CODECTX_NVIM_INIT": json.dumps(init),
            "CODECTX_NVIM_SCENARIO": scenario,
            "CODECTX_NVIM_OUT": str(out),
            **extra,
        }
    )
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-u", str(INIT_LUA)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    log = (tmp / "server.log").read_text(errors="replace")[-4000:] if (tmp / "server.log").exists() else ""
    assert out.exists(), f"nvim wrote no result (rc {proc.returncode})\n{proc.stderr[-3000:]}\n{log}"
    result = json.loads(out.read_text())
    assert proc.returncode == 0 and result.get("ok"), (
        f"{result}\nstderr: {proc.stderr[-3000:]}\nserver: {log}"
    )
    return result


def settings(url: str, index: bool = False) -> dict[str, Any]:
    # A generous request budget: the first request of a fresh server on a busy CI machine is slow.
    data: dict[str, Any] = {
        "backend": {"url": url},
        "lsp": {"debounce_ms": 0, "index_on_open": index, "request_budget_ms": 20000},
    }
    if not index:
        data["index"] = {"embed": False}
    return {"codectx": data}


def test_nvim_completion_accepted_into_buffer(tmp_path: Path, backend: FixedBackend) -> None:
    root = make_repo(tmp_path / "repo")
    file = root / "calc" / "report.py"
    result = run_nvim(tmp_path, root, file, "completion", settings(backend.url), CODECTX_NVIM_LINE="17")
    # Neovim shows the label and inserts the first word while the menu is open; accepting applies
    # the item's whole textEdit.
    ours = [i for i in result["items"] if "codectx" in (i["menu"] or "")]
    assert ours and ours[0]["abbr"] == FIXED_COMPLETION, result["items"]
    assert result["line_after"] == "    " + FIXED_COMPLETION
    before = result["before"].split("\n")
    after = result["after"].split("\n")
    assert after[:16] == before[:16] and after[17:] == before[17:]  # only the cursor line changed
    ast.parse(result["after"])


def test_nvim_code_action_applies_edit(tmp_path: Path, backend: FixedBackend) -> None:
    root = make_repo(tmp_path / "repo")
    file = root / "calc" / "ops.py"
    result = run_nvim(
        tmp_path,
        root,
        file,
        "code_action",
        settings(backend.url),
        CODECTX_NVIM_LINE="4",
        CODECTX_NVIM_END_LINE="7",
        CODECTX_NVIM_ACTION="Add docstring",
    )
    after = result["after"]
    ast.parse(after)
    assert '"""Add two numbers."""' in after
    assert after.split("def scale")[1] == result["before"].split("def scale")[1]


def test_nvim_sees_indexing_progress(tmp_path: Path, backend: FixedBackend) -> None:
    root = make_repo(tmp_path / "repo")
    opts = settings(backend.url, index=True)
    opts["codectx"]["index"] = {"embed": False}  # the lexical index suffices to show progress
    result = run_nvim(tmp_path, root, root / "calc" / "ops.py", "progress", opts)
    kinds = [p["kind"] for p in result["progress"]]
    # An unindexed folder runs twice (the open file's neighbourhood first, then the whole folder);
    # the scenario stops at the first run's end, by which time the second may have begun.
    assert "end" in kinds, kinds
    first_run = result["progress"][: kinds.index("end") + 1]
    assert first_run[0]["kind"] == "begin" and "indexing" in first_run[0]["title"]
    assert "files" in first_run[-1]["message"]
