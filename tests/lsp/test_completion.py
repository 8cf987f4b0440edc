"""Completion and inline completion through the real server, the real backend client and
privacy gate, against a loopback model server with a fixed answer (and failure cases).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_helpers import (
    FIXED_COMPLETION,
    FixedBackend,
    apply_text_edits,
    lsp_session,
    open_doc,
    wait_for,
)

CURSOR = types.Position(line=16, character=4)  # the blank indented line in calc/report.py:main()


def options(url: str, **lsp: object) -> dict:
    return {
        "codectx": {
            "backend": {"url": url},
            "index": {"embed": False},  # no index in these tests: skip loading the embedding model
            "lsp": {"index_on_open": False, "debounce_ms": 0, **lsp},
        }
    }


def completion_params(uri: str, pos: types.Position = CURSOR) -> types.CompletionParams:
    return types.CompletionParams(text_document=types.TextDocumentIdentifier(uri=uri), position=pos)


async def test_completion_item_with_text_edit(tmp_path: Path, repo: Path, backend: FixedBackend) -> None:
    async with lsp_session(tmp_path, repo, options(backend.url), client="neovim") as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        result = await lsp.text_document_completion_async(completion_params(uri))
        assert len(result.items) == 1
        item = result.items[0]
        assert item.data["source"] == "codectx"
        assert item.text_edit.new_text == FIXED_COMPLETION
        assert item.text_edit.range.start == CURSOR and item.text_edit.range.end == CURSOR
        assert item.label.startswith("total = left")
        # The model saw a FIM prompt built from this document, through the real client.
        sent = backend.completions()
        assert len(sent) == 1
        prompt = sent[0]["body"]["prompt"]
        assert "<|fim_prefix|>" in prompt and "right = 2" in prompt
        assert sent[0]["body"]["stream"] is True


async def test_the_warm_up_asks_the_server_so_the_first_completion_does_not(
    tmp_path: Path, repo: Path, backend: FixedBackend
) -> None:
    """The model name and stop ids are asked while the editor starts, with built-in samples only."""

    def tokenizes() -> list[dict]:
        return [r for r in backend.requests if r["path"].endswith("/tokenize")]

    async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:  # waits for the warm-up
        assert any(p.rstrip("/").endswith("/models") for p in backend.gets)
        assert tokenizes() and not backend.completions()
        lines = [ln.strip() for ln in (repo / "calc" / "report.py").read_text().splitlines()]
        sent = " ".join(r["raw"].decode() for r in tokenizes())
        assert not [ln for ln in lines if len(ln) > 8 and ln in sent]  # samples only, no code
        asked = (len(backend.gets), len(tokenizes()))
        uri = open_doc(lsp, repo / "calc" / "report.py")
        result = await lsp.text_document_completion_async(completion_params(uri))
        assert result.items[0].text_edit.new_text == FIXED_COMPLETION
        assert (len(backend.gets), len(tokenizes())) == asked  # nothing asked again
        assert len(backend.completions()) == 1


async def test_completion_replaces_the_typed_word(tmp_path: Path, repo: Path, backend: FixedBackend) -> None:
    async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
        path = repo / "calc" / "report.py"
        text = path.read_text().replace("    \n    print", "    tot\n    print")
        uri = open_doc(lsp, path, text)
        result = await lsp.text_document_completion_async(
            completion_params(uri, types.Position(line=16, character=7))
        )
        edit = result.items[0].text_edit
        assert edit.range.start == types.Position(line=16, character=4)
        assert edit.range.end == types.Position(line=16, character=7)
        assert edit.new_text == "tot" + FIXED_COMPLETION


async def test_inline_completion(tmp_path: Path, repo: Path, backend: FixedBackend) -> None:
    async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        result = await lsp.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=CURSOR,
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
            )
        )
        # The cursor sits after indentation only: the item replaces from the line start, carrying
        # that indentation, so editors that re-indent blank lines do not double (or drop) it.
        assert [i.insert_text for i in result.items] == ["    " + FIXED_COMPLETION]
        assert result.items[0].range.start == types.Position(line=16, character=0)
        assert result.items[0].range.end == CURSOR
        text = (repo / "calc" / "report.py").read_text()
        after = apply_text_edits(text, [types.TextEdit(range=result.items[0].range, new_text="    total")])
        assert after.splitlines()[16] == "    total"  # accepting keeps exactly one indentation

        # After code on the line, the item inserts at the cursor as before.
        path = repo / "calc" / "report.py"
        typed = text.replace("    \n    print", "    tot\n    print")
        lsp.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=typed)],
            )
        )
        after_word = types.Position(line=16, character=7)
        result = await lsp.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=after_word,
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
            )
        )
        assert [i.insert_text for i in result.items] == [FIXED_COMPLETION]
        assert result.items[0].range.start == after_word == result.items[0].range.end
        assert path.read_text() == text  # the unsaved edit was used, the file left alone


async def test_show_context_is_the_exact_payload(tmp_path: Path, repo: Path, backend: FixedBackend) -> None:
    async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
        path = repo / "calc" / "report.py"
        secret_line = '    token = "ghp_' + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + '"\n'
        text = path.read_text().replace("    left = 1\n", "    left = 1\n" + secret_line)
        uri = open_doc(lsp, path, text)
        result = await lsp.text_document_completion_async(
            completion_params(uri, types.Position(line=17, character=4))
        )
        request_id = result.items[0].data["requestId"]
        shown = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.showContext", arguments=[{"requestId": request_id}])
        )
        raw = backend.completions()[-1]["raw"]
        assert shown["payload"].encode("utf-8") == raw  # byte for byte what the server received
        assert shown["endpoint"].endswith("/completions")
        assert "A1b2C3d4E5f6G7h8I9j0" not in shown["payload"]
        assert shown["redactions"], "the planted token was redacted and reported"
        assert all("A1b2C3d4" not in json.dumps(r) for r in shown["redactions"])


async def test_dead_backend_one_message_empty_results(tmp_path: Path, repo: Path) -> None:
    dead = FixedBackend().start()
    url = dead.url
    dead.stop()  # nothing listens there any more
    async with lsp_session(tmp_path, repo, options(url)) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        for _ in range(5):
            result = await lsp.text_document_completion_async(completion_params(uri))
            assert list(result.items) == []
        await wait_for(lambda: lsp.messages, timeout=10)
        await asyncio.sleep(0.3)
        about_backend = [m for m in lsp.messages if "suggestion" in m.message]
        assert len(about_backend) == 1, [m.message for m in lsp.messages]


async def test_no_backend_configured_says_how(tmp_path: Path, repo: Path) -> None:
    opts = {"codectx": {"index": {"embed": False}, "lsp": {"index_on_open": False, "debounce_ms": 0}}}
    async with lsp_session(tmp_path, repo, opts) as lsp:
        uri = open_doc(lsp, repo / "calc" / "report.py")
        for _ in range(3):
            result = await lsp.text_document_completion_async(completion_params(uri))
            assert list(result.items) == []
        await wait_for(lambda: lsp.messages, timeout=10)
        assert len(lsp.messages) == 1
        assert "backend.url" in lsp.messages[0].message


async def test_budget_returns_nothing_from_a_stalled_backend(tmp_path: Path, repo: Path) -> None:
    slow = FixedBackend(first_token_delay_s=8.0).start()
    try:
        async with lsp_session(tmp_path, repo, options(slow.url, request_budget_ms=1500)) as lsp:
            uri = open_doc(lsp, repo / "calc" / "report.py")
            result = await lsp.text_document_completion_async(completion_params(uri))
            assert list(result.items) == []
            # Answered on budget, not when the backend finally spoke: it had sent no text yet.
            assert slow.pieces_sent == 0
            # The abandoned stream was closed, so the model server stops generating.
            await wait_for(lambda: slow.disconnects >= 1, timeout=10)
    finally:
        slow.stop()


async def test_newer_request_supersedes_and_cancel_closes_stream(tmp_path: Path, repo: Path) -> None:
    slow = FixedBackend(first_token_delay_s=1.5).start()
    try:
        async with lsp_session(tmp_path, repo, options(slow.url, request_budget_ms=10000)) as lsp:
            uri = open_doc(lsp, repo / "calc" / "report.py")
            first = asyncio.ensure_future(lsp.text_document_completion_async(completion_params(uri)))
            await wait_for(lambda: len(slow.completions()) >= 1, timeout=10)
            second = asyncio.ensure_future(lsp.text_document_completion_async(completion_params(uri)))
            first_result, second_result = await asyncio.gather(first, second)
            assert list(first_result.items) == []  # superseded
            assert second_result.items[0].text_edit.new_text == FIXED_COMPLETION
            await wait_for(lambda: slow.disconnects >= 1, timeout=10)

            # $/cancelRequest: the client gives up; the server closes the backend stream.
            before = slow.disconnects
            third = asyncio.ensure_future(
                lsp.protocol.send_request_async(
                    types.TEXT_DOCUMENT_COMPLETION, completion_params(uri), msg_id="to-cancel"
                )
            )
            await wait_for(lambda: len(slow.completions()) >= 3, timeout=10)
            lsp.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="to-cancel"))
            with pytest.raises(JsonRpcException):  # answered "request cancelled"
                await asyncio.wait_for(third, timeout=10)
            await wait_for(lambda: slow.disconnects > before, timeout=10)
            shown = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.status")
            )
            assert shown["folders"]
    finally:
        slow.stop()
