"""Chunking: a parsed file becomes function-level, size-bounded chunks.

One chunk per function and method, one per class head (the class line, its
docstring and fields up to the first method). Code between definitions forms
chunks of kind "module" (or of the class's kind, inside a class). Chunks
cover whole lines, and a definition's chunk starts at its leading comment.

Sizes are bounded the way cAST does it: the budget counts non-whitespace
characters (`settings.index.chunk_max_chars`). A definition over the budget
is split at its children's boundaries, recursively; every piece after the
first carries the definition's signature as a header line in `text`, while
its start/end lines and bytes are the piece's own. Small neighbouring
statements merge up to the budget; definitions themselves are never merged,
so each keeps its own symbol.

Text files (Markdown, YAML, TOML, JSON, ...) go through `chunk_text`: line
windows up to the budget; Markdown starts a new chunk at each heading.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass

from codectx.indexer.model import Chunk
from codectx.indexer.parsing.grammar import (
    SPECS,
    DefInfo,
    LangSpec,
    Node,
    classify_memo,
    holds_methods,
    last_line,
    leading_comment,
    python_docstring,
    signature_of,
)

_TRIVIAL = re.compile(r"[\s{}\[\]();,]+|\bend\b")
# Class-likes that are chunks of their own; the rest (type aliases, macros) stay with module code.
_OWN_CHUNK_KINDS = frozenset({"class", "interface", "struct", "enum", "trait", "impl", "module", "namespace"})
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_FENCE = re.compile(r"^\s*(```|~~~)")


def _is_trivia(node: Node) -> bool:
    """Comments and Rust `#[...]` attributes: they belong to the definition that follows."""
    return "comment" in node.type or node.type == "attribute_item"


def _is_trivial(text: str) -> bool:
    rest = text
    while True:  # peel whitespace and brackets off both ends (the common case never loops long)
        peeled = rest.strip().strip("{}[]();,")
        if peeled == rest:
            break
        rest = peeled
    if not rest:
        return True
    if "end" not in rest:
        return False  # it starts and ends with something that is not trivial
    return not _TRIVIAL.sub("", rest)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


class SourceText:
    """A file's text as lines, with byte offsets and non-whitespace weights per line."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", errors="surrogatepass")
        self.lines = text.split("\n")
        # Byte offset of each line start, and running non-whitespace counts for `weight`.
        if len(self.data) == len(text):
            sizes = [len(line) + 1 for line in self.lines]
        else:
            sizes = [len(line.encode("utf-8", errors="surrogatepass")) + 1 for line in self.lines]
        self.starts: list[int] = [0, *itertools.accumulate(sizes)]
        self.starts[-1] = len(self.data) + 1
        weights = [
            len(ln) - ln.count(" ") - ln.count("\t") - ln.count("\r") if ln else 0 for ln in self.lines
        ]
        self.prefix: list[int] = [0, *itertools.accumulate(weights)]

    def weight(self, a: int, b: int) -> int:
        """Non-whitespace characters on lines a..b."""
        return self.prefix[b + 1] - self.prefix[a]

    def span(self, a: int, b: int) -> tuple[str, int, int]:
        """Text of lines a..b (no final newline) and its byte offsets."""
        start = self.starts[a]
        end = min(self.starts[b + 1] - 1, len(self.data))
        return "\n".join(self.lines[a : b + 1]), start, end


@dataclass(frozen=True)
class _Owner:
    """Who the code in a piece belongs to; pieces not starting at `line` get `signature` as a header."""

    kind: str
    symbol: str
    qualname: str
    signature: str
    doc: str
    line: int
    bare_head_skipped: bool = False


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    node: Node
    info: DefInfo | None
    doc: str = ""


