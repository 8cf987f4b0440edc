"""What a receiver offers before the member's name is typed (retriever/members.py): a workspace
module's members beyond the few the rest of the workspace calls most, ranked by uses and by the
words they share with the scope; default-export objects and modules not used in the scope yet."""

from __future__ import annotations

from pathlib import Path

from codectx.indexer.model import Definition
from codectx.retriever.context import assemble_context
from codectx.retriever.members import MAX_OFFERED, exports_one_definition, rank_offers
from codectx.retriever.terms import TermSets

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}
NODES = [f"Node{i:02d}" for i in range(40)] + ["CondExpr"]


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def _d(name: str, line: int) -> Definition:
    return Definition(name, name, "class", "pkg/nodes.py", "python", line, line + 2)


def test_rank_offers_mixes_uses_and_words_shared_with_the_scope() -> None:
    members = [_d(n, i * 3) for i, n in enumerate(NODES)]
    heads = {(d.path, d.start_line): f"{d.name} class {d.name}(Node)" for d in members}
    heads[("pkg/nodes.py", 120)] = "CondExpr class CondExpr(Expr): conditional expression"
    scope = "def parse_conditional(self):\n    expr1 = self.parse_or()\n    while self.skip_if('if'):"
    shares = {"Node00": 0.6, "Node01": 0.4}
    ranked = rank_offers(members, shares, heads, scope, TermSets())
    names = [o.definition.name for o in ranked]
    assert names[0] == "Node00" and "CondExpr" in names[:3], names
    assert len(ranked) <= MAX_OFFERED
    # Members with no use and no shared word are left out.
    assert "Node17" not in names
    assert rank_offers(members, {}, heads, "def unrelated(): pass", TermSets()) == []


def test_a_member_the_enclosing_functions_name_holds_ranks_above_the_used_ones() -> None:
    members = [_d(n, i * 3) for i, n in enumerate(["Str", "UUID", "Or", "Integer"])]
    heads = {(d.path, d.start_line): f"{d.name} class {d.name}(Field)" for d in members}
    shares = {"Str": 0.9, "Integer": 0.1}
    scope = "def test_uuid_field_or_none(self):\n    field = fields."
    names = [o.definition.name for o in rank_offers(members, shares, heads, scope, TermSets())]
    assert names[:2] == ["UUID", "Str"], names
    # A name shorter than MIN_NAMED (`Or`) sits inside too many function names to count.
    assert "Or" not in names[:2]
    plain = "def check(self):\n    field = fields."
    assert rank_offers(members, shares, heads, plain, TermSets())[0].definition.name == "Str"


def _module_repo(root: Path, js: bool = False) -> None:
    (root / ".git").mkdir(parents=True)
    if js:
        body = "".join(f"function {n}(value) {{\n  return value;\n}}\n\n" for n in NODES)
        exports = "export default {" + ", ".join(NODES) + "};\n"
        _write(root, "lib/nodes.js", body + exports)
        users = "import nodes from './nodes.js';\n\nexport function use(x) {\n  return nodes.Node00(x);\n}\n"
        _write(root, "lib/user.js", users)
        return
    body = "".join(f"class {n}:\n    '''A {n} node.'''\n\n\n" for n in NODES[:-1])
    body += "class CondExpr:\n    '''A conditional expression: a if b else c.'''\n"
    _write(root, "pkg/nodes.py", body)
    # The rest of the workspace calls only a dozen of the module's members, many times.
    users = "".join(f"def use_{i}(x):\n    return nodes.Node{i % 13:02d}(x)\n\n\n" for i in range(40))
    _write(root, "pkg/user.py", "from pkg import nodes\n\n\n" + users)


