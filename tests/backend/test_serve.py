"""Serving profiles and the vLLM / vllm-router commands built from them (no engine started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codectx.backend.serve import (
    ServeError,
    build_plan,
    cpu_supports_fp8_kv,
    load_profiles,
)

from codectx.cli import main
from tests.support.paths import REPO_ROOT

PY = "/opt/vllm/bin/python"


def flag(argv: tuple[str, ...], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_h200_profile_has_the_issue_flags() -> None:
    plan = build_plan(load_profiles()["h200"], python=PY)
    (server,) = plan.processes
    argv = server.argv
    # GPU profiles run `vllm serve` from the vLLM environment, as vLLM documents.
    assert argv[:3] == ("/opt/vllm/bin/vllm", "serve", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")
    assert flag(argv, "--kv-cache-dtype") == "fp8"
    assert "--enable-prefix-caching" in argv
    assert flag(argv, "--max-model-len") == "65536"
    assert flag(argv, "--gpu-memory-utilization") == "0.90"
    assert flag(argv, "--max-num-seqs") == "128"
    assert plan.client_url == "http://127.0.0.1:8000/v1"


def test_multi_gpu_fills_in_the_gpu_count() -> None:
    profiles = load_profiles()
    (server,) = build_plan(profiles["multi-gpu"], python=PY, gpus=2).processes
    assert flag(server.argv, "--data-parallel-size") == "2"
    assert "--enable-expert-parallel" not in server.argv
    (big,) = build_plan(profiles["moe-large"], python=PY).processes
    assert flag(big.argv, "--tensor-parallel-size") == "8"
    assert "--enable-expert-parallel" in big.argv


@pytest.mark.parametrize("fp8", [True, False])
def test_cpu_dev_kv_cache_follows_the_cpu(fp8: bool) -> None:
    plan = build_plan(load_profiles()["cpu-dev"], python=PY, model="/m", port=9123, cpu_fp8=fp8)
    (server,) = plan.processes
    # The CPU wheel's `vllm` command fails (it looks up metadata named "vllm"): module form.
    assert server.argv[:3] == (PY, "-m", "vllm.entrypoints.openai.api_server")
    assert flag(server.argv, "--model") == "/m"
    assert flag(server.argv, "--port") == "9123"
    assert flag(server.argv, "--host") == "127.0.0.1"
    assert flag(server.argv, "--max-model-len") == "1024"
    assert flag(server.argv, "--dtype") == "bfloat16"
    assert server.env["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert server.env["HF_HUB_OFFLINE"] == "1"
    if fp8:
        assert flag(server.argv, "--kv-cache-dtype") == "fp8"
    else:
        assert "--kv-cache-dtype" not in server.argv
        assert any("AVX-512" in note for note in plan.notes)


def test_cpu_flags_detection() -> None:
    assert cpu_supports_fp8_kv("processor: 0\nflags\t\t: fpu sse avx2 fma avx512f avx512bw\n")
    assert cpu_supports_fp8_kv("flags : fpu avx2 amx_tile amx_bf16\n")
    assert not cpu_supports_fp8_kv("flags : fpu sse avx avx2 fma\n")
    assert not cpu_supports_fp8_kv("")


def test_cluster_plan_has_replicas_then_a_cache_aware_router() -> None:
    plan = build_plan(load_profiles()["cluster"], python=PY, replicas=3, router="/bin/vllm-router")
    replicas = [p for p in plan.processes if p.role == "replica"]
    (router,) = [p for p in plan.processes if p.role == "router"]
    assert len(replicas) == 3
    assert plan.processes[-1] is router
    assert [r.env["CUDA_VISIBLE_DEVICES"] for r in replicas] == ["0", "1", "2"]
    assert len({flag(r.argv, "--port") for r in replicas}) == 3
    workers = router.argv[router.argv.index("--worker-urls") + 1 : router.argv.index("--policy")]
    assert list(workers) == [r.url for r in replicas]
    assert flag(router.argv, "--policy") == "cache_aware"
    assert router.argv[0] == "/bin/vllm-router"
    assert plan.client_url == router.url + "/v1"
    # Every replica gets the h200 serving flags.
    assert all(flag(r.argv, "--kv-cache-dtype") == "fp8" for r in replicas)


def test_user_profiles_extend_and_override(tmp_path: Path) -> None:
    user = tmp_path / "profiles.toml"
    user.write_text(
        '[profiles.mine]\nextends = "h200"\nmodel = "/models/coder"\nport = 9000\n'
        '[profiles.h200]\ndescription = "replaced"\nmodel = "other/model"\n'
    )
    profiles = load_profiles(user)
    mine = profiles["mine"]
    assert mine.source == str(user)
    assert mine.port == 9000
    # `mine` extends the user's h200, which replaced the built-in one entirely.
    assert mine.args == ()
    assert profiles["h200"].description == "replaced"
    assert profiles["cpu-dev"].source == "built-in"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[profiles.x]\nmodle = "m"\n', "unknown key 'modle'"),
        ('[profiles.x]\nport = "80"\n', "'port' must be int"),
        ('[profiles.x]\nextends = "x"\n', "extends itself"),
        ('[profiles.x]\nextends = "nope"\n', "unknown profile 'nope'"),
        ('[profiles.x]\nrouter_policy = "fastest"\n', "router_policy must be one of"),
        ("[profiles.x\n", "not valid TOML"),
    ],
)
def test_bad_user_profiles_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    user = tmp_path / "profiles.toml"
    user.write_text(text)
    with pytest.raises(ServeError, match=message):
        load_profiles(user)


def test_cli_dry_run_prints_commands_and_starts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # This venv has no vLLM and /m no weights: the preflight fails (exit 3), the commands still print.
    monkeypatch.delenv("CODECTX_VLLM_PYTHON", raising=False)  # `make test` points it at .venv-vllm
    assert (
        main(["backend", "serve", "--profile", "cpu-cluster", "--dry-run", "--model", "/m", "--port", "9400"])
        == 3
    )
    out = capsys.readouterr().out
    assert "#   FAIL vllm" in out and "#   FAIL weights" in out
    assert out.count("vllm.entrypoints.openai.api_server") == 2
    assert "--worker-urls http://127.0.0.1:8100 http://127.0.0.1:8101 --policy cache_aware" in out
    assert "CODECTX_BACKEND_URL=http://127.0.0.1:9400/v1" in out


def test_cli_dry_run_json_and_user_profile(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import os

    cfg = Path(os.environ["XDG_CONFIG_HOME"]) / "codectx"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "profiles.toml").write_text('[profiles.lab]\nextends = "h200"\nport = 8555\n')
    args = ["backend", "serve", "--profile", "lab", "--dry-run", "--json", "--ignore", "vllm"]
    assert main([*args, "--ignore", "gpus", "--ignore", "weights", "--", "--seed", "7"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["preflight"]["ok"] is True
    assert {c["name"]: c["status"] for c in data["preflight"]["checks"]}["gpus"] == "warn"
    (proc,) = data["processes"]
    assert data["profile"] == "lab"
    assert proc["argv"][-2:] == ["--seed", "7"]
    assert flag(tuple(proc["argv"]), "--port") == "8555"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "gpu-box.lan"])
def test_a_host_beyond_loopback_without_an_api_key_is_refused(host: str) -> None:
    """vLLM on every interface with no key: anyone on the network uses the model (red team 5, S10)."""
    profiles = load_profiles()
    for name in ("h200", "cluster"):
        with pytest.raises(ServeError, match="no API key") as info:
            build_plan(profiles[name], python=PY, host=host)
        assert "CODECTX_API_KEY" in str(info.value) and "--allow-no-api-key" in str(info.value)
        # Allowed on purpose (a private network, a proxy in front): said loudly.
        plan = build_plan(profiles[name], python=PY, host=host, allow_no_api_key=True)
        assert any("NO API KEY" in note for note in plan.notes)
    # A key, here or as vLLM's own flag, opens it; loopback needs none.
    assert build_plan(profiles["h200"], python=PY, host=host, api_key="k")
    assert build_plan(profiles["h200"], python=PY, host=host, extra_args=["--api-key=k"])
    for local in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert build_plan(profiles["h200"], python=PY, host=local).notes == ()
    # vLLM takes the last --host: one among the extra arguments counts (review of stop 54).
    for extra in (["--host", host], [f"--host={host}"]):
        for name in ("h200", "cluster"):
            with pytest.raises(ServeError, match="no API key"):
                build_plan(profiles[name], python=PY, extra_args=extra)


def test_the_api_key_reaches_vllm_in_the_variable_it_reads_and_is_never_printed() -> None:
    profiles = load_profiles()
    plan = build_plan(profiles["h200"], python=PY, host="0.0.0.0", api_key="k-rt5-123")
    (server,) = plan.processes
    assert server.env["VLLM_API_KEY"] == "k-rt5-123"
    assert "k-rt5-123" not in " ".join(server.argv)  # argv is what `ps` shows every user
    assert server.shown_env()["VLLM_API_KEY"] == "<hidden>"
    assert "k-rt5-123" not in server.shell() and 'VLLM_API_KEY="${VLLM_API_KEY:?' in server.shell()
    assert "k-rt5-123" not in json.dumps(plan.notes)
    # Behind the router every replica checks the key (the router forwards the client's header).
    cluster = build_plan(profiles["cluster"], python=PY, host="0.0.0.0", api_key="k", replicas=2)
    assert [p.env.get("VLLM_API_KEY") for p in cluster.processes] == ["k", "k", None]


def test_the_printed_plan_has_the_environment_codectx_sets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator copies the printed command into a unit file: it must switch usage stats off too."""
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.setenv("CODECTX_API_KEY", "k-rt5-123")
    ignore = [a for check in ("vllm", "gpus", "weights", "gpu-memory", "fp8") for a in ("--ignore", check)]
    args = ["backend", "serve", "--profile", "h200", "--host", "0.0.0.0", "--dry-run", *ignore]
    assert main([*args, "--json"]) == 0
    out = capsys.readouterr().out
    assert "k-rt5-123" not in out
    (proc,) = json.loads(out)["processes"]
    env = proc["env"]
    for name in ("VLLM_NO_USAGE_STATS", "VLLM_DO_NOT_TRACK", "DO_NOT_TRACK", "HF_HUB_DISABLE_TELEMETRY"):
        assert env[name] == "1", name
    assert env["VLLM_API_KEY"] == "<hidden>" and "--api-key" not in proc["argv"]
    assert main(args) == 0
    out = capsys.readouterr().out
    command = next(line for line in out.splitlines() if "vllm serve" in line)
    assert command.startswith("ORT_DISABLE_TELEMETRY=1 ") and "VLLM_NO_USAGE_STATS=1" in command
    assert 'VLLM_API_KEY="${VLLM_API_KEY:?' in command and "k-rt5-123" not in out
    assert "only under /v1" in out  # what the key does not cover, said where the operator reads
    # Without the key: refused, and nothing printed as if it would run.
    monkeypatch.delenv("CODECTX_API_KEY")
    assert main([*args, "--json"]) != 0
    captured = capsys.readouterr()
    assert "no API key" in captured.err and '"processes"' not in captured.out


