"""A sweep of retriever settings over the development set: cross-file tasks on the lexical path,
or (`--natural-language`) natural-language search with vectors.

Each setting (`retriever.KEY=VALUE`, several comma-joined make one variant) is passed to the
same `run_eval` that `codectx eval --lexical` runs, on the indexes bench_devset.py built; the
first variant is the baseline (the defaults). Per repository and pooled, it prints name-typed
recall@5 and not-typed recall@10, the change against the baseline, and how many repositories
each variant hurts (a drop over 0.01): issue 20 calls a constant that helps the pool but hurts
more than a third of the repositories overfitting.

    .venv/bin/python bench/devset_sweep.py retriever.used_weight=0.5 retriever.used_weight=1.0
    .venv/bin/python bench/devset_sweep.py --natural-language retriever.name_weight=0.3

`--natural-language --lexical` runs that search without vectors (the lexical path alone).
`--vectors` runs the cross-file kinds with vectors (context with the scope's vector), as
`codectx eval` does on an embedded index.
`--natural-language` alone needs the indexes' vectors (`bench_devset.py --vectors all` embeds them)
and loads the default embedding model once.

Writes bench/results/devset-sweep-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_devset import INDEXES, fetch, load_devset  # noqa: E402
from common import RESULTS  # noqa: E402

CODE_KINDS = (("cross_file_typed", "recall@5"), ("cross_file_untyped", "recall@10"))
TEXT_KINDS = (("natural_language", "recall@10"),)


def parse_variant(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = json.loads(value)
    return out


def evaluate(
    repo: dict[str, Any],
    overrides: dict[str, Any],
    limit: int,
    seed: int,
    kinds: tuple[tuple[str, str], ...] = CODE_KINDS,
    embedder: Any = None,
) -> dict[str, Any]:
    from codectx.indexer.storage.store import IndexStore
    from codectx.retriever.eval import run_eval

    from codectx.settings import load_settings

    root = fetch(repo)
    index_dir = INDEXES / f"{repo['name']}-{repo['version']}"
    dense = embedder is not None and kinds == CODE_KINDS  # --vectors: context with the scope's vector
    settings = load_settings(
        root, {"index.index_dir": str(index_dir), "retriever.context_dense": dense, **overrides}
    )
    report = run_eval(
        IndexStore.open(index_dir),
        settings,
        root,
        embedder=embedder,
        limit=limit,
        seed=seed,
        kinds=[k for k, _ in kinds],
    )
    return {kind: report["results"][kind]["codectx"] for kind, _ in kinds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="*", help="retriever.KEY=VALUE[,KEY=VALUE...] per variant")
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repos", default="")
    ap.add_argument(
        "--natural-language", action="store_true", help="natural-language search with vectors instead"
    )
    ap.add_argument(
        "--lexical", action="store_true", help="with --natural-language: the lexical path alone (no vectors)"
    )
    ap.add_argument(
        "--vectors",
        action="store_true",
        help="cross-file kinds with vectors (the scope's vector, similar code by vectors), as an "
        "embedded index answers; needs bench_devset.py --vectors all",
    )
    args = ap.parse_args()
    kinds, embedder = CODE_KINDS, None
    if args.natural_language and args.lexical:
        kinds = TEXT_KINDS
    elif args.natural_language or args.vectors:
        from codectx.app.index import load_embedder
        from codectx.settings import load_settings

        embedder = load_embedder(load_settings(None, {}))
        kinds = TEXT_KINDS if args.natural_language else CODE_KINDS
    repos = load_devset()
    if args.repos:
        repos = [r for r in repos if r["name"] in set(args.repos.split(","))]
    variants = ["(defaults)", *args.variants]
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for variant in variants:
        overrides = {} if variant == "(defaults)" else parse_variant(variant)
        table[variant] = {}
        for repo in repos:
            table[variant][repo["name"]] = evaluate(repo, overrides, args.limit, args.seed, kinds, embedder)
        print(f"done {variant}", flush=True)
    base = table["(defaults)"]
    for kind, metric in kinds:
        print(f"\n{kind} {metric}")
        print(f"{'repository':14}" + "".join(f" {v[:28]:>28}" for v in variants))
        pooled: dict[str, list[float]] = {v: [0.0, 0.0] for v in variants}
        hurt = dict.fromkeys(variants, 0)
        for repo in repos:
            name = repo["name"]
            cells = []
            for v in variants:
                m = table[v][name][kind]
                if not m.get("tasks"):
                    cells.append(f"{'-':>28}")
                    continue
                delta = m[metric] - base[name][kind][metric]
                hurt[v] += delta < -0.01
                pooled[v][0] += m[metric] * m["tasks"]
                pooled[v][1] += m["tasks"]
                cells.append(f" {m[metric]:>20.3f} ({delta:+.2f})")
            print(f"{name:14}" + "".join(cells))
        print(f"{'POOLED':14}" + "".join(f" {pooled[v][0] / max(1, pooled[v][1]):>28.3f}" for v in variants))
        print(f"{'repos hurt':14}" + "".join(f" {hurt[v]:>28}" for v in variants))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"devset-sweep-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"limit": args.limit, "seed": args.seed, "results": table}, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
