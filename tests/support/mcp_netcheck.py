"""Runs `codectx mcp --http` under `strace -f -e trace=connect,bind` and drives it with the SDK's
HTTP client, for tests/mcp/test_mcp_http.py (run inside `unshare -n`: loopback only).

    python tests/support/mcp_netcheck.py WORKSPACE OUT_DIR

Writes OUT_DIR/strace.log (every connect and bind of the server and its threads and children)
and OUT_DIR/result.json (the port, the answers' tools and whether each was an error).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.mcp_helpers import CODECTX, free_port, http_session, server_env


async def drive(url: str) -> list[tuple[str, bool]]:
    async with http_session(url) as rec:
        await rec.call("index_status", {"wait": True})
        await rec.call("search_code", {"query": "payment", "k": 5})
        await rec.call("find_definition", {"symbol": "charge"})
        await rec.call("read_code", {"path": "README.md", "end_line": 5})
        return [(a.tool, a.is_error) for a in rec.answers]


def main() -> int:
    workspace, out = Path(sys.argv[1]), Path(sys.argv[2])
    port = free_port()
    env = server_env(out / "state")
    log = out / "strace.log"
    command = ["strace", "-f", "-qq", "-e", "trace=connect,bind", "-o", str(log), *CODECTX]
    server = subprocess.Popen(
        [*command, "mcp", "--http", f"127.0.0.1:{port}", str(workspace)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(out / "server.log").open("wb"),
        start_new_session=True,  # strace and the server in one group: both are stopped at the end
    )
    try:
        import socket

        for _ in range(900):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        answers = asyncio.run(drive(f"http://127.0.0.1:{port}/mcp"))
    finally:
        # Terminating strace alone would leave the traced server running: stop the whole group.
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=20)
    (out / "result.json").write_text(json.dumps({"port": port, "answers": answers, "pid": os.getpid()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
