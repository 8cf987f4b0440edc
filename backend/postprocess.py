"""Turning a raw model completion into what the editor inserts.

Single-line mode keeps the rest of the current line; multi-line (block) mode
keeps lines until the code leaves the block it started in (indentation, plus
one closing-bracket line when that bracket is still open). Text that only
repeats what follows the cursor is dropped, special tokens never survive, and
trailing whitespace is trimmed. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in OPENERS.items()}
_BLOCK_OPENER = re.compile(r"(:|\{|\(|\[|=>|\bdo|\bthen)\s*(#.*|//.*)?$")
_CLOSING_LINE = re.compile(r"^\s*[)\]}]+[;,)]*\s*$")
_CLOSING_PUNCT = set(")]}\"'`;,>")


def strip_special(text: str, special: Sequence[str]) -> str:
    """Cut at the first special token: nothing after one is code."""
    cut = len(text)
    for token in special:
        at = text.find(token) if token else -1
        if at != -1:
            cut = min(cut, at)
    return text[:cut]


def indent_width(line: str, tab: int = 4) -> int:
    width = 0
    for ch in line:
        if ch == " ":
            width += 1
        elif ch == "\t":
            width += tab - width % tab
        else:
            break
    return width


def _line_prefix(prefix: str) -> str:
    return prefix.rsplit("\n", 1)[-1]


def _line_suffix(suffix: str) -> str:
    return suffix.split("\n", 1)[0].rstrip("\r")


def choose_mode(prefix: str, suffix: str) -> str:
    """ "line" when code follows the cursor or the line is half written; "block" otherwise."""
    before = _line_prefix(prefix)
    if _line_suffix(suffix).strip():
        return "line"
    if not before.strip() or _BLOCK_OPENER.search(before.rstrip()):
        return "block"
    return "line"


def _balance(text: str) -> dict[str, int]:
    """Unclosed openers per bracket type (negative: extra closers); strings are not parsed."""
    counts = {k: 0 for k in OPENERS}
    for ch in text:
        if ch in OPENERS:
            counts[ch] += 1
        elif ch in CLOSERS:
            counts[CLOSERS[ch]] -= 1
    return counts


def _imbalance(text: str) -> int:
    quotes = sum(text.count(q) % 2 for q in "\"'`")
    return sum(abs(v) for v in _balance(text).values()) + quotes


def _drop_line_overlap(completion: str, line_before: str, line_after: str) -> str:
    """Remove the end of the completion that the rest of the line already has."""
    rest = line_after.strip()
    if not rest:
        return completion
    last = completion.rsplit("\n", 1)[-1]
    head = completion[: len(completion) - len(last)]
    if last.rstrip().endswith(rest) and last.strip() != rest:
        trimmed = last.rstrip()[: -len(rest)]
        if _imbalance(line_before + trimmed + line_after) <= _imbalance(line_before + last + line_after):
            return head + trimmed
    lead = line_after.lstrip()
    for k in range(min(len(lead), len(last)), 0, -1):
        overlap = lead[:k]
        if not last.endswith(overlap) or not set(overlap) <= _CLOSING_PUNCT:
            continue
        trimmed = last[:-k]
        if _imbalance(line_before + trimmed + line_after) < _imbalance(line_before + last + line_after):
            return head + trimmed
    return completion


def _next_code_line(suffix: str) -> str:
    rest = suffix.split("\n", 1)[1] if "\n" in suffix else ""
    if _line_suffix(suffix).strip():
        return _line_suffix(suffix).strip()
    for line in rest.split("\n"):
        if line.strip():
            return line.strip()
    return ""


def _block(lines: list[str], prefix: str, suffix: str) -> list[str]:
    before = _line_prefix(prefix)
    first = before + lines[0]
    if first.strip():
        ref = indent_width(first)
        opener = bool(_BLOCK_OPENER.search(first.rstrip()))
    else:
        body = next((ln for ln in lines[1:] if ln.strip()), "")
        ref, opener = indent_width(body), False
    kept = [lines[0]]
    blank_run = 0
    for line in lines[1:]:
        if not line.strip():
            blank_run += 1
            if blank_run >= 2 and any(k.strip() for k in kept):
                break  # a paragraph break: the block is over
            kept.append(line)
            continue
        blank_run = 0
        width = indent_width(line)
        if width > ref or (width == ref and not opener):
            kept.append(line)
            continue
        if _CLOSING_LINE.match(line):
            open_now = _balance(prefix + "\n".join(kept))
            closer = line.strip()[0]
            if open_now[CLOSERS[closer]] > 0 and not suffix.lstrip().startswith(closer):
                kept.append(line)
        break
    return kept


def postprocess(
    completion: str, *, prefix: str, suffix: str, mode: str = "auto", special: Sequence[str] = ()
) -> str:
    """The text to insert at the cursor, or "" when nothing useful is left."""
    text = strip_special(completion, special).replace("\r\n", "\n")
    if not text.strip():
        return ""
    if mode == "auto":
        mode = choose_mode(prefix, suffix)
    before = _line_prefix(prefix)
    lines = text.split("\n")
    if mode == "line":
        if before.strip() and not lines[0].strip():
            return ""  # the model wants a new line where the user is mid-statement
        kept = [lines[0]]
    else:
        kept = _block(lines, prefix, suffix)
    next_line = _next_code_line(suffix)
    if next_line and mode == "block":
        for i in range(1, len(kept)):
            if kept[i].strip() == next_line:
                kept = kept[:i]  # the model is re-typing what already follows the cursor
                break
    kept = [ln.rstrip() for ln in kept]
    while len(kept) > 1 and not kept[-1].strip():
        kept.pop()
    result = "\n".join(kept)
    result = _drop_line_overlap(result, before, _line_suffix(suffix))
    return result if result.strip() else ""


def block_ended(text: str, *, prefix: str, suffix: str, mode: str, special: Sequence[str] = ()) -> bool:
    """While streaming: has the model written past the line or block, so the stream can be closed?"""
    if strip_special(text, special) != text:
        return True
    lines = text.replace("\r\n", "\n").split("\n")
    if len(lines) < 2:
        return False
    before = _line_prefix(prefix)
    if mode == "line":
        return bool(lines[0].strip() or before.strip())
    # The last line may still be growing, but once it shows a non-blank char its indentation is known.
    complete = lines if lines[-1].strip() else lines[:-1]
    if not any(ln.strip() for ln in complete):
        return False
    return len(_block(complete, prefix, suffix)) < len(complete)
