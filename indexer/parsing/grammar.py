"""Reading definitions out of tree-sitter nodes, for every language at once.

The chunker and the symbol extractor share this: `classify` turns a syntax
node into a `DefInfo` (kind, name, qualifiers, body) using the node tables of
`langspec`, and `signature_of`, `python_docstring` and `leading_comment` give a
definition's header and documentation. Adding a language means describing its
node types in `langspec.SPECS`, not writing new walking code.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

from codectx.indexer.parsing.langspec import SPECS, LangSpec
from codectx.indexer.parsing.queries import find_all, find_groups, find_matching

Node = Any  # tree_sitter.Node (kept loose: the binding ships no type stubs)

__all__ = [
    "SPECS",
    "DefInfo",
    "LangSpec",
    "Node",
    "body_of",
    "classify",
    "classify_memo",
    "find_all",
    "find_groups",
    "find_matching",
    "holds_methods",
    "last_line",
    "leading_comment",
    "python_docstring",
    "signature_of",
    "text_of",
]


# Where a class-like keeps its members when there is no `body` field.
_BODY_TYPES = frozenset(
    {
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "body_statement",
        "enum_body",
        "interface_body",
        "enum_class_body",
        "block",
        "compound_statement",
        "statement_block",
        "function_body",
        "constructor_body",
    }
)
_NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "constant",
        "name",
        "word",
        "property_identifier",
        "private_property_identifier",
        "field_identifier",
        "namespace_identifier",
        "scope_resolution",
        "qualified_name",
        "scoped_identifier",
    }
)
_DECLARATOR_LEAVES = frozenset(
    {
        "identifier",
        "field_identifier",
        "type_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "scoped_identifier",
    }
)
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class DefInfo:
    outer: Node  # the node whose span the definition covers (decorators, export included)
    node: Node  # the defining node itself
    kind: str  # function, class, interface, struct, enum, trait, impl, module, namespace, type, ...
    name: str
    scope: tuple[str, ...]  # qualifiers the definition itself carries (`Circle::area`, Go receivers)
    body: Node | None
    function: bool
    container: bool  # members get chunks of their own
    transparent: bool  # namespace-like: no qualname scope

    def qualname(self, outer_scope: tuple[str, ...]) -> str:
        return ".".join((*outer_scope, *self.scope, self.name)) if self.name else ""


def text_of(node: Node) -> str:
    data: bytes = node.text or b""
    return data.decode("utf-8", errors="replace")


def last_line(node: Node) -> int:
    """The last line a node really occupies (a node ending at column 0 ends on the line before)."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return int(row) - 1
    return int(row)


def body_of(node: Node) -> Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in _BODY_TYPES:
            return child
    return None


def _declarator_name(node: Node) -> tuple[str, tuple[str, ...]]:
    """Name and qualifiers from a C/C++ declarator chain (`Circle::area`, `*make`)."""
    current: Node | None = node.child_by_field_name("declarator")
    for _ in range(12):
        if current is None:
            return "", ()
        if current.type in _DECLARATOR_LEAVES:
            parts = [p for p in re.split(r"::|\.", text_of(current)) if p]
            parts = [_WS.sub("", p) for p in parts]
            return (parts[-1] if parts else ""), tuple(parts[:-1])
        nxt = current.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in current.named_children if c.type in _DECLARATOR_LEAVES), None)
        current = nxt
    return "", ()


def _split_path(text: str) -> tuple[str, tuple[str, ...]]:
    parts = [p for p in re.split(r"::|\\|\.", _WS.sub("", text)) if p]
    if not parts:
        return "", ()
    return parts[-1], tuple(parts[:-1])


def _plain_name(node: Node) -> tuple[str, tuple[str, ...]]:
    name = node.child_by_field_name("name")
    if name is None:
        name = next((c for c in node.named_children if c.type in _NAME_TYPES), None)
    if name is None:
        return "", ()
    if name.type in ("scope_resolution", "qualified_name", "scoped_identifier", "namespace_name"):
        return _split_path(text_of(name))
    return text_of(name).strip("\"'"), ()  # TS `declare module "x"`


