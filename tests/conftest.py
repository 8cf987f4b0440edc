"""Test-wide isolation: nothing a test does may touch the user's home or config."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# Fixture repositories (tests/fixtures/planted has a tests/ folder of its own) are data, not tests.
collect_ignore_glob = ["fixtures/*"]

_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-tests-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ["HOME"] = str(_SANDBOX / "home")
os.environ.pop("GIT_CONFIG_GLOBAL", None)  # the developer's git config names no excludes file here
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# codectx.runtime points HF_HOME into codectx's cache when unset; in-process CLI calls would pin it
# to the first test's folder for the whole session.
os.environ.setdefault("HF_HOME", str(_SANDBOX / "huggingface"))
for _name in list(os.environ):
    if _name.startswith("CODECTX_") and _name != "CODECTX_VLLM_PYTHON":
        del os.environ[_name]


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own config, state and cache folders."""
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(tmp_path / "_xdg" / var.lower()))
