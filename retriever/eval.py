"""`codectx eval`: measure context and search quality on the indexed repository itself.

Tasks are built without labels from the index:

- cross-file, name typed: a call `callee(` whose callee is defined in another
  file (and only there, so the gold answer is unambiguous); the cursor sits
  right after the `(`. Gold: the callee's definition span.
- cross-file, name not typed: the same call site with the line cut at the
  start of the call (the chain and its arguments removed); cursor there. The
  function being written ends there too: the rest of the innermost enclosing
  definition (or, at module level, of the block of non-blank lines) is
  blanked, so a later use of the callee cannot leak the answer through the
  suffix. Lines are blanked, not deleted, so line numbers still match the index.

Call sites whose gold would be a guess are left out (see `evalgold`): names
bound by a library import, bare calls of methods and builtins, a standard
type's method name on a receiver of unknown type, JavaScript globals, and
`x.name(` where the only `name` is a function nested in another.
- natural language: the first sentence of a docstring/doc comment as the
  query; gold: its function. The docstring is hidden: the gold chunk is taken
  out of every ranked list and put back where its doc-less version ranks: its
  dense score is the cosine with the re-embedded chunk without the doc; its
  lexical rank is where BM25 (over the same chunks, shared statistics) puts
  the doc-less text among the full-text hits.

codectx answers cross-file tasks with `assemble_context` (the ranked
candidates before the budget) and natural-language tasks with hybrid search.
The baseline is BM25 over the same chunks: for code tasks with the 15 lines
before the cursor as query, for natural language with the sentence.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from codectx.indexer.model import Chunk, Definition
from codectx.indexer.storage.reader import IndexReader
from codectx.retriever.context import assemble_context
from codectx.retriever.evalgold import doubtful_gold
from codectx.retriever.lexical import Analysis, LexicalIndex
from codectx.retriever.search import HybridSearcher, fts_terms, names_list_applies
from codectx.retriever.terms import chunk_document, tokenize
from codectx.retriever.tokens import default_counter

from codectx.settings import Settings

KS = (1, 5, 10)
FUNCTION_KINDS = frozenset({"function", "method", "constructor"})
CALLABLE_KINDS = frozenset({"function", "method", "class", "constructor", "struct", "interface", "macro"})
BASELINE_LINES = 15
MIN_QUERY_WORDS = 4
KINDS = ("cross_file_typed", "cross_file_untyped", "natural_language")
_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)", re.S)


@dataclass(frozen=True)
class CodeTask:
    kind: str
    path: str
    text: str
    line: int
    character: int
    callee: str
    gold: Definition


@dataclass(frozen=True)
class TextTask:
    query: str
    gold: Chunk


# The baseline's analysis: identifier terms, no stemming (what "BM25 with identifier splitting"
# means in the README's figures).
IDENTIFIER_TERMS = Analysis(
    lambda text: Counter(tokenize(text)), lambda query: list(dict.fromkeys(tokenize(query)))
)


class ChunkBM25:
    """The baseline: BM25 over chunks (path, names, signature, doc and body), answering chunks."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        # Keys in list order, so that equal scores rank by position as a list would.
        self._index = LexicalIndex(
            [(f"{n:09d}", chunk_document(c)) for n, c in enumerate(self.chunks)], IDENTIFIER_TERMS
        )

    def search(self, query: str, k: int = 10, exclude: Collection[int] = ()) -> list[tuple[Chunk, float]]:
        hits = self._index.search(query, k, {f"{n:09d}" for n in exclude})
        return [(self.chunks[int(h.key)], h.score) for h in hits]

    def score_chunk(self, query: str, chunk: Chunk) -> float:
        return self._index.score_text(query, chunk_document(chunk))


def first_sentence(doc: str) -> str:
    text = " ".join(doc.split())
    match = _SENTENCE.match(text)
    return (match.group(1) if match else text).strip()


