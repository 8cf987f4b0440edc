"""The cells of tables, read under the names of their columns: CSV and TSV files, Markdown and
HTML tables.

A `users.csv` whose header says `password`, a Markdown table of staging logins, a notebook's
HTML output of a data frame: each names its secret only in the header row, far from the value
(red team 3 sent a notebook's `<td>` password). `secret_cells` pairs each cell of a column whose
name says secret (sqlvalues.SECRET_COLUMN) with that name; the redactor judges `name = "value"`
with its assignment rules, as for SQL rows. `lead` gives a region that starts inside a table the
header it needs in front (a request may send rows far below it).

Linear: one pass over the lines, each cell split once; the caller's deadline is checked every few
hundred rows. Pure functions.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

from codectx.privacy.sqlrows import LEAD_REACH
from codectx.privacy.sqlvalues import SECRET_COLUMN, Cell, check_deadline, quote_open, split_fields

# Files read as delimited tables; the delimiter is the header line's most frequent of DELIMITERS
# (a "csv" may hold tabs or semicolons, a ".txt" export commas).
DELIMITED = frozenset({".csv", ".tsv", ".psv", ".txt", ".tab"})
DELIMITERS = (",", "\t", ";", "|")
_MD_SEPARATOR_ANY = re.compile(r"(?m)^[ \t]*\|?[ \t]*:?-+:?[ \t]*\|")  # a delimiter row's start
_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")
_HTML_ROW = re.compile(r"<[tT][rR]\b")
_HTML_CELL_OPEN = re.compile(r"(?i)<(t[hd])\b([^>]*)>")
_HTML_CELL_CLOSE = re.compile(r"(?i)</t[hd]\s*>")
_COLSPAN = re.compile(r"(?i)\bcolspan\s*=\s*[\"']?(\d{1,2})")
_MARKUP = " \t\r`*_\"'"
_LINK = re.compile(r"\]\(|<a\s")
_PATH = re.compile(r"https?://|(?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{1,5}$")
_SEP_LINE = re.compile(r"^sep=(.)$")
_HTML_TABLE = re.compile(r"<[tT][aA][bB][lL][eE]\b")
HEADER_ROWS = 8  # rows of an HTML table its header row is looked for among
HEADER_REACH = 10_000  # lines a Markdown table's header is looked for above a region
RECORD_LINES = 1024  # lines one CSV record may span inside a quoted field (open longer: a stray quote)
HEADER_CELL_MAX = 40  # a header's cells are names, not sentences


def secret_cells(text: str, origin: str, deadline: float | None = None) -> Iterator[Cell]:
    """Cells under secret-named columns: of a delimited file (by its suffix), Markdown tables and
    HTML tables."""
    if _suffix(origin) in DELIMITED:
        yield from _delimited(text, deadline)
    if "|" in text and _MD_SEPARATOR_ANY.search(text):
        yield from _markdown(text, deadline)
    if "<t" in text or "<T" in text:
        yield from _html(text, deadline)


def lead(text: str, lo: int, hi: int, origin: str) -> str:
    """The header a region [lo, hi) of `text` needs in front of it when it starts inside a table."""
    if lo <= 0:
        return ""
    if _suffix(origin) in DELIMITED:
        start, end = _header_line(text)
        return text[start:end] + "\n" if 0 <= end < lo else ""
    parts = []
    if "|" in text[lo : min(hi, lo + 4096)]:
        first_end = text.find("\n", lo, hi)
        if _MD_SEPARATOR.match(text[lo : hi if first_end == -1 else first_end]):
            # The region starts at the delimiter row: the header is the line above it.
            parts.append(text[text.rfind("\n", 0, lo - 1) + 1 : lo])
        else:
            parts.append(_markdown_header_above(text, lo))
    if "<td" in text[lo:hi] or "<TD" in text[lo:hi]:
        parts.append(_html_header_above(text, lo))
    return "".join(parts)


def _header_line(text: str) -> tuple[int, int]:
    """(start, end) of a delimited file's header line: its first line with content, past Excel's
    `sep=;` line and comment lines (a `#` line with delimiters is a header: `#,user,password`);
    (0, -1) when there is none."""
    pos = 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        stop = end - 1 if end > pos and text[end - 1] == "\r" else end
        line = text[pos:stop].strip()
        comment = line.startswith(("#", "//")) and not any(d in line for d in DELIMITERS)
        if line and not _SEP_LINE.match(line) and not comment:
            return pos, stop
        pos = end + 1
    return 0, -1


def _suffix(origin: str) -> str:
    name = origin.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def _wanted(names: list[str] | dict[int, str]) -> dict[int, str]:
    """The columns (by index) whose names say secret."""
    pairs = names.items() if isinstance(names, dict) else enumerate(names)
    return {i: n for i, n in pairs if n and SECRET_COLUMN.search(n)}


# ---------------------------------------------------------------- delimited files


def _delimited(text: str, deadline: float | None) -> Iterator[Cell]:
    start, stop = _header_line(text)
    if stop < 0:
        return
    hint = _SEP_LINE.match(text[:start].strip().split("\n")[-1]) if start else None
    delimiter = hint.group(1) if hint else max(DELIMITERS, key=lambda d: text.count(d, start, stop))
    if text.count(delimiter, start, stop) < 1:
        return  # one column: no table
    names = [_bare(text[a:b]) for a, b in split_fields(text, start, stop, delimiter)]
    if sum(len(name) > HEADER_CELL_MAX for name in names) * 3 > len(names):
        return  # not a header row: prose, or data without one
    # An empty name (pandas' index column, a trailing delimiter) or a long one names no secret; the
    # other columns are still read.
    wanted = _wanted([name if len(name) <= HEADER_CELL_MAX else "" for name in names])
    if not wanted:
        return
    pos, rows = text.find("\n", stop), 0
    pos = len(text) if pos == -1 else pos + 1
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        lines, line_end = 1, end
        # A quoted field may hold line breaks (RFC 4180): the record goes on while its field is
        # open, for at most RECORD_LINES lines; a field still open then began with a stray quote,
        # and the record is its own line (the rows after it stay aligned).
        quoted = '"' in text[pos:end] and quote_open(text, pos, end, delimiter, False)
        while quoted and end < len(text) and lines < RECORD_LINES:
            nxt = text.find("\n", end + 1)
            nxt = len(text) if nxt == -1 else nxt
            quoted = quote_open(text, end, nxt, delimiter, True)
            end = nxt
            lines += 1
        if quoted:
            end = line_end
        line_stop = end - 1 if end > pos and text[end - 1] == "\r" else end
        rows += 1
        check_deadline(rows, deadline)
        cells = split_fields(text, pos, line_stop, delimiter)
        for i, name in wanted.items():
            if i < len(cells):
                yield from _cell(text, *cells[i], name)
        pos = end + 1


# ---------------------------------------------------------------- Markdown


def _markdown(text: str, deadline: float | None) -> Iterator[Cell]:
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    wanted: dict[int, str] = {}
    rows = 0
    for n, line in enumerate(lines):
        if n + 1 < len(lines) and "|" in line and _MD_SEPARATOR.match(lines[n + 1]):
            wanted = _wanted([_bare(text[a:b]) for a, b in _md_cells(line, starts[n])])
            continue
        if not wanted:
            continue
        if "|" not in line or _MD_SEPARATOR.match(line):
            if "|" not in line:
                wanted = {}  # the table ended
            continue
        rows += 1
        check_deadline(rows, deadline)
        cells = _md_cells(line, starts[n])
        for i, name in wanted.items():
            if i < len(cells):
                yield from _cell(text, *cells[i], name)


def _md_cells(line: str, at: int) -> list[tuple[int, int]]:
    """A Markdown table row's cells (spans), without the outer pipes."""
    inner_lo, inner_hi = 0, len(line)
    stripped = line.strip()
    if stripped.startswith("|"):
        inner_lo = line.index("|") + 1
    if stripped.endswith("|") and len(stripped) > 1:
        inner_hi = line.rindex("|")
    out, start = [], inner_lo
    for i in range(inner_lo, inner_hi):
        if line[i] == "|" and (i == 0 or line[i - 1] != "\\"):
            out.append((at + start, at + i))
            start = i + 1
    out.append((at + start, at + inner_hi))
    return out


