"""Resolving imports to workspace files, by each ecosystem's file-system conventions.

Every answer is a workspace-relative POSIX path, or "" when the module is not
in the workspace (standard library, third-party packages). Nothing here ever
points outside the workspace root, and nothing runs a build tool: only file
existence checks (memoized per file) and small config files (go.mod,
tsconfig.json, composer.json, Cargo.toml's location).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_JS_SWAP = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


class Resolver:
    """File lookups relative to the workspace root; every answer is a workspace-relative POSIX path."""

    def __init__(self, root: Path | None, path: str, language: str = "") -> None:
        self.language = language
        self.root = root
        self.path = path
        self.dir = posixpath.dirname(path)
        self._root_str = str(root) if root is not None else ""
        self._memo: dict[tuple[str, str], bool] = {}  # stat answers, for this file's imports
        self.ts_config: tuple[str | None, str, dict[str, list[str]]] | None = None
        self.psr4: list[tuple[str, str]] | None = None
        self.go_module: tuple[str, str] | None = None  # (folder of go.mod, module path)

    def _abs(self, rel: str) -> str | None:
        if self.root is None:
            return None
        rel = posixpath.normpath(rel)
        if rel.startswith("../") or rel == ".." or rel.startswith("/"):
            return None  # never outside the workspace
        return self._root_str if rel == "." else self._root_str + "/" + rel

    def is_file(self, rel: str) -> bool:
        key = ("f", rel)
        hit = self._memo.get(key)
        if hit is None:
            p = self._abs(rel)
            hit = self._memo[key] = p is not None and os.path.isfile(p)
        return hit

    def is_dir(self, rel: str) -> bool:
        key = ("d", rel)
        hit = self._memo.get(key)
        if hit is None:
            p = self._abs(rel)
            hit = self._memo[key] = p is not None and os.path.isdir(p)
        return hit

    def read(self, rel: str) -> str:
        p = self._abs(rel)
        if p is None:
            return ""
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                return fh.read(65536)
        except OSError:
            return ""

    def norm(self, rel: str) -> str:
        rel = posixpath.normpath(rel)
        return "" if rel == "." else rel

    def first_file(self, candidates: list[str]) -> str:
        for cand in candidates:
            if self.is_file(cand):
                return self.norm(cand)
        return ""

    def ancestor_with(self, marker: str) -> str | None:
        """The nearest folder at or above this file's folder that holds `marker`."""
        current = self.dir
        while True:
            if self.is_file(posixpath.join(current, marker) if current else marker):
                return current
            if not current:
                return None
            current = posixpath.dirname(current)


def _python_roots(res: Resolver) -> list[str]:
    """Folders that act as sys.path entries: above the file's outermost package, the root, src/."""
    roots: list[str] = []
    current = res.dir
    while current and res.is_file(posixpath.join(current, "__init__.py")):
        current = posixpath.dirname(current)
    roots.append(current)
    for extra in ("", "src", "lib"):
        if extra not in roots:
            roots.append(extra)
    return roots


def python_target(res: Resolver, base: str) -> str:
    """`base` (a/b) as a module file, a package's __init__.py, or a namespace package folder."""
    found = res.first_file([base + ".py", base + ".pyi", posixpath.join(base, "__init__.py")])
    if found:
        return found
    if base and res.is_dir(base):
        return res.norm(base)
    return ""


def python_resolve(res: Resolver, module: str) -> tuple[str, str]:
    """(resolved path, folder the module's submodules live in)."""
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module[dots:].split(".") if p]
    if dots:
        base = res.dir
        for _ in range(dots - 1):
            if not base:
                return "", ""
            base = posixpath.dirname(base)
        target_dir = posixpath.join(base, *parts) if parts else base
        if not parts:
            return python_target(res, base) if base else res.first_file(["__init__.py"]), base
        return python_target(res, target_dir), target_dir
    for root in _python_roots(res):
        target_dir = posixpath.join(root, *parts) if root else posixpath.join(*parts)
        found = python_target(res, target_dir)
        if found:
            return found, target_dir
    return "", ""


