"""No telemetry from any dependency: no file outside codectx's folders, no connection but the backend.

One scenario (tests/support/telemetry_scenario.py) runs `codectx index` (with real
embeddings: ONNX Runtime, torch for the export), `search`, `complete` and a
short `lsp` session with HOME, the XDG folders and TMPDIR in a sandbox. As
root it runs inside `unshare -n` (loopback only) with every process under
`strace -e trace=connect`, native code included; elsewhere a Python audit
hook records socket connects and name lookups.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codectx.runtime import TELEMETRY_OFF, child_environ, quiet_dependencies
from tests.support.paths import REPO_ROOT, TESTS

SCENARIO = TESTS / "support" / "telemetry_scenario.py"
CODE = 'import os\n\n\ndef add(a, b):\n    """Add two numbers."""\n    return a + b\n'


def _can_isolate() -> bool:
    if (
        os.geteuid() != 0
        or not shutil.which("unshare")
        or not shutil.which("strace")
        or not shutil.which("ip")
    ):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("telemetry")
    sandbox, out = base / "sandbox", base / "out"
    ws = sandbox / "ws"
    ws.mkdir(parents=True)
    out.mkdir()
    (ws / ".git").mkdir()
    (ws / "calc.py").write_text(CODE)
    isolated = _can_isolate()
    config = {
        "sandbox": str(sandbox),
        "workspace": str(ws),
        "out": str(out),
        "trace": "strace" if isolated else "audit",
    }
    (out / "config.json").write_text(json.dumps(config))
    command = [sys.executable, str(SCENARIO), str(out / "config.json")]
    if isolated:
        inner = " ".join(f"'{part}'" for part in command)
        command = ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {inner}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    result.update(sandbox=sandbox, ws=ws, out=out, isolated=isolated)
    for name, run in result["commands"].items():
        assert run["rc"] == 0, (name, run["stderr"])
    return result


@pytest.mark.slow
def test_no_dependency_writes_a_file_outside_codectx_folders(scenario: dict[str, Any]) -> None:
    sandbox: Path = scenario["sandbox"]
    allowed = [
        scenario["ws"] / ".codectx",
        scenario["ws"] / ".git",
        sandbox / "xdg" / "xdg_state_home" / "codectx",
        sandbox / "xdg" / "xdg_cache_home" / "codectx",
    ]
    stray = []
    for dirpath, _, filenames in os.walk(sandbox):
        for name in filenames:
            path = Path(dirpath, name)
            if path == scenario["ws"] / "calc.py" or any(a == path or a in path.parents for a in allowed):
                continue
            stray.append(str(path.relative_to(sandbox)))
    assert stray == [], f"files written outside the index, state and cache folders: {stray}"
    # The folders that must hold them did get them: the check looked at the right places.
    assert (scenario["ws"] / ".codectx" / "meta.json").is_file()
    assert list((sandbox / "xdg" / "xdg_cache_home" / "codectx").rglob("*.onnx"))
    assert (sandbox / "xdg" / "xdg_state_home" / "codectx" / "audit.jsonl").is_file()
    assert not (sandbox / "xdg" / "xdg_cache_home" / "Microsoft").exists()


_INET = re.compile(
    r"connect\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\((\d+)\)"
    r'.*?(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")'
)


def _connections(scenario: dict[str, Any]) -> dict[str, list[tuple[str, int]]]:
    found: dict[str, list[tuple[str, int]]] = {}
    for name in scenario["commands"]:
        path: Path = scenario["out"] / f"connect.{name}.txt"
        text = path.read_text() if path.exists() else ""
        items: list[tuple[str, int]] = []
        if scenario["isolated"]:
            for match in _INET.finditer(text):
                items.append((match.group(2) or match.group(3), int(match.group(1))))
            assert "AF_INET" not in _INET.sub("", text), text  # every inet connect was parsed
        else:
            for line in text.splitlines():
                event, args = json.loads(line)
                if event == "socket.getaddrinfo":
                    items.append((args, 0))
                elif args.startswith("("):
                    host, port = eval(args)[:2]
                    items.append((str(host), int(port)))
        found[name] = items
    return found


@pytest.mark.slow
def test_the_only_connection_attempted_is_to_the_configured_backend(scenario: dict[str, Any]) -> None:
    backend = ("127.0.0.1", scenario["port"])
    found = _connections(scenario)
    others = {name: [c for c in items if c != backend] for name, items in found.items()}
    assert all(not items for items in others.values()), others
    # The commands that talk to the model server did (the recording works).
    assert backend in found["complete"] and backend in found["lsp"]
    assert found["index"] == [] and found["search"] == []
    assert "/v1/completions" in scenario["requests"]


def test_quiet_dependencies_is_an_explicit_call_not_an_import_side_effect() -> None:
    code = "import os, codectx.cli, codectx.runtime; print(os.environ.get('ORT_DISABLE_TELEMETRY'))"
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "None"
    environ: dict[str, str] = {"HF_HUB_OFFLINE": "0"}
    quiet_dependencies(environ)
    assert all(environ[k] == v for k, v in TELEMETRY_OFF.items())
    assert environ["HF_HUB_OFFLINE"] == "0"  # the user's own choice stands
    assert environ["TRANSFORMERS_OFFLINE"] == "1" and environ["HF_HOME"].endswith("codectx/huggingface")


def test_a_model_server_child_keeps_telemetry_off_but_may_download() -> None:
    saved = dict(os.environ)
    try:
        os.environ.pop("HF_HUB_OFFLINE", None)
        quiet_dependencies()
        assert os.environ["HF_HUB_OFFLINE"] == "1"
        os.environ.pop("HF_HOME", None)
        quiet_dependencies()
        child = child_environ()
        assert "HF_HUB_OFFLINE" not in child and child["VLLM_NO_USAGE_STATS"] == "1"
        assert "HF_HOME" not in child  # the server downloads into the user's own cache
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_socket_audit_hook_used_without_root_records_connections(tmp_path: Path) -> None:
    """The fallback of the network test (no `unshare`): the hook itself records what it must."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.support.telemetry_scenario import HOOK

    (tmp_path / "sitecustomize.py").write_text(HOOK)
    log = tmp_path / "connect.txt"
    code = (
        "import socket\ns = socket.socket()\ns.settimeout(0.2)\n"
        "try:\n    s.connect(('127.0.0.1', 9))\nexcept OSError:\n    pass\n"
        "try:\n    socket.getaddrinfo('example.invalid', 80)\nexcept OSError:\n    pass\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path), CODECTX_TEST_SOCKET_LOG=str(log))
    subprocess.run([sys.executable, "-c", code], env=env, timeout=60, check=True)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert ["socket.connect", "('127.0.0.1', 9)"] in events
    assert any(e[0] == "socket.getaddrinfo" and "example.invalid" in e[1] for e in events)


@pytest.mark.slow
def test_the_embedder_used_as_a_library_switches_onnx_telemetry_off_too(scenario: dict[str, Any]) -> None:
    """A host that imports codectx without its CLI (no quiet_dependencies): the embedder still does it."""
    sys.path.insert(0, str(REPO_ROOT))
    from tests.support.telemetry_scenario import sandbox_env

    env = sandbox_env(scenario["sandbox"])
    code = (
        "from codectx.indexer.embedding.embedder import Embedder\n"
        "from codectx.settings import load_settings\n"
        "e = Embedder.from_settings(load_settings(None, environ={}))\n"
        "print(e.backend, len(e.embed_query('x')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.split()[0] == "onnx-int8", done.stderr
    assert not (scenario["sandbox"] / "xdg" / "xdg_cache_home" / "Microsoft").exists()
