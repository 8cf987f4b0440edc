"""The features of bench/nl_rerank.py's reranking study (issue 20, item 3): per fused candidate.

The candidates are the fused top `POOL` of a natural-language search's source lists (full
text, vectors, symbol names, name words); each gets:

- per list: 1/(rrf_k + rank) and whether it is in the list at all;
- today's weighted-RRF score;
- its dense score (body and name vectors mixed) and that score's gap to the best;
- its full-text (BM25) score relative to the pool's best, for every candidate, listed or not;
- its kind (function, method, class), whether its path is a test's, its length in lines.

Not in the product: a model fitted on these lost on queries written independently
(bench/bench_nl_queries.py). The study's note in bench/README.md says why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codectx.indexer.model import Chunk
from codectx.retriever.fusion import weighted_rrf

SOURCES = ("fts", "dense", "symbol", "names")
POOL = 120  # fused candidates reranked
TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testing)/|(^|/)test_[^/]*$|_test\.py$|\.(spec|test)\.[jt]sx?$"
)
FEATURES = (
    *(f"rr_{s}" for s in SOURCES),
    *(f"in_{s}" for s in SOURCES),
    "fused",
    "dense",
    "dense_gap",
    "fts_rel",
    "is_function",
    "is_method",
    "is_class",
    "is_test",
    "log_lines",
)


@dataclass
class Candidates:
    """A query's first-stage output: the source lists (chunk ids, best first), the chunks by id,
    and the dense score of each dense hit."""

    lists: Mapping[str, Sequence[str]]
    chunks: Mapping[str, Chunk]
    dense_scores: Mapping[str, float]


def pool(candidates: Candidates, weights: Mapping[str, float], rrf_k: float) -> list[tuple[str, float]]:
    """The fused top `POOL` (id, weighted-RRF score without the name-words list), best first."""
    lists = {s: v for s, v in candidates.lists.items() if s != "names"}
    return [(f.key, f.score) for f in weighted_rrf(lists, weights, k=rrf_k, limit=POOL)]


def features(
    candidates: Candidates,
    pooled: Sequence[tuple[str, float]],
    text_scores: Sequence[float] | None,
    rrf_k: float,
) -> list[list[float]]:
    """One row of `FEATURES` per pooled candidate, in the pool's order."""
    rank = {s: {i: n for n, i in enumerate(candidates.lists.get(s, ()))} for s in SOURCES}
    dense = candidates.dense_scores
    top_dense = max(dense.values(), default=0.0)
    floor = min(dense.values(), default=0.0)
    texts = list(text_scores) if text_scores is not None else [0.0] * len(pooled)
    top_text = max(texts, default=0.0) or 1.0
    rows = []
    for n, (key, fused) in enumerate(pooled):
        chunk = candidates.chunks[key]
        rows.append(
            [
                *(1 / (rrf_k + rank[s][key] + 1) if key in rank[s] else 0.0 for s in SOURCES),
                *(float(key in rank[s]) for s in SOURCES),
                fused,
                dense.get(key, floor),
                dense.get(key, floor) - top_dense,
                texts[n] / top_text,
                float(chunk.kind == "function"),
                float(chunk.kind == "method"),
                float(chunk.kind == "class"),
                float(bool(TEST_PATH.search(chunk.path))),
                math.log1p(chunk.end_line - chunk.start_line + 1),
            ]
        )
    return rows


def score(row: Sequence[float], coefficients: Mapping[str, float]) -> float:
    return sum(coefficients.get(name, 0.0) * value for name, value in zip(FEATURES, row, strict=True))


def rerank(
    candidates: Candidates,
    weights: Mapping[str, float],
    rrf_k: float,
    text_scores: Sequence[float] | None,
    pooled: Sequence[tuple[str, float]] | None,
    coefficients: Mapping[str, float],
) -> list[tuple[str, float]]:
    """The pooled candidates reordered by the model's score, best first (ties keep fused order)."""
    pooled = pooled if pooled is not None else pool(candidates, weights, rrf_k)
    rows = features(candidates, pooled, text_scores, rrf_k)
    scored = [(key, score(row, coefficients)) for (key, _f), row in zip(pooled, rows, strict=True)]
    order = sorted(range(len(scored)), key=lambda n: -scored[n][1])  # sorted is stable
    return [scored[n] for n in order]
