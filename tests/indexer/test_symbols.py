"""identifiers_near (the retriever's view of a cursor) and symbol extraction edge cases."""

from __future__ import annotations

from pathlib import Path

from codectx.indexer.parsing.parse import parse_file, parse_source
from codectx.indexer.parsing.symbols import definitions, identifiers_near

from codectx.settings import load_settings
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "lang"
CLIENT = (FIXTURES / "python" / "pkg" / "client.py").read_text()


def _at(text: str, needle: str, offset: int = 0) -> tuple[int, int]:
    """(line, character) of the first `needle` in `text`, plus `offset` characters."""
    index = text.index(needle) + offset
    line = text.count("\n", 0, index)
    return line, index - (text.rfind("\n", 0, index) + 1)


def test_call_being_typed_with_argument_index() -> None:
    line, col = _at(CLIENT, "timeout=TIMEOUT")
    near = identifiers_near(CLIENT, "python", line, col)
    assert near.call == "self.session.send" and near.call_name == "send"
    assert near.argument_index == 1
    assert near.enclosing is not None
    assert (near.enclosing.qualname, near.enclosing.kind) == ("Client.send", "method")
    assert (near.enclosing.start_line, near.enclosing.end_line) == (28, 34)
    assert near.enclosing.signature == "def send(self, request):"
    assert {"reply", "request", "TIMEOUT", "helper"} <= set(near.names)
    assert "make_url" not in near.names  # used elsewhere, not in this method
    assert "self.session.send" in near.chains
    assert [scope.qualname for scope in near.scopes] == ["Client", "Client.send"]
    assert near.scopes[0].kind == "class" and near.scopes[0].end_line == 34


def test_unsaved_broken_buffer_typing_an_attribute() -> None:
    buffer = CLIENT.replace("                return helper(reply)", "                return self.session.se")
    line, col = _at(buffer, "self.session.se", len("self.session.se"))
    near = identifiers_near(buffer, "python", line, col)
    assert near.word == "se"
    assert near.chains[0] == "self.session"
    assert near.call == ""
    assert near.enclosing is not None and near.enclosing.qualname == "Client.send"


def test_definitions_read_from_a_broken_buffers_text() -> None:
    from codectx.indexer.parsing.cursor_symbols import _DEF_TEXT

    assert _DEF_TEXT.match("export async function* gen(a) {").group(1) == "gen"  # type: ignore[union-attr]
    assert _DEF_TEXT.match("  fn  (recv) name(").group(1) == "name"  # type: ignore[union-attr]
    # Spaces after the keyword are read once (`\s*\*?\s+` split a long run every way: 11 s at 20,000).
    assert _DEF_TEXT.match("fn" + " " * 3000 + "!") is None
    assert _DEF_TEXT.match("def" + " " * 3000 + "name(").group(1) == "name"  # type: ignore[union-attr]


def test_unclosed_call_across_lines() -> None:
    text = "def f(x):\n    result = compute(\n        x,\n        other.value,\n        "
    near = identifiers_near(text, "python", 4, 8)
    assert near.call == "compute" and near.argument_index == 2
    assert near.enclosing is not None and near.enclosing.name == "f"


def test_no_call_inside_closed_parentheses_or_strings() -> None:
    text = 'x = foo(1)\ny = "bar(" + z\n'
    assert identifiers_near(text, "python", 0, 10).call == ""
    assert identifiers_near(text, "python", 1, 14).call == ""
    assert identifiers_near("if (ready", "javascript", 0, 9).call == ""


def test_a_literal_s_method_is_not_a_call_to_look_up() -> None:
    """`{...}.get(` and `", ".join(` call a builtin's method: no workspace definition named `get`
    or `join` is the callee; a call's result or an element (`f().then(`, `x[0].send(`) may be."""
    for text in ('x = {"a": 1}.get(\n', 'x = ", ".join(\n', "x = {\n    1: 2,\n}.get(\n"):
        rows = text.split("\n")
        assert identifiers_near(text, "python", len(rows) - 2, len(rows[-2])).call == ""
    assert identifiers_near("p = fetch(u).then(", "javascript", 0, 18).call_name == "then"
    assert identifiers_near("x = items[0].send(", "python", 0, 18).call_name == "send"
    # Go's and Rust's `T{...}.m(` is a struct's method, PHP's `'a'.f(` joins a string and a call.
    go = "package m\nfunc f() {\n\terr := Server{Addr: a}.ListenAndServe("
    assert identifiers_near(go, "go", 2, len(go.split("\n")[2])).call_name == "ListenAndServe"
    php = "<?php\n$label = 'Hello '.formatName("
    assert identifiers_near(php, "php", 1, len(php.split("\n")[1])).call_name == "formatName"


