"""Small workspaces that tests write under their tmp_path: files from a dict, plus a `.git`
folder (a workspace root marker, as in a real checkout), and lexical settings that read no user
configuration and no environment."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from codectx.settings import Settings, load_settings


def write_workspace(root: Path, files: Mapping[str, str]) -> Path:
    """`root` with each workspace-relative path of `files` written with its text, and `.git`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".git").mkdir(exist_ok=True)
    return root


def lexical_settings(root: Path) -> Settings:
    """Settings for `root` without vectors, reading no user config file and no environment."""
    return load_settings(root, {"index.embed": False}, environ={}, user_config=root.parent / "none.toml")