def strip_doc(chunk: Chunk) -> Chunk:
    """The chunk as if it had no docstring/doc comment: doc lines (and bare quote lines) removed."""
    doc_lines = [row.strip() for row in chunk.doc.split("\n") if row.strip()]
    if not doc_lines:
        return chunk
    rows = chunk.text.split("\n")
    first = next((i for i, row in enumerate(rows) if doc_lines[0] in row), None)
    if first is None:
        return replace(chunk, doc="")
    last = first
    for i in range(first, len(rows)):
        if doc_lines[-1] in rows[i]:
            last = i
            break
    quote = re.compile(r'^\s*("""|\'\'\'|/\*\*?|\*/|\*|r"""|//+|#+)\s*$')
    while first > 0 and quote.match(rows[first - 1]):
        first -= 1
    while last + 1 < len(rows) and quote.match(rows[last + 1]):
        last += 1
    return replace(chunk, doc="", text="\n".join(rows[:first] + rows[last + 1 :]))


def _overlaps(path: str, start: int, end: int, gold_path: str, gold_start: int, gold_end: int) -> bool:
    return path == gold_path and start <= gold_end and end >= gold_start


def _rank(found: Sequence[tuple[str, int, int]], path: str, start: int, end: int) -> int | None:
    for i, (p, s, e) in enumerate(found[:10], 1):
        if _overlaps(p, s, e, path, start, end):
            return i
    return None


class Metrics:
    def __init__(self) -> None:
        self.ranks: list[int | None] = []
        self.latencies: list[float] = []

    def add(self, rank: int | None, ms: float) -> None:
        self.ranks.append(rank)
        self.latencies.append(ms)

    def summary(self) -> dict[str, Any]:
        n = len(self.ranks)
        if not n:
            return {"tasks": 0}
        out: dict[str, Any] = {"tasks": n}
        for k in KS:
            out[f"recall@{k}"] = round(sum(1 for r in self.ranks if r is not None and r <= k) / n, 4)
        out["mrr@10"] = round(sum(1.0 / r for r in self.ranks if r is not None) / n, 4)
        lat = sorted(self.latencies)
        out["p50_ms"] = round(statistics.median(lat), 2)
        out["p95_ms"] = round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2)
        return out


def _symbol_index(store: IndexReader) -> dict[str, list[Definition]]:
    table: dict[str, list[Definition]] = {}
    for d in store.all_symbols():
        table.setdefault(d.name, []).append(d)
    return table


def code_tasks(store: IndexReader, root: Path, limit: int, seed: int) -> list[CodeTask]:
    """Cross-file call-site tasks (both variants), sampled reproducibly."""
    symbols = _symbol_index(store)
    enclosing: dict[str, list[Definition]] = {}
    for defs in symbols.values():
        for d in defs:
            if d.kind in FUNCTION_KINDS:
                enclosing.setdefault(d.path, []).append(d)
    found: list[tuple[str, str, int, int, int, Definition]] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(store.file_records()):
        try:
            text = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = text.split("\n")
        imports = list(store.file_imports(path))
        for ref in store.file_references(path):
            defs = symbols.get(ref.name, [])
            if len(defs) != 1 or defs[0].path == path or defs[0].kind not in CALLABLE_KINDS:
                continue
            if (path, ref.name) in seen or ref.line >= len(lines):
                continue
            row = lines[ref.line]
            after = row[ref.column + len(ref.name) :]
            if row[ref.column : ref.column + len(ref.name)] != ref.name or not after.lstrip().startswith("("):
                continue
            chain = ref.chain or ref.name
            if doubtful_gold(chain, defs[0], defs[0].language, imports, lines, ref.line, ref.column):
                continue  # `pytest.main(`, `next(`, `values.extend(`: the gold would be a guess
            start = ref.column - (len(chain) - len(ref.name))
            if start < 0 or row[start : ref.column + len(ref.name)].replace(" ", "") != chain.replace(
                " ", ""
            ):
                start = ref.column
            paren = ref.column + len(ref.name) + (len(after) - len(after.lstrip())) + 1
            seen.add((path, ref.name))
            found.append((path, text, ref.line, start, paren, defs[0]))
    rng = random.Random(seed)
    rng.shuffle(found)
    tasks: list[CodeTask] = []
    for path, text, line, start, paren, gold in found[:limit]:
        tasks.append(CodeTask("cross_file_typed", path, text, line, paren, gold.name, gold))
        rows = text.split("\n")
        rows[line] = rows[line][:start]
        for i in range(line + 1, _written_until(rows, line, enclosing.get(path, []))):
            rows[i] = ""
        tasks.append(CodeTask("cross_file_untyped", path, "\n".join(rows), line, start, gold.name, gold))
    return tasks


