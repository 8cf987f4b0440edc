"""The server's log reaches the editor as window/logMessage; stderr stays free of warnings.

Editors print a server's stderr as errors, so these tests read the real
server's stderr while it starts, indexes (embedding model and ONNX Runtime
included) and logs, and check that nothing lands there.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from codectx.lsp.logs import LspLogHandler, message_type
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_helpers import index_finished, lsp_session, make_repo, server_env, wait_for

ORT_SCRIPT = """
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

graph = helper.make_graph(
    [helper.make_node("Identity", ["x"], ["y"])],
    "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    # An initializer no node uses: ONNX Runtime warns about it when the session is created.
    initializer=[numpy_helper.from_array(np.zeros(1, dtype=np.float32), "unused")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
save(model, sys.argv[1])
if sys.argv[2] == "quiet":
    from codectx.lsp.logs import quiet_libraries

    quiet_libraries()
import onnxruntime

onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
"""


@pytest.mark.parametrize("mode", ["loud", "quiet"])
def test_onnxruntime_warnings_are_silenced_before_sessions(tmp_path: Path, mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", ORT_SCRIPT, str(tmp_path / "m.onnx"), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    if mode == "loud":  # the control: without codectx's setting, ONNX Runtime does warn on stderr
        assert "Removing initializer 'unused'" in done.stderr
    else:
        assert done.stderr == ""


class FakeServer:
    def __init__(self) -> None:
        self.sent: list[tuple[types.MessageType, str, str]] = []

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.sent.append((params.type, params.message, threading.current_thread().name))
        logging.getLogger("pygls.protocol").debug("sending %s", params)  # as pygls does; no loop


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_records_and_warnings_become_log_messages() -> None:
    fallback = Collect()
    handler = LspLogHandler(fallback)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("codectx.test_logs")
    loggers = [logger, logging.getLogger("py.warnings"), logging.getLogger("pygls.protocol")]
    for each in loggers:
        each.addHandler(handler)
        each.setLevel(logging.DEBUG)
        each.propagate = False
    logging.captureWarnings(True)
    try:
        logger.info("early info")  # before the session: kept, sent once attached
        logger.error("early error")  # before the session: errors stay visible on stderr
        assert [r.getMessage() for r in fallback.records] == ["early error"]
        server = FakeServer()
        loop = asyncio.get_running_loop()
        handler.attach(server, loop)
        logger.warning("on the loop")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library warning", UserWarning, stacklevel=1)
        thread = threading.Thread(target=lambda: logger.debug("from a worker"), name="worker")
        thread.start()
        thread.join()
        await asyncio.sleep(0.05)  # the worker's record hops onto the loop
    finally:
        logging.captureWarnings(False)
        for each in loggers:
            each.removeHandler(handler)
            each.propagate = True
            each.setLevel(logging.NOTSET)
    kinds = [(kind, message.split(":")[0]) for kind, message, _ in server.sent]
    assert kinds[0] == (types.MessageType.Info, "INFO codectx.test_logs")
    assert "early info" in server.sent[0][1]
    assert (types.MessageType.Warning, "WARNING codectx.test_logs") in kinds
    warned = [m for k, m, _ in server.sent if k == types.MessageType.Warning and "a library warning" in m]
    assert warned and "UserWarning" in warned[0]
    worker = [entry for entry in server.sent if "from a worker" in entry[1]]
    assert worker and worker[0][0] == types.MessageType.Log
    assert worker[0][2] != "worker"  # sent from the loop's thread, not the worker's
    assert not any("sending" in m for _, m, _ in server.sent)  # no feedback loop through pygls' log
    assert len(fallback.records) == 1
    assert message_type(logging.CRITICAL) == types.MessageType.Error


async def test_server_stderr_has_no_warnings_while_starting_and_indexing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "calc" / "bad.py").write_bytes(b"def broken(:\n    \xff\xfe return\n")  # bad syntax, bad UTF-8
    stderr: list[bytes] = []
    opts: dict[str, Any] = {"codectx": {"lsp": {"debounce_ms": -5}}}  # an invalid setting: reported
    async with lsp_session(tmp_path, repo, opts, stderr=stderr) as lsp:
        await wait_for(lambda: index_finished(lsp), timeout=300)
        with pytest.raises(JsonRpcException):
            await lsp.protocol.send_request_async("codectx/search", {"query": ""})
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        assert status["folders"][0]["state"] == "ready"
        assert status["folders"][0]["vectors"] > 0  # the embedding model really ran (ONNX Runtime)
        await wait_for(lambda: any("setting ignored" in m.message for m in lsp.log_messages), timeout=10)
        await asyncio.sleep(0.5)
    text = b"".join(stderr).decode("utf-8", errors="replace")
    assert text == "", f"the server wrote to stderr:\n{text}"
    ignored = [m for m in lsp.log_messages if "setting ignored" in m.message]
    assert ignored[0].type == types.MessageType.Info and "codectx.lsp" in ignored[0].message
    assert any(
        "codectx/search needs a query" in m.message or "needs a query" in m.message for m in lsp.log_messages
    )
