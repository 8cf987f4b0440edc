"""`codectx/health` and `codectx/healthChanged` through the real `codectx lsp` process.

The backend side is probed against loopback servers: a port nobody listens
on (connection refused), the fault server answering /v1/models, and the
fixed-answer model server for completions. The real vLLM engine is probed in
test_lsp_vllm.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.support.faultserver import FaultServer, free_port, models, status
from tests.support.lsp_helpers import (
    FixedBackend,
    index_finished,
    lsp_session,
    open_doc,
    plain,
    wait_for,
)


def options(url: str | None, **backend: Any) -> dict[str, Any]:
    return {
        "codectx": {
            "backend": {"url": url, **backend} if url else backend,
            "index": {"embed": False},
            "lsp": {"index_on_open": False, "debounce_ms": 0},
        }
    }


async def health(lsp: Any, probe: bool | None = None) -> dict[str, Any]:
    params = {} if probe is None else {"probe": probe}
    return plain(await lsp.protocol.send_request_async("codectx/health", params))  # type: ignore[no-any-return]


def completion_params(uri: str) -> types.CompletionParams:
    return types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=16, character=4)
    )


async def test_probe_refused_then_working_server_and_notifications(tmp_path: Path, repo: Path) -> None:
    refused = f"http://127.0.0.1:{free_port()}/v1"
    server = FaultServer(routes={"/v1/models": models("fault-model", max_model_len=2048)}).start()
    try:
        async with lsp_session(tmp_path, repo, options(refused)) as lsp:
            before = await health(lsp)
            assert before["backend"]["state"] == "unknown"  # nothing tried yet, and no probe asked
            assert before["backend"]["endpoint"] == refused
            assert before["backend"]["checked_at"] == 0

            started = time.time()
            down = await health(lsp, probe=True)
            backend = down["backend"]
            assert backend["state"] == "unreachable", backend
            assert backend["endpoint"] == refused
            assert backend["error"] and backend["model"] is None and backend["latency_ms"] is None
            assert backend["checked_at"] >= started - 1
            await wait_for(lambda: lsp.health_events, timeout=10)
            assert lsp.health_events[-1] == backend  # the push carries the same object

            # The same answer without probing: the last known state, and no new notification.
            assert (await health(lsp))["backend"] == backend
            # Probing again while down is no change, so no second notification.
            assert (await health(lsp, probe=True))["backend"]["state"] == "unreachable"
            assert len(lsp.health_events) == 1

            lsp.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=options(server.url))
            )
            # The new settings land asynchronously (the server pulls folder settings first).
            for _ in range(100):
                up = (await health(lsp, probe=True))["backend"]
                if up["endpoint"] == server.url:
                    break
            assert up["state"] == "ok", up
            assert up["model"] == "fault-model"
            assert up["endpoint"] == server.url
            assert up["error"] is None
            assert isinstance(up["latency_ms"], float) and up["latency_ms"] >= 0
            assert any(r.method == "GET" and r.path == "/v1/models" for r in server.requests)
            await wait_for(lambda: len(lsp.health_events) >= 2, timeout=10)
            assert [e["state"] for e in lsp.health_events] == ["unreachable", "ok"]
    finally:
        server.stop()


async def test_unserved_model_and_rejection_are_errors(tmp_path: Path, repo: Path) -> None:
    server = FaultServer(
        routes={"/v1/models": models("other-model")},
    ).start()
    try:
        async with lsp_session(tmp_path, repo, options(server.url, model="wanted-model")) as lsp:
            backend = (await health(lsp, probe=True))["backend"]
            assert backend["state"] == "error"
            assert "wanted-model" in backend["error"] and "other-model" in backend["error"]
            assert isinstance(backend["latency_ms"], float)  # it answered; the answer is wrong

            server.routes["/v1/models"] = status(401, "invalid API key")
            backend = (await health(lsp, probe=True))["backend"]
            assert backend["state"] == "error", backend
            assert "401" in backend["error"] or "invalid API key" in backend["error"]

            server.routes["/v1/models"] = status(503, "loading")
            assert (await health(lsp, probe=True))["backend"]["state"] == "unreachable"
    finally:
        server.stop()


async def test_no_backend_is_disabled(tmp_path: Path, repo: Path) -> None:
    async with lsp_session(tmp_path, repo, options(None)) as lsp:
        backend = (await health(lsp))["backend"]
        assert backend["state"] == "disabled" and "backend.url" in backend["error"]
        probed = (await health(lsp, probe=True))["backend"]
        assert probed["state"] == "disabled" and probed["endpoint"] == ""


async def test_bad_params_are_refused(tmp_path: Path, repo: Path) -> None:
    from pygls.exceptions import JsonRpcException

    async with lsp_session(tmp_path, repo, options(None)) as lsp:
        with pytest.raises(JsonRpcException, match="probe"):
            await health(lsp, probe="yes")  # type: ignore[arg-type]


async def test_completions_update_last_known_state(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend().start()
    async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        result = await lsp.text_document_completion_async(completion_params(uri))
        assert result.items
        ok = (await health(lsp))["backend"]
        assert ok["state"] == "ok" and ok["model"] == "fixed-test-model"
        assert ok["checked_at"] > 0

        backend.stop()  # the model server goes away between two keystrokes
        result = await lsp.text_document_completion_async(completion_params(uri))
        assert list(result.items) == []
        down = (await health(lsp))["backend"]
        assert down["state"] == "unreachable" and down["error"] and down["model"] is None
        await wait_for(lambda: len(lsp.health_events) >= 2, timeout=10)
        assert [e["state"] for e in lsp.health_events] == ["ok", "unreachable"]


async def test_index_summary(tmp_path: Path, repo: Path) -> None:
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"debounce_ms": 0}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        first = (await health(lsp))["index"]
        assert first["state"] in ("indexing", "empty", "ready")
        await wait_for(lambda: index_finished(lsp), timeout=240)
        index = (await health(lsp))["index"]
        assert index["state"] == "ready", index
        assert index["files"] == 4
        assert index["chunks"] > 0
        assert index["vectors_pending"] == 0  # vectors are off here, so none are owed

    empty = tmp_path / "empty"
    (empty / ".git").mkdir(parents=True)
    async with lsp_session(tmp_path, empty, opts) as lsp:
        await wait_for(lambda: index_finished(lsp), timeout=240)
        index = (await health(lsp))["index"]
        assert index == {
            "state": "empty",
            "files": 0,
            "chunks": 0,
            "vectors_pending": 0,
            "near_open_files": None,
        }
