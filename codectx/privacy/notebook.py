"""Jupyter notebooks read as what they hold, for the redactor.

A notebook is JSON: a cell's source and an output's text are arrays of JSON strings, one line each
(`"db.example.com:5432:prod:admin:Yw6R...\\n",`). Rules that read a line as text (a printed
`.pgpass` line, `DB_PASSWORD=...` shown by `!cat .env`) see quotes, escapes and commas around it
instead, and miss it (red team 6, H7). `read` gives two readings:

- two views of the file at the same offsets, with the JSON taken off each cell's strings (quotes
  and commas become spaces, an escaped line break a line break) and everything else blank: the
  code cells' sources (read as code), and the markdown cells and outputs (read as text);
- the spans of outputs that show a secret: a cell that prints a secret by its name
  (`print(db_password)`, `print(f"{api_token}")`, `print(os.getenv("DB_PASSWORD"))`,
  `!echo $GITHUB_TOKEN`, `%env`, `!env`), prints a never-send file (`!cat ~/.pgpass`,
  `!head -n 5 .env`, `print(open("/home/me/.vault-token").read())`), or ends with an expression
  over a secret's lookup or its name (`os.environ["OPENAI_API_KEY"]`, `int(os.getenv("PW"))`,
  `DB_PASSWORD`), whose value (or error) Jupyter then displays. Those outputs are masked whatever
  the value looks like: the name is in the source, the value only in the output.

A whole notebook is read by a JSON scanner that keeps each string's offsets (any layout: nbformat's
one string per line, or a cell per line); a piece cut from the middle of one (completions and chat
send pieces) is read line by line, as nbformat lays it out. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from codectx.privacy import filters, views

_KEY_ARRAY = re.compile(r'^[ \t]*"([^"\\]+)":[ \t]*\[[ \t\r]*$')  # `"source": [`
_CELL_TYPE = re.compile(r'^[ \t]*"cell_type":[ \t]*"(\w+)"')
_STRING_LINE = re.compile(r'^([ \t]*)"((?:[^"\\]|\\.)*)"(,?)[ \t\r]*$')
_LONGEST_LINE = 500  # a source line longer than this is not read for what it shows

# A cell's line that prints a value by its name, wherever it stands in the cell.
_PRINT = re.compile(r"\b(?:print|pprint|display|write|info|debug|warning)\s*\((?P<args>[^\n]*)\)")
# A secret's lookup inside such a line: print(os.getenv("DB_PASSWORD")).
_LOOKUP_IN = re.compile(r"""(?:environ(?:\.get)?\s*[\[(]|getenv\s*\()\s*["']([\w.-]+)["']""")
_ASSIGNMENT = re.compile(r"""\s*[\w.\[\]'"]+\s*(?::[^=\n]*)?=[^=]""")  # `x = ...`, `os.environ["K"] = ...`
# A file read in a line: print(open("/home/me/.vault-token").read()), Path("~/.pgpass").read_text().
_READ_FILE = re.compile(r"""\b(?:open|Path)\s*\(\s*[rfbu]?["']([^"'\n]+)["']""")
_PLAIN_STRING = re.compile(r"""(["'])[^"'{\n]*\1""")  # a literal without `{...}`: no name in it
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_ECHO = re.compile(
    r"^\s*(?:!\s*echo\b[^\n]*?\$\{?(?P<echo>\w+)|%env\s+(?P<magic>\w+)\s*$|!\s*printenv\s+(?P<env>\w+))"
)
_ALL_ENV = re.compile(r"^\s*(?:!\s*(?:env|printenv|set)|%env)\s*$")
_SHOWS_FILE = re.compile(
    r"^\s*[!%]\s*(?:cat|pycat|type|more|less|head|tail|bat)\s+(?:-[nc]\s+\d+\s+|-\S+\s+)*(?P<path>[^\s;|&]+)"
)
# A cell's last line whose value Jupyter displays: a lookup of a name, or the name.
_LOOKUP = re.compile(
    r"""^\s*(?:
        (?:os\.)?environ(?:\.get)?\s*[\[(]\s*["'](?P<env>[\w.-]+)["'][^=\n]*[\])]
      | (?:os\.)?getenv\s*\(\s*["'](?P<get>[\w.-]+)["'][^=\n]*\)
      | (?P<bare>[A-Za-z_][\w.]*)
    )\s*(?:;\s*)?(?:\#[^\n]*)?$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Reading:
    code: str  # the code cells' sources, at the file's offsets, the rest blank
    prose: str  # the markdown cells and the outputs, likewise
    shown: list[tuple[int, int]]  # outputs that show a secret


@dataclass
class _Cell:
    kind: str = "code"
    source: list[tuple[int, int]] = field(default_factory=list)  # each source string's content span
    outputs: list[tuple[int, int]] = field(default_factory=list)  # each output text string's span


def is_notebook(origin: str) -> bool:
    return origin.lower().endswith(".ipynb")


def read(text: str, refused: Callable[[str], bool]) -> Reading:
    """`text` (a notebook or a piece of one) read as cells; `refused(path)`: a never-send file."""
    cells = _cells(text)
    spans = sorted(
        [(s, e, cell.kind == "code") for cell in cells for s, e in cell.source]
        + [(s, e, False) for cell in cells for s, e in cell.outputs]
    )
    code: list[str] = []
    prose: list[str] = []
    pos = 0
    for start, end, is_code in spans:
        if start < pos:
            continue
        between = _blank(text[pos:start])
        plain, blank = views.unescape_line(text[start:end]), _blank(text[start:end])
        code += [between, plain if is_code else blank]
        prose += [between, blank if is_code else plain]
        pos = end
    code.append(_blank(text[pos:]))
    prose.append(_blank(text[pos:]))
    shown = [span for cell in cells if _shows_secret(cell, text, refused) for span in _text_of(cell, text)]
    return Reading("".join(code), "".join(prose), shown)


def _blank(part: str) -> str:
    return "\n".join(" " * len(line) for line in part.split("\n"))


def _text_of(cell: _Cell, text: str) -> list[tuple[int, int]]:
    """The cell's output strings without a final escaped line break, those that hold anything."""
    out = [(s, e - 2 if text.startswith("\\n", e - 2) and e - 2 >= s else e) for s, e in cell.outputs]
    return [(s, e) for s, e in out if text[s:e].strip()]


def _shows_secret(cell: _Cell, text: str, refused: Callable[[str], bool]) -> bool:
    if cell.kind != "code" or not cell.outputs:
        return False
    source = "".join(_decoded(text[s:e]) for s, e in cell.source)
    lines = [line for line in source.split("\n") if line.strip() and len(line) <= _LONGEST_LINE]
    for n, line in enumerate(lines):
        printed = _PRINT.search(line)
        shown_here = printed is not None or n == len(lines) - 1  # printed, or displayed as the result
        if printed:
            args = printed.group("args")
            names = _NAME.findall(_PLAIN_STRING.sub(" ", args)) + _LOOKUP_IN.findall(args)
            if any(_secret_name(name) for name in names):
                return True
        if shown_here and any(refused(_relative(path)) for path in _READ_FILE.findall(line)):
            return True
        # The result (or the error) of an expression over a secret: int(os.environ["DB_PASSWORD"]).
        last_expression = n == len(lines) - 1 and not _ASSIGNMENT.match(line)
        if last_expression and any(_secret_name(name) for name in _LOOKUP_IN.findall(line)):
            return True
        echoed = _ECHO.match(line)
        if echoed and _secret_name(next(v for v in echoed.groupdict().values() if v)):
            return True
        if _ALL_ENV.match(line):
            return True
        shown = _SHOWS_FILE.match(line)
        if shown and refused(_relative(shown.group("path").strip("'\""))):
            return True
    last = _LOOKUP.match(lines[-1]) if lines else None
    return last is not None and _secret_name(next(v for v in last.groupdict().values() if v))


def _relative(path: str) -> str:
    """A path a cell names, as the never-send patterns read one (`~/.pgpass`, `/home/me/.env`)."""
    return path.lstrip("~").lstrip("/")


def _secret_name(name: str) -> bool:
    return filters.is_password_name(name.rsplit(".", 1)[-1])


def _cells(text: str) -> list[_Cell]:
    try:
        return _scanned(text)
    except ValueError:
        return _lined(text)


# ---- a whole notebook: its JSON scanned with offsets


def _scanned(text: str) -> list[_Cell]:
    """The cells of a whole notebook (ValueError when `text` is not one)."""
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
        outputs = raw.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            if not isinstance(output, dict):
                continue
            for key in ("text", "traceback", "evalue"):  # a stream, an error's message and trace
                cell.outputs += _spans(output.get(key))
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
        return _Str(_decoded(m.group(1)), m.start(1), m.end(1))

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


def _decoded(content: str) -> str:
    """A JSON string's content as the characters it stands for (as written, if it is no string)."""
    try:
        value = json.loads(f'"{content}"')
    except ValueError:
        return content
    return value if isinstance(value, str) else content


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
            elif key in ("text", "traceback", "?") or key.startswith("text/"):
                cells[-1].outputs.append(span)
        elif key and line.strip().startswith("]"):
            key = ""
        pos += len(line) + 1
    return cells
