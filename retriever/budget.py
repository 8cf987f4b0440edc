"""Cutting the prefix and suffix around a cursor to token budgets, by whole lines.

The current line's text before (after) the cursor is always kept; further
lines are added outward while they fit. Lines are counted one by one so the
counter's cache makes repeated requests on the same file cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

from codectx.retriever.tokens import TokenCounter


@dataclass(frozen=True)
class Cut:
    text: str
    tokens: int
    first_line: int  # first document line included (0-based)
    last_line: int  # last document line included


def cut_prefix(lines: list[str], line: int, character: int, budget: int, counter: TokenCounter) -> Cut:
    """The text before the cursor, whole lines back from it while within `budget` tokens."""
    head = lines[line][:character]
    used = counter.count(head)
    parts = [head]
    first = line
    for row in range(line - 1, -1, -1):
        piece = lines[row] + "\n"
        cost = counter.count(piece)
        if used + cost > budget:
            break
        parts.append(piece)
        used += cost
        first = row
    return Cut("".join(reversed(parts)), used, first, line)


def cut_suffix(lines: list[str], line: int, character: int, budget: int, counter: TokenCounter) -> Cut:
    """The text after the cursor, whole lines forward while within `budget` tokens."""
    tail = lines[line][character:]
    used = counter.count(tail)
    parts = [tail]
    last = line
    for row in range(line + 1, len(lines)):
        piece = "\n" + lines[row]
        cost = counter.count(piece)
        if used + cost > budget:
            break
        parts.append(piece)
        used += cost
        last = row
    return Cut("".join(parts), used, line, last)


def cut_to_tokens(text: str, budget: int, counter: TokenCounter, marker: str = "") -> tuple[str, int]:
    """The longest run of whole leading lines of `text` within `budget` tokens (plus a marker line)."""
    reserve = counter.count(marker) if marker else 0
    out: list[str] = []
    used = reserve
    for row in text.split("\n"):
        cost = counter.count(row + "\n")
        if used + cost > budget:
            break
        out.append(row)
        used += cost
    if marker and len(out) < len(text.split("\n")):
        out.append(marker)
        return "\n".join(out), used
    joined = "\n".join(out)
    return joined, counter.count(joined)
