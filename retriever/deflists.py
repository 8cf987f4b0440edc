"""The ranked definition lists of completion context, one per source.

Each list ranks definitions by one kind of evidence; `rankdefs` fuses them:

- used: names and chains the enclosing scope uses, resolved through the file's
  imports (a bare name matched only by name is kept apart, in `weak`);
- imported: names the file imports but the scope does not use yet, by words
  shared with the scope, names the rest of the file does not use either first;
- receivers: what the rest of the workspace calls on the receivers in the
  scope (`ctx.` -> `Context.get_parameter_source`, see `receivers`); for a
  receiver bound to a workspace module, or whose class the code in view names
  (`receiver_types`), the module's or class's members (`members`);
- callees: what code similar to the scope calls (see `callees`).

Every list depends only on the enclosing scope, never on the cursor column,
so the ranking holds while the cursor moves within a function.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codectx.indexer.model import Chunk, Definition
from codectx.retriever.callees import reachable_as_attribute, similar_code_callees
from codectx.retriever.cursor_info import CursorInfo
from codectx.retriever.definitions import RESOLVED_LANGUAGES, DefinitionResolver, split_chain
from codectx.retriever.members import (
    MEMBER_KINDS,
    Offer,
    exports_one_definition,
    module_members,
    module_target,
    rank_offers,
)
from codectx.retriever.neighbours import neighbour_definitions
from codectx.retriever.pending import pending_in_scope
from codectx.retriever.receivers import receivers_in
from codectx.retriever.search import HybridSearcher, chunk_for_definition

TIERS = {"definition": 0, "scope": 1, "recent": 2, "retrieved": 3}
MAX_NAMES = 48
PER_NAME = 2
MAX_IMPORTED = 60
MAX_CALLEES = 24
WEAK_SHARE = 0.25  # a name matched only by name counts a quarter of one resolved through imports
# An import that the rest of the file does not use is there for the code being written (the user
# imported it, or is about to use it): each further use elsewhere pushes a name down the list.
# At 4 a name used once elsewhere (log1p(1) * 4 = 2.8) falls below every unused one whatever the
# words it shares with the scope (development set not-typed R@10 pooled: 1.0 0.744, 1.5 0.745,
# 2.5 0.748, 4 0.749 with mobx +0.03 and tomlkit +0.02 and no repository lower, 10 0.748 with
# immer -0.02; bench/devset_sweep.py).
USED_ELSEWHERE_PENALTY = 4.0


@dataclass
class Candidate:
    path: str
    start_line: int
    end_line: int
    symbol: str
    reason: str
    score: float
    text: str
    why: str
    typed_call: bool = False

    @property
    def rank_key(self) -> tuple[int, bool, float, str, int]:
        # The call being typed is the one cursor-dependent input: its definition goes first.
        return (TIERS[self.reason], not self.typed_call, -round(self.score, 9), self.path, self.start_line)


def definition_candidate(chunk: Chunk, d: Definition, why: str, typed_call: bool = False) -> Candidate:
    """A definition's chunk as a candidate; its rank comes from the fused lists, not a score."""
    return Candidate(
        chunk.path,
        chunk.start_line,
        chunk.end_line,
        d.qualname or d.name,
        "definition",
        0.0,
        chunk.text,
        why,
        typed_call=typed_call,
    )


def overlaps(path: str, start: int, end: int, own_path: str, own: tuple[int, int]) -> bool:
    return path == own_path and start <= own[1] and end >= own[0]


_IDENT_OR_CHAIN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)*")


def scope_names(info: CursorInfo, scope_text: str) -> list[str]:
    """Names and chains in first-use order in the enclosing scope, then any others, then the typed call.

    First-use order in the scope text does not depend on where the cursor is.
    """
    known = set(info.names) | set(info.chains)
    ordered: dict[str, None] = {}
    for match in _IDENT_OR_CHAIN.finditer(scope_text):
        chain = match.group()
        parts = split_chain(chain)
        if len(parts) > 1:
            ordered.setdefault(chain, None)
        for part in parts:
            if part in known or (not known and len(part) > 1):
                ordered.setdefault(part, None)
    for name in sorted(known):
        ordered.setdefault(name, None)
    names = list(ordered)[:MAX_NAMES]
    if info.callee and info.callee not in names:
        names.append(info.callee)
    return names


