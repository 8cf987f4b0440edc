"""The snapshot's background load on a real index: the lookup phase answers what the store answers,
context assembled then is stable, and the switch to memory happens once, at release.

The background load is held by the test hook (`hold_loads_until`), never by a sleep.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from codectx.retriever.context import assemble_context
from codectx.retriever.snapshot import IndexSnapshot
from codectx.retriever.snapshotload import hold_loads_until

from tests.support.indexes import build_index, copy_repo


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "release"
    hold_loads_until(path)
    yield path
    hold_loads_until(None)


def _order(result: object) -> list[tuple[str, int, str]]:
    return [(i.path, i.start_line, i.reason) for i in result.items]  # type: ignore[attr-defined]


def test_lookup_phase_answers_as_the_store_then_switches_once(tmp_path: Path, gate: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root)
    snap = IndexSnapshot(store)
    snap.load_in_background()
    assert snap.phase == "lookup"
    # Each lookup gives what the store's own query gives, in the same order.
    for name in ("format_url", "Client", "connect", "helpers", "no_such_name"):
        assert snap.symbols_named(name) == store.symbols_named(name), name
    for path in ("app/main.py", "pkg/client.py", "pkg/util/helpers.py", "missing.py"):
        assert snap.chunks_for_file(path) == store.chunks_for_file(path), path
        assert snap.file_imports(path) == store.file_imports(path), path
        assert snap.symbols_in_file(path) == store.symbols_in_file(path), path
    assert snap.receiver_calls() is None  # workspace-wide counts come with the memory phase

    text = (root / "app" / "main.py").read_text("utf-8")
    line = next(i for i, row in enumerate(text.split("\n")) if "fmt(" in row)
    first = assemble_context(snap, settings, "app/main.py", text, line, 4)
    assert any(i.reason == "definition" and i.path != "app/main.py" for i in first.items), first.items
    assert any("index lookups" in note for note in first.notes)
    assert _order(assemble_context(snap, settings, "app/main.py", text, line, 4)) == _order(first)
    assert snap.phase == "lookup"  # still held: nothing switched under the requests

    gate.touch()
    loader = snap._loader
    assert loader is not None
    loader.join(timeout=120)
    assert snap.phase == "memory"
    assert set(snap.load_timings_ms) >= {"imports", "chunks", "symbols", "bm25", "receivers", "total"}
    for name in ("format_url", "Client", "connect"):
        assert snap.symbols_named(name) == store.symbols_named(name), name
    for path in ("app/main.py", "pkg/client.py", "missing.py"):  # from the loaded names, no scan
        assert snap.symbols_in_file(path) == store.symbols_in_file(path), path
    loaded = assemble_context(snap, settings, "app/main.py", text, line, 4)
    assert not any("index lookups" in note for note in loaded.notes)
    assert any(i.reason == "definition" and i.path != "app/main.py" for i in loaded.items)
    assert _order(assemble_context(snap, settings, "app/main.py", text, line, 4)) == _order(loaded)


def test_warm_lookups_reads_the_tables_in_the_lookup_phase_only(tmp_path: Path, gate: Path) -> None:
    root = copy_repo("python", tmp_path)
    _settings, store = build_index(root)
    direct = IndexSnapshot(store)
    direct.warm_lookups()  # no background load: lookups go to the store, nothing is read ahead
    assert direct._columns is None

    snap = IndexSnapshot(store)
    snap.load_in_background()
    snap.warm_lookups()
    columns = snap._columns
    assert columns is not None
    # Every table the first lookups answer from is read; the lookups then give the store's answers.
    assert columns._symbols is not None and columns._chunks is not None and columns._imports is not None
    assert snap.symbols_named("format_url") == store.symbols_named("format_url")
    assert snap.chunks_for_file("pkg/client.py") == store.chunks_for_file("pkg/client.py")
    assert snap.file_imports("app/main.py") == store.file_imports("app/main.py")
    assert snap.phase == "lookup" and not snap.pacer.busy  # the load was given way to, and is again


def test_the_direct_phase_looks_a_few_names_up_before_reading_the_whole_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codectx.retriever import snapshot as snapshot_module

    root = copy_repo("python", tmp_path)
    _settings, store = build_index(root)
    snap = IndexSnapshot(store)
    assert snap.phase == "direct"
    whole_reads: list[int] = []
    real = snap._load_symbols
    monkeypatch.setattr(snap, "_load_symbols", lambda: whole_reads.append(1) or real())
    monkeypatch.setattr(snapshot_module, "DIRECT_NAME_LOOKUPS", 3)
    names = ["format_url", "Client", "connect", "helpers", "no_such_name"]
    expected = {name: store.symbols_named(name) for name in names}
    for name in names[:3]:  # a one-shot command's few names: one lookup each, no whole-table read
        assert snap.symbols_named(name) == expected[name], name
        assert snap.symbols_named(name) == expected[name], name  # asked again: remembered
    assert whole_reads == []
    for name in names[3:]:  # past the limit: the whole table, read once, gives the same answers
        assert snap.symbols_named(name) == expected[name], name
    assert whole_reads == [1]
    assert [snap.symbols_named(n) for n in names] == [expected[n] for n in names]
    assert whole_reads == [1]