class _Chunker:
    def __init__(
        self,
        path: str,
        language: str,
        src: SourceText,
        budget: int,
        memo: dict[int, DefInfo | None] | None = None,
    ) -> None:
        self.memo = memo
        self.path = path
        self.language = language
        self.spec: LangSpec = SPECS.get(language, LangSpec())  # text files have no node tables
        self.src = src
        self.budget = budget
        self.chunks: list[Chunk] = []

    # -- output ----------------------------------------------------------------
    def emit(self, owner: _Owner, a: int, b: int) -> None:
        lines = self.src.lines
        while a <= b and not lines[a].strip():
            a += 1
        while b >= a and not lines[b].strip():
            b -= 1
        if b < a:
            return
        if self.src.weight(a, b) > self.budget and self._has_long_line(a, b):
            if a == b:
                self.long_line(owner, a)
            else:
                self.lines(owner, a, b)  # each line alone or in windows; long ones cut below
            return
        text, start_byte, end_byte = self.src.span(a, b)
        self.add(owner, a, b, text, start_byte, end_byte)

    def _has_long_line(self, a: int, b: int) -> bool:
        return any(self.src.weight(i, i) > self.budget for i in range(a, b + 1))

    def long_line(self, owner: _Owner, line: int) -> None:
        """One line over the budget (minified code, data): pieces of `budget` characters each."""
        text = self.src.lines[line]
        start = self.src.starts[line]
        ascii_only = text.isascii()
        for i in range(0, len(text), self.budget):
            piece = text[i : i + self.budget]
            size = len(piece) if ascii_only else len(piece.encode("utf-8", errors="surrogatepass"))
            self.add(owner, line, line, piece, start, start + size)
            start += size

    def add(self, owner: _Owner, a: int, b: int, text: str, start_byte: int, end_byte: int) -> None:
        if _is_trivial(text):
            return  # a lone closing brace or `end` is not worth a chunk
        if owner.bare_head_skipped and _is_trivial(text.replace(self.src.lines[owner.line], "", 1)):
            return  # `namespace x {` or `impl Foo {` alone says nothing its members do not
        if a > owner.line and owner.signature:
            text = owner.signature + "\n" + text
        self.chunks.append(
            Chunk(
                path=self.path,
                language=self.language,
                kind=owner.kind,
                symbol=owner.symbol,
                qualname=owner.qualname,
                signature=owner.signature,
                doc=owner.doc if a <= owner.line + 1 or not owner.signature else "",
                start_line=a,
                end_line=b,
                start_byte=start_byte,
                end_byte=end_byte,
                text=text,
                content_hash=content_hash(text),
            )
        )

    # -- structure ---------------------------------------------------------------
    def units(self, children: list[Node], floor: int, allow_defs: bool) -> list[_Unit]:
        out: list[_Unit] = []
        # End of the last unit that is not trivia: kept as we go (linear in the children). The
        # units popped below start after it, so they are never the solid one.
        solid_end = floor - 1
        for child in children:
            start, end = child.start_point[0], last_line(child)
            info = classify_memo(self.memo, child, self.language) if allow_defs else None
            if info is not None and self._own_chunk(info):
                # The doc may sit inside the previous node (grammars attach comments oddly); the
                # span never reaches back into it.
                first, doc = leading_comment(self.src.lines, start, self.spec, floor)
                first = max(first, solid_end + 1)
                if self.spec.python_docstring:
                    doc = python_docstring(info.body) or doc
                # Comments now inside the definition's span leave the list of plain units.
                while out and out[-1].info is None and out[-1].start >= first:
                    out.pop()
                out.append(_Unit(min(first, start), end, child, info, doc))
                solid_end = end
            else:
                out.append(_Unit(start, end, child, None))
                if not _is_trivia(child):
                    solid_end = end
        return out

    @staticmethod
    def _own_chunk(info: DefInfo) -> bool:
        if info.function:
            return info.body is not None
        if info.kind in ("module", "namespace", "impl") and info.body is None:
            return False  # `mod net;` declares, the file defines
        return info.container or info.kind in _OWN_CHUNK_KINDS

    def region(
        self,
        children: list[Node],
        a: int,
        b: int,
        owner: _Owner,
        scope: tuple[str, ...],
        in_class: bool,
        allow_defs: bool,
    ) -> None:
        """Chunk lines a..b whose syntax is `children`: definitions apart, the rest grouped by budget."""
        units = self.units(children, a, allow_defs)
        group: list[_Unit] = []
        cursor = a
        for unit in units:
            if unit.info is None:
                group.append(unit)
                continue
            self.group(group, cursor, unit.start - 1, owner)
            group = []
            self.definition(unit, scope, in_class)
            cursor = max(cursor, unit.end + 1)
        self.group(group, cursor, b, owner)

    def group(self, units: list[_Unit], a: int, b: int, owner: _Owner) -> None:
        """Lines a..b of plain code: one piece if it fits, else pieces at unit boundaries."""
        if b < a:
            return
        if self.src.weight(a, b) <= self.budget:
            self.emit(owner, a, b)
            return
        units = [u for u in units if u.end >= a and u.start <= b]
        if not units:
            self.lines(owner, a, b)
            return
        piece_start = a
        for i, unit in enumerate(units):
            end = b if i == len(units) - 1 else unit.end
            if self.src.weight(piece_start, end) <= self.budget:
                continue
            prev_end = units[i - 1].end if i > 0 else a - 1
            if prev_end >= piece_start:
                self.emit(owner, piece_start, prev_end)
                piece_start = prev_end + 1
            if self.src.weight(piece_start, end) > self.budget:
                self.oversized(unit.node, piece_start, end, owner)
                piece_start = end + 1
        if piece_start <= b:
            self.emit(owner, piece_start, b)

    def oversized(self, node: Node, a: int, b: int, owner: _Owner) -> None:
        """One node alone over the budget: split at its children, or by lines when it has none."""
        children = [c for c in node.named_children if last_line(c) >= a and c.start_point[0] <= b]
        multi = len({c.start_point[0] for c in children}) > 1
        if multi:
            self.group([_Unit(c.start_point[0], last_line(c), c, None) for c in children], a, b, owner)
        else:
            self.lines(owner, a, b)

    def lines(self, owner: _Owner, a: int, b: int) -> None:
        piece_start = a
        for line in range(a, b + 1):
            if line > piece_start and self.src.weight(piece_start, line) > self.budget:
                self.emit(owner, piece_start, line - 1)
                piece_start = line
        self.emit(owner, piece_start, b)

    def definition(self, unit: _Unit, scope: tuple[str, ...], in_class: bool) -> None:
        info = unit.info
        assert info is not None
        sig = signature_of(info, self.src.data)
        qual = info.qualname(scope)
        a, b = unit.start, unit.end
        sig_line = info.node.start_point[0]
        if info.function:
            kind = "method" if in_class or info.scope else "function"
            owner = _Owner(kind, info.name, qual, sig, unit.doc, sig_line)
            body = info.body
            if self.src.weight(a, b) <= self.budget or body is None:
                self.emit(owner, a, b)
                return
            self.group(
                [_Unit(c.start_point[0], last_line(c), c, None) for c in body.named_children], a, b, owner
            )
            return
        if info.transparent:
            owner = _Owner("module", info.name, info.name, sig, unit.doc, sig_line, bare_head_skipped=True)
            children = info.body.named_children if info.body is not None else []
            self.region(children, a, b, owner, scope, in_class=in_class, allow_defs=True)
            return
        owner = _Owner(
            info.kind, info.name, qual, sig, unit.doc, sig_line, bare_head_skipped=info.kind == "impl"
        )
        children = info.body.named_children if info.body is not None else info.node.named_children
        if info.container:
            inner = (*scope, *info.scope, info.name)
            self.region(children, a, b, owner, inner, holds_methods(info, self.language), allow_defs=True)
        else:
            self.region(children, a, b, owner, scope, in_class=False, allow_defs=False)


