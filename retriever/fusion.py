"""Weighted reciprocal-rank fusion of several ranked lists.

Plain RRF gives every list the same say, so a weak lexical list can push a
strong dense list's best answer down. Each list here has its own weight
(tuned on `codectx eval` measurements; see the [retriever] settings), and a
list can be left out entirely when it has nothing to say (no vectors yet).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60.0


@dataclass
class Fused(Generic[K]):
    key: K
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # list name -> 1-based rank in that list


def weighted_rrf(
    lists: Mapping[str, Sequence[K]],
    weights: Mapping[str, float],
    k: float = RRF_K,
    limit: int | None = None,
) -> list[Fused[K]]:
    """Fuse ranked key lists; score = sum over lists of weight / (k + rank).

    Ties are broken by the best single rank, then by first appearance, so
    the result is deterministic for the same inputs.
    """
    fused: dict[K, Fused[K]] = {}
    order: dict[K, int] = {}
    for name, keys in lists.items():
        weight = weights.get(name, 1.0)
        if weight <= 0:
            continue
        seen: set[K] = set()
        for rank, key in enumerate(keys, start=1):
            if key in seen:
                continue
            seen.add(key)
            entry = fused.get(key)
            if entry is None:
                entry = fused[key] = Fused(key, 0.0)
                order[key] = len(order)
            entry.score += weight / (k + rank)
            entry.ranks[name] = rank
    result = sorted(
        fused.values(),
        key=lambda f: (-f.score, min(f.ranks.values()), order[f.key]),
    )
    return result[:limit] if limit is not None else result


def normalize(scores: Iterable[float]) -> list[float]:
    """Scale scores to [0, 1] by the maximum (all zeros stay zeros)."""
    values = list(scores)
    top = max(values, default=0.0)
    return [v / top if top > 0 else 0.0 for v in values]
