"""Background indexing through the real server: progress, serving while indexing, freshness, search."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_helpers import lsp_session, open_doc, plain, progress_events, wait_for


def _ended(lsp: object) -> int:
    return sum(isinstance(v, types.WorkDoneProgressEnd) for v in progress_events(lsp))


async def test_initialize_builds_index_with_progress_then_search(tmp_path: Path, repo: Path) -> None:
    async with lsp_session(tmp_path, repo, {"codectx": {"lsp": {"debounce_ms": 0}}}) as lsp:
        await wait_for(lambda: _ended(lsp) >= 1, timeout=240)
        events = progress_events(lsp)
        begins = [e for e in events if isinstance(e, types.WorkDoneProgressBegin)]
        ends = [e for e in events if isinstance(e, types.WorkDoneProgressEnd)]
        assert begins and "indexing" in begins[0].title
        last = ends[-1].message or ""
        assert "files" in last and "chunks" in last and "vectors" in last
        # Only files we wrote are indexed; the report says how many.
        status = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.status")
        )
        folder = status["folders"][0]
        assert folder["state"] == "ready", folder
        assert folder["files"] == 4
        health = plain(await lsp.protocol.send_request_async("codectx/health", {}))
        assert health["index"]["state"] == "ready"
        assert health["index"]["files"] == 4 and health["index"]["chunks"] > 0
        assert health["index"]["vectors_pending"] == 0  # every chunk got its vector

        locations = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="codectx.search", arguments=[{"query": "multiply every value", "k": 3}]
            )
        )
        assert locations, "search returned nothing"
        assert locations[0]["uri"] == (repo / "calc" / "ops.py").resolve().as_uri()
        assert locations[0]["range"]["start"]["line"] == 8  # def scale(...)

        custom = await lsp.protocol.send_request_async("codectx/search", {"query": "scale", "k": 2})
        assert custom.results[0].symbol == "scale"  # pygls hands custom results back as objects


async def test_requests_served_while_index_builds(tmp_path: Path, repo: Path) -> None:
    """Before any index exists, search answers with a clear error and the server keeps going."""
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"index_on_open": False}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        with pytest.raises(JsonRpcException, match="no index is ready"):
            await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.search", arguments=[{"query": "scale"}])
            )
        result = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.reindex", arguments=[{"wait": True}])
        )
        assert result["folders"][0]["state"] == "ready"
        locations = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.search", arguments=[{"query": "scale"}])
        )
        assert any(loc["uri"].endswith("calc/ops.py") for loc in locations)


async def test_saved_file_is_reindexed(tmp_path: Path, repo: Path) -> None:
    opts = {"codectx": {"index": {"embed": False}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        await wait_for(lambda: _ended(lsp) >= 1, timeout=240)
        path = repo / "calc" / "extra.py"
        path.write_text("def frobnicate_widgets(count):\n    return count * 3\n")
        uri = open_doc(lsp, path)
        lsp.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await wait_for(lambda: _ended(lsp) >= 2, timeout=120)
        locations = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.search", arguments=[{"query": "frobnicate_widgets"}])
        )
        assert locations and locations[0]["uri"].endswith("calc/extra.py")


async def test_watched_files_registered_dynamically(tmp_path: Path, repo: Path) -> None:
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"index_on_open": False}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:  # VS Code's capabilities: dynamic registration
        await wait_for(lambda: lsp.registrations, timeout=20)
        assert lsp.registrations[0].method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        path = repo / "calc" / "watched.py"
        path.write_text("def quux_watch_marker():\n    return 1\n")
        lsp.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Created)]
            )
        )
        await wait_for(lambda: _ended(lsp) >= 1, timeout=120)
        locations = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.search", arguments=[{"query": "quux_watch_marker"}])
        )
        assert locations and locations[0]["uri"].endswith("calc/watched.py")


async def test_vectors_near_the_open_document_are_reported(tmp_path: Path) -> None:
    """An indexed folder without vectors: the open document's neighbourhood (its folder here) is
    embedded first, and `codectx/health` says how far it has got."""
    from codectx.indexer.storage.store import IndexStore

    from tests.support.indexes import build_index
    from tests.support.workspace import write_workspace

    files = {f"near/n{i}.py": f"def near_{i}(x):\n    return x + {i}\n" for i in range(2)}
    files |= {f"far/f{i}.py": f"def far_{i}(x):\n    return x * {i}\n" for i in range(12)}
    root = write_workspace(tmp_path / "ws", files)
    build_index(root)  # lexical only: every vector is owed
    near = {c.chunk.content_hash for c in IndexStore.open(root / ".codectx").chunks_of_files(list(files)[:2])}
    opts = {"codectx": {"index": {"embed": True, "embed_backend": "torch"}}}
    async with lsp_session(tmp_path, root, opts) as lsp:
        open_doc(lsp, root / "near" / "n0.py")  # before the first check ends its wait for an answer
        await wait_for(lambda: _ended(lsp) >= 1, timeout=240)
        index = plain(await lsp.protocol.send_request_async("codectx/health", {}))["index"]
        assert index["vectors_pending"] == 0, index
        assert index["near_open_files"] == {"vectors": len(near), "vectors_total": len(near)}, index