def chunk_tree(
    path: str,
    language: str,
    src: SourceText,
    root: Node,
    budget: int,
    memo: dict[int, DefInfo | None] | None = None,
) -> list[Chunk]:
    """Chunks of a file parsed by tree-sitter (any language in grammar.SPECS); `memo` shares
    `classify` answers with the symbol extractor (grammar.classify_memo)."""
    chunker = _Chunker(path, language, src, budget, memo)
    last = max(len(src.lines) - 1, 0)
    module = _Owner("module", "", "", "", "", 0)
    chunker.region(list(root.named_children), 0, last, module, (), in_class=False, allow_defs=True)
    chunker.chunks.sort(key=lambda c: (c.start_line, c.end_line))
    return chunker.chunks


def chunk_text(path: str, language: str, text: str, budget: int) -> list[Chunk]:
    """Line-window chunks (kind "text") for files without a grammar; Markdown splits at headings."""
    src = SourceText(text)
    chunker = _Chunker(path, language, src, budget)
    sections: list[tuple[int, str]] = [(0, "")]
    if language == "markdown":
        fenced = False
        for i, line in enumerate(src.lines):
            if _MD_FENCE.match(line):
                fenced = not fenced
                continue
            match = None if fenced else _MD_HEADING.match(line)
            if match and i > 0:
                sections.append((i, match.group(2)))
            elif match:
                sections[0] = (0, match.group(2))
    last = len(src.lines) - 1
    while last > 0 and not src.lines[last].strip():
        last -= 1
    for idx, (start, heading) in enumerate(sections):
        end = sections[idx + 1][0] - 1 if idx + 1 < len(sections) else last
        owner = _Owner("text", "", "", heading, "", start)
        # A section's heading is its first line; later windows repeat it as a header.
        chunker.lines(owner, start, end)
    return chunker.chunks
