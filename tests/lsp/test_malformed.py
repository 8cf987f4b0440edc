"""Malformed and out-of-range requests to the real `codectx lsp`, over a raw stdio connection.

A client library would refuse to send most of these, so this test writes JSON-RPC frames
itself: negative and huge positions, params of the wrong type, ids without methods, ids of
the wrong type, no `jsonrpc`, a batch, a body that is not JSON, a second `initialize`. Every
id must get an answer (an error or an empty result), no `window/showMessage` may follow
them, and afterwards the server still indexes, answers health and finds a function.

The workspace also has ignore files with lines pathspec refuses, a file name that is not UTF-8
and a named pipe `calc/pipe.py` (requests for it are refused, not left waiting on a read): the
folder must still index (not go to "failed").
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp_helpers import SERVER_COMMAND, make_repo, server_env

pytestmark = pytest.mark.slow

WAIT_S = 180.0  # a hang guard for the whole exchange, not a timing goal


class RawClient:
    """Content-Length framed JSON-RPC over the server's stdin/stdout, nothing validated."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.answers: dict[Any, dict[str, Any]] = {}
        self.null_answers: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode())

    def pump(self, until: float) -> None:
        """Take what has arrived (answers server requests so it never waits on us)."""
        while True:
            timeout = max(0.0, until - time.monotonic())
            try:
                msg = self.messages.get(timeout=min(timeout, 0.2))
            except queue.Empty:
                return
            if "method" in msg and "id" in msg:  # a request from the server
                result: Any = None
                if msg["method"] == "workspace/configuration":
                    result = [None for _ in msg["params"]["items"]]
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            elif "method" in msg:
                self.notifications.append(msg)
            elif msg.get("id") is None:
                self.null_answers.append(msg)
            else:
                self.answers[msg["id"]] = msg
            if time.monotonic() >= until:
                return

    def request(self, msg_id: Any, method: str, params: Any) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait(msg_id)

    def wait(self, msg_id: Any, limit_s: float = WAIT_S) -> dict[str, Any]:
        end = time.monotonic() + limit_s
        while msg_id not in self.answers and time.monotonic() < end:
            self.pump(min(end, time.monotonic() + 0.5))
        assert msg_id in self.answers, f"no answer to {msg_id!r}"
        return self.answers[msg_id]


def hostile_workspace(root: Path) -> Path:
    make_repo(root)
    (root / ".gitignore").write_text("\\\n!\nfoo\\\n*.log\n")
    (root / "calc" / ".codectxignore").write_text("[z-a]\n")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "wb") as fh:
        fh.write(b"def cafe():\n    pass\n")
    os.mkfifo(root / "calc" / "pipe.py")  # a plain read of it blocks until someone writes
    return root


def bad_positions(uri: str) -> list[dict[str, Any]]:
    doc = {"uri": uri}
    positions = [
        {"line": 0, "character": -1},
        {"line": -1, "character": 0},
        {"line": 0, "character": 2**31},
        {"line": 2**31, "character": 0},
        {"line": 0, "character": 10**12},
        {"line": 10**12, "character": 10**12},
        {"line": 10**6, "character": 0},  # valid numbers, far past the end of the document
        {"line": 3, "character": 10**6},
        {"line": "3", "character": 0},
        {"line": 1.5, "character": 0},
        {"line": None, "character": 0},
        {},
    ]
    return [{"textDocument": doc, "position": p} for p in positions]


def malformed(uri: str) -> list[tuple[str, Any]]:
    """(method, params) pairs that do not fit, or point nowhere."""
    cases: list[tuple[str, Any]] = []
    for method in ("textDocument/completion", "textDocument/inlineCompletion"):
        for params in bad_positions(uri):
            if method.endswith("inlineCompletion"):
                params = {**params, "context": {"triggerKind": 1}}
            cases.append((method, params))
    for start, end in [
        ({"line": 0, "character": -1}, {"line": 0, "character": 1}),
        ({"line": 5, "character": 0}, {"line": 1, "character": 0}),  # inverted
        ({"line": 0, "character": 0}, {"line": 10**6, "character": 10**6}),
        ({"line": 2**31, "character": 0}, {"line": 0, "character": 0}),
    ]:
        cases.append(
            (
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": uri},
                    "range": {"start": start, "end": end},
                    "context": {"diagnostics": []},
                },
            )
        )
    for method in (
        "textDocument/completion",
        "textDocument/inlineCompletion",
        "textDocument/codeAction",
        "workspace/executeCommand",
        "codectx/search",
        "codectx/context",
        "codectx/health",
        "textDocument/hover",
        "shutdownx",
    ):
        for params in (
            "a string",
            5,
            [1, 2],
            True,
            {"textDocument": 5},
            {"textDocument": {"uri": 7}},
            {"textDocument": {"uri": uri}},  # no position or range
            {"position": {"line": 0, "character": 0}},  # no document
        ):
            cases.append((method, params))
    cases += [
        (
            "textDocument/completion",
            {"textDocument": {"uri": "file:///nowhere/else.py"}, "position": {"line": 0, "character": 0}},
        ),
        (
            "textDocument/completion",
            {"textDocument": {"uri": "not a uri"}, "position": {"line": 0, "character": 0}},
        ),
        ("workspace/executeCommand", {"command": "codectx.search", "arguments": [{"query": 5}]}),
        ("workspace/executeCommand", {"command": "codectx.nothing", "arguments": []}),
        ("workspace/executeCommand", {"command": 42}),
        ("codectx/search", {"query": None}),
        ("codectx/search", {"query": "x", "k": -5}),
        ("codectx/search", {"query": "x", "k": "many"}),
        ("codectx/context", {"uri": uri, "line": -3, "character": 2**40}),
        ("codectx/context", {"uri": 12}),
    ]
    # A named pipe the editor has not opened: read from disk, it must be refused, not waited on.
    pipe = uri.rsplit("/", 1)[0] + "/pipe.py"
    cases += [
        ("textDocument/completion", {"textDocument": {"uri": pipe}, "position": {"line": 0, "character": 0}}),
        ("codectx/context", {"uri": pipe, "line": 0, "character": 0}),
    ]
    return cases


