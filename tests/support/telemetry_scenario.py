"""Runs `codectx index`, `search`, `complete` and a short `lsp` session the way a user would, for the
telemetry tests: in a sandbox (HOME, XDG folders and TMPDIR inside one folder) and with every
connection attempt recorded.

    python tests/support/telemetry_scenario.py CONFIG.json

CONFIG: {"sandbox": dir, "workspace": dir, "out": dir, "trace": "strace" | "audit"}. With
"strace", each command runs under `strace -f -e trace=connect` (native code included; the
test runs this script inside `unshare -n`, so nothing could leave anyway). With "audit", a
sitecustomize audit hook records Python-level socket.connect and getaddrinfo calls.
Writes OUT/result.json: each command's exit code and stderr tail, and the capture server's port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a program

from tests.support import faultserver as fs

HOOK = """
import sys, json, os
_out = os.environ["CODECTX_TEST_SOCKET_LOG"]
def _hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo"):
        try:
            with open(_out, "a") as fh:
                what = args[1] if event == "socket.connect" else args[:2]
                fh.write(json.dumps([event, repr(what)]) + "\\n")
        except Exception:
            pass
sys.addaudithook(_hook)
"""


def sandbox_env(sandbox: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CODECTX_", "XDG_", "HF_", "TRANSFORMERS_"))
    }
    env.pop("ORT_DISABLE_TELEMETRY", None)  # codectx itself must switch it off
    env["HOME"] = str(sandbox / "home")
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env[var] = str(sandbox / "xdg" / var.lower())
    env["TMPDIR"] = str(sandbox / "tmp")
    for var in ("HOME", "TMPDIR"):
        Path(env[var]).mkdir(parents=True, exist_ok=True)
    return env


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read(stream: Any) -> dict[str, Any]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return dict(json.loads(stream.read(length)))


def _answer(proc: subprocess.Popen[bytes], want: int) -> dict[str, Any]:
    while True:
        message = _read(proc.stdout)
        if message.get("id") == want and "method" not in message:
            return message


def lsp_session(command: list[str], ws: Path, env: dict[str, str], url: str) -> tuple[int, str]:
    proc = subprocess.Popen(
        command, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    uri = (ws / "calc.py").as_uri()
    text = (ws / "calc.py").read_text()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(_frame(message))
        proc.stdin.flush()

    try:
        options = {
            "codectx": {"backend": {"url": url}, "lsp": {"debounce_ms": 0, "request_budget_ms": 120000}}
        }
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": None,
                    "rootUri": ws.as_uri(),
                    "capabilities": {},
                    "initializationOptions": options,
                },
            }
        )
        _answer(proc, 1)
        send({"method": "initialized", "params": {}})
        send(
            {
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            }
        )
        time.sleep(3)  # let background indexing and the warm-up run (they import the model libraries)
        send(
            {
                "id": 2,
                "method": "workspace/executeCommand",
                "params": {"command": "codectx.search", "arguments": [{"query": "add numbers"}]},
            }
        )
        _answer(proc, 2)
        send(
            {
                "id": 3,
                "method": "textDocument/completion",
                "params": {"textDocument": {"uri": uri}, "position": {"line": 2, "character": 11}},
            }
        )
        _answer(proc, 3)
        send({"id": 4, "method": "shutdown"})
        _answer(proc, 4)
        send({"method": "exit"})
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    return proc.returncode, err[-2000:]


def main() -> int:
    config = json.loads(Path(sys.argv[1]).read_text())
    sandbox, ws, out = Path(config["sandbox"]), Path(config["workspace"]), Path(config["out"])
    env = sandbox_env(sandbox)
    server = fs.FaultServer(
        routes={"/v1/models": fs.models("m"), "/tokenize": fs.tokenize()}, default=fs.sse(["x"])
    ).start()
    url = server.url
    results: dict[str, Any] = {"port": server.port, "commands": {}}
    codectx = [sys.executable, "-m", "codectx"]
    runs = {
        "index": [*codectx, "index", str(ws)],
        "search": [*codectx, "search", "add two numbers", str(ws)],
        "complete": [
            *codectx,
            "complete",
            "calc.py",
            "--line",
            "3",
            "--character",
            "1",  # 1-based: the empty line 3 (the LSP request below overshoots; the CLI refuses to)
            "--backend-url",
            url,
        ],
        "lsp": [*codectx, "lsp"],
    }
    if config["trace"] == "audit":
        hook_dir = out / "hook"
        hook_dir.mkdir(parents=True, exist_ok=True)
        (hook_dir / "sitecustomize.py").write_text(HOOK)
        env["PYTHONPATH"] = str(hook_dir) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        for name, command in runs.items():
            run_env = dict(env)
            if config["trace"] == "strace":
                command = [
                    "strace",
                    "-f",
                    "--seccomp-bpf",
                    "-qq",
                    "-e",
                    "trace=connect",
                    "-e",
                    "signal=none",
                    "-o",
                    str(out / f"connect.{name}.txt"),
                    *command,
                ]
            else:
                run_env["CODECTX_TEST_SOCKET_LOG"] = str(out / f"connect.{name}.txt")
            if name == "lsp":
                code, err = lsp_session(command, ws, run_env, url)
            else:
                done = subprocess.run(
                    command, cwd=ws, env=run_env, capture_output=True, text=True, timeout=900
                )
                code, err = done.returncode, done.stderr[-2000:]
            results["commands"][name] = {"rc": code, "stderr": err}
        results["requests"] = [r.path for r in server.requests]
    finally:
        server.stop()
    (out / "result.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
