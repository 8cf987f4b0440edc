"""Chat context recall on the development set, for tuning the chat context's constants.

`bench_chat.py` reports the issue's figure on requests, click and flask; constants are chosen
here, on the development set (bench/devset.toml), so that figure is not the one they were fitted
to. For each repository: questions from the first sentence of documented functions (as
`codectx eval` builds them), a copy of the tree with those docstrings removed, indexed with
vectors, and one chat turn's context gathered per question (`codectx.app.chat_context`, no
editor file); a hit is the gold function among the turn's pieces.

Each variant is comma-joined `KEY=VALUE` settings (`retriever.chat_budget_tokens=4096`) or constants of
`codectx.app.chat_context` (`SEARCH_K=30`); the first variant is the defaults. Per repository
and pooled: recall, items per turn and tokens spent, and how many repositories a variant lowers
by more than 0.01.

    .venv/bin/python bench/chat_sweep.py SEARCH_K=30 retriever.chat_budget_tokens=4096,SEARCH_K=40
    .venv/bin/python bench/chat_sweep.py --repos jinja2,arrow --limit 60

`--independent` measures the defaults on bench/nl_queries*.toml instead: queries written from the
packages' documentation by someone who had not read our code, gold definitions named there,
docstrings left in (bench/results/chat-independent-<time>.json).

Writes bench/results/chat-sweep-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_chat import Prepared, gather_recall, gather_turn, prepare  # type: ignore[import-not-found]  # noqa: E402
from bench_devset import fetch, load_devset  # type: ignore[import-not-found]  # noqa: E402
from common import table, write_results  # type: ignore[import-not-found]  # noqa: E402


def parse_variant(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(settings overrides, chat_context constants) of one `K=V,K=V` variant."""
    settings: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        key = key.strip()
        (constants if key.isupper() else settings)[key] = json.loads(value)
    return settings, constants


def run_variant(prepared: Prepared, embedder: Any, variant: str) -> dict[str, Any]:
    from codectx.app import chat_context

    overrides, constants = parse_variant(variant)
    saved = {k: getattr(chat_context, k) for k in constants}
    try:
        for key, value in constants.items():
            setattr(chat_context, key, value)
        return gather_recall(prepared, embedder, overrides)
    finally:
        for key, value in saved.items():
            setattr(chat_context, key, value)


def independent_recall(repo: dict[str, Any], queries: list[dict[str, Any]], embedder: Any) -> dict[str, Any]:
    """Chat context recall on the queries written from the package's documentation by someone who
    had not read our code (bench/nl_queries*.toml): the tree as it is (docstrings in), indexed with
    vectors; a hit is a piece of the gold definition (its path, and its symbol or its first line)."""
    from bench_chat import index  # type: ignore[import-not-found]

    from codectx.app.cli import CommandIndex
    from codectx.app.session import WorkspaceSession

    root = fetch(repo)
    settings, _store = index(root, f"{repo['name']}-full", embed=embedder is not None)
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: embedder)
    session.warm_up_gate()
    hits = 0
    misses: list[str] = []
    for q in queries:
        got = gather_turn(session, root, q["query"])
        line = q["line"] - 1
        if any(
            p.path == q["path"] and (p.symbol == q["symbol"] or p.start_line <= line <= p.end_line)
            for p in got.pieces
        ):
            hits += 1
        else:
            misses.append(f"{q['query']!r} -> {q['path']}:{q['line']} {q['symbol']}")
    return {
        "repo": repo["name"],
        "questions": len(queries),
        "hits": hits,
        "recall": hits / max(len(queries), 1),
        "misses": misses,
    }


def independent(repos: list[dict[str, Any]], embedder: Any) -> int:
    import tomllib

    by_repo: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(HERE.glob("nl_queries*.toml")):
        for q in tomllib.loads(path.read_text(encoding="utf-8"))["query"]:
            by_repo.setdefault(q["repo"], []).append(q)
    rows = []
    got = []
    for repo in repos:
        if repo["name"] in by_repo:
            result = independent_recall(repo, by_repo[repo["name"]], embedder)
            got.append(result)
            rows.append((repo["name"], str(result["questions"]), f"{result['recall']:.3f}"))
    asked = sum(g["questions"] for g in got)
    rows.append(("pooled", str(asked), f"{sum(g['hits'] for g in got) / max(asked, 1):.3f}"))
    print(table(rows, ("repository", "queries", "chat context recall")))
    print(f"results: {write_results('chat-independent', {'repos': got})}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("variants", nargs="*", help="KEY=VALUE[,KEY=VALUE] (settings or constants)")
    parser.add_argument("--repos", help="comma-separated names from bench/devset.toml (default: all)")
    parser.add_argument("--limit", type=int, default=100, help="questions per repository")
    parser.add_argument("--lexical", action="store_true", help="no vectors")
    parser.add_argument(
        "--independent",
        action="store_true",
        help="measure the defaults on bench/nl_queries*.toml (written from documentation by someone "
        "who had not read our code; docstrings not hidden) instead of sweeping",
    )
    args = parser.parse_args()

    from codectx.app.index import load_embedder
    from codectx.runtime import quiet_dependencies
    from codectx.settings import load_settings

    quiet_dependencies()
    repos = load_devset()
    if args.repos:
        wanted = set(args.repos.split(","))
        repos = [r for r in repos if r["name"] in wanted]
    embedder = None if args.lexical else load_embedder(load_settings(None, {}))
    if args.independent:
        return independent(repos, embedder)
    variants = ["", *args.variants]
    per_repo: dict[str, dict[str, dict[str, Any]]] = {}
    for repo in repos:
        prepared = prepare(repo["name"], fetch(repo), args.limit, embedder)
        per_repo[repo["name"]] = {}
        for variant in variants:
            got = run_variant(prepared, embedder, variant)
            per_repo[repo["name"]][variant] = got
            print(f"  {repo['name']:12} {variant or 'defaults':40} recall {got['recall']:.3f}", flush=True)
    rows = []
    summary: dict[str, Any] = {}
    for variant in variants:
        got = [per_repo[r][variant] for r in per_repo]
        hits = sum(g["hits"] for g in got)
        asked = sum(g["questions"] for g in got)
        hurt = sum(1 for r in per_repo if per_repo[r][variant]["recall"] < per_repo[r][""]["recall"] - 0.01)
        items = sum(g["items_mean"] * g["questions"] for g in got) / max(asked, 1)
        tokens = sum(g["tokens_mean"] * g["questions"] for g in got) / max(asked, 1)
        worst = min(got, key=lambda g: g["recall"]) if got else None
        summary[variant or "defaults"] = {"pooled": hits / max(asked, 1), "hurt": hurt}
        rows.append(
            (
                variant or "defaults",
                f"{hits / max(asked, 1):.3f}",
                f"{worst['repo']} {worst['recall']:.2f}" if worst else "",
                str(hurt),
                f"{items:.1f}",
                f"{tokens:.0f}",
            )
        )
    print(table(rows, ("variant", "pooled recall", "worst", "repos hurt", "items", "tokens")))
    per = [(repo, *(f"{per_repo[repo][v]['recall']:.3f}" for v in variants)) for repo in per_repo]
    print(table(per, ("repository", *(v or "defaults" for v in variants))))
    path = write_results("chat-sweep", {"variants": summary, "per_repo": per_repo, "limit": args.limit})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
