"""The cells of tables, read under the names of their columns: CSV and TSV files, Markdown and
HTML tables.

A `users.csv` whose header says `password`, a Markdown table of staging logins, a notebook's
HTML output of a data frame: each names its secret only in the header row, far from the value
(red team 3 sent a notebook's `<td>` password). `secret_cells` pairs each cell of a column whose
name says secret (sqlrows.SECRET_COLUMN) with that name; the redactor judges `name = "value"`
with its assignment rules, as for SQL rows. `lead` gives a region that starts inside a table the
header it needs in front (a request may send rows far below it).

Linear: one pass over the lines, each cell split once; the caller's deadline is checked every few
hundred rows. Pure functions.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

from codectx.privacy.errors import ScanTimeout
from codectx.privacy.sqlrows import CHECK_EVERY, SECRET_COLUMN, Cell

DELIMITED = {".csv": ",", ".tsv": "\t", ".psv": "|"}
_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_HTML_CELL = re.compile(r"(?is)<(t[hd])\b[^>]*>(.*?)</t[hd]>")
_MARKUP = " \t`*_\"'"
_LINK = re.compile(r"\]\(|<a\s")
HEADER_REACH = 10_000  # lines a Markdown table's header is looked for above a region


def secret_cells(text: str, origin: str, deadline: float | None = None) -> Iterator[Cell]:
    """Cells under secret-named columns: of a delimited file (by its suffix), Markdown tables and
    HTML tables."""
    delimiter = DELIMITED.get(_suffix(origin))
    if delimiter is not None:
        yield from _delimited(text, delimiter, deadline)
    if "|" in text and "---" in text:
        yield from _markdown(text, deadline)
    if "<th" in text or "<TH" in text:
        yield from _html(text, deadline)


def lead(text: str, lo: int, hi: int, origin: str) -> str:
    """The header a region [lo, hi) of `text` needs in front of it when it starts inside a table."""
    if lo <= 0:
        return ""
    if _suffix(origin) in DELIMITED:
        first = text.find("\n")
        return text[: first + 1] if 0 <= first < lo else ""
    parts = []
    if "|" in text[lo : min(hi, lo + 4096)] and "---" in text[:lo]:
        parts.append(_markdown_header_above(text, lo))
    if "<td" in text[lo:hi] or "<TD" in text[lo:hi]:
        parts.append(_html_header_above(text, lo))
    return "".join(parts)


def _suffix(origin: str) -> str:
    name = origin.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return name[dot:] if dot > 0 else ""


def _wanted(names: list[str]) -> dict[int, str]:
    return {i: n for i, n in enumerate(names) if n and SECRET_COLUMN.search(n)}


def _check(rows: int, deadline: float | None) -> None:
    if rows % CHECK_EVERY == 0 and deadline is not None and time.monotonic() > deadline:
        raise ScanTimeout("the secret scan ran past its time limit")


# ---------------------------------------------------------------- delimited files


def _delimited(text: str, delimiter: str, deadline: float | None) -> Iterator[Cell]:
    wanted: dict[int, str] | None = None
    pos, rows = 0, 0
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        cells = _split(text, pos, end, delimiter)
        if wanted is None:
            if any(text[a:b].strip() for a, b in cells):
                wanted = _wanted([_bare(text[a:b]) for a, b in cells])
                if not wanted:
                    return
        else:
            rows += 1
            _check(rows, deadline)
            for i, name in wanted.items():
                if i < len(cells):
                    yield from _cell(text, *cells[i], name)
        pos = end + 1


def _split(text: str, start: int, end: int, delimiter: str) -> list[tuple[int, int]]:
    """A line's fields (spans), a double-quoted field's delimiters kept inside it."""
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
        _check(rows, deadline)
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
    """Rows from each `<tr` to the next one, or to its `</tr>` (HTML may leave it out)."""
    wanted: dict[int, str] = {}
    rows = 0
    pos = _find(text, ("<tr", "<TR"), 0, len(text))
    while pos != -1:
        nxt = _find(text, ("<tr", "<TR"), pos + 3, len(text))
        stop = len(text) if nxt == -1 else nxt
        closing = _find(text, ("</tr>", "</TR>"), pos, stop)
        row_end = stop if closing == -1 else closing
        cells = list(_HTML_CELL.finditer(text, pos, row_end))
        if cells and all(c.group(1).lower() == "th" for c in cells):
            wanted = _wanted([_bare(c.group(2)) for c in cells])
        elif wanted:
            rows += 1
            _check(rows, deadline)
            for i, name in wanted.items():
                if i < len(cells):
                    yield from _cell(text, cells[i].start(2), cells[i].end(2), name)
        if _find(text, ("</table", "</TABLE"), row_end, stop) != -1:
            wanted = {}
        pos = nxt


def _find(text: str, needles: tuple[str, ...], start: int, end: int) -> int:
    """The first of `needles` in text[start:end], or -1."""
    found = [at for at in (text.find(n, start, end) for n in needles) if at != -1]
    return min(found) if found else -1


def _html_header_above(text: str, lo: int) -> str:
    """The last header row (`<tr>` of `<th>` cells) above `lo`, if no table closed after it."""
    at = text.rfind("<th", 0, lo)
    if at == -1:
        return ""
    row_start = text.rfind("<tr", 0, at)
    row_end = text.find("</tr>", at, lo)
    if row_start == -1 or row_end == -1 or "</table" in text[row_end:lo].lower():
        return ""
    return text[row_start : row_end + 5] + "\n"


# ---------------------------------------------------------------- cells


def _bare(cell: str) -> str:
    return re.sub(r"<[^>]*>", "", cell).strip(_MARKUP).lower()


def _cell(text: str, a: int, b: int, name: str) -> Iterator[Cell]:
    """A cell's value without its padding and markup (backticks, emphasis, quotes)."""
    while a < b and text[a] in _MARKUP:
        a += 1
    while b > a and text[b - 1] in _MARKUP:
        b -= 1
    # A link is no secret: `[ClientSecretCredential](https://...)`, a bare URL.
    if b > a and not _LINK.search(text, a, b) and not text.startswith(("http://", "https://"), a):
        yield Cell(a, b, name)
