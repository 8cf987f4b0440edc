"""The classes of the receivers in a scope, read from the code in view (no type checker).

`local_types` (definitions.py) knows `c = Client(...)`. This adds, by convention (a class name
is capitalised):

- annotations: parameters and variables (`env: Environment`, `env: "Environment"`,
  `t.Optional[Environment]`, `x: Foo | None`, TypeScript's `(env: Environment)`), and Go's
  receivers and parameters (`func (t *Test) run(p Parser)`; the type's methods are then looked
  up in every file of its package);
- the enclosing class's attributes: `self.x = Cls(...)`, `self.x: Cls = ...`, class-level
  `x: Cls`, and `self.x = x` where the parameter `x` is annotated (keyed `self.x`); and
  `self.x = param.make(...)` / `self.x = make(...)` by the callee's return annotation
  (`called_attribute_types`: jinja2's `self.stream = environment._tokenize(...)`);
- factories: `x = make(...)` / `x = mod.make(...)` whose definition's signature says
  `-> Cls`, and `x = Cls.from_thing(...)` (an alternative constructor) without one;
- pytest fixtures: a test's parameter `env` is what the `env` fixture of the nearest
  conftest.py returns (`-> Environment`, or `return Environment()`).

`scope_types` reads the text; `factory_types`, `fixture_types`, `called_attribute_types`,
`property_types` and `chain_types` need the resolver and the index (the callee's, fixture's or
class's code) and run once the resolver exists.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codectx.indexer.model import Definition
from codectx.retriever.cursor_info import CursorInfo
from codectx.retriever.definitions import SELF_NAMES, DefinitionResolver, split_chain
from codectx.retriever.returns import CLASS_ANNOTATION, NOT_CLASSES, returned_class

_TYPE = CLASS_ANNOTATION
_ANNOTATION = re.compile(rf"(?<![\w.$'\"])([A-Za-z_$][\w$]*)\s*\??:\s*{_TYPE}")
_SELF_ANNOTATION = re.compile(rf"\b(?:self|this)\.([A-Za-z_]\w*)\s*:\s*{_TYPE}")
_SELF_CONSTRUCTED = re.compile(
    r"\b(?:self|this)\.([A-Za-z_]\w*)\s*=\s*(?:new\s+)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*)\s*\("
)
# `self.stream = environment._tokenize(...)`, `self.x = make(...)`: an attribute bound to what a
# call returns (a lower-case callee; a capitalised one is a constructor, `_SELF_CONSTRUCTED`).
# The call must be the whole right-hand side (`attribute_calls` checks what follows it).
_SELF_CALLED = re.compile(
    r"(?<![\w.])(?:self|this)\.([A-Za-z_]\w*)[ \t]*=[ \t]*(?:await[ \t]+)?"
    r"((?:[A-Za-z_]\w*\.)?[a-z_]\w*)[ \t]*\("
)
_CALL_END = re.compile(r"[ \t]*(?:[;#]|//|$)", re.M)  # nothing but a comment after the call's `)`
MAX_CALL_CHARS = 2000  # a call's arguments are followed this far for its closing parenthesis
_SELF_FROM_PARAM = re.compile(r"\b(?:self|this)\.([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*$", re.M)
_FACTORY_CALL = re.compile(r"(?<![\w.])([a-z_]\w*)\s*=\s*(?:await\s+)?((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*\(")
# Indentation at a line's start is `[^\S\n]*`: `^\s*` crossed blank lines, so a run of them was
# read again from each of its lines (seconds at 20,000 blank lines).
# Go: `func (t *Test) name(params)` and `func name(params)`; a parameter is `name Type`.
_GO_FUNC = re.compile(
    r"^[^\S\n]*func\b\s*(?:\(([^()]*)\)\s*)?[A-Za-z_]\w*+\s*+(?:\[[^\]]*\]\s*+)?\(([^()]*)\)", re.M
)
_GO_PARAM = re.compile(r"\s*([a-z_]\w*)\s+\*?((?:[A-Za-z_]\w*\.)?[A-Z]\w*)\s*")
MAX_FACTORIES = 12
MAX_CLASS_LINES = 4000  # a class header looked for this far above a method, and its end below
MAX_PROPERTIES = 24  # a class's properties typed per request at most
# `@property` then `def x(self) -> Type:` and, on the next lines, `return self.y` or `self.y.z`
# (the blank and comment lines between are read once each).
_PROPERTY = re.compile(
    rf"@property[^\S\n]*\n\s*+def\s+([A-Za-z_]\w*)\s*\(\s*self\s*\)\s*(?:->\s*{_TYPE}['\"]?\s*)?:"
    r"(?:[^\S\n]*\n(?:[^\S\n]*(?:#[^\n]*)?\n)*+[^\S\n]*return\s+self\.([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?\s*$)?",
    re.M,
)
MAX_FIXTURES = 6  # a test's parameters looked up as fixtures (a lookup each)
MAX_CHAINS = 6  # `x.attr` receivers typed through x's class per request (a class's text read each)
_TEST_PARAMS = re.compile(r"\bdef\s+\w+\s*\(([^)]*)\)")
# The class a fixture hands out: `return Environment()`, `yield loaders.DictLoader(...)`.
_RETURNED_CLASS = re.compile(r"^[^\S\n]*(?:return|yield)\s+((?:[A-Za-z_]\w*\.)*[A-Z]\w*)\s*\(", re.M)


def annotated_names(text: str) -> dict[str, str]:
    """`name: Type` pairs in a text (parameters, variables, class attributes), first wins."""
    found: dict[str, str] = {}
    for match in _ANNOTATION.finditer(text):
        name, cls = match.group(1), match.group(2)
        if cls.split(".")[-1] not in NOT_CLASSES:
            found.setdefault(name, cls)
    return found


def attribute_types(class_text: str) -> dict[str, str]:
    """`self.x` -> class, from a class's text (its methods and class-level annotations)."""
    params = annotated_names(class_text)
    found: dict[str, str] = {}
    for match in _SELF_ANNOTATION.finditer(class_text):
        found.setdefault(f"self.{match.group(1)}", match.group(2))
    for match in _SELF_CONSTRUCTED.finditer(class_text):
        found.setdefault(f"self.{match.group(1)}", match.group(2))
    for match in _SELF_FROM_PARAM.finditer(class_text):
        cls = params.get(match.group(2))
        if cls:
            found.setdefault(f"self.{match.group(1)}", cls)
    # Class-level annotations (`stream: TokenStream` in a dataclass body) name attributes too.
    for name, cls in params.items():
        found.setdefault(f"self.{name}", cls)
    return {k: v for k, v in found.items() if v.split(".")[-1] not in NOT_CLASSES}