def _markdown_header_above(text: str, lo: int) -> str:
    """The header and separator lines of a Markdown table whose rows run on to `lo` (a line start),
    looked for at most HEADER_REACH lines up."""
    pos = lo
    for _ in range(HEADER_REACH):
        if pos <= 0:
            return ""
        start = text.rfind("\n", 0, pos - 1) + 1
        line = text[start : pos - 1]
        if "|" not in line:
            return ""
        if _MD_SEPARATOR.match(line):
            if start == 0:
                return ""
            return text[text.rfind("\n", 0, start - 1) + 1 : pos]
        pos = start
    return ""


# ---------------------------------------------------------------- HTML


def _html(text: str, deadline: float | None) -> Iterator[Cell]:
    """Rows from each `<tr` to the next one, or to its `</tr>` (HTML may leave it out). A header
    row is one of `<th>` cells, or a table's first row when a cell of it names a secret (`<td><b>
    Password</b></td>`); a row that starts with a `<th>` naming a secret gives the values beside it
    (a vertical table). `colspan` counts."""
    wanted: dict[int, str] = {}
    rows = 0
    first_row = True
    row = _HTML_ROW.search(text)
    while row is not None:
        pos = row.start()
        row = _HTML_ROW.search(text, pos + 3)  # the next row: one search, never past it
        nxt = -1 if row is None else row.start()
        stop = len(text) if nxt == -1 else nxt
        closing = _find(text, ("</tr>", "</TR>"), pos, stop)
        row_end = stop if closing == -1 else closing
        if _find(text, ("<table", "<TABLE"), pos - 200 if pos > 200 else 0, pos) != -1:
            first_row = True
        rows += 1
        check_deadline(rows, deadline)
        cells = _columns_of(text, pos, row_end)
        names = {i: _bare(text[a:b]) for i, (kind, a, b) in cells.items()}
        heads = [i for i, (kind, _a, _b) in cells.items() if kind == "th"]
        if cells and len(heads) == len(cells):
            wanted = _wanted(names)
        elif not cells:
            pass  # a row with no whole cell (`<tr>` in a script's string, a cell left open)
        elif heads == [min(cells)] and SECRET_COLUMN.search(names[heads[0]]):
            for i, (_kind, a, b) in cells.items():  # <th scope="row">Password</th><td>...</td>
                if i != heads[0]:
                    yield from _cell(text, a, b, names[heads[0]])
        elif first_row and any(SECRET_COLUMN.search(n) for n in names.values()) and _all_labels(names):
            wanted = _wanted(names)
        elif wanted:
            for i, name in wanted.items():
                if i in cells:
                    yield from _cell(text, cells[i][1], cells[i][2], name)
        first_row = False
        if _find(text, ("</table", "</TABLE"), row_end, stop) != -1:
            wanted = {}


