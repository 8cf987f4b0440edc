"""A real vLLM CPU engine for tests: started once per session, on loopback, from the generated model.

Import the fixtures into a test module:

    from tests.support.vllm_engine import vllm_model, vllm_server  # noqa: F401

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
    ServePlan,
    build_plan,
    load_profiles,
    router_next_to,
    start_process,
    stop_process,
)
from codectx.backend.testmodel import make_test_model

# Engine start-up is ~50 s on an idle machine and several minutes on a busy shared one.
STARTUP_TIMEOUT_S = float(os.environ.get("VLLM_TEST_STARTUP_TIMEOUT", "600"))
# For iterating on tests: reuse a running cpu-dev server instead of starting one per session.
EXTERNAL_URL = os.environ.get("VLLM_TEST_SERVER_URL")


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
    proc: subprocess.Popen[bytes] | None  # None: a server this session did not start
    log: Path
    model_name: str

    @property
    def root(self) -> str:
        return self.spec.url

    @property
    def api_url(self) -> str:
        return self.spec.url + "/v1"

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)


def wait_ready(
    engines: Sequence[Engine], timeout_s: float = STARTUP_TIMEOUT_S, path: str = "/v1/models"
) -> None:
    """Poll each engine until `path` answers 200; on failure raise with the logs."""
    deadline = time.monotonic() + timeout_s
    pending = list(engines)
    with httpx.Client(timeout=5.0, trust_env=False) as http:
        while pending:
            for engine in list(pending):
                if not engine.alive():
                    code = engine.proc.returncode if engine.proc else None
                    raise RuntimeError(
                        f"{engine.spec.role} exited with {code} while starting:\n"
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


def engine_plan(
    model_dir: Path, *, replicas: int = 1, extra_args: Sequence[str] = (), profile_name: str = "cpu-dev"
) -> ServePlan:
    """The cpu-dev (or named) profile's plan on free loopback ports."""
    python = vllm_python()
    return build_plan(
        load_profiles()[profile_name],
        python=python,
        router=router_next_to(python),
        model=str(model_dir),
        port=free_port(),
        replicas=replicas,
        extra_args=extra_args,
        replica_ports=[free_port() for _ in range(replicas)],
    )


def start(spec: ProcessSpec, log_dir: Path, model_name: str) -> Engine:
    log = log_dir / f"{spec.role}-{spec.url.rsplit(':', 1)[1]}.log"
    return Engine(spec, start_process(spec, log), log, model_name)


def start_engines(model_dir: Path, log_dir: Path, *, extra_args: Sequence[str] = ()) -> list[Engine]:
    """Start a single cpu-dev server (not yet ready: pass the result to wait_ready)."""
    plan = engine_plan(model_dir, extra_args=extra_args)
    return [start(spec, log_dir, plan.served_model_name) for spec in plan.processes]


# Test modules import these fixtures, and pytest then registers one fixture per module:
# the engine itself is shared through this cache and stopped when its last user is done.
_SHARED: dict[str, object] = {}
_USERS: list[int] = [0]


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny test model, generated once per session into a temporary folder."""
    vllm_python()
    if "model" not in _SHARED:
        _SHARED["model"] = make_test_model(tmp_path_factory.mktemp("vllm-model") / "model").path
    model = _SHARED["model"]
    assert isinstance(model, Path)
    return model


@pytest.fixture(scope="session")
def vllm_server(vllm_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """One vLLM CPU engine for the whole session, with prefix caching, on a free loopback port."""
    if EXTERNAL_URL:
        root = EXTERNAL_URL.removesuffix("/").removesuffix("/v1")
        name = httpx.get(root + "/v1/models", trust_env=False).json()["data"][0]["id"]
        yield Engine(ProcessSpec("server", (), {}, root), None, Path("/dev/null"), name)
        return
    if "engine" not in _SHARED:
        (engine,) = start_engines(vllm_model, tmp_path_factory.mktemp("vllm-logs"))
        try:
            wait_ready([engine])
        except BaseException:
            engine.stop()
            raise
        _SHARED["engine"] = engine
    shared = _SHARED["engine"]
    assert isinstance(shared, Engine)
    _USERS[0] += 1
    try:
        yield shared
    finally:
        _USERS[0] -= 1
        if _USERS[0] == 0:
            shared.stop()
            del _SHARED["engine"]
