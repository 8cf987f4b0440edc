"""The candidate sources of completion context and how they are ranked and merged.

Ranking key: (tier, typed call first, -score, path, start_line) with tiers
definition < scope < recent < retrieved. Scores come only from
cursor-independent inputs (the names used in the enclosing scope in
first-use order, the enclosing scope's text as search query), so the order
is stable while the cursor moves; the one exception is the definition of the
call whose arguments the cursor is in, which is ranked first.
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from codectx.indexer.model import Chunk, Import
from codectx.retriever.bm25 import tokenize
from codectx.retriever.cursor import CursorInfo
from codectx.retriever.definitions import RESOLVED_LANGUAGES, DefinitionResolver, local_types, split_chain
from codectx.retriever.fusion import weighted_rrf
from codectx.retriever.search import HybridSearcher, chunk_for_definition
from codectx.retriever.tokens import TokenCounter, count_many

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.retriever.context import RecentEdit

TIERS = {"definition": 0, "scope": 1, "recent": 2, "retrieved": 3}
MAX_NAMES = 48
PER_NAME = 2
MAX_IMPORTED = 40
SEARCH_K = 8
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


def _definition_candidates(
    searcher: HybridSearcher,
    path: str,
    language: str,
    info: CursorInfo,
    imports: Sequence[Import],
    own: tuple[int, int],
    scope_text: str,
) -> list[Candidate]:
    resolver = DefinitionResolver(searcher.store, path, language, imports, local_types(scope_text))
    typed = info.callee
    out: list[Candidate] = []
    names = _names(info, scope_text)
    for name in names:
        is_chain = len(split_chain(name)) > 1
        resolutions = resolver.resolve(name, exclude=own)
        taken = 0
        for res in resolutions:
            if res.how == "name" and not (
                name == typed or is_chain or name in info.chains or language not in RESOLVED_LANGUAGES
            ):
                continue  # a bare local name matching some far-away definition is mostly noise
            d = res.definition
            chunk = chunk_for_definition(searcher.chunks_for_file(d.path), d)
            if chunk is None or _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
                continue
            # Interleaved with the imported-but-unused list below (which takes the odd slots).
            score = 1.0 - 0.02 * len(out) - (0.5 if res.how == "name" else 0.0) - 0.001 * taken
            out.append(
                Candidate(
                    chunk.path,
                    chunk.start_line,
                    chunk.end_line,
                    d.qualname or d.name,
                    "definition",
                    score,
                    chunk.text,
                    f"definition of `{name}` used here ({res.how.replace('-', ' ')} lookup)",
                    typed_call=bool(typed) and name == typed,
                )
            )
            taken += 1
            if taken >= PER_NAME or res.how != "name":
                break
    # Names the file imports but this scope does not use yet: what the next line may call.
    # Ranked by how much their definition shares words with the enclosing scope.
    used = set(names)
    scope_terms = set(tokenize(scope_text))
    imported: list[tuple[float, int, Candidate]] = []
    for position, local in enumerate(n for n in resolver.by_name if n not in used):
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
            cand = Candidate(
                chunk.path,
                chunk.start_line,
                chunk.end_line,
                d.qualname or d.name,
                "definition",
                0.0,
                chunk.text,
                f"definition of `{local}`, imported by this file but not used in this scope yet",
            )
            imported.append((-similarity, position, cand))
    used_count = len(out)
    for rank, (_sim, _pos, cand) in enumerate(sorted(imported, key=lambda x: (x[0], x[1]))):
        cand.score = 1.0 - 0.02 * rank - 0.01 - (0.0 if rank < used_count else 0.02 * (rank - used_count))
        out.append(cand)
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


def _retrieved_candidates(
    searcher: HybridSearcher, settings: Settings, query: str, path: str, own: tuple[int, int]
) -> list[Candidate]:
    cfg = settings.retriever
    vector = None
    done, _pending = searcher.progress()
    dense = bool(cfg.context_dense) and done > 0
    if dense:
        embedder = searcher.embedder()
        if embedder is None:
            dense = False
        else:
            cache = searcher.__dict__.setdefault("_query_vectors", _QueryVectors())
            vector = cache.get(embedder, query)
    lists, chunks, _ = searcher.ranked_lists(query, depth=SEARCH_K * 3, dense=dense, vector=vector)
    lists.pop("symbol", None)  # the definitions source already covers names
    fused = weighted_rrf(lists, searcher.weights(""), k=settings.retriever.rrf_k)
    out = []
    top = fused[0].score if fused else 1.0
    for f in fused:
        chunk: Chunk = chunks[f.key]
        if _overlaps(chunk.path, chunk.start_line, chunk.end_line, path, own):
            continue
        out.append(
            Candidate(
                chunk.path,
                chunk.start_line,
                chunk.end_line,
                chunk.qualname or chunk.symbol,
                "retrieved",
                f.score / top,
                chunk.text,
                "similar to the enclosing code ("
                + ", ".join(f"{k} #{v}" for k, v in sorted(f.ranks.items()))
                + ")",
            )
        )
        if len(out) >= SEARCH_K:
            break
    return out


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
    t = time.perf_counter()
    query = scope_query(lines, line, info)
    out = _definition_candidates(searcher, path, language, info, imports, own, query)
    out += _scope_candidates(searcher, path, info, own)
    timings["definitions"] = (time.perf_counter() - t) * 1000
    for edit in recent:
        if edit.path != path and edit.text.strip():
            out.append(
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
            )
    structural = sum(count_many(counter, [c.text for c in out]))
    if settings.retriever.context_search and structural < context_tokens:
        t = time.perf_counter()
        out += _retrieved_candidates(searcher, settings, query, path, own)
        timings["search"] = (time.perf_counter() - t) * 1000
    elif settings.retriever.context_search:
        notes.append("search skipped: definitions and scope already fill the context budget")
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
