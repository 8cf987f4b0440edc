"""Burst benchmark: N simulated developers typing against two vLLM CPU replicas behind vllm-router.

Starts the `cpu-cluster` plan (two engines of the generated test model, the real
vllm-router with its cache-aware policy) on free loopback ports, then for each
load level plays N developers' keystroke traffic through codectx's client, as the
editors send it (codectx.backend.burst: debounce, superseding, the request budget,
a shed retried once before any token). Reports per level: completions served,
superseded, debounced, timed out, shed (429/503 still after the client's retries)
and the server's own shed count, failures (must be 0), TTFT p50/p95, the deepest
queue seen, and the knee: the first level where TTFT p95 doubles or requests are
shed or time out.

Each replica runs a scaled-down version of the h200 profile's admission limits:
--max-num-seqs 4 (128 on an H200) and --max-num-queued-reqs 8 (192): past 4 running
and 4 waiting a replica sheds instead of queueing. Prints a table and writes
bench/results/burst.json. Needs $CODECTX_VLLM_PYTHON (`make bench-burst`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# The audit log and caches of this run go to a temporary folder, never the user's home.
_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-bench-burst-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402
from codectx.backend.burst import BurstOptions, format_levels, knee, run_level  # noqa: E402
from codectx.backend.serve import (  # noqa: E402
    ProcessSpec,
    build_plan,
    load_profiles,
    router_next_to,
    start_process,
    stop_process,
)
from codectx.backend.testmodel import make_test_model  # noqa: E402

from codectx.settings import load_settings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: object, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:  # type: ignore[attr-defined]
            raise SystemExit(f"{url} exited while starting:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + "/v1/models", timeout=5, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise SystemExit(f"{url} not ready within {timeout_s:.0f}s:\n{log.read_text(errors='replace')[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="1,2,4,8,16", help="developers per level (default 1,2,4,8,16)")
    parser.add_argument("--keystrokes", type=int, default=24, help="keystrokes per developer (default 24)")
    parser.add_argument(
        "--max-num-seqs", type=int, default=4, help="running requests per replica (default 4)"
    )
    parser.add_argument(
        "--max-queued", type=int, default=8, help="--max-num-queued-reqs per replica (default 8)"
    )
    parser.add_argument("--startup-timeout", type=float, default=1200.0)
    args = parser.parse_args()
    python = os.environ.get("CODECTX_VLLM_PYTHON")
    if not python:
        print(
            "set CODECTX_VLLM_PYTHON to the vLLM environment's python (make bench-burst does)",
            file=sys.stderr,
        )
        return 2
    levels = [int(x) for x in args.levels.split(",")]
    model = make_test_model(_SANDBOX / "model").path
    limits = ["--max-num-seqs", str(args.max_num_seqs), "--max-num-queued-reqs", str(args.max_queued)]
    plan = build_plan(
        load_profiles()["cpu-cluster"],
        python=python,
        router=router_next_to(python),
        model=str(model),
        port=free_port(),
        extra_args=limits,
        replica_ports=[free_port(), free_port()],
    )
    logs = _SANDBOX / "logs"
    logs.mkdir()
    procs = []
    try:
        replicas = [p for p in plan.processes if p.role == "replica"]
        (router,) = [p for p in plan.processes if p.role == "router"]
        for spec in replicas:
            procs.append((spec, start_process(spec, logs / f"{spec.role}-{spec.url[-5:]}.log")))
        started = time.monotonic()
        for spec, proc in procs:
            wait_ready(spec.url, proc, args.startup_timeout, logs / f"{spec.role}-{spec.url[-5:]}.log")
        print(f"replicas ready in {time.monotonic() - started:.0f}s", file=sys.stderr)
        router = ProcessSpec(
            "router", (*router.argv, "--prometheus-port", str(free_port())), router.env, router.url
        )
        procs.append((router, start_process(router, logs / "router.log")))
        wait_ready(router.url, procs[-1][1], 120, logs / "router.log")
        settings = load_settings(
            None,
            {
                "backend.url": plan.client_url,
                "backend.first_token_timeout_s": 30.0,
                "backend.total_timeout_s": 60.0,
                "backend.breaker_interval_s": 0.0,  # measure the servers, not the client's breaker
            },
        )
        reports = []
        for n in levels:
            opts = BurstOptions(developers=n, keystrokes=args.keystrokes)
            report = asyncio.run(run_level(settings, opts, [r.url + "/v1" for r in replicas]))
            reports.append(report)
            print(format_levels([report]).splitlines()[-1], file=sys.stderr)
    finally:
        for _spec, proc in reversed(procs):
            stop_process(proc)
    print(
        f"{len(replicas)} vLLM CPU replicas (tiny Qwen3-MoE, --max-num-seqs {args.max_num_seqs}, "
        f"--max-num-queued-reqs {args.max_queued}) behind vllm-router --policy cache_aware; "
        f"{args.keystrokes} keystrokes per developer"
    )
    print(format_levels(reports))
    bent = knee(reports)
    print(f"knee: {bent.developers} developers" if bent else "knee: not reached at these levels")
    failed = sum(r.outcomes["failed"] for r in reports)
    print(f"failed requests (not cancelled by the client): {failed}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "burst.json"
    out.write_text(
        json.dumps(
            {
                # Load average at the end: on a shared machine it says how noisy the TTFTs are.
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load": os.getloadavg()},
                "replicas": len(replicas),
                "limits": limits,
                "keystrokes": args.keystrokes,
                "levels": [r.as_dict() for r in reports],
                "knee_developers": bent.developers if bent else None,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
