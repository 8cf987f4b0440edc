"""Golden tests: identifiers at a cursor resolve through imports to the right definitions.

Each fixture repository has decoys (same names in files that are not
imported), so a plain name match would pick wrong answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from codectx.retriever.context import assemble_context
from codectx.retriever.definitions import DefinitionResolver, class_spellings, local_types
from codectx.retriever.snapshot import snapshot_of

from tests.support.indexes import build_index, copy_repo

LEXICAL = {"retriever.context_dense": False, "retriever.context_search": False}


def _context(root: Path, path: str, line: int, character: int, **extra: Any) -> dict[str, tuple[str, int]]:
    settings, store = build_index(root, **{**LEXICAL, **extra})
    text = (root / path).read_text()
    result = assemble_context(store, settings, path, text, line, character)
    return {i.symbol: (i.path, i.start_line) for i in result.items if i.reason == "definition"}


def _line_of(root: Path, path: str, needle: str) -> tuple[int, int]:
    for n, row in enumerate((root / path).read_text().split("\n")):
        if needle in row:
            return n, row.index(needle) + len(needle)
    raise AssertionError(f"{needle!r} not in {path}")


def test_python_imports_aliases_reexports_and_constructed_objects(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    line, char = _line_of(root, "app/main.py", "reply = client.send(")
    defs = _context(root, "app/main.py", line, char)
    assert defs["format_url"] == ("pkg/util/helpers.py", 3)  # `format_url as fmt`
    assert defs["connect"][0] == "pkg/client.py"  # `import pkg.client as pc` then `pc.connect`
    assert defs["Client"][0] == "pkg/client.py"  # `from pkg import Client`, re-exported by pkg/__init__.py
    assert defs["Client.send"][0] == "pkg/client.py"  # `client = Client(...)` then `client.send`
    assert defs["DEFAULT_PORT"][0] == "app/settings.py"  # relative import
    assert all(not path.startswith("other/") for path, _ in defs.values())


def test_javascript_and_typescript_imports_index_files_and_require(tmp_path: Path) -> None:
    root = copy_repo("ts", tmp_path)
    line, char = _line_of(root, "src/app.ts", "return slugify(")
    defs = _context(root, "src/app.ts", line, char)
    assert defs["add"][0] == "src/lib/math.ts"  # from "./lib" -> index.ts -> re-export from ./math
    assert defs["mul"][0] == "src/lib/index.ts"  # import * as lib; lib.mul
    assert defs["slugify"][0] == "src/util.js"  # const { slugify } = require("./util")
    assert all(not path.startswith("other/") for path, _ in defs.values())


def test_go_package_imports_and_same_package(tmp_path: Path) -> None:
    root = copy_repo("go", tmp_path)
    line, char = _line_of(root, "cmd/app/main.go", "fmt.Println(")
    defs = _context(root, "cmd/app/main.go", line, char)
    assert defs["Open"][0] == "store/store.go"
    assert defs["describe"][0] == "cmd/app/describe.go"  # same package, no import
    assert all(not path.startswith("other/") for path, _ in defs.values())


def test_java_imports_and_same_package_classes(tmp_path: Path) -> None:
    root = copy_repo("java", tmp_path)
    app = "src/main/java/com/acme/app/App.java"
    line, char = _line_of(root, app, "return client.send(")
    defs = _context(root, app, line, char)
    assert defs["Client"][0] == "src/main/java/com/acme/net/Client.java"
    assert defs["Client.send"][0] == "src/main/java/com/acme/net/Client.java"
    assert defs["Helper.greeting"][0] == "src/main/java/com/acme/app/Helper.java"
    assert all("/com/other/" not in path for path, _ in defs.values())


def test_rust_use_paths_and_modules(tmp_path: Path) -> None:
    root = copy_repo("rust", tmp_path)
    line, char = _line_of(root, "src/main.rs", "let conn = connect(")
    defs = _context(root, "src/main.rs", line, char)
    assert defs["connect"][0] == "src/net/mod.rs"  # use crate::net::connect
    assert defs["parse_addr"][0] == "src/util.rs"  # mod util; util::parse_addr
    assert all(path != "src/other.rs" for path, _ in defs.values())


def test_fallback_language_matches_names_through_the_symbol_table(tmp_path: Path) -> None:
    root = copy_repo("ruby", tmp_path)
    line, char = _line_of(root, "app.rb", "greeter.greet(")
    defs = _context(root, "app.rb", line, char)
    assert defs["Greeter.greet"][0] == "lib/greeter.rb"
    assert defs["Greeter"][0] == "lib/greeter.rb"


def test_resolver_prefers_imports_and_excludes_the_cursor_region(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    _settings, store = build_index(root)
    snap = snapshot_of(store)
    resolver = DefinitionResolver(snap, "app/main.py", "python", snap.file_imports("app/main.py"))
    (best, *_rest) = resolver.resolve("fmt")
    assert (best.definition.path, best.definition.name, best.how) == (
        "pkg/util/helpers.py",
        "format_url",
        "import",
    )
    assert resolver.resolve("Client")[0].how == "reexport"
    assert resolver.resolve("os") == []  # nothing in the workspace
    own = DefinitionResolver(snap, "pkg/client.py", "python", [])
    assert own.resolve("connect")[0].definition.path == "pkg/client.py"
    assert own.resolve("connect", exclude=(18, 21)) == [] or all(
        r.definition.path != "pkg/client.py" for r in own.resolve("connect", exclude=(18, 21))
    )


def test_unsaved_text_is_used_for_the_cursor(tmp_path: Path) -> None:
    """A call typed but not saved still finds its definition (the document text is what counts)."""
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, **LEXICAL)
    text = (
        (root / "app/main.py")
        .read_text()
        .replace("    return reply\n", "    port = fmt(\n    return reply\n")
    )
    line, char = _line_of_text(text, "port = fmt(")
    result = assemble_context(store, settings, "app/main.py", text, line, char)
    typed = [i for i in result.items if i.symbol == "format_url"]
    assert typed and typed[0].path == "pkg/util/helpers.py"


def _line_of_text(text: str, needle: str) -> tuple[int, int]:
    for n, row in enumerate(text.split("\n")):
        if needle in row:
            return n, row.index(needle) + len(needle)
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("client = Client(url)", {"client": "Client"}),
        ("Client c = new Client();", {"c": "Client"}),
        ("const s = new lib.Store(1)", {"s": "lib.Store"}),
        ("conn = pc.connect(url)", {}),
        ("v := &Conn{}", {"v": "Conn"}),
        ("x: Foo\t= Bar()", {"x": "Bar"}),  # any space between the annotation and `=`
        ("$el = Foo(1)", {"el": "Foo"}),  # a `$` prefix left out
        ("a$b = Foo(1)", {"a$b": "Foo"}),
    ],
)
def test_local_types_from_constructor_calls(code: str, expected: dict[str, str]) -> None:
    assert local_types(code) == expected


def test_the_name_match_fallback_can_be_left_out(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    _settings, store = build_index(root)
    snap = snapshot_of(store)
    # A file importing nothing: `format_url` is found only by a bare match in the symbol table.
    resolver = DefinitionResolver(snap, "app/other.py", "python", [])
    guesses = resolver.resolve("format_url")
    assert guesses and all(r.how == "name" for r in guesses)
    assert {r.definition.name for r in guesses} == {"format_url"}
    assert resolver.resolve("format_url", by_name=False) == []
    # Resolutions through imports do not depend on the fallback.
    imported = DefinitionResolver(snap, "app/main.py", "python", snap.file_imports("app/main.py"))
    assert imported.resolve("fmt", by_name=False) == imported.resolve("fmt")


def test_a_test_parameter_resolves_to_the_nearest_conftest_fixture(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "tests" / "api").mkdir(parents=True)
    (root / "other").mkdir()
    fixture = "import pytest\n\n\n@pytest.fixture\ndef client_factory():\n    return {which!r}\n"
    (root / "conftest.py").write_text(fixture.format(which="root"))
    (root / "tests" / "conftest.py").write_text(fixture.format(which="tests"))
    (root / "other" / "conftest.py").write_text(fixture.format(which="other"))  # not above the test
    test = "def test_get(client_factory):\n    client = client_factory()\n    assert client\n"
    (root / "tests" / "api" / "test_get.py").write_text(test)
    (root / "app.py").write_text("def run(client_factory):\n    return client_factory()\n")
    _settings, store = build_index(root, **LEXICAL)
    snap = snapshot_of(store)

    found = DefinitionResolver(snap, "tests/api/test_get.py", "python", []).resolve(
        "client_factory", by_name=False
    )
    # The nearest conftest.py overrides the root's, as in pytest; a sibling folder's is not seen.
    assert [(r.definition.path, r.how) for r in found] == [("tests/conftest.py", "fixture")]
    found = DefinitionResolver(snap, "test_top.py", "python", []).resolve("client_factory", by_name=False)
    assert [r.definition.path for r in found] == ["conftest.py"]
    # Outside the tests a parameter is a plain local name: nothing is guessed for it.
    assert DefinitionResolver(snap, "app.py", "python", []).resolve("client_factory", by_name=False) == []
    line = test.split("\n").index("    client = client_factory()")
    defs = _context(root, "tests/api/test_get.py", line, len("    client = client_factory("))
    assert defs["client_factory"] == ("tests/conftest.py", 3)  # from its decorator


def test_class_spellings() -> None:
    assert class_spellings("route") == ["Route"]
    assert class_spellings("cancelToken") == ["CancelToken"]
    assert class_spellings("url_path") == ["UrlPath", "URLPath"]
    assert class_spellings("request_body") == ["RequestBody"]  # a long first word is no acronym
    assert class_spellings("db") == []  # too short to say anything


def test_a_receiver_nothing_types_offers_the_methods_of_the_class_it_is_named_like(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "route.js").write_text(
        "function Route(path) {\n  this.path = path;\n}\n\n"
        "Route.prototype.dispatch = function dispatch(req) {\n  return req;\n};\n\n"
        "Route.prototype.handlesMethod = function handlesMethod(method) {\n  return !!method;\n};\n"
    )
    (root / "lib" / "helpers.js").write_text(
        "function route(path) {\n  return path;\n}\n\n"
        "function Layer() {}\n\nmodule.exports = { route, Layer };\n"
    )
    router = (
        "var Route = require('./route');\n\n"
        "function handle(stack, req) {\n"
        "  var route = stack[0].route;\n"
        "  if (route.\n"
        "}\n"
    )
    (root / "lib" / "router.js").write_text(router)
    _settings, store = build_index(root, **LEXICAL)
    snap = snapshot_of(store)
    resolver = DefinitionResolver(snap, "lib/router.js", "javascript", snap.file_imports("lib/router.js"))
    # `route` is not imported under that name (the file imports `Route`): named like the class.
    found = resolver.class_named_like("route")
    assert found is not None and (found.path, found.name) == ("lib/route.js", "Route")
    # A constructor function's prototype methods are its members.
    assert {d.name for d in resolver.class_members(found)} == {"dispatch", "handlesMethod"}
    # A lower-case function is no class; nor is a name too short or a module's binding.
    assert resolver.class_named_like("layer") is None  # `Layer` has no prototype methods
    assert resolver.class_named_like("Route") is None
    assert resolver.class_named_like("rt") is None
    # In the completion context, the class's methods come for `route.` with nothing else known.
    line = router.split("\n").index("  if (route.")
    defs = _context(root, "lib/router.js", line, len("  if (route."))
    assert "Route.prototype.handlesMethod" in defs or "handlesMethod" in defs
