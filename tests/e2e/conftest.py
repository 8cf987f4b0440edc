"""Fixtures of the editor tests: the fixed-answer model server (`backend`) the editors complete from,
and the VS Code extension copied to a temporary folder (`workdir`) and packaged there (`vsix`), once
per test module.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.lsp_helpers import backend
from tests.support.vscode import EXT, NODE, PACKAGE_FLAGS, SOURCES, need_tools, node_tool, run_checked

__all__ = ["backend", "vsix", "workdir"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need_tools()
    root = tmp_path_factory.mktemp("vscode-extension")
    for name in SOURCES:
        src = EXT / name
        if src.is_dir():
            shutil.copytree(src, root / name)
        elif src.exists():
            shutil.copy2(src, root / name)
    (root / "node_modules").symlink_to(EXT / "node_modules", target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def vsix(workdir: Path) -> Path:
    run_checked([str(NODE), "scripts/bundle.mjs", "--minify"], workdir, timeout=120)
    out = workdir / "codectx.vsix"
    run_checked(
        [*node_tool(workdir, "vsce"), "package", *PACKAGE_FLAGS, "--out", str(out)],
        workdir,
        timeout=300,
    )
    return out