def enclosing_class_text(lines: Sequence[str], info: CursorInfo, far: bool = False) -> str:
    """The text of the class enclosing the cursor's definition ("" when none); `far`: also when
    the cursor's parse window left the class out (a method far into a long class)."""
    owner = info.enclosing.owner if info.enclosing else ""
    for scope in reversed(info.scopes):
        if owner and scope.qualname == owner:
            return "\n".join(lines[scope.start_line : scope.end_line + 1])
    if not far or not owner or info.enclosing is None or not 0 <= info.enclosing.start_line < len(lines):
        return ""
    # Far into a long class the cursor's parse window leaves the class out (it only names it:
    # indexer/parsing/cursor_symbols.py), so its `self.x = Cls(...)` and properties went unread;
    # the header is found above the definition by name and indentation, the end by indentation.
    start = info.enclosing.start_line
    indent = _indentation(lines[start])
    header = re.compile(
        rf"^(\s*)(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+{re.escape(owner.split('.')[-1])}\b"
    )
    for first in range(start - 1, max(-1, start - MAX_CLASS_LINES), -1):
        found = header.match(lines[first])
        if found is None or len(found.group(1)) >= indent:
            continue
        last = first + 1
        while last < min(len(lines), first + MAX_CLASS_LINES):
            row = lines[last]
            if row.strip() and _indentation(row) <= len(found.group(1)):
                break
            last += 1
        return "\n".join(lines[first:last])
    return ""


def _indentation(row: str) -> int:
    return len(row) - len(row.lstrip())


