"""Two lists of likely next calls (retriever/pending.py, retriever/tested.py): a function's
parameters and return type its body has not used yet, and what a test's name names."""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.retriever.context import assemble_context
from codectx.retriever.cursor_info import CursorInfo, Scope
from codectx.retriever.pending import parse_head, pending_in_scope, pending_names
from codectx.retriever.tested import MAX_LOOKUPS, definitions_tested, named_candidates, words_of_test

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


@pytest.mark.parametrize(
    ("head", "language", "bound", "body"),
    [
        ("def hc(pm: PluginManager) -> HookCaller:\n    pass", "python", ["pm", "HookCaller"], "\n    pass"),
        (
            "async def f(self, request: Request, *args, **kw) -> JSONResponse:",
            "python",
            ["self", "request", "args", "kw", "JSONResponse"],
            "",
        ),
        (
            'def f(a: dict[str, int] = {}, b=(1, 2), c=x<y, d="(", e=1>0) -> tuple[A, B]:',
            "python",
            ["a", "b", "c", "d", "e", "tuple", "A", "B"],
            "",
        ),
        # A body on the head's own line is body, not head.
        ("def f(x): return g(x)\nif helper:", "python", ["x"], " return g(x)\nif helper:"),
        ("function f(a, b = 1, ...rest) {", "javascript", ["a", "b", "rest"], ""),
        (
            "export function g<T extends X>(x: Map<string, T>, cb: (a) => void): Promise<R> {",
            "typescript",
            ["x", "cb", "Promise", "R"],
            "",
        ),
        ("@Get()\nfind(id: string) {\n  return 1", "typescript", ["id"], "\n  return 1"),
        (
            '@pytest.mark.parametrize(\n    "a", [(1, 2)]\n)\ndef test(a, factory):',
            "python",
            ["a", "factory"],
            "",
        ),
    ],
)
def test_parse_head_reads_parameter_names_and_the_return_type(
    head: str, language: str, bound: list[str], body: str
) -> None:
    parsed = parse_head(head, language)
    assert parsed is not None
    assert parsed[0] == bound
    assert head[parsed[1] :] == body


@pytest.mark.parametrize(
    "head", ["def broken(a, b", "def f(" + "a," * 5000, "", "x = 1\ny = 2", "def f(a):"[:-1]]
)
def test_parse_head_gives_up_on_what_is_not_a_whole_head(head: str) -> None:
    assert parse_head(head, "python") is None


def test_pending_names_are_bound_in_the_head_and_absent_from_the_body() -> None:
    text = "def test_app(client_factory, tmp_path) -> Response:\n    path = tmp_path / 'x'\n    "
    names = ["client_factory", "tmp_path", "Response", "path"]
    assert pending_names(text, names, "python") == ["client_factory", "Response"]
    # Once the body uses a parameter it is no longer pending.
    assert pending_names(text + "client = client_factory(app)\n", names, "python") == ["Response"]
    # Languages whose heads put the type first are not read (`Request` is no parameter).
    assert pending_names("void handle(Request req) {\n", ["Request", "req"], "java") == []


def test_only_a_function_scope_has_pending_names() -> None:
    text = "class Schema(Base):\n    name = 1\n"
    info = CursorInfo(enclosing=Scope("Schema", 0, 1, "class", "Schema"))
    assert pending_in_scope(info, text, ["Base"], "python") == set()
    info = CursorInfo(enclosing=Scope("f", 0, 1, "function", "f"))
    assert pending_in_scope(info, "def f(base):\n    pass\n", ["base"], "python") == {"base"}


def test_test_words_and_the_names_they_spell() -> None:
    assert words_of_test("test_from_timestamp") == ["from", "timestamp"]
    assert words_of_test("TestDateTimeField") == ["date", "time", "field"]
    assert words_of_test("testing") == []
    assert words_of_test("helper") == []
    names = named_candidates(["from", "timestamp"])
    assert names[:4] == ["from_timestamp", "fromtimestamp", "fromTimestamp", "FromTimestamp"]
    assert "timestamp" in names
    # A short single word is too common to look up.
    assert "at" not in named_candidates(["at", "noon"])


