"""Completion context: what goes into the prompt besides the code around the cursor.

`assemble_context` gathers candidates from four sources, ranks them, and
fills a token budget:

1. definitions (highest): of the symbols used at and near the cursor,
   resolved through the file's imports; of names the file imports but the
   scope does not use yet; and of what code similar to the scope calls (the
   likely next call, before its name is typed);
2. siblings in the enclosing scope (other methods of the same class), heads only;
3. recently edited regions of other files, when the caller passes them;
4. a hybrid search whose query is the enclosing function (cursor-independent).

Nothing overlapping the cursor's own region (the prefix/suffix window and the
enclosing definition) is included; overlapping items are merged. Ranking
depends only on the enclosing scope, never on the cursor column, so moving
the cursor inside a function gives the same items in the same order (the
model server's prefix cache keeps hitting). The one cursor-dependent input,
the call being typed, only raises its definition's priority for the budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codectx.indexer.model import Import
from codectx.indexer.parsing.languages import language_for
from codectx.retriever.budget import Cut, cut_prefix, cut_suffix, cut_to_tokens
from codectx.retriever.bufferimports import buffer_imports
from codectx.retriever.candidates import Candidate, gather_candidates, merge_overlaps
from codectx.retriever.cursor_info import CursorInfo, cursor_info, typed_member
from codectx.retriever.errors import BadPosition, UnknownFile
from codectx.retriever.search import HybridSearcher
from codectx.retriever.snapshot import IndexSnapshot, IndexSource, snapshot_of
from codectx.retriever.tokens import TokenCounter, count_many, default_counter

from codectx.settings import Settings

REASONS = ("definition", "scope", "recent", "retrieved")
CUT_MARKER = "    ..."
SCOPE_BLOCK = 20  # outside any definition, cursors in the same block of lines share one context


@dataclass(frozen=True)
class RecentEdit:
    """A region the user edited recently (supplied by the editor integration)."""

    path: str
    start_line: int
    end_line: int
    text: str


@dataclass
class ContextItem:
    path: str
    start_line: int
    end_line: int
    symbol: str
    reason: str  # definition / scope / recent / retrieved
    score: float
    tokens: int
    text: str
    why: str = ""  # a human explanation (--explain)
    truncated: bool = False

    def as_dict(self, text: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "reason": self.reason,
            "score": round(self.score, 6),
            "tokens": self.tokens,
        }
        if text:
            data["text"] = self.text
        return data


@dataclass
class DroppedItem:
    path: str
    start_line: int
    end_line: int
    symbol: str
    reason: str
    tokens: int
    why: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Budget:
    total: int
    prefix_available: int
    prefix_used: int
    suffix_available: int
    suffix_used: int
    context_available: int
    context_used: int
    dropped: list[DroppedItem] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "dropped"}
        data["dropped"] = [d.as_dict() for d in self.dropped]
        return data


@dataclass
class ContextResult:
    path: str
    language: str
    line: int
    character: int
    items: list[ContextItem]
    prefix: str
    suffix: str
    budget: Budget
    prefix_start_line: int = 0
    suffix_end_line: int = 0
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    ranked: list[Candidate] = field(default_factory=list)  # every candidate in rank order (eval)

    def as_dict(self, text: bool = True) -> dict[str, Any]:
        return {
            "path": self.path,
            "language": self.language,
            "line": self.line,
            "character": self.character,
            "items": [i.as_dict(text) for i in self.items],
            "budget": self.budget.as_dict(),
            "prefix_start_line": self.prefix_start_line,
            "suffix_end_line": self.suffix_end_line,
            "notes": self.notes,
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


def check_position(lines: list[str], line: int, character: int) -> int:
    """Validate a cursor; returns the character clamped to the line (editors overshoot by a little)."""
    if line < 0 or character < 0:
        raise BadPosition(f"cursor position must not be negative (line {line}, character {character})")
    if line >= len(lines):
        raise BadPosition(
            f"line {line} is past the end of the document ({len(lines)} lines; lines are 0-based)"
        )
    return min(character, len(lines[line]))


def current_imports(
    store: IndexSource, settings: Settings, path: str, text: str, language: str
) -> list[Import]:
    """The document's imports: the index's, or the buffer's where its import lines changed
    (retriever/bufferimports.py); parsed from the text for a file the index does not know."""
    snapshot = snapshot_of(store)
    indexed = snapshot.file_imports(path)
    if not language:
        return indexed

    def parse() -> list[Import]:
        from codectx.indexer.parsing.parse import file_imports

        # Imports only: chunking the whole file again for them took 1.3 s on a minified bundle.
        return file_imports(path, text, language, settings, settings.root)

    return buffer_imports(list(indexed), settings.root, path, text, parse, snapshot.version)


def _engine(store: IndexSource, settings: Settings, embedder: Any) -> HybridSearcher:
    """A searcher reused across requests on the same store and settings (its snapshot caches)."""
    snap = snapshot_of(store)
    cached: HybridSearcher | None = snap.context_searcher
    if cached is None or cached.settings is not settings or cached.embedder() is not embedder:
        cached = HybridSearcher(snap, settings, embedder=embedder)
        snap.preload()  # completion asks again and again: keep chunks and imports in memory
        snap.context_searcher = cached
    return cached


def assemble_context(
    store: IndexSource,
    settings: Settings,
    path: str,
    text: str,
    line: int,
    character: int,
    recent: list[RecentEdit] | None = None,
    embedder: Any = None,
    token_counter: TokenCounter | None = None,
) -> ContextResult:
    """Rank context for a completion at (line, character) of `path` and fit it into the budget.

    `path` is workspace-relative (POSIX); `text` is the document as the editor
    has it. Raises BadPosition for a cursor outside the document.
    """
    snap = snapshot_of(store)
    with snap.pacer.serving():  # a background load of the snapshot gives way meanwhile
        result = _assemble(snap, settings, path, text, line, character, recent, embedder, token_counter)
    if snap.phase == "lookup":
        result.notes.append("answered from index lookups while the in-memory index loads")
    elif snap.phase == "early":
        result.notes.append(
            "answered from the index's lookup files while the index opens (no search results yet)"
        )
    return result


def _assemble(
    store: IndexSnapshot,
    settings: Settings,
    path: str,
    text: str,
    line: int,
    character: int,
    recent: list[RecentEdit] | None,
    embedder: Any,
    token_counter: TokenCounter | None,
) -> ContextResult:
    started = time.perf_counter()
    timings: dict[str, float] = {}
    if not isinstance(text, str):
        raise UnknownFile(f"{path}: the document text is not text")
    rel = path.replace("\\", "/").lstrip("./") if path.startswith("./") else path.replace("\\", "/")
    if Path(rel).is_absolute() or rel.startswith("../"):
        raise UnknownFile(f"{path}: pass a path relative to the workspace root")
    lines = text.split("\n")
    character = check_position(lines, line, character)
    counter = token_counter or default_counter()
    cfg = settings.retriever
    language = language_for(rel) or ""

    total = int(cfg.budget_tokens)
    prefix_avail = int(total * cfg.prefix_share)
    suffix_avail = int(total * cfg.suffix_share)
    prefix = cut_prefix(lines, line, character, prefix_avail, counter)
    suffix = cut_suffix(lines, line, character, suffix_avail, counter)
    timings["cut"] = _ms(started)

    t = time.perf_counter()
    info: CursorInfo = cursor_info(text, language or None, line, character)
    timings["cursor"] = _ms(t)
    own, context_avail = _stable_window(
        lines, line, info, prefix, suffix, total, prefix_avail, suffix_avail, counter
    )

    t = time.perf_counter()
    searcher = _engine(store, settings, embedder)
    imports = current_imports(searcher.store, settings, rel, text, language)
    candidates, notes = gather_candidates(
        searcher=searcher,
        settings=settings,
        path=rel,
        language=language,
        text=text,
        lines=lines,
        line=line,
        character=character,
        info=info,
        imports=imports,
        own=own,
        recent=recent or [],
        context_tokens=context_avail,
        counter=counter,
        timings=timings,
    )
    receiver, partial = typed_member(lines[line][:character])
    if partial:
        # `c.appl|`: the receiver's members whose names start with what is typed are the ones
        # being called; they go first, as the definition of a call typed up to its `(` does.
        # Only members offered for that receiver (`c.apply_discount`), not any name that starts so.
        candidates = [
            replace(c, typed_call=True)
            if c.symbol.rsplit(".", 1)[-1].startswith(partial) and f"`{receiver}." in c.why
            else c
            for c in candidates
        ]
    ranked = merge_overlaps(candidates)
    timings["gather"] = _ms(t)

    t = time.perf_counter()
    items, dropped, used = _fill(ranked, context_avail, int(cfg.definition_max_tokens), counter)
    timings["fill"] = _ms(t)
    timings["total"] = _ms(started)
    budget = Budget(
        total=total,
        prefix_available=prefix_avail,
        prefix_used=prefix.tokens,
        suffix_available=suffix_avail,
        suffix_used=suffix.tokens,
        context_available=context_avail,
        context_used=used,
        dropped=dropped,
    )
    return ContextResult(
        path=rel,
        language=language,
        line=line,
        character=character,
        items=items,
        prefix=prefix.text,
        suffix=suffix.text,
        budget=budget,
        prefix_start_line=prefix.first_line,
        suffix_end_line=suffix.last_line,
        notes=notes,
        timings_ms=timings,
        ranked=ranked,
    )


def _stable_window(
    lines: list[str],
    line: int,
    info: CursorInfo,
    prefix: Cut,
    suffix: Cut,
    total: int,
    prefix_avail: int,
    suffix_avail: int,
    counter: TokenCounter,
) -> tuple[tuple[int, int], int]:
    """The cursor's own region and the context budget, the same for every cursor in the scope.

    The prefix/suffix window moves with the cursor; if exclusions and the
    context budget followed it, items would come and go as the cursor moves.
    So both are computed for the worst case over the enclosing scope (or a
    fixed block of lines outside any definition): the region any window in
    the scope can cover, and the tokens any prefix and suffix there can need.
    """
    if info.enclosing is not None and info.enclosing.start_line <= line <= info.enclosing.end_line:
        lo, hi = info.enclosing.start_line, min(info.enclosing.end_line, len(lines) - 1)
    else:
        lo = (line // SCOPE_BLOCK) * SCOPE_BLOCK
        hi = min(len(lines) - 1, lo + SCOPE_BLOCK - 1)
    widest_prefix = cut_prefix(lines, lo, 0, prefix_avail, counter)
    widest_suffix = cut_suffix(lines, hi, len(lines[hi]), suffix_avail, counter)
    own = (
        min(widest_prefix.first_line, prefix.first_line, lo),
        max(widest_suffix.last_line, suffix.last_line, hi),
    )
    # The most a prefix can use anywhere in the scope: all of it when everything up to the scope's end fits.
    longest_prefix = cut_prefix(lines, hi, len(lines[hi]), prefix_avail, counter)
    prefix_need = longest_prefix.tokens if longest_prefix.first_line == 0 else prefix_avail
    longest_suffix = cut_suffix(lines, lo, 0, suffix_avail, counter)
    suffix_need = longest_suffix.tokens if longest_suffix.last_line == len(lines) - 1 else suffix_avail
    prefix_need = max(prefix_need, prefix.tokens)
    suffix_need = max(suffix_need, suffix.tokens)
    return own, max(0, total - prefix_need - suffix_need)


def _fill(
    ranked: list[Candidate], available: int, max_definition: int, counter: TokenCounter
) -> tuple[list[ContextItem], list[DroppedItem], int]:
    """Take candidates by priority while they fit; report what did not and why.

    Priority is the rank, except the call being typed, which goes first; the
    returned items keep rank order.
    """
    counts = count_many(counter, [c.text for c in ranked])
    order = sorted(range(len(ranked)), key=lambda i: (not ranked[i].typed_call, i))
    chosen: dict[int, ContextItem] = {}
    dropped: list[DroppedItem] = []
    used = 0
    for i in order:
        cand = ranked[i]
        body, tokens, truncated = cand.text, counts[i], False
        if cand.reason == "definition" and tokens > max_definition:
            body, tokens = cut_to_tokens(cand.text, max_definition, counter, CUT_MARKER)
            truncated = True
        if tokens > available - used:
            head_budget = available - used
            if cand.reason in ("definition", "scope") and head_budget >= 24:
                body, tokens = cut_to_tokens(cand.text, head_budget, counter, CUT_MARKER)
                truncated = True
                if tokens > head_budget or body.strip() in ("", CUT_MARKER.strip()):
                    tokens = counts[i]
            if tokens > available - used:
                dropped.append(
                    DroppedItem(
                        cand.path,
                        cand.start_line,
                        cand.end_line,
                        cand.symbol,
                        cand.reason,
                        counts[i],
                        f"budget: needs {counts[i]} tokens, {max(0, available - used)} left",
                    )
                )
                continue
        used += tokens
        chosen[i] = ContextItem(
            path=cand.path,
            start_line=cand.start_line,
            end_line=cand.end_line,
            symbol=cand.symbol,
            reason=cand.reason,
            score=cand.score,
            tokens=tokens,
            text=body,
            why=cand.why + (" (cut to its head for the budget)" if truncated else ""),
            truncated=truncated,
        )
    return [chosen[i] for i in sorted(chosen)], dropped, used


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000
