"""The values of SQL dumps and seed files, read under the names of their columns.

A row of `INSERT INTO users (id, email, api_token) VALUES (1, 'a@b.c', 'tok_2233...')` names
its secret only in the column list, far from the value, so no rule that reads `name = value`
sees it; nor one that reads pg_dump's tab-separated rows after `COPY users (...) FROM stdin;`,
or mysqldump's `INSERT INTO `users` VALUES (...)`, whose column names are only in the
`CREATE TABLE` above it. `secret_cells` pairs each value of a column whose name says secret
(password, token, api_key...) with that name; the redactor then judges `name = "value"` with its
own assignment rules, so the same checks decide as for an assignment.

A request scans a region of a file (a piece and a few lines around it), which may start in the
middle of a statement's rows, far below its header. `lead` gives the text a region needs in front
of it to be read the same way: the header of the statement it starts in, and the `CREATE TABLE`
of each column-less `INSERT` in it.

Linear in the text: statements are looked for only where their keywords stand (substring search;
`.replace(` in code costs one failed match), and each row is read once (`sqlvalues` reads the
rows, checking the caller's deadline every few hundred). The places of a text's statements are
found once and kept for the next regions of the same text (a small cache); otherwise pure
functions.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator

from codectx.privacy.sqlvalues import SECRET_COLUMN, Cell, copy_cells, insert_cells

# How far above a region its statement's header is looked for: a whole document, as large as the
# index reads files (app/redaction.py reads no larger source; a chunk of a larger one is withheld).
LEAD_REACH = 64_000_000
TUPLE_LINES = 64  # how far up the start of a tuple spread over lines is looked for
_NAME = r"""(?:[\w$]+|"[^"\n]{1,128}"|`[^`\n]{1,128}`|\[[^\]\n]{1,128}\])"""
_TABLE = rf"({_NAME}(?:\s*\.\s*{_NAME}){{0,2}})"
# One search finds the next statement of any kind; the group that matched says which.
_STATEMENT = re.compile(
    rf"""(?i)\b(?:
        (?P<insert>(?:INSERT|REPLACE)\s+(?:(?:IGNORE|LOW_PRIORITY|DELAYED|HIGH_PRIORITY)\s+|OR\s+\w+\s+)?
            (?:INTO\s+)?{_TABLE}\s*(?:\((?P<cols>[^()]{{1,8000}})\)\s*)?
            (?:OVERRIDING\s+(?:SYSTEM|USER)\s+VALUE\s+)?VALUES\b)
      | (?P<copy>^COPY\s+{_TABLE}\s*(?:\((?P<copycols>[^()]{{1,8000}})\)\s*)?FROM\s+stdin
            (?P<copyopts>[^;\n]{{0,200}});[ \t]*\r?\n)
      | (?P<create>CREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP(?:ORARY)?\s+|UNLOGGED\s+)?TABLE\s+
            (?:IF\s+NOT\s+EXISTS\s+)?{_TABLE}\s*\()
      | (?P<alter>ALTER\s+TABLE\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?{_TABLE}\s+ADD\s+(?:COLUMN\s+)?
            (?:IF\s+NOT\s+EXISTS\s+)?(?P<added>{_NAME}))
    )""",
    re.VERBOSE | re.MULTILINE,
)
# A CREATE TABLE item that is no column. `key` and `index` are also columns' names (`key text`,
# `key varchar(255)`): as constraints they are followed by `(` or by a name and ` (`.
_CONSTRAINT = re.compile(
    r"""(?ix)(?:PRIMARY|UNIQUE|CONSTRAINT|FOREIGN|CHECK|FULLTEXT|SPATIAL|EXCLUDE|LIKE|PERIOD)\b
        |(?:KEY|INDEX)\s*(?:\(|[`"\[]|\w+\s+\()"""
)
_INSERTS = ("INSERT", "insert", "Insert", "REPLACE", "replace", "Replace")
_HEADS = (*_INSERTS, "COPY", "copy", "Copy")
_KEYWORDS = (*_HEADS, "CREATE", "create", "Create", "ALTER", "alter", "Alter")
_STATEMENT_END = re.compile(r";[ \t]*(?:--[^\n]*)?\r?$", re.MULTILINE)