def go_parameter_types(text: str) -> dict[str, str]:
    """Go's typed names in function heads: a method's receiver (`func (t *Test) run(`) and the
    parameters (`func detailed(r Runner, t tomltest.Test)`), written `name Type` without a colon."""
    found: dict[str, str] = {}
    if "func" not in text:
        return found
    for head in _GO_FUNC.finditer(text):
        for group in (head.group(1), head.group(2)):
            for part in (group or "").split(","):
                match = _GO_PARAM.fullmatch(part)
                if match and match.group(2).split(".")[-1] not in NOT_CLASSES:
                    found.setdefault(match.group(1), match.group(2))
    return found


def scope_types(scope_text: str, class_text: str, constructed: dict[str, str]) -> dict[str, str]:
    """Receiver (`x`, `self.x`) -> class name for a scope: constructed objects first, then
    annotations (Go's receivers and parameters too), then the enclosing class's attributes."""
    found = dict(constructed)
    for name, cls in annotated_names(scope_text).items():
        found.setdefault(name, cls)
    for name, cls in go_parameter_types(scope_text).items():
        found.setdefault(name, cls)
    for name, cls in attribute_types(class_text).items():
        found.setdefault(name, cls)
    return found


def factory_calls(scope_text: str, known: dict[str, str]) -> dict[str, str]:
    """`x = make(...)` -> {"x": "make"} for variables no other rule typed."""
    text = "\n".join(row for row in scope_text.split("\n") if "=" in row)
    found: dict[str, str] = {}
    for match in _FACTORY_CALL.finditer(text):
        var, call = match.group(1), match.group(2)
        if var not in known and var not in found:
            found[var] = call
    return found


def factory_types(resolver: DefinitionResolver, calls: dict[str, str], chunks_for_file: Any) -> None:
    """Type variables bound to a factory's result with the class it returns (its return
    annotation, resolved in the factory's own file; for `Cls.from_thing(...)` without one, `Cls`):
    fills `resolver.receiver_classes`."""
    for var, call in list(calls.items())[:MAX_FACTORIES]:
        parts = call.split(".")
        alternative = len(parts) == 2 and parts[0][:1].isupper()  # `Cls.from_thing(...)`
        resolved = resolver.resolve(call, by_name=False)[:1]
        if not resolved:
            continue
        d = resolved[0].definition
        chunk = _chunk_of(d, chunks_for_file)
        cls = returned_class(chunk.signature if chunk is not None else "")
        if cls and cls != "Self":
            found = _class_in_file(resolver, d, cls)
        elif alternative:
            found = resolver.receiver_class_named(parts[0])
        else:
            found = None
        if found is not None:
            resolver.receiver_classes[var] = found


def fixture_types(
    resolver: DefinitionResolver, scope_text: str, known: dict[str, str], chunks_for_file: Any
) -> None:
    """In a pytest test file, type the enclosing test's plain parameters (no annotation, no
    default) with the class their fixture returns: its return annotation, else the class its
    `return`/`yield` constructs, resolved in the conftest's own file. Fills
    `resolver.receiver_classes` (`env.` in `def test_lex(self, env)` -> `Environment`)."""
    head = _TEST_PARAMS.search(scope_text[:1000]) if resolver.sees_fixtures() else None
    if head is None:
        return
    params = [p.strip() for p in head.group(1).split(",")]
    fresh = [p for p in params if p.isidentifier() and p not in ("self", "cls") and p not in known]
    for name in fresh[:MAX_FIXTURES]:
        if name in resolver.receiver_classes:
            continue
        for d in resolver.fixtures(name)[:1]:
            chunk = _chunk_of(d, chunks_for_file)
            if chunk is None:
                continue
            returned = _RETURNED_CLASS.search(chunk.text)
            cls = returned_class(chunk.signature) or (returned.group(1) if returned else "")
            found = _class_in_file(resolver, d, cls) if cls and cls != "Self" else None
            if found is not None:
                resolver.receiver_classes[name] = found