def test_cursor_on_a_long_data_line_reads_the_code_around_it() -> None:
    """A line holding a long hex string: the chain, word and call at the cursor are still read
    (only the part of the line around the cursor is), and a chain far along the line is not."""
    blob = "0123456789abcdef" * 2000  # 32,000 characters
    head = f'    data = "{blob}" + far.away + '
    text = f"def use(store):\n{head}store.cache.ge\n"
    near = identifiers_near(text, "python", 1, len(head) + len("store.cache.ge"))
    assert near.word == "ge" and near.chains[0] == "store.cache"
    assert "far.away" in near.chains  # just before the cursor
    text = f'def use(store):\n    early.value = "{blob}" + check(a, store.cache.ge\n'
    near = identifiers_near(text, "python", 1, len(text.split("\n")[1]))
    assert near.call == "check" and near.argument_index == 1
    text = f'def use(store):\n    first.chain\n    x = "{blob}"; store.cache.ge\n'
    near = identifiers_near(text, "python", 2, len(text.split("\n")[2]))
    assert near.chains[0] == "store.cache" and "first.chain" in near.chains  # another line


def test_javascript_method_and_member_chain() -> None:
    text = (FIXTURES / "js" / "app.js").read_text()
    line, col = _at(text, "this.items.length", len("this.items.length"))
    near = identifiers_near(text, "javascript", line, col)
    assert near.call == "api.count" and near.argument_index == 0
    assert near.enclosing is not None and near.enclosing.qualname == "Store.count"
    assert "this.items.length" in near.chains


def test_go_method_receiver_qualname() -> None:
    text = (FIXTURES / "go" / "main.go").read_text()
    line, col = _at(text, "str.ToUpper(req)", len("str.ToUpper("))
    near = identifiers_near(text, "go", line, col)
    assert near.call == "str.ToUpper"
    assert near.enclosing is not None and near.enclosing.qualname == "Server.Handle"


def test_rust_impl_method() -> None:
    text = (FIXTURES / "rust" / "src" / "lib.rs").read_text()
    line, col = _at(text, "self.items.get(key)", len("self.items.get("))
    near = identifiers_near(text, "rust", line, col)
    assert near.call == "self.items.get" and near.call_name == "get"
    assert near.enclosing is not None and near.enclosing.qualname == "Store.lookup"


def test_method_deep_in_a_long_class_keeps_the_class_in_its_qualname() -> None:
    methods = "\n".join(f"    def m{i}(self):\n        return self.helper_{i}()\n" for i in range(200))
    text = f"class Big:\n    x = 1\n\n{methods}"
    line, col = _at(text, "self.helper_150()", len("self.helper_150("))
    near = identifiers_near(text, "python", line, col)
    assert near.call == "self.helper_150"
    assert near.enclosing is not None and near.enclosing.qualname == "Big.m150"
    assert (near.enclosing.start_line, near.enclosing.end_line) == (line - 1, line)


def test_top_level_and_out_of_range_cursors() -> None:
    near = identifiers_near(CLIENT, "python", 8, 3)
    assert near.enclosing is None and near.word == "TIM"
    assert identifiers_near(CLIENT, "python", 10_000, 10_000).enclosing is None
    assert identifiers_near("", "python", 0, 0).names == ()
    plain = identifiers_near("see obj.attr here", "markdown", 0, 12)
    assert plain.enclosing is None and plain.chains == ("obj", "obj.attr")


def test_nested_function_definitions_are_qualified() -> None:
    text = "def outer():\n    def inner():\n        return 1\n    return inner\n"
    defs = definitions(parse_source(text, "python").root_node, "python", "n.py")
    assert [(d.qualname, d.kind, d.start_line, d.end_line) for d in defs] == [
        ("outer", "function", 0, 3),
        ("outer.inner", "function", 1, 2),
    ]
    chunks = parse_file("n.py", text, "python", load_settings(None)).chunks
    assert [c.qualname for c in chunks] == ["outer"]  # nested code stays in its function's chunk


