"""Exactly one module sends requests: proven statically (imports, calls) and dynamically (audit hook)."""

from __future__ import annotations

import ast
import asyncio
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = ("codectx", "indexer", "retriever", "backend", "lsp")
NETWORK_MODULES = frozenset(
    {
        "httpx", "httpcore", "requests", "urllib.request", "urllib3", "http.client", "socket", "ssl",
        "aiohttp", "websockets", "websocket", "ftplib", "smtplib", "telnetlib", "xmlrpc.client",
        "grpc", "pycurl", "asyncssh", "paramiko",
    }
)  # fmt: skip
# Functions that open or accept connections however they are imported.
NETWORK_CALLS = frozenset(
    {"open_connection", "create_connection", "start_server", "create_datagram_endpoint", "start_tcp", "start_ws",  # noqa: E501
     "urlopen", "open_unix_connection"}
)  # fmt: skip

# The only module allowed to open outgoing connections, and the listed server-side exceptions, with why.
SEND_PATH = "backend/transport.py"
ALLOWED: dict[str, tuple[str | None, str]] = {
    # path: (the one use allowed there, or None for any; reason)
    SEND_PATH: (None, "the single send path: gate.prepare -> send prepared.content -> gate.record"),
    "lsp/cli.py": (
        "call start_server()",
        "`codectx lsp --tcp` LISTENS for the editor (its owner's processes only); it connects nowhere",
    ),
    "backend/machine.py": ("import socket", "preflight BINDS a port to see it is free; connects nowhere"),
}


def _python_files() -> list[Path]:
    files = []
    for package in PACKAGES:
        files += [p for p in (ROOT / package).rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(files)


def _network_uses(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_network(alias.name):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(_is_network(n) for n in names):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in NETWORK_CALLS:
                found.append(f"line {node.lineno}: call {name}()")
            if name in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _is_network(arg.value):
                    found.append(f"line {node.lineno}: dynamic import of {arg.value}")
    return found


def _is_network(module: str) -> bool:
    parts = module.split(".")
    return any(".".join(parts[:i]) in NETWORK_MODULES for i in range(1, len(parts) + 1))


def test_scanner_catches_every_form() -> None:
    sample = ast.parse(
        "import httpx\nfrom urllib import request\nimport http.client as h\n"
        "import importlib\nimportlib.import_module('requests')\n"
        "async def f(loop):\n    await asyncio.open_connection('h', 1)\n    socket.create_connection(('h', 1))\n"  # noqa: E501
    )
    assert len(_network_uses(sample)) == 6
    assert _network_uses(ast.parse("import json\nimport asyncio\nfrom pathlib import Path\n")) == []


def test_only_the_transport_opens_connections() -> None:
    offenders = {}
    files = _python_files()
    assert len(files) > 10
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        uses = _network_uses(ast.parse(path.read_text(encoding="utf-8"), filename=rel))
        allowed_use, _reason = ALLOWED.get(rel, ("", ""))
        if allowed_use is not None:
            uses = [u for u in uses if not u.endswith(": " + allowed_use)] if allowed_use else uses
        else:
            uses = []
        if uses:
            offenders[rel] = uses
    assert not offenders, (
        "only backend/transport.py may import network libraries or open connections "
        f"(everything sent must pass the privacy gate): {offenders}"
    )


def test_transport_sends_only_prepared_bytes() -> None:
    path = ROOT / SEND_PATH
    if not path.exists():
        pytest.skip("backend/transport.py not written yet")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    source = path.read_text(encoding="utf-8")
    assert ".prepare(" in source and ".record(" in source
    request_calls = 0
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("build_request", "post", "put", "patch", "request", "stream"):
            continue
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        assert not {"json", "data", "files"} & kwargs.keys(), (
            f"line {node.lineno}: bodies must be the gate's bytes (content=prepared.content), never re-serialised"  # noqa: E501
        )
        if "content" in kwargs:
            request_calls += 1
            value = kwargs["content"]
            assert isinstance(value, ast.Attribute) and value.attr == "content", (
                f"line {node.lineno}: content= must be prepared.content"
            )
    assert request_calls >= 1, "no request with content=prepared.content found in the transport"


# ---- dynamically: nothing connects during offline / local-only paths -----------------------------------

_EVENTS: list[tuple[str, Any]] = []
_WATCHING: list[bool] = [False]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHING[0] or event not in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
        return
    if event == "socket.connect":
        sock = args[0]
        if getattr(sock, "family", None) == socket.AF_UNIX:
            return
    _EVENTS.append((event, args[1:2]))


_INSTALLED: list[bool] = []


@pytest.fixture
def watch() -> Any:
    if not _INSTALLED:
        sys.addaudithook(_hook)  # hooks cannot be removed; it only records while _WATCHING is set
        _INSTALLED.append(True)
    _EVENTS.clear()
    _WATCHING[0] = True
    try:
        yield _EVENTS
    finally:
        _WATCHING[0] = False


def test_audit_hook_sees_a_real_connect(watch: list[tuple[str, Any]]) -> None:
    # Proves the hook works: a loopback connection attempt is recorded.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket()
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()
    assert any(event == "socket.connect" for event, _ in watch)


def test_gate_and_cli_never_connect(watch: list[tuple[str, Any]], tmp_path: Path, capsys: Any) -> None:
    from codectx.cli import main
    from codectx.privacy.audit import AuditLog
    from codectx.privacy.egress import EgressGate, SourceSpan
    from codectx.settings import load_settings

    settings = load_settings(None, {"privacy.offline": True}, environ={})
    gate = EgressGate(settings, AuditLog(tmp_path / "audit.jsonl"))
    prepared = gate.prepare(
        "http://127.0.0.1:9/v1/completions", {"prompt": "x = 1"}, [SourceSpan("a.py", 0, 0)]
    )
    gate.record(prepared, False, "offline")
    src = tmp_path / "f.py"
    src.write_text('token = "glpat-Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9"\n')
    assert main(["redact", str(src)]) == 0
    assert main(["audit", "verify", "--log", str(tmp_path / "audit.jsonl")]) == 0
    capsys.readouterr()
    assert watch == []


def test_backend_offline_mode_never_connects(watch: list[tuple[str, Any]], tmp_path: Path) -> None:
    transport_mod = pytest.importorskip("codectx.backend.transport")
    if not hasattr(transport_mod, "Transport"):
        pytest.skip("backend transport has no Transport yet")
    from codectx.errors import CodectxError
    from codectx.privacy.audit import AuditLog
    from codectx.privacy.egress import EgressGate
    from codectx.settings import load_settings

    settings = load_settings(
        None, {"privacy.offline": True, "backend.url": "http://127.0.0.1:9/v1"}, environ={}
    )
    log = AuditLog(tmp_path / "audit.jsonl")
    gate = EgressGate(settings, log)

    async def attempt() -> None:
        transport = transport_mod.Transport(settings, gate)
        try:
            await transport.post(
                "completions", {"model": "m", "prompt": 'k = "npm_' + "a1B2c3" * 6 + '"'}, []
            )
        finally:
            await transport.aclose()

    with pytest.raises(CodectxError):
        asyncio.run(attempt())
    assert watch == []
    (entry,) = list(log.entries())
    assert entry["sent"] is False and entry["offline"] is True
    assert entry["redactions"][0]["rule"] == "npm-token"
