"""Completion context: budgets, no self-overlap, stable order, sources, bad positions."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from codectx.retriever.context import RecentEdit, assemble_context
from codectx.retriever.errors import BadPosition, UnknownFile
from codectx.retriever.tokens import ApproxTokenCounter, LocalTokenCounter

from tests.support.indexes import build_index, copy_repo

LEXICAL = {"retriever.context_dense": False}


def _big_module(root: Path) -> str:
    """A class with many methods plus helpers in another file, so budgets bite."""
    helpers = [f"def helper_{i}(value):\n    '''Helper {i}.'''\n    return value + {i}\n" for i in range(30)]
    (root / "pkg" / "many.py").write_text("\n\n".join(helpers))
    methods = []
    for i in range(25):
        methods.append(
            f"    def method_{i}(self, value):\n        '''Method {i} of the engine.'''\n"
            + "".join(f"        value = helper_{(i + j) % 30}(value) * {j}\n" for j in range(6))
            + "        return value\n"
        )
    body = "from pkg.many import " + ", ".join(f"helper_{i}" for i in range(30)) + "\n\n\nclass Engine:\n"
    (root / "app" / "engine.py").write_text(body + "\n".join(methods))
    return "app/engine.py"


def _cursor_in(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    for n, row in enumerate(text.split("\n")):
        if needle in row:
            return n + offset, len(row) if offset else row.index(needle) + len(needle)
    raise AssertionError(needle)


@pytest.fixture
def engine_repo(tmp_path: Path) -> tuple[Path, object, object, str]:
    root = copy_repo("python", tmp_path)
    path = _big_module(root)
    settings, store = build_index(root, **LEXICAL)
    return root, settings, store, path


def test_budget_is_respected_and_accounted(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "value = helper_14(value) * 2")
    small = settings.with_overrides({"retriever.budget_tokens": 400})
    counter = LocalTokenCounter()
    result = assemble_context(store, small, path, text, line, char, token_counter=counter)
    b = result.budget
    assert b.total == 400
    assert b.prefix_used <= b.prefix_available and b.suffix_used <= b.suffix_available
    assert b.context_available <= 400 - b.prefix_used - b.suffix_used
    assert b.context_used == sum(i.tokens for i in result.items) <= b.context_available
    assert all(
        i.tokens == counter.count(i.text) or i.tokens >= counter.count(i.text) - 2 for i in result.items
    )
    assert (
        counter.count(result.prefix) <= b.prefix_used + 2
        and counter.count(result.suffix) <= b.suffix_used + 2
    )
    assert b.dropped, "a 400-token budget cannot hold every candidate here"
    assert all(d.why.startswith("budget") for d in b.dropped)
    big = assemble_context(store, settings, path, text, line, char, token_counter=counter)
    assert len(big.items) > len(result.items) and big.budget.total == 2048


def test_nothing_overlaps_the_cursor_region(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "value = helper_3(value) * 0")
    settings = settings.with_overrides({"retriever.budget_tokens": 600})
    result = assemble_context(store, settings, path, text, line, char)
    assert result.items
    for item in result.items:
        if item.path == path:
            assert item.end_line < result.prefix_start_line or item.start_line > result.suffix_end_line
    spans = sorted((i.path, i.start_line, i.end_line) for i in result.items)
    for (p1, _s1, e1), (p2, s2, _e2) in itertools.pairwise(spans):
        assert p1 != p2 or s2 > e1, "items overlap"


def test_definitions_come_first_and_helpers_used_here_are_found(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "def method_7(self, value):", offset=3)
    result = assemble_context(store, settings, path, text, line, char)
    reasons = [i.reason for i in result.items]
    assert reasons[0] == "definition"
    assert reasons == sorted(reasons, key=["definition", "scope", "recent", "retrieved"].index)
    used = {f"helper_{(7 + j) % 30}" for j in range(6)}
    found = {i.symbol for i in result.items if i.reason == "definition"}
    assert used <= found
    assert all(i.path == "pkg/many.py" for i in result.items if i.symbol in used)


def test_scope_siblings_outside_the_window(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "def method_12(self, value):", offset=2)
    settings = settings.with_overrides(
        {"retriever.budget_tokens": 1024, "retriever.prefix_share": 0.1, "retriever.suffix_share": 0.05}
    )
    result = assemble_context(store, settings, path, text, line, char)
    scope = [i for i in result.items if i.reason == "scope"]
    assert scope and all(i.symbol.startswith("Engine.method_") for i in scope)
    assert all(i.text.lstrip().startswith("def method_") for i in scope)


def test_order_is_stable_when_the_cursor_moves_within_a_function(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    start, _ = _cursor_in(text, "def method_9(self, value):")
    results = []
    for offset, char in ((1, 4), (2, 8), (3, 20), (5, 12), (7, 0)):
        results.append(assemble_context(store, settings, path, text, start + offset, char))
    keys = [[(i.path, i.start_line, i.end_line, i.reason) for i in r.items] for r in results]
    assert keys[0] and all(k == keys[0] for k in keys)
    again = assemble_context(store, settings, path, text, start + 1, 4)
    assert [i.text for i in again.items] == [i.text for i in results[0].items]


def test_recent_edits_from_other_files_only(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "def method_2(self, value):", offset=1)
    recent = [
        RecentEdit("app/settings.py", 2, 2, "DEFAULT_PORT = 8080"),
        RecentEdit(path, 0, 0, "from pkg.many import helper_0"),
    ]
    result = assemble_context(store, settings, path, text, line, char, recent=recent)
    mine = [i for i in result.items if i.reason == "recent"]
    assert [(i.path, i.start_line) for i in mine] == [("app/settings.py", 2)]


def test_search_is_skipped_when_structure_fills_the_budget(engine_repo: tuple) -> None:
    root, settings, store, path = engine_repo
    text = (root / path).read_text()
    line, char = _cursor_in(text, "value = helper_20(value) * 1")
    tight = settings.with_overrides({"retriever.budget_tokens": 256})
    result = assemble_context(store, tight, path, text, line, char, token_counter=ApproxTokenCounter())
    assert any("search skipped" in n for n in result.notes)
    assert all(i.reason != "retrieved" for i in result.items)


def test_bad_positions_and_paths_get_clear_errors(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, **LEXICAL)
    text = (root / "app/main.py").read_text()
    n_lines = len(text.split("\n"))
    with pytest.raises(BadPosition, match="past the end"):
        assemble_context(store, settings, "app/main.py", text, n_lines + 5, 0)
    with pytest.raises(BadPosition, match="negative"):
        assemble_context(store, settings, "app/main.py", text, -1, 0)
    with pytest.raises(UnknownFile, match="relative"):
        assemble_context(store, settings, "/etc/passwd", "x", 0, 0)
    clamped = assemble_context(store, settings, "app/main.py", text, 0, 10_000)
    assert clamped.character == len(text.split("\n")[0])


def test_a_file_missing_from_the_index_and_broken_code_still_work(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, **LEXICAL)
    text = "from pkg.util.helpers import parse_port\n\ndef broken(:\n    x = parse_port(\n"
    result = assemble_context(store, settings, "app/new_file.py", text, 3, len("    x = parse_port("))
    assert any(i.path == "pkg/util/helpers.py" and i.symbol == "parse_port" for i in result.items)
    empty = assemble_context(store, settings, "app/empty.py", "", 0, 0)
    assert empty.prefix == "" and empty.suffix == ""


def test_vectors_present_but_context_dense_off_still_answers(tmp_path: Path) -> None:
    """With `context_dense = false` the scope is never embedded, even where the index has vectors:
    similar code comes from full text alone and the answer keeps its retrieved items."""
    from codectx.indexer.embedding.embedder import Embedder

    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, embed=True, **LEXICAL)
    embedder = Embedder.from_settings(settings)
    path = "pkg/client.py"
    text = (root / path).read_text()
    line, char = _cursor_in(text, "def send", offset=1)
    calls = embedder.calls
    result = assemble_context(store, settings, path, text, line, char, embedder=embedder)
    assert embedder.calls == calls, "context_dense=false must not embed the scope"
    assert any(c.reason == "retrieved" for c in result.ranked)
    dense = settings.with_overrides({"retriever.context_dense": True, "retriever.context_embed_always": True})
    again = assemble_context(store, dense, path, text, line, char, embedder=embedder)
    assert embedder.calls == calls + 1 and again.items


def test_the_scope_of_a_minified_line_is_the_part_around_the_cursor() -> None:
    """On a 100,000-character line (a minified bundle) the scope's text, which every later step
    tokenizes, is the part before the cursor and a little after, not the whole line; a file of
    ordinary lines gives its lines unchanged."""
    from codectx.retriever.candidates import LINE_CHARS, scope_texts
    from codectx.retriever.cursor_info import CursorInfo

    bundle = "".join(f"var a{i}=b{i}(c{i});" for i in range(6000))
    row = bundle + "store.cacheGet(" + bundle
    lines = ["import { store } from './store'", row, "export default run"]
    query, typing = scope_texts(lines, 1, CursorInfo(), len(bundle) + len("store.cacheGet("))
    assert "store.cacheGet(" in query and query == typing
    assert query.startswith(lines[0]) and query.endswith(lines[2])
    assert len(query) <= len(lines[0]) + len(lines[2]) + LINE_CHARS + 2
    short = ["def f(x):", "    return g(x)", ""]
    assert scope_texts(short, 1, CursorInfo(), 10)[0] == "\n".join(short)
