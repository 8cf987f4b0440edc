"""What the cursor's position expects: a condition or a value, and which definitions fit it.

Before the callee's name is typed, the text just before the cursor still says what kind of
expression goes there. After `if (`, `while `, `&& `, `assert ` or `not ` the next call is a
condition: in the development set's not-typed tasks 87 % of the calls written in such a place
were predicates (`isStream`, `is_aot`, `has_key`), elsewhere 2 %. After `raise ` comes an
exception class, after `new ` a class, after `await ` an async definition, after `for x in `
something iterable (a generator, a definition declared to return a list or an iterator, a class
with `__iter__`). And the name being assigned often shares a word with the callee
(`headers = new AxiosHeaders(`, `loader=ChoiceLoader(`: 30 % of assignments there).

Declared types say more. In a definition that declares its return type, what follows `return `
makes that type: the class itself, a class derived from it, or a definition declared to return
it (`-> nodes.Getattr:` ... `return nodes.Getattr(`, `-> Arrow:` ... `return
Arrow.utcfromtimestamp(`); the same for a name declared with a type and assigned
(`self.optimizer: t.Optional[Optimizer] = None` in `__init__`, then `self.optimizer = `); in a
predicate, what follows `return ` is a condition. A definition declared to return nothing
(`-> None`, `: void`) is called as a statement, never for a value (43 of 174 statement-start
calls in those tasks, none of 765 assigned, passed, returned or tested).

The definition lists rank by scope, not by the cursor's column, so that the context holds while
the user types; this is applied once, to their fused scores, and moves only what the slot
decides (`retriever.slot_weight`, `retriever.target_weight`, `retriever.statement_weight`). The
slot is read before the name being typed at the cursor, so it holds while the user types that
name too.

Pure: text in, scores out; no index access.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from codectx.indexer.parsing.identifiers import split_identifier
from codectx.retriever.returns import TYPE_NAME, return_types, returned_text, returns_nothing, type_names

if TYPE_CHECKING:
    from codectx.retriever.candidates import Candidate

# The text before the cursor ends where a condition starts: `if (`, `if(`, `} else if (`,
# `while `, `elif `, `assert `, `x if `, `and `, `or not `, `&& `, `|| `, `!` (not `foo!`,
# `vec!`, `x)!`: a macro or a non-null assertion).
_CONDITION = re.compile(
    r"(?:\b(?:if|elif|while|assert|and|or|not|unless)(?:\s+|\s*\()|&&|\|\||(?<![\w$!=<>)\]])!)\s*$"
)
# A predicate's name: `is_x`, `isStream`, `has_key`, `canRead`, `_is_empty`, `should_retry`.
_PREDICATE_NAME = re.compile(
    r"^_*(?:is|has|can|should|was|were|are|does|did|will|supports|needs|contains|exists|"
    r"matches|allows|accepts|equals|starts|ends)(?:[A-Z_0-9]|$)"
)
# A predicate's signature: `-> bool`, `): boolean`, `): x is Foo` (a type guard), Go's `) bool {`,
# `@returns {boolean}`; case matters but in the doc tag (`-> Bool` is a class, tomlkit's item).
_PREDICATE_HEAD = re.compile(
    r"->\s*bool\b|\)\s*:\s*(?:boolean\b|[\w$]+\s+is\s)|\)\s*bool\s*\{|(?i:@returns?\s*\{boolean\})"
)
# After `raise ` / `throw new ` an exception class; after `new ` a class; after `await ` an
# async definition.
_RAISE = re.compile(r"\b(?:raise|throw(?:\s+new)?)\s+$")
_NEW = re.compile(r"\bnew\s+$")
_AWAIT = re.compile(r"\bawait\s+$")
# `for x in `, `for (const x of `, `[f(x) for x in `: an iterable comes.
_FOR_IN = re.compile(r"\bfor\b.*\b(?:in|of)\s+$")
# fmt: off
_ITERABLE_TYPES = frozenset({
    "Iterator", "Iterable", "Generator", "AsyncIterator", "AsyncIterable", "AsyncGenerator", "list",
    "List", "Sequence", "tuple", "Tuple", "set", "Set", "frozenset", "FrozenSet", "dict", "Dict",
    "Mapping", "Array",
})
# fmt: on
# Indentation at a line's start is `[^\S\n]*`: `^\s*` crossed blank lines, so a run of them was
# read again from each of its lines (seconds at 20,000 blank lines).
# A generator's `yield` as code (`yield x`, `x = yield`, `(yield)`), not a docstring's word.
_YIELDS = re.compile(r"^[^\S\n]*yield\b|=\s*yield\b|\(\s*yield\b", re.MULTILINE)
_ITERATES_ITSELF = re.compile(r"\bdef __a?iter__\b|\[Symbol\.(?:async)?[iI]terator\]")
# A return statement's value (`return `, `return not `, `return !`): in a predicate it is a condition.
_RETURN = re.compile(r"\breturn\s+(?:(?:not\s+)|!\s*)?$")
_PLAIN_RETURN = re.compile(r"\breturn\s+$")
# Text before the cursor that wants a value there: an assignment, an argument, an element, an
# operand, a return value, a condition (not a statement's start, where a call's value is dropped).
# An arrow function's body (`forEach((x) => `) and the end of a comment (`*/ `) are not values.
_VALUE = re.compile(
    r"(?:[=(\[,?+\-*%<|&!]|(?<![=*])>|(?<!\*)/|\b(?:return|yield|if|elif|while|and|or|not|in|assert|else)\b)\s*$"
)
# A doc comment's boolean return, in the lines just above a definition (JSDoc, TSDoc).
_DOC_BOOLEAN = re.compile(r"@returns?\s*\{boolean\}", re.IGNORECASE)
DOC_LINES = 12  # how far above a definition its doc comment may start
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Warning|Exit|Interrupt)$")
# An exception class named otherwise: `class Impossible(Exception):`, `class Cancel extends Error {`.
_EXCEPTION_BASE = re.compile(
    r"\bclass\s+[\w$]+\s*(?:<[^>]*>\s*)?(?:\([^)]*|extends\s+[\w$.]*)(?:Error|Exception|Warning|Exit|Interrupt)\b"
)
_CLASS_HEAD = re.compile(
    r"^[^\S\n]*(?:(?:export|default|abstract|public|private|protected|internal|final|sealed|open|data|"
    r"static)\s+)*class\s",
    re.MULTILINE,
)
_ASYNC_HEAD = re.compile(
    r"\basync\s+(?:def|function)\b|^[^\S\n]*(?:static\s+)?async\s+[\w$]+\s*\(", re.MULTILINE
)
# The name being assigned: `headers = `, `self.loader = `, `loader=`, `(y := `, `const client =
# await `; not `==`, `<=`, `+=`. With a type annotation only at the start of the statement
# (`x: Headers = `, `const x: Foo = `), so that `if headers: result = ` names `result`.
_TARGET = re.compile(r"([A-Za-z_$][\w$]*)\s*:?=\s*(?:await\s+|new\s+)?$")
_ANNOTATED_TARGET = re.compile(
    r"^\s*(?:(?:export\s+)?(?:const|let|var)\s+)?(?:(?:self|this)\.)?"
    r"(?!(?:else|try|finally|lambda|if|elif|while|for|with|case|default|do)\b)([A-Za-z_$][\w$]*)\s*:\s*[^=()]*"
    r"(?<![=!<>])=\s*(?:await\s+|new\s+)?$"
)
# What the user is typing at the cursor (`isS`, `utils.isS`, `utils.`): the slot is read before it.
_TYPING = re.compile(r"(?:[A-Za-z_$][\w$]*\??\.)*[A-Za-z_$]?[\w$]*$")
HEAD_LINES = 4  # where a signature's return type sits, multi-line signatures included
# The slot is decided by the last few tokens before the cursor, a signature by its first lines: the
# patterns read at most this much, so their work is bounded whatever the line (a minified file's
# 100,000-character line; some of them backtrack, quadratic in the text they are given).
SLOT_CHARS = 240
HEAD_CHARS = 2_000

CONDITION = "condition"
EXCEPTION = "exception"
CLASS = "class"
AWAITABLE = "awaitable"
ITERABLE = "iterable"


def slot_text(lines: Sequence[str], line: int, character: int) -> str:
    """The text that decides the cursor's slot: its line up to the cursor, less the name or
    chain being typed there (so the slot holds while the user types `isStr`); when nothing
    else is on the line, the end of the line above (a condition continued on the next line:
    `if (\n`, `isA(x) &&\n`)."""
    before = _TYPING.sub("", lines[line][:character][-SLOT_CHARS:]) if line < len(lines) else ""
    if before.strip() or line == 0:
        return before
    above = lines[line - 1].rstrip()[-SLOT_CHARS:]
    # A line that ends in an open call, list or assignment continues on the cursor's line.
    continued = ("(", "&&", "||", " and", " or", " not", "!", ",", "[", "=")
    return above if above.endswith(continued) else before


def slot_kind(before_cursor: str, in_predicate: bool = False) -> str:
    """What the text before the cursor expects next: CONDITION, EXCEPTION, CLASS, AWAITABLE,
    ITERABLE or "" (any value). `in_predicate`: the enclosing definition answers yes or no, so what it returns
    is a condition."""
    if in_predicate and _RETURN.search(before_cursor):
        return CONDITION
    if _RAISE.search(before_cursor):
        return EXCEPTION
    if _NEW.search(before_cursor):
        return CLASS
    if _AWAIT.search(before_cursor):
        return AWAITABLE
    if _FOR_IN.search(before_cursor):
        return ITERABLE
    return CONDITION if _CONDITION.search(before_cursor) else ""


def target_words(before_cursor: str) -> frozenset[str]:
    """The words of the name the cursor's expression is assigned to or passed as (`loader=`),
    plural `s` dropped; empty when there is none."""
    match = _ANNOTATED_TARGET.search(before_cursor) or _TARGET.search(before_cursor)
    return _words(match.group(1)) if match else frozenset()


def _words(name: str) -> frozenset[str]:
    return frozenset(
        w[:-1] if w.endswith("s") and len(w) > 3 else w for w in split_identifier(name) if len(w) > 2
    )


def _head(text: str) -> str:
    return "\n".join(text[:HEAD_CHARS].split("\n", HEAD_LINES)[:HEAD_LINES])


def _signature(text: str) -> str:
    """A definition's signature: its first lines up to the one that opens the body (a class's
    methods below it say nothing of what the class returns)."""
    rows = []
    for row in text[:HEAD_CHARS].split("\n", HEAD_LINES)[:HEAD_LINES]:
        rows.append(row)
        if row.rstrip().endswith((":", "{")):
            break
    return "\n".join(rows)


def is_predicate(symbol: str, text: str) -> bool:
    """Whether a definition answers yes or no: by its name, or by its declared return type."""
    name = symbol.rsplit(".", 1)[-1]
    if _PREDICATE_NAME.match(name):
        return True
    return bool(_PREDICATE_HEAD.search(_signature(text)))


def signature_at(lines: Sequence[str], start_line: int) -> str:
    """The signature of the definition starting at `start_line` of a file's lines."""
    return _signature("\n".join(lines[start_line : start_line + HEAD_LINES]))