def test_javascript_exports_and_requires() -> None:
    text = (
        'const { a, b: bee } = require("./util");\n'
        'export { x as y } from "./other";\n'
        "export function pub() {}\nfunction priv() {}\n"
    )
    parsed = parse_file("src/m.js", text, "javascript", load_settings(None))
    imports = {i.module: i for i in parsed.imports}
    assert imports["./util"].names == (("a", "a"), ("b", "bee"))
    assert imports["./other"].names == (("x", "y"),)
    exported = {d.name: d.exported for d in parsed.definitions}
    assert exported == {"pub": True, "priv": False}


def test_python_src_layout_and_package_imports(tmp_path: Path) -> None:
    for rel in ("src/app/__init__.py", "src/app/core.py", "src/app/sub/__init__.py", "tests/test_x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    text = "import app.core\nfrom app import sub\nfrom app.sub import thing\nimport requests\n"
    parsed = parse_file("tests/test_x.py", text, "python", load_settings(None), tmp_path)
    got = [(i.module, i.resolved) for i in parsed.imports]
    assert got == [
        ("app.core", "src/app/core.py"),
        ("app.sub", "src/app/sub/__init__.py"),
        ("app.sub", "src/app/sub/__init__.py"),
        ("requests", ""),
    ]
    # Without a workspace root nothing resolves, nothing fails.
    assert all(i.resolved == "" for i in parse_file("t.py", text, "python", load_settings(None)).imports)


def test_relative_import_never_resolves_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.py").write_text("")
    (tmp_path / "ws" / "a.js").write_text("")
    js = parse_file(
        "a.js", 'import x from "../secret.py";\n', "javascript", load_settings(None), tmp_path / "ws"
    )
    assert js.imports[0].resolved == ""
    py = parse_file("a.py", "from .. import secret\n", "python", load_settings(None), tmp_path / "ws")
    assert all(i.resolved == "" for i in py.imports)


def test_typescript_paths_and_base_url(tmp_path: Path) -> None:
    (tmp_path / "web" / "src" / "components").mkdir(parents=True)
    (tmp_path / "web" / "src" / "components" / "Button.tsx").write_text("")
    (tmp_path / "web" / "src" / "lib").mkdir()
    (tmp_path / "web" / "src" / "lib" / "index.ts").write_text("")
    (tmp_path / "web" / "tsconfig.json").write_text(
        '{\n  // comments and trailing commas are allowed\n  "compilerOptions": {\n'
        '    "baseUrl": "src",\n    "paths": {"@/*": ["./*"], "@lib": ["lib"],},\n  },\n}\n'
    )
    text = (
        'import { Button } from "@/components/Button";\nimport { x } from "@lib";\n'
        'import y from "lib";\nimport React from "react";\n'
    )
    parsed = parse_file("web/src/app/page.tsx", text, "tsx", load_settings(None), tmp_path)
    assert [(i.module, i.resolved) for i in parsed.imports] == [
        ("@/components/Button", "web/src/components/Button.tsx"),
        ("@lib", "web/src/lib/index.ts"),
        ("lib", "web/src/lib/index.ts"),
        ("react", ""),
    ]


def test_tsconfig_comments_are_read_once(tmp_path: Path) -> None:
    # An unclosed comment or string ends at the end of the file: each `/*` of a hostile
    # tsconfig.json searched the rest of it for `*/` (6.8 s at 65,536 characters).
    (tmp_path / "src" / "lib").mkdir(parents=True)
    (tmp_path / "src" / "lib" / "index.ts").write_text("")
    (tmp_path / "tsconfig.json").write_text(
        '{"compilerOptions": {"baseUrl": "src", "paths": {"@x/*": ["lib/*"]}}, "note": "/* kept"}\n'
        + "/* " * 3000
    )
    parsed = parse_file("src/a.ts", 'import { y } from "lib";\n', "typescript", load_settings(None), tmp_path)
    assert [(i.module, i.resolved) for i in parsed.imports] == [("lib", "src/lib/index.ts")]


def test_php_psr4_autoload(tmp_path: Path) -> None:
    (tmp_path / "app" / "Support").mkdir(parents=True)
    (tmp_path / "app" / "Support" / "Str.php").write_text("<?php class Str {}")
    (tmp_path / "composer.json").write_text('{"autoload": {"psr-4": {"App\\\\": "app/"}}}')
    text = "<?php\nuse App\\Support\\Str;\nuse Vendor\\Lib\\Thing as T;\n"
    parsed = parse_file("app/Models/User.php", text, "php", load_settings(None), tmp_path)
    assert [(i.module, i.names, i.resolved) for i in parsed.imports] == [
        ("App\\Support\\Str", (("Str", "Str"),), "app/Support/Str.php"),
        ("Vendor\\Lib\\Thing", (("Thing", "T"),), ""),
    ]


def test_javascript_assigned_functions_are_definitions() -> None:
    text = (
        "function Foo(a) {\n  this.a = a;\n}\n\n"
        "Foo.prototype.bar = function (x) {\n  return this.a + x;\n};\n\n"
        "module.exports = {\n  helper: function (y) {\n    return y * 2;\n  },\n};\n"
    )
    parsed = parse_file("f.js", text, "javascript", load_settings(None))
    assert [(c.kind, c.qualname, c.start_line, c.end_line) for c in parsed.chunks] == [
        ("function", "Foo", 0, 2),
        ("method", "Foo.prototype.bar", 4, 6),
        ("module", "", 8, 12),
    ]
    assert ("function", "helper") in [(d.kind, d.qualname) for d in parsed.definitions]
    near = identifiers_near(text, "javascript", 10, 6)
    assert near.enclosing is not None and near.enclosing.name == "helper"


def test_ruby_requires_and_bash_sources_resolve(tmp_path: Path) -> None:
    for rel in ("lib/foo.rb", "app/bar.rb", "app/env.sh", "common.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    ruby = (
        'require "foo"\nrequire_relative "bar"\nobj.require "x"\nputs "require"\nFoo.load "z"\nrequire 42\n'
    )
    parsed = parse_file("app/main.rb", ruby, "ruby", load_settings(None), tmp_path)
    assert [(i.module, i.resolved, i.line) for i in parsed.imports] == [
        ("foo", "lib/foo.rb", 0),  # require: lib/ first
        ("bar", "app/bar.rb", 1),  # require_relative: next to the file
    ]  # a method call on a receiver, a string "require" and a non-string argument are not imports
    bash = 'source ./env.sh\n. common.sh\nsource "$HOME/x.sh"\necho source\nsource\n'
    parsed = parse_file("app/run.sh", bash, "bash", load_settings(None), tmp_path)
    assert [(i.module, i.resolved) for i in parsed.imports] == [
        ("./env.sh", "app/env.sh"),
        ("common.sh", "common.sh"),
        ("$HOME/x.sh", ""),  # a variable in the path: not resolved
    ]


def test_nodes_of_a_type_under_a_large_syntax_error_are_all_found() -> None:
    """In one error subtree of 230,000 nodes (80 lines of 950-link decorator chains) tree-sitter's
    query engine drops the captures past 65,535 (and takes seconds): `find_all` walks such trees,
    and finds every identifier, in source order, as the query does on a smaller one."""
    from codectx.indexer.parsing.grammar import SPECS
    from codectx.indexer.parsing.languages import get_parser
    from codectx.indexer.parsing.queries import ERROR_NODES_MAX, _query, find_all
    from tree_sitter import QueryCursor

    types = SPECS["python"].identifier_types
    big = get_parser("python").parse(("\n".join(["    @" + "a." * 950] * 80) + "\n").encode()).root_node
    assert big.has_error and big.descendant_count > ERROR_NODES_MAX
    found = find_all(big, "python", types)
    assert len(found) == 80 * 950
    assert [n.start_byte for n in found] == sorted(n.start_byte for n in found)
    small = get_parser("python").parse(("\n".join(["    @" + "a." * 950] * 20) + "\n").encode()).root_node
    walked = [n.start_byte for n in find_all(small, "python", types)]
    queried = sorted(n.start_byte for n in QueryCursor(_query("python", types)).captures(small).get("n", []))
    assert walked == queried and len(walked) == 20 * 950