def _type_name(node: Node | None) -> str:
    """The bare type name of a Rust impl target or Go receiver (`Foo<T>` -> Foo, `*Server` -> Server)."""
    if node is None:
        return ""
    raw = text_of(node)
    raw = re.sub(r"[<\[].*", "", raw)  # generics: Rust `Foo<T>`, Go `List[T]`
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", raw.split("::")[-1])
    keep = [w for w in words if w not in ("mut", "const", "dyn", "impl")]
    return keep[-1] if keep else ""


def classify_memo(memo: dict[int, DefInfo | None] | None, node: Node, language: str) -> DefInfo | None:
    """`classify`, remembered per node in `memo` (one parse's tree: the chunker and the symbol
    extractor ask about the same definitions; a 20k-function file asks 40k times)."""
    if memo is None:
        return classify(node, language)
    key = node.id
    if key not in memo:
        memo[key] = classify(node, language)
    return memo[key]


def classify(node: Node, language: str) -> DefInfo | None:
    """What `node` defines, if anything."""
    spec = SPECS.get(language)
    if spec is None:
        return None
    kind = node.type
    if kind in spec.wrappers:
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is None:
            inner = next((c for c in node.named_children if _defines(c, spec)), None)
        if inner is None:
            return None
        info = classify(inner, language)
        if info is None:
            return None
        return DefInfo(
            node,
            info.node,
            info.kind,
            info.name,
            info.scope,
            info.body,
            info.function,
            info.container,
            info.transparent,
        )
    if kind in spec.var_decls:
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) != 1:
            return None
        value = declarators[0].child_by_field_name("value")
        if value is None or value.type not in spec.func_values | {"class"}:
            return None
        name_node = declarators[0].child_by_field_name("name")
        if name_node is None or name_node.type != "identifier":
            return None
        is_class = value.type == "class"
        return DefInfo(
            node,
            value,
            "class" if is_class else "function",
            text_of(name_node),
            (),
            body_of(value),
            not is_class,
            is_class,
            False,
        )
    if kind in spec.assignments:
        return _assigned_function(node, spec)
    if kind in spec.functions or kind in spec.signatures:
        if language in ("c", "cpp"):
            name, scope = _declarator_name(node)
        else:
            name, scope = _plain_name(node)
        if kind == "method_declaration" and language == "go":
            receiver = node.child_by_field_name("receiver")
            scope = (_type_name(receiver),) if receiver is not None else ()
        if kind == "singleton_method" and language == "ruby":
            scope = ()
        if kind == "secondary_constructor":
            name = "constructor"
        if not name:
            return None
        body = node.child_by_field_name("body") if kind not in spec.signatures else None
        if body is None and kind not in spec.signatures:
            body = body_of(node)
        return DefInfo(node, node, "function", name, scope, body, True, False, False)
    if kind in spec.classes:
        cls_kind = spec.classes[kind]
        if kind == "impl_item":
            name, scope = _type_name(node.child_by_field_name("type")), ()
        elif kind == "type_spec":
            name, scope = _plain_name(node)
            typ = node.child_by_field_name("type")
            if typ is not None and typ.type == "struct_type":
                cls_kind = "struct"
            elif typ is not None and typ.type == "interface_type":
                cls_kind = "interface"
        elif kind == "companion_object":
            name, scope = "", ()
        else:
            name, scope = _plain_name(node)
        if (
            language == "kotlin"
            and kind == "class_declaration"
            and any(c.type == "interface" for c in node.children)
        ):
            cls_kind = "interface"
        body = body_of(node)
        if (
            kind in ("struct_specifier", "class_specifier", "union_specifier", "enum_specifier")
            and body is None
        ):
            return None  # a use (`struct point p;`), not a definition
        if not name and kind not in spec.transparent:
            return None
        return DefInfo(
            node,
            node,
            cls_kind,
            name,
            scope,
            body,
            False,
            kind in spec.containers and body is not None,
            kind in spec.transparent,
        )
    return None


# Class-likes whose functions are plain functions, not methods.
_NAMESPACE_KINDS = frozenset({"module", "namespace"})


