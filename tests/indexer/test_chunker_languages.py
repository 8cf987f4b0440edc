"""Per-language chunking and symbols on the fixture files under tests/fixtures/lang/ (real grammars)."""

from __future__ import annotations

import functools
import itertools
import re

import pytest
from codectx.indexer.model import ParsedFile
from codectx.indexer.parsing.chunker import content_hash
from codectx.indexer.parsing.parse import parse_file

from codectx.settings import load_settings
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "lang"

# language: (fixture folder = workspace root, file,
#            chunks with a symbol as (kind, qualname, start_line, end_line),
#            definitions as (kind, qualname), imports as (module, resolved path))
EXPECTED: dict[
    str, tuple[str, str, list[tuple[str, str, int, int]], list[tuple[str, str]], list[tuple[str, str]]]
] = {
    "python": (
        "python",
        "pkg/client.py",
        [
            ("function", "make_url", 11, 13),
            ("class", "Client", 16, 19),
            ("method", "Client.__init__", 21, 22),
            ("method", "Client.base", 24, 26),
            ("method", "Client.send", 28, 34),
            ("function", "fetch", 37, 38),
        ],
        [
            ("constant", "TIMEOUT"),
            ("function", "make_url"),
            ("class", "Client"),
            ("variable", "Client.retries"),
            ("method", "Client.__init__"),
            ("method", "Client.base"),
            ("method", "Client.send"),
            ("function", "fetch"),
        ],
        [
            ("os", ""),
            ("pkg.util", "pkg/util.py"),
            (".util", "pkg/util.py"),
            (".sub.helpers", "pkg/sub/helpers.py"),
            ("..outside", ""),
        ],
    ),
    "javascript": (
        "js",
        "app.js",
        [
            ("function", "add", 6, 11),
            ("function", "double", 13, 13),
            ("class", "Store", 15, 15),
            ("method", "Store.constructor", 16, 18),
            ("method", "Store.count", 20, 23),
            ("function", "main", 26, 29),
        ],
        [
            ("variable", "fs"),
            ("function", "add"),
            ("function", "double"),
            ("class", "Store"),
            ("method", "Store.constructor"),
            ("method", "Store.count"),
            ("function", "main"),
        ],
        [("react", ""), ("./api", "api.js"), ("./lib", "lib/index.js"), ("fs", "")],
    ),
    "typescript": (
        "ts",
        "service.ts",
        [
            ("interface", "Options", 3, 7),
            ("enum", "Level", 11, 14),
            ("class", "Service", 16, 17),
            ("method", "Service.constructor", 19, 21),
            ("method", "Service.handle", 23, 27),
            ("function", "start", 30, 33),
        ],
        [
            ("interface", "Options"),
            ("type", "Handler"),
            ("enum", "Level"),
            ("class", "Service"),
            ("method", "Service.constructor"),
            ("method", "Service.handle"),
            ("function", "start"),
        ],
        [("./config", "config.ts"), ("./log.js", "log.ts")],
    ),
    "tsx": (
        "ts",
        "view.tsx",
        [("function", "Title", 4, 6), ("class", "Page", 8, 8), ("method", "Page.render", 9, 11)],
        [("type", "Props"), ("function", "Title"), ("class", "Page"), ("method", "Page.render")],
        [("./service", "service.ts")],
    ),
    "go": (
        "go",
        "main.go",
        [
            ("struct", "Server", 10, 13),
            ("interface", "Handler", 15, 18),
            ("method", "Server.Handle", 20, 23),
            ("function", "main", 25, 28),
        ],
        [("struct", "Server"), ("interface", "Handler"), ("method", "Server.Handle"), ("function", "main")],
        [("fmt", ""), ("strings", ""), ("example.com/acme/internal/util", "internal/util")],
    ),
    "rust": (
        "rust",
        "src/lib.rs",
        [
            ("struct", "Store", 6, 9),
            ("enum", "Mode", 11, 14),
            ("trait", "Backend", 16, 18),
            ("method", "Store.new", 21, 24),
            ("method", "Store.lookup", 26, 28),
            ("function", "run", 31, 35),
        ],
        [
            ("module", "net"),
            ("struct", "Store"),
            ("enum", "Mode"),
            ("trait", "Backend"),
            ("method", "Backend.get"),
            ("method", "Store.new"),
            ("method", "Store.lookup"),
            ("function", "run"),
        ],
        [("net", "src/net/mod.rs"), ("std::collections", ""), ("crate::net::client", "src/net/client.rs")],
    ),
    "java": (
        "java",
        "src/com/acme/App.java",
        [
            ("class", "App", 6, 10),
            ("method", "App.App", 12, 14),
            ("method", "App.run", 16, 19),
            ("interface", "App.Listener", 21, 23),
            ("enum", "App.State", 25, 25),
        ],
        [
            ("class", "App"),
            ("method", "App.App"),
            ("method", "App.run"),
            ("interface", "App.Listener"),
            ("method", "App.Listener.onEvent"),
            ("enum", "App.State"),
        ],
        [
            ("java.util.List", ""),
            ("com.acme.net.Client", "src/com/acme/net/Client.java"),
            ("com.acme.net", "src/com/acme/net"),
        ],
    ),
    "c": (
        "c",
        "main.c",
        [
            ("struct", "point", 3, 7),
            ("enum", "color", 11, 11),
            ("function", "add", 13, 17),
            ("function", "main", 19, 23),
        ],
        [
            ("struct", "point"),
            ("type", "point_t"),
            ("enum", "color"),
            ("function", "add"),
            ("function", "main"),
        ],
        [("stdio.h", ""), ("util.h", "util.h")],
    ),
    "cpp": (
        "cpp",
        "shape.cpp",
        [
            ("class", "Shape", 5, 10),
            ("class", "Square", 12, 13),
            ("method", "Square.Square", 14, 14),
            ("method", "Square.area", 15, 15),
            ("class", "Square", 16, 18),
            ("method", "Circle.area", 20, 22),
            ("function", "total", 24, 29),
            ("module", "geo", 31, 31),
        ],
        [
            ("class", "Shape"),
            ("method", "Shape.~Shape"),
            ("class", "Square"),
            ("method", "Square.Square"),
            ("method", "Square.area"),
            ("method", "Circle.area"),
            ("function", "total"),
        ],
        [("vector", ""), ("shape.hpp", "shape.hpp")],
    ),
    "csharp": (
        "csharp",
        "Program.cs",
        [
            ("class", "Program", 5, 8),
            ("method", "Program.Program", 10, 13),
            ("method", "Program.Main", 15, 20),
            ("method", "Program.Greet", 22, 22),
            ("interface", "IGreeter", 25, 28),
            ("enum", "Color", 30, 30),
        ],
        [
            ("class", "Program"),
            ("method", "Program.Program"),
            ("method", "Program.Main"),
            ("method", "Program.Greet"),
            ("interface", "IGreeter"),
            ("method", "IGreeter.Greet"),
            ("enum", "Color"),
        ],
        [("System", ""), ("Acme.Net", "")],
    ),
    "ruby": (
        "ruby",
        "shop.rb",
        [
            ("module", "Shop", 3, 4),
            ("class", "Shop.Order", 5, 7),
            ("method", "Shop.Order.initialize", 9, 11),
            ("method", "Shop.Order.total", 13, 16),
            ("method", "Shop.Order.build", 18, 20),
            ("function", "helper", 24, 26),
        ],
        [
            ("module", "Shop"),
            ("class", "Shop.Order"),
            ("method", "Shop.Order.initialize"),
            ("method", "Shop.Order.total"),
            ("method", "Shop.Order.build"),
            ("function", "helper"),
        ],
        [("json", ""), ("lib/cart", "lib/cart.rb")],
    ),
    "php": (
        "php",
        "User.php",
        [
            ("class", "User", 9, 14),
            ("method", "User.__construct", 16, 19),
            ("method", "User.displayName", 21, 25),
            ("interface", "HasName", 28, 31),
            ("function", "make_user", 33, 36),
        ],
        [
            ("class", "User"),
            ("method", "User.__construct"),
            ("method", "User.displayName"),
            ("interface", "HasName"),
            ("method", "HasName.name"),
            ("function", "make_user"),
        ],
        [
            ("App\\Support\\Str", ""),
            ("Illuminate\\Database\\Eloquent\\Model", ""),
            ("/helpers.php", "helpers.php"),
        ],
    ),
    "kotlin": (
        "kotlin",
        "Main.kt",
        [
            ("class", "Greeter", 6, 6),
            ("method", "Greeter.greet", 7, 9),
            ("method", "Greeter.make", 12, 12),
            ("class", "Registry", 16, 16),
            ("method", "Registry.all", 17, 17),
            ("interface", "Named", 20, 22),
            ("function", "main", 24, 28),
        ],
        [
            ("class", "Greeter"),
            ("method", "Greeter.greet"),
            ("method", "Greeter.make"),
            ("class", "Registry"),
            ("method", "Registry.all"),
            ("interface", "Named"),
            ("method", "Named.name"),
            ("function", "main"),
        ],
        [("kotlin.math.max", ""), ("com.acme.net.Client", "")],
    ),
    "bash": (
        "bash",
        "deploy.sh",
        [("function", "log", 4, 7), ("function", "deploy", 9, 12)],
        [("function", "log"), ("function", "deploy")],
        [("./lib.sh", "lib.sh")],
    ),
}


