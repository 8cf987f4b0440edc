"""Retrieval quality on the development set (issue 20): `codectx eval` per repository and pooled.

The repositories are pinned in bench/devset.toml (PyPI sdists and npm packages that ship
their TypeScript/JavaScript source), downloaded at bench time into bench/data/ and never
vendored. Each is indexed with the `codectx` CLI as a black box (`codectx index --no-embed`,
then `codectx eval --lexical --json`; with vectors, `codectx index` and `codectx eval --json`),
so the figures are what a user would get from the shell.

    .venv/bin/python bench/bench_devset.py [--limit 100] [--repos a,b] [--vectors none|all|a,b]

Prints a table per repository and pooled (task-weighted: every task of every repository
counts once) plus the macro mean, against the issue's targets, and writes
bench/results/devset-<time>.json (rewritten after each repository, so a cut-short run keeps
what it measured).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DATA, RESULTS, fetch_sdist, machine  # noqa: E402

DEVSET = HERE / "devset.toml"
INDEXES = DATA / "devset-index"
CODECTX = str(Path(sys.executable).parent / "codectx")
HELD_OUT = frozenset({"rich", "httpx", "attrs", "werkzeug", "django", "rxjs"})
OLD_TUNING = frozenset({"requests", "click", "flask"})
# (task kind, metric, target with vectors, target on the lexical path)
TARGETS = (
    ("cross_file_typed", "recall@5", 0.97, 0.97),
    ("cross_file_untyped", "recall@10", 0.70, 0.70),
    ("natural_language", "recall@10", 0.85, 0.70),
)


def load_devset(path: Path = DEVSET) -> list[dict[str, Any]]:
    repos = tomllib.loads(path.read_text(encoding="utf-8"))["repo"]
    for repo in repos:
        if repo["name"].lower() in HELD_OUT:
            raise SystemExit(f"{repo['name']} is held out for evaluation; it cannot be in {path.name}")
        repo["old_tuning"] = repo["name"].lower() in OLD_TUNING
    return repos


def fetch_npm(name: str, version: str) -> Path:
    """The unpacked npm tarball of name@version (`npm pack`), downloaded once."""
    packs = DATA / "npm"
    packs.mkdir(parents=True, exist_ok=True)
    tgz = packs / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    if not tgz.exists():
        subprocess.run(
            ["npm", "pack", "-q", f"{name}@{version}", "--pack-destination", str(packs)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    dest = DATA / "src" / f"npm-{name.replace('/', '-')}-{version}"
    if not dest.exists():
        dest.mkdir(parents=True)
        with tarfile.open(tgz) as tar:
            tar.extractall(dest, filter="data")
    return dest / "package"


def prefetch_sdist(name: str, version: str) -> None:
    """Put name==version's sdist where `fetch_sdist` looks, straight from PyPI's simple index
    (PEP 691 JSON, what pip reads), checked against its sha256. `pip download --no-binary :all:`
    would first build the sdist's build backend from source (minutes for hatchling's tree on two
    cores); pip stays the fallback."""
    import hashlib
    import urllib.request

    sdists = DATA / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    prefix = f"{name}-{version}".lower()
    if any(p.name.lower().replace("_", "-").startswith(prefix) for p in sdists.iterdir()):
        return
    wanted = {f"{name}-{version}.tar.gz".lower(), f"{name.replace('-', '_')}-{version}.tar.gz".lower()}
    request = urllib.request.Request(
        f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            files = json.load(r)["files"]
        sdist = next(f for f in files if f["filename"].lower() in wanted)
        with urllib.request.urlopen(sdist["url"], timeout=120) as r:
            body = r.read()
    except (OSError, StopIteration, KeyError, ValueError) as exc:
        print(f"  PyPI simple API: {exc!r}; falling back to pip download", flush=True)
        return
    if hashlib.sha256(body).hexdigest() != sdist["hashes"]["sha256"]:
        raise RuntimeError(f"{sdist['filename']}: sha256 differs from PyPI's")
    (sdists / sdist["filename"]).write_bytes(body)


def fetch(repo: dict[str, Any]) -> Path:
    if repo["source"] == "npm":
        root = fetch_npm(repo["name"], repo["version"])
    elif repo["source"] == "pypi":
        prefetch_sdist(repo["name"], repo["version"])
        root = Path(fetch_sdist(repo["name"], repo["version"]))
    else:
        raise SystemExit(f"{repo['name']}: unknown source {repo['source']!r}")
    if repo.get("ignore"):
        (root / ".codectxignore").write_text("\n".join(repo["ignore"]) + "\n", encoding="utf-8")
    return root


def _run_json(args: list[str], timeout: float) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    proc = subprocess.run(
        [CODECTX, *args], capture_output=True, text=True, timeout=timeout, env=os.environ | {"NO_COLOR": "1"}
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"codectx {' '.join(args)}: rc {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return json.loads(proc.stdout), elapsed


def measure(
    repo: dict[str, Any], root: Path, limit: int, seed: int, vectors: bool, timeout: float
) -> dict[str, Any]:
    index_dir = str(INDEXES / f"{repo['name']}-{repo['version']}")
    out: dict[str, Any] = {k: repo[k] for k in ("name", "version", "source", "style", "old_tuning")}
    out["root"] = str(root)
    info, secs = _run_json(["index", str(root), "--index-dir", index_dir, "--no-embed", "--json"], timeout)
    out["index_lexical"] = {"seconds": round(secs, 1), "report": info}
    print(f"  indexed (no vectors) in {secs:.1f} s", flush=True)
    common = [
        "eval",
        str(root),
        "--index-dir",
        index_dir,
        "--limit",
        str(limit),
        "--seed",
        str(seed),
        "--json",
    ]
    report, secs = _run_json([*common, "--lexical"], timeout)
    out["lexical"] = report
    out["lexical_seconds"] = round(secs, 1)
    print(f"  eval --lexical in {secs:.1f} s", flush=True)
    if vectors:
        info, secs = _run_json(["index", str(root), "--index-dir", index_dir, "--json"], timeout)
        out["index_vectors"] = {"seconds": round(secs, 1), "report": info}
        print(f"  embedded in {secs:.1f} s", flush=True)
        report, secs = _run_json(common, timeout)
        out["vectors"] = report
        out["vectors_seconds"] = round(secs, 1)
        print(f"  eval (vectors) in {secs:.1f} s", flush=True)
    return out


def _cell(result: dict[str, Any] | None, kind: str, metric: str) -> tuple[float | None, int]:
    if not result:
        return None, 0
    m = result["results"].get(kind, {}).get("codectx", {})
    if not m.get("tasks"):
        return None, 0
    return m[metric], m["tasks"]


def _fmt(value: float | None, tasks: int, target: float) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}{'' if value >= target else '*'} ({tasks})"


def pooled(rows: list[dict[str, Any]], mode: str, kind: str, metric: str) -> dict[str, Any]:
    hits = total = 0.0
    values = []
    for row in rows:
        value, tasks = _cell(row.get(mode), kind, metric)
        if value is None:
            continue
        hits += value * tasks
        total += tasks
        values.append(value)
    if not total:
        return {"tasks": 0}
    return {
        "tasks": int(total),
        "pooled": round(hits / total, 4),
        "macro": round(sum(values) / len(values), 4),
        "worst": round(min(values), 4),
        "repos": len(values),
    }


def report_table(rows: list[dict[str, Any]]) -> str:
    cols = [
        ("typed R@5 lex", "lexical", *TARGETS[0][:2], TARGETS[0][3]),
        ("typed R@5 vec", "vectors", *TARGETS[0][:3]),
        ("untyped R@10 lex", "lexical", *TARGETS[1][:2], TARGETS[1][3]),
        ("untyped R@10 vec", "vectors", *TARGETS[1][:3]),
        ("NL R@10 lex", "lexical", *TARGETS[2][:2], TARGETS[2][3]),
        ("NL R@10 vec", "vectors", *TARGETS[2][:3]),
    ]
    header = ["repository", "chunks"] + [c[0] for c in cols]
    body = []
    for row in rows:
        chunks = (row.get("lexical") or {}).get("chunks", "-")
        name = f"{row['name']}-{row['version']}" + (" (old tuning)" if row.get("old_tuning") else "")
        body.append(
            [name, str(chunks)]
            + [_fmt(*_cell(row.get(mode), kind, m), target) for _, mode, kind, m, target in cols]
        )
    for label, key in (("POOLED", "pooled"), ("macro mean", "macro"), ("worst repo", "worst")):
        line = [label, ""]
        for _, mode, kind, m, target in cols:
            p = pooled(rows, mode, kind, m)
            line.append(_fmt(p[key], p["tasks"], target) if p["tasks"] else "-")
        body.append(line)
    targets = ["target", ""] + [f">= {c[4]:.2f}" for c in cols]
    body.append(targets)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    fmt = lambda r: " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    lines = [fmt(header), "-+-".join("-" * w for w in widths), *map(fmt, body)]
    lines.append("value (tasks); * = below the issue-20 target. pooled = task-weighted over repositories.")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=100, help="tasks per kind per repository (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repos", default="", help="comma-separated subset of devset.toml names")
    ap.add_argument(
        "--vectors", default="all", help="repositories to embed and measure with vectors: all, none or a,b"
    )
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per codectx command")
    args = ap.parse_args()
    repos = load_devset()
    if args.repos:
        wanted = set(args.repos.split(","))
        repos = [r for r in repos if r["name"] in wanted]
    vec = {"all": {r["name"] for r in repos}, "none": set()}.get(args.vectors, set(args.vectors.split(",")))
    started = time.strftime("%Y%m%d-%H%M%S")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out_path = RESULTS / f"devset-{started}.json"
    rows: list[dict[str, Any]] = []
    for repo in repos:
        print(f"{repo['name']}-{repo['version']} ({repo['source']})", flush=True)
        try:
            root = fetch(repo)
            rows.append(measure(repo, root, args.limit, args.seed, repo["name"] in vec, args.timeout))
        except (RuntimeError, subprocess.SubprocessError, OSError) as exc:
            print(f"  FAILED: {exc}", flush=True)
            rows.append({**{k: repo[k] for k in ("name", "version", "source")}, "error": str(exc)})
        summary = {
            kind: {mode: pooled(rows, mode, kind, metric) for mode in ("lexical", "vectors")}
            for kind, metric, *_ in TARGETS
        }
        data = {
            "bench": "devset",
            "limit": args.limit,
            "seed": args.seed,
            "machine": machine(),
            "targets": TARGETS,
            "pooled": summary,
            "repos": rows,
        }
        out_path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    print()
    print(report_table([r for r in rows if "error" not in r]))
    print(f"\nwrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
