"""Receivers' classes from the code in view (retriever/receiver_types.py), and what completion
context makes of them: the class's methods (and its bases') before the member's name is typed."""

from __future__ import annotations

from pathlib import Path

from codectx.retriever.context import assemble_context
from codectx.retriever.receiver_types import (
    annotated_names,
    attribute_calls,
    attribute_types,
    factory_calls,
    go_parameter_types,
    scope_types,
)
from codectx.retriever.returns import returned_class

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


def test_annotations_name_classes_not_builtins_or_typing_wrappers() -> None:
    text = 'def f(self, env: "Environment", x: t.Optional[Foo] = None, n: int = 1, s: te.Literal[1]):\n'
    text += "    y: Bar | None = None\n    z = {'a': Baz}\n"
    assert annotated_names(text) == {"env": "Environment", "x": "Foo", "y": "Bar"}
    assert annotated_names("function f(env: Environment, n?: Options): Result {") == {
        "env": "Environment",
        "n": "Options",
    }


def test_attribute_types_come_from_the_class_body_and_init() -> None:
    cls = (
        "class Parser:\n"
        "    stream: TokenStream\n"
        "    def __init__(self, env: Environment, name):\n"
        "        self.env = env\n"
        "        self.name = name\n"
        "        self.lexer = lexers.Lexer(env)\n"
        "        self.cache: Cache = {}\n"
    )
    assert attribute_types(cls) == {
        "self.stream": "TokenStream",
        "self.env": "Environment",
        "self.lexer": "lexers.Lexer",
        "self.cache": "Cache",
    }
    # A constructed object beats an annotation of the same name; the class's attributes come last.
    assert scope_types("def g(c: Base):\n    c = Client()", cls, {"c": "Client"})["c"] == "Client"


def test_factories_and_their_return_annotations() -> None:
    assert factory_calls("x = make(1)\ny = Foo.from_x(2)\nz = Z()\n", {"z": "Z"}) == {
        "x": "make",
        "y": "Foo.from_x",
    }
    assert returned_class('def f(a) -> "Environment":') == "Environment"
    assert returned_class("def f(a) -> t.Optional[Template]:") == "Template"
    assert returned_class("function f(a): Promise<Foo> {") == "Foo"
    assert returned_class("def f(a) -> int:") == returned_class("def f(a) -> Any:") == ""
    # The index's one-line TypeScript signatures, without the body's `{`.
    assert returned_class("export function f(a: number): Promise<Foo>") == "Foo"
    assert returned_class("const g = (a: string): nodes.Bar =>") == "nodes.Bar"
    assert returned_class("m(x: number): Baz | null") == "Baz"
    assert returned_class("def f(a) -> List[Foo]:") == returned_class("m(x): void") == ""
    assert returned_class("def f(a) -> " + " " * 5000 + "x") == ""  # no type: read in one pass
    assert returned_class("fn build_client(url: &str) -> Client") == "Client"  # Rust
    assert returned_class("auto make_widget(int a) -> Widget") == "Widget"  # C++'s trailing type
    assert returned_class('def f(a="->"):') == ""  # an arrow in a default value
    # A default value's ternary on a parameter's line is not a return type.
    assert returned_class('constructor(\n  name = dev ? "Set@" + next() : "Set",\n) {') == ""
    # A return type that holds a function type: its `)` and `=>` are not the parameters' end.
    assert returned_class("function on(e: string): Handler<(e: Event) => void> {") == "Handler"
    assert returned_class("function f(\n  a: (x) => void,\n): Registry<(x: T) => T> {") == "Registry"
    assert returned_class("const h = (a): Bar => (x)") == returned_class("def f(a): return g(x)") == ""


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _repo(root: Path) -> None:
    (root / ".git").mkdir(parents=True)
    base = "class Stream:\n" + "".join(
        f"    def {n}(self):\n        '''{n} the stream.'''\n        return 1\n\n"
        for n in ("rewind", "close")
    )
    tokens = "from pkg.base import Stream\n\n\nclass TokenStream(Stream):\n" + "".join(
        f"    def {n}(self):\n        return 1\n\n" for n in ("look", "skip", "expect", "current")
    )
    _write(root, "pkg/base.py", base)
    _write(root, "pkg/tokens.py", tokens)
    _write(root, "pkg/env.py", "def make_stream(text) -> 'TokenStream':\n    return None\n")


def _ranked(root: Path, rel: str, writing: str, tail: str = "\n") -> list[str]:
    _write(root, rel, writing + tail)
    settings, store = build_index(root, **LEXICAL)
    text = (root / rel).read_text()
    rows = writing.split("\n")
    result = assemble_context(store, settings, rel, text, len(rows) - 1, len(rows[-1]))
    # Definitions only: in a workspace this small, similar-code search finds every method anyway.
    return [c.symbol for c in result.ranked if c.reason == "definition"][:10]


