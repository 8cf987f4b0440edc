"""Imports: what each file imports, resolved to workspace files where the language allows.

Extraction is per language from the syntax tree; resolution (in `resolve`) is
by file-system convention, never by running a build tool: Python packages
(relative and absolute, `src/` layouts), JS/TS relative paths (extensions,
index files, tsconfig `baseUrl`/`paths`), Go packages inside the module
(`go.mod`), Java and Kotlin classes (source root from the `package` line),
Rust `crate::`, `super::`, `self::` paths and `mod x;`, C/C++ `#include "..."`,
Ruby `require_relative`, PHP `require` and PSR-4 (`composer.json`), Bash
`source`. A module that resolves to nothing in the workspace (the standard
library, third-party packages) keeps `resolved == ""`.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from codectx.indexer.model import Import
from codectx.indexer.parsing.grammar import Node, find_all, find_matching, text_of
from codectx.indexer.parsing.resolve import (
    Resolver,
    go_resolve,
    js_resolve,
    psr4_resolve,
    python_resolve,
    python_target,
    rust_module_dir,
    rust_resolve,
)

# -- Python ----------------------------------------------------------------------------


def _python_imports(root_node: Node, res: Resolver) -> list[Import]:
    out: list[Import] = []
    for node in _walk(
        root_node, res, {"import_statement", "import_from_statement", "future_import_statement"}
    ):
        line = node.start_point[0]
        if node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                module, alias = _py_alias(name)
                out.append(Import(module, (), alias, python_resolve(res, module)[0], line))
            continue
        if node.type == "future_import_statement":
            continue
        mod_node = node.child_by_field_name("module_name")
        if mod_node is None:
            continue
        module = text_of(mod_node).replace(" ", "")
        resolved, folder = python_resolve(res, module)
        names: list[tuple[str, str]] = []
        for name in node.children_by_field_name("name"):
            original, alias = _py_alias(name)
            sub = python_target(res, posixpath.join(folder, original)) if res.root is not None else ""
            if sub and sub != resolved:
                # `from pkg import submodule`: the name is a module of its own.
                sep = "" if module.endswith(".") else "."
                out.append(Import(module + sep + original, (), alias or original, sub, line))
            else:
                names.append((original, alias or original))
        if any(c.type == "wildcard_import" for c in node.named_children):
            names.append(("*", "*"))
        if names or not out or out[-1].line != line:
            out.append(Import(module, tuple(names), "", resolved, line))
    return out


def _py_alias(node: Node) -> tuple[str, str]:
    if node.type == "aliased_import":
        name = node.child_by_field_name("name")
        alias = node.child_by_field_name("alias")
        return (text_of(name) if name is not None else ""), (text_of(alias) if alias is not None else "")
    return text_of(node), ""


# -- JavaScript / TypeScript ------------------------------------------------------------


def _string_value(node: Node | None) -> str:
    if node is None:
        return ""
    frags = [c for c in node.named_children if c.type in ("string_fragment", "string_content")]
    if frags:
        return "".join(text_of(f) for f in frags)
    return text_of(node).strip("\"'`")


def _js_imports(root_node: Node, res: Resolver) -> list[Import]:
    out: list[Import] = []
    nodes = _walk(root_node, res, {"import_statement", "export_statement"}) + find_matching(
        root_node, res.language, '(call_expression function: (identifier) @f (#eq? @f "require")) @n'
    )
    nodes.sort(key=lambda n: n.start_byte)
    for node in nodes:
        line = node.start_point[0]
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if (
                fn is None
                or args is None
                or text_of(fn) not in ("require", "import")
                or args.named_child_count != 1
            ):
                continue
            arg = args.named_children[0]
            if arg.type != "string":
                continue
            module = _string_value(arg)
            alias, names = "", []
            parent = node.parent
            if parent is not None and parent.type == "variable_declarator":
                target = parent.child_by_field_name("name")
                if target is not None and target.type == "identifier":
                    alias = text_of(target)
                elif target is not None and target.type == "object_pattern":
                    for prop in target.named_children:
                        if prop.type == "shorthand_property_identifier_pattern":
                            names.append((text_of(prop), text_of(prop)))
                        elif prop.type == "pair_pattern":
                            key, value = prop.child_by_field_name("key"), prop.child_by_field_name("value")
                            if key is not None and value is not None:
                                names.append((text_of(key), text_of(value)))
            out.append(Import(module, tuple(names), alias, js_resolve(res, module), line))
            continue
        source = node.child_by_field_name("source")
        if source is None:
            continue
        module = _string_value(source)
        names = []
        alias = ""
        for clause in node.named_children:
            if clause.type == "import_clause":
                for part in clause.named_children:
                    if part.type == "identifier":
                        names.append(("default", text_of(part)))
                    elif part.type == "namespace_import":
                        ident = next((c for c in part.named_children if c.type == "identifier"), None)
                        alias = text_of(ident) if ident is not None else ""
                    elif part.type == "named_imports":
                        names.extend(_specifiers(part, "import_specifier"))
            elif clause.type == "export_clause":
                names.extend(_specifiers(clause, "export_specifier"))
        out.append(Import(module, tuple(names), alias, js_resolve(res, module), line))
    return out


def _specifiers(node: Node, kind: str) -> list[tuple[str, str]]:
    out = []
    for spec in node.named_children:
        if spec.type != kind:
            continue
        name = spec.child_by_field_name("name")
        alias = spec.child_by_field_name("alias")
        if name is not None:
            out.append((text_of(name), text_of(alias) if alias is not None else text_of(name)))
    return out


# -- Go ---------------------------------------------------------------------------------


def _go_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    for spec in _walk(root_node, res, {"import_spec"}):
        module = _string_value(spec.child_by_field_name("path"))
        name = spec.child_by_field_name("name")
        resolved = go_resolve(res, module)
        out.append(
            Import(module, (), text_of(name) if name is not None else "", resolved, spec.start_point[0])
        )
    return out


# -- Java / Kotlin ------------------------------------------------------------------------


def _jvm_source_root(root_node: Node, res: Resolver, package_types: set[str]) -> str | None:
    for node in root_node.named_children:
        if node.type in package_types:
            ident = next(
                (c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None
            )
            if ident is None:
                return None
            pkg_dir = text_of(ident).replace(".", "/")
            if res.dir == pkg_dir:
                return ""
            if res.dir.endswith("/" + pkg_dir):
                return res.dir[: -len(pkg_dir) - 1]
            return None
    return res.dir


def _jvm_imports(root_node: Node, res: Resolver, kotlin: bool) -> list[Import]:
    ext = ".kt" if kotlin else ".java"
    src_root = _jvm_source_root(root_node, res, {"package_header"} if kotlin else {"package_declaration"})
    roots = [r for r in (src_root, "src/main/java", "src/main/kotlin", "src") if r is not None]
    out = []
    for node in _walk(root_node, res, {"import_header"} if kotlin else {"import_declaration"}):
        ident = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
        if ident is None:
            continue
        module = _WS.sub("", text_of(ident))
        wildcard = any(c.type in ("asterisk", "wildcard_import") for c in node.children) or text_of(
            node
        ).rstrip("; \n").endswith("*")
        alias_node = next((c for c in node.named_children if c.type == "import_alias"), None)
        alias = text_of(alias_node).split()[-1] if alias_node is not None else ""
        path = module.replace(".", "/")
        resolved = ""
        for r in roots:
            base = posixpath.join(r, path) if r else path
            if wildcard and res.is_dir(base):
                resolved = res.norm(base)
            else:
                # `import a.b.C` or the static `import a.b.C.member`.
                resolved = res.first_file([base + ext, posixpath.dirname(base) + ext])
            if resolved:
                break
        last = module.rsplit(".", 1)[-1]
        names = (("*", "*"),) if wildcard else ((last, alias or last),)
        out.append(Import(module, names, alias, resolved, node.start_point[0]))
    return out


_WS = re.compile(r"\s+")


# -- Rust -------------------------------------------------------------------------------


def _rust_use_paths(node: Node, prefix: list[str]) -> list[tuple[list[str], str]]:
    """Flatten a use tree into (path segments, alias) pairs."""
    t = node.type
    if t in ("identifier", "crate", "self", "super", "metavariable"):
        return [([*prefix, text_of(node)], "")]
    if t == "scoped_identifier":
        return [([*prefix, *[p for p in _WS.sub("", text_of(node)).split("::") if p]], "")]
    if t == "use_as_clause":
        path = node.child_by_field_name("path")
        alias = node.child_by_field_name("alias")
        inner = _rust_use_paths(path, prefix) if path is not None else []
        return [(p, text_of(alias) if alias is not None else "") for p, _ in inner]
    if t == "scoped_use_list":
        path = node.child_by_field_name("path")
        base = (
            [*prefix, *[p for p in _WS.sub("", text_of(path)).split("::") if p]]
            if path is not None
            else prefix
        )
        lst = node.child_by_field_name("list")
        return _rust_use_paths(lst, base) if lst is not None else []
    if t == "use_list":
        out: list[tuple[list[str], str]] = []
        for child in node.named_children:
            out.extend(_rust_use_paths(child, prefix))
        return out
    if t == "use_wildcard":
        star_path = next(iter(node.named_children), None)
        base = (
            [*prefix, *[p for p in _WS.sub("", text_of(star_path)).split("::") if p]]
            if star_path is not None
            else prefix
        )
        return [([*base, "*"], "")]
    return []


def _rust_imports(root_node: Node, res: Resolver) -> list[Import]:
    out: list[Import] = []
    for node in _walk(root_node, res, {"use_declaration", "mod_item"}):
        line = node.start_point[0]
        if node.type == "mod_item":
            if node.child_by_field_name("body") is not None:
                continue
            name = node.child_by_field_name("name")
            if name is None:
                continue
            mod = text_of(name)
            stem = posixpath.join(rust_module_dir(res), mod)
            out.append(
                Import(mod, (), "", res.first_file([stem + ".rs", posixpath.join(stem, "mod.rs")]), line)
            )
            continue
        arg = node.child_by_field_name("argument")
        if arg is None:
            continue
        groups: dict[str, list[tuple[str, str]]] = {}
        for segments, alias in _rust_use_paths(arg, []):
            if len(segments) < 2:
                groups.setdefault(segments[0] if segments else "", [])
                continue
            module = "::".join(segments[:-1])
            groups.setdefault(module, []).append((segments[-1], alias or segments[-1]))
        for module, names in groups.items():
            out.append(Import(module, tuple(names), "", rust_resolve(res, module.split("::")), line))
    return out


# -- the others ---------------------------------------------------------------------------


def _c_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    for node in _walk(root_node, res, {"preproc_include"}):
        path = node.child_by_field_name("path")
        if path is None:
            continue
        local = path.type == "string_literal"
        module = _string_value(path) if local else text_of(path).strip("<>")
        resolved = ""
        if local:
            resolved = res.first_file(
                [posixpath.join(res.dir, module), module, posixpath.join("include", module)]
            )
        out.append(Import(module, (), "", resolved, node.start_point[0]))
    return out


def _commands(
    root_node: Node, res: Resolver, node_type: str, field: str, field_type: str, names: tuple[str, ...]
) -> Iterator[tuple[Node, str]]:
    """The `node_type` nodes whose `field` (a `field_type`) is one of `names`, with that name: the
    statements that load another file (`require "x"`, `source x`)."""
    quoted = " ".join(f'"{name}"' for name in names)
    pattern = f"({node_type} {field}: ({field_type}) @f (#any-of? @f {quoted})) @n"
    for node in find_matching(root_node, res.language, pattern):
        head = node.child_by_field_name(field)
        if head is not None and text_of(head) in names:
            yield node, text_of(head)


def _ruby_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    for node, kind in _commands(
        root_node, res, "call", "method", "identifier", ("require", "require_relative", "load")
    ):
        args = node.child_by_field_name("arguments")
        if args is None or node.child_by_field_name("receiver") is not None or not args.named_child_count:
            continue
        arg = args.named_children[0]
        if arg.type != "string":
            continue
        module = _string_value(arg)
        with_ext = module if module.endswith(".rb") else module + ".rb"
        if kind == "require_relative":
            resolved = res.first_file([posixpath.join(res.dir, with_ext)])
        else:
            resolved = res.first_file([posixpath.join("lib", with_ext), with_ext])
        out.append(Import(module, (), "", resolved, node.start_point[0]))
    return out


_PHP_STRING = re.compile(r"""['"]([^'"]+\.php)['"]""")


def _php_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    kinds = {
        "namespace_use_declaration",
        "require_expression",
        "require_once_expression",
        "include_expression",
        "include_once_expression",
    }
    for node in _walk(root_node, res, kinds):
        line = node.start_point[0]
        if node.type == "namespace_use_declaration":
            for clause in node.named_children:
                if clause.type != "namespace_use_clause":
                    continue
                name = next((c for c in clause.named_children if c.type in ("qualified_name", "name")), None)
                alias = clause.child_by_field_name("alias")
                if name is None:
                    continue
                module = text_of(name).lstrip("\\")
                last = module.rsplit("\\", 1)[-1]
                local = text_of(alias) if alias is not None else last
                out.append(Import(module, ((last, local),), "", psr4_resolve(res, module), line))
            continue
        match = _PHP_STRING.search(text_of(node))
        if match is None:
            continue
        module = match.group(1)
        rel = module.lstrip("/")
        resolved = res.first_file([posixpath.join(res.dir, rel), rel])
        out.append(Import(module, (), "", resolved, line))
    return out


def _csharp_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    for node in _walk(root_node, res, {"using_directive"}):
        names = [c for c in node.named_children if c.type in ("qualified_name", "identifier")]
        if not names:
            continue
        alias = ""
        if len(names) == 2:
            alias, module = text_of(names[0]), text_of(names[1])
        else:
            module = text_of(names[-1])
        out.append(Import(module, (), alias, "", node.start_point[0]))
    return out


def _bash_imports(root_node: Node, res: Resolver) -> list[Import]:
    out = []
    for node, _ in _commands(root_node, res, "command", "name", "command_name", ("source", ".")):
        args = node.children_by_field_name("argument")
        if not args:
            continue
        module = text_of(args[0]).strip("\"'")
        resolved = "" if "$" in module else res.first_file([posixpath.join(res.dir, module), module])
        out.append(Import(module, (), "", resolved, node.start_point[0]))
    return out


def _walk(root: Node, res: Resolver, types: set[str]) -> list[Node]:
    """Nodes of the given types, in source order (import statements can hide in blocks)."""
    return find_all(root, res.language, frozenset(types))


_EXTRACTORS: dict[str, Callable[[Node, Resolver], list[Import]]] = {
    "python": _python_imports,
    "javascript": _js_imports,
    "typescript": _js_imports,
    "tsx": _js_imports,
    "go": _go_imports,
    "java": lambda n, r: _jvm_imports(n, r, kotlin=False),
    "kotlin": lambda n, r: _jvm_imports(n, r, kotlin=True),
    "rust": _rust_imports,
    "c": _c_imports,
    "cpp": _c_imports,
    "ruby": _ruby_imports,
    "php": _php_imports,
    "csharp": _csharp_imports,
    "bash": _bash_imports,
}


def imports(root_node: Node, language: str, path: str, root: Path | None) -> list[Import]:
    """The imports of a parsed file; `root` (the workspace folder) enables resolution."""
    extractor = _EXTRACTORS.get(language)
    if extractor is None:
        return []
    resolver = Resolver(Path(os.path.realpath(root)) if root is not None else None, path, language)
    return extractor(root_node, resolver)