def _written_until(rows: list[str], line: int, defs: Sequence[Definition]) -> int:
    """The end (exclusive) of what is still being written at `line`: the innermost enclosing
    function, or at module level the block of non-blank lines."""
    inner = [d for d in defs if d.start_line < line <= d.end_line]
    if inner:
        return min(d.end_line for d in inner) + 1
    end = line + 1
    while end < len(rows) and rows[end].strip():
        end += 1
    return end


def text_tasks(chunks: Sequence[Chunk], limit: int, seed: int) -> list[TextTask]:
    tasks: dict[str, TextTask] = {}
    for chunk in chunks:
        if not chunk.doc or chunk.kind not in CALLABLE_KINDS:
            continue
        query = first_sentence(chunk.doc)
        if len(query.split()) < MIN_QUERY_WORDS or query in tasks:
            continue
        tasks[query] = TextTask(query, chunk)
    ordered = sorted(tasks.values(), key=lambda t: (t.gold.path, t.gold.start_line))
    random.Random(seed).shuffle(ordered)
    return ordered[:limit]


def _reinsert(ids: list[str], gold_id: str, position: int) -> list[str]:
    rest = [i for i in ids if i != gold_id]
    if position < 0:
        return rest
    return [*rest[:position], gold_id, *rest[position:]]


@dataclass
class HiddenDocLists:
    """One natural-language task's ranked source lists as search would see them with the gold's
    docstring hidden: the lists by source, the chunks by id, each dense hit's score, the latency."""

    lists: dict[str, list[str]]
    chunks: dict[str, Chunk]
    dense_scores: dict[str, float]
    ms: float


