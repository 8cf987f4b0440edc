"""Cutting the prefix and suffix around a cursor to token budgets, by whole lines.

The current line's text before (after) the cursor is always kept; further
lines are added outward while they fit. Lines are counted one by one so the
counter's cache makes repeated requests on the same file cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codectx.retriever.tokens import TokenCounter


@dataclass(frozen=True)
class Cut:
    text: str
    tokens: int
    first_line: int  # first document line included (0-based)
    last_line: int  # last document line included


def _take_while_fits(
    pieces: Iterable[tuple[int, str]], used: int, budget: int, counter: TokenCounter
) -> tuple[list[str], int, int | None]:
    """Whole lines `(row, text)` in order while the total stays within `budget` tokens: the texts
    taken, the tokens used, and the last row taken (None: none fitted)."""
    taken: list[str] = []
    reached = None
    for row, piece in pieces:
        cost = counter.count(piece)
        if used + cost > budget:
            break
        taken.append(piece)
        used += cost
        reached = row
    return taken, used, reached


def cut_prefix(lines: list[str], line: int, character: int, budget: int, counter: TokenCounter) -> Cut:
    """The text before the cursor, whole lines back from it while within `budget` tokens."""
    head = lines[line][:character]
    earlier = ((row, lines[row] + "\n") for row in range(line - 1, -1, -1))
    taken, used, first = _take_while_fits(earlier, counter.count(head), budget, counter)
    return Cut("".join(reversed(taken)) + head, used, line if first is None else first, line)


def cut_suffix(lines: list[str], line: int, character: int, budget: int, counter: TokenCounter) -> Cut:
    """The text after the cursor, whole lines forward while within `budget` tokens."""
    tail = lines[line][character:]
    later = ((row, "\n" + lines[row]) for row in range(line + 1, len(lines)))
    taken, used, last = _take_while_fits(later, counter.count(tail), budget, counter)
    return Cut(tail + "".join(taken), used, line, line if last is None else last)


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
