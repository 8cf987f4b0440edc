"""The candidate sources of completion context and how they are ranked and merged.

Ranking key: (tier, typed call first, -score, path, start_line) with tiers
definition < scope < recent < retrieved. Scores come only from
cursor-independent inputs (the names used in the enclosing scope in
first-use order, the enclosing scope's text as search query), so the order
is stable while the cursor moves; the one exception is the definition of the
call whose arguments the cursor is in, which is ranked first.

Definitions come from several ranked lists fused by `rankdefs`: names the
scope uses, names the file imports but the scope does not use yet, what code
similar to the scope calls (`callees`), and, when the scope is embedded,
closeness of each definition's vector to the scope's. The similar code is
found by the same search that gives the `retrieved` items; when the
definitions alone fill the budget that search runs on full text only.
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from codectx.indexer.model import Chunk, Definition, Import
from codectx.retriever.bm25 import tokenize
from codectx.retriever.callees import reachable_as_attribute, similar_code_callees
from codectx.retriever.cursor import CursorInfo
from codectx.retriever.definitions import RESOLVED_LANGUAGES, DefinitionResolver, local_types, split_chain
from codectx.retriever.fusion import weighted_rrf
from codectx.retriever.rankdefs import affinity_list, fuse_definitions
from codectx.retriever.search import HybridSearcher, chunk_for_definition, fts_terms
from codectx.retriever.tokens import TokenCounter, count_many

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.retriever.context import RecentEdit

TIERS = {"definition": 0, "scope": 1, "recent": 2, "retrieved": 3}
MAX_NAMES = 48
PER_NAME = 2
MAX_IMPORTED = 40
SEARCH_K = 8
AFFINITY_WEIGHT = 1.0  # the affinity list (definitions by vector closeness to the scope)
AFFINITY_TOP = 20
SIMILAR_MINED = 12  # similar chunks whose calls vote for definitions
MAX_CALLEES = 24
WEAK_SHARE = 0.25  # a name matched only by name counts a quarter of one resolved through imports
QUERY_LINES = 60
WINDOW = 20


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


def _definition_candidate(chunk: Chunk, d: Definition, why: str, typed_call: bool = False) -> Candidate:
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


def _overlaps(path: str, start: int, end: int, own_path: str, own: tuple[int, int]) -> bool:
    return path == own_path and start <= own[1] and end >= own[0]


_IDENT_OR_CHAIN = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\?\.|\.|::|->)[A-Za-z_$][\w$]*)*")


def _names(info: CursorInfo, scope_text: str) -> list[str]:
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


def scope_query(lines: list[str], line: int, info: CursorInfo) -> str:
    """The search query: the enclosing definition (head first), or a fixed block of lines."""
    if info.enclosing and info.enclosing.end_line >= info.enclosing.start_line:
        start = info.enclosing.start_line
        end = min(info.enclosing.end_line, start + QUERY_LINES - 1)
    else:
        # Snap to fixed blocks so the query stays put while the cursor moves a few lines.
        start = max(0, (line // WINDOW) * WINDOW - WINDOW)
        end = start + 2 * WINDOW
    return "\n".join(lines[start : end + 1])


def _definition_lists(
    searcher: HybridSearcher,
    path: str,
    language: str,
    info: CursorInfo,
    resolver: DefinitionResolver,
    names: list[str],
    own: tuple[int, int],
    scope_text: str,
) -> dict[str, list[Candidate]]:
    """Ranked definition lists: names the scope uses (by import/module/file, then by bare name
    match) in first-use order, and names the file imports but the scope does not use yet."""
    typed = info.callee
    used: list[Candidate] = []
    weak: list[Candidate] = []
    for name in names:
        is_chain = len(split_chain(name)) > 1
        taken = 0
        for res in resolver.resolve(name, exclude=own):
            if res.how == "name" and not (
                name == typed or is_chain or name in info.chains or language not in RESOLVED_LANGUAGES
            ):
                continue  # a bare local name matching some far-away definition is mostly noise
            d = res.definition
            if res.how == "name" and is_chain and not reachable_as_attribute(d):
                continue  # `app.teardown_request` is no function nested in some test
            chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
            if chunk is None or _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
                continue
            (weak if res.how == "name" else used).append(
                _definition_candidate(
                    chunk,
                    d,
                    f"definition of `{name}` used here ({res.how.replace('-', ' ')} lookup)",
                    typed_call=bool(typed) and name == typed,
                )
            )
            taken += 1
            if taken >= PER_NAME or res.how != "name":
                break
    # Names the file imports but this scope does not use yet: what the next line may call.
    # Ranked by how much their definition shares words with the enclosing scope.
    used_names = set(names)
    scope_terms = set(tokenize(scope_text))
    imported: list[tuple[float, int, Candidate]] = []
    for position, local in enumerate(n for n in resolver.by_name if n not in used_names):
        if position >= MAX_IMPORTED:
            break
        for res in resolver.resolve(local, exclude=own)[:1]:
            d = res.definition
            chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
            if chunk is None or _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
                continue
            head = f"{chunk.qualname} {chunk.signature} {chunk.doc}"
            terms = set(tokenize(head))
            similarity = len(terms & scope_terms) / math.sqrt(len(terms) + 1)
            cand = _definition_candidate(
                chunk, d, f"definition of `{local}`, imported by this file but not used in this scope yet"
            )
            imported.append((-similarity, position, cand))
    ordered = [c for _s, _p, c in sorted(imported, key=lambda x: (x[0], x[1]))]
    return {"used": used, "weak": weak, "imported": ordered}


def _callee_list(
    searcher: HybridSearcher,
    similar: Sequence[tuple[Chunk, float]],
    names: Sequence[str],
    language: str,
    path: str,
    own: tuple[int, int],
) -> list[Candidate]:
    """Definitions that code similar to this scope calls (see `callees`), most voted first."""
    out: list[Candidate] = []
    for vote in similar_code_callees(searcher.store, similar[:SIMILAR_MINED], names, language):
        d = vote.definition
        chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
        if chunk is None or _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            continue
        out.append(
            _definition_candidate(
                chunk,
                d,
                f"definition of `{vote.name}`, called by similar code ({', '.join(vote.sources[:3])})",
            )
        )
        if len(out) >= MAX_CALLEES:
            break
    return out


def _scope_candidates(
    searcher: HybridSearcher, path: str, info: CursorInfo, own: tuple[int, int]
) -> list[Candidate]:
    """Heads of the other members of the class (or similar) enclosing the cursor's definition."""
    owner = info.enclosing.owner if info.enclosing else ""
    if not owner:
        return []
    out = []
    for chunk in searcher.chunks_for_file(path):
        if not chunk.qualname.startswith(owner + ".") or _overlaps(
            chunk.path, chunk.start_line, chunk.end_line, path, own
        ):
            continue
        rows = chunk.text.split("\n")
        head_lines = len(chunk.signature.split("\n")) + (len(chunk.doc.split("\n")) + 2 if chunk.doc else 0)
        head = rows[: max(1, head_lines)]
        out.append(
            Candidate(
                chunk.path,
                chunk.start_line,
                min(chunk.end_line, chunk.start_line + len(head) - 1),
                chunk.qualname,
                "scope",
                0.5,
                "\n".join(head),
                f"sibling of the cursor in `{owner}`",
            )
        )
    return out


