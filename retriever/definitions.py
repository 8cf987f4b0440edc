"""Resolve identifiers used at a cursor to their definitions, through the file's imports.

Works from our own index only (no editor language server): the file's
imports (with `resolved` paths filled by the indexer), the symbol table and
the file layout. Per language:

- Python: `from m import x as y`, `import a.b as c`, relative imports,
  packages (`__init__.py`) and their re-exports, followed a few levels.
- JavaScript/TypeScript: ES imports and `require`, resolved by the indexer
  to files or index files; re-exports followed like Python's.
- Go: an imported package is a folder; its files' definitions are visible.
  The current package (same folder) is visible without an import.
- Java: imported classes, and classes of the same package (same folder).
- Rust: `use crate::...` paths resolved to files.
- Anything else: name match through the symbol table, nearest path first.
"""

from __future__ import annotations

import functools
import heapq
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from codectx.indexer.model import Definition, Import
from codectx.retriever.testfiles import sees_fixtures

_SPLIT = re.compile(r"\.|::|->")
SELF_NAMES = frozenset({"self", "this", "cls", "super", "Self"})
PACKAGE_INDEX = ("__init__.py", "index.ts", "index.tsx", "index.js", "index.mjs", "mod.rs", "lib.rs")
# Languages where a folder is one namespace: everything in the same folder is visible.
FOLDER_PACKAGES = frozenset({"go", "java", "kotlin", "csharp"})
# Languages whose imports the indexer resolves to workspace paths (an unresolved one is a library).
RESOLVED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java", "rust"})
MAX_NAME_MATCHES = 3
CLASS_KINDS = frozenset({"class", "interface", "struct"})
BASE_DEPTH = 2  # a receiver's class, its bases and theirs
MAX_BASES = 4
_BASES = re.compile(
    r"^\s*(?:export\s+)?(?:abstract\s+)?class\s+\w+(?:\s*\((.*?)\)|\s+extends\s+([\w.$]+))", re.S
)
_BASE_NAME = re.compile(r"(?<![\w.=])((?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)(?![\w$]*\s*=)")
REEXPORT_DEPTH = 3
# A receiver named like a class: an identifier of at least 3 characters starting in lower case.
_CONVENTION_RECEIVER = re.compile(r"[a-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*")
_CONVENTION_MIN = 3

# How a definition was found, best first; the number is the resolution's confidence.
CONFIDENCE = {
    "import": 1.0,
    "module": 0.95,
    "reexport": 0.9,
    "same-file": 0.85,
    "package": 0.8,
    "class": 0.75,
    "wildcard": 0.7,
    "fixture": 0.7,  # pytest: a conftest.py function named like the parameter
    "name": 0.4,
}


@dataclass(frozen=True)
class Resolution:
    definition: Definition
    used_as: str  # the identifier or chain as written at the cursor
    how: str  # a key of CONFIDENCE

    @property
    def confidence(self) -> float:
        return CONFIDENCE[self.how]


def class_spellings(receiver: str) -> list[str]:
    """Class names a receiver may be an instance of by its spelling: `route` -> Route,
    `cancelToken` -> CancelToken, `url_path` -> UrlPath and URLPath (a short first word may be
    an acronym)."""
    if len(receiver) < _CONVENTION_MIN:
        return []
    words = [w for w in receiver.split("_") if w]
    out = ["".join(w[:1].upper() + w[1:] for w in words)]
    if len(words) > 1 and len(words[0]) <= 3:
        out.append(words[0].upper() + "".join(w[:1].upper() + w[1:] for w in words[1:]))
    return list(dict.fromkeys(out))


def split_chain(chain: str) -> list[str]:
    return [p for p in _SPLIT.split(chain.strip().rstrip("(")) if p]


def _module_binding(imp: Import, language: str) -> list[str]:
    """Local names an import binds to the module itself."""
    if imp.alias:
        return [imp.alias]
    if imp.names:
        return []
    module = imp.module.strip()
    if language == "python":
        return [module.lstrip(".").split(".")[0], module.lstrip(".")] if module.strip(".") else []
    last = re.split(r"[/.:]+", module.rstrip("/"))[-1] if module else ""
    # Go's conventional /v2 suffix: the package name is the segment before it.
    if language == "go" and re.fullmatch(r"v\d+", last):
        parts = module.rstrip("/").split("/")
        last = parts[-2] if len(parts) > 1 else last
    return [last.replace("-", "_")] if last else []


