"""textDocument/inlineCompletion (LSP 3.18): the model's suggestion as ghost text.

Same request discipline as completion (codectx.lsp.suggest); the item
inserts the suggestion at the cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codectx.lsp.positions import client_position
from codectx.lsp.server import guarded
from codectx.lsp.suggest import suggestion_at
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
        found = await suggestion_at(ls, "inline", params.text_document.uri, params.position)
        if found is None:
            return _empty()
        here = client_position(found.lines, found.line, found.column, found.codec)
        return types.InlineCompletionList(
            items=[
                types.InlineCompletionItem(
                    insert_text=found.text,
                    range=types.Range(start=here, end=here),
                    command=types.Command(
                        title="codectx suggestion accepted",
                        command="codectx.accepted",
                        arguments=[{"requestId": found.request_id}],
                    ),
                )
            ]
        )
