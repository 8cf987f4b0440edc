"""A real vLLM CPU engine for tests: started once per session, on loopback, from the generated model.

Import the fixtures into a test module:

    from tests.vllm_engine import vllm_model, vllm_server  # noqa: F401

The engine runs in the vLLM environment named by $CODECTX_VLLM_PYTHON
(`make test` sets it); without it the tests skip with that reason. The
command line comes from the `cpu-dev` profile, so the tests exercise the
same plan `codectx backend serve` runs. On a startup failure the engine's
log is part of the error.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from codectx.backend.serve import (
    ProcessSpec,
    build_plan,
    load_profiles,
    router_next_to,
    start_process,
    stop_process,
)
from codectx.backend.testmodel import make_test_model

STARTUP_TIMEOUT_S = float(os.environ.get("CODECTX_VLLM_STARTUP_TIMEOUT", "420"))


def vllm_python() -> str:
    """The vLLM environment's interpreter, or skip the test saying why."""
    python = os.environ.get("CODECTX_VLLM_PYTHON")
    if not python:
        pytest.skip("CODECTX_VLLM_PYTHON is not set (run `make test`, which installs .venv-vllm)")
    if not Path(python).exists():
        pytest.skip(f"CODECTX_VLLM_PYTHON={python} does not exist (run `make vllm-env`)")
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, chars: int = 6000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


@dataclass
class Engine:
    """One running OpenAI-compatible server (a vLLM engine, or vllm-router)."""

    spec: ProcessSpec
    proc: subprocess.Popen[bytes]
    log: Path
    model_name: str

    @property
    def root(self) -> str:
        return self.spec.url

    @property
    def api_url(self) -> str:
        return self.spec.url + "/v1"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        stop_process(self.proc)


def wait_ready(engines: Sequence[Engine], timeout_s: float = STARTUP_TIMEOUT_S, path: str = "/v1/models") -> None:
    """Poll each engine until `path` answers 200; on failure raise with the logs."""
    deadline = time.monotonic() + timeout_s
    pending = list(engines)
    with httpx.Client(timeout=5.0, trust_env=False) as http:
        while pending:
            for engine in list(pending):
                if not engine.alive():
                    raise RuntimeError(
                        f"{engine.spec.role} exited with {engine.proc.returncode} while starting:\n"
                        f"{engine.spec.shell()}\n--- log ---\n{log_tail(engine.log)}"
                    )
                try:
                    if http.get(engine.root + path).status_code == 200:
                        pending.remove(engine)
                except httpx.HTTPError:
                    pass
            if pending and time.monotonic() > deadline:
                logs = "\n".join(f"--- {e.spec.role} {e.root} ---\n{log_tail(e.log)}" for e in pending)
                for engine in engines:
                    engine.stop()
                raise RuntimeError(f"vLLM not ready within {timeout_s:.0f}s:\n{logs}")
            if pending:
                time.sleep(1.0)


def start_engines(
    model_dir: Path,
    log_dir: Path,
    *,
    replicas: int = 1,
    extra_args: Sequence[str] = (),
    profile_name: str = "cpu-dev",
) -> list[Engine]:
    """Start the cpu-dev plan on free loopback ports (replicas > 1: replicas, then the router, last)."""
    python = vllm_python()
    profile = load_profiles()[profile_name]
    plan = build_plan(
        profile,
        python=python,
        router=router_next_to(python),
        model=str(model_dir),
        port=free_port(),
        replicas=replicas,
        extra_args=extra_args,
        replica_ports=[free_port() for _ in range(replicas)],
    )
    engines: list[Engine] = []
    for i, spec in enumerate(plan.processes):
        log = log_dir / f"{spec.role}-{i}.log"
        engines.append(Engine(spec, start_process(spec, log), log, plan.served_model_name))
    return engines


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny test model, generated once per session into a temporary folder."""
    vllm_python()
    return make_test_model(tmp_path_factory.mktemp("vllm-model") / "model").path


@pytest.fixture(scope="session")
def vllm_server(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One vLLM CPU engine for the whole session, with prefix caching, on a free loopback port."""
    log_dir = tmp_path_factory.mktemp("vllm-logs")
    (engine,) = start_engines(vllm_model, log_dir)
    try:
        wait_ready([engine])
        yield engine
    finally:
        engine.stop()
