"""Jupyter notebooks read as what they hold, for the redactor.

A notebook is JSON: a cell's source and an output's text are arrays of JSON strings, one line each
(`"db.example.com:5432:prod:admin:Yw6R...\\n",`). Rules that read a line as text (a printed
`.pgpass` line, `DB_PASSWORD=...` shown by `!cat .env`) see quotes, escapes and commas around it
instead, and miss it (red team 6, H7). Two readings fix that:

- `cell_views`: each string line at the same offsets with its JSON taken off (the quotes, the
  escapes and the trailing `\\n",` become spaces), everything else blank; one view for the code
  cells' sources (read as code) and one for markdown and outputs (read as text);
- `shown_secrets`: a cell that shows a secret by its name (`os.environ["OPENAI_API_KEY"]`,
  `os.getenv("DB_PASSWORD")`, `print(api_token)`, `%env AWS_SECRET_ACCESS_KEY`, a bare
  `DB_PASSWORD`) or prints a never-send file (`!cat ~/.pgpass`) has its outputs' text masked,
  whatever the value looks like: the name is in the source, the value only in the output.

Pure functions over the file's text or a piece of it (nbformat writes one string per line, keys in
order, outputs before the source); a notebook written otherwise is read as plain JSON, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codectx.privacy import filters, views

_KEY_ARRAY = re.compile(r'^[ \t]*"([^"\\]+)":[ \t]*\[[ \t]*$')  # `"source": [`
_CELL_TYPE = re.compile(r'^[ \t]*"cell_type":[ \t]*"(\w+)"')
_STRING_LINE = re.compile(r'^([ \t]*)"((?:[^"\\]|\\.)*)"(,?)[ \t]*$')
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_TEXT_KEYS = frozenset({"text", "text/plain", "text/markdown", "text/html", "text/latex", "traceback"})

# The last line of a cell that shows a value by its name.
_SHOWS = re.compile(
    r"""^\s*(?:
        (?:os\.)?environ(?:\.get)?\s*[\[(]\s*["'](?P<env>[\w.-]+)["']\s*(?:,[^=]*)?[\])]
      | (?:os\.)?getenv\s*\(\s*["'](?P<get>[\w.-]+)["']\s*(?:,[^=]*)?\)
      | print\s*\(\s*(?:f?["'][^"']*["']\s*,\s*)?(?P<printed>[A-Za-z_][\w.]*)\s*\)
      | %env\s+(?P<magic>\w+)
      | !\s*echo\s+["']?\$\{?(?P<echo>\w+)\}?["']?
      | (?P<bare>[A-Za-z_][\w.]*)
    )\s*;?\s*(?:\#.*)?$""",
    re.VERBOSE,
)
_SHOWS_FILE = re.compile(r"^\s*!\s*(?:cat|type|more|less|head|tail|bat)\s+(?:-\S+\s+)*(?P<path>\S+)")


@dataclass
class _Cell:
    kind: str = "code"
    source: list[str] = field(default_factory=list)  # the source's lines, unescaped
    outputs: list[tuple[int, int]] = field(default_factory=list)  # each output line's content span


def is_notebook(origin: str) -> bool:
    return origin.lower().endswith(".ipynb")


def cell_views(text: str) -> tuple[str, str]:
    """(the code cells' sources, the markdown cells and outputs): each `text` at the same offsets,
    its string lines unwrapped and everything else blank."""
    code: list[str] = []
    prose: list[str] = []
    # A piece cut from the middle of a notebook may start inside an array: its lines read as text.
    key, kind = "?", "code"
    for line in text.split("\n"):
        blank = " " * len(line)
        plain = _unwrapped(line) if key else None
        if plain is not None:
            is_code = key == "source" and kind == "code"
            code.append(plain if is_code else blank)
            prose.append(blank if is_code else plain)
            continue
        code.append(blank)
        prose.append(blank)
        kind, key = _track(line, kind, key)
    return "\n".join(code), "\n".join(prose)


def shown_secrets(text: str) -> list[tuple[int, int]]:
    """Spans of the output text of each cell that shows a secret by its name or a never-send file."""
    out: list[tuple[int, int]] = []
    cell = _Cell()
    key, pos = "?", 0
    for line in text.split("\n"):
        kind_match = _CELL_TYPE.match(line)
        if kind_match:
            out += _judged(cell)
            cell = _Cell(kind_match.group(1))
        elif key:
            m = _STRING_LINE.match(line)
            if m:
                start = pos + len(m.group(1)) + 1
                content = m.group(2)
                if key == "source":
                    cell.source.append(_unescape(content))
                elif key in _TEXT_KEYS and content.strip():
                    end = start + len(content) - (2 if content.endswith("\\n") else 0)
                    if end > start:
                        cell.outputs.append((start, end))
        _, key = _track(line, cell.kind, key)
        pos += len(line) + 1
    return out + _judged(cell)


def _judged(cell: _Cell) -> list[tuple[int, int]]:
    if cell.kind != "code" or not cell.outputs:
        return []
    lines = [line for line in "".join(cell.source).split("\n") if line.strip()]
    if not lines:
        return []
    last = lines[-1]
    shown = _SHOWS_FILE.match(last)
    if shown:
        from codectx.privacy.policy import never_send_match  # policy reads settings; imported late

        path = shown.group("path").strip("'\"")
        return cell.outputs if never_send_match(path.lstrip("~/"), None) else []
    m = _SHOWS.match(last)
    if m is None:
        return []
    name = next(v for v in m.groupdict().values() if v)
    return cell.outputs if filters.is_password_name(name.rsplit(".", 1)[-1]) else []


def _track(line: str, kind: str, key: str) -> tuple[str, str]:
    """The cell type and the string array being read, after `line`."""
    m = _CELL_TYPE.match(line)
    if m:
        return m.group(1), ""
    m = _KEY_ARRAY.match(line)
    if m:
        return kind, m.group(1)
    if key and line.strip().startswith("]"):
        return kind, ""
    return kind, key


def _unwrapped(line: str) -> str | None:
    """A JSON string line's text at the same offsets, or None when `line` is no string line."""
    m = _STRING_LINE.match(line)
    if m is None:
        return None
    indent, content, comma = m.groups()
    trail = line[len(indent) + len(content) + 2 + len(comma) :]
    # Escaped quotes read as quotes (opening ` "`, closing `" `), `\\n` as a line break: same offsets.
    return f"{indent} {views.unescape_line(content)} {' ' * len(comma)}{trail}"


def _unescape(content: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u") and len(c) == 5:
            return chr(int(c[1:], 16))
        return {"n": "\n", "t": "\t", "r": ""}.get(c, c)

    return _ESCAPE.sub(one, content)
