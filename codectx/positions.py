"""Cursor positions as people type and read them: 1-based lines and columns, `FILE:LINE:COL`.

The shell speaks like rg, ruff, git and compilers: the first line is line 1, the first column is
column 1, and `src/app.py:42:9` names a place. Everything inside codectx (the session, the
retriever, LSP, stored records) counts from 0, like LSP; the conversion happens once, here, at the
command line. `--json` output stays 0-based, like LSP, and says so in a top-level
`"positions": "0-based"` field (`POSITIONS_FIELD`), so a script never has to guess.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codectx.errors import UsageError

POSITIONS_FIELD = "positions"
ZERO_BASED = "0-based"
# Stated once in `codectx --help` (the main parser's epilog).
CONVENTION = (
    "Lines and columns you type or read are 1-based, like rg, ruff and compilers: "
    "--line 1 --character 1 is the start of a file, and FILE:LINE:COL works wherever FILE "
    "does (FILE:FIRST-LAST, the lines `search` prints, is line FIRST). --json output is 0-based, "
    'like LSP, and says so: "positions": "0-based".'
)
_NUMBER = re.compile(r"-?\d+")
# `search` prints FILE:FIRST-LAST; given back, it is line FIRST (the README's round trip).
_RANGE = re.compile(r"\s*(\d+)-(\d+)\s*")


@dataclass(frozen=True)
class Cursor:
    """A place in a document as a person gave it: 1-based line and column."""

    file: str
    line: int
    column: int


def add_position_args(parser: argparse.ArgumentParser) -> None:
    """`--line` and `--character`, 1-based; `FILE:LINE:COL` in the file argument does the same."""
    parser.add_argument(
        "--line", metavar="L", help="1-based line of the cursor (or give FILE:LINE[:COL], or FILE:FIRST-LAST)"
    )
    parser.add_argument(
        "--character", metavar="C", help="1-based column of the cursor in the line (default 1)"
    )


def zero_based_json(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the field that says its lines and characters count from 0 (placed first)."""
    return {POSITIONS_FIELD: ZERO_BASED, **data}


def split_location(arg: str) -> tuple[str, str | None, str | None]:
    """(file, line text, column text) of `FILE`, `FILE:LINE` or `FILE:LINE:COL`; the line of
    `FILE:FIRST-LAST` (what `search` prints) is FIRST.

    A file whose own name has colons is itself when it exists; a suffix is a position when it
    looks like one (digits, or a range) or when the part before it is an existing file (then a
    bad number is reported, not taken for part of the name)."""
    if Path(arg).expanduser().exists():
        return arg, None, None
    # From the right: `a:b.py:3` is line 3 of `a:b.py` (splitting at the first colon never was).
    for parts in (arg.rsplit(":", 2), arg.rsplit(":", 1)):
        if len(parts) < 2 or not parts[0] or any("/" in part for part in parts[1:]):
            continue
        path, line, column = parts[0], parts[1], (parts[2] if len(parts) == 3 else None)
        lines = _RANGE.fullmatch(line)
        numeric = (_NUMBER.fullmatch(line) or lines) and (column is None or _NUMBER.fullmatch(column))
        if not (numeric or Path(path).expanduser().exists()):
            continue
        if lines is not None and int(lines.group(1)) <= int(lines.group(2)):
            line = lines.group(1)  # a backwards range stays as typed: `_number` says what is wrong
        return path, line, column
    return arg, None, None


def _number(raw: str, what: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        lines = _RANGE.fullmatch(raw)
        if lines is not None and int(lines.group(1)) > int(lines.group(2)):
            raise UsageError(
                f"lines {raw.strip()} run backwards; FILE:FIRST-LAST (as `search` prints it) is line FIRST"
            ) from None
        raise UsageError(f"{what} must be a whole number (1-based), not {raw!r}") from None
    if value < 1:
        raise UsageError(f"{what} {value} is not a position: {what}s are 1-based, the first is 1")
    return value


def cursor_from_args(file: str, line: str | None, character: str | None) -> Cursor:
    """The cursor that `FILE[:LINE[:COL]]`, `--line` and `--character` give; a usage error when
    the line is missing, given twice, not a number or below 1."""
    path, loc_line, loc_column = split_location(file)
    if loc_line is not None and line is not None:
        raise UsageError(f"the line is given twice ({file} and --line {line}); give one")
    if loc_column is not None and character is not None:
        raise UsageError(f"the column is given twice ({file} and --character {character}); give one")
    line_text = loc_line if loc_line is not None else line
    if line_text is None:
        raise UsageError("give the cursor's line: --line L, or FILE:LINE[:COL] (1-based)")
    column_text = loc_column if loc_column is not None else character
    return Cursor(
        path, _number(line_text, "line"), 1 if column_text is None else _number(column_text, "column")
    )


def to_zero_based(cursor: Cursor, text: str, shown: str) -> tuple[int, int]:
    """The 0-based (line, character) of `cursor` in `text`; a usage error naming the document's
    line count (or the line's length) when the cursor is past its end. The line after a final
    newline, and the column after a line's last character, are places a cursor can be."""
    if cursor.line < 1 or cursor.column < 1:
        raise UsageError(f"line {cursor.line}, column {cursor.column}: lines and columns are 1-based")
    rows = text.split("\n")
    if cursor.line > len(rows):
        count = len(rows) - 1 if text.endswith("\n") else len(rows)
        raise UsageError(
            f"line {cursor.line} is past the end of {shown} (it has {count} line{'s' * (count != 1)})"
        )
    length = len(rows[cursor.line - 1])
    if cursor.column > length + 1:
        raise UsageError(
            f"column {cursor.column} is past the end of line {cursor.line} of {shown} "
            f"({length} characters: the last column is {length + 1})"
        )
    return cursor.line - 1, cursor.column - 1