def encloses_predicate(lines: Sequence[str], start_line: int, name: str) -> bool:
    """Whether the definition starting at `start_line` is a predicate: by its name, its signature,
    or a doc comment just above it that says it returns a boolean (`@returns {boolean}`)."""
    if is_predicate(name, "\n".join(lines[start_line : start_line + HEAD_LINES])):
        return True
    above = lines[max(0, start_line - DOC_LINES) : start_line]
    if not above or not above[-1].strip().endswith("*/"):
        return False
    return bool(_DOC_BOOLEAN.search("\n".join(above)))


def fits(kind: str, symbol: str, text: str) -> bool:
    """Whether a definition is what a slot of this kind (not CONDITION) expects."""
    head = _head(text)
    if kind == EXCEPTION:
        if not _CLASS_HEAD.search(head):
            return False
        return bool(_EXCEPTION_NAME.search(symbol)) or bool(_EXCEPTION_BASE.search(head))
    if kind == CLASS:
        return bool(_CLASS_HEAD.search(head))
    if kind == AWAITABLE:
        return bool(_ASYNC_HEAD.search(head))
    if kind == ITERABLE:
        if _CLASS_HEAD.search(head):  # a class is iterable by its own protocol, not by its methods
            return bool(_ITERATES_ITSELF.search(text))
        signature = _signature(text)
        types = {n.rsplit(".", 1)[-1] for n in TYPE_NAME.findall(returned_text(signature))}
        return bool(types & _ITERABLE_TYPES) or bool(_YIELDS.search(text))
    return False


