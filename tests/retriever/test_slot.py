"""What the cursor's slot expects (retriever/slot.py): conditions, raise/new/await, assignments."""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.retriever.candidates import Candidate
from codectx.retriever.context import assemble_context
from codectx.retriever.returns import return_types
from codectx.retriever.slot import (
    AWAITABLE,
    CLASS,
    CONDITION,
    EXCEPTION,
    ITERABLE,
    SLOT_CHARS,
    declared_types,
    encloses_predicate,
    fits,
    is_predicate,
    slot_kind,
    slot_text,
    target_words,
    weigh_for_slot,
)

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


@pytest.mark.parametrize(
    "before",
    [
        "if (",
        "    if (!",
        "} else if (",
        "while ",
        "elif ",
        "x = a if ",
        "ok = x and ",
        "if not ",
        "a && ",
        "b || !",
        "return !",
        "x = !",
        "assert ",
    ],
)
def test_a_condition_is_recognised(before: str) -> None:
    assert slot_kind(before) == CONDITION


@pytest.mark.parametrize(
    "before", ["return ", "x = ", "x != ", "foo(", "iffy(", "    ", "notify(", "android = "]
)
def test_other_places_are_not_conditions(before: str) -> None:
    assert slot_kind(before) != CONDITION


def test_raise_new_and_await_slots() -> None:
    assert slot_kind("        raise ") == EXCEPTION
    assert slot_kind("throw new ") == EXCEPTION
    assert slot_kind("const a = new ") == CLASS
    assert slot_kind("const r = await ") == AWAITABLE
    assert slot_kind("renew ") == ""
    assert slot_kind("let v = vec!") == ""  # a macro, not a negation
    assert slot_kind("x = value!") == ""  # a non-null assertion


def test_after_for_in_something_iterable_comes() -> None:
    for before in (
        "        for sgroup in ",
        "    names = [x.name for x in ",
        "  for (const key of ",
        "    async for chunk in ",
    ):
        assert slot_kind(before) == ITERABLE, before
    assert slot_kind("    if name in ") != ITERABLE
    assert fits(
        ITERABLE,
        "TokenList.get_sublists",
        "def get_sublists(self):\n    for t in self.tokens:\n        yield t",
    )
    assert fits(ITERABLE, "iter_extensions", 'def iter_extensions(self) -> t.Iterator["Extension"]:')
    assert fits(ITERABLE, "HookCaller.get_hookimpls", "def get_hookimpls(self) -> list[HookImpl]:")
    assert fits(ITERABLE, "keys", "function keys(o: object): Array<string> {")
    assert fits(ITERABLE, "Bag", "class Bag:\n    def __iter__(self):\n        return iter(self.items)")
    assert not fits(ITERABLE, "get_name", "def get_name(self) -> str:\n    return self.name")
    # A class whose methods yield is not iterable itself.
    assert not fits(ITERABLE, "TokenList", "class TokenList:\n    def flatten(self):\n        yield self")


def test_the_slot_is_read_before_the_name_being_typed() -> None:
    for typed in ("if (", "if (isS", "if (utils.isS", "if (utils.", "if (this.utils?.is"):
        assert slot_kind(slot_text([typed], 0, len(typed))) == CONDITION, typed
    for typed in ("    and", "    android", "    notify", "self.assert", "foo.if"):
        assert slot_kind(slot_text([typed], 0, len(typed))) == "", typed
    assert slot_kind(slot_text(["raise Val"], 0, 9)) == EXCEPTION
    assert target_words(slot_text(["headers = Ax"], 0, 12)) == {"header"}


def test_review_cases_of_the_declared_type_slots() -> None:
    void = Candidate("a.py", 0, 1, "log_event", "definition", 1.0, "def log_event(x) -> None:", "")
    # A blank line continuing a call, a list or an assignment wants a value, not a statement.
    for above in ("    build(a,", "    items = [", "    const client ="):
        before = slot_text([above, "    "], 1, 4)
        assert [c.score for c in weigh_for_slot([void], before, 4.0, statement_weight=1.0)] == [0.2], above
    # An arrow function's body and the end of a comment are no values.
    for before in ("items.forEach((x) => ", "/* note */ "):
        assert [c.score for c in weigh_for_slot([void], before, 4.0)] == [1.0], before
    # A type guard answers yes or no; it makes no Foo.
    assert return_types("function isFoo(x: unknown): x is Foo {") == set()
    foo = Candidate("a.ts", 0, 1, "Foo", "definition", 1.0, "class Foo {", "")
    out = weigh_for_slot([foo], "  return ", 4.0, in_predicate=True, returns=frozenset({"Foo"}))
    assert [c.score for c in out] == [1.0]
    # One-line compound statements: the name assigned, not the condition before it.
    rows = ["    result: Response = None", "    if headers: result = "]
    assert declared_types(rows, 1, rows[1], 0) == {"Response"}
    assert declared_types(["    private x?: Foo = "], 0, "    private x?: Foo = ", 0) == {"Foo"}
    # A signature of spaces (the patterns first tried here backtracked for seconds on it).
    assert return_types("def f(x) -> " + " " * 1990 + "y") == set()
    assert return_types("def f(self) -> Response:  # noqa: D401") == {"Response"}


