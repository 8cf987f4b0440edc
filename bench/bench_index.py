"""Indexing benchmark on the Django 5.1.4 sdist: cold index by stage, re-runs, embedding throughput.

Measures, in one process: the cold lexical + symbol index (discovery, parse+chunk, commit), files/s
and chunks/s, peak RSS; a no-op re-run; a one-file edit re-run (with its embedding, the embedder
already loaded as in the language server), and the same re-runs as `codectx index` subprocesses;
then embedding throughput of codectx's embedder against plain sentence-transformers on the same
sample of chunks, side by side. Prints a table and writes JSON to bench/results/.

The `codectx index` processes run as on an installed codectx, whose bytecode pip compiled at
install time: with a bytecode cache (PYTHONPYCACHEPREFIX under bench/data, so the checkout stays
clean) warmed by one run. Where the environment sets PYTHONDONTWRITEBYTECODE (this checkout's
does), every process would compile each codectx module from source first; that figure is
measured too (`*_nopyc_*`), alternating with the other, and shown beside it.

    python bench/bench_index.py [--sample 2000] [--full-embed] [--cli-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, fetch_sdist, machine, peak_rss_mb, table, write_results  # noqa: I001

from codectx.indexer.embedding.embedder import Embedder, embedding_text
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.stages import embed_pending
from codectx.indexer.storage.store import IndexStore
from codectx.settings import cache_dir as default_cache_dir
from codectx.settings import load_settings

TARGETS = {"lexical_s": 60.0, "noop_s": 3.0, "edit_s": 2.0, "embed_speedup": 1.3}


def installed_env() -> dict[str, str]:
    """As installed: bytecode compiled once, kept outside the checkout."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(DATA / "pycache")}


def raw_env() -> dict[str, str]:
    """As this environment runs a checkout: with PYTHONDONTWRITEBYTECODE, compiled every start."""
    return dict(os.environ)


def cli_time(root: Path, *args: str, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "codectx", "index", str(root), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=installed_env() if env is None else env,
    )
    return time.perf_counter() - start


def cli_runs(work: Path, results: dict[str, object]) -> None:
    """`codectx index --no-embed` processes: no-op and one-file edit, median of three each."""
    target = work / "django" / "utils" / "text.py"
    # Warm the bytecode cache with one edit run (a no-op run never loads the indexer proper).
    target.write_text(target.read_text() + "\n\ndef bench_edit_warm(value):\n    return value\n")
    cli_time(work, "--no-embed")
    noop_cli = [cli_time(work, "--no-embed") for _ in range(3)]
    results["noop_cli_runs_s"] = noop_cli
    results["noop_cli_s"] = statistics.median(noop_cli)
    # A fresh `codectx index` process per edit, as a user runs it; the median of three, each
    # alternating with the same edit run without bytecode cache (see the module docstring).
    cli_edits: list[float] = []
    raw_edits: list[float] = []
    for n in range(3):
        for runs, env in ((cli_edits, installed_env()), (raw_edits, raw_env())):
            tag = len(raw_edits) + len(cli_edits)
            target.write_text(
                target.read_text() + f"\n\ndef bench_edit_cli{tag}(value):\n    return value * {n}\n"
            )
            runs.append(cli_time(work, "--no-embed", env=env))
    results["edit_cli_no_embed_runs_s"] = cli_edits
    results["edit_cli_no_embed_s"] = statistics.median(cli_edits)
    results["edit_cli_no_embed_nopyc_runs_s"] = raw_edits
    results["edit_cli_no_embed_nopyc_s"] = statistics.median(raw_edits)
    show("edit (CLI)", {"installed": cli_edits, "no bytecode cache": raw_edits})


