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
`.replace(` in code costs one failed match), each row is read once, and the caller's deadline is
checked every few hundred rows. The places of a text's statements are found once and kept for the
next regions of the same text (a small cache); otherwise pure functions.
"""

from __future__ import annotations

import bisect
import functools
import re
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass

from codectx.privacy.errors import ScanTimeout

LEAD_REACH = 5_000_000  # how far above a region its statement's header is looked for (a whole document)
CHECK_EVERY = 256  # rows between deadline checks
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
SECRET_COLUMN = re.compile(
    r"(?i)pass(?:word|wd|phrase)?|pwd|(?<![a-z])pw(?![a-z])|secret|token|credential|(?:api|access|private|signing|"
    r"encryption|master|auth|client|session)_?key|apikey"
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
_CAST = re.compile(r"(?:\s*::\s*\w+(?:[ \t]+\w+)*(?:\(\d+(?:,\s*\d+)?\))?(?:\[\])*)+(?=\s*[,)])")
_PREFIX = re.compile(r"(?:[NnEeBbXx]|[Uu]&|_\w{1,20}\s?)'")


Rows = Generator["Cell", None, int]  # a statement's cells; returns where its rows ended


@dataclass(frozen=True)
class Cell:
    """A value of a secret-named column: its span in the text and the column's name."""

    start: int
    end: int
    column: str


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
            pos = yield from _copy_cells(text, m.end(), columns, _copy_delimiter(m), deadline)
        else:
            pos = yield from _insert_cells(text, m.end(), columns, deadline)


def check_deadline(rows: int, deadline: float | None) -> None:
    """Every CHECK_EVERY rows: ScanTimeout once the caller's deadline has passed."""
    if rows % CHECK_EVERY == 0 and deadline is not None and time.monotonic() > deadline:
        raise ScanTimeout("the secret scan ran past its time limit")


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


# ---------------------------------------------------------------- rows


def _insert_cells(text: str, at: int, columns: list[str], deadline: float | None) -> Rows:
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


def _copy_cells(text: str, at: int, columns: list[str], delimiter: str, deadline: float | None) -> Rows:
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
    out, field_start, quoted = [], start, False
    for i in range(start, end):
        c = text[i]
        if c == '"':
            quoted = not quoted
        elif c == delimiter and not quoted:
            out.append((field_start, i))
            field_start = i + 1
    out.append((field_start, end))
    return out