def secret_cells(text: str, deadline: float | None = None) -> Iterator[Cell]:
    """Each quoted value (INSERT) or field (COPY) of a column named for a secret, in order."""
    if not may_hold_rows(text):
        return
    tables: dict[str, list[str]] = {}
    pos = 0
    for at in _candidates(text):
        if at < pos:
            continue  # inside rows already read
        m = _STATEMENT.match(text, at)
        if m is None:
            continue
        if m.group("create"):
            columns, pos = _create_columns(text, m.end())
            if columns:
                tables[_table_key(_create_table(m))] = columns
            continue
        if m.group("alter"):  # ALTER TABLE t ADD COLUMN api_token: a column-less INSERT has it last
            known = tables.get(_table_key(m.group(m.re.groupindex["alter"] + 1) or ""))
            if known is not None:
                known.append(m.group("added").strip('"`[]'))
            continue
        listed = _listed(m)
        columns = _columns(listed) if listed is not None else tables.get(_table_key(_statement_table(m)), [])
        if not any(SECRET_COLUMN.search(c) for c in columns):
            pos = m.end()
            continue
        if m.group("copy"):
            pos = yield from copy_cells(text, m.end(), columns, _copy_delimiter(m), deadline)
        else:
            pos = yield from insert_cells(text, m.end(), columns, deadline)


def _candidates(text: str) -> list[int]:
    """Where a statement's keyword starts, in order: found by substring search (C speed; a regex
    that ignores case tries every position)."""
    found = []
    for word in _KEYWORDS:
        at = text.find(word)
        while at != -1:
            found.append(at)
            at = text.find(word, at + len(word))
    return sorted(found)


def may_hold_rows(text: str) -> bool:
    """Whether `text` can hold a statement with rows: C-speed substring checks, so that code (where
    `.replace(` and `.values()` are common, but not both with a statement's shape) is not searched."""
    if "stdin" in text or "STDIN" in text or "Stdin" in text:
        return True  # COPY ... FROM stdin
    values = any(v in text for v in ("VALUES", "values", "Values", "VALUEs"))
    return values and any(k in text for k in _INSERTS)


def lead(text: str, lo: int, hi: int) -> str:
    """What a region [lo, hi) of `text` needs in front of it to be read as it sits in the file: the
    header of a statement whose rows it starts in, and the `CREATE TABLE` of each column-less INSERT
    in it whose definition is above it. Empty for almost every region."""
    if lo <= 0 or not any(k in text for k in _KEYWORDS):
        return ""
    region = text[lo:hi]
    needed = {
        _table_key(_statement_table(m))
        for m in _STATEMENT.finditer(region)
        if not m.group("create") and _listed(m) is None
    }
    nl = region.find("\n")
    first = (region if nl == -1 else region[:nl]).lstrip(" \t")
    # Only a region that starts with a row needs its statement's header: a tuple or its rest (a
    # quoted value, a closing paren), a comment between tuples, or a COPY row.
    row_like = first.startswith(("(", ",", "--", "'", '"', ")")) or "\t" in first or "," in first
    # A one-column COPY's rows have no separator: any open COPY above counts.
    floor = max(0, lo - LEAD_REACH)
    copy_above = any(text.rfind(k, floor, lo) != -1 for k in ("stdin;", "STDIN;", "stdin ", "STDIN "))
    head = _open_statement(text, lo) if row_like or copy_above else None
    if head is not None and _listed(head) is None:
        needed.add(_table_key(_statement_table(head)))
    parts = list(_creates_above(text, needed - {""}, lo).values())
    if head is not None:
        parts.append(head.group(0).rstrip("\r\n") + "\n")
        if head.group("insert") and not first.startswith(("(", ",", "--")):
            parts.append(_tuple_start(text, lo, head.end()))  # a tuple spread over lines, begun above
    return "".join(parts)


def _tuple_start(text: str, lo: int, header_end: int) -> str:
    """The lines of the tuple that `lo` (a line start) is inside, from its `(` line to `lo`, or
    from the statement's header when the first tuple opens on its line (`VALUES (1,`): a value's
    column is known only from the tuple's start. At most TUPLE_LINES lines up."""
    at = lo
    for _ in range(TUPLE_LINES):
        if at <= header_end:
            return text[header_end:lo]
        if at <= 0:
            return ""
        at = text.rfind("\n", 0, at - 1) + 1
        line = text[at : text.find("\n", at)].lstrip(" \t")
        if line.startswith("("):
            return text[at:lo]
        if line.rstrip().endswith(";"):
            return ""
    return ""


# ---------------------------------------------------------------- statements


