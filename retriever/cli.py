"""`codectx eval`: the retriever's quality measured on the command line.

(`codectx search` and `codectx context` go through the application layer: codectx/app/cli.py.)
"""

from __future__ import annotations

import argparse

from codectx.retriever.opening import embedder_factory, open_store

from codectx.clikit import add_index_dir, add_json, print_json, settings_for, stderr, workspace_root
from codectx.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _register_eval(sub)


# ---- eval ---------------------------------------------------------------------------------------


def _register_eval(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "eval",
        help="measure context and search quality on this repository (no labels needed)",
        description="Build tasks from the indexed repository itself (cross-file call sites with the callee "
        "typed and not yet typed; docstring first sentences as natural-language queries with the docstring "
        "hidden) and report recall@1/5/10, MRR@10 and latency for codectx and a BM25 baseline.",
    )
    p.add_argument("path", nargs="?", help="workspace folder (default: the one enclosing the current folder)")
    p.add_argument("--limit", type=int, default=200, metavar="N", help="tasks per kind (default 200)")
    p.add_argument("--seed", type=int, default=0, help="task sampling seed (default 0)")
    p.add_argument("--lexical", action="store_true", help="codectx without vectors (no model load)")
    add_json(p)
    add_index_dir(p)
    p.set_defaults(func=_eval)


def _eval(args: argparse.Namespace) -> int:
    from codectx.retriever.eval import format_report, run_eval

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    root = workspace_root(args.path)
    extra = {"retriever.context_dense": False} if args.lexical else None
    settings = settings_for(root, args, extra)
    store = open_store(settings)
    embedder = None
    if not args.lexical:
        if store.model_id and store.vector_hashes(store.model_id):
            embedder = embedder_factory(settings)()
        else:  # an index built with --no-embed: the report says "vectors off", not "on"
            stderr("codectx: note: the index has no vectors yet; measuring the lexical path")
    report = run_eval(
        store,
        settings,
        root,
        embedder=embedder,
        limit=args.limit,
        seed=args.seed,
        progress=None if args.json else stderr,
    )
    if args.json:
        print_json(report)
    else:
        print(format_report(report))
    return 0
