"""Why "cross-file, name not typed" misses (issue 20, item 2): per repository of the development set.

For the same tasks `codectx eval` builds (same limit and seed), it runs context assembly on
the lexical path (no vectors, as `codectx eval --lexical`), and for every task whose gold
callee is not in the top 10 records where the gold ranked among all candidates, which
definition list (used / weak / imported / receivers / callees / affinity) held it and at what
rank, what ranked above it, and what the call site looked like, and classifies the cause:

- bare-imported: `name(` where the file imports `name` (from-import / named import);
- bare-not-imported: `name(` with no import binding it (star import, re-export, global);
- self-method: `self.name(` / `this.name(` / `cls.name(` (an inherited or mixin method);
- self-attribute: `self.x.name(` (the receiver is an attribute; its type lives in __init__);
- module-attribute: `mod.name(` where `mod` is an imported module or namespace;
- receiver-typed: `x.name(` where the visible text assigns or annotates `x` with the gold's
  owner class (the receivers' types from assignments and annotations would find it);
- receiver-other-type: `x.name(` typed with some other class (a base, a factory's result);
- receiver-untyped: `x.name(` with no assignment or annotation of `x` in view;
- other-chain: anything else (call results, subscripts, deeper chains).

It imports the retriever read-only (it patches nothing in the source tree; the fused lists are
observed by wrapping `fuse_definitions` in this process only). Run bench_devset.py first (the
indexes are reused):

    .venv/bin/python bench/devset_misses.py [--limit 100] [--repos a,b] [--show 5]

Writes bench/results/devset-misses-<time>.json.
"""

from __future__ import annotations

import argparse
import builtins
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_devset import INDEXES, fetch, load_devset  # noqa: E402
from common import RESULTS  # noqa: E402

SELF = {"self", "this", "cls"}
# Calls whose gold is suspect: the only workspace definition of the name shares it with a
# builtin or a standard type's method (`next(`, `values.extend(`, `JSON.stringify(`), so the
# eval's "defined once in the workspace" gold is likely not what the call reaches.
PY_BUILTINS = set(dir(builtins))
BUILTIN_METHODS = set().union(*(dir(t) for t in (list, dict, str, set, bytes))) | {
    "push",
    "pop",
    "map",
    "filter",
    "forEach",
    "reduce",
    "slice",
    "splice",
    "indexOf",
    "includes",
    "join",
    "split",
    "replace",
    "trim",
    "toString",
    "call",
    "apply",
    "bind",
    "then",
    "catch",
    "hasOwnProperty",
    "set",
    "get",
    "has",
    "delete",
    "concat",
    "keys",
    "values",
    "entries",
}
JS_GLOBALS = {
    "JSON",
    "Object",
    "Math",
    "Array",
    "Promise",
    "console",
    "Number",
    "String",
    "Reflect",
    "Symbol",
    "Date",
    "Buffer",
    "process",
    "Error",
    "Map",
    "Set",
    "os",
    "sys",
    "re",
}
_SPLIT = re.compile(r"\?\.|\.|::|->")


def _lists_recorder() -> tuple[list[dict[str, list[Any]]], Any]:
    """Wrap the fusion of definition lists so each call's input lists are kept."""
    from codectx.retriever import candidates

    seen: list[dict[str, list[Any]]] = []
    original = candidates.fuse_definitions

    def recording(lists: dict[str, list[Any]], weights: dict[str, float]) -> list[Any]:
        seen.append({k: list(v) for k, v in lists.items()})
        return original(lists, weights)

    candidates.fuse_definitions = recording  # type: ignore[assignment]
    return seen, original


def _hit(c: Any, g: Any) -> bool:
    return c.path == g.path and c.start_line <= g.end_line and c.end_line >= g.start_line


def _imported_names(imports: list[Any]) -> tuple[set[str], set[str]]:
    """(names bound by from-imports / named imports, names bound to modules)."""
    names: set[str] = set()
    modules: set[str] = set()
    for imp in imports:
        for original, alias in imp.names:
            if original == "*":
                continue
            (modules if original in ("default",) else names).add(alias or original)
        if imp.alias:
            modules.add(imp.alias)
        if not imp.names and not imp.alias:
            modules.add(re.split(r"[./:]+", imp.module.lstrip("./"))[0])
    return names, modules


