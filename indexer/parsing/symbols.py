"""Symbols from tree-sitter: definitions and references per file, and what is around a cursor.

`definitions` and `references` feed the symbol table the retriever looks
names up in. `identifiers_near` (from `cursor`, re-exported here) works on any
text, such as an unsaved editor buffer: the call being typed, the chains in
play, the names the enclosing function uses and the definitions around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codectx.indexer.model import Definition, Reference
from codectx.indexer.parsing.cursor_symbols import CursorSymbols, EnclosingDefinition, identifiers_near
from codectx.indexer.parsing.grammar import (
    SPECS,
    DefInfo,
    Node,
    classify,
    classify_memo,
    find_all,
    find_groups,
    holds_methods,
    last_line,
    text_of,
)

__all__ = [
    "CursorSymbols",
    "EnclosingDefinition",
    "definitions",
    "identifiers_near",
    "references",
]

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
        elif (
            node.type in ("const_declaration", "const_item")
            or node.type.startswith("preproc")
            or (name.isupper() and len(name) > 1)
        ):
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


def definitions(
    root: Node, language: str, path: str, memo: dict[int, DefInfo | None] | None = None
) -> list[Definition]:
    """Every definition in a parsed file, with qualified names (`Client.send`, `Server.Handle`).

    Candidate nodes come from one tree-sitter query; each finds its scope by walking up to
    the nearest enclosing definition, so the cost follows the number of definitions.
    """
    spec = SPECS.get(language)
    if spec is None:
        return []
    js_like = language in ("javascript", "typescript", "tsx")
    # Wrappers like `expression_statement` are many and their contents are captured anyway.
    types = spec.functions | spec.signatures | frozenset(spec.classes) | spec.assignments
    types |= spec.wrappers - {"expression_statement"}
    if js_like:
        types |= spec.var_decls
    out: list[Definition] = []
    scopes: dict[int, _Scope] = {root.id: _Scope((), False)}
    levels: list[tuple[Node, _Scope]] = [(root, scopes[root.id])]  # where module-level constants live
    for node in find_all(root, language, types):
        if node.id in scopes:
            continue  # the inner node of a wrapper already handled
        info = classify_memo(memo, node, language)
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
            inner = _Scope((*outer.names, *info.scope, info.name), holds_methods(info, language))
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
    if " " in raw or "\n" in raw or "\t" in raw:
        raw = _WS.sub("", raw)
    for _ in range(4):
        if "(" not in raw:
            break
        raw = _CALL_ARGS.sub("()", raw).replace("()", "")
    return raw if len(raw) <= 200 and _CHAIN_OK.match(raw) else ""


def references(root: Node, language: str) -> list[Reference]:
    """Identifiers used in a file, once per (name, line), with their access chains.

    One tree-sitter query pass finds identifiers, access chains, import statements (their
    names are modules, not uses) and definitions (a definition's name is not a use).
    """
    spec = SPECS.get(language)
    if spec is None:
        return []
    groups = (
        ("id", spec.identifier_types),
        ("chain", spec.chain_types),
        ("skip", _NOT_USES),
        ("def", spec.functions | spec.signatures | frozenset(spec.classes)),
    )
    found = find_groups(root, language, groups)
    chains: dict[int, bytes] = {}  # end byte -> text of the outermost chain ending there
    for chain in found.get("chain", ()):
        chains.setdefault(chain.end_byte, chain.text or b"")
    def_names: set[int] = set()
    for node in found.get("def", ()):
        name = node.child_by_field_name("name")
        if name is None:
            name = next((c for c in node.named_children if c.type in spec.identifier_types), None)
        if name is not None:
            def_names.add(name.start_byte)
    ranges = iter([(n.start_byte, n.end_byte) for n in found.get("skip", ())])
    current = next(ranges, None)
    cleaned: dict[bytes, str] = {}
    out: list[Reference] = []
    seen: set[tuple[bytes, int]] = set()
    for node in found.get("id", ()):
        start = node.start_byte
        while current is not None and current[1] <= start:
            current = next(ranges, None)
        if (current is not None and current[0] <= start) or start in def_names:
            continue
        raw = node.text or b""
        row, column = node.start_point
        key = (raw, row)
        if key in seen or not raw:
            continue
        seen.add(key)
        name = raw.decode("utf-8", errors="replace")
        if name in _SKIP_NAMES:
            continue
        chain_text = chains.get(node.end_byte)
        chain = ""
        if chain_text:
            chain = cleaned.get(chain_text, "")
            if chain_text not in cleaned:
                chain = cleaned[chain_text] = _clean_chain(chain_text.decode("utf-8", errors="replace"))
        out.append(Reference(name, row, column, chain if chain != name else ""))
    return out
