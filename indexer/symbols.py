"""Symbols from tree-sitter: definitions and references per file, and what is around a cursor.

`definitions` and `references` feed the symbol table the retriever looks
names up in. `identifiers_near` works on any text, such as an unsaved editor
buffer: it tells the retriever which call is being typed, which attribute
chains are in play, which names the enclosing function uses and which
definition encloses the cursor. It parses only a window around the cursor,
so its cost does not grow with the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codectx.indexer.grammar import (
    SPECS,
    DefInfo,
    LangSpec,
    Node,
    classify,
    find_all,
    last_line,
    signature_of,
    text_of,
)
from codectx.indexer.languages import get_parser, is_tree_sitter
from codectx.indexer.model import Definition, Reference

# Statements whose identifiers name modules and packages rather than use code.
_NOT_USES = frozenset(
    {
        "import_statement",
        "import_from_statement",
        "future_import_statement",
        "import_declaration",
        "use_declaration",
        "preproc_include",
        "namespace_use_declaration",
        "using_directive",
        "import_header",
        "import_list",
        "package_clause",
        "package_declaration",
        "package_header",
        "namespace_definition_name",
        "comment",
        "line_comment",
        "block_comment",
    }
)
_SKIP_NAMES = frozenset({"self", "this", "cls", "super", "_", "$this"})
_CHAIN_OK = re.compile(r"^[\w$@]+(?:(?:\.|::|->|\?\.)[\w$@]+)*$")
_CALL_ARGS = re.compile(r"\([^()]*\)")
_WS = re.compile(r"\s+")
_PRIVATE_WORDS = re.compile(r"\b(private|internal|fileprivate)\b")


def _exported(info: DefInfo, language: str, name: str) -> bool:
    """Whether a definition is visible outside its file, by each language's convention (best effort)."""
    node = info.outer
    if language == "python":
        return not name.startswith("_")
    if language == "go":
        return name[:1].isupper()
    if language in ("javascript", "typescript", "tsx"):
        if node.type == "export_statement":
            return True
        return not name.startswith("#") and _in_export(node)
    if language == "rust":
        return any(c.type == "visibility_modifier" for c in info.node.children)
    if language in ("c", "cpp"):
        return not any(
            c.type == "storage_class_specifier" and text_of(c) == "static" for c in info.node.children
        )
    if language in ("java", "csharp", "kotlin", "php"):
        head = text_of(info.node).split("(", 1)[0].split("{", 1)[0]
        return not _PRIVATE_WORDS.search(head)
    return True


def _in_export(node: Node) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type == "export_statement":
            return True
        if parent.type in ("class_body",):
            parent = parent.parent
            continue
        if parent.type in ("class_declaration", "class", "abstract_class_declaration"):
            parent = parent.parent
            continue
        return False
    return False


def _constant_names(node: Node, language: str) -> list[tuple[str, Node]]:
    """Names bound by a module-level assignment-like node (`X = 1`, `const X = 1`, `#define X`)."""
    t = node.type
    out: list[tuple[str, Node]] = []
    if language == "python":
        target = node.named_children[0] if t == "expression_statement" and node.named_child_count else node
        if target.type == "assignment":
            left = target.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                out.append((text_of(left), left))
    elif t in ("lexical_declaration", "variable_declaration"):
        for decl in node.named_children:
            name = decl.child_by_field_name("name") if decl.type == "variable_declarator" else None
            if name is not None and name.type == "identifier":
                out.append((text_of(name), name))
    elif t in ("const_declaration", "var_declaration"):
        for spec in node.named_children:
            for name in spec.children_by_field_name("name"):
                out.append((text_of(name), name))
    elif t in ("const_item", "static_item", "preproc_def", "preproc_function_def"):
        name = node.child_by_field_name("name")
        if name is not None:
            out.append((text_of(name), name))
    elif t in ("type_definition", "alias_declaration"):
        for decl in node.children_by_field_name("declarator") or node.children_by_field_name("name"):
            if decl.type == "type_identifier":
                out.append((text_of(decl), decl))
    return out