def test_a_minified_line_is_read_by_its_end_only() -> None:
    # The patterns backtrack: given a whole 100,000-character line, some took over a minute.
    line = "for(var a in b)c[a]=d(a);" * 4000 + "if (x && "
    before = slot_text([line], 0, len(line))
    assert len(before) <= SLOT_CHARS
    assert slot_kind(before) == CONDITION


def test_a_condition_continued_on_the_next_line() -> None:
    lines = ["    if (", "      ", "    ok = isA(x) &&", "      ", "    x = 1", "    "]
    assert slot_kind(slot_text(lines, 1, 6)) == CONDITION
    assert slot_kind(slot_text(lines, 3, 6)) == CONDITION
    assert slot_kind(slot_text(lines, 5, 4)) == ""  # a new statement
    assert slot_kind(slot_text(lines, 0, 0)) == ""


def test_predicates_by_name_and_by_return_type() -> None:
    assert is_predicate("isStream", "function isStream(x) {")
    assert is_predicate("Item.is_aot", "def is_aot(self):")
    assert is_predicate("_has_key", "def _has_key(d):")
    assert is_predicate("valid", "def valid(x) -> bool:\n    return True")
    assert is_predicate("check", "function check(a: number): boolean {")
    assert is_predicate("isNode", "function isNode(x: unknown): x is Node {")
    assert is_predicate("Ready", "func Ready(s *State) bool {")
    assert not is_predicate("Flag", "class Flag:\n    def __bool__(self) -> bool:")  # a method's type
    assert not is_predicate("island", "def island(): pass")
    assert not is_predicate("issue", "def issue(x) -> int:")
    assert not is_predicate("toNumber", "function toNumber(x) {")
    # A class named Bool is not a bool (tomlkit's `def _parse_bool(self, style) -> Bool:`).
    assert not is_predicate("Parser._parse_bool", "def _parse_bool(self, style) -> Bool:")
    assert is_predicate("check", "/** @returns {Boolean} */ function check(x) {")


def test_a_signature_s_specific_return_types() -> None:
    assert return_types(
        "def parse_subscript(\n    self, node\n) -> t.Union[nodes.Getattr, nodes.Getitem]:"
    ) == {
        "Getattr",
        "Getitem",
    }
    assert return_types('def get(self, *args: Any) -> "Arrow":') == {"Arrow"}
    assert return_types("function spy(listener: (change: any) => void): Lambda {") == {"Lambda"}
    assert return_types("async function load(p: string): Promise<Config> {") == {"Config"}
    assert return_types("def name(self) -> t.Optional[str]:") == set()  # nothing specific
    assert return_types("def run(self) -> T:") == set()  # a type variable
    assert return_types("def run(self):") == set()
    assert return_types("class Arrow:") == set()
    assert return_types("const make = (p: string): Lambda => {") == {"Lambda"}  # an arrow function
    assert return_types("spy(listener: Listener): Lambda | undefined") == {"Lambda"}  # as the index keeps it


def test_after_return_what_makes_the_declared_type_rises() -> None:
    made = Candidate("a.py", 0, 1, "Getattr", "definition", 1.0, "class Getattr(Node):", "")
    factory = Candidate("b.py", 0, 1, "make", "definition", 1.0, "def make(x) -> nodes.Getattr:", "")
    other = Candidate("c.py", 0, 1, "Const", "definition", 1.5, "class Const(Node):", "")
    returns = frozenset({"Getattr"})
    out = {
        c.symbol: c.score for c in weigh_for_slot([made, factory, other], "    return ", 4.0, returns=returns)
    }
    assert out == {"Getattr": 5.0, "make": 5.0, "Const": 1.5}
    # Only the value returned: elsewhere in the same definition the order stays.
    out = {c.symbol: c.score for c in weigh_for_slot([made, other], "    node = ", 4.0, returns=returns)}
    assert out == {"Getattr": 1.0, "Const": 1.5}
    out = {c.symbol: c.score for c in weigh_for_slot([made, other], "    return ", 0.0, returns=returns)}
    assert out == {"Getattr": 1.0, "Const": 1.5}


