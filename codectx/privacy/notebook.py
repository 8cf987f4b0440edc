"""Jupyter notebooks read as what they hold, for the redactor.

A notebook is JSON: a cell's source and an output's text are arrays of JSON strings, one line each
(`"db.example.com:5432:prod:admin:Yw6R...\\n",`). Rules that read a line as text (a printed
`.pgpass` line, `DB_PASSWORD=...` shown by `!cat .env`) see quotes, escapes and commas around it
instead, and miss it (red team 6, H7). Two readings fix that:

- `cell_views`: each cell's strings at their own offsets with the JSON taken off (the quotes and
  commas become spaces, an escaped line break a line break), everything else blank; one view for
  the code cells' sources (read as code) and one for markdown and outputs (read as text);
- `shown_secrets`: a cell that shows a secret by its name (`os.environ["OPENAI_API_KEY"]`,
  `os.getenv("DB_PASSWORD")`, `print(api_token)`, `%env AWS_SECRET_ACCESS_KEY`, a bare
  `DB_PASSWORD`) or prints a never-send file (`!cat ~/.pgpass`) has its outputs' text masked,
  whatever the value looks like: the name is in the source, the value only in the output.

Pure functions. A whole notebook is read by a JSON scanner that keeps each string's offsets (any
layout: nbformat's one string per line, or a cell per line); a piece cut from the middle of one
(completions and chat send pieces) is read line by line, as nbformat lays it out.
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
    source: list[tuple[int, int]] = field(default_factory=list)  # each source string's content span
    outputs: list[tuple[int, int]] = field(default_factory=list)  # each output text string's span


def is_notebook(origin: str) -> bool:
    return origin.lower().endswith(".ipynb")


def cell_views(text: str) -> tuple[str, str]:
    """(the code cells' sources, the markdown cells and outputs): each `text` at the same offsets,
    the cells' strings unwrapped and everything else blank."""
    code = [" " if c != "\n" else c for c in text]
    prose = list(code)
    for cell in _cells(text):
        for spans, view in ((cell.source, code if cell.kind == "code" else prose), (cell.outputs, prose)):
            for start, end in spans:
                view[start:end] = views.unescape_line(text[start:end])
    return "".join(code), "".join(prose)


def shown_secrets(text: str) -> list[tuple[int, int]]:
    """Spans of the output text of each cell that shows a secret by its name or a never-send file."""
    out: list[tuple[int, int]] = []
    for cell in _cells(text):
        if cell.kind != "code" or not cell.outputs:
            continue
        source = "".join(_unescape(text[s:e]) for s, e in cell.source)
        if _shows_secret(source):
            out += [(s, e - 2 if text.endswith("\\n", s, e) else e) for s, e in cell.outputs]
    return [(s, e) for s, e in out if e > s and text[s:e].strip()]


def _shows_secret(source: str) -> bool:
    lines = [line for line in source.split("\n") if line.strip()]
    if not lines:
        return False
    last = lines[-1]
    shown = _SHOWS_FILE.match(last)
    if shown:
        from codectx.privacy.policy import never_send_match  # policy reads settings; imported late

        return never_send_match(shown.group("path").strip("'\"").lstrip("~/"), None) is not None
    m = _SHOWS.match(last)
    if m is None:
        return False
    name = next(v for v in m.groupdict().values() if v)
    return filters.is_password_name(name.rsplit(".", 1)[-1])


def _cells(text: str) -> list[_Cell]:
    try:
        return _scanned(text)
    except ValueError:
        return _lined(text)


# ---- a whole notebook: its JSON scanned with offsets


def _scanned(text: str) -> list[_Cell]:
    """The cells of a whole notebook (ValueError when `text` is not one JSON document)."""
    scan = _Scanner(text)
    root = scan.value()
    scan.end()
    cells = root.get("cells") if isinstance(root, dict) else None
    if not isinstance(cells, list):
        raise ValueError("no cells")
    out = []
    for raw in cells:
        if not isinstance(raw, dict):
            continue
        kind = raw.get("cell_type")
        cell = _Cell(kind.text if isinstance(kind, _Str) else "code", _spans(raw.get("source")))
        for output in raw.get("outputs") or []:
            if not isinstance(output, dict):
                continue
            cell.outputs += _spans(output.get("text")) + _spans(output.get("traceback"))
            data = output.get("data")
            if isinstance(data, dict):
                for mime, value in data.items():
                    if mime.startswith("text/"):
                        cell.outputs += _spans(value)
        out.append(cell)
    return out


@dataclass(frozen=True)
class _Str:
    text: str  # decoded
    start: int  # the content's span in the file (inside the quotes)
    end: int


def _spans(value: object) -> list[tuple[int, int]]:
    items = value if isinstance(value, list) else [value]
    return [(v.start, v.end) for v in items if isinstance(v, _Str)]


class _Scanner:
    """JSON values with each string's offsets: objects as dicts, arrays as lists, strings as _Str."""

    _NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
    _STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
    _SPACE = re.compile(r"[ \t\r\n]*")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def end(self) -> None:
        self._skip()
        if self.pos != len(self.text):
            raise ValueError("text after the document")

    def value(self, depth: int = 0) -> object:
        if depth > 64:
            raise ValueError("too deep")
        self._skip()
        c = self.text[self.pos : self.pos + 1]
        if c == "{":
            return self._object(depth)
        if c == "[":
            return self._array(depth)
        if c == '"':
            return self._string()
        for word, value in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return value
        m = self._NUMBER.match(self.text, self.pos)
        if m is None or m.end() == self.pos:
            raise ValueError(f"no JSON value at {self.pos}")
        self.pos = m.end()
        return float(m.group())

    def _object(self, depth: int) -> dict[str, object]:
        out: dict[str, object] = {}
        self.pos += 1
        if self._peek() == "}":
            self.pos += 1
            return out
        while True:
            self._skip()
            key = self._string()
            self._expect(":")
            out[key.text] = self.value(depth + 1)
            if self._next_of(",}") == "}":
                return out

    def _array(self, depth: int) -> list[object]:
        out: list[object] = []
        self.pos += 1
        if self._peek() == "]":
            self.pos += 1
            return out
        while True:
            out.append(self.value(depth + 1))
            if self._next_of(",]") == "]":
                return out

    def _string(self) -> _Str:
        m = self._STRING.match(self.text, self.pos)
        if m is None:
            raise ValueError(f"no JSON string at {self.pos}")
        self.pos = m.end()
        return _Str(_unescape(m.group(1)), m.start(1), m.end(1))

    def _skip(self) -> None:
        self.pos = self._SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def _peek(self) -> str:
        self._skip()
        return self.text[self.pos : self.pos + 1]

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise ValueError(f"expected {char!r} at {self.pos}")
        self.pos += 1

    def _next_of(self, chars: str) -> str:
        c = self._peek()
        if not c or c not in chars:
            raise ValueError(f"expected one of {chars!r} at {self.pos}")
        self.pos += 1
        return c


# ---- a piece of one: nbformat's layout, line by line


def _lined(text: str) -> list[_Cell]:
    """The cells a piece of a notebook holds, read by its layout (one string per line, keys in
    order); a piece may start inside an array, whose strings then count as output text."""
    cells = [_Cell()]
    key, pos = "?", 0
    for line in text.split("\n"):
        kind = _CELL_TYPE.match(line)
        array = _KEY_ARRAY.match(line)
        string = _STRING_LINE.match(line) if key else None
        if kind:
            cells.append(_Cell(kind.group(1)))
            key = ""
        elif array:
            key = array.group(1)
        elif string:
            start = pos + len(string.group(1)) + 1
            span = (start, start + len(string.group(2)))
            if key == "source":
                cells[-1].source.append(span)
            elif key in _TEXT_KEYS or key == "?":
                cells[-1].outputs.append(span)
        elif key and line.strip().startswith("]"):
            key = ""
        pos += len(line) + 1
    return cells


def _unescape(content: str) -> str:
    def one(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u") and len(c) == 5:
            return chr(int(c[1:], 16))
        return {"n": "\n", "t": "\t", "r": "", "b": "", "f": ""}.get(c, c)

    return _ESCAPE.sub(one, content)