def hidden_doc_lists(
    searcher: HybridSearcher,
    bm25: ChunkBM25,
    embedder: Any,
    task: TextTask,
    depth: int,
    keep_names: bool = False,
) -> HiddenDocLists:
    """The search's source lists with the gold chunk's docstring hidden (the gold re-placed in
    the full-text and dense lists by its scores without the docstring). With vectors the names
    list is dropped, as search drops it, unless `keep_names` (bench/nl_rerank.py's features)."""
    import numpy as np

    gold = task.gold
    stripped = strip_doc(gold)
    started = time.perf_counter()
    # One more than the search reads: the gold's own entry (its text with the doc) leaves the list,
    # and the place it takes without the doc is judged against `depth` others, as the search's
    # cut would (with only depth - 1 others, a gold below all of them was placed last, in view).
    lists, chunks, _ = searcher.ranked_lists(task.query, depth + 1, dense=False)
    lists = {name: ids if name == "fts" else ids[:depth] for name, ids in lists.items()}
    dense_hits = []
    vector = None
    if embedder is not None and searcher.progress()[0] > 0:
        vector = embedder.embed_query(task.query)
        dense_hits = searcher.dense_hits(vector, depth + 1, embedder.model_id)
    elapsed = (time.perf_counter() - started) * 1000
    chunks[gold.id] = gold
    for hit in dense_hits:
        chunks.setdefault(hit.chunk.id, hit.chunk)
    if "fts" in lists:
        fts = [i for i in lists["fts"] if i != gold.id][:depth]
        # The gold is placed by the score the list's own index gives its text without the doc
        # (the same BM25 that ranked the rest); the baseline's BM25 only while that index is not
        # in memory. Scoring the gold with another BM25 than its neighbours made its place
        # inconsistent with theirs, a difference a learned reranker could pick up.
        scores = searcher.store.text_scores(fts_terms(task.query), [stripped, *(chunks[i] for i in fts)])
        if scores is None:
            scores = [bm25.score_chunk(task.query, c) for c in (stripped, *(chunks[i] for i in fts))]
        gold_score = scores[0]
        position = next((n for n, s in enumerate(scores[1:]) if s < gold_score), len(fts))
        lists["fts"] = _reinsert(fts, gold.id, position if gold_score > 0 and position < depth else -1)[
            :depth
        ]
    dense_scores: dict[str, float] = {}
    if vector is not None:
        if not keep_names and not names_list_applies(task.query, searcher.settings, dense=True):
            lists.pop("names", None)  # as HybridSearcher.search leaves it out with vectors
        body_sim = float(
            np.dot(np.asarray(vector, dtype=np.float32), embedder.embed_documents([stripped])[0])
        )
        # The name vector (symbol and signature) never holds the doc: only the body is re-embedded.
        gold_sim = searcher.mixed_score(vector, gold, body_sim, embedder.model_id)
        others = [h for h in dense_hits if h.chunk.id != gold.id][:depth]
        position = next((n for n, h in enumerate(others) if h.score < gold_sim), len(others))
        lists["dense"] = _reinsert(
            [h.chunk.id for h in others], gold.id, position if position < depth else -1
        )[:depth]
        dense_scores = {h.chunk.id: h.score for h in others} | {gold.id: gold_sim}
    return HiddenDocLists(lists, chunks, dense_scores, elapsed)


def _hidden_doc_search(
    searcher: HybridSearcher, bm25: ChunkBM25, embedder: Any, task: TextTask, depth: int
) -> tuple[list[tuple[str, int, int]], float]:
    """Hybrid search with the gold chunk's docstring hidden; returns spans and the search latency."""
    found = hidden_doc_lists(searcher, bm25, embedder, task, depth)
    fused = searcher.fuse(task.query, found.lists, found.chunks, 10)
    chunks = found.chunks
    return [(chunks[f.key].path, chunks[f.key].start_line, chunks[f.key].end_line) for f in fused], found.ms