class DefinitionResolver:
    """Resolves names for one file; cheap to build per request."""

    def __init__(
        self,
        store: Any,
        path: str,
        language: str,
        imports: Sequence[Import],
        local_types: dict[str, str] | None = None,
    ) -> None:
        self.store = store
        self.local_types = local_types or {}
        # Receivers whose class was resolved elsewhere (a factory's return type, in its own file).
        self.receiver_classes: dict[str, Definition] = {}
        # `eval_ctx` -> EvalContext when `frame.eval_ctx` is typed through Frame (chain_types).
        self.attribute_classes: dict[str, Definition] = {}
        self.path = path
        self.language = language
        self.imports = list(imports)
        self.folder = posixpath.dirname(path)
        self._named: dict[str, list[Definition]] = {}
        self._imports_of: dict[str, list[Import]] = {}
        self.by_name: dict[str, tuple[Import, str]] = {}
        self.modules: dict[str, Import] = {}
        self.wildcards: list[Import] = []
        self.imported_files = {imp.resolved for imp in imports if imp.resolved}
        self._imported = _TargetSet(self.imported_files)
        self._target_sets: dict[str, _TargetSet] = {}
        self._name_matches: dict[tuple[str, tuple[str, ...]], list[Definition]] = {}
        self._path_facts: dict[str, tuple[int, int]] = {}
        self._members: dict[tuple[str, int, int], list[Definition]] = {}
        for imp in self.imports:
            for original, alias in imp.names:
                if original == "*":
                    self.wildcards.append(imp)
                    continue
                self.by_name.setdefault(alias or original, (imp, original))
            for local in _module_binding(imp, language):
                self.modules.setdefault(local, imp)
            if language == "java" and not imp.names and imp.module.endswith(".*"):
                self.wildcards.append(imp)
            elif language == "java" and not imp.names and not imp.alias:
                self.by_name.setdefault(imp.module.rsplit(".", 1)[-1], (imp, imp.module.rsplit(".", 1)[-1]))

    def module_names(self) -> list[str]:
        """Local names bound to workspace modules or default exports, in import order."""
        out = [local for local, imp in self.modules.items() if imp.resolved and "." not in local]
        out += [
            local for local, (imp, original) in self.by_name.items() if original == "default" and imp.resolved
        ]
        return out

    def receiver_class(self, receiver: str, exclude: tuple[int, int] | None = None) -> Definition | None:
        """The class of a receiver (`client`, `self.stream`) known from the code in view."""
        parts = split_chain(receiver)
        if len(parts) == 2 and parts[0] in SELF_NAMES:
            receiver = f"self.{parts[1]}"  # `this.stream` is keyed like `self.stream`
        found = self.receiver_classes.get(receiver)
        if found is not None:
            return found
        typename = self.local_types.get(receiver)
        return self.receiver_class_named(typename, exclude) if typename else None

    def class_named_like(self, receiver: str, exclude: tuple[int, int] | None = None) -> Definition | None:
        """By convention, a receiver nothing in view types is an instance of the workspace's class
        spelled like it (`route` -> `Route`, `cancelToken` -> `CancelToken`, `url_path` ->
        `URLPath`): the one class of that name (a JavaScript constructor function with prototype
        methods counts), the one in this file or an imported file when there are several, else
        none. Imported names and modules resolve through the imports instead. A guess: only the
        receivers list asks (deflists.py), for a receiver the workspace calls nothing on; as a
        resolution of `x.member` it lowered recall (marshmallow, sqlparse)."""
        if (
            not _CONVENTION_RECEIVER.fullmatch(receiver)
            or receiver in SELF_NAMES
            or receiver in self.modules
            or receiver in self.by_name
        ):
            return None
        found: dict[tuple[str, int], Definition] = {}
        for typename in class_spellings(receiver):
            for d in self.named(typename):
                own = d.path == self.path and exclude is not None and exclude[0] <= d.start_line <= exclude[1]
                if not own and (d.kind in CLASS_KINDS or self._constructor(d)):
                    found.setdefault((d.path, d.start_line), d)
        if len(found) > 1:
            near = {k: d for k, d in found.items() if d.path == self.path or d.path in self.imported_files}
            found = near
        return next(iter(found.values())) if len(found) == 1 else None

    def _constructor(self, d: Definition) -> bool:
        """A JavaScript/TypeScript function used as a class: its file gives it prototype methods."""
        if d.kind != "function" or d.language not in ("javascript", "typescript", "tsx"):
            return False
        prefix = f"{d.qualname}.prototype."
        listing = getattr(self.store, "symbols_in_file", None)
        defs = listing(d.path) if listing is not None else self.named(d.name)
        return any(m.qualname.startswith(prefix) for m in defs)

    def receiver_class_named(
        self, typename: str, exclude: tuple[int, int] | None = None
    ) -> Definition | None:
        """The class a type name written in this file refers to (through its imports)."""
        for res in self.resolve(typename, exclude, by_name=False)[:1]:
            if res.definition.kind in CLASS_KINDS:
                return res.definition
        return None

    def class_members(self, cls: Definition, depth: int = 0) -> list[Definition]:
        """A class's methods (direct members), then its bases' (read from the class's signature,
        resolved through its file's imports), a couple of levels up."""
        key = (cls.path, cls.start_line, depth)
        found = self._members.get(key)
        if found is not None:
            return found
        listing = getattr(self.store, "symbols_in_file", None)
        defs = listing(cls.path) if listing is not None else self.named(cls.name)
        package = getattr(self.store, "symbols_in_folder", None)
        if cls.language == "go" and package is not None:
            defs = package(posixpath.dirname(cls.path)) or defs  # methods in any file of the package
        found = [
            d
            for d in defs
            for prefix in (f"{cls.qualname}.", f"{cls.qualname}.prototype.")  # JS: `Route.prototype.dispatch`
            if d.qualname.startswith(prefix) and "." not in d.qualname[len(prefix) :]
        ]
        self._members[key] = found
        if depth >= BASE_DEPTH or cls.kind != "class":
            return found
        signature = next(
            (c.signature for c in self.store.chunks_for_file(cls.path) if c.start_line == cls.start_line), ""
        )
        bases = _BASES.search(signature)
        if not bases:
            return found
        home = (
            self
            if cls.path == self.path
            else DefinitionResolver(self.store, cls.path, cls.language, self.imports_of(cls.path))
        )
        seen = {d.name for d in found}
        for base in _BASE_NAME.findall(bases.group(1) or bases.group(2))[:MAX_BASES]:
            for res in home.resolve(base, by_name=False)[:1]:
                if res.definition.kind != "class" or res.definition == cls:
                    continue
                for d in self.class_members(res.definition, depth + 1):
                    if d.name not in seen:
                        seen.add(d.name)
                        found.append(d)
        return found

    def named(self, name: str) -> list[Definition]:
        found = self._named.get(name)
        if found is None:
            found = self._named[name] = list(self.store.symbols_named(name))
        return found

    def imports_of(self, path: str) -> list[Import]:
        found = self._imports_of.get(path)
        if found is None:
            try:
                found = list(self.store.file_imports(path))
            except Exception:
                found = []
            self._imports_of[path] = found
        return found

    def _package_files(self, target: str) -> tuple[str, ...]:
        return _package_files(target)

    def in_target(self, name: str, target: str, depth: int = 0) -> tuple[list[Definition], bool]:
        """Definitions of `name` inside an import target, following re-exports; (found, via re-export)."""
        within = self._target_sets.get(target)
        if within is None:
            within = self._target_sets[target] = _TargetSet([target])
        defs = [d for d in self.named(name) if within.contains(d.path)]
        if defs or depth >= REEXPORT_DEPTH or not target:
            return _prefer_top_level(defs, name), False
        # Re-exports: the target (or its package index file) imports the name from elsewhere.
        for source in (target, *self._package_files(target)):
            for imp in self.imports_of(source):
                for original, alias in imp.names:
                    if (alias or original) == name and imp.resolved:
                        found, _ = self.in_target(original, imp.resolved, depth + 1)
                        if found:
                            return found, True
                    if original == "*" and imp.resolved:
                        found, _ = self.in_target(name, imp.resolved, depth + 1)
                        if found:
                            return found, True
        return [], False

    def resolve(
        self, chain: str, exclude: tuple[int, int] | None = None, by_name: bool = True
    ) -> list[Resolution]:
        """Definitions a name or chain at the cursor refers to, best first. `by_name=False`
        leaves out the last resort, a bare match in the symbol table (costly for common names)."""
        parts = split_chain(chain)
        if not parts:
            return []
        name = parts[-1]
        head = parts[0]
        results: list[Resolution] = []

        def add(defs: Iterable[Definition], how: str) -> None:
            for d in defs:
                if (
                    exclude
                    and d.path == self.path
                    and d.start_line <= exclude[1]
                    and d.end_line >= exclude[0]
                ):
                    continue
                results.append(Resolution(d, chain, how))

        if len(parts) == 1:
            if name in self.by_name:
                imp, original = self.by_name[name]
                if not imp.resolved and self.language in RESOLVED_LANGUAGES:
                    return []  # imported from outside the workspace (a library): not in our index
                defs, via = self.in_target(original, imp.resolved)
                add(defs, "reexport" if via else "import")
            if not results:
                add(
                    _prefer_top_level([d for d in self.named(name) if d.path == self.path], name), "same-file"
                )
        else:
            if head in self.modules or ".".join(parts[:-1]) in self.modules:
                imp = self.modules.get(".".join(parts[:-1])) or self.modules[head]
                if not imp.resolved and self.language in RESOLVED_LANGUAGES:
                    return []  # a library module
                defs, via = self.in_target(name, imp.resolved)
                add(defs, "reexport" if via else "module")
            elif head in self.by_name:
                imp, original = self.by_name[head]
                # `Class.method` on an imported class, or `pkg.x` on an imported package.
                cls_defs, _ = self.in_target(original, imp.resolved)
                for cls in cls_defs:
                    add(
                        [d for d in self.named(name) if d.path == cls.path and _member_of(d, cls.name)],
                        "class",
                    )
                if not results and imp.resolved:
                    add(self.in_target(name, posixpath.join(imp.resolved, original))[0], "module")
            elif head in SELF_NAMES and len(parts) == 2:
                add([d for d in self.named(name) if d.path == self.path], "same-file")
            elif (owner := self.receiver_class(".".join(parts[:-1]), exclude)) is not None:
                # `client = Client(...)` then `client.send`, `self.stream.look` with `self.stream:
                # TokenStream`: a member of the receiver's class or of its bases.
                add([d for d in self.class_members(owner) if d.name == name], "class")
        if not results and self.language in FOLDER_PACKAGES:
            same_package = [
                d
                for d in self.named(name)
                if d.path != self.path and posixpath.dirname(d.path) == self.folder
            ]
            add(same_package, "package")
        if not results:
            for imp in self.wildcards:
                target = imp.resolved or imp.module.rstrip(".*").replace(".", "/")
                add(self.in_target(name, target)[0], "wildcard")
        if not results and len(parts) == 1 and self.sees_fixtures():
            add(self.fixtures(name), "fixture")
        if not results and by_name:
            add(self._name_match(name, parts[:-1]), "name")
        return _dedupe(results)

    def sees_fixtures(self) -> bool:
        """This file is a Python test file: its bare names may be pytest fixtures."""
        return self.language == "python" and sees_fixtures(self.path)

    def fixtures(self, name: str) -> list[Definition]:
        """pytest's fixture of that name that this test file gets: a function of the nearest
        `conftest.py`, in its folder or a folder above it, that defines one (a test's parameter
        `client` is the `client` fixture; nothing imports it). A nearer one overrides those above,
        as in pytest."""
        above = {self.folder: 0}
        folder = self.folder
        while folder:
            folder = posixpath.dirname(folder)
            above.setdefault(folder, len(above))
        found = [
            d
            for d in self.named(name)
            if d.kind == "function"
            and posixpath.basename(d.path) == "conftest.py"
            and posixpath.dirname(d.path) in above
        ]
        nearest = min((above[posixpath.dirname(d.path)] for d in found), default=0)
        return [d for d in found if above[posixpath.dirname(d.path)] == nearest]

    def _name_match(self, name: str, qualifiers: Sequence[str]) -> list[Definition]:
        """The symbol table's best guesses: a qualifier naming the class, then the nearest path."""
        key = (name, tuple(qualifiers))
        cached = self._name_matches.get(key)
        if cached is not None:
            return cached
        defs = self.named(name)
        if not defs:
            return []
        hints = {q.lower().strip("_") for q in qualifiers if q not in SELF_NAMES}
        hints.discard("")
        # Common names (`get`, `save`) have thousands of definitions: per-path facts are computed
        # once per resolver (paths repeat across names), the owner only when a qualifier hints.
        facts_of = self._path_facts

        def rank(d: Definition) -> tuple[int, int, int, int, str, int]:
            facts = facts_of.get(d.path)
            if facts is None:
                facts = facts_of[d.path] = (
                    0 if self._imported.contains(d.path) else 1,
                    _distance(self.path, d.path),
                )
            hinted = 1
            if hints and "." in d.qualname:
                owner = d.qualname.rsplit(".", 1)[0].lower()
                hinted = 0 if any(h in owner or owner.endswith(h) for h in hints) else 1
            return (facts[0], hinted, 0 if d.exported else 1, facts[1], d.path, d.start_line)

        found = heapq.nsmallest(MAX_NAME_MATCHES, defs, key=rank)
        self._name_matches[key] = found
        return found