@functools.cache
def _parse(language: str) -> ParsedFile:
    folder, rel, *_ = EXPECTED[language]
    root = FIXTURES / folder
    return parse_file(rel, (root / rel).read_text(), language, load_settings(None), root)


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_chunks_per_language(language: str) -> None:
    parsed = _parse(language)
    expected = EXPECTED[language][2]
    got = [(c.kind, c.qualname, c.start_line, c.end_line) for c in parsed.chunks if c.qualname]
    assert got == expected
    assert parsed.syntax_errors == 0


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_definitions_per_language(language: str) -> None:
    got = [(d.kind, d.qualname) for d in _parse(language).definitions]
    assert got == EXPECTED[language][3]


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_imports_per_language(language: str) -> None:
    got = [(i.module, i.resolved) for i in _parse(language).imports]
    assert got == EXPECTED[language][4]
    folder = FIXTURES / EXPECTED[language][0]
    for _, resolved in got:
        if resolved:
            assert (folder / resolved).exists()


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_chunks_are_consistent_with_the_file(language: str) -> None:
    folder, rel, *_ = EXPECTED[language]
    data = (FIXTURES / folder / rel).read_bytes()
    lines = data.decode().split("\n")
    parsed = _parse(language)
    assert parsed.chunks, "every fixture yields chunks"
    for chunk in parsed.chunks:
        assert chunk.path == rel and chunk.language == language
        assert chunk.content_hash == content_hash(chunk.text)
        span = data[chunk.start_byte : chunk.end_byte].decode()
        assert span == "\n".join(lines[chunk.start_line : chunk.end_line + 1])
        assert chunk.text.endswith(span)
    # Chunks never overlap: each line belongs to at most one chunk.
    spans = sorted((c.start_line, c.end_line) for c in parsed.chunks)
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start > end