def test_an_annotated_parameter_offers_its_classs_methods(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    writing = (
        "from pkg.tokens import TokenStream\n\n\n"
        "def parse_block(stream: TokenStream):\n"
        "    stream.look()\n"
        "    return "
    )
    top = _ranked(root, "pkg/parse.py", writing)
    # Nothing in the workspace calls these: only the receiver's class can offer them.
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top
    assert "Stream.rewind" in top, top  # a base class's method


def test_an_attribute_set_in_init_offers_its_classs_methods(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    writing = (
        "from pkg.tokens import TokenStream\n\n\n"
        "class Parser:\n"
        "    def __init__(self, text):\n"
        "        self.stream = TokenStream(text)\n\n"
        "    def parse(self):\n"
        "        return "
    )
    top = _ranked(root, "pkg/parser.py", writing)
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top


def test_a_factorys_return_annotation_types_its_result(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    _write(root, "pkg/env.py", "from pkg.tokens import TokenStream\n\n\n" + (root / "pkg/env.py").read_text())
    writing = (
        "from pkg.env import make_stream\n\n\n"
        "def parse_text(text):\n"
        "    tokens = make_stream(text)\n"
        "    return "
    )
    top = _ranked(root, "pkg/read.py", writing)
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top


def test_typescript_annotated_fields_and_parameters(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    methods = "".join(f"  {n}(): number {{\n    return 1;\n  }}\n" for n in ("look", "skip", "expect"))
    _write(root, "lib/tokens.ts", f"export class TokenStream {{\n{methods}}}\n")
    writing = (
        "import { TokenStream } from './tokens';\n\n"
        "export class Parser {\n"
        "  private stream: TokenStream;\n\n"
        "  parse(): number {\n"
        "    return "
    )
    top = _ranked(root, "lib/parser.ts", writing, "\n  }\n}\n")
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top


def test_a_tests_fixture_parameter_takes_the_class_its_fixture_returns(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    # The fixture's file imports the class; the test file imports nothing of it.
    _write(
        root,
        "tests/conftest.py",
        "import pytest\nfrom pkg import tokens\n\n\n@pytest.fixture\ndef stream():\n"
        "    return tokens.TokenStream()\n",
    )
    writing = "def test_reads(stream):\n    stream.look()\n    assert "
    top = _ranked(root, "tests/test_read.py", writing)
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top
    # Outside test files a parameter is not a fixture: nothing offers the class's methods.
    plain = _ranked(root, "pkg/reader.py", writing.replace("test_reads", "reads"))
    assert not {"TokenStream.skip", "TokenStream.expect"} & set(plain), plain


def test_a_fixture_returns_its_class_after_a_run_of_blank_lines(tmp_path: Path) -> None:
    # Each line is read once for `return Class(`: `^\s*` crossed blank lines, so a run followed by
    # another statement was read again from each of its lines.
    root = tmp_path / "ws"
    _repo(root)
    _write(
        root,
        "tests/conftest.py",
        "import pytest\nfrom pkg import tokens\n\n\n@pytest.fixture\ndef stream():\n"
        + "\n" * 2000
        + "    value = 1\n    return tokens.TokenStream()\n",
    )
    top = _ranked(root, "tests/test_read.py", "def test_reads(stream):\n    stream.look()\n    assert ")
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top


def test_a_known_classs_methods_move_up_by_the_class_member_weight(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    helpers = [f"helper_{i}" for i in range(8)]
    _write(root, "pkg/helpers.py", "".join(f"def {h}(x):\n    return x\n\n\n" for h in helpers))
    writing = (
        f"from pkg.helpers import {', '.join(helpers)}\nfrom pkg.tokens import TokenStream\n\n\n"
        "def parse_block(stream: TokenStream):\n"
        "    stream.look()\n"
        "    return "
    )
    rel = "pkg/parse.py"
    _write(root, rel, writing + "\n")
    settings, store = build_index(root, **LEXICAL)
    off, _ = build_index(root, **LEXICAL, **{"retriever.class_member_weight": 0.0})
    rows = writing.split("\n")

    def place(s: object) -> int:
        ranked = assemble_context(store, s, rel, writing + "\n", len(rows) - 1, len(rows[-1])).ranked
        names = [c.symbol for c in ranked if c.reason == "definition"]
        return names.index("TokenStream.skip")

    assert place(settings) < place(off)


def test_go_receivers_and_parameters_are_typed() -> None:
    head = "func (t *Test) runValid(p Parser, fsys fs.FS, n int) Test {\n\treturn t\n}\n"
    assert go_parameter_types(head) == {"t": "Test", "p": "Parser", "fsys": "fs.FS"}
    assert go_parameter_types("func detailed(r tomltest.Runner, a, b int) string {") == {
        "r": "tomltest.Runner"
    }
    assert go_parameter_types("  function(a B) {") == {}  # JavaScript: no Go head
    # A head after a run of blank lines and a statement (each line start is tried once), and a
    # head whose name is followed by a long run of spaces before its `(`.
    assert go_parameter_types("\n \n" * 2000 + "\tx := 1\n\tfunc (t *Test) run(p Parser) {") == {
        "t": "Test",
        "p": "Parser",
    }
    assert go_parameter_types("func (t *Test) run" + " " * 3000 + "(p Parser) {") == {
        "t": "Test",
        "p": "Parser",
    }
    assert go_parameter_types("func (t *Test) run" + " " * 3000 + "x") == {}
    assert scope_types(head, "", {})["t"] == "Test"


def test_a_go_types_methods_in_other_files_of_its_package_are_offered(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    _write(root, "go.mod", "module example.com/runner\n\ngo 1.22\n")
    _write(root, "runner/test.go", "package runner\n\ntype Test struct {\n\tName string\n}\n")
    _write(
        root,
        "runner/compare.go",
        "package runner\n\nfunc (t Test) compareJSON(want string) bool {\n\treturn want == t.Name\n}\n",
    )
    writing = "package runner\n\nfunc (t Test) runValid(input string) bool {\n\treturn "
    top = _ranked(root, "runner/run.go", writing, "\n}\n")
    # The method is in another file of the package than the type; only the receiver's type offers it.
    assert "Test.compareJSON" in top, top


def _char_repo(root: Path) -> None:
    (root / ".git").mkdir(parents=True)
    methods = "".join(
        f"    def {n}(self) -> bool:\n        return True\n\n" for n in ("is_nl", "is_ws", "is_kv_sep")
    )
    _write(root, "pkg/char.py", f"class Char(str):\n{methods}")
    _write(
        root,
        "pkg/source.py",
        "from pkg.char import Char\n\n\nclass Source:\n    def __init__(self, text):\n"
        "        self._text = text\n\n    @property\n    def current(self) -> Char:\n"
        "        return Char(self._text[0])\n",
    )


def test_a_property_returning_a_typed_attributes_property_is_typed_far_into_a_long_class(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    _char_repo(root)
    filler = "".join(f"    def step_{i}(self):\n        return {i}\n\n" for i in range(100))  # 300 lines
    writing = (
        "from pkg.source import Source\n\n\n"
        "class Parser:\n"
        "    def __init__(self, text):\n"
        "        self._src = Source(text)\n\n"
        "    @property\n"
        "    def _current(self):\n"
        "        return self._src.current\n\n"
        f"{filler}"
        "    def parse_line(self):\n"
        "        while not self._current."
    )
    top = _ranked(root, "pkg/parser.py", writing)
    # `self._current` is `self._src.current`, `-> Char`: Char's methods, with the class header
    # 300 lines above the cursor (out of the cursor's parse window).
    assert {"Char.is_nl", "Char.is_ws", "Char.is_kv_sep"} <= set(top), top


def test_an_attribute_of_a_typed_receivers_class_is_typed_through_that_class(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    _write(
        root,
        "pkg/frame.py",
        "from pkg.tokens import TokenStream\n\n\nclass Frame:\n"
        "    def __init__(self, stream: TokenStream, level: int):\n"
        "        self.stream = stream\n        self.level = level\n\n"
        "    def inner(self):\n        return self\n",
    )
    writing = (
        "from pkg.frame import Frame\n\n\n"
        "def compile_block(frame: Frame):\n"
        "    frame.stream.look()\n"
        "    return "
    )
    top = _ranked(root, "pkg/compile.py", writing)
    # `frame: Frame`, and Frame's `self.stream = stream` with `stream: TokenStream`: the methods
    # of TokenStream are offered for `frame.stream.`, though nothing else calls them.
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top


def test_a_typed_property_the_method_has_not_used_yet_offers_its_classs_methods(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    writing = (
        "from pkg.tokens import TokenStream\n\n\n"
        "class Parser:\n"
        "    @property\n"
        "    def stream(self) -> TokenStream:\n"
        "        return make()\n\n"
        "    def parse(self):\n"
        "        return "
    )
    top = _ranked(root, "pkg/parser.py", writing)
    # Like `self.x = Cls(...)` in __init__, a property's return annotation types `self.stream`.
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top


def _environment(root: Path) -> None:
    """A class whose method's return annotation names TokenStream (jinja2's `_tokenize`)."""
    _write(
        root,
        "pkg/environment.py",
        "from pkg.tokens import TokenStream\n\n\nclass Environment:\n"
        "    def tokenize(self, text) -> TokenStream:\n        return TokenStream()\n\n"
        "    def render(self, text) -> str:\n        return text\n",
    )


def test_attribute_calls_are_the_calls_an_attribute_is_bound_to() -> None:
    text = (
        "class P:\n    def __init__(self, env: Environment):\n"
        "        self.stream = env.tokenize(text)\n        self.node = Node(1)\n"
        "        this.items = await loadItems()\n        self.name = name\n"
    )
    assert attribute_calls(text) == {"self.stream": "env.tokenize", "self.items": "loadItems"}


def test_an_attribute_bound_to_a_parameters_method_result_takes_its_return_annotation(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    _repo(root)
    _environment(root)
    writing = (
        "from pkg.environment import Environment\n\n\n"
        "class Parser:\n"
        "    def __init__(self, environment: Environment, text):\n"
        "        self.stream = environment.tokenize(text)\n\n"
        "    def parse(self):\n"
        "        return "
    )
    top = _ranked(root, "pkg/parser.py", writing)
    # `environment: Environment` and `def tokenize(...) -> TokenStream`: `self.stream.` offers
    # TokenStream's methods, though nothing in the workspace calls them.
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top
    # Bound to something whose result is not annotated: nothing is inferred.
    untyped = _ranked(root, "pkg/parser.py", writing.replace("environment.tokenize", "environment.render"))
    assert not {"TokenStream.expect", "TokenStream.look"} & set(untyped), untyped


def test_an_attribute_of_another_class_bound_to_a_call_is_typed_through_that_class(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    _environment(root)
    _write(
        root,
        "pkg/parser.py",
        "from pkg.environment import Environment\n\n\nclass Parser:\n"
        "    def __init__(self, environment: Environment, text):\n"
        "        self.stream = environment.tokenize(text)\n",
    )
    writing = (
        "from pkg.parser import Parser\n\n\n"
        "def parse_extension(parser: Parser):\n"
        "    parser.stream.look()\n"
        "    return "
    )
    top = _ranked(root, "pkg/ext.py", writing)
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top


def test_a_fixtures_class_types_what_its_methods_return_in_the_test(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _repo(root)
    _environment(root)
    _write(
        root,
        "tests/conftest.py",
        "import pytest\nfrom pkg.environment import Environment\n\n\n@pytest.fixture\ndef env():\n"
        "    return Environment()\n",
    )
    writing = "def test_tokens(env):\n    tokens = env.tokenize('x')\n    assert "
    top = _ranked(root, "tests/test_tokens.py", writing)
    # `env` is typed by its fixture first, so `tokens = env.tokenize(...)` is a TokenStream.
    assert {"TokenStream.skip", "TokenStream.expect"} <= set(top), top


def test_only_a_call_that_is_the_whole_right_hand_side_binds_an_attribute() -> None:
    text = (
        "class P:\n    def __init__(self, env: Environment, kwargs):\n"
        "        self.a = env.tokenize(text)  # the stream\n"
        "        self.b = make().build()\n        self.c = load(a)[0]\n"
        "        self.d = super().setup()\n        self.e = self.helper()\n"
        "        self.f = make(\n            1,\n            (2, 3),\n        )\n"
        "        self.g = load(a) + 1\n"
    )
    assert attribute_calls(text) == {"self.a": "env.tokenize", "self.f": "make"}


def test_deep_in_a_long_function_the_lines_before_the_cursor_type_its_receivers(tmp_path: Path) -> None:
    # The scope's query used to be the definition's first 60 lines: 80 lines in, the object
    # built on the line above the cursor was out of it, untyped, and its class offered nothing.
    root = tmp_path / "ws"
    _repo(root)
    filler = "    total = total + 1\n" * 80
    writing = (
        "from pkg.tokens import TokenStream\n\n\n"
        "def compile_all(text, total):\n" + filler + "    lexed = TokenStream(text)\n"
        "    return "
    )
    top = _ranked(root, "pkg/compile.py", writing)
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top


def test_deep_in_a_long_function_what_its_middle_built_stays_typed(tmp_path: Path) -> None:
    # The query past a long definition's 60th line is its head and the lines before the cursor;
    # what the middle built (line 20 here) is still read for the receivers' types.
    root = tmp_path / "ws"
    _repo(root)
    writing = (
        "from pkg.tokens import TokenStream\n\n\n"
        "def compile_all(text, total):\n"
        + "    total = total + 1\n" * 16
        + "    lexed = TokenStream(text)\n"
        + "    total = total + 2\n" * 80
        + "    return "
    )
    top = _ranked(root, "pkg/compile.py", writing)
    assert {"TokenStream.expect", "TokenStream.look"} <= set(top), top