def _constant_defs(
    node: Node, language: str, path: str, scope: tuple[str, ...], out: list[Definition]
) -> None:
    for name, _ in _constant_names(node, language):
        if node.type in ("type_definition", "alias_declaration"):
            kind = "type"
        elif node.type.startswith("preproc") or (name.isupper() and len(name) > 1):
            kind = "constant"
        else:
            kind = "variable"
        exported = not name.startswith("_") if language == "python" else True
        qualname = ".".join((*scope, name))
        start, end = node.start_point[0], last_line(node)
        out.append(Definition(name, qualname, kind, path, language, start, end, exported))


@dataclass(frozen=True)
class _Scope:
    names: tuple[str, ...]  # qualname prefix for what is defined inside
    in_class: bool  # functions inside are methods


def definitions(root: Node, language: str, path: str) -> list[Definition]:
    """Every definition in a parsed file, with qualified names (`Client.send`, `Server.Handle`).

    Candidate nodes come from one tree-sitter query; each finds its scope by walking up to
    the nearest enclosing definition, so the cost follows the number of definitions.
    """
    spec = SPECS.get(language)
    if spec is None:
        return []
    js_like = language in ("javascript", "typescript", "tsx")
    types = spec.functions | spec.signatures | frozenset(spec.classes) | spec.wrappers
    if js_like:
        types |= spec.var_decls
    out: list[Definition] = []
    scopes: dict[int, _Scope] = {root.id: _Scope((), False)}
    levels: list[tuple[Node, _Scope]] = [(root, scopes[root.id])]  # where module-level constants live
    for node in find_all(root, language, types):
        if node.id in scopes:
            continue  # the inner node of a wrapper already handled
        info = classify(node, language)
        if info is None:
            continue
        parent = node.parent
        while parent is not None and parent.id not in scopes:
            parent = parent.parent
        outer = scopes[parent.id] if parent is not None else scopes[root.id]
        kind = info.kind
        if info.function:
            kind = "method" if (outer.in_class or info.scope) else "function"
        if info.name and not info.transparent and info.kind != "impl":
            out.append(
                Definition(
                    info.name,
                    info.qualname(outer.names),
                    kind,
                    path,
                    language,
                    info.outer.start_point[0],
                    last_line(info.outer),
                    _exported(info, language, info.name),
                )
            )
        if info.transparent:
            inner = outer
        elif info.function:
            inner = _Scope((*outer.names, *info.scope, info.name), False)
        else:
            inner = _Scope((*outer.names, *info.scope, info.name), True)
        # Every node from the wrapper (`export`, `const f =`) down to the definition is this scope.
        step: Node | None = info.node
        while step is not None and step.id != info.outer.id:
            scopes[step.id] = inner
            step = step.parent
        scopes[info.outer.id] = inner
        if not info.function and info.body is not None:
            levels.append((info.body, inner))
    for level, scope in levels:
        for child in level.named_children:
            if child.type == "export_statement" and js_like:
                child = child.child_by_field_name("declaration") or child
            is_constant = child.type in spec.constants or (js_like and child.type in spec.var_decls)
            if is_constant and classify(child, language) is None:
                _constant_defs(child, language, path, scope.names, out)
    out.sort(key=lambda d: (d.start_line, d.end_line))
    return out


def _clean_chain(raw: str) -> str:
    """`a.b(x).c` -> `a.b.c`; "" when the text is not a plain access chain."""
    raw = _WS.sub("", raw)
    for _ in range(4):
        if "(" not in raw:
            break
        raw = _CALL_ARGS.sub("()", raw).replace("()", "")
    return raw if len(raw) <= 200 and _CHAIN_OK.match(raw) else ""


def _def_name_starts(root: Node, language: str, spec: LangSpec) -> set[int]:
    """Start bytes of the name tokens of definitions (a definition's name is not a use of it)."""
    starts: set[int] = set()
    for node in find_all(root, language, spec.functions | spec.signatures | frozenset(spec.classes)):
        name = node.child_by_field_name("name")
        if name is None:
            name = next((c for c in node.named_children if c.type in spec.identifier_types), None)
        if name is not None:
            starts.add(name.start_byte)
    return starts