def test_definitions_tested_only_in_test_files_and_never_test_code() -> None:
    from codectx.indexer.model import Definition

    table = {
        "timetz": [
            Definition("timetz", "Arrow.timetz", "method", "arrow/arrow.py", "python", 10, 12),
            Definition("timetz", "timetz", "function", "tests/helpers.py", "python", 1, 3),
        ]
    }
    scopes = [
        Scope("TestArrow", 1, 40, "class"),
        Scope("test_timetz", 5, 9, "method", "TestArrow.test_timetz"),
    ]
    found = definitions_tested("tests/test_arrow.py", scopes, lambda n: table.get(n, []))
    assert [(d.qualname, name) for d, name in found] == [("Arrow.timetz", "timetz")]
    assert definitions_tested("arrow/parser.py", scopes, lambda n: table.get(n, [])) == []


def test_a_long_test_name_costs_a_bounded_number_of_lookups() -> None:
    asked: list[str] = []

    def named(name: str) -> list[object]:
        asked.append(name)
        return []

    words = "_".join(f"word{i}" for i in range(400))
    scopes = [Scope(f"Test{'Part' * 50}", 0, 99, "class"), Scope(f"test_{words}", 1, 9, "method")]
    assert definitions_tested("tests/test_x.py", scopes, named) == []  # type: ignore[arg-type]
    assert 0 < len(asked) <= MAX_LOOKUPS
    # The innermost test's name goes first.
    assert asked[0].startswith("word0")


CONFTEST = """import pytest


@pytest.fixture
def client_factory():
    def make(app):
        return ("client", app)

    return make
"""
LIB = '''class Response:
    """What a handler answers."""

    def __init__(self, body):
        self.body = body


class Clock:
    def timetz(self):
        return 0

    def utcoffset(self):
        return 0


def render_page(name):
    return name


def read_config(path):
    return path


def merge_settings(a, b):
    return a


def load_plugins(names):
    return names
'''
TESTS = """from lib import Response, render_page, read_config, merge_settings, load_plugins


def test_app(client_factory):
    app = render_page("x")
    @


def handler(request) -> Response:
    page = render_page(request)
    @


class TestClock:
    def test_timetz(self):
        value = 1
        @
"""


@pytest.fixture
def repo(tmp_path: Path) -> tuple[object, object]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "lib.py").write_text(LIB)
    (root / "tests" / "test_app.py").write_text(TESTS.replace("@", "pass"))
    return build_index(root, **LEXICAL)


def _ranked(store: object, settings: object, text: str, marker: int) -> list[str]:
    lines = text.split("\n")
    line = [i for i, row in enumerate(lines) if row.strip() == "@"][marker]
    lines[line] = lines[line].replace("@", "")
    result = assemble_context(store, settings, "tests/test_app.py", "\n".join(lines), line, len(lines[line]))
    return [c.symbol for c in result.ranked if c.reason == "definition"]


def test_an_unused_fixture_parameter_and_return_type_lead_and_fall_back_without_the_list(repo: tuple) -> None:
    settings, store = repo
    ranked = _ranked(store, settings, TESTS, 0)
    assert ranked[0] == "client_factory", ranked
    assert _ranked(store, settings, TESTS, 1)[0] == "Response"
    off = settings.with_overrides({"retriever.pending_weight": 0.0})
    plain = _ranked(store, off, TESTS, 0)
    assert plain.index("client_factory") > ranked.index("client_factory"), plain


def test_a_method_the_test_name_names_is_offered(repo: tuple) -> None:
    settings, store = repo
    ranked = _ranked(store, settings, TESTS, 2)
    assert "Clock.timetz" in ranked[:2], ranked
    off = settings.with_overrides({"retriever.tested_weight": 0.0})
    assert "Clock.timetz" not in _ranked(store, off, TESTS, 2)[:2]
