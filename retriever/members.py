"""What a receiver offers: the members `x.` can reach, ranked before the member's name is typed.

For a receiver whose target is known, the candidates are its members, not only the few the
rest of the workspace calls most on that name:

- an imported workspace module (`nodes.`, `fields.`) or a default-export object
  (`import utils from './utils.js'`): the module's top-level definitions, and for a package
  index (`__init__.py`, `index.ts`) the names it re-exports;
- an object whose class is known (`receiver_types`): the class's methods and its bases'.

A big module has hundreds of members, so each is scored by its share of the workspace's uses
of the receiver plus the words its head (name, signature, doc) shares with the scope; the
best `MAX_OFFERED` are kept.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codectx.indexer.model import Definition
from codectx.retriever.definitions import PACKAGE_INDEX, DefinitionResolver
from codectx.retriever.terms import TermSets

MAX_OFFERED = 30  # members kept per receiver
MAX_SCANNED = 400  # members scored per receiver (a generated module can have thousands)
MAX_REEXPORTS = 60  # names of a package index followed to their definitions
# A member sharing the most words with the scope counts a quarter of all uses (development set
# not-typed R@10 pooled by value: 0 0.735, 0.1 0.745, 0.25 0.754, 0.35 0.751, 0.5 0.749, 1.0 0.749;
# 0.25 against 0.5: jinja2 +0.02, sqlparse +0.03, express +1 task of 12, marshmallow -0.01).
AFFINITY_SHARE = 0.25
FLOOR = 1e-3  # a class method with no use and no shared word still counts a little
# A member whose name the enclosing function's name holds (`parse_condexpr` builds
# `nodes.CondExpr`, `test_uuid_field` a `fields.UUID`) counts as much as all the uses together.
NAMED_SHARE = 1.0
MIN_NAMED = 4  # shorter member names (`get`, `Or`) sit inside too many function names by chance
_SCOPE_NAME = re.compile(r"\b(?:def|function)\s+([\w$]+)")
MEMBER_KINDS = frozenset({"function", "class", "method", "constructor", "interface", "struct", "macro"})
ONE_EXPORT_KINDS = frozenset({"function", "class"})


@dataclass(frozen=True)
class Offer:
    definition: Definition
    score: float


def module_target(resolver: DefinitionResolver, receiver: str) -> str:
    """The workspace file a receiver is bound to when it names a module or a default export
    (`import utils from './utils.js'`, `from . import nodes`); "" otherwise."""
    imp = resolver.modules.get(receiver)
    if imp is None:
        bound = resolver.by_name.get(receiver)
        if bound is None or bound[1] not in ("default", "*"):
            return ""
        imp = bound[0]
    return imp.resolved


_DEFAULT_EXPORT = re.compile(r"^export\s+default\s+(.*)$", re.M)
# What follows `export default` when the export is one definition: `function f`, `class C`,
# `(a) => ...`, `interface I`; or a name (`export default merge;`), one if it names a function or class.
_ONE_DEFINITION = re.compile(
    r"(?:async\s+)?function\b|(?:abstract\s+)?class\b|interface\b|(?:async\s+)?(?:\(|[A-Za-z_$][\w$]*\s*=>)"
)
# Possessive: spaces around the `;` are read once (the two `\s*` split a long run every way).
_NAME_ONLY = re.compile(r"([A-Za-z_$][\w$]*+)\s*+;?\s*+(?://.*)?$")


def exports_one_definition(file_texts: Sequence[str], symbols: Sequence[Definition]) -> bool:
    """Whether a module's default export is one function or class (`export default function
    mergeConfig`, `export default AxiosHeaders;`, an arrow function, an interface): its importer's
    name is then that definition, not a namespace of the file's members (unlike `export default
    {isArray, ...}` or a variable holding an object). `file_texts` are the module's chunks'
    texts in file order, `symbols` its definitions. The last `export default` line decides: one
    in a comment above the real one (an example, a commented-out version) does not."""
    rest = None
    for text in file_texts:
        for found in _DEFAULT_EXPORT.finditer(text):
            rest = found.group(1)
    if rest is None:
        return False
    if _ONE_DEFINITION.match(rest):
        return True
    named = _NAME_ONLY.match(rest)
    if named is None:
        return False  # an object literal, a call's result
    name = named.group(1)
    return any(d.name == name and d.qualname == name and d.kind in ONE_EXPORT_KINDS for d in symbols)


def module_members(resolver: DefinitionResolver, target: str) -> list[Definition]:
    """Top-level definitions of a module file (or a package's index file), and what that
    index re-exports from the workspace."""
    store = resolver.store
    listing = getattr(store, "symbols_in_file", None)
    if listing is None:
        return []
    files = [target] if posixpath.splitext(target)[1] else [posixpath.join(target, n) for n in PACKAGE_INDEX]
    out: list[Definition] = []
    for path in files:
        defs = [d for d in listing(path) if d.kind in MEMBER_KINDS and d.qualname in ("", d.name)]
        out.extend(defs)
        if not posixpath.basename(path).startswith(("__init__.", "index.")):
            continue
        names = [
            (original, imp.resolved)
            for imp in resolver.imports_of(path)
            if imp.resolved
            for original, _alias in imp.names
            if original not in ("*", "default")
        ]
        for original, resolved in names[:MAX_REEXPORTS]:
            found, _via = resolver.in_target(original, resolved)
            out.extend(found[:1])
        if out:
            break
    return out[:MAX_SCANNED]


def _flat_scope_name(scope_text: str) -> str:
    """The enclosing function's name from its head, lower case, without `test` and underscores."""
    found = _SCOPE_NAME.search(scope_text[:500])
    if found is None:
        return ""
    name = found.group(1).lower()
    return (name[4:] if name.startswith("test") else name).replace("_", "")


def rank_offers(
    members: Sequence[Definition],
    shares: Mapping[str, float],
    heads: Mapping[tuple[str, int], str],
    scope_text: str,
    term_sets: TermSets,
    every: bool = False,
) -> list[Offer]:
    """Members scored by their share of the receiver's uses plus `AFFINITY_SHARE` times the
    words their head shares with the scope (relative to the best member's), plus `NAMED_SHARE`
    when the enclosing function's name holds the member's name; members with
    neither are left out unless `every` (a class's methods: public ones, then private, in
    order). Best first, at most `MAX_OFFERED`."""
    scope = term_sets.of(scope_text)
    affinity: dict[tuple[str, int], float] = {}
    for d in members:
        key = (d.path, d.start_line)
        terms = term_sets.of(heads.get(key, d.qualname or d.name))
        affinity[key] = len(terms & scope) / math.sqrt(len(terms) + 1)
    best = max(affinity.values(), default=0.0) or 1.0
    scope_name = _flat_scope_name(scope_text)
    scored: dict[tuple[str, int], Offer] = {}
    for d in members:
        key = (d.path, d.start_line)
        score = shares.get(d.name, 0.0) + AFFINITY_SHARE * affinity[key] / best
        flat = d.name.lower().replace("_", "")
        if len(flat) >= MIN_NAMED and flat in scope_name:
            score += NAMED_SHARE
        if every and score <= 0:
            score = FLOOR / (2.0 if d.name.startswith("_") else 1.0)
        if score > 0 and key not in scored:
            scored[key] = Offer(d, score)
    ordered = sorted(
        scored.values(), key=lambda o: (-round(o.score, 9), o.definition.path, o.definition.start_line)
    )
    return ordered[:MAX_OFFERED]