def test_python_details() -> None:
    parsed = _parse("python")
    by_qual = {c.qualname: c for c in parsed.chunks if c.qualname}
    assert by_qual["make_url"].signature == "def make_url(host: str, path: str) -> str:"
    assert by_qual["make_url"].doc == "Join a host and a path."
    assert by_qual["Client"].doc == "A small client."
    assert "retries = 3" in by_qual["Client"].text and "def " not in by_qual["Client"].text
    assert by_qual["Client.base"].text.startswith("    @property")
    assert by_qual["Client.send"].signature == "def send(self, request):"
    module = [c for c in parsed.chunks if c.kind == "module"]
    assert module[0].start_line == 0 and "import os" in module[0].text
    assert 'if __name__ == "__main__":' in module[-1].text
    util = next(i for i in parsed.imports if i.module == ".sub.helpers")
    assert util.names == (("helper", "helper"), ("other", "alias_other"))
    aliased = next(i for i in parsed.imports if i.module == "pkg.util")
    assert aliased.alias == "u" and aliased.line == 3
    exported = {d.qualname: d.exported for d in parsed.definitions}
    assert exported["Client.__init__"] is False and exported["Client.send"] is True


def test_leading_comments_become_doc() -> None:
    docs = {c.qualname: c.doc for c in _parse("go").chunks}
    assert docs["Server.Handle"] == "Handle answers a request."
    js = {c.qualname: c for c in _parse("javascript").chunks}
    assert js["add"].doc == "Add two numbers." and js["add"].text.startswith("/**")
    assert js["Store.count"].doc == "Count the items."
    rust = {c.qualname: c for c in _parse("rust").chunks}
    assert rust["Store"].doc == "A key-value store." and rust["Store.new"].doc == "Make an empty store."
    assert _parse("bash").chunks[1].doc == "Print a message."
    csharp = {c.qualname: c.doc for c in _parse("csharp").chunks}
    assert csharp["Program.Main"] == "Entry point."