def test_the_declared_type_of_the_name_being_assigned() -> None:
    rows = [
        "class CodeGenerator:",
        "    def __init__(self, optimized):",
        "        self.optimizer: t.Optional[Optimizer] = None",
        "        node: nodes.Expr",
        "    def visit(self):",
        "        node = ",
        "        self.optimizer = ",
    ]
    assert declared_types(rows, 6, rows[6], 4) == {"Optimizer"}  # an attribute: anywhere above
    assert declared_types(rows, 5, rows[5], 4) == set()  # a local of another function
    assert declared_types(rows, 5, rows[5], 1) == {"Expr"}
    assert declared_types(rows, 0, "    x: Headers = ", 0) == {"Headers"}
    assert declared_types(rows, 0, "    count: int = ", 0) == set()
    assert declared_types(rows, 6, "        if self.optimizer == ", 4) == set()


def test_a_subclass_of_the_expected_type_makes_it() -> None:
    sub = Candidate("n.py", 0, 1, "MarkSafe", "definition", 1.0, "class MarkSafe(nodes.Expr):", "")
    ts_sub = Candidate("n.ts", 0, 1, "Float", "definition", 1.0, "export class Float extends Item {", "")
    other = Candidate("n.py", 0, 1, "Helper", "definition", 1.0, "class Helper(Node):", "")
    out = weigh_for_slot([sub, ts_sub, other], "    node = ", 4.0, assigned=frozenset({"Expr", "Item"}))
    assert [c.score for c in out] == [5.0, 5.0, 1.0]


def test_what_a_predicate_returns_is_a_condition() -> None:
    assert slot_kind("  return ", in_predicate=True) == CONDITION
    assert slot_kind("    return not ", in_predicate=True) == CONDITION
    assert slot_kind("  return ") == ""
    assert slot_kind("  value = ", in_predicate=True) == ""  # only the returned value
    doc = [
        "/**",
        " * @returns {boolean} True if it is an error",
        " */",
        "export default function check(payload) {",
    ]
    assert encloses_predicate(doc, 3, "check")
    assert not encloses_predicate(["/** @returns {string} */", "function check(payload) {"], 1, "check")
    assert not encloses_predicate(["// @returns {boolean}", "", "function check(payload) {"], 2, "check")
    assert encloses_predicate(["def valid(x) -> bool:", "    return x"], 0, "valid")
    assert encloses_predicate(["function isVisitable(thing) {"], 0, "isVisitable")


def test_an_exception_class_by_its_base() -> None:
    assert fits(EXCEPTION, "Impossible", "class Impossible(Exception):\n    pass")
    assert fits(EXCEPTION, "Cancel", "class Cancel extends AxiosError {")
    assert fits(EXCEPTION, "Abort", "class Abort(errors.HTTPError, Mixin):")
    assert not fits(EXCEPTION, "Handler", "class Handler(ErrorHandlerMixin):")  # a word inside a name
    assert not fits(EXCEPTION, "Node", "class Node(Base):")


def test_what_fits_raise_new_and_await() -> None:
    assert fits(EXCEPTION, "ParseError", "class ParseError(ValueError):\n    pass")
    assert not fits(EXCEPTION, "Parser", "class Parser:\n    pass")
    assert not fits(EXCEPTION, "raise_error", "def raise_error(): pass")
    assert fits(CLASS, "Headers", "export class Headers {")
    assert not fits(CLASS, "headers", "function headers() {")
    assert fits(AWAITABLE, "fetch", "async def fetch(url):")
    assert fits(AWAITABLE, "Client.get", "  async get(url) {")
    assert not fits(AWAITABLE, "get", "def get(url):")


def test_target_words_are_the_assigned_name() -> None:
    assert target_words("    request_headers = ") == {"request", "header"}
    assert target_words("self.loader = ") == {"loader"}
    assert target_words("env = Environment(loader=") == {"loader"}
    assert target_words("const client = await ") == {"client"}
    assert target_words("x: Headers = ") == set()  # one-letter name: no words
    assert target_words("if count == ") == set()  # a comparison, not an assignment
    assert target_words("total += ") == set()
    assert target_words("if headers: result = ") == {"result"}  # the statement's own target
    assert target_words("const client: Headers = await ") == {"client"}
    assert target_words("    request_headers: dict[str, str] = ") == {"request", "header"}
    assert target_words("foo(") == set()