def _columns_of(text: str, start: int, end: int) -> dict[int, tuple[str, int, int]]:
    """A row's cells by column (a cell spanning columns sits at its first): (th|td, start, end).
    A cell's content ends at its closing tag, looked for only up to the next cell's opening one
    (a row of cells left open is read in one pass)."""
    opens = list(_HTML_CELL_OPEN.finditer(text, start, end))
    out: dict[int, tuple[str, int, int]] = {}
    column = 0
    for n, m in enumerate(opens):
        limit = opens[n + 1].start() if n + 1 < len(opens) else end
        close = _HTML_CELL_CLOSE.search(text, m.end(), limit)
        if close is not None:
            out[column] = (m.group(1).lower(), m.end(), close.start())
        span = _COLSPAN.search(m.group(2))
        column += int(span.group(1)) if span else 1
    return out


def _all_labels(names: dict[int, str]) -> bool:
    """A row of labels: short names, none of them a value (a first row that is data is no header)."""
    return all(0 < len(n) <= HEADER_CELL_MAX and not any(c.isdigit() for c in n) for n in names.values())


def _find(text: str, needles: tuple[str, ...], start: int, end: int) -> int:
    """The first of `needles` in text[start:end], or -1."""
    found = [at for at in (text.find(n, start, end) for n in needles) if at != -1]
    return min(found) if found else -1


def _html_header_above(text: str, lo: int) -> str:
    """The header row (all `<th>` cells; of several, the one naming a secret, else the last) among
    the first rows of the table `lo` is in, if that table is still open at `lo`. Body rows may
    start with a `<th>` too (pandas' index)."""
    table = _HTML_TABLE.search(text, max(0, lo - LEAD_REACH), lo)
    last = None
    while table is not None:  # the last <table before lo
        last = table
        table = _HTML_TABLE.search(text, table.end(), lo)
    if last is None or _find(text, ("</table", "</TABLE"), last.end(), lo) != -1:
        return ""
    rows = list(itertools.islice(_HTML_ROW.finditer(text, last.end(), lo), HEADER_ROWS + 1))
    chosen = ""
    for n, row in enumerate(rows[:HEADER_ROWS]):
        row_end = rows[n + 1].start() if n + 1 < len(rows) else lo
        cells = _columns_of(text, row.start(), row_end)
        if not cells or not all(kind == "th" for kind, _a, _b in cells.values()):
            break  # the header rows lead the table
        close = _find(text, ("</tr>", "</TR>"), row.start(), row_end)
        chosen = text[row.start() : row_end if close == -1 else close + 5] + "\n"
        if any(SECRET_COLUMN.search(_bare(text[a:b])) for _k, a, b in cells.values()):
            break  # of several header rows (pandas' column groups), the one naming a secret
    return chosen


# ---------------------------------------------------------------- cells


def _bare(cell: str) -> str:
    """A header cell as a name: tags and markup dropped, `API Key` -> `api_key`."""
    return re.sub(r"[\s-]+", "_", re.sub(r"<[^>]*>", "", cell).strip(_MARKUP)).lower()


def _cell(text: str, a: int, b: int, name: str) -> Iterator[Cell]:
    """A cell's value without its padding, markup (backticks, emphasis, quotes) and the tags
    around it (`<span><code>...</code></span>`)."""
    while True:
        while a < b and text[a] in _MARKUP:
            a += 1
        while b > a and text[b - 1] in _MARKUP:
            b -= 1
        if a < b and text[a] == "<" and (close := text.find(">", a, b)) != -1:
            a = close + 1
        elif b > a and text[b - 1] == ">" and (open_ := text.rfind("<", a, b)) != -1:
            b = open_
        else:
            break
    # A link is no secret: `[ClientSecretCredential](https://...)`, a bare URL, a file's path.
    if b > a and not _LINK.search(text, a, b) and not _PATH.match(text, a, b):
        yield Cell(a, b, name)