def test_a_big_modules_member_sharing_the_scopes_words_is_offered(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _module_repo(root)
    writing = (
        "from pkg import nodes\n\n\n"
        "def parse_condexpr(parser):\n"
        "    expr1 = nodes.Node00(parser)\n"
        "    while parser.skip_if('if'):\n"
        "        return "
    )
    _write(root, "pkg/parser.py", writing + "\n")
    settings, store = build_index(root, **LEXICAL)
    text = (root / "pkg/parser.py").read_text()
    line = len(writing.split("\n")) - 1
    result = assemble_context(store, settings, "pkg/parser.py", text, line, len("        return "))
    top = [c.symbol for c in result.ranked[:10]]
    assert "CondExpr" in top, top  # never called anywhere: only the module listing can offer it


def test_a_default_export_object_not_used_in_the_scope_yet_offers_its_members(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _module_repo(root, js=True)
    writing = "import nodes from './nodes.js';\n\nexport function buildCondExpr(test) {\n  const made = "
    _write(root, "lib/parser.js", writing + "\n}\n")
    settings, store = build_index(root, **LEXICAL)
    text = (root / "lib/parser.js").read_text()
    line = len(writing.split("\n")) - 1
    result = assemble_context(store, settings, "lib/parser.js", text, line, len("  const made = "))
    top = [c.symbol for c in result.ranked[:10]]
    assert "CondExpr" in top, top


def test_a_default_export_that_is_one_function_is_not_a_namespace_of_its_files_helpers(
    tmp_path: Path,
) -> None:
    # Four imports whose default export is one function or class come before the one
    # default-export object (`check`). The functions are not namespaces: `merge0.` does not reach
    # merge0.js's helpers, and they must not take the places of modules not used yet.
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    for i in range(3):
        helpers = "".join(f"function helper{i}{j}(v) {{\n  return v;\n}}\n\n" for j in range(3))
        _write(
            root,
            f"lib/merge{i}.js",
            helpers + f"export default function merge{i}(a, b) {{\n  return a;\n}}\n",
        )
    _write(
        root, "lib/Store.js", "class Store {\n  keep(v) {\n    return v;\n  }\n}\n\nexport default Store;\n"
    )
    _write(
        root,
        "lib/check.js",
        "function assertOptions(options, schema) {\n  return options;\n}\n\n"
        "const registry = {};\n\nexport default {\n  assertOptions,\n  registry\n};\n",
    )
    imports = "".join(f"import merge{i} from './merge{i}.js';\n" for i in range(3))
    imports += "import Store from './Store.js';\nimport check from './check.js';\n\n"
    writing = imports + "export function request(config) {\n  "
    _write(root, "lib/request.js", writing + "\n}\n")
    settings, store = build_index(root, **LEXICAL)
    text = (root / "lib/request.js").read_text()
    line = len(writing.split("\n")) - 1
    result = assemble_context(store, settings, "lib/request.js", text, line, 2)
    top = [c.symbol for c in result.ranked[:10]]
    assert "assertOptions" in top, top
    whys = " ".join(c.why for c in result.ranked)
    assert "a member of the module `merge0`" not in whys and "a member of the module `Store`" not in whys


def test_which_default_exports_are_one_definition(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    _write(root, "a.js", "class A {}\nexport default A;\n")
    _write(root, "b.js", "const b = { one() {} };\nexport default b;\n")
    _write(root, "c.js", "export default class C {}\n")
    _write(root, "d.js", "function d() {}\nexport default {\n  d\n};\n")
    # An example in a comment above the real export does not decide.
    _write(
        root,
        "e.js",
        "/*\nexport default function example() {}\n*/\nfunction e() {}\nexport default {\n  e\n};\n",
    )
    _write(root, "f.js", "export default (a, b) => {\n  return a;\n};\n")
    _write(root, "g.js", "function g() {}\nexport default g; // the one\n")
    # Spaces around the semicolon are read once (the pattern was quadratic in them), and a
    # name followed by more than spaces is not one definition.
    _write(root, "h.js", "function h() {}\nexport default h" + " " * 200 + ";" + " " * 200 + "\n")
    _write(root, "i.js", "function i() {}\nexport default i" + " " * 200 + "+ 1\n")
    _settings, store = build_index(root, **LEXICAL)
    files = ("a.js", "b.js", "c.js", "d.js", "e.js", "f.js", "g.js", "h.js", "i.js")
    one = {
        p: exports_one_definition([c.text for c in store.chunks_for_file(p)], store.symbols_in_file(p))
        for p in files
    }
    assert one == {
        "a.js": True,
        "b.js": False,
        "c.js": True,
        "d.js": False,
        "e.js": False,
        "f.js": True,
        "g.js": True,
        "h.js": True,
        "i.js": False,
    }