def _receiver_types(visible: str, var: str) -> list[str]:
    """Class names the visible text assigns to or annotates `var` with."""
    v = re.escape(var)
    found = []
    for pattern in (
        rf"\b{v}\s*(?::\s*[\w.\[\]'\" |]+)?=\s*(?:new\s+|await\s+)?([A-Za-z_$][\w.$]*)\s*\(",
        rf"\b{v}\s*:\s*['\"]?([A-Za-z_$][\w.$]*)",
    ):
        found += [m.group(1).split(".")[-1] for m in re.finditer(pattern, visible)]
    return found


def classify(task: Any, typed_text: str, start: int, imports: list[Any], self_owner: str) -> tuple[str, str]:
    row = typed_text.split("\n")[task.line]
    call = row[start:].split("(")[0].strip()
    parts = [p for p in _SPLIT.split(call) if p]
    gold = task.gold
    owner = gold.qualname.rsplit(".", 1)[0] if "." in gold.qualname else ""
    named, modules = _imported_names(imports)
    if len(parts) <= 1:
        return ("bare-imported" if task.callee in named else "bare-not-imported"), call
    head = parts[0]
    if head in SELF:
        return ("self-method" if len(parts) == 2 else "self-attribute"), call
    if len(parts) == 2 and (head in modules or (head in named and head[:1].islower() and not owner)):
        return "module-attribute", call
    if len(parts) == 2:
        visible = "\n".join(task.text.split("\n")[: task.line + 1])
        types = _receiver_types(visible, head)
        if owner and owner.split(".")[-1] in types:
            return "receiver-typed", call
        if types:
            return "receiver-other-type", f"{call}  [{head}: {', '.join(dict.fromkeys(types))}]"
        if head in named:
            return "module-attribute", call  # an imported object/namespace used as a module
        return "receiver-untyped", call
    return "other-chain", call


def suspect_gold(call: str, cause: str, gold: Any, library: set[str]) -> str:
    """Why the eval's gold is probably not what the call reaches ("" when it looks right)."""
    parts = [p for p in _SPLIT.split(call.split("  [")[0]) if p]
    if not parts:
        return ""
    if len(parts) == 1:
        if parts[0] in library:
            return "bare name bound by a library import"
        if parts[0] in PY_BUILTINS:
            return "bare name is a Python builtin"
        if gold.kind == "method" and gold.language == "python":
            return "bare call, gold is a method"
        return ""
    if parts[0] in JS_GLOBALS or parts[0] in library:
        return "receiver is a global or library object"
    if cause in ("receiver-untyped", "other-chain") and parts[-1] in BUILTIN_METHODS:
        return "untyped receiver, name of a standard type's method"
    return ""


def receiver_in_view(task: Any, call: str, lines_before: int = 40) -> bool:
    """Whether the call's head (receiver, or the bare name) occurs in the lines before the cursor."""
    head = next((p for p in _SPLIT.split(call.split("  [")[0]) if p), "")
    if not head:
        return False
    rows = task.text.split("\n")
    view = "\n".join(rows[max(0, task.line - lines_before) : task.line + 1])
    return re.search(rf"(?<![\w$]){re.escape(head)}(?![\w$])", view) is not None


