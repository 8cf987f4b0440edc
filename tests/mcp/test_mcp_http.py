"""`codectx mcp --http`: Streamable HTTP on loopback only, driven by the SDK's HTTP client.

The same planted repository as tests/mcp/test_mcp.py; here the transport is HTTP: initialize, list
tools, call each tool, the answers audited byte for byte and free of planted secrets. Non-loopback
addresses are refused before anything is served, a foreign Host header is turned away (DNS
rebinding), and under `unshare -n` + `strace` the server (the SDK pulls in opentelemetry-api,
starlette, uvicorn) makes no connection at all and binds only its own loopback port.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.mcp_helpers import (
    CODECTX,
    audit_entries,
    free_port,
    http_session,
    leaks,
    planted_secrets,
    planted_workspace,
    server_env,
    sha256,
    start_http,
)

NETCHECK = Path(__file__).resolve().parent.parent / "support" / "mcp_netcheck.py"


@pytest.mark.parametrize("address", ["0.0.0.0:8765", "192.168.1.10:8765", "example.com:80", "[::]:9000"])
def test_non_loopback_addresses_are_refused(address: str, tmp_path: Path) -> None:
    done = subprocess.run([*CODECTX, "mcp", "--http", address, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("where", ["home", "root", "above-home"])
def test_the_home_folder_and_the_disks_root_are_no_workspace(where: str, tmp_path: Path) -> None:
    """An agent reads any file of a root: `codectx mcp` started in ~ (the default `.`) served the
    home folder, codectx's own state and every other project (red team 3), and `mcp /` the disk."""
    home = tmp_path / "users" / "me"
    (home / "project").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home)}
    args = {"home": [], "root": ["/"], "above-home": [str(tmp_path / "users")]}[where]
    done = subprocess.run(
        [*CODECTX, "mcp", *args], capture_output=True, text=True, cwd=home, env=env, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "does not index" in done.stderr and "Traceback" not in done.stderr
    assert not (home / ".codectx").exists()


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("mcphttp")
    root = planted_workspace(base)
    state = base / "state"
    port = free_port()
    proc = start_http([str(root)], server_env(state), port, base / "server.log")
    yield {"url": f"http://127.0.0.1:{port}/mcp", "port": port, "root": root, "state": state}
    proc.terminate()
    proc.wait(timeout=20)


def test_tools_over_http(http_server: dict[str, Any]) -> None:
    async def go() -> tuple[list[str], list[Any]]:
        async with http_session(http_server["url"]) as rec:
            names = [t.name for t in (await rec.session.list_tools()).tools]
            await rec.call("index_status", {"wait": True})
            await rec.call("search_code", {"query": "stripe api key", "k": 10})
            await rec.call("find_definition", {"symbol": "charge"})
            await rec.call("find_references", {"symbol": "environ"})
            await rec.call("get_context", {"path": "shipyard/config.py", "line": 11, "character": 20})
            await rec.call("read_code", {"path": "shipyard/config.py"})
            await rec.call("read_code", {"path": ".env"})
            await asyncio.gather(*(rec.call("search_code", {"query": f"config {i}"}) for i in range(20)))
            return names, rec.answers

    names, answers = asyncio.run(go())
    assert len(names) == 6 and "search_code" in names
    by_tool = {a.tool: a for a in answers}
    assert not any(a.is_error for a in answers if a.arguments.get("path") != ".env")
    assert answers[6].is_error and "never-send" in answers[6].text
    assert by_tool["find_definition"].data()["definitions"][0]["path"] == "shipyard/payments.py"
    assert "[REDACTED:" in answers[5].text
    secrets = planted_secrets()
    assert {a.tool: leaks(a.text, secrets) for a in answers if leaks(a.text, secrets)} == {}
    hashes = {e["sha256"]: e for e in audit_entries(http_server["state"])}
    for a in answers:
        if not a.is_error:
            assert hashes[sha256(a.text)]["call"]["tool"] == a.tool


def test_foreign_host_header_is_refused(http_server: dict[str, Any]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Host": "attacker.example:80", "Accept": "application/json, text/event-stream"}
    answer = httpx.post(http_server["url"], json=body, headers=headers, timeout=10)
    assert answer.status_code in (400, 403, 421)
    evil = {"Origin": "http://attacker.example", "Accept": "application/json, text/event-stream"}
    assert httpx.post(http_server["url"], json=body, headers=evil, timeout=10).status_code in (400, 403)


@pytest.mark.skipif(os.name != "posix" or os.getuid() != 0, reason="needs root to connect as another account")
def test_another_accounts_process_is_refused(http_server: dict[str, Any]) -> None:
    """Red team 12 (F5): any local account could connect to the loopback port and read the
    workspace through the tools; `codectx lsp --tcp` already served its owner only."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    intruder = (
        "import os, socket\n"
        "os.setgid(65534); os.setuid(65534)\n"
        f"body = {body!r}\n"
        f"c = socket.socket(); c.connect((b'127.0.0.1', {http_server['port']}))\n"
        f"c.sendall(('POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:{http_server['port']}\\r\\n'\n"
        "  'Content-Type: application/json\\r\\nAccept: application/json, text/event-stream\\r\\n'\n"
        "  f'Content-Length: {len(body)}\\r\\nConnection: close\\r\\n\\r\\n{body}').encode())\n"
        "c.settimeout(20); data = b''\n"
        "while True:\n"
        "    part = c.recv(65536)\n"
        "    if not part: break\n"
        "    data += part\n"
        "print(data.split(b'\\r\\n', 1)[0].decode())\n"
    )
    done = subprocess.run([sys.executable, "-c", intruder], capture_output=True, text=True, timeout=60)
    assert " 403 " in done.stdout, (done.stdout, done.stderr)
    # The owner is still served.
    own = httpx.post(
        http_server["url"],
        content=body,
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        timeout=10,
    )
    assert own.status_code == 200


def _can_isolate() -> bool:
    tools = all(shutil.which(t) for t in ("unshare", "strace", "ip"))
    if not tools or subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() != "0":
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_isolate(), reason="needs root, unshare, strace and ip")
def test_server_connects_nowhere_and_binds_only_its_loopback_port(tmp_path: Path) -> None:
    root = planted_workspace(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    inner = f"'{sys.executable}' '{NETCHECK}' '{root}' '{out}'"
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {inner}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert [tool for tool, error in result["answers"] if error] == []
    assert len(result["answers"]) == 4
    calls = (out / "strace.log").read_text().splitlines()
    inet = [c for c in calls if "AF_INET" in c]
    connects = [c for c in inet if re.search(r"\bconnect\(", c)]
    binds = [c for c in inet if re.search(r"\bbind\(", c)]
    assert connects == [], connects  # no telemetry, no name lookups, nothing
    assert binds, calls[-20:]
    port = result["port"]
    assert all(f"sin_port=htons({port})" in b and '"127.0.0.1"' in b for b in binds), binds