def show(name: str, data: object) -> None:
    """Each measurement as soon as it is taken (a long run still leaves numbers behind)."""
    print(f"{name}: {data}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=2000, help="chunks for the embedding comparison")
    parser.add_argument("--rounds", type=int, default=3, help="alternating embedding rounds")
    parser.add_argument("--full-embed", action="store_true", help="also embed the whole sdist (slow)")
    parser.add_argument(
        "--cli-only",
        action="store_true",
        help="cold lexical index, then only the `codectx index` process runs (no embedding)",
    )
    args = parser.parse_args()
    from codectx import tuning

    tuning.light_lancedb_import()  # as the `codectx` command does (codectx/tuning.py)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    src = fetch_sdist("django", "5.1.4")
    work = DATA / "work" / "django"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(src, work, symlinks=True)
    settings = load_settings(work, environ={})
    results: dict[str, object] = {"machine": machine(), "sdist": "django==5.1.4"}

    cold = index_workspace(work, settings, embed=False)
    lexical_s = cold.timings["discover"] + cold.timings["lexical"]
    results["cold"] = {
        "files": cold.files,
        "chunks": cold.chunks,
        "timings_s": cold.timings,
        "skipped": cold.skipped,
        "files_per_s": cold.files / lexical_s,
        "chunks_per_s": cold.chunks / lexical_s,
        "peak_rss_mb": peak_rss_mb(),
        "errors": len(cold.errors),
    }

    noop = index_workspace(work, settings, embed=False)
    results["noop_s"] = noop.timings["total"]
    show("cold", results["cold"])
    if args.cli_only:
        cli_runs(work, results)
        results["load_avg_at_end"] = os.getloadavg()
        print(
            table(
                [
                    ("lexical+symbol stage", f"{lexical_s:.1f} s", f"< {TARGETS['lexical_s']:.0f} s"),
                    ("no-op re-run (library)", f"{results['noop_s']:.2f} s", f"< {TARGETS['noop_s']:.0f} s"),
                    *_cli_rows(results),
                ]
            )
        )
        print(f"written {write_results('index', results)}")
        return 0

    show("noop", {"library_s": results["noop_s"]})
    embedder = Embedder(backend="onnx-int8", cache_dir=default_cache_dir())
    embedder.embed_query("warm up")  # prepare + load once, like the language server
    target = work / "django" / "utils" / "text.py"
    store = IndexStore.open(work / ".codectx")
    before = {c.content_hash for c in store.chunks_for_file("django/utils/text.py")}
    target.write_text(target.read_text() + "\n\ndef bench_edit(value):\n    return value[::-1]\n")
    # The edit as a run with no other vectors pending sees it (the cold run skipped embedding):
    # lexical update, then only the chunks whose content is new.
    t = time.perf_counter()
    edit = index_workspace(work, settings, embed=False)
    after = {c.content_hash for c in store.chunks_for_file("django/utils/text.py")}
    embed_pending(store, embedder, edit, only=after - before)
    edit_s = time.perf_counter() - t
    edit.timings["total"] = edit_s
    results["edit"] = {"total_s": edit_s, "updated": edit.updated, "vectors_embedded": edit.vectors_embedded}
    show("edit", results["edit"])
    cli_runs(work, results)

    chunks = list(store.all_chunks())
    chunks.sort(key=lambda c: (c.path, c.start_line))
    step = max(1, len(chunks) // args.sample)
    sample = chunks[::step][: args.sample]
    texts = [embedding_text(c) for c in sample]
    from sentence_transformers import SentenceTransformer

    plain = SentenceTransformer(str(embedder.model_path), device="cpu")
    plain.encode(texts[:8])
    # Side by side: alternate the two on the same chunks, so a load change on this shared
    # 2-core machine hits both; the speedup is the median of the paired rounds.
    pairs: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        t = time.perf_counter()
        ref = plain.encode(texts, batch_size=32, normalize_embeddings=True)
        plain_s = time.perf_counter() - t
        t = time.perf_counter()
        ours = embedder.embed_texts(texts)
        pairs.append((plain_s, time.perf_counter() - t))
        show("embed round", {"plain_s": pairs[-1][0], "codectx_s": pairs[-1][1]})
    plain_s = statistics.median(p for p, _ in pairs)
    ours_s = statistics.median(o for _, o in pairs)
    cos = (np.asarray(ref) * ours).sum(axis=1)
    results["embed"] = {
        "chunks": len(texts),
        "backend": embedder.backend,
        "plain_st_per_s": len(texts) / plain_s,
        "codectx_per_s": len(texts) / ours_s,
        "speedup": statistics.median(p / o for p, o in pairs),
        "speedup_per_round": [p / o for p, o in pairs],
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
    }
    show("embed", results["embed"])
    if args.full_embed:
        full = index_workspace(work, settings, embedder=embedder)
        results["full_embed"] = {"s": full.timings.get("embed"), "vectors": full.vectors_embedded}
    results["peak_rss_mb"] = peak_rss_mb()
    results["load_avg_at_end"] = os.getloadavg()

    emb = results["embed"]
    assert isinstance(emb, dict)
    rows = [
        ("files / chunks", f"{cold.files} / {cold.chunks}", ""),
        ("discover", f"{cold.timings['discover']:.1f} s", ""),
        ("parse + chunk", f"{cold.timings['parse']:.1f} s", ""),
        ("lexical commit (+FTS)", f"{cold.timings['commit']:.1f} s", ""),
        ("lexical+symbol stage", f"{lexical_s:.1f} s", f"< {TARGETS['lexical_s']:.0f} s"),
        ("files/s, chunks/s", f"{cold.files / lexical_s:.0f}, {cold.chunks / lexical_s:.0f}", ""),
        ("no-op re-run (library)", f"{results['noop_s']:.2f} s", f"< {TARGETS['noop_s']:.0f} s"),
        *_cli_rows(results)[:1],
        ("one-file edit incl. embedding", f"{edit.timings['total']:.2f} s", f"< {TARGETS['edit_s']:.0f} s"),
        *_cli_rows(results)[1:],
        ("embed plain sentence-transformers", f"{emb['plain_st_per_s']:.1f} chunks/s", ""),
        (f"embed codectx ({emb['backend']})", f"{emb['codectx_per_s']:.1f} chunks/s", ""),
        (
            "embed speedup",
            f"{emb['speedup']:.2f}x (cos min {emb['cosine_min']:.3f})",
            f">= {TARGETS['embed_speedup']}x",
        ),
        ("peak RSS", f"{results['peak_rss_mb']:.0f} MB", ""),
    ]
    print(table(rows))
    print(f"written {write_results('index', results)}")
    return 0


def _cli_rows(results: dict[str, object]) -> list[tuple[str, str, str]]:
    return [
        (
            "no-op re-run (CLI process, median of 3)",
            f"{results['noop_cli_s']:.2f} s",
            f"< {TARGETS['noop_s']:.0f} s",
        ),
        (
            "one-file edit (CLI process, --no-embed, median of 3)",
            f"{results['edit_cli_no_embed_s']:.2f} s",
            f"< {TARGETS['edit_s']:.0f} s",
        ),
        (
            "  the same, sources compiled every run (no bytecode cache)",
            f"{results['edit_cli_no_embed_nopyc_s']:.2f} s",
            "",
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
