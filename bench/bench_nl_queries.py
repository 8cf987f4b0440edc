"""Natural-language search on queries nobody tuned for: bench/nl_queries*.toml (issue 20).

The queries were written from each package's public documentation by someone who had not read
codectx's code: a feature in the docs, the definition that implements it, the query in a user's
words. Unlike `codectx eval`'s tasks, nothing is hidden: each package is searched as indexed,
docstrings included, through `HybridSearcher.search` (what `codectx search` runs). Per package
it reports recall@1/5/10 and MRR@10 for each variant (`retriever.KEY=VALUE`, comma-joined; the
first is the defaults):

    .venv/bin/python bench/bench_nl_queries.py retriever.fts_weight=1.5
    .venv/bin/python bench/bench_nl_queries.py --lexical retriever.name_words_weight=0

Run bench_devset.py --vectors all first (the indexes and their vectors are reused).
Writes bench/results/nl-queries-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_devset import INDEXES, fetch, load_devset  # noqa: E402
from common import RESULTS  # noqa: E402
from devset_sweep import parse_variant  # noqa: E402

QUERIES = sorted(HERE.glob("nl_queries*.toml"))  # the first set and nl_queries_extra_*.toml


def ranks(
    repo: dict[str, Any],
    queries: list[dict[str, Any]],
    overrides: dict[str, Any],
    embedder: Any,
    dense: bool = True,
) -> list:
    from codectx.indexer.storage.store import IndexStore
    from codectx.retriever.search import HybridSearcher

    from codectx.settings import load_settings

    root = fetch(repo)
    index_dir = INDEXES / f"{repo['name']}-{repo['version']}"
    settings = load_settings(root, {"index.index_dir": str(index_dir), **overrides})
    searcher = HybridSearcher(IndexStore.open(index_dir), settings, embedder=embedder, preload=True)
    searcher.store.preload(wait=True)
    found = []
    for q in queries:
        results = searcher.search(q["query"], k=10, dense=dense).results
        line = q["line"] - 1  # 0-based, as the index
        rank = next(
            (
                n
                for n, r in enumerate(results, 1)
                if r.path == q["path"]
                and r.start_line <= line <= r.end_line
                and (r.symbol == q["symbol"] or r.start_line == line)
            ),
            None,
        )
        found.append(rank)
    return found


def summary(found: list) -> dict[str, float]:
    n = max(1, len(found))
    out: dict[str, float] = {"tasks": len(found)}
    for k in (1, 5, 10):
        out[f"recall@{k}"] = round(sum(r is not None and r <= k for r in found) / n, 3)
    out["mrr@10"] = round(sum(1 / r for r in found if r) / n, 3)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="*", help="retriever.KEY=VALUE[,KEY=VALUE...] per variant")
    ap.add_argument("--lexical", action="store_true", help="search without vectors (the lexical path)")
    args = ap.parse_args()
    from codectx.app.index import load_embedder
    from codectx.settings import load_settings

    queries = [q for f in QUERIES for q in tomllib.loads(f.read_text(encoding="utf-8"))["query"]]
    repos = [r for r in load_devset() if any(q["repo"] == r["name"] for q in queries)]
    embedder = load_embedder(load_settings(None, {}))
    variants = ["(defaults)", *args.variants]
    table: dict[str, dict[str, Any]] = {}
    for variant in variants:
        overrides = {} if variant == "(defaults)" else parse_variant(variant)
        table[variant] = {}
        every: list = []
        for repo in repos:
            mine = [q for q in queries if q["repo"] == repo["name"]]
            found = ranks(repo, mine, overrides, embedder, dense=not args.lexical)
            table[variant][repo["name"]] = summary(found) | {"ranks": found}
            every += found
        table[variant]["POOLED"] = summary(every)
    print(f"{'repository':14} {'variant':28} {'tasks':>5} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for name in [*(r["name"] for r in repos), "POOLED"]:
        for variant in variants:
            m = table[variant][name]
            print(
                f"{name:14} {variant[:28]:28} {m['tasks']:>5} {m['recall@1']:>6.3f} {m['recall@5']:>6.3f} "
                f"{m['recall@10']:>6.3f} {m['mrr@10']:>6.3f}"
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"nl-queries-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"lexical": args.lexical, "results": table}, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
