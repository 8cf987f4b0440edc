"""What a definition's signature says it returns: one reader for receiver types and the slot.

A signature declares its return type after Python's `->` (`def f(a) -> t.Optional[Foo]:`) or
after TypeScript's closing parenthesis and colon (`function f(a): Promise<Foo> {`, `m(x):
Baz | null`, `(a): Bar =>`). It comes in two forms: as the index keeps it (one line, TypeScript's
without the `{`) and as a file's first lines of a definition (a multi-line signature, a comment
after Python's colon). `returned_text` reads it as written, with string operations: the patterns
tried first backtracked for seconds on a signature of spaces. Two readings are built on it:

- `returned_class`: the one class a call's result is an instance of, for typing a receiver
  (`-> t.Optional[Template]` -> `Template`); "" for builtins and typing constructs.
- `return_types`: every specific type named (`-> t.Union[nodes.Getattr, nodes.Getitem]` ->
  {"Getattr", "Getitem"}), for what the text before the cursor expects.

Pure: text in, names out.
"""

from __future__ import annotations

import re

# Capitalised names in annotations that are typing constructs, not the receiver's class.
# fmt: off
NOT_CLASSES = frozenset({
    "Optional", "Union", "Any", "None", "Type", "List", "Dict", "Tuple", "Set", "Literal", "Callable",
    "Iterable", "Iterator", "Sequence", "Mapping", "Awaitable", "Generator", "Final", "ClassVar",
    "Promise",
})
# Types that say nothing of which definition makes the value.
GENERIC_TYPES = frozenset({
    "str", "int", "float", "bool", "bytes", "None", "Any", "object", "Optional", "Union", "List",
    "Dict", "Tuple", "Set", "FrozenSet", "list", "dict", "tuple", "set", "frozenset", "Iterator",
    "Iterable", "Generator", "Sequence", "Mapping", "Callable", "Type", "type", "NoReturn", "Self",
    "void", "string", "number", "boolean", "any", "unknown", "never", "undefined", "null",
    "Promise", "Array", "Record", "Partial", "Readonly", "this",
})
# fmt: on
# What a signature that returns nothing declares: Python's `-> None:`, TypeScript's `): void {`.
NOTHING = frozenset({"None", "void"})
_ONE_COLON = re.compile(r"(?<!:):(?!:)")  # Python's colon after the type, not a Rust path's `::`
TYPE_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
# A TypeScript type guard (`x is Foo`, `asserts x is Foo`) answers yes or no; it makes no Foo.
_TYPE_GUARD = re.compile(r"^(?:asserts\s+)?[\w$]+\s+is\b")
# The class an annotation names: `'Foo'`, `t.Optional[Foo]`, `Type[Foo]`, `nodes.Getattr`
# (receiver_types reads annotations with it too).
CLASS_ANNOTATION = (
    r"['\"]?(?:(?:t|typing|te)\.)?(?:Optional\[|Type\[|type\[)?['\"]?((?:[A-Za-z_]\w*\.)*[A-Z]\w*)"
)
_LEADING_CLASS = re.compile(CLASS_ANNOTATION)  # anchored (`match`): read once from the start


def returned_text(signature: str) -> str:
    """The return type a signature declares, as written: Python's `-> X:` (a trailing comment
    ignored), Rust's and C++'s `-> X`, TypeScript's `): X {`, `): X` or `): X =>`; "" when it
    declares none. TypeScript's form is read on the signature's last line only: on a parameter's
    line `): X` is a default value's ternary (`a = c ? "x" + f() : "y"`)."""
    rows = signature.split("\n")
    for i, row in enumerate(rows):
        code = row.split("  #", 1)[0].rstrip()
        arrow = code.rfind("->")
        # An arrow after the parameters (not one in a default value's string: `def f(a="->")`).
        if arrow >= 0 and code.count("(", 0, arrow) <= code.count(")", 0, arrow):
            returned = _ONE_COLON.split(code[arrow + 2 :], maxsplit=1)[0]  # `-> X: return 1`
            if not any(c in returned for c in ";="):  # not a body's `$this->x = 1;`
                return returned.removesuffix("{").strip()
        if ")" in code and (i == len(rows) - 1 or code.endswith("{")):
            rest = code[code.rindex(")") + 1 :].strip()
            rest = rest.removesuffix("{").rstrip().removesuffix("=>").rstrip()
            if rest.startswith(":") and not any(c in rest for c in ";=()"):
                return rest[1:].strip()
    return _after_parameters(signature)


def _after_parameters(signature: str) -> str:
    """TypeScript's return type that holds a function type (`): Map<K, (x: T) => void> {`), whose
    `)` and `=>` the reading above takes for the parameters' end and an arrow function: read after
    the parenthesis that closes the first one, on that line. "" when a type parameter comes first
    (`f<T extends (a) => void>(`: which parenthesis opens the parameters is not read here)."""
    first = signature.find("(")
    if first < 0 or signature.count("<", 0, first) > signature.count(">", 0, first):
        return ""
    depth = 0
    for i in range(first, len(signature)):
        ch = signature[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                break
    else:
        return ""
    line, _, after = signature[i + 1 :].partition("\n")
    rest = line.split("  //", 1)[0].strip()
    if after.strip() and not rest.endswith("{"):
        return ""
    rest = rest.removesuffix("{").rstrip().removesuffix("=>").rstrip()
    if not rest.startswith(":") or ";" in rest or re.search(r"=(?!>)", rest):
        return ""
    # Each `=>` inside the type's brackets: one outside is an arrow function's body on the same
    # line (`(a): Bar => (x)`), and without one this is not the case read here (`def f(a): g(x)`).
    depth, arrows = 0, 0
    for i, ch in enumerate(rest):
        if ch in "(<[":
            depth += 1
        elif ch in ")]" or (ch == ">" and rest[i - 1] != "="):
            depth -= 1
        elif ch == "=" and depth <= 0:
            return ""
        arrows += ch == "=" and depth > 0
    return rest[1:].strip() if arrows and depth == 0 else ""


def type_names(annotation: str) -> frozenset[str]:
    """The specific types an annotation names (`t.Optional[nodes.Expr]` -> {"Expr"}): builtins,
    typing's containers and one-letter type variables left out."""
    names = (n.rsplit(".", 1)[-1] for n in TYPE_NAME.findall(annotation))
    return frozenset(n for n in names if len(n) > 1 and n not in GENERIC_TYPES)


def return_types(signature: str) -> frozenset[str]:
    """The specific types a signature says its definition returns (`-> t.Optional[nodes.Getattr]:`
    -> {"Getattr"}); type guards (`x is Foo`) name none."""
    returned = returned_text(signature)
    if _TYPE_GUARD.match(returned):
        return frozenset()
    return type_names(returned)


def returns_nothing(signature: str) -> bool:
    """Whether a signature declares that its definition returns nothing (`-> None`, `: void`)."""
    return returned_text(signature) in NOTHING


def returned_class(signature: str) -> str:
    """The class a signature says its definition returns (`-> "Environment"`, `-> t.Optional[
    Template]`, `): Promise<Foo>`), dotted as written (`nodes.Getattr`); "" when it names none
    or a typing construct (`-> Any`, `-> List[Foo]`)."""
    match = _LEADING_CLASS.match(returned_text(signature).removeprefix("Promise<"))
    if not match or match.group(1).split(".")[-1] in NOT_CLASSES:
        return ""
    return match.group(1)
