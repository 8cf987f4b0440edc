"""Would a learned reranking stage lift natural-language recall (issue 20, item 3)? A study.

No cross-encoder or late-interaction model installs offline from a package (../shared/FACTS.md),
so this measures the issue's other option: a learned combination of the signals search already
has, over the fused candidates (bench/rerank_features.py: the pool, the features).
For `codectx eval`'s natural-language tasks (docstring hidden, with vectors) on every repository
of the development set it records each pooled candidate's features.

A logistic regression is trained leave-one-repository-out (the repository measured is never
in its training data) and ranks that repository's candidates; recall@10 per repository is
compared with today's fusion. Features that would only exploit how the eval hides the
docstring (whether a chunk has one) are left out on purpose.

    .venv/bin/python bench/nl_rerank.py [--limit 100] [--train-limit 300] [--repos a,b]
    .venv/bin/python bench/nl_rerank.py --cached --drop is_function,is_method,is_class

Run bench_devset.py --vectors all first (the indexes and their vectors are reused).
Writes bench/results/nl-rerank-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_devset import INDEXES, fetch, load_devset  # noqa: E402
from common import DATA, RESULTS  # noqa: E402
from rerank_features import FEATURES  # noqa: E402

CACHE = DATA / "nl-rerank"


def collect(repo: dict[str, Any], embedder: Any, limit: int) -> list[dict[str, Any]]:
    """One row per task: the pooled candidates' features, which one is the gold, today's top 10."""
    import rerank_features as rerank
    from codectx.indexer.storage.store import IndexStore
    from codectx.retriever.eval import ChunkBM25, hidden_doc_lists, strip_doc, text_tasks
    from codectx.retriever.search import HybridSearcher, fts_terms

    from codectx.settings import load_settings

    root = fetch(repo)
    index_dir = INDEXES / f"{repo['name']}-{repo['version']}"
    settings = load_settings(root, {"index.index_dir": str(index_dir)})
    store = IndexStore.open(index_dir)
    chunks = list(store.all_chunks())
    bm25 = ChunkBM25(chunks)
    searcher = HybridSearcher(store, settings, embedder=embedder)
    searcher.store.preload(wait=True)
    k = settings.retriever.rrf_k
    depth = max(10, settings.retriever.search_depth)
    rows = []
    for task in text_tasks(chunks, limit, 0):
        found = hidden_doc_lists(searcher, bm25, embedder, task, depth, keep_names=True)
        candidates = rerank.Candidates(found.lists, found.chunks, found.dense_scores)
        pooled = rerank.pool(candidates, searcher.weights(task.query), k)
        ids = [key for key, _ in pooled]
        shown = [strip_doc(task.gold) if i == task.gold.id else found.chunks[i] for i in ids]
        texts = searcher.store.text_scores(fts_terms(task.query), shown)
        x = np.asarray(rerank.features(candidates, pooled, texts, k), dtype=np.float64)
        gold = ids.index(task.gold.id) if task.gold.id in ids else -1
        rows.append({"x": x.reshape(len(ids), len(rerank.FEATURES)), "gold": gold, "today": list(range(10))})
    return rows


def recall(rows: list[dict[str, Any]], scorer: Any = None) -> float:
    hit = 0
    for row in rows:
        if row["gold"] < 0:
            continue
        top = row["today"] if scorer is None else list(np.argsort(-scorer(row["x"]), kind="stable")[:10])
        hit += row["gold"] in top
    return hit / max(1, len(rows))


# Evidence features may only raise a candidate's score. In these tasks the gold's docstring is
# hidden while every other candidate keeps its own, so an unconstrained fit learns that the best
# full-text match is seldom the gold (negative weights on full-text rank and score): true of the
# eval, false of real searches, where the chunk whose doc matches is the answer.
MONOTONE = {
    f for f in FEATURES if f.startswith(("rr_", "in_")) or f in {"fused", "dense", "dense_gap", "fts_rel"}
}


class Linear:
    """A class-balanced, L2-regularised logistic regression on standardised features, with
    the evidence features' weights bounded at 0 from below (L-BFGS-B)."""

    def __init__(self, names: list[str], monotone: bool = True, c: float = 1.0) -> None:
        self.names, self.monotone, self.c = names, monotone, c

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Linear:
        from scipy.optimize import minimize

        self.mean = xs.mean(axis=0)
        self.scale = xs.std(axis=0)
        self.scale[self.scale == 0] = 1.0
        z = (xs - self.mean) / self.scale
        pos = ys.sum()
        weight = np.where(ys == 1, len(ys) / (2 * max(1, pos)), len(ys) / (2 * max(1, len(ys) - pos)))
        sign = np.where(ys == 1, 1.0, -1.0)

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            w, b = theta[:-1], theta[-1]
            margin = sign * (z @ w + b)
            value = 0.5 * w @ w + self.c * float(np.sum(weight * np.logaddexp(0, -margin)))
            g = -self.c * weight * sign * (1 / (1 + np.exp(margin)))
            return value, np.concatenate([w + z.T @ g, [g.sum()]])

        bounds = [(0, None) if self.monotone and n in MONOTONE else (None, None) for n in self.names]
        theta = minimize(
            loss, np.zeros(len(self.names) + 1), jac=True, method="L-BFGS-B", bounds=[*bounds, (None, None)]
        ).x
        self.coef, self.intercept = theta[:-1], theta[-1]
        return self

    def decision_function(self, xs: np.ndarray) -> np.ndarray:
        return ((xs - self.mean) / self.scale) @ self.coef + self.intercept


