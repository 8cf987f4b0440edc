"""Commands run in a subfolder act on the enclosing workspace (as git's do); a named folder is itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def codectx(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"HOME": str(home)} if home else {})}
    return subprocess.run(
        [sys.executable, "-m", "codectx", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".codectx.toml").write_text("[retriever]\nk = 3\n")
    (root / "pkg" / "deep" / "calc.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    (root / "top.py").write_text("def top_level_helper():\n    return 1\n")
    return root


def test_index_search_status_and_config_from_a_subfolder_use_the_workspace(workspace: Path) -> None:
    sub = workspace / "pkg" / "deep"
    built = codectx("index", "--no-embed", cwd=sub)
    assert built.returncode == 0, built.stderr
    assert f"indexing the workspace at {workspace}" in built.stderr
    assert (workspace / ".codectx").is_dir() and not (sub / ".codectx").exists()
    found = codectx("search", "top_level_helper", "--lexical", "--json", cwd=sub)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "top.py"
    status = codectx("status", "--json", cwd=sub)
    assert status.returncode == 0, status.stderr
    shown = codectx("config", "show", "--json", cwd=sub)
    data = json.loads(shown.stdout)
    assert data["root"] == str(workspace)
    assert data["settings"]["retriever.k"]["value"] == 3


def test_a_folder_named_on_the_command_line_is_its_own_workspace(workspace: Path) -> None:
    sub = workspace / "pkg"
    built = codectx("index", str(sub), "--no-embed", cwd=workspace)
    assert built.returncode == 0, built.stderr
    assert (sub / ".codectx").is_dir() and not (workspace / ".codectx").exists()


def test_the_walk_stops_below_a_home_kept_under_git(tmp_path: Path) -> None:
    home = tmp_path / "home"  # a home kept under git (dotfiles)
    (home / ".git").mkdir(parents=True)
    project = home / "projects" / "loose"
    project.mkdir(parents=True)
    (project / "a.py").write_text("def a():\n    return 1\n")
    shown = codectx("config", "show", "--json", cwd=project, home=home)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["root"] == str(project.resolve())
