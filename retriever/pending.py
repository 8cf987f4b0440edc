"""Names a function's head binds that its body has not used yet: what the body uses next.

A parameter that the body does not mention yet is what the body is about to use:
`def test_x(test_client_factory):` calls `test_client_factory(app)` next (a pytest fixture that
`definitions` resolves to its conftest function). A return type the body has not built yet is
what it builds before it returns: `def homepage(request) -> JSONResponse:` writes
`JSONResponse(`. The names the scope already uses say much less about the next call (`used`),
so these get a list of their own.

A parameter's annotation is left out: `pm: PluginManager` is called through `pm.`, not as
`PluginManager(`. So are class heads: a class body rarely calls its base.

The head is the scope's first lines up to the one that opens the body (`:` in Python, `{` or
`=>` in the C family); a scope with no such line within `HEAD_LINES` has no head to read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

HEAD_LINES = 12
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_OPENS_BODY = re.compile(r"(:|\{|=>)\s*(#.*|//.*)?$")
# Where the parameter list's search starts: after decorators (`@pytest.mark.parametrize(...)`).
_DEFINES = re.compile(r"\b(def|function)\b")
_OPENS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSES = frozenset(_OPENS.values())


def split_head(scope_text: str) -> tuple[str, str]:
    """(head, body) of a definition's text; ("", text) when no line in the first `HEAD_LINES`
    opens a body."""
    lines = scope_text.split("\n")
    for i, line in enumerate(lines[:HEAD_LINES]):
        if _OPENS_BODY.search(line.rstrip()):
            return "\n".join(lines[: i + 1]), "\n".join(lines[i + 1 :])
    return "", scope_text


def head_bindings(head: str) -> list[str]:
    """The parameter names and the words of the return annotation of a function head
    (`def f(a, b: T = 1, *c) -> R:` -> a, b, c, R); [] when the head has no parameter list."""
    defines = _DEFINES.search(head)
    if defines is None:
        kept = [row for row in head.split("\n") if not row.lstrip().startswith("@")]
        head = "\n".join(kept)
    start = head.find("(", defines.end() if defines else 0)
    if start < 0:
        return []
    depth = 0
    params: list[str] = []
    part_start = start + 1
    end = -1
    for i in range(start, len(head)):
        ch = head[i]
        if ch in _OPENS and not (ch == "<" and depth == 0):
            depth += 1
        elif ch in _CLOSES and not (ch == ">" and (depth <= 1 or head[i - 1] == "=")):
            depth -= 1
            if depth == 0:
                params.append(head[part_start:i])
                end = i
                break
        elif ch == "," and depth == 1:
            params.append(head[part_start:i])
            part_start = i + 1
    if end < 0:
        return []
    names = []
    for param in params:
        found = _WORD.search(param)
        if found:
            names.append(found.group())
    return names + _WORD.findall(head[end + 1 :])


def pending_names(scope_text: str, names: Sequence[str]) -> list[str]:
    """The bare names of `names` (in their order) that the head of the function `scope_text`
    binds (parameters, return type) and its body does not mention."""
    head, body = split_head(scope_text)
    if not head:
        return []
    bound = set(head_bindings(head))
    in_body = set(_WORD.findall(body))
    return [n for n in names if n in bound and n not in in_body]