# The name being assigned at a statement's start, with its own annotation if it has one
# (`self.x: Foo = `, `const x: Foo = `, `private x?: Foo = `, `x = `); in a one-line compound
# statement (`if headers: result = `) the last name before `=`, without annotation.
_ASSIGNED = re.compile(
    r"^\s*(?:(?:export|const|let|var|public|private|protected|readonly|static)\s+)*"
    r"(?!(?:else|try|finally|lambda|if|elif|while|for|with|case|default|do)\b)"
    r"((?:self\.|this\.)?[A-Za-z_$][\w$]*)\??\s*(?::\s*([^=()]+?))?\s*(?<![=!<>+\-*/%|&])=\s*(?:await\s+|new\s+)?$"
)
_ASSIGNED_LAST = re.compile(
    r"((?:self\.|this\.)?[A-Za-z_$][\w$]*)\s*(?<![=!<>+\-*/%|&])=\s*(?:await\s+|new\s+)?$"
)
DECLARATION_LINES = 400  # how far above the cursor a target's declared type is looked for


def declared_types(lines: Sequence[str], line: int, before_cursor: str, scope_start: int) -> frozenset[str]:
    """The specific types the name being assigned at the cursor is declared with: on the line
    (`x: Foo = `) or by an annotation above it, in the enclosing definition for a local name and
    anywhere above for an attribute (`self.optimizer: t.Optional[Optimizer] = None` in
    `__init__`, then `self.optimizer = ` in a method)."""
    match = _ASSIGNED.search(before_cursor) or _ASSIGNED_LAST.search(before_cursor)
    if not match:
        return frozenset()
    name, annotation = match.group(1), match.group(2) if match.re is _ASSIGNED else None
    if not annotation:
        declared = re.compile(rf"^\s*{re.escape(name)}\s*:\s*([^=\n]+?)\s*(?:=.*)?$")
        top = scope_start if "." not in name else 0
        for row in reversed(lines[max(0, top, line - DECLARATION_LINES) : line]):
            found = declared.match(row[:HEAD_CHARS])
            if found:
                annotation = found.group(1)
                break
    return type_names(annotation) if annotation else frozenset()