@functools.lru_cache(maxsize=4096)
def _package_files(target: str) -> tuple[str, ...]:
    return tuple(posixpath.join(target, name) for name in PACKAGE_INDEX)


class _TargetSet:
    """Does a path belong to any of several import targets (a file, a folder's direct files, or a
    module path without extension)? O(1) per path: common names have thousands of definitions."""

    def __init__(self, targets: Iterable[str]) -> None:
        targets = [t for t in targets if t]
        self.exact = set(targets)
        self.folders = {t.rstrip("/") for t in targets}
        self.stems = {t for t in targets if not posixpath.splitext(t)[1]}
        self._seen: dict[str, bool] = {}

    def contains(self, path: str) -> bool:
        found = self._seen.get(path)
        if found is None:
            found = self._seen[path] = (
                path in self.exact
                or posixpath.dirname(path) in self.folders
                or (bool(self.stems) and posixpath.splitext(path)[0] in self.stems)
            )
        return found


# A name starts after no word character (a `$` prefix left out, as `\b` did) and, like the
# annotation and the spaces around it, is read once (possessive `*+`, `++`): with plain
# quantifiers a line of `x:` and 2,000 spaces took minutes to fail, `a$a$a$...` seconds.
_ASSIGN = re.compile(
    r"(?:(?<![\w$])\$*([A-Za-z_][\w$]*+)\s*+(?::\s*+[\w.<>\[\], ]++)?\s*+:?=\s*+(?:new\s+|&)?"
    r"((?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*)\s*[({])"
    r"|(?:\b([A-Z][\w$]*)(?:<[^<>]*+>)?\s+([a-z_$][\w$]*)\s*=\s*new\b)"
)