def references(root: Node, language: str) -> list[Reference]:
    """Identifiers used in a file, once per (name, line), with their access chains."""
    spec = SPECS.get(language)
    if spec is None:
        return []
    chains: dict[int, bytes] = {}  # end byte -> text of the outermost chain ending there
    if spec.chain_types:
        for chain in find_all(root, language, spec.chain_types):
            chains.setdefault(chain.end_byte, chain.text or b"")
    skip_ranges = [(n.start_byte, n.end_byte) for n in find_all(root, language, _NOT_USES)]
    def_names = _def_name_starts(root, language, spec)
    out: list[Reference] = []
    seen: set[tuple[str, int]] = set()
    ranges = iter(skip_ranges)
    current = next(ranges, None)
    for node in find_all(root, language, spec.identifier_types):
        start = node.start_byte
        while current is not None and current[1] <= start:
            current = next(ranges, None)
        if current is not None and current[0] <= start < current[1]:
            continue
        if start in def_names:
            continue
        name = (node.text or b"").decode("utf-8", errors="replace")
        point = node.start_point
        key = (name, point[0])
        if not name or name in _SKIP_NAMES or key in seen:
            continue
        seen.add(key)
        chain_text = chains.get(node.end_byte)
        chain = _clean_chain(chain_text.decode("utf-8", errors="replace")) if chain_text else ""
        out.append(Reference(name, point[0], point[1], chain if chain != name else ""))
    return out


# -- around the cursor -------------------------------------------------------------


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


_CALLEE = re.compile(r"([A-Za-z_$@][\w$]*(?:\s*(?:\?\.|\.|::|->)\s*[A-Za-z_$][\w$]*)*)\s*$")
_WORD_BEFORE = re.compile(r"[A-Za-z_$][\w$]*$")
_CHAIN_TEXT = re.compile(r"[A-Za-z_$@][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)+")
_OPEN = {")": "(", "]": "[", "}": "{"}
_SCAN_CHARS = 4000
_WINDOW_BEFORE = 150
_WINDOW_AFTER = 200
_SCAN_LINES = 3000


def _dedent(text: str, n: int) -> str:
    head = text[:n]
    return text[n:] if not head.strip() else text.lstrip()


def _open_call(before: str) -> tuple[str, int]:
    """The callee before the innermost unclosed `(` in `before`, and the argument index."""
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
            match = _CALLEE.search(before[:i])
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
# Definitions a broken buffer still shows in its text (when the parse cannot find them).
_DEF_TEXT = re.compile(
    r"^\s*(?:[\w@]+\s+)*?(?:def|function|func|fn|fun|sub)\s*\*?\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
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
    word_match = _WORD_BEFORE.search(head)
    word = word_match.group(0) if word_match else ""

    start, end, dedent, outer = _window(lines, line) if lines else (0, 0, 0, [])
    before = "\n".join([*lines[max(start, line - 40) : line], head])
    call, arg_index = _open_call(before)
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
    for i in range(max(0, line - 3), min(len(lines), line + 4)):
        for match in _CHAIN_TEXT.finditer(lines[i]):
            distance = abs(i - line) * 1000 + (abs(match.start() - character) if i == line else 0)
            found.append((distance, match.group(0)))
    current = lines[line][:character] if lines else ""
    typing = re.search(
        r"([A-Za-z_$@][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)*)(?:\?\.|\.|::|->)[\w$]*$", current
    )
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
    spec = SPECS[language]
    distance: dict[str, int] = {}
    stack = [node]
    count = 0
    while stack and count < 20000:
        current = stack.pop()
        count += 1
        if current.type in spec.identifier_types:
            name = text_of(current)
            if name and name not in _SKIP_NAMES:
                d = abs(current.start_point[0] - row)
                if d < distance.get(name, 1 << 30):
                    distance[name] = d
            continue
        stack.extend(current.named_children)
    return tuple(sorted(distance, key=lambda n: (distance[n], n))[:200])
