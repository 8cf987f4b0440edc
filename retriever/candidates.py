"""The candidate sources of completion context and how they are ranked and merged.

Ranking key: (tier, typed call first, -score, path, start_line) with tiers
definition < scope < recent < retrieved. Scores come only from
cursor-independent inputs (the names used in the enclosing scope in
first-use order, the enclosing scope's text as search query), so the order
is stable while the cursor moves; the one exception is the definition of the
call whose arguments the cursor is in, which is ranked first.

Definitions come from several ranked lists fused by `rankdefs`: names the
scope uses, names the file imports but the scope does not use yet, what the workspace
calls on the receivers in scope, what code similar to the scope calls
(`callees`), and closeness to the scope: of each definition's vector to the
scope's when the scope is embedded, else of the words of its head. The similar code is
found by the same search that gives the `retrieved` items; when the
definitions alone fill the budget that search runs on full text only.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codectx.indexer.model import Chunk, Import
from codectx.retriever.cursor_info import CursorInfo
from codectx.retriever.definitions import DefinitionResolver, local_types
from codectx.retriever.deflists import (
    STRUCTURAL,
    WEAK_SHARE,
    Candidate,
    callee_list,
    definition_candidate,
    definition_lists,
    neighbour_list,
    overlaps,
    receiver_list,
    scope_names,
)
from codectx.retriever.fusion import weighted_rrf
from codectx.retriever.rankdefs import fuse_definitions, lexical_affinity_list, one_flavour_each
from codectx.retriever.receiver_types import (
    called_attribute_types,
    chain_types,
    enclosing_class_text,
    factory_calls,
    factory_types,
    fixture_types,
    property_types,
    scope_types,
)
from codectx.retriever.returns import return_types
from codectx.retriever.search import HybridSearcher, chunk_for_definition, fts_terms
from codectx.retriever.slot import (
    declared_types,
    encloses_predicate,
    signature_at,
    slot_text,
    weigh_for_slot,
)
from codectx.retriever.tested import definitions_tested
from codectx.retriever.tokens import TokenCounter, count_many

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.retriever.context import RecentEdit

__all__ = ["Candidate", "gather_candidates", "merge_overlaps", "similar_chunks"]

SEARCH_K = 8
# Candidates the affinity list keeps (development set not-typed R@10 pooled, lexical / with vectors:
# 10 0.747 / -, 20 0.754 / 0.753, 30 0.756 / 0.756, 45 0.754 / 0.754; 30 against 20: axios +0.02,
# marshmallow +0.01, sqlparse -0.01 on both paths).
AFFINITY_TOP = 30
AFFINITY_SOURCES = ("imported", "callees", "receivers")  # the cursor-independent lists
SIMILAR_MINED = 12  # similar chunks whose calls vote for definitions
QUERY_LINES = 60
HEAD_LINES = 12  # of a long definition's query: its head
TAIL_SNAP = 16  # the tail's end moves in steps of this many lines
TYPING_LINES = 400  # of a long definition, read for its receivers' types at most
SCOPE_QUERY_TOKENS = 48  # the scope's head says what it does; the encoder costs ~10 ms per 64 tokens
WINDOW = 20


def scope_span(lines: Sequence[str], line: int, info: CursorInfo) -> tuple[int, int]:
    """The scope's lines (inclusive): the enclosing definition, or a fixed block of lines around
    the cursor, snapped so that it stays put while the cursor moves a few lines."""
    if info.enclosing and info.enclosing.end_line >= info.enclosing.start_line:
        return info.enclosing.start_line, min(info.enclosing.end_line, len(lines) - 1)
    start = max(0, (line // WINDOW) * WINDOW - WINDOW)
    return start, min(start + 2 * WINDOW, len(lines) - 1)


def _deep_tail(lines: list[str], line: int, info: CursorInfo) -> tuple[int, int, int] | None:
    """(start, tail start, tail end) when the cursor is past a long definition's first
    QUERY_LINES lines, else None."""
    start, end = scope_span(lines, line, info)
    if not info.enclosing or info.enclosing.end_line < info.enclosing.start_line:
        return None
    if end - start + 1 <= QUERY_LINES or line <= start + QUERY_LINES - 1:
        return None
    tail_end = min(end, (line // TAIL_SNAP + 1) * TAIL_SNAP)
    return start, max(start + HEAD_LINES, tail_end - (QUERY_LINES - HEAD_LINES) + 1), tail_end


# Of a longer line (minified code, a data blob), the part read: around the cursor, else its start.
LINE_CHARS = 2000


def _rows(lines: list[str], lo: int, hi: int, line: int, character: int) -> list[str]:
    """`lines[lo:hi]`, a line longer than LINE_CHARS cut to the part around the cursor (the
    cursor's line) or to its start (another): every step after reads the scope's text, 0.4 s
    on the 130,000-character line of a minified bundle."""
    rows = lines[lo:hi]
    if all(len(row) <= LINE_CHARS for row in rows):
        return rows
    out = []
    for i, row in enumerate(rows, lo):
        at = max(0, character - LINE_CHARS + LINE_CHARS // 4) if i == line else 0
        out.append(row[at : at + LINE_CHARS])
    return out


def scope_texts(lines: list[str], line: int, info: CursorInfo, character: int = 0) -> tuple[str, str]:
    """The scope's query (for its names and the similar-code search) and the text its receivers
    are typed from. The query is the enclosing definition (at most QUERY_LINES: past them, its
    first HEAD_LINES and the lines before the cursor) or a fixed block of lines; the typing text
    is the query, or deep in a long definition all of it up to the query's tail (at most
    TYPING_LINES), so that a long signature's annotations and what its middle builds stay typed."""
    deep = _deep_tail(lines, line, info)
    if deep is not None:
        # Deep in a long definition: its head and the lines up to the cursor, where the
        # receivers in use were assigned (the window's end moves in steps of TAIL_SNAP lines).
        start, tail_start, tail_end = deep
        head = _rows(lines, start, start + HEAD_LINES, line, character)
        query = "\n".join(head + _rows(lines, tail_start, tail_end + 1, line, character))
        return query, "\n".join(_rows(lines, start, min(tail_end + 1, start + TYPING_LINES), line, character))
    start, end = scope_span(lines, line, info)
    if info.enclosing and info.enclosing.end_line >= info.enclosing.start_line:
        end = min(end, start + QUERY_LINES - 1)
    query = "\n".join(_rows(lines, start, end + 1, line, character))
    return query, query