def analyse(repo: dict[str, Any], limit: int, seed: int, show: int) -> dict[str, Any]:
    from codectx.indexer.storage.store import IndexStore
    from codectx.retriever.context import assemble_context, current_imports
    from codectx.retriever.eval import code_tasks
    from codectx.retriever.evalgold import library_names
    from codectx.retriever.search import HybridSearcher
    from codectx.retriever.tokens import default_counter

    from codectx.settings import load_settings

    root = fetch(repo)
    index_dir = INDEXES / f"{repo['name']}-{repo['version']}"
    settings = load_settings(root, {"index.index_dir": str(index_dir), "retriever.context_dense": False})
    store = IndexStore.open(index_dir)
    tasks = code_tasks(store, root, limit, seed)
    counter = default_counter()
    searcher = HybridSearcher(store, settings)
    seen, _original = _lists_recorder()
    pairs = list(zip(tasks[0::2], tasks[1::2], strict=True))
    misses = []
    causes: Counter[str] = Counter()
    hit_causes: Counter[str] = Counter()
    view_misses: Counter[str] = Counter()
    for typed, untyped in pairs:
        seen.clear()
        ctx = assemble_context(
            store,
            settings,
            untyped.path,
            untyped.text,
            untyped.line,
            untyped.character,
            token_counter=counter,
        )
        rank = next((i for i, c in enumerate(ctx.ranked, 1) if _hit(c, untyped.gold)), None)
        language = ctx.language
        imports = current_imports(searcher.store, settings, untyped.path, untyped.text, language)
        cause, call = classify(untyped, typed.text, untyped.character, imports, "")
        suspect = suspect_gold(call, cause, untyped.gold, library_names(imports))
        if suspect:
            cause = "suspect-gold"
        in_view = receiver_in_view(untyped, call)
        if rank is not None and rank <= 10:
            hit_causes[cause] += 1
            continue
        causes[cause] += 1
        view_misses[cause] += in_view
        g = untyped.gold
        lists = seen[-1] if seen else {}
        in_lists = {
            name: next(i for i, c in enumerate(cands, 1) if _hit(c, untyped.gold))
            for name, cands in lists.items()
            if any(_hit(c, untyped.gold) for c in cands)
        }
        misses.append(
            {
                "path": untyped.path,
                "line": untyped.line + 1,
                "call": call,
                "gold": f"{g.qualname} ({g.kind}) {g.path}:{g.start_line + 1}",
                "rank": rank,
                "candidates": len(ctx.ranked),
                "lists": in_lists,
                "list_sizes": {k: len(v) for k, v in lists.items()},
                "cause": cause,
                "suspect_gold": suspect,
                "head_in_view": in_view,
                "above": [f"{c.symbol or c.path} [{c.reason}]" for c in ctx.ranked[:3]],
            }
        )
    in_any = sum(1 for m in misses if m["lists"])
    where = Counter(k for m in misses for k in m["lists"])
    out = {
        "name": repo["name"],
        "version": repo["version"],
        "tasks": len(pairs),
        "misses": len(misses),
        "causes": dict(causes.most_common()),
        "hits_by_cause": dict(hit_causes.most_common()),
        "misses_head_in_view": dict(view_misses),
        "misses_in_some_list": in_any,
        "misses_by_list": dict(where.most_common()),
        "rank_11_30": sum(1 for m in misses if m["rank"] and m["rank"] <= 30),
        "rank_over_30": sum(1 for m in misses if m["rank"] and m["rank"] > 30),
        "not_ranked": sum(1 for m in misses if m["rank"] is None),
        "samples": misses,
    }
    print(
        f"{repo['name']}: {len(misses)}/{len(pairs)} misses; causes {out['causes']}; "
        f"in a list {in_any} ({out['misses_by_list']}); "
        f"rank 11-30 {out['rank_11_30']}, "
        f">30 {out['rank_over_30']}, absent {out['not_ranked']}",
        flush=True,
    )
    for m in misses[:show]:
        flag = "?" if m["suspect_gold"] else ("v" if m["head_in_view"] else " ")
        print(f"  {flag}{m['path']}:{m['line']} `{m['call']}(` -> {m['gold']} rank {m['rank']} {m['lists']}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repos", default="")
    ap.add_argument("--show", type=int, default=4, help="misses printed per repository")
    args = ap.parse_args()
    repos = load_devset()
    if args.repos:
        repos = [r for r in repos if r["name"] in set(args.repos.split(","))]
    rows = []
    for repo in repos:
        try:
            rows.append(analyse(repo, args.limit, args.seed, args.show))
        except Exception as exc:  # one repository's failure must not hide the others
            print(f"{repo['name']}: FAILED {type(exc).__name__}: {exc}", flush=True)
    total: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    view: Counter[str] = Counter()
    for row in rows:
        total.update(row["causes"])
        hits.update(row["hits_by_cause"])
        view.update(row["misses_head_in_view"])
    print("\ncause                 misses  hits  miss-rate  misses-with-head-in-view")
    for cause in sorted(set(total) | set(hits), key=lambda c: (-total[c], c)):
        n = total[cause]
        print(f"{cause:20} {n:7} {hits[cause]:5}  {n / (n + hits[cause]):9.2f}  {view[cause]:5}")
    print("\ncause                in-a-list  ranked-11-30  not-ranked  lists holding the gold")
    for cause, _n in total.most_common():
        ms = [m for row in rows for m in row["samples"] if m["cause"] == cause]
        held = Counter(k for m in ms for k in m["lists"])
        print(
            f"{cause:20} {sum(1 for m in ms if m['lists']):9} "
            f"{sum(1 for m in ms if m['rank'] and m['rank'] <= 30):13} "
            f"{sum(1 for m in ms if m['rank'] is None):11}  {dict(held.most_common(4))}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"devset-misses-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {
                "limit": args.limit,
                "seed": args.seed,
                "causes": dict(total),
                "hits": dict(hits),
                "repos": rows,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