def definition_lists(
    searcher: HybridSearcher,
    path: str,
    language: str,
    info: CursorInfo,
    resolver: DefinitionResolver,
    names: list[str],
    own: tuple[int, int],
    scope_text: str,
    file_text: str = "",
) -> dict[str, list[Candidate]]:
    """Ranked definition lists: names the scope uses (by import/module/file, then by bare name
    match) in first-use order, and names the file imports but the scope does not use yet.
    `file_text` is the whole document as the editor has it (the scope is part of it)."""
    typed = info.callee
    used: list[Candidate] = []
    weak: list[Candidate] = []
    pending: list[Candidate] = []
    fresh = pending_in_scope(info, scope_text, names, language)
    for name in names:
        is_chain = len(split_chain(name)) > 1
        taken = 0
        # A bare local name matching some far-away definition is mostly noise: not looked up.
        by_name = name == typed or is_chain or name in info.chains or language not in RESOLVED_LANGUAGES
        for res in resolver.resolve(name, exclude=own, by_name=by_name):
            d = res.definition
            if res.how == "name" and is_chain and not reachable_as_attribute(d):
                continue  # `app.teardown_request` is no function nested in some test
            chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
            if chunk is None or overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
                continue
            cand = definition_candidate(
                chunk,
                d,
                f"definition of `{name}` used here ({res.how.replace('-', ' ')} lookup)",
                typed_call=bool(typed) and name == typed,
            )
            (weak if res.how == "name" else used).append(cand)
            if name in fresh and res.how != "name":
                pending.append(cand)
            taken += 1
            if taken >= PER_NAME or res.how != "name":
                break
    # Names the file imports but this scope does not use yet: what the next line may call.
    # Ranked by how much their definition shares words with the enclosing scope, less the more
    # the rest of the file uses them.
    used_names = set(names)
    term_sets = searcher.store.term_sets
    scope_terms = term_sets.of(scope_text)
    elsewhere = occurrences_outside(file_text, scope_text)
    imported: list[tuple[float, int, Candidate]] = []
    for position, local in enumerate(n for n in resolver.by_name if n not in used_names):
        if position >= MAX_IMPORTED:
            break
        for res in resolver.resolve(local, exclude=own)[:1]:
            d = res.definition
            chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
            if chunk is None or overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
                continue
            head = f"{chunk.qualname} {chunk.signature} {chunk.doc}"
            terms = term_sets.of(head)
            similarity = len(terms & scope_terms) / math.sqrt(len(terms) + 1)
            similarity -= USED_ELSEWHERE_PENALTY * math.log1p(max(0, elsewhere.get(local.encode(), 0)))
            cand = definition_candidate(
                chunk, d, f"definition of `{local}`, imported by this file but not used in this scope yet"
            )
            imported.append((-similarity, position, cand))
    ordered = [c for _s, _p, c in sorted(imported, key=lambda x: (x[0], x[1]))]
    return {"used": used, "weak": weak, "imported": ordered, "pending": pending}


def occurrences_outside(file_text: str, scope_text: str) -> Counter[bytes]:
    """How often each ASCII identifier (as bytes) occurs in the file outside the scope, its
    import included."""
    counts = _words(file_text)
    counts.subtract(_words(scope_text))
    return counts


# Bytes that can be part of an identifier; everything else splits words. A byte-level split is
# 2.5x faster than a regex over a 100 kB file, and only ASCII names are looked up.
_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_SPLIT_TABLE = bytes(c if c in _WORD_BYTES else 32 for c in range(256))


def _words(text: str) -> Counter[bytes]:
    return Counter(text.encode("utf-8", "surrogatepass").translate(_SPLIT_TABLE).split())


# The lists whose size decides whether the budget is full without similar code: what the scope
# uses and imports. The receivers list is an inference from usage elsewhere, like the callees:
# it ranks well only together with the similar code's lists.
STRUCTURAL = ("used", "weak", "imported")
MAX_RECEIVERS = 16
RECEIVER_MEMBERS = 12
MAX_UNUSED_MODULES = 4
MODULE_USES = 100  # a module receiver's used members, whose shares score its members


