"""Backend benchmark: codectx's client overhead on time to first token, and prefix-cache reuse.

Starts the vLLM CPU engine (cpu-dev profile, prefix caching on) with the
generated test model, then, in one run, on real code (the requests sdist,
downloaded from PyPI into bench/data, never vendored):

1. prefix-cache hit rate over 20 consecutive codectx completions in one file
   with the cursor moving down a line each time (fresh engine, so nothing
   was cached before), read from vLLM's /metrics before and after;
2. time to first token, interleaved, of (a) a direct minimal httpx streaming
   call and (b) a codectx completion (WorkspaceSession.completer.complete: FIM prompt, privacy
   gate, audit, client) of the same ~1.5K-token repository-level prompt; the
   difference of the medians is what codectx adds.

Targets: (b) - (a) <= 5 ms; hit rate >= 70%. Prints a table and writes
bench/results/backend.json. Needs $CODECTX_VLLM_PYTHON (`make bench-backend`).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
SDIST = ("requests", "2.32.3")
CURRENT_FILE = "src/requests/sessions.py"
TARGET_OVERHEAD_MS = 5.0
TARGET_HIT_RATE = 0.70

# The audit log and caches of this run go to a temporary folder, never the user's home.
_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-bench-backend-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402
from codectx.backend.bench import HITS, QUERIES, hit_rate, metric  # noqa: E402
from codectx.backend.client import BackendClient  # noqa: E402
from codectx.backend.prompts import Snippet  # noqa: E402
from codectx.backend.serve import build_plan, load_profiles, start_process, stop_process  # noqa: E402
from codectx.backend.testmodel import make_test_model  # noqa: E402

from codectx.app.cli import NoIndexSource  # noqa: E402
from codectx.app.completion import CompletionAsk  # noqa: E402
from codectx.app.session import WorkspaceSession  # noqa: E402
from codectx.settings import load_settings  # noqa: E402


def fetch(name: str, version: str) -> Path:
    """The unpacked sdist of name==version, downloaded from PyPI once."""
    sdists = DATA / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{version}".lower()
    found = [p for p in sdists.glob("*") if p.name.lower().startswith(stem)]
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{name}=={version}",
                "-d",
                str(sdists),
            ],
            check=True,
        )
        found = [p for p in sdists.glob("*") if p.name.lower().startswith(stem)]
    dest = DATA / "src"
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(found[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        if not (dest / top).exists():
            tar.extractall(dest, filter="data")
    return dest / top


def functions(root: Path, exclude: str) -> list[Snippet]:
    """Top-level functions and methods of the package, in a stable (path, line) order."""
    found = []
    for path in sorted((root / "src").rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel == exclude:
            continue
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                body = "".join(lines[node.lineno - 1 : node.end_lineno])
                found.append(Snippet(rel, node.lineno - 1, node.end_lineno - 1, body))
    return sorted(found, key=lambda s: (s.path, s.start_line))


@dataclass(frozen=True)
class Item:
    """A retrieved function as context assembly ranks one (codectx.app.index.RankedPiece)."""

    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str = ""
    reason: str = "retrieved"
    tokens: int = 0
    why: str = ""


@dataclass
class Context:
    """What the retriever hands the session: snippets plus prefix/suffix around the cursor."""

    items: list[Item]
    prefix: str
    suffix: str
    prefix_start_line: int
    suffix_end_line: int
    extra: dict[str, Any] = field(default_factory=dict)


def context_at(text: str, line: int, snippets: list[Snippet], prefix_lines: int = 24) -> Context:
    rows = text.splitlines(keepends=True)
    first = max(0, line - prefix_lines)
    last = min(len(rows), line + 6)
    items = [Item(s.path, s.start_line, s.end_line, s.text) for s in snippets]
    return Context(items, "".join(rows[first:line]), "".join(rows[line:last]), first, last - 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_engine(model: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    python = os.environ.get("CODECTX_VLLM_PYTHON")
    if not python or not Path(python).exists():
        raise SystemExit(
            "bench_backend: set CODECTX_VLLM_PYTHON to the vLLM venv's python (make bench-backend)"
        )
    # A 1.5K-token prompt needs more context than cpu-dev's 1024 (the later flag wins).
    plan = build_plan(
        load_profiles()["cpu-dev"],
        python=python,
        model=str(model),
        port=free_port(),
        extra_args=["--max-model-len", "4096"],
    )
    (spec,) = plan.processes
    proc = start_process(spec, log)
    deadline = time.monotonic() + 900
    with httpx.Client(trust_env=False, timeout=5) as http:
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"vLLM exited while starting:\n{log.read_text()[-4000:]}")
            try:
                if http.get(spec.url + "/v1/models").status_code == 200:
                    return proc, spec.url
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                stop_process(proc)
                raise SystemExit(f"vLLM not ready in 900 s:\n{log.read_text()[-4000:]}")
            time.sleep(1)


async def direct_ttft(http: httpx.AsyncClient, url: str, body: bytes) -> float | None:
    """Seconds to the first text delta of a bare streaming POST of `body` (then hang up); None: no text."""
    started = time.perf_counter()
    async with http.stream(
        "POST", url, content=body, headers={"Content-Type": "application/json"}
    ) as response:
        async for line in response.aiter_lines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                choices = json.loads(line[5:]).get("choices") or []
                if choices and choices[0].get("text"):
                    return time.perf_counter() - started
    return None


async def codectx_ttft(service: WorkspaceSession, path: str, text: str, line: int, ctx: Context) -> float:
    """Seconds from calling the service to its first delta (prompt, gate, audit, send, parse)."""
    first: list[float] = []
    started = time.perf_counter()
    await service.completer.complete(
        path, text, line, 0, context=ctx, on_delta=lambda _d: first.append(time.perf_counter())
    )
    if not first:
        raise RuntimeError("the completion produced no text")
    return first[0] - started


async def measure(base: str, args: argparse.Namespace, src: Path) -> dict[str, Any]:
    text = (src / CURRENT_FILE).read_text(encoding="utf-8")
    settings = load_settings(
        src,
        {
            "backend.url": base + "/v1",
            "backend.max_tokens": 16,
            "backend.temperature": 0.0,  # the same text every time: TTFTs compare like with like
            "backend.first_token_timeout_s": 120.0,
            "backend.total_timeout_s": 300.0,
        },
    )
    # Function-sized snippets, as the retriever returns them (its chunks are capped in size too).
    all_snippets = [f for f in functions(src, CURRENT_FILE) if len(f.text) <= 800]
    async with BackendClient(settings) as client, httpx.AsyncClient(trust_env=False, timeout=300) as http:
        service = WorkspaceSession(settings, index=NoIndexSource(), embedder=lambda: None, client=client)
        await service.warm_up()
        # Add retrieved functions (stable order) until the whole prompt is ~1.5K tokens.
        start_line = 300
        snippets: list[Snippet] = []
        tokens = 0
        for snippet in all_snippets:
            trial = [*snippets, snippet]
            dry = await service.completer.dry_run(
                CompletionAsk(CURRENT_FILE, text, start_line, 0, context_at(text, start_line, trial))
            )
            trial_tokens = len(await client.tokenize(dry.prompt.text))
            if trial_tokens > args.prompt_tokens:
                if trial_tokens - tokens > 400 or not snippets:
                    continue  # a long function: try the next, smaller one
                break
            snippets, tokens = trial, trial_tokens
            if len(snippets) >= 24:
                break
        prompt_tokens = tokens

        # 1. Prefix-cache hit rate: 20 completions, the cursor moving down one line each time.
        before = await client.metrics_text()
        for step in range(args.moving):
            line = start_line + step
            ctx = context_at(text, line, snippets)
            await service.completer.complete(CURRENT_FILE, text, line, 0, context=ctx)
        after = await client.metrics_text()
        rate = hit_rate(before, after)

        # 2. TTFT, direct vs codectx, interleaved on the same prompt (cached after the first).
        # Random weights may stop at once on some prompts (no text, no TTFT): take a line that
        # yields text (temperature 0, so it always does).
        url = base + "/v1/completions"
        for line in range(start_line + args.moving, start_line + args.moving + 40):
            ctx = context_at(text, line, snippets)
            body = (await service.completer.dry_run(CompletionAsk(CURRENT_FILE, text, line, 0, ctx))).body
            if await direct_ttft(http, url, body) is not None:
                break
        else:
            raise SystemExit("bench_backend: no cursor position produced text")
        await codectx_ttft(service, CURRENT_FILE, text, line, ctx)
        direct: list[float] = []
        ours: list[float] = []
        for i in range(args.pairs):
            for name in ("direct", "codectx") if i % 2 == 0 else ("codectx", "direct"):
                if name == "direct":
                    seconds = await direct_ttft(http, url, body)
                    if seconds is None:
                        raise SystemExit("bench_backend: the direct request produced no text")
                    direct.append(seconds)
                else:
                    ours.append(await codectx_ttft(service, CURRENT_FILE, text, line, ctx))
        gate_ms, record_ms = [], []
        decoded = json.loads(body)
        for _ in range(args.pairs):
            t = time.perf_counter()
            prepared = client.gate.prepare(url, decoded, [])
            gate_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            client.gate.record(prepared, False, "bench")  # into this run's temporary audit log
            record_ms.append((time.perf_counter() - t) * 1000)

    med_direct = statistics.median(direct) * 1000
    med_ours = statistics.median(ours) * 1000
    # Each pair ran back to back, so their difference cancels most of the server's (and a busy
    # machine's) variation; the median of those differences is the overhead estimate.
    paired = statistics.median(o - d for o, d in zip(ours, direct, strict=True)) * 1000
    return {
        "model": "codectx-tiny-qwen3-moe (generated, random weights)",
        "code": f"{SDIST[0]}-{SDIST[1]} sdist, current file {CURRENT_FILE}",
        "prompt_tokens": prompt_tokens,
        "retrieved_snippets": len(snippets),
        "moving_cursor": {
            "completions": args.moving,
            "prefix_cache_hit_rate": rate,
            "hits": metric(after, HITS) - metric(before, HITS),
            "queries": metric(after, QUERIES) - metric(before, QUERIES),
            "target": TARGET_HIT_RATE,
            "pass": rate is not None and rate >= TARGET_HIT_RATE,
        },
        "ttft": {
            "pairs": args.pairs,
            "direct_httpx_p50_ms": med_direct,
            "codectx_p50_ms": med_ours,
            "direct_httpx_p95_ms": sorted(direct)[int(0.95 * (len(direct) - 1))] * 1000,
            "codectx_p95_ms": sorted(ours)[int(0.95 * (len(ours) - 1))] * 1000,
            "overhead_p50_ms": med_ours - med_direct,
            "overhead_paired_median_ms": paired,
            "gate_prepare_p50_ms": statistics.median(gate_ms),
            "audit_record_p50_ms": statistics.median(record_ms),
            "target_overhead_ms": TARGET_OVERHEAD_MS,
            "pass": paired <= TARGET_OVERHEAD_MS,
        },
    }


def table(r: dict[str, Any]) -> str:
    t, m = r["ttft"], r["moving_cursor"]
    ok = {True: "PASS", False: "FAIL"}
    return "\n".join(
        [
            f"backend bench: {r['model']}; {r['code']}; prompt {r['prompt_tokens']} tokens "
            f"({r['retrieved_snippets']} retrieved functions)",
            f"{'measure':44} {'value':>10} {'target':>10}",
            f"{'TTFT p50, direct minimal httpx call':44} {t['direct_httpx_p50_ms']:>8.1f}ms",
            f"{'TTFT p50, codectx completion (gate+client)':44} {t['codectx_p50_ms']:>8.1f}ms",
            f"{'  difference of the p50s':44} {t['overhead_p50_ms']:>8.1f}ms",
            f"{'  codectx overhead (median paired difference)':44} {t['overhead_paired_median_ms']:>8.1f}ms "
            f"{'<= ' + str(t['target_overhead_ms']) + 'ms':>10} {ok[t['pass']]}",
            f"{'  of which privacy gate prepare (p50)':44} {t['gate_prepare_p50_ms']:>8.1f}ms",
            f"{'  of which audit record (p50)':44} {t['audit_record_p50_ms']:>8.1f}ms",
            f"{'TTFT p95 direct / codectx':44} {t['direct_httpx_p95_ms']:>5.0f}/{t['codectx_p95_ms']:.0f}ms",
            f"{'prefix-cache hit rate, 20 moving-cursor reqs':44} "
            f"{(m['prefix_cache_hit_rate'] or 0) * 100:>9.1f}% {'>= 70%':>10} {ok[m['pass']]}",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=30, help="interleaved TTFT pairs (default 30)")
    parser.add_argument("--moving", type=int, default=20, help="moving-cursor completions (default 20)")
    parser.add_argument("--prompt-tokens", type=int, default=1500, help="prompt size (default 1500)")
    parser.add_argument(
        "--url",
        help="use a running cpu-dev server started with --max-model-len 4096; a fresh one, "
        "or earlier runs inflate the prefix-cache hit rate",
    )
    args = parser.parse_args()
    src = fetch(*SDIST)
    work = Path(tempfile.mkdtemp(prefix="codectx-bench-engine-"))
    proc = None
    started = time.monotonic()
    if args.url:
        base = args.url.removesuffix("/").removesuffix("/v1")
    else:
        model = make_test_model(work / "model").path
        proc, base = start_engine(model, work / "vllm.log")
        print(f"engine ready in {time.monotonic() - started:.0f} s", file=sys.stderr)
    try:
        result = asyncio.run(measure(base, args, src))
    finally:
        if proc is not None:
            stop_process(proc)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "backend.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    print(f"wrote {out}")
    return 0 if result["ttft"]["pass"] and result["moving_cursor"]["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
