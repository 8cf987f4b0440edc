"""`codectx backend ...`: serve a model with vLLM, check a server, benchmark it, make the test model."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from codectx.clikit import add_json, print_json, settings_for, stderr
from codectx.errors import UsageError
from codectx.settings import Settings, cache_dir, user_config_path

Handler = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    backend = sub.add_parser(
        "backend",
        help="serve, check and benchmark the model server (vLLM)",
        description="Start a vLLM server from a named profile, check that a server answers "
        "fill-in-the-middle requests, benchmark it, or generate the tiny test model.",
    )
    bsub = backend.add_subparsers(dest="backend_command", metavar="COMMAND")
    bsub.required = True
    # (name, one-line help, description, its own options, handler); every one also takes --json
    commands: list[tuple[str, str, str | None, Callable[[argparse.ArgumentParser], None], Handler]] = [
        (
            "serve",
            "start vLLM (or N replicas behind vllm-router) from a profile",
            "Build the vLLM command line from a named profile and run it in the foreground "
            "(Ctrl-C stops every process). Profiles: `codectx backend profiles`; add your own in "
            f"{user_profiles_path()}.",
            _serve_arguments,
            _serve,
        ),
        (
            "doctor",
            "check this machine against a serving profile (vLLM, GPUs, memory, FP8, weights, ports)",
            "Run the preflight checks of `codectx backend serve` without starting anything: "
            f"vLLM importable and at the tested version ({_pinned()}), GPUs visible with enough memory "
            "and a compute capability that runs the profile's FP8 weights and KV cache, the model's "
            "weights present (or where they will come from), the ports free. Exits 3 when a check fails.",
            _doctor_arguments,
            _doctor,
        ),
        ("profiles", "list the serving profiles", None, _no_arguments, _profiles),
        (
            "make-test-model",
            "generate the tiny Qwen3-MoE test model and tokenizer",
            "Write a tiny random-weight Qwen3-MoE model (~1 MB) with a byte-level BPE "
            "tokenizer carrying the Qwen FIM and chat special tokens. Deterministic for a seed. "
            "The text it generates is noise; the serving protocol is real.",
            _make_arguments,
            _make_test_model,
        ),
        (
            "check",
            "is the server reachable, serving a model, answering FIM; time to first token",
            "Check the configured model server (backend.url, CODECTX_BACKEND_URL or "
            "--backend-url): reachable, model served, a fill-in-the-middle round trip, time to first token.",
            _server_arguments,
            _check,
        ),
        (
            "bench",
            "benchmark FIM requests: TTFT, inter-token latency, tokens/s, queue, KV cache, prefix hits",
            "Send fill-in-the-middle requests with realistic prompt sizes at each "
            "concurrency level and report TTFT and inter-token latency p50/p95, tokens/s, errors, and, "
            "from the server's /metrics (scraped during each level), the deepest queue "
            "(vllm:num_requests_waiting), the fullest KV cache (vllm:kv_cache_usage_perc) and the "
            "prefix-cache hits and hit rate.",
            _bench_arguments,
            _bench,
        ),
    ]
    for name, help_text, description, add_arguments, handler in commands:
        parser = bsub.add_parser(name, help=help_text, description=description)
        add_arguments(parser)
        add_json(parser)
        parser.set_defaults(func=handler)


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    _plan_arguments(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="run the preflight checks and print the commands, start nothing",
    )
    parser.add_argument("--no-preflight", action="store_true", help="start without the preflight checks")
    parser.add_argument("extra", nargs="*", metavar="VLLM_ARG", help="extra vLLM flags after `--`")


def _doctor_arguments(parser: argparse.ArgumentParser) -> None:
    _plan_arguments(parser)
    parser.add_argument("extra", nargs="*", metavar="VLLM_ARG", help="extra vLLM flags after `--`")


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def _make_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="folder to write (new or empty)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    _server_arguments(parser)
    parser.add_argument("--concurrency", default="1,4,16", help="comma-separated levels (default 1,4,16)")
    parser.add_argument("--requests", type=int, default=32, help="requests per level (default 32)")
    parser.add_argument("--max-tokens", type=int, default=32, help="tokens per completion (default 32)")
    parser.add_argument(
        "--prompt-tokens", type=int, default=1500, help="approximate prompt size in tokens (default 1500)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic prompts")


def _pinned() -> str:
    from codectx.backend.serve import VLLM_VERSION

    return f"vLLM {VLLM_VERSION}"


def _server_arguments(parser: argparse.ArgumentParser) -> None:
    """Which running server `check` and `bench` talk to."""
    parser.add_argument("--backend-url", help="server URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="served model name (default: backend.model or the first one)")


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", help="profile name (default: backend.profile, 'cpu-dev')")
    parser.add_argument("--port", type=int, help="port of the server (or of the router)")
    parser.add_argument(
        "--host",
        help="address to listen on (default: the profile's, 127.0.0.1; 0.0.0.0 for all, which needs "
        "an API key: CODECTX_API_KEY or backend.api_key, handed to vLLM as VLLM_API_KEY)",
    )
    parser.add_argument(
        "--allow-no-api-key",
        action="store_true",
        help="listen beyond loopback (--host) without an API key (a private network, a proxy in front)",
    )
    parser.add_argument("--model", help="model id, folder or s3:// URL (overrides the profile's)")
    parser.add_argument("--replicas", type=int, help="replicas behind the router (cluster profiles)")
    parser.add_argument("--gpus", type=int, help="GPUs for data/tensor parallel profiles")
    parser.add_argument(
        "--python",
        help="interpreter with vLLM (default: backend.vllm_python, $CODECTX_VLLM_PYTHON, else this one)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CHECK",
        help="treat a failing preflight check (vllm, gpus, gpu-memory, fp8, weights, ports...) as a warning",
    )


def user_profiles_path() -> Path:
    return user_config_path().parent / "profiles.toml"


def vllm_python(settings: Settings, flag: str | None) -> str:
    """Where vLLM lives: --python, backend.vllm_python, $CODECTX_VLLM_PYTHON, else this interpreter."""
    return flag or settings.backend.vllm_python or os.environ.get("CODECTX_VLLM_PYTHON") or sys.executable


def _profiles(args: argparse.Namespace) -> int:
    from codectx.backend.serve import load_profiles

    profiles = load_profiles(user_profiles_path())
    if args.json:
        print_json([{**p.__dict__, "args": list(p.args), "env": dict(p.env)} for p in profiles.values()])
        return 0
    for p in profiles.values():
        shape = f"{p.replicas} replicas + router" if p.replicas > 1 else "1 server"
        print(f"{p.name:12} {shape:20} {p.description}  [{p.source}]")
    return 0


def _plan(args: argparse.Namespace, dry_run: bool) -> Any:
    from codectx.backend.serve import (
        build_plan,
        cpu_supports_fp8_kv,
        load_profiles,
        read_cpuinfo,
        router_next_to,
    )

    settings = settings_for(None, args)
    name = args.profile or settings.backend.profile
    profiles = load_profiles(user_profiles_path())
    if name not in profiles:
        raise UsageError(f"unknown profile '{name}' (known: {', '.join(profiles)})")
    profile = profiles[name]
    python = vllm_python(settings, args.python)
    model = args.model
    generated = not model and not profile.model and profile.generate_test_model
    if generated:
        model = str(cache_dir() / "test-model")
        if not dry_run and not (Path(model) / "config.json").exists():
            from codectx.backend.testmodel import make_test_model

            stderr(f"codectx: generating the test model in {model}")
            make_test_model(Path(model))
    plan = build_plan(
        profile,
        python=python,
        router=router_next_to(python),
        model=model,
        port=args.port,
        host=args.host,
        replicas=args.replicas,
        gpus=args.gpus,
        cpu_fp8=cpu_supports_fp8_kv(read_cpuinfo()),
        extra_args=args.extra,
        api_key=serve_api_key(settings),
        allow_no_api_key=args.allow_no_api_key,
    )
    return replace(plan, generated_model=generated)


def serve_api_key(settings: Settings) -> str | None:
    """The key vLLM will require: backend.api_key (CODECTX_API_KEY, what clients send), else a
    VLLM_API_KEY already in the environment (vLLM would read it anyway)."""
    return settings.backend.api_key or os.environ.get("VLLM_API_KEY") or None


def _preflight(plan: Any, ignore: list[str]) -> Any:
    from codectx.backend.machine import probe_machine
    from codectx.backend.preflight import run_checks

    return run_checks(plan, probe_machine(plan), ignore)


def _plan_dict(plan: Any) -> dict[str, Any]:
    return {
        "profile": plan.profile.name,
        "model": plan.model,
        "served_model_name": plan.served_model_name,
        "client_url": plan.client_url,
        "notes": list(plan.notes),
        "processes": [
            # What codectx adds to each process's environment, the API key's value masked.
            {"role": p.role, "argv": list(p.argv), "env": p.shown_env(), "url": p.url}
            for p in plan.processes
        ],
    }


def _doctor(args: argparse.Namespace) -> int:
    from codectx.backend.preflight import format_report

    plan = _plan(args, dry_run=True)
    report = _preflight(plan, args.ignore)
    if args.json:
        print_json({**report.as_dict(), "plan": _plan_dict(plan)})
    else:
        print(format_report(report))
    return 0 if report.ok else 3


def _serve(args: argparse.Namespace) -> int:
    from codectx.backend.preflight import format_report
    from codectx.backend.serve import run_plan

    plan = _plan(args, args.dry_run)
    report = None if args.no_preflight else _preflight(plan, args.ignore)
    ok = report is None or report.ok
    if args.json:
        print_json({**_plan_dict(plan), "preflight": report.as_dict() if report else None})
        if args.dry_run or not ok:
            return 0 if ok else 3
    elif args.dry_run:
        if report is not None:
            print("\n".join(f"# {line}" for line in format_report(report).splitlines()))
        for note in plan.notes:
            print(f"# {note}")
        for p in plan.processes:
            print(f"# {p.role} at {p.url}")
            print(p.shell())
        print(f"# point codectx at it: CODECTX_BACKEND_URL={plan.client_url}")
        return 0 if ok else 3
    elif report is not None and not ok:
        stderr(format_report(report))
        stderr("codectx: not starting vLLM (--ignore CHECK or --no-preflight to start anyway)")
        return 3
    for note in plan.notes:
        stderr(f"codectx: {note}")
    stderr(f"codectx: clients use CODECTX_BACKEND_URL={plan.client_url}")
    return run_plan(plan)


def _make_test_model(args: argparse.Namespace) -> int:
    from codectx.backend.testmodel import make_test_model

    info = make_test_model(Path(args.dir), seed=args.seed)
    if args.json:
        print_json({**info.__dict__, "path": str(info.path)})
    else:
        print(
            f"wrote {info.path}: {info.parameters:,} parameters, vocabulary {info.vocab_size}, "
            f"{info.size_bytes / 1e6:.1f} MB (seed {info.seed})"
        )
        print(f"serve it: codectx backend serve --profile cpu-dev --model {info.path}")
    return 0


def _backend_settings(args: argparse.Namespace) -> Settings:
    extra: dict[str, Any] = {"backend.url": getattr(args, "backend_url", None)}
    if getattr(args, "model", None):
        extra["backend.model"] = args.model
    return settings_for(None, args, extra)


def _check(args: argparse.Namespace) -> int:
    from codectx.backend.bench import format_check, run_check

    report = run_check(_backend_settings(args))
    if args.json:
        print_json(report.as_dict())
    else:
        print(format_check(report))
    return 0 if report.ok else 3


def _bench(args: argparse.Namespace) -> int:
    from codectx.backend.bench import BenchOptions, format_bench, run_bench

    try:
        levels = tuple(int(x) for x in args.concurrency.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--concurrency wants numbers like 1,4,16, not '{args.concurrency}'") from None
    if not levels or min(levels) < 1 or args.requests < 1:
        raise UsageError("--concurrency levels and --requests must be >= 1")
    options = BenchOptions(
        concurrency=levels,
        requests=args.requests,
        max_tokens=args.max_tokens,
        prompt_tokens=args.prompt_tokens,
        seed=args.seed,
    )
    report = run_bench(_backend_settings(args), options)
    if args.json:
        print_json(report.as_dict())
    else:
        print(format_bench(report))
    return 0 if report.ok else 3