def local_types(scope_text: str) -> dict[str, str]:
    """Variables bound to a constructor call in a scope: `c = Client(...)`, `Client c = new Client()`.

    Only capitalised callees count (classes by convention), so `x = load()` is not mistaken for one.
    """
    found: dict[str, str] = {}
    # Only lines with an assignment can bind one (the regex is slow over whole functions).
    text = "\n".join(row for row in scope_text.split("\n") if "=" in row)
    for match in _ASSIGN.finditer(text):
        if match.group(1):
            var, ctor = match.group(1), match.group(2)
        else:
            var, ctor = match.group(4), match.group(3)
        if var and ctor:
            found.setdefault(var, ctor)
    return found


def _member_of(d: Definition, owner: str) -> bool:
    return d.qualname.startswith(owner + ".") or d.qualname.startswith(owner + "::")


def _prefer_top_level(defs: list[Definition], name: str) -> list[Definition]:
    top = [d for d in defs if d.qualname in ("", name)]
    return top or defs


def _distance(a: str, b: str) -> int:
    pa, pb = a.split("/")[:-1], b.split("/")[:-1]
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    return (len(pa) - common) + (len(pb) - common)


def _dedupe(results: list[Resolution]) -> list[Resolution]:
    seen: set[tuple[str, int]] = set()
    out = []
    for r in results:
        key = (r.definition.path, r.definition.start_line)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
