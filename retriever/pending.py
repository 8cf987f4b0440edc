"""Names a function's head binds that its body has not used yet: what the body uses next.

A parameter that the body does not mention yet is what the body is about to use:
`def test_x(test_client_factory):` calls `test_client_factory(app)` next (a pytest fixture that
`definitions` resolves to its conftest function). A return type the body has not built yet is
what it builds before it returns: `def homepage(request) -> JSONResponse:` writes
`JSONResponse(`. The names the scope already uses say much less about the next call (`used`),
so these get a list of their own.

A parameter's annotation is left out: `pm: PluginManager` is called through `pm.`, not as
`PluginManager(`. So are class heads (a class body rarely calls its base) and languages whose
heads put the type before the name (Java, C, Go), which this reading does not parse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from codectx.retriever.cursor_info import CursorInfo

FUNCTION_KINDS = frozenset({"function", "method", "constructor"})
# Heads read as `name: Type = default` parameters and a return annotation after the list.
LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "jsx"})
HEAD_CHARS = 2000  # a head longer than this is generated code, not worth reading
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
# Where the parameter list's search starts: after decorators (`@pytest.mark.parametrize(...)`).
_DEFINES = re.compile(r"\b(def|function)\b")
_OPENS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSES = frozenset(_OPENS.values())
_QUOTES = frozenset("'\"`")


def _skip_string(text: str, i: int) -> int:
    """The index after the string literal starting at `text[i]` (or the end of the text)."""
    quote = text[i]
    j = i + 1
    while j < len(text) and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def parse_head(text: str, language: str) -> tuple[list[str], int] | None:
    """(the parameter names and the words of the return annotation, where the body starts) of
    a function's text (`def f(a, b: T = 1, *c) -> R:` -> a, b, c, R); None when no parameter
    list and body opener (`:` in Python, `{` or `=>` elsewhere) are found in its head."""
    head = text[:HEAD_CHARS]
    defines = _DEFINES.search(head)
    start = defines.end() if defines else 0
    if defines is None:  # a method or an arrow function: skip the decorators' lines
        for row in head.split("\n"):
            if not row.lstrip().startswith("@"):
                break
            start += len(row) + 1
    start = head.find("(", start)
    if start < 0:
        return None
    generics = language != "python"
    depth, part_start, params, i = 0, start + 1, [], start
    while i < len(head):
        ch = head[i]
        if ch in _QUOTES:
            i = _skip_string(head, i)
            continue
        if ch == "<" and not (generics and i > 0 and (head[i - 1].isalnum() or head[i - 1] in "_$")):
            pass  # a comparison or a shift in a default value, not a type's brackets
        elif ch in _OPENS:
            depth += 1
        elif ch == ">" and (not generics or head[i - 1] == "=" or depth == 1):
            pass  # `=>`, or a comparison in a default value
        elif ch in _CLOSES:
            depth -= 1
            if depth == 0:
                params.append(head[part_start:i])
                break
        elif ch == "," and depth == 1:
            params.append(head[part_start:i])
            part_start = i + 1
        i += 1
    else:
        return None
    opener = _body_opener(head, i + 1, language)
    if opener is None:
        return None
    names = [found.group() for found in (_WORD.search(p) for p in params) if found]
    return names + _WORD.findall(head[i + 1 : opener[0]]), opener[1]


def _body_opener(head: str, start: int, language: str) -> tuple[int, int] | None:
    """(start, end) of what opens the body after the parameter list: Python's `:` outside
    brackets (a return annotation may hold `dict[str, int]`), else `{` or `=>`."""
    depth = 0
    for i in range(start, len(head)):
        ch = head[i]
        if language == "python":
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == ":" and depth == 0:
                return i, i + 1
        elif ch == "{" or head.startswith("=>", i):
            return i, i + (1 if ch == "{" else 2)
    return None


def pending_names(scope_text: str, names: Sequence[str], language: str) -> list[str]:
    """The bare names of `names` (in their order) that the head of the function `scope_text`
    binds (parameters, return type) and its body does not mention."""
    if language not in LANGUAGES:
        return []
    parsed = parse_head(scope_text, language)
    if parsed is None:
        return []
    bound, body_start = parsed
    in_body = set(_WORD.findall(scope_text[body_start:]))
    wanted = set(bound) - in_body
    return [n for n in names if n in wanted]


def pending_in_scope(info: CursorInfo, scope_text: str, names: Sequence[str], language: str) -> set[str]:
    """`pending_names` for the cursor's enclosing definition when it is a function."""
    if info.enclosing is None or info.enclosing.kind not in FUNCTION_KINDS:
        return set()
    return set(pending_names(scope_text, names, language))
