"""Which lines of a long search hit a chat turn sends, when the hit is larger than its share.

A search hit is an index chunk: a function, or a stretch of a class with several methods. When it
is longer than its share of the turn's budget, only a window of its lines goes. The window used to
be the head (the first lines); for a chunk of several methods the one the question is about was
then often cut off. `focus` picks the window whose lines name most of the question's words,
counting names on definition lines twice, and keeps the head when no window does better. Pure:
text in, line range out.
"""

from __future__ import annotations

import re

_TERM = re.compile(r"[A-Za-z][A-Za-z0-9]+")
# Question words that say nothing about which code is meant.
# fmt: off
_STOP = frozenset((
    "the", "and", "for", "with", "from", "that", "this", "what", "which", "when", "where", "does",
    "how", "are", "was", "were", "its", "into", "onto", "given", "using", "used", "use", "uses",
    "return", "returns", "returned", "value", "values", "function", "method", "class", "object",
    "new", "all", "any", "each", "one", "get", "set", "can", "not", "only", "also", "then", "than",
))
# fmt: on
_DEFINITION = re.compile(r"\s*(?:async\s+def|def|class|function|fn|func|export|public|private)\b")


def terms(question: str) -> list[str]:
    """The question's content words, lower case, cut to a stem (`converted` matches `convert`)."""
    found: list[str] = []
    for word in _TERM.findall(question):
        word = word.lower()
        if len(word) < 3 or word in _STOP:
            continue
        stem = word if len(word) < 6 else word[: max(5, len(word) - 2)]
        if stem not in found:
            found.append(stem)
    return found


def focus(lines: list[str], keep_chars: int, words: list[str]) -> tuple[int, int]:
    """(first, last) line of the window of at most `keep_chars` characters to send (0-based,
    inclusive): the head, unless a later window holds more of `words`."""
    if not lines:
        return 0, 0
    scores = [_score(line, words) for line in lines]
    best, best_first, best_last = -1, 0, 0
    last, used, score = -1, 0, 0  # the window [first, last], grown to the right, shrunk from the left
    for first in range(len(lines)):
        if last < first:
            last, used, score = first, len(lines[first]) + 1, scores[first]
        while last + 1 < len(lines) and used + len(lines[last + 1]) + 1 <= keep_chars:
            last += 1
            used += len(lines[last]) + 1
            score += scores[last]
        if score > best:  # strictly: on a tie the earlier window (the head first) stays
            best, best_first, best_last = score, first, last
        used -= len(lines[first]) + 1
        score -= scores[first]
    return best_first, best_last


def _score(line: str, words: list[str]) -> int:
    if not words:
        return 0
    low = line.lower()
    hits = sum(1 for w in words if w in low)
    return hits * 2 if hits and _DEFINITION.match(line) else hits
