"""Code actions, resolve, and the refactor command through the real server and backend client."""

from __future__ import annotations

import ast
from pathlib import Path
from urllib.parse import urlparse

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.lsp_helpers import (
    _SHARED_CACHE,
    FixedBackend,
    apply_text_edits,
    capabilities,
    edits_for,
    lsp_session,
    open_doc,
    wait_for,
)

ADD_RANGE = types.Range(start=types.Position(line=3, character=0), end=types.Position(line=6, character=0))


def options(url: str) -> dict:
    return {"codectx": {"backend": {"url": url}, "index": {"embed": False}, "lsp": {"index_on_open": False}}}


def action_params(
    uri: str, rng: types.Range = ADD_RANGE, only: list[str] | None = None, diagnostics=()
) -> types.CodeActionParams:
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=rng,
        context=types.CodeActionContext(diagnostics=list(diagnostics), only=only),
    )


async def test_code_action_resolve_gives_minimal_valid_edit(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend().start()
    try:
        async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
            path = repo / "calc" / "ops.py"
            text = path.read_text()
            uri = open_doc(lsp, path)
            actions = await lsp.text_document_code_action_async(action_params(uri))
            titles = [a.title for a in actions]
            assert any("Add docstring" in t for t in titles)
            assert any("Add type annotations" in t for t in titles)
            assert any("Explain" in t for t in titles)
            assert all(a.edit is None for a in actions)  # listing never calls the model
            # (the start-up asked the server for stop-token ids: a built-in sample, no model call)
            assert [r for r in backend.requests if not r["path"].endswith("/tokenize")] == []

            docstring = next(a for a in actions if "Add docstring" in a.title)
            resolved = await lsp.code_action_resolve_async(docstring)
            edits = edits_for(resolved.edit, uri)
            assert len(edits) == 1
            after = apply_text_edits(text, edits)
            ast.parse(after)  # the result is valid Python
            assert 'def add(left: int, right: int) -> int:\n    """Add two numbers."""' in after
            assert after.split("def scale")[1] == text.split("def scale")[1]  # untouched
            # Minimal: the edit starts inside the function, not at the top of the file.
            assert edits[0].range.start.line == 3 and edits[0].range.end.line <= 6
            chat = [r for r in backend.requests if r["path"].endswith("/chat/completions")]
            assert len(chat) == 1 and "def add(left, right)" in chat[0]["raw"].decode()
    finally:
        backend.stop()


async def test_edit_that_does_not_parse_is_refused(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend(
        chat=lambda body: "```python\ndef add(left, right:\n    return (left +\n```"
    ).start()
    try:
        async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
            path = repo / "calc" / "ops.py"
            uri = open_doc(lsp, path)
            actions = await lsp.text_document_code_action_async(action_params(uri))
            rewrite = next(a for a in actions if "Rewrite" in a.title)
            with pytest.raises(JsonRpcException, match="does not parse"):
                await lsp.code_action_resolve_async(rewrite)
            # Refused here, but sent: "show context" has the request that left.
            shown = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.showContext", arguments=[{}])
            )
            assert shown["kind"] == "refactor" and shown["status"] == "error", shown
            assert "def add(left, right)" in shown["payload"] and shown["audit_id"]
    finally:
        backend.stop()


async def test_only_filter_and_diagnostic_fix(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend().start()
    try:
        async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
            uri = open_doc(lsp, repo / "calc" / "ops.py")
            diag = types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=4, character=4), end=types.Position(line=4, character=9)
                ),
                message="Missing type annotation",
            )
            quick = await lsp.text_document_code_action_async(
                action_params(uri, only=["quickfix"], diagnostics=[diag])
            )
            assert [a.kind for a in quick] == ["quickfix.codectx"]
            assert "Missing type annotation" in quick[0].title
            refactors = await lsp.text_document_code_action_async(
                action_params(uri, only=["refactor.rewrite"])
            )
            assert refactors and all(a.kind.startswith("refactor.rewrite") for a in refactors)
    finally:
        backend.stop()


async def test_refactor_command_with_instruction_and_apply(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend().start()
    try:
        async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
            path = repo / "calc" / "ops.py"
            text = path.read_text()
            uri = open_doc(lsp, path)
            args = {
                "uri": uri,
                "range": {"start": {"line": 3, "character": 0}, "end": {"line": 6, "character": 0}},
                "instruction": "annotate the types",
                "apply": True,
            }
            edit = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.refactor", arguments=[args])
            )
            assert edit is not None
            assert len(lsp.applied_edits) == 1  # the server asked the editor to apply it
            after = apply_text_edits(text, edits_for(lsp.applied_edits[0], uri))
            ast.parse(after)
            assert "-> int" in after
            sent = [r for r in backend.requests if r["path"].endswith("/chat/completions")][-1]
            assert "annotate the types" in sent["raw"].decode()
            shown = await lsp.workspace_execute_command_async(
                types.ExecuteCommandParams(command="codectx.showContext")
            )
            assert shown["kind"] == "refactor" and shown["payload"].encode() == sent["raw"]

            with pytest.raises(JsonRpcException, match="instruction"):
                await lsp.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="codectx.refactor", arguments=[{**args, "instruction": ""}]
                    )
                )
    finally:
        backend.stop()


async def test_explain_opens_a_markdown_document(tmp_path: Path, repo: Path) -> None:
    answer = "It adds two numbers and returns the sum.\n\nNothing else happens."
    backend = FixedBackend(chat=lambda body: answer).start()
    try:
        async with lsp_session(tmp_path, repo, options(backend.url)) as lsp:
            uri = open_doc(lsp, repo / "calc" / "ops.py")
            actions = await lsp.text_document_code_action_async(action_params(uri))
            explain = next(a for a in actions if "Explain" in a.title)
            resolved = await lsp.code_action_resolve_async(explain)
            assert resolved.edit is None
            await wait_for(lambda: lsp.shown_documents, timeout=10)
            shown = lsp.shown_documents[0]
            assert shown.take_focus and not shown.external
            path = Path(urlparse(shown.uri).path)
            # In the server's own cache folder, never in the workspace.
            assert path.parent == _SHARED_CACHE / "codectx" / "answers"
            assert repo not in path.parents and path.suffix == ".md"
            assert path.stat().st_mode & 0o077 == 0  # it quotes the user's code: owner-only
            text = path.read_text("utf-8")
            assert text.startswith("# Explanation of `calc/ops.py`, lines 4–")
            assert answer in text
            assert "def add(left, right):" in text  # the code explained, quoted below the answer
            assert not any("adds two numbers" in m.message for m in lsp.messages)
    finally:
        backend.stop()


async def test_explain_is_a_message_for_clients_without_show_document(tmp_path: Path, repo: Path) -> None:
    backend = FixedBackend(chat=lambda body: "It adds two numbers and returns the sum.").start()
    caps = capabilities()
    assert caps.window is not None
    caps.window.show_document = None
    try:
        async with lsp_session(tmp_path, repo, options(backend.url), caps=caps) as lsp:
            uri = open_doc(lsp, repo / "calc" / "ops.py")
            actions = await lsp.text_document_code_action_async(action_params(uri))
            explain = next(a for a in actions if "Explain" in a.title)
            resolved = await lsp.code_action_resolve_async(explain)
            assert resolved.edit is None
            await wait_for(lambda: any("adds two numbers" in m.message for m in lsp.messages), timeout=10)
            assert lsp.shown_documents == []
    finally:
        backend.stop()
