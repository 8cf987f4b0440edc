"""How definition candidates from several sources are ranked together.

Each source (names the scope uses, names the file imports, calls made by
similar code, the words a definition's head shares with the scope) gives a ranked list; the
lists are fused by weighted reciprocal rank, summed when a definition is in
several, so agreement between sources lifts a definition.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from codectx.retriever.terms import TermSets

if TYPE_CHECKING:
    from codectx.retriever.candidates import Candidate

DEFINITION_K = 5.0  # reciprocal-rank constant of the definition lists: low trusts each list's top more


def fuse_definitions(lists: dict[str, list[Candidate]], weights: dict[str, float]) -> list[Candidate]:
    """One definition ranking from several ranked lists: weighted reciprocal rank, summed when a
    definition is in several lists (its first list's explanation is kept)."""
    fused: dict[tuple[str, int], Candidate] = {}
    for name, cands in lists.items():
        weight = weights.get(name, 0.0)
        if weight <= 0:
            continue
        for rank, cand in enumerate(cands):
            key = (cand.path, cand.start_line)
            score = weight / (DEFINITION_K + rank)
            found = fused.get(key)
            if found is None:
                fused[key] = replace(cand, score=score)
            else:
                found.score += score
                found.typed_call = found.typed_call or cand.typed_call
    return list(fused.values())


def lexical_affinity_list(
    scope_text: str, lists: dict[str, list[Candidate]], top: int, term_sets: TermSets | None = None
) -> list[Candidate]:
    """The definition candidates ordered by the words their heads (name, signature, first lines)
    share with the scope: identifiers and their parts, each weighted by how rare it is among the
    candidates (a word most of them have counts little). Candidates sharing no word are left
    out. No index access."""
    term_sets = term_sets or TermSets()  # the snapshot's, which keeps the heads' terms
    scope = term_sets.of(scope_text)
    pool: dict[tuple[str, int], tuple[Candidate, frozenset[str]]] = {}
    for cands in lists.values():
        for cand in cands:
            key = (cand.path, cand.start_line)
            if key not in pool:
                pool[key] = (cand, term_sets.of(_head(cand)))
    df: dict[str, int] = {}
    for _cand, terms in pool.values():
        for term in terms:
            df[term] = df.get(term, 0) + 1
    n = len(pool) + 1
    scored = []
    for cand, terms in pool.values():
        shared = terms & scope
        score = sum(math.log(n / df[t]) for t in shared) / math.sqrt(len(terms) + 1)
        if score > 0:
            scored.append((score, cand))
    scored.sort(key=lambda x: (-x[0], x[1].path, x[1].start_line))
    return [cand for _score, cand in scored[:top]]


HEAD_LINES = 3  # a definition's head: its signature and the start of its doc


def _head(cand: Candidate) -> str:
    return cand.symbol + " " + " ".join(cand.text.split("\n", HEAD_LINES)[:HEAD_LINES])


# A package's type declarations in several module flavours (axios ships index.d.ts and
# index.d.cts): the same declaration twice says nothing new.
_FLAVOURS = re.compile(r"\.d\.[cm]?ts$")


def one_flavour_each(cands: list[Candidate]) -> list[Candidate]:
    """`cands` in rank order, less a type declaration whose twin in another module flavour of
    the same file (`index.d.ts`, `index.d.cts`, `index.d.mts`: the same path but for the
    flavour, the same symbol) ranks higher. Declarations in one file are all kept."""
    kept: dict[tuple[str, str], str] = {}  # (path without its flavour, symbol) -> the path kept
    out: list[Candidate] = []
    for cand in sorted(cands, key=lambda c: c.rank_key):
        stem = _FLAVOURS.sub("", cand.path)
        if stem != cand.path and cand.symbol:
            first = kept.setdefault((stem, cand.symbol), cand.path)
            if first != cand.path:
                continue
        out.append(cand)
    return out