def _open_statement(text: str, lo: int) -> re.Match[str] | None:
    """The INSERT or COPY whose rows are still going on at `lo`, if its header is within reach."""
    heads = _statements(text)[0]
    n = bisect.bisect_left(heads, lo)
    while n > 0:
        n -= 1
        at = heads[n]
        if at < lo - LEAD_REACH:
            return None
        m = _STATEMENT.match(text, at)
        if m is None or m.end() > lo:
            continue
        if m.group("copy"):
            ended = text.find("\n\\.", m.end() - 1, lo) != -1
        else:
            # A statement ends with a `;` at a line's end (`);`, `ON CONFLICT DO NOTHING;`,
            # `RETURNING id;`); a value spread over lines that ends one so is read as an end.
            ended = _STATEMENT_END.search(text, m.end(), lo) is not None
        return None if ended else m
    return None


def _creates_above(text: str, tables: set[str], before: int) -> dict[str, str]:
    """The last `CREATE TABLE` of each of `tables` above `before`, cut to its column list, with the
    `ALTER TABLE ... ADD` statements that came after it."""
    found: dict[str, str] = {}
    if not tables:
        return found
    alters: dict[str, list[str]] = {}
    schema = _statements(text)[1]
    for at in reversed(schema[: bisect.bisect_left(schema, before)]):
        if at < before - LEAD_REACH:
            break
        m = _STATEMENT.match(text, at)
        if m is None:
            continue
        if m.group("alter"):
            table = _table_key(m.group(m.re.groupindex["alter"] + 1) or "")
            if table in tables and table not in found:
                alters.setdefault(table, []).insert(0, m.group(0) + ";\n")
            continue
        table = _table_key(_create_table(m))
        if table in tables and table not in found:
            _columns_found, end = _create_columns(text, m.end())
            found[table] = text[at:end] + ";\n" + "".join(alters.get(table, []))
            if len(found) == len(tables):
                break
    return found


@functools.lru_cache(maxsize=8)
def _statements(text: str) -> tuple[list[int], list[int]]:
    """Where the INSERT/COPY headers and the schema statements (CREATE TABLE, ALTER TABLE ... ADD)
    of `text` start: found once per text (a request scans several regions of one document), at
    their keywords' places."""
    heads: list[int] = []
    creates: list[int] = []
    for at in _candidates(text):
        m = _STATEMENT.match(text, at)
        if m is not None:
            if m.group("create") or m.group("alter"):
                creates.append(at)
            else:
                heads.append(at)
    return heads, creates


def _create_table(m: re.Match[str]) -> str:
    return m.group(m.re.groupindex["create"] + 1) or ""


def _statement_table(m: re.Match[str]) -> str:
    """The table an INSERT, REPLACE or COPY writes."""
    kind = "copy" if m.group("copy") else "insert"
    return m.group(m.re.groupindex[kind] + 1) or ""


def _listed(m: re.Match[str]) -> str | None:
    """An INSERT's or COPY's own column list; None when it names none (the CREATE TABLE does)."""
    return m.group("copycols") if m.group("copy") else m.group("cols")


def _copy_delimiter(m: re.Match[str]) -> str:
    """COPY's field separator: a tab, a comma with `CSV`, or the one `DELIMITER 'x'` names."""
    options = m.group("copyopts") or ""
    named = re.search(r"(?i)\bdelimiter\s+(?:as\s+)?E?'(\\t|[^'])'", options)
    if named:
        return "\t" if named.group(1) == "\\t" else named.group(1)
    return "," if re.search(r"(?i)\bcsv\b", options) else "\t"


def _table_key(name: str) -> str:
    """A table's name without quoting or schema, lower-cased: `public."Users"` -> `users`."""
    last = re.split(r"\s*\.\s*", name.strip())[-1]
    return last.strip('"`[]').lower()


def _columns(listed: str) -> list[str]:
    return [c.strip().strip('"`[]') for c in listed.split(",")]


def _create_columns(text: str, at: int) -> tuple[list[str], int]:
    """The column names of a CREATE TABLE whose `(` ends at `at`, and where its list closes."""
    depth, i, n = 0, at, min(len(text), at + 64 * 1024)
    items: list[str] = []
    start = at
    while i < n:
        c = text[i]
        if c in "'\"`":
            close = text.find(c, i + 1, n)
            i = n if close == -1 else close + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                items.append(text[start:i])
                break
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
        i += 1
    columns = []
    for item in items:
        item = item.strip()
        if not item or _CONSTRAINT.match(item):
            continue
        columns.append(item.split(None, 1)[0].strip('"`[]'))
    return columns, min(i + 1, len(text))