def _cand(symbol: str, score: float, text: str = "") -> Candidate:
    return Candidate("lib.py", 0, 1, symbol, "definition", score, text or f"def {symbol}(x):", "")


def _order(cands: list[Candidate]) -> list[str]:
    return [c.symbol for c in sorted(cands, key=lambda c: -c.score)]


def test_weighing_moves_predicates_up_in_a_condition_and_down_elsewhere() -> None:
    cands = [_cand("merge", 0.5), _cand("is_stream", 0.45), _cand("to_number", 0.4)]
    assert _order(weigh_for_slot(cands, "    if ", 4.0))[0] == "is_stream"
    assert _order(weigh_for_slot(cands, "    value = ", 4.0))[-1] == "is_stream"
    assert _order(weigh_for_slot(cands, "    value = ", 0.0)) == ["merge", "is_stream", "to_number"]
    assert [c.score for c in cands] == [0.5, 0.45, 0.4]  # the input is not changed


def test_weighing_lifts_a_name_sharing_a_word_with_the_target() -> None:
    cands = [_cand("merge", 0.5), _cand("Headers", 0.3)]
    assert _order(weigh_for_slot(cands, "    headers = ", 0.0, target_weight=1.0))[0] == "Headers"
    assert _order(weigh_for_slot(cands, "    headers = ", 0.0, target_weight=0.0))[0] == "merge"


HELPERS = {
    "merge",
    "to_number",
    "find_key",
    "to_camel",
    "strip_bom",
    "flatten",
    "extend",
    "trim",
    "is_stream",
    "is_object",
}
# A helper module: the workspace calls `is_object` most, its converters often, `is_stream` never.
UTILS = "\n\n".join(
    [
        *(
            f"def {name}(value):\n    return value"
            for name in [
                "merge",
                "to_number",
                "find_key",
                "to_camel",
                "strip_bom",
                "flatten",
                "extend",
                "trim",
            ]
        ),
        "def is_stream(value):\n    return hasattr(value, 'pipe')",
        "def is_object(value):\n    return isinstance(value, dict)",
    ]
)
USERS = "from lib import utils\n\n" + "\n\n".join(
    f"def use_{i}(x):\n    return utils.{name}(x)"
    for i, name in enumerate(
        ["merge", "to_number", "find_key", "to_camel", "strip_bom", "flatten", "extend", "trim"] * 3
        + ["is_object"] * 4
    )
)
APP = """from lib import utils


def handle(data):
    value = utils.merge(data, {})
    if@
        return value
"""