class _QueryVectors:
    """A small cache of query vectors: the enclosing function rarely changes between requests."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()

    def get(self, embedder: Any, text: str) -> Any:
        if text in self.items:
            self.items.move_to_end(text)
            return self.items[text]
        vector = embedder.embed_query(text)
        self.items[text] = vector
        if len(self.items) > self.size:
            self.items.popitem(last=False)
        return vector


def scope_vector(searcher: HybridSearcher, settings: Settings, query: str) -> Any:
    """The scope query's vector (cached: the enclosing function rarely changes), or None when
    dense search is off or there are no vectors yet."""
    done, _pending = searcher.progress()
    embedder = searcher.embedder() if settings.retriever.context_dense and done > 0 else None
    if embedder is None:
        return None
    cache = searcher.__dict__.setdefault("_query_vectors", _QueryVectors())
    return cache.get(embedder, query)


def similar_chunks(
    searcher: HybridSearcher, settings: Settings, query: str, path: str, own: tuple[int, int], dense: bool
) -> list[tuple[Chunk, float, str]]:
    """Chunks like the enclosing code (hybrid search, names list left out), best first:
    (chunk, fused score relative to the best, which lists found it)."""
    cfg = settings.retriever
    vector = scope_vector(searcher, settings, query) if dense else None
    dense = vector is not None
    # The searcher's full-text and vector lists, re-sorted so that equal scores (near-identical
    # code) come in a fixed order: the mined calls, and so the ranking, must not flicker.
    depth = SEARCH_K * 3
    terms = fts_terms(query)
    sources = {"fts": searcher.store.fts_search(terms, depth) if terms else []}
    if dense and vector is not None:
        embedder = searcher.embedder()
        if embedder is not None:
            sources["dense"] = searcher.store.vector_search(vector, depth, embedder.model_id)
    chunks: dict[str, Chunk] = {}
    lists: dict[str, list[str]] = {}
    for name, hits in sources.items():
        ordered = sorted(hits, key=lambda h: (-round(h.score, 5), h.chunk.path, h.chunk.start_line))
        lists[name] = [h.chunk.id for h in ordered]
        chunks.update((h.chunk.id, h.chunk) for h in ordered)
    fused = weighted_rrf(lists, searcher.weights(""), k=cfg.rrf_k)
    top = fused[0].score if fused else 1.0
    out = []
    for f in fused:
        chunk: Chunk = chunks[f.key]
        if _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            continue
        out.append((chunk, f.score / top, ", ".join(f"{k} #{v}" for k, v in sorted(f.ranks.items()))))
    return out


def _retrieved_candidates(similar: Sequence[tuple[Chunk, float, str]]) -> list[Candidate]:
    return [
        Candidate(
            chunk.path,
            chunk.start_line,
            chunk.end_line,
            chunk.qualname or chunk.symbol,
            "retrieved",
            score,
            chunk.text,
            f"similar to the enclosing code ({found})",
        )
        for chunk, score, found in similar[:SEARCH_K]
    ]


def gather_candidates(
    *,
    searcher: HybridSearcher,
    settings: Settings,
    path: str,
    language: str,
    lines: list[str],
    line: int,
    info: CursorInfo,
    imports: Sequence[Import],
    own: tuple[int, int],
    recent: Sequence[RecentEdit],
    context_tokens: int,
    counter: TokenCounter,
    timings: dict[str, float],
) -> tuple[list[Candidate], list[str]]:
    """Every source's candidates (unmerged), and notes for the caller."""
    notes: list[str] = []
    cfg = settings.retriever
    t = time.perf_counter()
    query = scope_query(lines, line, info)
    resolver = DefinitionResolver(searcher.store, path, language, imports, local_types(query))
    names = _names(info, query)
    lists = _definition_lists(searcher, path, language, info, resolver, names, own, query)
    scope = _scope_candidates(searcher, path, info, own)
    recents = [
        Candidate(
            edit.path,
            edit.start_line,
            edit.end_line,
            "",
            "recent",
            0.45,
            edit.text,
            "recently edited in another file",
        )
        for edit in recent
        if edit.path != path and edit.text.strip()
    ]
    timings["definitions"] = (time.perf_counter() - t) * 1000
    retrieved: list[Candidate] = []
    if cfg.context_search:
        t = time.perf_counter()
        structural = sum(
            count_many(counter, [c.text for cs in [*lists.values(), scope, recents] for c in cs])
        )
        # Similar code is still mined for likely calls when the structural sources fill the
        # budget, but from the lexical lists only (no query embedding) unless told otherwise.
        dense = structural < context_tokens or bool(cfg.context_embed_always)
        if not dense:
            notes.append("dense search skipped: definitions and scope already fill the context budget")
        similar = similar_chunks(searcher, settings, query, path, own, dense)
        timings["search"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        lists["callees"] = _callee_list(
            searcher, [(c, w) for c, w, _f in similar], names, language, path, own
        )
        timings["callees"] = (time.perf_counter() - t) * 1000
        if dense:
            retrieved = _retrieved_candidates(similar)
            vector = scope_vector(searcher, settings, query)
            # From the cursor-independent lists only, so the order holds while the cursor moves.
            stable = {k: lists[k] for k in ("imported", "callees")}
            lists["affinity"] = affinity_list(searcher, vector, stable, AFFINITY_TOP)
    weights = {
        "used": cfg.used_weight,
        "weak": cfg.used_weight * WEAK_SHARE,
        "imported": cfg.imported_weight,
        "callees": cfg.callee_weight,
        "affinity": AFFINITY_WEIGHT,
    }
    out = fuse_definitions(lists, weights) + scope + recents + retrieved
    return out, notes


def merge_overlaps(candidates: list[Candidate]) -> list[Candidate]:
    """Deduplicate and merge overlapping spans of the same file; result in rank order."""
    ranked = sorted(candidates, key=lambda c: c.rank_key)
    kept: list[Candidate] = []
    for cand in ranked:
        merged = False
        for i, other in enumerate(kept):
            if (
                other.path != cand.path
                or cand.start_line > other.end_line
                or cand.end_line < other.start_line
            ):
                continue
            if other.start_line <= cand.start_line and other.end_line >= cand.end_line:
                merged = True  # already covered by a better-ranked item
            elif cand.start_line <= other.start_line and cand.end_line >= other.end_line:
                kept[i] = replace(
                    other,
                    start_line=cand.start_line,
                    end_line=cand.end_line,
                    text=cand.text,
                    typed_call=other.typed_call or cand.typed_call,
                )
                merged = True
            else:
                kept[i] = _union(other, cand)
                merged = True
            break
        if not merged:
            kept.append(cand)
    return sorted(kept, key=lambda c: c.rank_key)


def _union(a: Candidate, b: Candidate) -> Candidate:
    first, second = (a, b) if a.start_line <= b.start_line else (b, a)
    skip = first.end_line - second.start_line + 1
    tail = second.text.split("\n")[skip:]
    text = first.text + ("\n" + "\n".join(tail) if tail else "")
    return replace(
        a,
        start_line=first.start_line,
        end_line=max(a.end_line, b.end_line),
        text=text,
        typed_call=a.typed_call or b.typed_call,
    )