def test_every_malformed_request_is_answered_and_the_server_keeps_working(tmp_path: Path) -> None:
    root = hostile_workspace(tmp_path / "ws")
    proc = subprocess.Popen(
        SERVER_COMMAND,
        cwd=root,
        env=server_env(tmp_path),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    client = RawClient(proc)
    try:
        init = {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
            "initializationOptions": {"codectx": {"index": {"embed": False}}},
        }
        assert "result" in client.request(1, "initialize", init)
        client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        uri = (root / "calc" / "ops.py").as_uri()
        text = (root / "calc" / "ops.py").read_text()
        client.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
            }
        )

        sent: list[Any] = []
        next_id = 100
        for method, params in malformed(uri):
            client.send({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params})
            sent.append(next_id)
            next_id += 1
        # Messages pygls could not classify: each must still be answered.
        odd = [
            {"jsonrpc": "2.0", "id": "no-method"},  # an id without a method
            {"jsonrpc": "2.0", "id": "method-5", "method": 5},
            {"id": "no-jsonrpc", "method": "textDocument/completion", "params": {}},
            {"jsonrpc": "1.0", "id": "old-jsonrpc", "method": "codectx/health"},
            {"jsonrpc": "2.0", "id": "again", "method": "initialize", "params": init},  # a second initialize
            {"jsonrpc": "2.0", "id": "no-params", "method": "textDocument/completion"},
        ]
        for message in odd:
            client.send(message)
            sent.append(message["id"])
        nulls_expected = 0
        for body in (
            b'{"jsonrpc": "2.0", "id": 9999, "method": ',  # not JSON: answered to null
            json.dumps([{"jsonrpc": "2.0", "id": 77, "method": "codectx/health"}]).encode(),  # a batch
            json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "codectx/health"}).encode(),
            b"42",
        ):
            client.send_raw(body)
            nulls_expected += 1

        answers = {i: client.wait(i) for i in sent}
        assert len(sent) >= 100
        for answer in answers.values():
            assert ("result" in answer) != ("error" in answer), answer
            if "error" in answer:
                assert answer["error"]["code"] in (-32600, -32601, -32602, -32603, -32803), answer
        assert answers["no-method"]["error"]["code"] == -32600
        assert answers["again"]["error"]["code"] == -32600
        assert answers[100]["error"]["code"] == -32602  # character -1
        assert "textDocument/completion" in answers[100]["error"]["message"]
        end = time.monotonic() + WAIT_S
        while len(client.null_answers) < nulls_expected and time.monotonic() < end:
            client.pump(time.monotonic() + 0.5)
        assert len(client.null_answers) == nulls_expected
        assert client.null_answers[0]["error"]["code"] == -32700

        # The server still works: the folder indexes (bad ignore lines and a non-UTF-8 name do
        # not fail it) and a search finds a function.
        found: dict[str, Any] = {}
        end = time.monotonic() + WAIT_S
        wait_id = 5000
        while time.monotonic() < end:
            health = client.request(wait_id, "codectx/health", {})
            wait_id += 1
            state = health["result"]["index"]["state"]
            assert state != "error", health
            if state == "ready" and health["result"]["index"]["files"]:
                found = client.request(wait_id, "codectx/search", {"query": "multiply every value by factor"})
                wait_id += 1
                if found.get("result", {}).get("results"):
                    break
            time.sleep(0.5)
        assert found["result"]["results"][0]["path"] == "calc/ops.py", found
        client.pump(time.monotonic() + 1.0)
        popups = [n for n in client.notifications if n["method"] == "window/showMessage"]
        assert not [p for p in popups if "Error in server" in p["params"]["message"]], popups
        logs = " ".join(
            n["params"]["message"] for n in client.notifications if n["method"] == "window/logMessage"
        )
        assert "invalid ignore pattern" in logs and "not valid UTF-8" in logs

        assert "result" in client.request(9000, "shutdown", None)
        after = client.request(9001, "codectx/health", {})  # answered, not dropped
        assert after["error"]["code"] == -32600 and "shutting down" in after["error"]["message"]
        client.send({"jsonrpc": "2.0", "method": "exit"})
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