def _workspace(tmp_path: Path, module: str, module_text: str, users: str, path: str, text: str) -> tuple:
    """An indexed workspace: `lib/<module>.py`, `users.py` calling it, and the file being edited."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / f"{module}.py").write_text(module_text)
    (root / "users.py").write_text(users)
    (root / path).write_text(text)
    return build_index(root, **LEXICAL)


@pytest.fixture
def utils_repo(tmp_path: Path) -> tuple[object, object]:
    return _workspace(tmp_path, "utils", UTILS, USERS, "app.py", APP.replace("@", " value:"))


def _definitions(result: object) -> list[str]:
    return [c.symbol for c in result.ranked if c.reason == "definition"]  # type: ignore[attr-defined]


def test_after_if_predicates_of_the_module_in_use_rise_and_elsewhere_fall(utils_repo: tuple) -> None:
    settings, store = utils_repo
    text = APP.replace("@", " ")
    line = text.split("\n").index("    if ")
    ranked = _definitions(assemble_context(store, settings, "app.py", text, line, len("    if ")))
    assert ranked[0] in {"is_stream", "is_object"}, ranked[:5]
    off = settings.with_overrides({"retriever.slot_weight": 0.0})
    plain = _definitions(assemble_context(store, off, "app.py", text, line, len("    if ")))
    assert ranked.index("is_stream") < plain.index("is_stream"), (ranked, plain)
    # Outside a condition the predicates fall behind the module's other functions.
    text = APP.replace("    if@", "    other = ")
    line = text.split("\n").index("    other = ")
    valued = _definitions(assemble_context(store, settings, "app.py", text, line, len("    other = ")))
    plain = _definitions(assemble_context(store, off, "app.py", text, line, len("    other = ")))
    members = [s for s in valued if s in HELPERS]
    plain_members = [s for s in plain if s in HELPERS]
    assert members.index("is_object") > plain_members.index("is_object"), (members, plain_members)


def test_in_a_predicate_the_returned_call_ranks_predicates_first(utils_repo: tuple) -> None:
    settings, store = utils_repo
    text = APP.replace("def handle(data):", "def is_usable(data):").replace(
        "    if@\n        return value", "    return "
    )
    line = text.split("\n").index("    return ")
    ranked = _definitions(assemble_context(store, settings, "app.py", text, line, len("    return ")))
    assert ranked[0] in {"is_stream", "is_object"}, ranked[:5]
    # The same body in a function that is not a predicate: the predicates are not first.
    plain_text = text.replace("def is_usable(data):", "def handle(data):")
    plain = _definitions(assemble_context(store, settings, "app.py", plain_text, line, len("    return ")))
    assert plain.index("is_object") > ranked.index("is_object"), (ranked[:5], plain[:5])


NODES = "\n\n".join(
    f"class {name}:\n    def __init__(self, value):\n        self.value = value"
    for name in ["Const", "Name", "Call", "Getattr", "Getitem", "Assign"]
)
NODE_USERS = "from lib import nodes\n\n" + "\n\n".join(
    f"def build_{i}(x):\n    return nodes.{name}(x)"
    for i, name in enumerate(["Const", "Name", "Call", "Assign", "Getitem"] * 3 + ["Getattr"])
)
# The cursor after `return ` (its trailing space written out, so no editor strips it).
PARSER = "from lib import nodes\n\n\ndef parse_subscript(token, node)@:\n    arg = nodes.Const(token)\n"
PARSER += "    return \n"


def test_after_return_the_declared_return_type_ranks_first(tmp_path: Path) -> None:
    settings, store = _workspace(tmp_path, "nodes", NODES, NODE_USERS, "parser.py", PARSER.replace("@", ""))
    for annotation, first in (("", False), (" -> nodes.Getattr", True)):
        text = PARSER.replace("@", annotation)
        line = text.split("\n").index("    return ")
        ranked = _definitions(assemble_context(store, settings, "parser.py", text, line, len("    return ")))
        assert (ranked[0] == "Getattr") is first, (annotation, ranked[:5])


def test_a_definition_that_returns_nothing_is_a_statement_not_a_value() -> None:
    void = Candidate(
        "a.py", 0, 1, "Stream.enable_buffering", "definition", 1.0, "def enable_buffering(self) -> None:", ""
    )
    ts_void = Candidate(
        "a.ts", 0, 1, "spyReport", "definition", 1.0, "export function spyReport(e: Event): void {", ""
    )
    value = Candidate("b.py", 0, 1, "Stream.dump", "definition", 1.0, "def dump(self, fp) -> str:", "")

    def scores(before: str, statement_weight: float = 1.0) -> dict[str, float]:
        cands = [void, ts_void, value]
        return {
            c.symbol: c.score for c in weigh_for_slot(cands, before, 4.0, statement_weight=statement_weight)
        }

    assert scores("        ") == {"Stream.enable_buffering": 2.0, "spyReport": 2.0, "Stream.dump": 1.0}
    for before in ("    result = ", "    print(", "    return ", "    items = [a, ", "    x = y or "):
        assert scores(before) == {"Stream.enable_buffering": 0.2, "spyReport": 0.2, "Stream.dump": 1.0}, (
            before
        )
    assert scores("        ", statement_weight=0.0)["Stream.enable_buffering"] == 1.0


STATE = """def reset(state) -> None:
    state.clear()


def snapshot(state) -> dict:
    return dict(state)
"""
STATE_USERS = "from lib import state\n\n" + "\n\n".join(
    f"def use_{i}(s):\n    return state.snapshot(s)" if i % 3 else f"def use_{i}(s):\n    state.reset(s)"
    for i in range(9)
)


def test_at_a_statement_s_start_what_returns_nothing_ranks_first(tmp_path: Path) -> None:
    text = "from lib import state\n\n\ndef restart(s):\n    s.running = False\n    \n"
    settings, store = _workspace(tmp_path, "state", STATE, STATE_USERS, "app.py", text)
    line = 5
    statement = _definitions(assemble_context(store, settings, "app.py", text, line, 4))
    assert statement.index("reset") < statement.index("snapshot"), statement[:5]
    valued_text = text.replace("\n    \n", "\n    saved = \n")
    valued = _definitions(assemble_context(store, settings, "app.py", valued_text, line, len("    saved = ")))
    assert valued.index("snapshot") < valued.index("reset"), valued[:5]
