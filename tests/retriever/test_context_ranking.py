"""How completion context ranks definitions before the callee's name is typed: imports the rest
of the file does not use come first, and without a scope vector the words of each definition's
head rank the candidates."""

from __future__ import annotations

from pathlib import Path

from codectx.retriever.candidates import Candidate
from codectx.retriever.context import assemble_context
from codectx.retriever.deflists import occurrences_outside
from codectx.retriever.rankdefs import lexical_affinity_list, one_flavour_each

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


def _cand(symbol: str, text: str, path: str = "lib.py", start: int = 0) -> Candidate:
    return Candidate(path, start, start + text.count("\n"), symbol, "definition", 0.0, text, "test")


def test_occurrences_outside_count_only_the_rest_of_the_file() -> None:
    scope = "def handle(raw):\n    return parse_cookie(raw)\n"
    text = "from helpers import parse_cookie, parse_header\n\n" + scope + "\nx = parse_cookie(y)\n"
    counts = occurrences_outside(text, scope)
    assert counts[b"parse_cookie"] == 2  # the import and the module-level use, not the scope's
    assert counts[b"parse_header"] == 1
    assert counts[b"handle"] == 0
    assert occurrences_outside("café = tarte(café)", "")[b"tarte"] == 1  # non-ASCII text splits words


def test_lexical_affinity_prefers_rare_words_shared_with_the_scope() -> None:
    scope = "def refresh_token(session):\n    '''Renew the session token.'''\n    session.token = "
    lists = {
        "imported": [
            _cand("format_date", "def format_date(session, value):\n    '''Format a date.'''", start=0),
            _cand("load_token", "def load_token(session, store):\n    '''Load a token.'''", start=10),
            _cand("nothing_shared", "def nothing_shared(a, b):\n    pass", start=20),
        ],
        "callees": [_cand("load_token", "def load_token(session, store):\n    '''Load.'''", start=10)],
    }
    ranked = lexical_affinity_list(scope, lists, top=10)
    assert [c.symbol for c in ranked] == ["load_token", "format_date"]  # `token` is rarer than `session`
    assert len({(c.path, c.start_line) for c in ranked}) == len(ranked), "one entry per definition"
    assert lexical_affinity_list(scope, lists, top=1)[0].symbol == "load_token"
    # A candidate that shares no word with the scope is left out (`nothing_shared` above), and the
    # weight of a word falls as more candidates have it.
    few = {"imported": [_cand("a", "def a(session):"), _cand("b", "def b(other):", start=5)]}
    many = {"imported": [_cand("a", "def a(session):"), _cand("b", "def b(session):", start=5)]}
    assert [c.symbol for c in lexical_affinity_list(scope, few, top=10)] == ["a"]
    assert len(lexical_affinity_list(scope, many, top=10)) == 2


