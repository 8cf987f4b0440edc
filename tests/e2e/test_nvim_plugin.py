"""The Neovim plugin in this repository (plugin/, lua/codectx/, lsp/codectx.lua) in real Neovim 0.11.

Neovim loads it as a plugin manager would (the repository root on the runtimepath), so
`vim.lsp.enable("codectx")` finds lsp/codectx.lua, and plugin/codectx.lua adds :Codectx and the
attach hook. tests/e2e/nvim/plugin_init.lua then plays every :Codectx subcommand and :checkhealth
codectx against the real `codectx lsp`, with the loopback fixed-answer model server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp_helpers import REPO_ROOT, SERVER_COMMAND, FixedBackend, make_repo, server_env
from tests.support.nvim import nvim_binary

pytestmark = [pytest.mark.nvim, pytest.mark.slow]

PLUGIN_INIT = REPO_ROOT / "tests" / "e2e" / "nvim" / "plugin_init.lua"


def run_plugin(tmp: Path, root: Path, file: Path, settings: dict[str, Any], **extra: str) -> dict[str, Any]:
    out = tmp / "nvim-plugin.json"
    env = server_env(tmp)
    env.update(
        {
            "XDG_STATE_HOME": str(tmp / "nvim-state"),
            "XDG_DATA_HOME": str(tmp / "nvim-data"),
            "XDG_CONFIG_HOME": str(tmp / "nvim-config"),
            "CODECTX_NVIM_PLUGIN_ROOT": str(REPO_ROOT),
            "CODECTX_NVIM_CMD": json.dumps(SERVER_COMMAND),
            "CODECTX_NVIM_FILE": str(file),
            "CODECTX_NVIM_INIT": json.dumps(settings),
            "CODECTX_NVIM_OUT": str(out),
            **extra,
        }
    )
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-u", str(PLUGIN_INIT)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.exists(), f"nvim wrote no result (rc {proc.returncode})\n{proc.stderr[-3000:]}"
    result = json.loads(out.read_text())
    assert proc.returncode == 0 and result.get("ok"), f"{result}\nstderr: {proc.stderr[-3000:]}"
    return result


def test_plugin_commands_and_health(tmp_path: Path, backend: FixedBackend) -> None:
    root = make_repo(tmp_path / "repo")
    settings = {
        "backend": {"url": backend.url},
        "index": {"embed": False},  # the lexical index answers search and context
        "lsp": {"debounce_ms": 0, "request_budget_ms": 20000},
    }
    result = run_plugin(
        tmp_path,
        root,
        root / "calc" / "report.py",
        settings,
        CODECTX_NVIM_QUERY="scale",
        CODECTX_NVIM_LINE="7",  # `doubled = scale(values, 2)`, cursor inside the call
        CODECTX_NVIM_COL="20",
    )
    notes = "\n".join(n["msg"] for n in result["notes"])

    # Loaded from the runtimepath: the command, and lsp/codectx.lua merged under setup()'s cmd.
    assert result["loaded"] and result["has_command"]
    assert sorted(result["completions"]) == ["context", "reindex", "search", "status"]
    assert "python" in result["config"]["filetypes"] and "rust" in result["config"]["filetypes"]
    assert result["config"]["cmd"] == SERVER_COMMAND
    assert Path(result["client_root"]) == root  # the nearest marker (.git here)
    assert result["server_info"]["name"] == "codectx"
    # Neovim 0.11 has no inline-completion client: the completion-item path is the one enabled.
    assert result["completion_mode"] == "menu"

    # :Codectx status: one line per folder, then the backend.
    assert str(root) in result["status"] and "backend " in result["status"], result["status"]

    # :Codectx search: the definition of scale in the quickfix list.
    assert result["qf_title"] == "codectx: scale"
    hits = [(Path(item["file"]).name, item["lnum"]) for item in result["qf"]]
    assert ("ops.py", 9) in hits, result["qf"]

    # :Codectx context: a markdown scratch buffer naming the cursor (1-based) and the callee's source.
    context = "\n".join(result["context"])
    assert result["context_filetype"] == "markdown"
    assert result["context"][0] == "# codectx context for calc/report.py:7:21"
    assert "calc/ops.py" in context and "def scale(values, factor):" in context

    # :checkhealth codectx: the server command, its version, index and backend through codectx/health.
    health = "\n".join(result["health"])
    assert "codectx" in health and "ERROR" not in health, health
    assert "version: codectx " in health
    assert "index ready: 4 files" in health  # calc/__init__.py, ops.py, report.py, README.md
    assert f"model server ok ({backend.url}, model fixed-test-model" in health

    assert "reindexing 1 folder" in result["reindex"]
    assert result["bad_subcommand"] and "usage: :Codectx" in result["bad_subcommand"]["msg"]
    assert "no codectx server is running" not in notes


def test_plugin_health_reports_missing_server(tmp_path: Path) -> None:
    """With a server command that does not exist, :checkhealth says so and how to install it."""
    out = tmp_path / "health.txt"
    script = tmp_path / "init.lua"
    script.write_text(
        f"""
vim.opt.runtimepath:prepend({json.dumps(str(REPO_ROOT))})
require("codectx").setup({{ cmd = {{ "codectx-does-not-exist", "lsp" }} }})
vim.api.nvim_create_autocmd("VimEnter", {{ callback = function()
  vim.cmd("checkhealth codectx")
  vim.fn.writefile(vim.api.nvim_buf_get_lines(0, 0, -1, false), {json.dumps(str(out))})
  vim.cmd("qa!")
end }})
""",
        encoding="utf-8",
    )
    env = server_env(tmp_path)
    env.update({"XDG_STATE_HOME": str(tmp_path / "s"), "XDG_DATA_HOME": str(tmp_path / "d")})
    subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-u", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    health = out.read_text()
    assert "server command not found: codectx-does-not-exist" in health
    assert "pipx install ./codectx" in health
    assert "no codectx server is running" in health