def holds_methods(info: DefInfo, language: str) -> bool:
    """Whether functions defined directly inside `info` are its methods (a class, not a namespace).

    Ruby modules are mixins: their functions are methods too.
    """
    if info.function:
        return False
    return language == "ruby" or info.kind not in _NAMESPACE_KINDS


def _defines(node: Node, spec: LangSpec) -> bool:
    t = node.type
    return (
        t in spec.functions
        or t in spec.classes
        or t in spec.var_decls
        or t in spec.signatures
        or t in spec.assignments
    )


_JS_KEY = re.compile(r"^[A-Za-z_$][\w$]*$")


def _assigned_function(node: Node, spec: LangSpec) -> DefInfo | None:
    """`Foo.prototype.bar = function () {}` or `{ bar: () => {} }`: a function with a name."""
    if node.type == "pair":
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
    else:
        key, value = node.child_by_field_name("left"), node.child_by_field_name("right")
    if key is None or value is None or value.type not in spec.func_values | {"class"}:
        return None
    name, scope = _split_path(text_of(key).strip("\"'`"))
    scope = tuple(p for p in scope if p not in ("this", "self"))
    if not _JS_KEY.match(name) or not all(_JS_KEY.match(p) for p in scope):
        return None
    is_class = value.type == "class"
    kind = "class" if is_class else "function"
    return DefInfo(node, value, kind, name, scope, body_of(value), not is_class, is_class, False)


def signature_of(info: DefInfo, source: bytes) -> str:
    """The definition's header: from its first token up to its body, on one line."""
    node = info.node
    start = node.start_byte
    end = info.body.start_byte if info.body is not None else node.end_byte
    if info.outer is not node and info.outer.type != "decorated_definition":
        start = info.outer.start_byte  # `export`, `type`, `template <...>` belong to the header
    if info.body is not None and info.outer.type in ("lexical_declaration", "variable_declaration"):
        end = info.body.start_byte
    for child in node.children:
        if "comment" in child.type and start < child.start_byte < end:
            end = child.start_byte  # a comment between the header and the body is not signature
            break
    text = source[start:end].decode("utf-8", errors="replace")
    if info.body is None:
        text = text.split("{", 1)[0] if info.function else text.split("\n", 1)[0]
    text = " ".join(text.split()).rstrip("{").rstrip()  # whitespace runs as one space
    return text[:400]


def python_docstring(body: Node | None) -> str:
    if body is None:
        return ""
    first = next((c for c in body.named_children if c.type != "comment"), None)
    if first is None:
        return ""
    if first.type == "expression_statement" and first.named_child_count == 1:
        first = first.named_children[0]
    if first.type != "string":
        return ""
    content = [c for c in first.named_children if c.type == "string_content"]
    raw = "".join(text_of(c) for c in content) if content else text_of(first).strip("\"'")
    return inspect.cleandoc(raw)


_XML_DOC_TAGS = re.compile(r"</?(?:summary|remarks|returns|value|para)>")
_COMMENT_MARKERS = re.compile(r"^\s*(?:///|//!|//|/\*\*|/\*|\*/|\*|#)\s?")


def leading_comment(lines: list[str], def_line: int, spec: LangSpec, floor: int = 0) -> tuple[int, str]:
    """The comment block right above a definition: (its first line, its text without markers).

    Attribute lines (`#[derive]`, `@Override`) between the comment and the
    definition are stepped over; a blank line ends the block.
    """
    first = def_line
    doc_lines: list[str] = []
    i = def_line - 1
    while i >= floor:
        stripped = lines[i].strip()
        if not stripped:
            break
        if spec.attribute_prefixes and stripped.startswith(spec.attribute_prefixes):
            first = i
            i -= 1
            continue
        if stripped.startswith("#!") and i == 0:
            break
        if not stripped.startswith(spec.comment_prefixes) and not stripped.endswith("*/"):
            break
        doc_lines.append(stripped)
        first = i
        i -= 1
    if not doc_lines:
        return first, ""
    cleaned = [_COMMENT_MARKERS.sub("", ln).removesuffix("*/").rstrip() for ln in reversed(doc_lines)]
    doc = _XML_DOC_TAGS.sub("", inspect.cleandoc("\n".join(cleaned)))  # C# `/// <summary>`
    return first, doc.strip()