def train(rows: list[dict[str, Any]], names: list[str], monotone: bool = True) -> Linear:
    xs = np.vstack([r["x"] for r in rows])
    ys = np.concatenate([np.arange(len(r["x"])) == r["gold"] for r in rows]).astype(int)
    return Linear(names, monotone).fit(xs, ys)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=100, help="tasks per repository measured (as codectx eval)")
    ap.add_argument("--train-limit", type=int, default=300, help="tasks per repository trained on")
    ap.add_argument("--repos", default="")
    ap.add_argument("--free", action="store_true", help="no sign constraint on the evidence features")
    ap.add_argument("--cached", action="store_true", help="reuse the features the last run collected")
    ap.add_argument("--drop", default="", help="comma-separated features to leave out (see FEATURES)")
    args = ap.parse_args()
    keep = [n for n, f in enumerate(FEATURES) if f not in set(args.drop.split(","))]
    names = [FEATURES[n] for n in keep]
    repos = load_devset()
    if args.repos:
        repos = [r for r in repos if r["name"] in set(args.repos.split(","))]
    cache = CACHE / f"limit-{max(args.limit, args.train_limit)}.pkl"
    if args.cached and cache.exists():
        collected = pickle.loads(cache.read_bytes())
    else:
        from codectx.app.index import load_embedder
        from codectx.settings import load_settings

        embedder = load_embedder(load_settings(None, {}))
        collected = {}
        for repo in repos:
            started = time.perf_counter()
            collected[repo["name"]] = collect(repo, embedder, max(args.limit, args.train_limit))
            secs = time.perf_counter() - started
            print(f"{repo['name']}: {len(collected[repo['name']])} tasks in {secs:.0f} s", flush=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(collected))
    data = {
        r["name"]: [row | {"x": row["x"][:, keep]} for row in collected[r["name"]]]
        for r in repos
        if r["name"] in collected
    }
    table = {}
    print(f"\n{'repository':14} {'tasks':>5} {'today':>7} {'learned':>8} {'change':>7}")
    pooled = [0.0, 0.0, 0]
    for name, rows in data.items():
        model = train([r for other, rs in data.items() if other != name for r in rs], names, not args.free)
        measured = rows[: args.limit]
        before = recall(measured)
        after = recall(measured, lambda x, m=model: m.decision_function(x))
        table[name] = {"tasks": len(measured), "today": before, "learned": after}
        pooled[0] += before * len(measured)
        pooled[1] += after * len(measured)
        pooled[2] += len(measured)
        print(
            f"{name:14} {len(measured):>5} {before:>7.3f} {after:>8.3f} {after - before:>+7.3f}", flush=True
        )
    n = max(1, pooled[2])
    print(f"{'POOLED':14} {pooled[2]:>5} {pooled[0] / n:>7.3f} {pooled[1] / n:>8.3f}")
    model = train([r for rs in data.values() for r in rs], names, not args.free)
    coefficients = dict(zip(names, model.coef.round(3).tolist(), strict=True))
    # The weights on raw features (the standardisation folded in), as a product module would hold them.
    folded = {
        name: round(float(w / sd), 6) for name, w, sd in zip(names, model.coef, model.scale, strict=True)
    }
    print("COEFFICIENTS =", folded)
    print("coefficients (all repositories, standardised features):", coefficients)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"nl-rerank-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "limit": args.limit,
                "dropped": args.drop,
                "monotone": not args.free,
                "results": table,
                "coefficients": coefficients,
                "folded": folded,
            },
            indent=2,
        )
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
