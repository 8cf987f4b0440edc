"""The neighbours list of completion context: what the code around the scope calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.retriever.context import assemble_context
from codectx.retriever.neighbours import REACH_LINES, nearby_calls

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


def test_nearby_calls_rank_closer_and_more_frequent_calls_first() -> None:
    lines = [
        "def far():",  # 0
        "    fields.Url()",  # 1
        "",
        "def before():",  # 3
        "    fields.Dict(x.y())",  # 4
        "    fields.Dict()",  # 5
        "def scope():",  # 6
        "    fields.Email()",  # 7: inside the scope: left to the `used` list
        "",
        "def after():",  # 9
        "    fields.Float()",  # 10
    ]
    ranked = nearby_calls(lines, (6, 8), skip=set())
    names = [chain for chain, _score in ranked]
    assert "fields.Email" not in names
    assert names[0] == "fields.Dict"  # twice, two lines away
    assert names.index("fields.Float") < names.index("fields.Url")  # 2 lines away against 5
    assert "x.y" in names
    assert dict(ranked)["fields.Dict"] > dict(ranked)["fields.Float"]


def test_nearby_calls_read_only_lines_within_reach_of_the_scope() -> None:
    lines = ["far.away()", *[""] * (REACH_LINES + 5), "def scope():", "    pass", "near.by()"]
    scope = (REACH_LINES + 6, REACH_LINES + 7)
    assert [chain for chain, _s in nearby_calls(lines, scope, skip=set())] == ["near.by"]


def test_nearby_calls_skip_what_the_scope_uses_and_data_lines() -> None:
    lines = [
        "a.run()",
        "b.stop()",
        "def helper(x):",  # a definition, not a call
        "    if (x): return",  # a keyword before a space
        "    token (str): the token",  # a docstring's argument
        "def scope():",
        "    pass",
        "table(" + "1, " * 200 + ")",
    ]
    ranked = dict(nearby_calls(lines, (5, 6), skip={"run"}))
    assert set(ranked) == {"b.stop"}
    assert "a.run" not in ranked  # the scope already calls a `run`
    assert "b.stop" in ranked
    assert "table" not in ranked  # a line over MAX_LINE characters is data


CLASSES = ["Url", "Dict", "Float", "Email", "Integer", "Nested", "String", "Boolean", "Date", "Time"]
FIELDS = "\n\n".join(
    f"class {name}:\n    def __init__(self, **kw):\n        self.kw = kw"
    for name in [*CLASSES, *(f"Extra{i}" for i in range(30))]
)

# A test module: the test being written sits between tests that build `fields.Dict`.
TESTS = """from lib import fields


def test_dict_default():
    field = fields.Dict(keys=1)
    assert field.kw


def test_new():
    field =@
    assert field


def test_dict_values():
    other = fields.Dict(values=2)
    assert other.kw
""".replace("=@", "= ")  # the line being written ends in a space


@pytest.fixture
def fields_repo(tmp_path: Path) -> tuple[Path, object, object]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / "fields.py").write_text(FIELDS)
    (root / "tests").mkdir()
    (root / "tests" / "test_fields.py").write_text(TESTS)
    settings, store = build_index(root, **LEXICAL)
    return root, settings, store


def _rank(result: object, symbol: str) -> int | None:
    ranked = [c for c in result.ranked if c.reason == "definition"]  # type: ignore[attr-defined]
    return next((i for i, c in enumerate(ranked) if c.symbol == symbol), None)


def test_what_the_neighbouring_tests_call_ranks_first(fields_repo: tuple) -> None:
    _root, settings, store = fields_repo
    line = TESTS.split("\n").index("    field = ")
    result = assemble_context(store, settings, "tests/test_fields.py", TESTS, line, len("    field = "))
    assert _rank(result, "Dict") == 0
    found = next(c for c in result.ranked if c.symbol == "Dict")
    assert found.path == "lib/fields.py"
    assert "called by the code around this scope" in found.why
    off = settings.with_overrides({"retriever.neighbour_weight": 0.0})
    plain = assemble_context(store, off, "tests/test_fields.py", TESTS, line, len("    field = "))
    assert not any("around this scope" in c.why for c in plain.ranked)
    assert _rank(plain, "Dict") != 0  # without the list, nothing singles it out of 40 classes