def test_a_real_start_gives_vllm_what_the_plan_printed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A fake interpreter dumps the environment vLLM would get: the printed env is in it, the key
    is in VLLM_API_KEY, and codectx's own CODECTX_API_KEY is not handed on."""
    import os
    import sys

    dump = tmp_path / "env.json"
    fake = tmp_path / "python"
    body = f"json.dump({{'env': dict(os.environ), 'argv': sys.argv}}, open({str(dump)!r}, 'w'))"
    fake.write_text(f"#!{sys.executable}\nimport json, os, sys\n{body}\n")
    fake.chmod(0o755)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.setenv("CODECTX_API_KEY", "k-rt5-123")
    args = ["backend", "serve", "--profile", "cpu-dev", "--model", "/m", "--python", str(fake)]
    args += ["--host", "0.0.0.0", "--no-preflight"]
    assert main([*args, "--dry-run", "--json"]) == 0
    (printed,) = json.loads(capsys.readouterr().out)["processes"]
    assert main(args) == 0
    seen = json.loads(dump.read_text())
    assert seen["argv"][1:] == printed["argv"][1:]
    assert seen["env"]["VLLM_API_KEY"] == "k-rt5-123" and "CODECTX_API_KEY" not in seen["env"]
    for name, value in printed["env"].items():
        assert seen["env"][name] == ("k-rt5-123" if name == "VLLM_API_KEY" else value), name
    assert "k-rt5-123" not in capsys.readouterr().err  # the "starting server: ..." line
    assert os.environ["CODECTX_API_KEY"] == "k-rt5-123"  # codectx's own environment is untouched


