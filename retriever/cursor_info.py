"""What the code at a cursor uses: the call being typed, nearby chains, the enclosing scope.

The parsing engineer's `indexer.symbols.identifiers_near` does this with
tree-sitter; this module adapts its answer into `CursorInfo` and falls back
to a line-based reading for languages without a grammar (or if it fails on
odd text), so context assembly always gets an answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_CHAIN = r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*"
_CALL_OPEN = re.compile(rf"({_CHAIN})\s*\($")
_CHAIN_RE = re.compile(_CHAIN)
CALLEE_CHARS = 1000
_KEYWORDS_TEXT = (
    "if elif else for while return def class import from as with try except finally raise pass "
    "break continue lambda yield async await not and or in is None True False self this new "
    "function const let var func package go defer struct type interface impl fn pub use mod let "
    "mut match public private protected static void int float double char bool boolean string "
    "String long short byte final extends implements throws throw case switch default do typeof "
    "instanceof null nil true false export require module crate super "
)
_KEYWORDS = frozenset(_KEYWORDS_TEXT.split())
FALLBACK_WINDOW = 40


@dataclass(frozen=True)
class Scope:
    name: str
    start_line: int
    end_line: int
    kind: str = ""
    qualname: str = ""

    @property
    def owner(self) -> str:
        """The qualified name of what encloses this definition ("Client" for "Client.send")."""
        return self.qualname.rsplit(".", 1)[0] if "." in self.qualname else ""


@dataclass
class CursorInfo:
    callee: str = ""  # the chain being called at the cursor ("self.session.send"), "" when none
    chains: list[str] = field(default_factory=list)  # attribute chains on the cursor's line(s)
    names: list[str] = field(default_factory=list)  # identifiers used in the enclosing scope, first-use order
    enclosing: Scope | None = None  # the innermost enclosing definition
    scopes: list[Scope] = field(default_factory=list)  # enclosing definitions, outermost first


# A member name being typed right before the cursor: `c.appl|`, `Foo::ma|`, `$this->ge|`, with
# its receiver. Anchored at the end and read on the line's last 200 characters.
_TYPED_MEMBER = re.compile(rf"(?<![\w$.])({_CHAIN})(?:\.|::|->)([A-Za-z_$][\w$]{{0,80}})$")


def typed_member(line_before_cursor: str) -> tuple[str, str]:
    """(receiver, the start of a member name typed right before the cursor): `c.appl` ->
    ("c", "appl"); ("", "") when the cursor is not after one."""
    match = _TYPED_MEMBER.search(line_before_cursor[-200:])
    return (match.group(1), match.group(2)) if match else ("", "")


def _is_name(word: str) -> bool:
    return word not in _KEYWORDS and len(word) > 1


def fallback_cursor_info(text: str, line: int, character: int) -> CursorInfo:
    """A grammar-free reading: identifiers in a window of lines, the call before an open paren."""
    lines = text.split("\n")
    current = lines[line] if line < len(lines) else ""
    before = current[:character]
    info = CursorInfo()
    depth = 0
    for pos in range(len(before) - 1, -1, -1):
        ch = before[pos]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                # The callee ends at the `(`: its last CALLEE_CHARS are enough, and an unbounded
                # search backtracks from every start of a long line (`a.a.a... (`).
                match = _CALL_OPEN.search(before, max(0, pos + 1 - CALLEE_CHARS), pos + 1)
                if match:
                    info.callee = match.group(1)
                break
            depth -= 1
    info.chains = [m.group() for m in _CHAIN_RE.finditer(current) if any(s in m.group() for s in ".:>")]
    lo = max(0, line - FALLBACK_WINDOW)
    hi = min(len(lines), line + FALLBACK_WINDOW // 4)
    words: dict[str, None] = {}
    for row in lines[lo:hi]:
        for match in _CHAIN_RE.finditer(row):
            for word in re.split(r"\.|::|->", match.group()):
                if _is_name(word):
                    words.setdefault(word, None)
    info.names = list(words)
    return info


def _get(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return default


def _scope(obj: Any) -> Scope | None:
    if obj is None:
        return None
    start = _get(obj, "start_line")
    end = _get(obj, "end_line")
    if start is None or end is None:
        return None
    return Scope(
        name=str(_get(obj, "name", "qualname", default="") or ""),
        start_line=int(start),
        end_line=int(end),
        kind=str(_get(obj, "kind", default="") or ""),
        qualname=str(_get(obj, "qualname", default="") or ""),
    )


def _chain_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return str(_get(value, "chain", "text", "name", default="") or "")


def adapt(found: Any) -> CursorInfo:
    """Convert `identifiers_near`'s answer (whatever its exact field names) into CursorInfo."""
    info = CursorInfo()
    info.callee = _chain_text(_get(found, "call", "callee", "calling")).replace("?.", ".")
    raw_chains = _get(found, "chains", "attribute_chains", default=()) or ()
    info.chains = [c for c in (_chain_text(x) for x in raw_chains) if c]
    raw_names = _get(found, "names", "scope_names", "used_names", "function_names", default=()) or ()
    info.names = [n for n in (_chain_text(x) for x in raw_names) if n]
    info.enclosing = _scope(_get(found, "enclosing", "enclosing_definition", "scope"))
    raw_scopes = _get(found, "scopes", "enclosing_scopes", default=()) or ()
    info.scopes = [s for s in (_scope(x) for x in raw_scopes) if s is not None]
    if info.enclosing and not info.scopes:
        info.scopes = [info.enclosing]
    return info


def cursor_info(text: str, language: str | None, line: int, character: int) -> CursorInfo:
    """The identifiers near a cursor, from tree-sitter when possible."""
    if language:
        try:
            from codectx.indexer.parsing.symbols import identifiers_near  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            identifiers_near = None
        if identifiers_near is not None:
            try:
                info = adapt(identifiers_near(text, language, line, character))
            except Exception:  # a parser failure on odd text must not stop completion
                info = None
            if info is not None:
                if not info.names:
                    info.names = fallback_cursor_info(text, line, character).names
                return info
    return fallback_cursor_info(text, line, character)
