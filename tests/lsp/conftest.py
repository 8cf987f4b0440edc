"""Fixtures of the language-server tests: the fixture workspace and the fixed-answer model server."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.lsp_helpers import backend, make_repo

__all__ = ["backend", "repo"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The small Python project of tests/support/lsp_helpers.py (`make_repo`), in this test's folder."""
    return make_repo(tmp_path / "repo")