def property_types(resolver: DefinitionResolver, class_text: str, chunks_for_file: Any) -> None:
    """Type the enclosing class's properties as receivers (`self._current.` in a method): by the
    property's return annotation, else by what it returns, `self.y` or `self.y.z`, when `self.y`
    is typed (`self._src = Source(...)`) and `z` is a property or method of that class with a
    return annotation (`def current(self) -> TOMLChar`, resolved in its own file). Fills
    `resolver.receiver_classes` (`self.x`)."""
    if "@property" not in class_text:
        return
    attributes: dict[str, str] | None = None  # the class text's `self.y` types, read if needed
    for match in itertools.islice(_PROPERTY.finditer(class_text), MAX_PROPERTIES):
        name, annotated, via, member = match.group(1), match.group(2), match.group(3), match.group(4)
        key = f"self.{name}"
        if key in resolver.receiver_classes or key in resolver.local_types:
            continue
        found = None
        if annotated and annotated.split(".")[-1] not in NOT_CLASSES and annotated != "Self":
            found = resolver.receiver_class_named(annotated)
        elif via:
            owner = resolver.receiver_class(f"self.{via}")
            if owner is None:  # far into a long class the scope's types do not hold its attributes
                attributes = attribute_types(class_text) if attributes is None else attributes
                typename = attributes.get(f"self.{via}")
                owner = resolver.receiver_class_named(typename) if typename else None
            if owner is not None and not member:
                found = owner
            elif owner is not None:
                for d in resolver.class_members(owner):
                    if d.name != member:
                        continue
                    found = _returned_class(resolver, d, chunks_for_file)
                    break
        if found is not None:
            resolver.receiver_classes[key] = found


def chain_types(resolver: DefinitionResolver, names: Sequence[str], chunks_for_file: Any) -> None:
    """Type attribute receivers of typed receivers through the receiver's class: in
    `frame.eval_ctx.save()`, `frame: Frame` and Frame's `self.eval_ctx = eval_ctx` (its parameter
    `eval_ctx: EvalContext`) make `frame.eval_ctx` an EvalContext; also `self.x.attr` where
    `self.x` is typed. The class's text is its indexed chunks (another file's class too); the
    attribute's type is read there like the enclosing class's (`attribute_types`, a property's
    return annotation, what a call it is bound to returns) and resolved in the class's own
    file. Fills `resolver.receiver_classes` (`frame.eval_ctx`) and `resolver.attribute_classes`
    (`eval_ctx`, the receiver as the receivers list names it)."""
    attributes: dict[tuple[str, int], _ClassFacts] = {}  # each class read once per request
    tried: set[str] = set()
    looked = 0  # typed heads whose class was read
    for name in names:
        parts = split_chain(name)
        own = 2 if parts and parts[0] in SELF_NAMES else 1  # `self.x` or `frame`: the typed head
        if len(parts) < own + 2 or looked >= MAX_CHAINS:
            continue
        head, attr = ".".join(parts[:own]), parts[own]
        prefix = f"{head}.{attr}"
        if prefix in tried or prefix in resolver.receiver_classes or prefix in resolver.local_types:
            continue
        tried.add(prefix)
        owner = resolver.receiver_class(head)
        if owner is None:
            continue
        looked += 1
        key = (owner.path, owner.start_line)
        if key not in attributes:
            attributes[key] = _ClassFacts.read(resolver, owner, chunks_for_file)
        facts = attributes[key]
        typename = facts.types.get(f"self.{attr}")
        if typename:
            found = _class_in_file(resolver, owner, typename) if typename != "Self" else None
        else:  # `self.stream = environment._tokenize(...)`: what the call returns
            found = facts.call_result(f"self.{attr}", chunks_for_file)
        if found is not None:
            resolver.receiver_classes[prefix] = found
            resolver.attribute_classes.setdefault(attr, found)


def attribute_calls(class_text: str) -> dict[str, str]:
    """`self.x` -> the call whose result a class's text binds it to (`environment._tokenize`,
    `make`) when that call is the whole right-hand side (not `make().build()`, `f(a)[0]`); the
    first binding of each attribute wins. Calls on `self`/`this` and `super()` are not followed."""
    found: dict[str, str] = {}
    for match in _SELF_CALLED.finditer(class_text):
        key, call = f"self.{match.group(1)}", match.group(2)
        if key in found or call.split(".")[0] in _NOT_FOLLOWED:
            continue
        end = _closing_paren(class_text, match.end() - 1)
        if end is not None and _CALL_END.match(class_text, end + 1):
            found[key] = call
    return found


_NOT_FOLLOWED = frozenset({"self", "this", "super"})


