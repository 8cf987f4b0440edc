"""The values of SQL dumps and seed files, read under the names of their columns.

A row of `INSERT INTO users (id, email, api_token) VALUES (1, 'a@b.c', 'tok_2233...')` names
its secret only in the column list, far from the value, so no rule that reads `name = value`
sees it; nor does one read the rows `pg_dump` writes by default, tab-separated after
`COPY users (id, email, api_token) FROM stdin;`. `secret_values` pairs each value of a column
whose name says secret (password, token, api_key...) with that name; the redactor then scans
`name = "value"` with its own rules, so the same checks decide as for an assignment.

Only columns named for secrets are read, so a dump's bulk costs one regex pass over it. Pure
functions; a statement is read until its closing `;` or for at most MAX_ROWS rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_ROWS = 10_000  # rows read per statement: a seed file's worth; a dump's tail is left to the rules
_INSERT = re.compile(
    r"""(?is)\bINSERT\s+(?:IGNORE\s+)?INTO\s+[\w."`\[\]]+\s*\(([^()]{1,4000})\)\s*VALUES\s*"""
)
_COPY = re.compile(r"""(?im)^COPY\s+[\w."]+\s*\(([^()]{1,4000})\)\s+FROM\s+stdin;[ \t]*\r?\n""")
_SECRET_COLUMN = re.compile(
    r"(?i)pass(?:word|wd|phrase)?|pwd|secret|token|credential|(?:api|access|private|signing|"
    r"encryption|master|auth|client|session)_?key|apikey"
)


def secret_values(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, column) of each value in a column named for a secret, in INSERT and COPY rows."""
    # Substring checks first (C speed, no copy): most texts hold neither statement.
    has_insert = "INSERT" in text or "insert" in text or "Insert" in text
    if not has_insert and "COPY" not in text:
        return
    for m in _INSERT.finditer(text) if has_insert else ():
        columns = _columns(m.group(1))
        if any(_SECRET_COLUMN.search(c) for c in columns):
            yield from _insert_values(text, m.end(), columns)
    for m in _COPY.finditer(text):
        columns = _columns(m.group(1))
        if any(_SECRET_COLUMN.search(c) for c in columns):
            yield from _copy_values(text, m.end(), columns)


def _columns(listed: str) -> list[str]:
    return [c.strip().strip('"`[]') for c in listed.split(",")]


def _insert_values(text: str, at: int, columns: list[str]) -> Iterator[tuple[int, int, str]]:
    """Values of the `(...), (...)` tuples from `at` to the statement's end."""
    n = len(text)
    rows = 0
    while at < n and rows < MAX_ROWS:
        while at < n and text[at] in " \t\r\n,":
            at += 1
        if at >= n or text[at] != "(":
            return
        at += 1
        column = 0
        while at < n:
            while at < n and text[at] in " \t\r\n":
                at += 1
            end, start, stop = _value(text, at)
            if column < len(columns) and stop > start and _SECRET_COLUMN.search(columns[column]):
                yield start, stop, columns[column]
            at = end
            while at < n and text[at] in " \t\r\n":
                at += 1
            if at < n and text[at] == ",":
                column += 1
                at += 1
                continue
            if at < n and text[at] == ")":
                at += 1
            break
        rows += 1


def _value(text: str, at: int) -> tuple[int, int, int]:
    """(where the value ends, its content's start and end): a quoted string's content (with ''
    or backslash escapes), else nothing (a number, NULL, a call: read past it, not yielded)."""
    n = len(text)
    if at < n and text[at] in "'\"":
        quote = text[at]
        i = at + 1
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == quote:
                if i + 1 < n and text[i + 1] == quote:
                    i += 2
                    continue
                return i + 1, at + 1, i
            if c == "\n" and i - at > 4000:
                break
            i += 1
        return n, at, at
    depth = 0
    i = at
    while i < n:
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        elif c in ",;\n" and depth == 0:
            break
        i += 1
    return i, at, at


def _copy_values(text: str, at: int, columns: list[str]) -> Iterator[tuple[int, int, str]]:
    """Values of a COPY block's tab-separated rows, until its `\\.` line."""
    wanted = [i for i, c in enumerate(columns) if _SECRET_COLUMN.search(c)]
    rows = 0
    while at < len(text) and rows < MAX_ROWS:
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        line = text[at:end].rstrip("\r")
        if line == "\\.":
            return
        fields = line.split("\t")
        starts = [at]
        for f in fields[:-1]:
            starts.append(starts[-1] + len(f) + 1)
        for i in wanted:
            if i < len(fields) and fields[i] not in ("", "\\N"):
                yield starts[i], starts[i] + len(fields[i]), columns[i]
        at = end + 1
        rows += 1