def run_eval(
    store: IndexReader,
    settings: Settings,
    root: Path,
    embedder: Any = None,
    limit: int = 200,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    kinds: Sequence[str] = KINDS,
) -> dict[str, Any]:
    """Run every task kind for codectx and the BM25 baseline; a JSON-ready report."""
    say = progress or (lambda _m: None)
    say("codectx eval: loading chunks")
    chunks = list(store.all_chunks())
    bm25 = ChunkBM25(chunks)
    index_of = {c.id: n for n, c in enumerate(chunks)}
    searcher = HybridSearcher(store, settings, embedder=embedder)
    # Every kind measures the steady state the language server and batch search run in: chunks
    # and the in-memory full-text index loaded. Without this, the first kind ran on LanceDB's
    # full-text search and later ones on the in-memory index (their BM25s differ in detail),
    # so a kind's figures depended on which kinds ran before it.
    searcher.store.preload(wait=True)
    counter = default_counter()
    results: dict[str, dict[str, Metrics]] = {k: {"codectx": Metrics(), "bm25": Metrics()} for k in kinds}

    if {"cross_file_typed", "cross_file_untyped"} & set(kinds):
        tasks = [t for t in code_tasks(store, root, limit, seed) if t.kind in kinds]
        say(f"codectx eval: {len(tasks)} cross-file tasks")
        for task in tasks:
            g = task.gold
            started = time.perf_counter()
            ctx = assemble_context(
                store,
                settings,
                task.path,
                task.text,
                task.line,
                task.character,
                embedder=embedder,
                token_counter=counter,
            )
            ms = (time.perf_counter() - started) * 1000
            spans = [(c.path, c.start_line, c.end_line) for c in ctx.ranked]
            results[task.kind]["codectx"].add(_rank(spans, g.path, g.start_line, g.end_line), ms)
            rows = task.text.split("\n")
            query = "\n".join(
                [*rows[max(0, task.line - BASELINE_LINES) : task.line], rows[task.line][: task.character]]
            )
            own = [
                index_of[c.id]
                for c in chunks
                if c.path == task.path and c.start_line <= task.line <= c.end_line
            ]
            started = time.perf_counter()
            hits = bm25.search(query, 10, exclude=own)
            ms = (time.perf_counter() - started) * 1000
            spans = [(c.path, c.start_line, c.end_line) for c, _s in hits]
            results[task.kind]["bm25"].add(_rank(spans, g.path, g.start_line, g.end_line), ms)

    if "natural_language" in kinds:
        nl = text_tasks(chunks, limit, seed)
        say(f"codectx eval: {len(nl)} natural-language tasks")
        depth = max(10, settings.retriever.search_depth)
        for text_task in nl:
            g = text_task.gold
            spans, ms = _hidden_doc_search(searcher, bm25, embedder, text_task, depth)
            results["natural_language"]["codectx"].add(_rank(spans, g.path, g.start_line, g.end_line), ms)
            started = time.perf_counter()
            hits = bm25.search(text_task.query, 11)
            ms = (time.perf_counter() - started) * 1000
            gold_score = bm25.score_chunk(text_task.query, strip_doc(g))
            ids = [c.id for c, _s in hits if c.id != g.id]
            position = next(
                (n for n, (c, s) in enumerate(x for x in hits if x[0].id != g.id) if s < gold_score), len(ids)
            )
            ranked = _reinsert(ids, g.id, position if gold_score > 0 else -1)[:10]
            by_id = {c.id: c for c, _ in hits} | {g.id: g}
            spans = [(by_id[i].path, by_id[i].start_line, by_id[i].end_line) for i in ranked]
            results["natural_language"]["bm25"].add(_rank(spans, g.path, g.start_line, g.end_line), ms)

    return {
        "root": str(root),
        "chunks": len(chunks),
        "dense": embedder is not None,
        "weights": {
            k: settings.retriever.as_dict()[k]
            for k in (
                "dense_weight",
                "fts_weight",
                "symbol_weight",
                "name_words_weight",
                "name_words_dense_weight",
                "test_weight",
                "doc_weight",
                "calls_weight",
                "identifier_boost",
                "rrf_k",
            )
        },
        "results": {
            kind: {system: m.summary() for system, m in systems.items()} for kind, systems in results.items()
        },
    }


def format_report(report: dict[str, Any]) -> str:
    header = (
        f"{'task':22} {'system':8} {'tasks':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} "
        f"{'p50 ms':>8} {'p95 ms':>8}"
    )
    out = [
        f"codectx eval on {report['root']} ({report['chunks']} chunks, "
        f"vectors {'on' if report['dense'] else 'off'})",
        header,
        "-" * len(header),
    ]
    for kind, systems in report["results"].items():
        for system, m in systems.items():
            if not m.get("tasks"):
                out.append(f"{kind:22} {system:8} {0:>5}")
                continue
            out.append(
                f"{kind:22} {system:8} {m['tasks']:>5} {m['recall@1']:>6.3f} {m['recall@5']:>6.3f} "
                f"{m['recall@10']:>6.3f} {m['mrr@10']:>7.3f} {m['p50_ms']:>8.1f} {m['p95_ms']:>8.1f}"
            )
    return "\n".join(out)
