"""What is around a cursor, in any text (an unsaved editor buffer included).

`identifiers_near` tells the retriever which call is being typed, which access
chains are in play, which names the enclosing function uses and which
definitions enclose the cursor. It reads the call and chains from the text
(so half-typed code works) and parses only the block around the cursor, found
by indentation, so its cost does not grow with the file (about 1 ms on a
2,000-line file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codectx.indexer.parsing.grammar import SPECS, DefInfo, Node, classify, find_all, last_line, signature_of
from codectx.indexer.parsing.languages import get_parser, is_tree_sitter

_SKIP_NAMES = frozenset({"self", "this", "cls", "super", "_", "$this"})
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class EnclosingDefinition:
    name: str
    qualname: str
    kind: str
    signature: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class CursorSymbols:
    """What the code at a cursor is about; lines are 0-based in the whole text."""

    word: str  # the identifier (prefix) just before the cursor, "" when none
    call: str  # callee of the call being typed ("self.session.send"), "" when not inside a call
    call_name: str  # its last segment ("send")
    argument_index: int  # which argument the cursor is in, -1 when not inside a call
    chains: tuple[str, ...]  # attribute chains near the cursor, nearest first
    names: tuple[str, ...]  # identifiers used in the enclosing definition (or window), nearest first
    enclosing: EnclosingDefinition | None  # innermost function/class around the cursor
    scopes: tuple[EnclosingDefinition, ...] = ()  # every enclosing definition, outermost first


# Each pattern starts at a word's start (the look-behind): tried inside a word, it would read the
# rest of the word at every position, seconds on a line holding a 30,000-character hex string.
_CALLEE = re.compile(r"(?<![\w$@])([A-Za-z_$@][\w$]*(?:\s*(?:\?\.|\.|::|->)\s*[A-Za-z_$][\w$]*)*)\s*$")
_WORD_BEFORE = re.compile(r"(?<![\w$])[A-Za-z_$][\w$]*$")
_CHAIN_TEXT = re.compile(r"(?<![\w$@])[A-Za-z_$@][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)+")
_TYPING_CHAIN = re.compile(
    r"(?<![\w$@])([A-Za-z_$@][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)*)(?:\?\.|\.|::|->)[\w$]*$"
)
_LINE_CHARS = 1000  # of a line, the text this far either side of the cursor is read for chains and names
_OPEN = {")": "(", "]": "[", "}": "{"}
# A method called on a dict, set or string literal (not `x[0].` or `f().`: those may be the
# workspace's). Only where `}.` closes a literal and `'.` a string (Go's and Rust's `T{...}.m(`
# is a struct's method; PHP's `'a'.f(` joins strings).
_LITERAL_MEMBER = ("}.", '".', "'.", "`.")
_LITERAL_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx"})
_SCAN_CHARS = 4000
_WINDOW_BEFORE = 150
_WINDOW_AFTER = 200
_SCAN_LINES = 3000


def _dedent(text: str, n: int) -> str:
    head = text[:n]
    return text[n:] if not head.strip() else text.lstrip()


def _open_call(before: str, literal_members: bool = False) -> tuple[str, int]:
    """The callee before the innermost unclosed `(` in `before`, and the argument index; with
    `literal_members`, none for a method of a dict or string literal (`{...}.get(`)."""
    depth: list[str] = []
    commas = 0
    quote = ""
    for i in range(len(before) - 1, max(-1, len(before) - _SCAN_CHARS - 1), -1):
        ch = before[i]
        if quote:
            if ch == quote and (i == 0 or before[i - 1] != "\\"):
                quote = ""
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in _OPEN:
            depth.append(_OPEN[ch])
        elif ch in "([{":
            if depth:
                if depth.pop() != ch:
                    return "", -1
                continue
            if ch != "(":
                return "", -1  # inside a list or block literal, not a call
            match = _CALLEE.search(before, max(0, i - _LINE_CHARS), i)
            if match is None:
                return "", -1
            callee = _WS.sub("", match.group(1))
            if callee.split(".")[-1] in (
                "if",
                "for",
                "while",
                "switch",
                "return",
                "catch",
                "elif",
                "and",
                "or",
                "not",
                "in",
                "with",
            ):
                return "", -1
            if literal_members and before[: match.start(1)].rstrip().endswith(_LITERAL_MEMBER):
                return "", -1  # `{...}.get(`, `", ".join(`: a builtin's method, not one of the workspace's
            return callee, commas
        elif ch == "," and not depth:
            commas += 1
        elif ch in ";" and not depth:
            return "", -1
    return "", -1


_CONTINUATION = re.compile(
    r"^\s*(?:[})\]]|else\b|elif\b|elsif\b|except\b|catch\b|finally\b|case\b|default\b|when\b|rescue\b"
    r"|ensure\b|end\b|#|//|/\*|\*|\"\"\"|''')"
)
_CLOSER = re.compile(r"^\s*(?:[})\]]|end\b)")
_CLASS_HEADER = re.compile(
    r"\b(?:class|interface|struct|trait|impl|module|object|enum|record|protocol)\b\s*(?:<[^>]*>\s*)?"
    r"([A-Za-z_][\w]*)(?:<[^>]*>)?(?:\s+for\s+([A-Za-z_][\w]*))?"
)


_CONTROL = re.compile(
    r"^\s*(?:if|for|while|else|elif|try|switch|with|do|loop|match|unless|until|foreach|using|lock|"
    r"synchronized|select|begin|case)\b"
)
# Definitions a broken buffer still shows in its text (when the parse cannot find them). The
# spaces after the keyword are read once (possessive: `\s*\*?\s+` split a long run every way).
_DEF_TEXT = re.compile(
    r"^\s*(?:[\w@]+\s+)*?(?:def|function|func|fn|fun|sub)(?:\s*+\*\s++|\s++)(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _headers_above(lines: list[str], line: int) -> list[tuple[int, int]]:
    """Lines above `line` that open the blocks around it (each less indented), innermost first."""
    out: list[tuple[int, int]] = []
    current: int | None = None
    for i in range(line, max(-1, line - _SCAN_LINES), -1):
        text = lines[i]
        if not text.strip():
            continue
        indent = _indent(text)
        if current is None:
            current = indent
            if indent == 0:
                break
            continue
        if indent < current and not _CONTINUATION.match(text):
            out.append((i, indent))
            current = indent
            if indent == 0:
                break
    return out


def _window(lines: list[str], line: int) -> tuple[int, int, int, list[int]]:
    """(first line, last line, indentation to strip, outer header lines left out) of the parse window.

    The window is the top-level statement around the cursor when it is near; in a long class it
    is the enclosing block (dedented, so it parses cleanly) and the class lines above it are
    read from the text for the qualified name.
    """
    headers = _headers_above(lines, line)
    near = [h for h in headers if line - h[0] <= _WINDOW_BEFORE]
    if not headers:
        start, dedent = line, 0
        if lines[line].strip() == "" or _CONTINUATION.match(lines[line]):
            start = max(0, line - _WINDOW_BEFORE)
    elif near:
        start, dedent = near[-1]
    else:
        start, dedent = max(0, line - _WINDOW_BEFORE), 0
    outer = [h[0] for h in headers if h[0] < start]
    # The window ends with the innermost block that is not a control statement (the enclosing
    # function, usually): later members of a class are not needed.
    blocks = [h for h in headers if not _CONTROL.match(lines[h[0]])]
    block_indent = blocks[0][1] if blocks else dedent
    end = min(len(lines) - 1, line + _WINDOW_AFTER)
    for i in range(line + 1, end + 1):
        text = lines[i]
        if text.strip() and _indent(text) <= block_indent:
            if _CLOSER.match(text):
                end = i
                break
            if not _CONTINUATION.match(text):
                end = i - 1
                break
    return start, end, dedent, outer


def _outer_scope(lines: list[str], outer: list[int]) -> tuple[str, ...]:
    names: list[str] = []
    for i in reversed(outer):
        match = _CLASS_HEADER.search(lines[i])
        if match:
            names.append(match.group(2) or match.group(1))
    return tuple(names)


def identifiers_near(text: str, language: str, line: int, character: int) -> CursorSymbols:
    """Call, chains, names and enclosing definition at a 0-based (line, character) of any text.

    `character` counts code points in the line (equal to LSP's UTF-16 columns for BMP text).
    Works on broken code: the call and chains come from the text, the rest from a
    tree-sitter parse of the top-level statement around the cursor.
    """
    lines = text.split("\n")
    line = min(max(line, 0), max(len(lines) - 1, 0))
    current = lines[line] if lines else ""
    character = min(max(character, 0), len(current))
    head = current[:character]
    word_match = _WORD_BEFORE.search(head, max(0, character - _LINE_CHARS))
    word = word_match.group(0) if word_match else ""

    start, end, dedent, outer = _window(lines, line) if lines else (0, 0, 0, [])
    before = "\n".join([*lines[max(start, line - 40) : line], head])
    call, arg_index = _open_call(before, language in _LITERAL_LANGUAGES)
    call_name = re.split(r"\?\.|\.|::|->", call)[-1] if call else ""

    chains = _nearby_chains(lines, line, character)
    enclosing: EnclosingDefinition | None = None
    scopes: list[EnclosingDefinition] = []
    names: tuple[str, ...] = ()
    if is_tree_sitter(language) and lines:
        window = "\n".join(_dedent(t, dedent) for t in lines[start : end + 1])
        tree = get_parser(language).parse(window.encode("utf-8", errors="surrogatepass"))
        levels = _enclosing(tree.root_node, language, line - start, max(0, character - dedent))
        scope_node = tree.root_node
        prefix = _outer_scope(lines, outer)
        data = window.encode("utf-8", errors="surrogatepass")
        for node, info, qual in levels:
            qual = ".".join((*prefix, qual)) if prefix else qual
            scopes.append(
                EnclosingDefinition(
                    info.name,
                    qual,
                    "method" if info.function and "." in qual else info.kind,
                    signature_of(info, data),
                    node.start_point[0] + start,
                    last_line(node) + start,
                )
            )
        if levels:
            enclosing = scopes[-1]
            scope_node = levels[-1][0]
        else:
            enclosing = _enclosing_from_text(lines, line, start, end, outer)
            scopes = [enclosing] if enclosing is not None else []
        names = _names_in(scope_node, language, line - start)
    return CursorSymbols(word, call, call_name, arg_index, chains, names, enclosing, tuple(scopes))


def _enclosing_from_text(
    lines: list[str], line: int, start: int, end: int, outer: list[int]
) -> EnclosingDefinition | None:
    """The definition header above the cursor, read from the text (for code that does not parse)."""
    headers = [h for h, _ in _headers_above(lines, line)]
    for i in headers:
        match = _DEF_TEXT.match(lines[i])
        if match is None:
            continue
        scope = _outer_scope(lines, [h for h in headers if h < i])
        qual = ".".join((*scope, match.group(1)))
        kind = "method" if scope else "function"
        return EnclosingDefinition(match.group(1), qual, kind, lines[i].strip().rstrip("{:").strip(), i, end)
    return None


def _nearby_chains(lines: list[str], line: int, character: int) -> tuple[str, ...]:
    found: list[tuple[int, str]] = []
    lo = max(0, character - _LINE_CHARS)
    for i in range(max(0, line - 3), min(len(lines), line + 4)):
        # The cursor's line around the cursor, the lines near it from their start.
        span = (lo, character + _LINE_CHARS) if i == line else (0, 2 * _LINE_CHARS)
        for match in _CHAIN_TEXT.finditer(lines[i], *span):
            distance = abs(i - line) * 1000 + (abs(match.start() - character) if i == line else 0)
            found.append((distance, match.group(0)))
    typing = _TYPING_CHAIN.search(lines[line], lo, character) if lines else None
    if typing:
        found.append((-1, typing.group(1)))
    seen: set[str] = set()
    out: list[str] = []
    for _, chain in sorted(found):
        if chain not in seen:
            seen.add(chain)
            out.append(chain)
    return tuple(out[:20])


def _enclosing(root: Node, language: str, row: int, col: int) -> list[tuple[Node, DefInfo, str]]:
    """The definitions whose spans hold (row, col), outermost first, with their qualnames."""
    found: list[tuple[Node, DefInfo, str]] = []
    node = root
    scope: tuple[str, ...] = ()
    while True:
        nxt = None
        for child in node.named_children:
            if child.start_point[0] <= row <= last_line(child) and (
                child.start_point[0] < row or child.start_point[1] <= col
            ):
                nxt = child
                break
        if nxt is None:
            return found
        info = classify(nxt, language)
        # A wrapper (`export class`) and the node it wraps classify alike: count it once.
        if info is not None and info.name and (not found or found[-1][1].node.id != info.node.id):
            qual = info.qualname(scope)
            if not info.transparent:
                found.append((nxt, info, qual))
                scope = (*scope, *info.scope, info.name)
        node = nxt


def _names_in(node: Node, language: str, row: int) -> tuple[str, ...]:
    """Identifiers under `node`, nearest to `row` first (a query: the walk happens in C)."""
    distance: dict[bytes, int] = {}
    for ident in find_all(node, language, SPECS[language].identifier_types):
        raw = ident.text or b""
        d = abs(ident.start_point[0] - row)
        if d < distance.get(raw, 1 << 30):
            distance[raw] = d
    names = sorted(distance, key=lambda n: (distance[n], n))
    decoded = (n.decode("utf-8", errors="replace") for n in names)
    return tuple(n for n in decoded if n and n not in _SKIP_NAMES)[:200]
