"""Language-server benchmark: `codectx lsp` on a Django-size workspace with a real model server.

Measures, through the real server process over stdio:
- time from `initialize` to the first completion (the index builds in the background meanwhile);
- completion latency p50/p95 as the client sees it, split into context assembly, backend time to
  first token, and codectx's own overhead (client latency minus the model server's own request
  time, read from vLLM's /metrics histogram before and after each request);
- the server's resident memory (peak sampled during the run).

Backend: the real vLLM CPU engine with the generated test model (CODECTX_VLLM_PYTHON, as
`make bench-lsp` sets it); without it, a loopback server with a fixed answer (the table says so).
Workspace: the Django 5.1.4 sdist from PyPI, unpacked under bench/data (never vendored).
Vectors are off by default (embedding Django's ~30k chunks takes many minutes on 2 cores);
`--embed` includes them.

Targets: context assembly p95 <= 50 ms, own overhead p95 <= 60 ms, RSS <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-bench-lsp-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The embedding model's ONNX export lives in the cache, as on a user's machine: exported once
# (with torch loaded) and reused, so a measured server never pays for or holds the export.
BENCH_CACHE = HERE / "data" / "cache"
os.environ["XDG_CACHE_HOME"] = str(BENCH_CACHE)

import httpx  # noqa: E402
import psutil  # noqa: E402
from common import DATA, fetch_sdist, machine, table, write_results  # noqa: E402
from lsprotocol import types  # noqa: E402

from tests.support.lsp_helpers import FixedBackend, lsp_session  # noqa: E402

SDIST = ("django", "5.1.4")
FILES = (
    "django/db/models/query.py",
    "django/http/request.py",
    "django/utils/text.py",
    "django/forms/forms.py",
    "django/contrib/auth/models.py",
)
TARGET_CONTEXT_P95 = 50.0
TARGET_OVERHEAD_P95 = 60.0
TARGET_RSS_MB = 1536.0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def positions(root: Path, per_file: int) -> list[tuple[Path, int, int]]:
    """Cursor positions at the end of statement lines inside function bodies, spread over each file."""
    out: list[tuple[Path, int, int]] = []
    for rel in FILES:
        path = root / rel
        lines = path.read_text("utf-8").split("\n")
        candidates = [
            i
            for i, ln in enumerate(lines)
            if re.match(r"^ {8}\w", ln) and not ln.rstrip().endswith((",", "(", "\\"))
        ]
        step = max(1, len(candidates) // per_file)
        for i in candidates[::step][:per_file]:
            out.append((path, i, len(lines[i].rstrip())))
    return out


class VllmEngine:
    def __init__(self, work: Path) -> None:
        from codectx.backend.serve import build_plan, load_profiles, start_process
        from codectx.backend.testmodel import make_test_model

        python = os.environ["CODECTX_VLLM_PYTHON"]
        model = make_test_model(work / "model").path
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        plan = build_plan(
            load_profiles()["cpu-dev"],
            python=python,
            model=str(model),
            port=port,
            extra_args=["--max-model-len", "4096"],
        )
        (self.spec,) = plan.processes
        self.log = work / "vllm.log"
        self.proc = start_process(self.spec, self.log)
        self.url = self.spec.url + "/v1"
        deadline = time.monotonic() + 900
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"vLLM exited while starting:\n{self.log.read_text()[-4000:]}")
            try:
                if httpx.get(self.spec.url + "/v1/models", trust_env=False, timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit("vLLM not ready in 900 s")
            time.sleep(1)

    def e2e_seconds(self) -> tuple[float, float]:
        """(sum, count) of vllm:e2e_request_latency_seconds."""
        text = httpx.get(self.spec.url + "/metrics", trust_env=False, timeout=10).text
        total = count = 0.0
        for line in text.splitlines():
            if line.startswith("vllm:e2e_request_latency_seconds_sum"):
                total += float(line.rsplit(" ", 1)[1])
            elif line.startswith("vllm:e2e_request_latency_seconds_count"):
                count += float(line.rsplit(" ", 1)[1])
        return total, count

    def stop(self) -> None:
        from codectx.backend.serve import stop_process

        stop_process(self.proc)


def prepare_placeholder_index(root: Path, index_dir: Path) -> None:
    """The full-text index plus one random unit vector per chunk, before the server starts: the
    server then serves dense search at full cost without embedding Django (tens of minutes here)."""
    from bench_retriever import placeholder_vectors
    from codectx.indexer.embedding.embedder import Embedder
    from codectx.indexer.pipeline import index_workspace
    from codectx.indexer.storage.store import IndexStore

    from codectx.settings import load_settings

    settings = load_settings(root, {"index.index_dir": str(index_dir), "index.embed": False})
    index_workspace(root, settings, embed=False)
    embedder = Embedder.from_settings(settings)
    placeholder_vectors(
        IndexStore.open(index_dir), embedder.model_id, int(embedder.embed_query("x").shape[0])
    )


async def run(args: argparse.Namespace) -> dict[str, Any]:
    root = fetch_sdist(*SDIST)
    work = Path(tempfile.mkdtemp(prefix="codectx-bench-lsp-work-"))
    kind = "placeholder" if args.placeholder_vectors else ("embed" if args.embed else "lexical")
    index_dir = DATA / "lsp-index" / kind
    if args.cold and index_dir.exists():
        shutil.rmtree(index_dir)
    if args.placeholder_vectors:
        prepare_placeholder_index(root, index_dir)
    elif args.embed:
        from codectx.indexer.embedding.embedder import Embedder

        from codectx.settings import load_settings

        Embedder.from_settings(load_settings(root, {})).embed_query("warm the export cache")
    engine: VllmEngine | None = None
    fixed: FixedBackend | None = None
    if os.environ.get("CODECTX_VLLM_PYTHON") and not args.fixed:
        print("starting the vLLM CPU engine (test model)...", flush=True)
        engine = VllmEngine(work)
        url, backend_name = engine.url, "vLLM CPU engine, generated test model"
    else:
        fixed = FixedBackend().start()
        url, backend_name = fixed.url, "loopback fixed-answer server (no CODECTX_VLLM_PYTHON)"
    opts = {
        "codectx": {
            "backend": {"url": url, "max_tokens": args.max_tokens},
            "index": {"index_dir": str(index_dir), "embed": bool(args.embed or args.placeholder_vectors)},
            "lsp": {"debounce_ms": 0, "request_budget_ms": 30000},
        }
    }
    cursors = positions(root, args.per_file)
    result: dict[str, Any] = {
        "backend": backend_name,
        "workspace": f"{SDIST[0]}=={SDIST[1]}",
        "embed": args.embed,
        "vectors": "placeholder (random unit vectors, same scan cost)"
        if args.placeholder_vectors
        else ("real" if args.embed else "none"),
    }
    rss_peak = 0
    try:
        started = time.perf_counter()
        server_env = {"XDG_CACHE_HOME": str(BENCH_CACHE)}
        async with lsp_session(work, root, opts, env=server_env, wait_warm=False) as lsp:
            proc = psutil.Process(lsp._server.pid)

            def sample() -> None:
                nonlocal rss_peak
                rss_peak = max(rss_peak, proc.memory_info().rss)

            first_path, first_line, first_col = cursors[0]
            uri = first_path.as_uri()
            lsp.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri, language_id="python", version=1, text=first_path.read_text("utf-8")
                    )
                )
            )
            sent = 0  # completion requests so far: the server names them completion-1, -2, ...

            async def last_status() -> dict[str, Any]:
                shown: dict[str, Any] = await lsp.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="codectx.showContext", arguments=[{"requestId": f"completion-{sent}"}]
                    )
                )
                return shown

            first_ms = None
            while first_ms is None:
                reply = await lsp.text_document_completion_async(
                    types.CompletionParams(
                        text_document=types.TextDocumentIdentifier(uri=uri),
                        position=types.Position(line=first_line, character=first_col),
                    )
                )
                sent += 1
                shown = await last_status()
                if shown["status"] in ("ok", "empty"):
                    first_ms = (time.perf_counter() - started) * 1000
                    result["first_completion_items"] = len(reply.items)
                else:
                    await asyncio.sleep(0.2)
                sample()
            print(
                f"first completion {first_ms:.0f} ms after initialize; waiting for the index...", flush=True
            )
            while not any(
                isinstance(v, types.WorkDoneProgressEnd) for vs in lsp.progress_reports.values() for v in vs
            ):
                sample()
                await asyncio.sleep(0.5)
            index_ms = (time.perf_counter() - started) * 1000
            status = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.status")
            )
            opened: set[str] = {uri}
            context_ms: list[float] = []
            ttft_ms: list[float] = []
            total_ms: list[float] = []
            overhead_ms: list[float] = []
            errors = 0
            error_messages: set[str] = set()
            for round_ in range(args.rounds):
                for path, line, col in cursors:
                    doc = path.as_uri()
                    if doc not in opened:
                        opened.add(doc)
                        lsp.text_document_did_open(
                            types.DidOpenTextDocumentParams(
                                text_document=types.TextDocumentItem(
                                    uri=doc, language_id="python", version=1, text=path.read_text("utf-8")
                                )
                            )
                        )
                    before = engine.e2e_seconds() if engine else (0.0, 0.0)
                    t0 = time.perf_counter()
                    await lsp.text_document_completion_async(
                        types.CompletionParams(
                            text_document=types.TextDocumentIdentifier(uri=doc),
                            position=types.Position(line=line, character=col),
                        )
                    )
                    client_ms = (time.perf_counter() - t0) * 1000
                    after = engine.e2e_seconds() if engine else (0.0, 0.0)
                    sent += 1
                    shown = await last_status()
                    sample()
                    if shown["status"] not in ("ok", "empty"):
                        errors += 1
                        error_messages.add(str(shown.get("error", ""))[:200])
                        continue
                    if round_ == 0 and args.rounds > 1:
                        continue  # the first round warms file caches; measure the rest
                    timings = shown["timings"]
                    context_ms.append(float(timings.get("context_ms", 0.0)))
                    ttft_ms.append(float(timings.get("ttft_ms", 0.0)))
                    total_ms.append(client_ms)
                    backend_ms = (after[0] - before[0]) * 1000 if after[1] > before[1] else 0.0
                    overhead_ms.append(max(0.0, client_ms - backend_ms))
            sample()
        result.update(
            {
                "initialize_to_first_completion_ms": round(first_ms, 1),
                "initialize_to_index_done_ms": round(index_ms, 1),
                "index": status["folders"][0],
                "requests": len(total_ms),
                "errors": errors,
                "error_messages": sorted(error_messages),
                "context_ms": {"p50": pct(context_ms, 0.5), "p95": pct(context_ms, 0.95)},
                "ttft_ms": {"p50": pct(ttft_ms, 0.5), "p95": pct(ttft_ms, 0.95)},
                "total_ms": {"p50": pct(total_ms, 0.5), "p95": pct(total_ms, 0.95)},
                "overhead_ms": {"p50": pct(overhead_ms, 0.5), "p95": pct(overhead_ms, 0.95)},
                "overhead_mean_ms": statistics.fmean(overhead_ms) if overhead_ms else None,
                "server_rss_peak_mb": round(rss_peak / 2**20, 1),
            }
        )
    finally:
        if engine:
            engine.stop()
        if fixed:
            fixed.stop()
        shutil.rmtree(work, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-file", type=int, default=8, help="cursor positions per file (5 files)")
    parser.add_argument("--rounds", type=int, default=2, help="passes over the positions (first one warms)")
    parser.add_argument("--max-tokens", type=int, default=16, help="completion length")
    parser.add_argument("--embed", action="store_true", help="also compute vectors (slow on 2 cores)")
    parser.add_argument(
        "--placeholder-vectors",
        action="store_true",
        help="random vectors for every chunk (dense search at full cost, no embedding time)",
    )
    parser.add_argument("--cold", action="store_true", help="delete the benchmark's index first")
    parser.add_argument(
        "--fixed", action="store_true", help="use the fixed-answer server even if vLLM is set"
    )
    args = parser.parse_args()
    from codectx import tuning

    tuning.light_lancedb_import()  # as the `codectx` command does (codectx/tuning.py)
    result = asyncio.run(run(args))
    result["machine"] = machine()
    result["command"] = " ".join([sys.executable, *sys.argv])
    rows = [
        ("backend", result["backend"], ""),
        ("workspace", f"{result['workspace']} ({result['index'].get('files')} files indexed)", ""),
        ("vectors", result["vectors"], ""),
        ("initialize -> first completion", f"{result['initialize_to_first_completion_ms']:.0f} ms", ""),
        ("initialize -> index done", f"{result['initialize_to_index_done_ms'] / 1000:.1f} s", ""),
        ("completions measured (errors)", f"{result['requests']} ({result['errors']})", ""),
        (
            "context assembly p50 / p95",
            "{p50:.1f} / {p95:.1f} ms".format(**result["context_ms"]),
            f"p95 <= {TARGET_CONTEXT_P95:.0f} ms",
        ),
        ("backend TTFT p50 / p95", "{p50:.1f} / {p95:.1f} ms".format(**result["ttft_ms"]), ""),
        ("total (client) p50 / p95", "{p50:.1f} / {p95:.1f} ms".format(**result["total_ms"]), ""),
        (
            "codectx overhead p50 / p95",
            "{p50:.1f} / {p95:.1f} ms".format(**result["overhead_ms"]),
            f"p95 <= {TARGET_OVERHEAD_P95:.0f} ms",
        ),
        ("server RSS peak", f"{result['server_rss_peak_mb']:.0f} MiB", f"<= {TARGET_RSS_MB:.0f} MiB"),
    ]
    print(table(rows))
    print(f"written: {write_results('bench_lsp', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