def _write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def test_an_import_the_rest_of_the_file_does_not_use_ranks_first(tmp_path: Path) -> None:
    """`parse_header` is imported but used nowhere yet: the function being written is the likely
    user. `parse_cookie` comes first in the import and is used all over the file."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    helpers = "".join(
        f"def {name}(raw):\n    '''Split a raw value.'''\n    return raw.split(';')\n\n\n"
        for name in ("parse_cookie", "parse_header")
    )
    _write(root, "pkg/helpers.py", helpers)
    users = "".join(f"def use_{i}(raw):\n    return parse_cookie(raw)\n\n\n" for i in range(4))
    head = "from pkg.helpers import parse_cookie, parse_header\n\n\n"
    writing = "def handle(raw):\n    value = "
    _write(root, "pkg/client.py", head + users + writing + "\n")
    settings, store = build_index(root, **LEXICAL)
    # The imported list's own order; the neighbours list (what the functions around call,
    # `parse_cookie` here) pulls the other way, and their weights were chosen together.
    settings = settings.with_overrides({"retriever.neighbour_weight": 0.0})
    text = (root / "pkg/client.py").read_text()
    line = text.split("\n").index("    value = ")
    result = assemble_context(store, settings, "pkg/client.py", text, line, len("    value = "))
    order = [c.symbol for c in result.ranked if c.path == "pkg/helpers.py"]
    assert order[:2] == ["parse_header", "parse_cookie"], order
    # Once the rest of the file uses both as often, the import order decides again.
    both = head + users.replace("parse_cookie(raw)", "parse_cookie(raw) + parse_header(raw)") + writing
    again = assemble_context(store, settings, "pkg/client.py", both, line, len("    value = "))
    order = [c.symbol for c in again.ranked if c.path == "pkg/helpers.py"]
    assert order[:2] == ["parse_cookie", "parse_header"], order


def test_an_unused_import_ranks_over_a_used_one_that_shares_more_words_with_the_scope(tmp_path: Path) -> None:
    """`load_cookie_jar` shares `cookie` and `jar` with the function being written but the rest of
    the file calls it already; `render_page` shares nothing and is used nowhere yet: the import the
    user just added for this function is the better guess."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    _write(
        root,
        "pkg/helpers.py",
        "def load_cookie_jar(path):\n    '''Load a cookie jar.'''\n    return open(path)\n\n\n"
        "def render_page(template):\n    '''Render a template.'''\n    return template.format()\n",
    )
    head = "from pkg.helpers import load_cookie_jar, render_page\n\n\n"
    other = "def setup(path):\n    return load_cookie_jar(path)\n\n\n"
    writing = "def save_cookie_jar(jar, path):\n    cookie_jar = jar\n    result = "
    _write(root, "pkg/client.py", head + other + writing + "\n")
    settings, store = build_index(root, **LEXICAL)
    # The imported list's own order: the affinity list (words shared with the scope) pulls the
    # other way, and the weights of the lists were chosen together.
    settings = settings.with_overrides({"retriever.neighbour_weight": 0.0, "retriever.affinity_weight": 0.0})
    text = (root / "pkg/client.py").read_text()
    line = text.split("\n").index("    result = ")
    result = assemble_context(store, settings, "pkg/client.py", text, line, len("    result = "))
    order = [c.symbol for c in result.ranked if c.path == "pkg/helpers.py"]
    assert order[:2] == ["render_page", "load_cookie_jar"], order


def test_one_declaration_per_module_flavour_of_a_types_file() -> None:
    esm = "export class Headers {\n  setContentLength(value: number): Headers;\n}\n"
    cjs = "declare class Headers {\n  setContentLength(value: number): Headers;\n}\n"
    ranked = [
        _cand("Headers.setContentLength", esm, "index.d.ts"),
        _cand("Headers.setContentLength", cjs, "index.d.cts"),  # its twin: left out
        _cand("Headers.getContentLength", cjs, "index.d.cts"),  # another symbol: kept
        _cand("Headers.set", "set(name: string): Headers;\n", "index.d.ts", 9),  # overloads in one
        _cand("Headers.set", "set(map: object): Headers;\n", "index.d.ts", 10),  # file: both kept
        _cand("Headers", "export class Headers {\n}\n", "types/other.d.ts"),  # another file
        _cand("setContentLength", "function setContentLength(v) {\n}\n", "lib/headers.js"),
    ]
    for i, cand in enumerate(ranked):
        cand.score = 1.0 - i / 10
    kept = one_flavour_each(list(reversed(ranked)))
    assert [(c.path, c.symbol) for c in kept] == [(c.path, c.symbol) for i, c in enumerate(ranked) if i != 1]