def _js_file(res: Resolver, base: str) -> str:
    """`base` as a module file: exact, with a TS twin of a .js name, with an extension, or an index file."""
    stem, ext = posixpath.splitext(base)
    candidates = [base] if ext else []
    candidates += [stem + alt for alt in _JS_SWAP.get(ext, ())]
    candidates += [base + e for e in _JS_EXTS]
    candidates += [posixpath.join(base, "index" + e) for e in _JS_EXTS]
    return res.first_file(candidates)


# An unclosed string or comment runs to the end in one match: each `"` or `/*` of a hostile
# tsconfig.json searched the rest of the file for its end (6.8 s at 65,536 characters).
_JSON_COMMENTS = re.compile(r'("(?:\\.|[^"\\])*+(?:"|\\?\Z))|//[^\n]*|/\*.*?(?:\*/|\Z)', re.DOTALL)
_TRAILING_COMMAS = re.compile(r",(\s*[}\]])")


def _lenient_json(text: str) -> Any:
    """tsconfig.json allows comments and trailing commas; strip them, keep strings intact."""
    text = _JSON_COMMENTS.sub(lambda m: m.group(1) or "", text)
    try:
        return json.loads(_TRAILING_COMMAS.sub(r"\1", text))
    except ValueError:
        return None


def _ts_paths(res: Resolver) -> tuple[str | None, str, dict[str, list[str]]]:
    """(baseUrl folder or None, folder `paths` are relative to, paths) from tsconfig/jsconfig.json."""
    for marker in ("tsconfig.json", "jsconfig.json"):
        folder = res.ancestor_with(marker)
        if folder is None:
            continue
        config = _lenient_json(res.read(posixpath.join(folder, marker) if folder else marker))
        options = config.get("compilerOptions") if isinstance(config, dict) else None
        if not isinstance(options, dict):
            return None, "", {}
        base_url = options.get("baseUrl")
        base = posixpath.normpath(posixpath.join(folder, str(base_url if base_url is not None else ".")))
        base = "" if base == "." else base
        raw_paths = options.get("paths")
        paths = raw_paths if isinstance(raw_paths, dict) else {}
        clean = {str(k): [str(t) for t in v] for k, v in paths.items() if isinstance(v, list)}
        # `paths` are relative to baseUrl, or to the config's folder without one (TS 4.1+).
        return (base if base_url is not None else None), base, clean
    return None, "", {}


def js_resolve(res: Resolver, module: str) -> str:
    if module.startswith("."):
        return _js_file(res, posixpath.normpath(posixpath.join(res.dir, module)))
    if res.ts_config is None:
        res.ts_config = _ts_paths(res)
    base_url, paths_base, paths = res.ts_config
    for pattern, targets in paths.items():
        prefix, star, suffix = pattern.partition("*")
        if star and module.startswith(prefix) and module.endswith(suffix):
            middle = module[len(prefix) : len(module) - len(suffix)]
        elif not star and module == pattern:
            middle = ""
        else:
            continue
        for target in targets:
            joined = posixpath.join(paths_base, target.replace("*", middle))
            found = _js_file(res, posixpath.normpath(joined))
            if found:
                return found
    if base_url is not None:
        # An explicit `baseUrl` makes bare specifiers resolve from it (`import x from "lib/x"`).
        return _js_file(res, posixpath.normpath(posixpath.join(base_url, module)))
    return ""


def rust_module_dir(res: Resolver) -> str:
    """Where the current file's child modules live."""
    name = posixpath.basename(res.path)
    if name in ("mod.rs", "lib.rs", "main.rs"):
        return res.dir
    return posixpath.join(res.dir, name[:-3]) if name.endswith(".rs") else res.dir


def _rust_crate_src(res: Resolver) -> str | None:
    cargo_dir = res.ancestor_with("Cargo.toml")
    if cargo_dir is None:
        return None
    return posixpath.join(cargo_dir, "src") if cargo_dir else "src"


def _rust_file(res: Resolver, base_dir: str, parts: list[str]) -> str:
    """The file of the longest module prefix of `parts` under base_dir (items at the end are dropped)."""
    for n in range(len(parts), 0, -1):
        stem = posixpath.join(base_dir, *parts[:n])
        found = res.first_file([stem + ".rs", posixpath.join(stem, "mod.rs")])
        if found:
            return found
    return ""