def test_cli_unknown_profile_and_missing_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backend", "serve", "--profile", "nope", "--dry-run"]) == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err
    with pytest.raises(ServeError, match="names no model"):
        build_plan(load_profiles()["cpu-dev"], python=PY)


def test_check_and_bench_on_a_dead_server_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens once closed
    assert main(["backend", "check", "--backend-url", url, "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["reachable"] is False
    assert "cannot connect" in data["error"]
    assert main(["backend", "bench", "--backend-url", url, "--concurrency", "1", "--requests", "1"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("codectx: error:") and "Traceback" not in err
    assert main(["backend", "bench", "--backend-url", url, "--concurrency", "1,x"]) == 2
    assert "--concurrency" in capsys.readouterr().err


def test_check_without_a_configured_server_says_how(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backend", "check"]) == 3
    out = capsys.readouterr().out
    assert "CODECTX_BACKEND_URL" in out and "codectx backend serve" in out


def test_run_plan_stops_every_process_when_one_exits(tmp_path: Path) -> None:
    import os
    import sys

    from codectx.backend.serve import ProcessSpec, ServePlan, run_plan

    pid_file = tmp_path / "sleeper.pid"
    sleeper = ProcessSpec(
        "replica",
        (
            sys.executable,
            "-c",
            f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)",
        ),
        {},
        "http://127.0.0.1:1",
    )
    failing = ProcessSpec(
        "router",
        (
            sys.executable,
            "-c",
            f"import os, time\nwhile not os.path.exists({str(pid_file)!r}): time.sleep(0.05)\n"
            "raise SystemExit(3)",
        ),
        {},
        "http://127.0.0.1:2",
    )
    plan = ServePlan(load_profiles()["cpu-cluster"], "/m", "m", (sleeper, failing), "http://127.0.0.1:2/v1")
    assert run_plan(plan) == 3
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_sigterm_to_serve_stops_the_servers(tmp_path: Path) -> None:
    """`codectx backend serve` under a service manager: SIGTERM must not orphan vLLM."""
    import os
    import signal
    import subprocess
    import sys
    import time

    pid_file = tmp_path / "child.pid"
    child = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(300)"
    script = (
        "import sys\n"
        "from codectx.backend.serve import ProcessSpec, ServePlan, load_profiles, run_plan\n"
        f"spec = ProcessSpec('server', (sys.executable, '-c', {child!r}), {{}}, 'http://127.0.0.1:1')\n"
        "plan = ServePlan(load_profiles()['cpu-dev'], '/m', 'm', (spec,), 'http://127.0.0.1:1/v1')\n"
        "sys.exit(run_plan(plan))\n"
    )
    serve = subprocess.Popen([sys.executable, "-c", script])
    for _ in range(1200):  # polls, 0.1 s apart: a bound, not a timing goal
        if pid_file.exists():
            break
        assert serve.poll() is None
        time.sleep(0.1)
    else:
        serve.kill()
        pytest.fail("the serve plan never started its child")
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=60) == 130
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_the_pinned_gpu_release_is_the_tested_cpu_release() -> None:
    from codectx.backend.serve import VLLM_VERSION

    pins = (REPO_ROOT / "requirements-vllm.txt").read_text().split()
    assert f"vllm-cpu=={VLLM_VERSION}" in pins


# Runs in the vLLM environment: vLLM's own `vllm serve` parser (flag names, choices, types)
# and its checks of the parsed arguments. (Building the engine arguments would fetch the model.)
PARSE = """
import json, sys
from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
from vllm.utils.argparse_utils import FlexibleArgumentParser
out = []
for argv in json.load(sys.stdin):
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv)
    validate_parsed_serve_args(args)
    out.append([args.kv_cache_dtype, args.load_format, args.kv_offloading_size, args.model_tag])
print("PARSED " + json.dumps(out))
"""


@pytest.mark.slow
@pytest.mark.vllm
def test_gpu_profiles_are_valid_vllm_serve_command_lines() -> None:
    """Every GPU profile's `vllm serve` flags pass the tested vLLM release's own parser."""
    import os
    import subprocess

    python = os.environ.get("CODECTX_VLLM_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("CODECTX_VLLM_PYTHON is not set (run `make test`, which installs .venv-vllm)")
    plans = {
        name: build_plan(profile, python=PY, model="s3://bucket/qwen3" if "object" in name else None)
        for name, profile in load_profiles().items()
        if profile.device == "gpu"
    }
    argvs = [list(p.processes[0].argv[2:]) for p in plans.values()]  # after `vllm serve`
    done = subprocess.run(
        [python, "-c", PARSE], input=json.dumps(argvs), capture_output=True, text=True, timeout=600
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("PARSED ")), None)
    assert line is not None, done.stderr[-3000:]
    parsed = dict(zip(plans, json.loads(line[7:]), strict=True))
    assert parsed["h200"] == ["fp8", "auto", None, "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"]
    assert parsed["h200-object-store"][1:] == ["runai_streamer", None, "s3://bucket/qwen3"]
    assert parsed["h200-kv-offload"][2] == 64
    assert set(parsed) >= {"multi-gpu", "moe-large", "cluster"}
