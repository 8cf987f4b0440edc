"""Shared pieces of the MCP tests: a planted workspace, the server command, a recorded session.

`record_session` drives a real `codectx mcp` with the SDK's own client (stdio or Streamable HTTP)
through a script of calls and keeps every answer (tool, arguments, isError, text), so the tests
can check each answer against the planted secrets and the audit log.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from codectx.privacy.audit import AuditLog

PLANTED = Path(__file__).resolve().parent.parent / "fixtures" / "planted"
CODECTX = [sys.executable, "-m", "codectx"]
WINDOW = 12


@dataclass
class Answer:
    tool: str
    arguments: dict[str, Any]
    is_error: bool
    text: str

    def data(self) -> Any:
        return json.loads(self.text)


def planted_secrets() -> list[dict[str, Any]]:
    return json.loads((PLANTED / "labels.json").read_text())  # type: ignore[no-any-return]


def windows(value: str) -> Iterator[str]:
    if len(value) <= WINDOW:
        yield value
        return
    for i in range(len(value) - WINDOW + 1):
        yield value[i : i + WINDOW]


def leaks(text: str, secrets: list[dict[str, Any]]) -> list[str]:
    """Planted secrets with a 12-character window in `text`, raw or JSON-decoded."""
    views = [text]
    try:
        views.append(json.dumps(json.loads(text), ensure_ascii=False))
        views.append(" ".join(_strings(json.loads(text))))
    except ValueError:
        pass
    found = []
    for s in secrets:
        if any(w in view for w in windows(s["value"]) for view in views):
            found.append(f"{s['file']}:{s['line']} ({s.get('kind', '?')})")
    return found


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def planted_workspace(base: Path) -> Path:
    """The planted repository, no answer key, no vectors, plus a symlink that leads out of it."""
    root = base / "planted"
    shutil.copytree(PLANTED, root)
    (root / "labels.json").unlink()
    (root / ".codectx.toml").write_text("[index]\nembed = false\n")
    outside = base / "outside.py"
    outside.write_text("OUTSIDE_ONLY = 'this file is not in the workspace'\n")
    (root / "shipyard" / "elsewhere.py").symlink_to(outside)
    return root


def server_env(state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODECTX_")}
    env["XDG_STATE_HOME"] = str(state)  # the audit log of this server
    return env


def audit_entries(state: Path) -> list[dict[str, Any]]:
    return [e for e in AuditLog(state / "codectx" / "audit.jsonl").requests() if "call" in e]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Recorder:
    """An initialised client session that keeps every answer."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.answers: list[Answer] = []

    async def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        result = await self.session.call_tool(tool, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        answer = Answer(tool, arguments, bool(result.is_error), text)
        self.answers.append(answer)
        return answer


@asynccontextmanager
async def stdio_session(args: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(command=CODECTX[0], args=[*CODECTX[1:], "mcp", *args], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Recorder(session)


@asynccontextmanager
async def http_session(url: str):  # type: ignore[no-untyped-def]
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Recorder(session)


def start_http(args: list[str], env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """`codectx mcp --http 127.0.0.1:PORT ARGS`, returned once the port accepts connections."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*CODECTX, "mcp", "--http", f"127.0.0.1:{port}", *args], env=env, stdout=out, stderr=out
        )
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not listen")


def run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())  # type: ignore[arg-type]