def test_context_sends_a_types_files_module_flavours_once(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    body = "Headers {\n  constructor(init?: object);\n\n  setContentLength(value: number): Headers;\n"
    body += "  getContentLength(): number;\n}\n"
    _write(root, "index.d.ts", "export class " + body)
    _write(root, "index.d.cts", "declare class " + body)
    writing = "export function prepare(headers, body) {\n  headers.setContentLength(body.length);\n  "
    _write(root, "lib/edit.js", writing + "\n}\n")
    settings, store = build_index(root, **LEXICAL)
    result = assemble_context(store, settings, "lib/edit.js", writing + "\n}\n", 2, 2)
    flavours = [c.path for c in result.ranked if c.path.startswith("index.d.")]
    # `setContentLength` is declared in both flavours; one declaration of it is enough.
    assert len(flavours) == 1, [(c.path, c.symbol) for c in result.ranked]


def test_a_member_name_being_typed_ranks_the_members_it_starts_first(tmp_path: Path) -> None:
    """`c.appl|`: `Cart.applyDiscount` ranked fifth, behind `Cart.add` (used in the file) and an
    import the scope had not used; the letters typed after the `.` were not read."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    cart = "class Cart:\n"
    for name in ("add", "apply_discount", "total", "clear"):
        cart += f"    def {name}(self, value):\n        '''{name} the cart.'''\n        return value\n\n"
    _write(root, "shop/cart.py", cart)
    _write(
        root,
        "shop/money.py",
        "def format_currency(n):\n    return str(n)\n\n\ndef apply_rate(n):\n    return n\n",
    )
    head = "from shop.cart import Cart\nfrom shop.money import format_currency, apply_rate\n\n\n"
    used = "def fill(c):\n    c.add(1)\n    c.add(2)\n    return c.total(0)\n\n\n"
    writing = "def checkout():\n    c = Cart()\n    c.appl"
    text = head + used + writing + "\n"
    _write(root, "shop/main.py", text)
    settings, store = build_index(root, **LEXICAL)
    line = text.split("\n").index("    c.appl")
    for typed, first in (("c.appl", "Cart.apply_discount"), ("c.cl", "Cart.clear")):
        buffer = text.replace("    c.appl", "    " + typed)
        result = assemble_context(store, settings, "shop/main.py", buffer, line, len(typed) + 4)
        assert result.ranked[0].symbol == first, [c.symbol for c in result.ranked]
        # Only the receiver's members: an imported `apply_rate` is not the member being typed.
        assert not any(c.typed_call for c in result.ranked if not c.symbol.startswith("Cart."))
    # Nothing typed after the `.`: the ranking is as before (the used `add` and `total` lead).
    plain = assemble_context(store, settings, "shop/main.py", text, line, len("    c."))
    assert plain.ranked[0].symbol != "Cart.apply_discount"


def test_the_buffers_imports_count_before_it_is_saved(tmp_path: Path) -> None:
    """An import added in the editor (not saved, so not indexed) brings its definitions at once;
    one deleted there no longer does. The index's imports of the saved file were used either way."""
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    _write(root, "shop/money.py", "def format_currency(n):\n    return str(n)\n")
    _write(root, "shop/tax.py", "def add_vat(n):\n    return n * 1.2\n")
    saved = "from shop.money import format_currency\n\n\ndef checkout(total):\n    value = \n"
    _write(root, "shop/main.py", saved)
    settings, store = build_index(root, **LEXICAL)
    line = saved.split("\n").index("    value = ")

    def symbols(text: str) -> list[str]:
        result = assemble_context(store, settings, "shop/main.py", text, line, len("    value = "))
        return [c.symbol for c in result.ranked if "imported by this file" in c.why]

    assert "format_currency" in symbols(saved) and "add_vat" not in symbols(saved)
    edited = saved.replace("format_currency\n", "format_currency\nfrom shop.tax import add_vat\n", 1)
    edited = edited.replace("\n\n\ndef", "\n\ndef", 1)  # the cursor stays on the same line
    assert "add_vat" in symbols(edited)
    removed = "\n" + saved.split("\n", 1)[1]
    assert "format_currency" not in symbols(removed)
    # An import of a module written after it: once indexed, the buffer's import resolves (the
    # buffer's parsed imports were kept, unresolved, until its import lines changed).
    early = saved.replace("format_currency\n", "format_currency\nfrom shop.fees import fee\n", 1)
    early = early.replace("\n\n\ndef", "\n\ndef", 1)
    assert "fee" not in symbols(early)
    _write(root, "shop/fees.py", "def fee(n):\n    return 1\n")
    settings, store = build_index(root, **LEXICAL)
    assert "fee" in symbols(early)