def rust_resolve(res: Resolver, segments: list[str]) -> str:
    if not segments:
        return ""
    head = segments[0]
    if head == "crate":
        src = _rust_crate_src(res)
        if src is None:
            return ""
        return (
            _rust_file(res, src, segments[1:])
            or res.first_file([posixpath.join(src, "lib.rs"), posixpath.join(src, "main.rs")])
            if len(segments) > 1
            else res.first_file([posixpath.join(src, "lib.rs"), posixpath.join(src, "main.rs")])
        )
    if head in ("self", "super"):
        base = rust_module_dir(res)
        rest = segments
        current_file = res.path
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                current_file = _rust_parent_file(res, current_file)
                if not current_file:
                    return ""
                base = _rust_children_dir(current_file)
            rest = rest[1:]
        if not rest:
            return res.norm(current_file)
        return _rust_file(res, base, rest) or res.norm(current_file)
    return ""


def _rust_children_dir(file: str) -> str:
    name = posixpath.basename(file)
    folder = posixpath.dirname(file)
    return folder if name in ("mod.rs", "lib.rs", "main.rs") else posixpath.join(folder, name[:-3])


def _rust_parent_file(res: Resolver, file: str) -> str:
    """The file of the parent module of `file`."""
    name = posixpath.basename(file)
    folder = posixpath.dirname(file)
    if name in ("mod.rs", "lib.rs", "main.rs"):
        if name != "mod.rs":
            return ""
        folder_parent = posixpath.dirname(folder)
    else:
        folder_parent = folder
        folder = posixpath.join(folder, name[:-3])
    # The module owning `folder_parent`: its mod.rs / lib.rs / main.rs, or the sibling `<dir>.rs`.
    return res.first_file(
        [posixpath.join(folder_parent, n) for n in ("mod.rs", "lib.rs", "main.rs")] + [folder_parent + ".rs"]
    )


def psr4_resolve(res: Resolver, name: str) -> str:
    """A PHP class name to its file through composer.json's PSR-4 autoload map."""
    if res.psr4 is None:
        res.psr4 = []
        folder = res.ancestor_with("composer.json")
        if folder is not None:
            try:
                config = json.loads(
                    res.read(posixpath.join(folder, "composer.json") if folder else "composer.json")
                )
            except ValueError:
                config = None
            for section in ("autoload", "autoload-dev"):
                table = config.get(section) if isinstance(config, dict) else None
                mapping = table.get("psr-4") if isinstance(table, dict) else None
                for prefix, dirs in (mapping or {}).items():
                    for d in [dirs] if isinstance(dirs, str) else list(dirs):
                        res.psr4.append((str(prefix), posixpath.normpath(posixpath.join(folder, str(d)))))
            res.psr4.sort(key=lambda pair: -len(pair[0]))  # the longest prefix wins
    for prefix, folder in res.psr4:
        if name.startswith(prefix):
            rest = name[len(prefix) :].replace("\\", "/")
            found = res.first_file(
                [posixpath.join(folder, rest + ".php") if folder != "." else rest + ".php"]
            )
            if found:
                return found
    return ""


# Indentation at a line's start is `[^\S\n]*`: `^\s*` crossed blank lines, so a run of them was
# read again from each of its lines (seconds at 20,000 blank lines).
_GO_MODULE = re.compile(r"^[^\S\n]*module\s+(\S+)", re.MULTILINE)


def go_resolve(res: Resolver, module: str) -> str:
    """A Go import path inside the file's own module (from the nearest go.mod) to its package folder."""
    if res.go_module is None:
        res.go_module = ("", "")
        mod_dir = res.ancestor_with("go.mod")
        if mod_dir is not None:
            match = _GO_MODULE.search(res.read(posixpath.join(mod_dir, "go.mod") if mod_dir else "go.mod"))
            if match:
                res.go_module = (mod_dir, match.group(1).strip('"'))
    mod_dir, mod_path = res.go_module
    if not mod_path or not (module == mod_path or module.startswith(mod_path + "/")):
        return ""
    rel = posixpath.join(mod_dir, module[len(mod_path) + 1 :]) if module != mod_path else mod_dir
    return res.norm(rel or ".") if res.is_dir(rel or ".") else ""