_BASES = re.compile(r"\bclass\s+[\w$]+\s*(?:\(([^)]*)\)|(?:<[^>]*>\s*)?extends\s+([\w$.]+))")


def _makes(cand: Candidate, types: frozenset[str], signature: str) -> bool:
    """Whether a definition is one of `types`, a class directly derived from one, or says it
    returns one of them."""
    if cand.symbol.rsplit(".", 1)[-1] in types:
        return True
    bases = _BASES.search(_head(cand.text))
    if bases and types & {n.rsplit(".", 1)[-1] for n in TYPE_NAME.findall(bases.group(1) or bases.group(2))}:
        return True
    return bool(types & return_types(signature))


def weigh_for_slot(
    cands: Sequence[Candidate],
    before_cursor: str,
    weight: float,
    target_weight: float = 0.0,
    in_predicate: bool = False,
    returns: frozenset[str] = frozenset(),
    statement_weight: float = 0.0,
    assigned: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """The fused definition candidates re-weighed for what the cursor's slot expects: in a
    condition predicates' scores are multiplied by (1 + weight), elsewhere divided by it; after
    `raise`, `new`, `await` or `for x in` the definitions that fit are multiplied. Definitions whose name
    shares a word with the name being assigned (`headers = ` -> `AxiosHeaders`) are multiplied
    by (1 + target_weight). After `return `, the definitions that are or return one of `returns`
    (the enclosing definition's declared return types) are multiplied by (1 + weight), and so
    are those that make one of `assigned` (the declared types of the name being assigned); in a
    predicate (`in_predicate`), what follows `return ` is a condition. Definitions declared to
    return nothing (`-> None`, `: void`) are divided by (1 + weight) where a value is expected and
    multiplied by (1 + statement_weight) at a statement's start. Weights of 0 leave the scores as
    they are."""
    kind = slot_kind(before_cursor, in_predicate) if weight > 0 else None
    target = target_words(before_cursor) if target_weight > 0 else frozenset()
    # What the enclosing definition returns is what its return statement's call makes (not in a
    # predicate, where what is returned is a condition).
    returned = (
        returns if weight > 0 and kind != CONDITION and _PLAIN_RETURN.search(before_cursor) else frozenset()
    )
    # A definition declared to return nothing is called as a statement, never for a value: in
    # the development set's not-typed tasks, 43 of the 174 calls that start a statement and none
    # of the 765 assigned, passed, returned or tested ones.
    wants_value = weight > 0 and bool(_VALUE.search(before_cursor))
    statement = statement_weight > 0 and not before_cursor.strip()
    # A return slot and an assignment slot exclude each other: one set of expected types.
    expected = returned | (assigned if weight > 0 else frozenset())
    out = []
    for cand in cands:
        factor = 1.0
        if target and target & _words(cand.symbol.rsplit(".", 1)[-1]):
            factor *= 1.0 + target_weight
        signature = _signature(cand.text) if expected or wants_value or statement else ""
        if expected and _makes(cand, expected, signature):
            factor *= 1.0 + weight
        if (wants_value or statement) and returns_nothing(signature):
            factor *= 1.0 / (1.0 + weight) if wants_value else 1.0 + statement_weight
        if kind in ("", CONDITION) and is_predicate(cand.symbol, cand.text):
            factor *= 1.0 + weight if kind else 1.0 / (1.0 + weight)
        elif kind and kind != CONDITION and fits(kind, cand.symbol, cand.text):
            factor *= 1.0 + weight
        out.append(replace(cand, score=cand.score * factor) if factor != 1.0 else cand)
    return out