def receiver_list(
    searcher: HybridSearcher,
    resolver: DefinitionResolver,
    names: Sequence[str],
    path: str,
    own: tuple[int, int],
    scope_text: str = "",
) -> tuple[list[Candidate], list[Candidate]]:
    """Definitions of what the rest of the workspace calls on the receivers in this scope
    (`ctx.` -> `Context.get_parameter_source`), by share of the receiver's uses; for a receiver
    bound to a workspace module, its members by uses and words shared with the scope (`members`).
    Returns them all, and (in the same order) those offered as methods of a receiver's known class."""
    calls = searcher.store.receiver_calls()
    if calls is None:
        return [], []
    scored: dict[tuple[str, int], list[Any]] = {}
    of_class: set[tuple[str, int]] = set()

    def add(d: Definition, score: float, why: str) -> tuple[str, int] | None:
        chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
        if chunk is None or overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            return None
        key = (chunk.path, chunk.start_line)
        if key in scored:
            scored[key][0] += score
            return key
        scored[key] = [score, definition_candidate(chunk, d, why)]
        return key

    in_scope = receivers_in(names)[:MAX_RECEIVERS]
    written = set(names)
    # Workspace modules the file imports but the scope has not used yet: the next line may be
    # its first use (`utils.` in a new function), ranked after the receivers in use.
    targets: dict[str, str] = {}

    def namespace(receiver: str) -> str:
        if receiver not in targets:
            targets[receiver] = _namespace_target(searcher, resolver, receiver)
        return targets[receiver]

    in_view = set(in_scope)
    modules = (r for r in resolver.module_names() if r not in in_view and namespace(r))
    unused = list(itertools.islice(modules, MAX_UNUSED_MODULES))
    # Likewise the enclosing class's attributes of a known class (`self.stream`).
    attributes = list(
        dict.fromkeys(
            k[5:]
            for k in [*resolver.local_types, *resolver.receiver_classes]
            if k.startswith("self.") and k[5:] not in in_scope
        )
    )
    unused += attributes[:MAX_UNUSED_MODULES]
    for position, receiver in enumerate([*in_scope, *unused]):
        discount = 1.0 + position / 4
        target = namespace(receiver)
        if target:
            uses = calls.members(receiver, path, MODULE_USES)
            offers = _module_offers(searcher, resolver, receiver, target, uses, scope_text, own)
            if receiver not in in_scope:
                # A module the scope has not used yet: a member named like a name the scope
                # already uses (`connect` from another module) is that other definition.
                offers = [o for o in offers if o.definition.name not in written]
            if offers:
                for offer in offers:
                    member = f"{receiver}.{offer.definition.name}"
                    why = f"definition of `{member}`, a member of the module `{receiver}`"
                    add(offer.definition, offer.score / discount, why)
                continue
        uses = calls.members(receiver, path, RECEIVER_MEMBERS)
        cls = (
            resolver.receiver_class(receiver, own)
            or resolver.receiver_class(f"self.{receiver}", own)
            or resolver.attribute_classes.get(receiver)
        )
        if cls is None and not uses:
            # Nothing types it and the workspace calls nothing on it: the class it is named like
            # (`route` -> Route). Development set not-typed R@10 0.756 -> 0.758 pooled, express
            # 0.67 -> 0.83, axios one task lower; offered also when there are uses, it lowered
            # sqlparse (`token.` -> Token before TokenList) (bench/devset_sweep.py).
            cls = resolver.class_named_like(receiver, own)
        offers = _class_offers(searcher, resolver, cls, uses, scope_text) if cls else []
        for offer in _not_used(offers, receiver, written):
            why = f"definition of `{receiver}.{offer.definition.name}`, a method of `{receiver}`'s class"
            key = add(offer.definition, offer.score / discount, why)
            if key is not None:
                of_class.add(key)
        if not uses or offers:
            continue
        imported = receiver in resolver.modules or receiver in resolver.by_name
        # Imported modules and classes, and locally constructed objects, resolve through the
        # file's imports; any other receiver through the class its members point to.
        typed = imported or receiver in resolver.local_types
        owner = "" if imported else calls.owner([u.member for u in uses], resolver.named)
        for use in uses:
            d = None
            if typed:
                found = resolver.resolve(f"{receiver}.{use.member}", exclude=own)[:1]
                d = found[0].definition if found and found[0].how != "name" else None
            if d is None and not imported:
                d = calls.pick(use.member, owner, resolver.named)
            if d is not None:
                why = (
                    f"definition of `{receiver}.{use.member}`, as the rest of the workspace uses `{receiver}`"
                )
                add(d, use.share / discount, why)
    ordered = sorted(scored.values(), key=lambda x: (-round(x[0], 9), x[1].path, x[1].start_line))
    ranked = [cand for _score, cand in ordered]
    return ranked, [c for c in ranked if (c.path, c.start_line) in of_class]