def _scope_candidates(
    searcher: HybridSearcher, path: str, info: CursorInfo, own: tuple[int, int]
) -> list[Candidate]:
    """Heads of the other members of the class (or similar) enclosing the cursor's definition."""
    owner = info.enclosing.owner if info.enclosing else ""
    if not owner:
        return []
    out = []
    for chunk in searcher.chunks_for_file(path):
        if not chunk.qualname.startswith(owner + ".") or overlaps(
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


def _tested_candidates(
    searcher: HybridSearcher, path: str, info: CursorInfo, own: tuple[int, int]
) -> list[Candidate]:
    """Definitions the enclosing tests' names name (`test_timetz` -> `Arrow.timetz`)."""
    out = []
    for d, name in definitions_tested(path, info.scopes, searcher.store.symbols_named):
        chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
        if chunk is not None and not overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            out.append(definition_candidate(chunk, d, f"definition of `{name}`, which the test's name names"))
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
        try:
            vector = embedder.embed_query(text, max_tokens=SCOPE_QUERY_TOKENS)
        except TypeError:  # an embedder without a length limit
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
            sources["dense"] = searcher.store.approx_vector_search(vector, depth, embedder.model_id)
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
        if overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
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
    text: str,
    lines: list[str],
    line: int,
    character: int,
    info: CursorInfo,
    imports: Sequence[Import],
    own: tuple[int, int],
    recent: Sequence[RecentEdit],
    context_tokens: int,
    counter: TokenCounter,
    timings: dict[str, float],
) -> tuple[list[Candidate], list[str]]:
    """Every source's candidates (unmerged), and notes for the caller. `text` is the document,
    `lines` the same split at newlines, the cursor at (`line`, `character`)."""
    notes: list[str] = []
    cfg = settings.retriever
    t = time.perf_counter()
    query, typing = scope_texts(lines, line, info, character)
    class_text = enclosing_class_text(lines, info)
    types = scope_types(typing, class_text, local_types(typing))
    resolver = DefinitionResolver(searcher.store, path, language, imports, types)
    # Fixtures first: a test's `tmpl = env.from_string(...)` is typed once `env` is.
    fixture_types(resolver, typing, types, searcher.chunks_for_file)
    factory_types(resolver, factory_calls(typing, types), searcher.chunks_for_file)
    if language == "python":  # far into a long class its header is out of the parse window
        class_text = class_text or enclosing_class_text(lines, info, far=True)
    # Before the properties: `return self.stream` types a property once `self.stream` is typed.
    called_attribute_types(resolver, class_text, typing, searcher.chunks_for_file)
    if language == "python":
        property_types(resolver, class_text, searcher.chunks_for_file)
    names = scope_names(info, query)
    chain_types(resolver, names, searcher.chunks_for_file)
    lists = definition_lists(searcher, path, language, info, resolver, names, own, query, text)
    lists["receivers"], of_class = receiver_list(searcher, resolver, names, path, own, query)
    if cfg.class_member_weight > 0:
        lists["class members"] = of_class
    if cfg.neighbour_weight > 0:
        lists["neighbours"] = neighbour_list(
            searcher, resolver, lines, scope_span(lines, line, info), own, names
        )
    if cfg.tested_weight > 0:
        lists["tested"] = _tested_candidates(searcher, path, info, own)
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
            count_many(
                counter,
                [c.text for k in STRUCTURAL for c in lists.get(k, [])] + [c.text for c in [*scope, *recents]],
            )
        )
        # Similar code is still mined for likely calls when the structural sources fill the
        # budget, but from the lexical lists only (no query embedding) unless told otherwise.
        dense = structural < context_tokens or bool(cfg.context_embed_always)
        if not dense:
            notes.append("dense search skipped: definitions and scope already fill the context budget")
        similar = similar_chunks(searcher, settings, query, path, own, dense)
        timings["search"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        lists["callees"] = callee_list(
            searcher, [(c, w) for c, w, _f in similar[:SIMILAR_MINED]], names, language, path, own
        )
        timings["callees"] = (time.perf_counter() - t) * 1000
        if dense:
            retrieved = _retrieved_candidates(similar)
        # From the cursor-independent lists only, so the order holds while the cursor moves. By
        # the words the definitions' heads share with the scope, with or without vectors: the
        # scope's vector ranked them worse (development set not-typed R@10 with vectors 0.738 by
        # vector, 0.753 by words, 10 of 12 repositories higher and none lower; words and vector
        # as two lists 0.748; bench/devset_sweep.py --vectors).
        stable = {k: lists[k] for k in AFFINITY_SOURCES if k in lists}
        lists["affinity"] = lexical_affinity_list(query, stable, AFFINITY_TOP, searcher.store.term_sets)
    weights = {
        "used": cfg.used_weight,
        "pending": cfg.pending_weight,
        "weak": cfg.used_weight * WEAK_SHARE,
        "imported": cfg.imported_weight,
        "callees": cfg.callee_weight,
        "affinity": cfg.affinity_weight,
        "receivers": cfg.receiver_weight,
        "neighbours": cfg.neighbour_weight,
        "tested": cfg.tested_weight,
        "class members": cfg.class_member_weight,
    }
    enclosing = info.enclosing
    before = slot_text(lines, line, character)
    fused = weigh_for_slot(
        fuse_definitions(lists, weights),
        before,
        cfg.slot_weight,
        cfg.target_weight,
        # What a predicate returns is a condition (`return utils.isObject(payload) && ...`).
        in_predicate=enclosing is not None
        and encloses_predicate(lines, enclosing.start_line, enclosing.name),
        # and what a definition returns, its return statement makes (`-> Getattr:` ... `return `).
        returns=frozenset() if enclosing is None else return_types(signature_at(lines, enclosing.start_line)),
        statement_weight=cfg.statement_weight,
        # and what a declared name is assigned (`self.optimizer: Optional[Optimizer]` above).
        assigned=declared_types(lines, line, before, enclosing.start_line if enclosing else 0),
    )
    out = one_flavour_each(fused + scope + recents + retrieved)
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