def test_references_carry_chains() -> None:
    refs = _parse("python").references
    assert any(r.name == "send" and r.chain == "self.session.send" for r in refs)
    assert any(r.name == "make_url" and r.line == 26 for r in refs)
    # Definition names and import statements are not uses.
    assert not any(r.name == "make_url" and r.line == 11 for r in refs)
    assert not any(r.line in (2, 3, 4, 5, 6) for r in refs)
    go = _parse("go").references
    assert any(r.name == "Clean" and r.chain == "util.Clean" for r in go)


@pytest.mark.parametrize(
    ("language", "text", "chunks", "definitions"),
    [
        (
            "typescript",
            "namespace Geo {\n  export function area(r: number) { return r * r; }\n}\n"
            'declare module "x" {\n  export function f(): void;\n}\n',
            [("module", "Geo", 0, 0), ("function", "Geo.area", 1, 1), ("module", "x", 3, 5)],
            [("module", "Geo"), ("function", "Geo.area"), ("module", "x"), ("function", "x.f")],
        ),
        (
            "rust",
            "mod inner {\n    pub fn f() {}\n}\n/// Doc.\n#[derive(Debug)]\npub struct T<A> { a: A }\n",
            [("module", "inner", 0, 0), ("function", "inner.f", 1, 1), ("struct", "T", 3, 5)],
            [("module", "inner"), ("function", "inner.f"), ("struct", "T")],
        ),
        (
            "go",
            "package x\ntype List[T any] struct { items []T }\n"
            "func (l *List[T]) Push(v T) { l.items = append(l.items, v) }\nconst (\n  A = 1\n)\n",
            [("struct", "List", 1, 1), ("method", "List.Push", 2, 2)],
            [("struct", "List"), ("method", "List.Push"), ("constant", "A")],
        ),
        (
            "ruby",
            "module M\n  def helper; 1; end\nend\n",
            [("module", "M", 0, 0), ("method", "M.helper", 1, 1)],
            [("module", "M"), ("method", "M.helper")],
        ),
        (
            "python",
            "class Outer:\n    class Inner:\n        def m(self):\n            pass\n\n"
            "    @staticmethod\n    def s():\n        return 1\n",
            [
                ("class", "Outer", 0, 0),
                ("class", "Outer.Inner", 1, 1),
                ("method", "Outer.Inner.m", 2, 3),
                ("method", "Outer.s", 5, 7),
            ],
            [
                ("class", "Outer"),
                ("class", "Outer.Inner"),
                ("method", "Outer.Inner.m"),
                ("method", "Outer.s"),
            ],
        ),
    ],
)
def test_scoping_edge_cases(
    language: str, text: str, chunks: list[tuple[str, str, int, int]], definitions: list[tuple[str, str]]
) -> None:
    parsed = parse_file("x", text, language, load_settings(None))
    assert [(c.kind, c.qualname, c.start_line, c.end_line) for c in parsed.chunks if c.qualname] == chunks
    assert [(d.kind, d.qualname) for d in parsed.definitions] == definitions
    assert parsed.syntax_errors == 0


@pytest.mark.parametrize("budget", [100, 400, 1500])
@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_no_code_is_lost_and_budget_holds(language: str, budget: int) -> None:
    folder, rel, *_ = EXPECTED[language]
    text = (FIXTURES / folder / rel).read_text()
    parsed = parse_file(rel, text, language, load_settings(None, {"index.chunk_max_chars": budget}))
    covered: set[int] = set()
    for chunk in parsed.chunks:
        covered.update(range(chunk.start_line, chunk.end_line + 1))
        own = "\n".join(text.split("\n")[chunk.start_line : chunk.end_line + 1])
        if chunk.start_line != chunk.end_line:
            assert len(re.sub(r"\s", "", own)) <= budget, (chunk.qualname, chunk.start_line)
    lines = text.split("\n")
    # Bare scope openers carry no code of their own; their names live on in the members' qualnames.
    openers = re.compile(r"^\s*(impl|namespace|companion object)\b")
    lost = [
        i
        for i, line in enumerate(lines)
        if i not in covered and re.sub(r"[\s{}\[\]();,]|\bend\b", "", line) and not openers.match(line)
    ]
    assert lost == [], [lines[i] for i in lost]
