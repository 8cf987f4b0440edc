"""How definition candidates from several sources are ranked together.

Each source (names the scope uses, names the file imports, calls made by
similar code, closeness of vectors to the scope) gives a ranked list; the
lists are fused by weighted reciprocal rank, summed when a definition is in
several, so agreement between sources lifts a definition.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codectx.retriever.candidates import Candidate
    from codectx.retriever.search import HybridSearcher

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


def affinity_list(
    searcher: HybridSearcher, vector: Any, lists: dict[str, list[Candidate]], top: int
) -> list[Candidate]:
    """The definition candidates ordered by how close their vectors are to the scope's (the
    index's own chunk vectors: no embedding beyond the scope query, which is cached)."""
    embedder = searcher.embedder()
    rows_of = getattr(searcher.store, "dense_rows", None)
    loaded = rows_of(embedder.model_id) if rows_of is not None and embedder is not None else None
    if loaded is None:
        return []
    matrix, row_of = loaded
    import numpy as np

    query = np.asarray(vector, dtype=np.float32).ravel()
    paths = sorted({c.path for cands in lists.values() for c in cands})
    hash_of = {(c.path, c.start_line): c.content_hash for p in paths for c in searcher.chunks_for_file(p)}
    scored: dict[tuple[str, int], tuple[float, Candidate]] = {}
    for cands in lists.values():
        for cand in cands:
            key = (cand.path, cand.start_line)
            row = row_of.get(hash_of.get(key, ""))
            if row is not None and key not in scored:
                scored[key] = (float(matrix[row] @ query), cand)
    ordered = sorted(scored.values(), key=lambda x: (-x[0], x[1].path, x[1].start_line))
    return [cand for _score, cand in ordered[:top]]
