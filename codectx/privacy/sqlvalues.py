"""The rows of an SQL statement read as cells: the tuples after `INSERT ... VALUES` and the lines of
a `COPY ... FROM stdin` block, each value of a column named for a secret with that column's name.

`sqlrows` finds the statements and their columns; this module reads what follows a header. Values
are read as SQL writes them: quoted strings with `''` or backslash escapes and an N/E/B/X/U& prefix
or a `_charset` introducer, casts (`'x'::text`), calls whose first literal is the value
(`crypt('pw', ...)`), comments between rows. Each row is read once, and the caller's deadline is
checked every CHECK_EVERY rows. Pure functions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from dataclasses import dataclass

from codectx.privacy.errors import ScanTimeout

CHECK_EVERY = 256  # rows between deadline checks
SECRET_COLUMN = re.compile(
    r"(?i)pass(?:word|wd|phrase)?|pwd|(?<![a-z])pw(?![a-z])|secret|token|credential|(?:api|access|private|signing|"
    r"encryption|master|auth|client|session)_?key|apikey"
    # The word for password in other languages (a German export's `Kennwort` column).
    r"|kennwort|contrase(?:ñ|n)a|senha|wachtwoord|has(?:ł|l)o|mot[ _]de[ _]passe|пароль|l(?:ö|o)senord"
    r"|salasana|heslo|jelsz(?:ó|o)|(?:ş|s)ifre|密码|密碼|パスワード|비밀번호"
)
_CAST = re.compile(r"(?:\s*::\s*\w+(?:[ \t]+\w+)*(?:\(\d+(?:,\s*\d+)?\))?(?:\[\])*)+(?=\s*[,)])")
_PREFIX = re.compile(r"(?:[NnEeBbXx]|[Uu]&|_\w{1,20}\s?)'")


Rows = Generator["Cell", None, int]  # a statement's cells; returns where its rows ended


@dataclass(frozen=True)
class Cell:
    """A value of a secret-named column: its span in the text and the column's name."""

    start: int
    end: int
    column: str


def check_deadline(rows: int, deadline: float | None) -> None:
    """Every CHECK_EVERY rows: ScanTimeout once the caller's deadline has passed."""
    if rows % CHECK_EVERY == 0 and deadline is not None and time.monotonic() > deadline:
        raise ScanTimeout("the secret scan ran past its time limit")


def insert_cells(text: str, at: int, columns: list[str], deadline: float | None) -> Rows:
    """Quoted values of the `(...), (...)` tuples from `at` to the statement's end; returns where it
    ended. A tuple that does not read (one spread over lines, when a region starts inside it) is
    skipped to the next line that opens one."""
    n = len(text)
    rows = 0
    while at < n:
        at = _skip_gaps(text, at, " \t\r\n,")
        if at >= n or text[at] != "(":
            return at
        rows += 1
        check_deadline(rows, deadline)
        at, ok = yield from _tuple_cells(text, at + 1, columns)
        if not ok:
            at = _next_tuple_line(text, at)
    return at


def _skip_gaps(text: str, at: int, blanks: str) -> int:
    """Past blanks and SQL comments (`-- ...` to the line's end, `/* ... */`) from `at`."""
    n = len(text)
    while at < n:
        if text[at] in blanks:
            at += 1
        elif text.startswith("--", at):
            nl = text.find("\n", at)
            at = n if nl == -1 else nl + 1
        elif text.startswith("/*", at):
            close = text.find("*/", at + 2)
            at = n if close == -1 else close + 2
        else:
            break
    return at


def _tuple_cells(text: str, at: int, columns: list[str]) -> Generator[Cell, None, tuple[int, bool]]:
    """One tuple's values, `at` just past its `(`; returns (where it ended, whether it read)."""
    n = len(text)
    column = 0
    while at < n:
        at = _skip_gaps(text, at, " \t\r\n")
        end, start, stop = _value(text, at)
        if column < len(columns) and stop > start and SECRET_COLUMN.search(columns[column]):
            yield Cell(start, stop, columns[column])
        at = _skip_gaps(text, end, " \t\r\n")
        if at < n and text[at] == ",":
            column += 1
            at += 1
            continue
        if at < n and text[at] == ")":
            return at + 1, True
        return at, False
    return at, False


def _next_tuple_line(text: str, at: int) -> int:
    """The first line after `at` that opens a tuple, or where the statement stops."""
    while True:
        nl = text.find("\n", at)
        if nl == -1:
            return len(text)
        at = nl + 1
        stripped = text[at : at + 64].lstrip(" \t")
        if stripped.startswith("("):
            return at
        if stripped.strip():
            return at  # not a tuple: the reader stops there