def _namespace_target(searcher: HybridSearcher, resolver: DefinitionResolver, receiver: str) -> str:
    """The workspace file whose members `receiver.` reaches (a module, a default-export object);
    "" for a default export that is one function or class (`mergeConfig.` is not a namespace of
    mergeConfig.js's helpers), and for anything else."""
    target = module_target(resolver, receiver)
    bound = resolver.by_name.get(receiver)
    if not target or receiver in resolver.modules or bound is None or bound[1] != "default":
        return target  # a module, or a namespace import (`import * as ns`)
    texts = [c.text for c in sorted(searcher.chunks_for_file(target), key=lambda c: c.start_line)]
    listing = getattr(searcher.store, "symbols_in_file", None)
    symbols = listing(target) if listing is not None else []
    return "" if exports_one_definition(texts, symbols) else target


def _not_used(offers: Sequence[Offer], receiver: str, written: set[str]) -> list[Offer]:
    """Offers the scope does not call on this receiver yet: the ones it does are in `used`, and
    the next call is more often a new one."""
    return [
        o
        for o in offers
        if f"{receiver}.{o.definition.name}" not in written
        and f"self.{receiver}.{o.definition.name}" not in written
    ]


def _class_offers(
    searcher: HybridSearcher,
    resolver: DefinitionResolver,
    cls: Definition,
    uses: Sequence[Any],
    scope_text: str,
) -> list[Offer]:
    """The methods of a receiver's class (and its bases') by uses and words shared with the scope."""
    members = [
        d
        for d in resolver.class_members(cls)
        if d.kind in MEMBER_KINDS and not (d.name.startswith("__") and d.name.endswith("__"))
    ]
    return _ranked(searcher, members, uses, scope_text, every=True)


def _module_offers(
    searcher: HybridSearcher,
    resolver: DefinitionResolver,
    receiver: str,
    target: str,
    uses: Sequence[Any],
    scope_text: str,
    own: tuple[int, int],
) -> list[Offer]:
    """A module receiver's members ranked by uses and by words shared with the scope; the used
    members that the module only re-exports are resolved through the file's imports."""
    members = module_members(resolver, target)
    if not members:
        return []
    listed = {d.name for d in members}
    for use in uses[:RECEIVER_MEMBERS]:  # re-exports are costly to follow: the most used only
        if use.member not in listed:
            found = resolver.resolve(f"{receiver}.{use.member}", exclude=own, by_name=False)[:1]
            members.extend(r.definition for r in found)
    return _ranked(searcher, members, uses, scope_text)


def _ranked(
    searcher: HybridSearcher,
    members: Sequence[Definition],
    uses: Sequence[Any],
    scope_text: str,
    every: bool = False,
) -> list[Offer]:
    heads: dict[tuple[str, int], str] = {}
    for file in {d.path for d in members}:
        for chunk in searcher.chunks_for_file(file):
            heads.setdefault((file, chunk.start_line), f"{chunk.qualname} {chunk.signature} {chunk.doc}")
    shares = {u.member: u.share for u in uses}
    return rank_offers(members, shares, heads, scope_text, searcher.store.term_sets, every)


def callee_list(
    searcher: HybridSearcher,
    similar: Sequence[tuple[Chunk, float]],
    names: Sequence[str],
    language: str,
    path: str,
    own: tuple[int, int],
) -> list[Candidate]:
    """Definitions that `similar` code (chunk, weight; best first) calls, most voted first."""
    out: list[Candidate] = []
    for vote in similar_code_callees(searcher.store, similar, names, language):
        d = vote.definition
        chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
        if chunk is None or overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            continue
        out.append(
            definition_candidate(
                chunk,
                d,
                f"definition of `{vote.name}`, called by similar code ({', '.join(vote.sources[:3])})",
            )
        )
        if len(out) >= MAX_CALLEES:
            break
    return out


def neighbour_list(
    searcher: HybridSearcher,
    resolver: DefinitionResolver,
    lines: Sequence[str],
    scope: tuple[int, int],
    own: tuple[int, int],
    names: Sequence[str],
) -> list[Candidate]:
    """Definitions of what the code around the scope calls, nearest and most called first."""
    found = neighbour_definitions(
        resolver,
        lines,
        scope,
        own,
        set(names),
        lambda d: chunk_for_definition(searcher.chunks_for_file(d.path), d),
    )
    # Only other files' definitions are found, so none overlaps the cursor's own region.
    return [
        definition_candidate(chunk, d, f"definition of `{call}`, called by the code around this scope")
        for chunk, d, call in found
    ]
