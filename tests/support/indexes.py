"""Shared helpers for the retriever's tests: real indexes of the fixture repositories.

Indexes are built with the indexer's own pipeline into tmp_path (lexical +
symbols; vectors only where a test needs them).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from codectx.settings import Settings, load_settings
from tests.support.paths import FIXTURES

REPOS = FIXTURES / "repos"


def copy_repo(name: str, dest: Path) -> Path:
    root = dest / name
    shutil.copytree(REPOS / name, root)
    (root / ".git").mkdir()  # a workspace root marker, as in a real checkout
    return root


def build_index(root: Path, embed: bool = False, **overrides: Any) -> tuple[Settings, Any]:
    """Index `root` with the real pipeline; returns its settings and the opened store."""
    try:
        from codectx.indexer.pipeline import index_workspace
    except ImportError:
        pytest.skip("the indexer pipeline (codectx.indexer.pipeline) is not available yet")
    from codectx.indexer.storage.store import IndexStore

    values: dict[str, Any] = {
        "index.index_dir": str(root / ".codectx"),
        "index.embed": embed,
        "index.embed_backend": "torch",  # no ONNX export into each test's fresh cache dir
    }
    values.update(overrides)
    settings = load_settings(root, values)
    index_workspace(root, settings)
    return settings, IndexStore.open(settings.index_dir())


def definition_paths(result: Any) -> dict[str, str]:
    """symbol -> path of the definition items of a ContextResult."""
    return {i.symbol: i.path for i in result.items if i.reason == "definition"}
