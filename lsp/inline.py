"""textDocument/inlineCompletion (LSP 3.18): the model's suggestion as ghost text.

Same request discipline as completion (codectx.lsp.suggest); the item
inserts the suggestion at the cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codectx.lsp.positions import Codec, clamp, client_position, split_lines
from codectx.lsp.server import guarded
from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.server import CodectxServer


def _empty() -> types.InlineCompletionList:
    return types.InlineCompletionList(items=[])


def register(server: CodectxServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @guarded(default=_empty)
    async def inline_completion(
        ls: CodectxServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        """Awaits the backend for at most lsp.request_budget_ms; never blocks the loop."""
        folder, _path, rel, text = ls.document(params.text_document.uri)
        if not folder.settings.lsp.completion:
            return _empty()
        lines = split_lines(text)
        codec = Codec.of(ls.workspace.position_encoding)
        line, column = clamp(lines, params.position, codec)
        suggestion, request_id = await ls.suggester.suggest(
            "inline", params.text_document.uri, folder, rel, "\n".join(lines), line, column
        )
        if not suggestion.strip():
            return _empty()
        here = client_position(lines, line, column, codec)
        return types.InlineCompletionList(
            items=[
                types.InlineCompletionItem(
                    insert_text=suggestion,
                    range=types.Range(start=here, end=here),
                    command=types.Command(
                        title="codectx suggestion accepted",
                        command="codectx.accepted",
                        arguments=[{"requestId": request_id}],
                    ),
                )
            ]
        )