def _closing_paren(text: str, start: int) -> int | None:
    """The offset of the `)` closing the `(` at `start` (brackets in strings count too), or None."""
    depth = 0
    for i in range(start, min(len(text), start + MAX_CALL_CHARS)):
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def called_attribute_types(
    resolver: DefinitionResolver, class_text: str, scope_text: str, chunks_for_file: Any
) -> None:
    """Type the enclosing class's attributes bound to a call's result by the callee's return
    annotation: `self.stream = environment._tokenize(...)` in `__init__(self, environment:
    Environment)` with `def _tokenize(...) -> TokenStream` types `self.stream`. Attributes the
    scope uses go first. Fills `resolver.receiver_classes` (`self.stream`)."""
    calls = attribute_calls(class_text)
    fresh = [k for k in calls if k not in resolver.receiver_classes and k not in resolver.local_types]
    if not fresh:
        return
    used = [k for k in fresh if re.search(rf"\b(?:self|this)\.{re.escape(k[5:])}\b", scope_text)]
    params = annotated_names(class_text)
    # Resolved as the class's text reads, not with the types of the method being edited.
    home = DefinitionResolver(resolver.store, resolver.path, resolver.language, resolver.imports)
    for key in [*used, *(k for k in fresh if k not in used)][:MAX_FACTORIES]:
        found = call_result_class(home, calls[key], params, chunks_for_file)
        if found is not None:
            resolver.receiver_classes[key] = found


def call_result_class(
    resolver: DefinitionResolver, call: str, params: dict[str, str], chunks_for_file: Any
) -> Definition | None:
    """The class `call` returns by its definition's return annotation: a method of an annotated
    parameter (`environment._tokenize` with `environment: Environment`) or a function the file
    can resolve (`make`, `mod.make`); None when unknown."""
    parts = call.split(".")
    d: Definition | None = None
    if len(parts) == 2 and parts[0] in params:
        owner = resolver.receiver_class_named(params[parts[0]])
        if owner is not None:
            d = next((m for m in resolver.class_members(owner) if m.name == parts[1]), None)
    else:
        resolved = resolver.resolve(call, by_name=False)[:1]
        d = resolved[0].definition if resolved else None
    return _returned_class(resolver, d, chunks_for_file) if d is not None else None


def _returned_class(resolver: DefinitionResolver, d: Definition, chunks_for_file: Any) -> Definition | None:
    """The class `d`'s return annotation names, resolved in `d`'s own file; None without one."""
    chunk = _chunk_of(d, chunks_for_file)
    cls = returned_class(chunk.signature if chunk is not None else "")
    return _class_in_file(resolver, d, cls) if cls and cls != "Self" else None


@dataclass
class _ClassFacts:
    """What a class's text says of its attributes' types, read once per request (chain_types)."""

    home: DefinitionResolver  # resolves names as the class's own file does
    types: dict[str, str]  # `self.x` -> a type name written in the class
    calls: dict[str, str]  # `self.x` -> the call it is bound to
    params: dict[str, str]  # annotated names in the class (its methods' parameters)

    @classmethod
    def read(cls, resolver: DefinitionResolver, owner: Definition, chunks_for_file: Any) -> _ClassFacts:
        text = "\n".join(
            c.text
            for c in chunks_for_file(owner.path)
            if owner.start_line <= c.start_line and c.end_line <= owner.end_line
        )
        types = attribute_types(text) | {
            f"self.{m.group(1)}": m.group(2)
            for m in _PROPERTY.finditer(text)
            if m.group(2) and m.group(2).split(".")[-1] not in NOT_CLASSES
        }
        home = DefinitionResolver(resolver.store, owner.path, owner.language, resolver.imports_of(owner.path))
        return cls(home, types, attribute_calls(text), annotated_names(text))

    def call_result(self, key: str, chunks_for_file: Any) -> Definition | None:
        """The class of the attribute `key` (`self.x`) by what the call it is bound to returns."""
        call = self.calls.get(key)
        return call_result_class(self.home, call, self.params, chunks_for_file) if call else None


def _chunk_of(d: Definition, chunks_for_file: Any) -> Any:
    """The indexed chunk of a definition (its signature and text), or None."""
    return next((c for c in chunks_for_file(d.path) if c.start_line == d.start_line), None)


def _class_in_file(resolver: DefinitionResolver, d: Definition, cls: str) -> Definition | None:
    """The class a type name written in `d`'s own file refers to (through that file's imports)."""
    home = DefinitionResolver(resolver.store, d.path, d.language, resolver.imports_of(d.path))
    return home.receiver_class_named(cls)
