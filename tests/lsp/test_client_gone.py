"""An editor that dies (its pipe closed, no `shutdown`) while the server indexes: the run stops
at its next step and says so, instead of crashing on executors that refuse work at exit."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from tests.support.lsp_helpers import SERVER_COMMAND, server_env
from tests.support.workspace import write_workspace


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_client_that_disappears_mid_index_stops_the_run_cleanly(tmp_path: Path) -> None:
    # Enough code that the vectors are still being computed when the pipe closes.
    files = {
        f"pkg/mod{i:03d}.py": "\n\n".join(
            f"def step_{i}_{j}(value: int) -> int:\n    total = value * {j} + {i}\n    return total - {j}"
            for j in range(6)
        )
        for i in range(300)
    }
    ws = write_workspace(tmp_path / "ws", files)
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [*SERVER_COMMAND, "--log-file", str(log)],
        cwd=ws,
        env=server_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None
        folder = {"uri": ws.as_uri(), "name": "ws"}
        params = {"processId": None, "rootUri": ws.as_uri(), "capabilities": {}, "workspaceFolders": [folder]}
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.flush()
        for _ in range(600):  # until the run has written its chunks: the vectors come next
            if any((ws / ".codectx" / "db").glob("chunks.lance/data/*")):
                break
            time.sleep(0.1)
        proc.stdin.close()  # the editor is gone
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=20)
    text = _text(log)
    assert "crashed" not in text, text[-3000:]
    # At its next step, or at an executor that refuses work as the process exits: either way a
    # stop the keeper expected (INFO), not a crash (ERROR with a traceback).
    assert re.search(r"INFO codectx\.app\.keeper: indexing .* stopped", text), text[-3000:]


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