def _value(text: str, at: int) -> tuple[int, int, int]:
    """(where the value ends, its content's start and end): a quoted string's content (with ''
    or backslash escapes, after an N, E, B, X or U& prefix or a `_charset` introducer); for a
    call, the first string literal inside it (`crypt('pw', gen_salt('bf'))`); else nothing (a
    number, NULL, an ARRAY[...] or a cast: read past it, not yielded)."""
    n = len(text)
    start = _literal_start(text, at)
    if start is not None:
        end, stop = _string_end(text, start)
        cast = _CAST.match(text, end)  # 'x'::text, 'x'::character varying
        return (cast.end() if cast else end), start + 1, stop
    depth, first, i = 0, None, at
    while i < n:
        c = text[i]
        if c in "'\"":
            end, stop = _string_end(text, i)
            if first is None and depth > 0 and stop > i + 1:
                first = (i + 1, stop)
            i = end
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c in ",;\n" and depth == 0:
            break
        i += 1
    return (i, *first) if first is not None else (i, at, at)


def _literal_start(text: str, at: int) -> int | None:
    """Where a string literal's opening quote is, if one starts at `at` (prefixes allowed)."""
    if at < len(text) and text[at] in "'\"":
        return at
    prefix = _PREFIX.match(text, at)
    return prefix.end() - 1 if prefix else None


def _string_end(text: str, quote_at: int) -> tuple[int, int]:
    """(past the closing quote, the closing quote's offset) of a string opened at `quote_at`."""
    n, quote, i = len(text), text[quote_at], quote_at + 1
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1, i
        i += 1
    return n, quote_at + 1  # unclosed: nothing read as its content


def copy_cells(text: str, at: int, columns: list[str], delimiter: str, deadline: float | None) -> Rows:
    """Fields of a COPY block's rows (tab-separated, or CSV), until its `\\.` line or a line that
    starts another statement; returns where the block ended."""
    wanted = [i for i, c in enumerate(columns) if SECRET_COLUMN.search(c)]
    n = len(text)
    rows = 0
    while at < n:
        end = text.find("\n", at)
        end = n if end == -1 else end
        stop = end - 1 if end > at and text[end - 1] == "\r" else end
        line = text[at:stop]
        if line == "\\." or line.startswith(("COPY ", "INSERT ", "CREATE ", "SELECT ", "ALTER ")):
            return at
        rows += 1
        check_deadline(rows, deadline)
        fields = split_fields(text, at, stop, delimiter, quotes=delimiter != "\t")
        if len(fields) == len(columns):
            for i in wanted:
                a, b = fields[i]
                if b > a + 1 and text[a] == '"' and text[b - 1] == '"':
                    a, b = a + 1, b - 1
                if b > a and text[a:b] != "\\N":
                    yield Cell(a, b, columns[i])
        at = end + 1
    return n


def split_fields(
    text: str, start: int, end: int, delimiter: str, quotes: bool = True
) -> list[tuple[int, int]]:
    """The fields of text[start:end] (spans), split at `delimiter`; with `quotes`, a double-quoted
    field's delimiters stay inside it (CSV)."""
    if not quotes or '"' not in text[start:end]:
        out, field_start = [], start
        at = text.find(delimiter, start, end)
        while at != -1:
            out.append((field_start, at))
            field_start = at + 1
            at = text.find(delimiter, field_start, end)
        out.append((field_start, end))
        return out
    fields: list[tuple[int, int]] = []
    quote_open(text, start, end, delimiter, False, fields)
    return fields


def quote_open(
    text: str, start: int, end: int, delimiter: str, quoted: bool, fields: list[tuple[int, int]] | None = None
) -> bool:
    """Whether a CSV quoted field is still open at `end`, read from `start` (`quoted`: open there).

    RFC 4180: a quote opens a field only at its start (after spaces); inside, `""` is a quote and a
    lone `"` closes it. A quote inside an unquoted field (`5" screen`) is a character: counted as an
    opening one, it ran the record on over the rows below. `fields`: the fields' spans, appended."""
    field_start, at_start, i = start, not quoted, start
    while i < end:
        c = text[i]
        if quoted:
            if c == '"':
                if i + 1 < end and text[i + 1] == '"':
                    i += 2
                    continue
                quoted = False
        elif c == delimiter:
            if fields is not None:
                fields.append((field_start, i))
            field_start, at_start = i + 1, True
        elif c == '"' and at_start:
            quoted, at_start = True, False
        elif c not in " \t":
            at_start = False
        i += 1
    if fields is not None:
        fields.append((field_start, end))
    return quoted
