"""textDocument/inlineCompletion (LSP 3.18): the model's suggestion as ghost text.

Same request discipline as completion (codectx.lsp.suggest). The item
inserts the suggestion at the cursor, except on a line that holds only
indentation before the cursor: there it replaces from the line start, with
that indentation prepended to the text. Editors that manage indentation on
their own (VS Code re-indents blank lines and trims "auto whitespace" when an
edit lands elsewhere on the line) would otherwise double the indentation or
drop it; the range stays on one line and ends at the cursor, as LSP 3.18 and
VS Code's InlineCompletionItem require ("prefer replacements over
insertions"), and the replaced text is a prefix of the new text, so clients
still show the item.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codectx.lsp.handlers import guarded
from codectx.lsp.positions import Codec, client_position
from codectx.lsp.suggest import suggestion_at
from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.server import CodectxServer


def inline_edit(
    lines: list[str], line: int, column: int, suggestion: str, codec: Codec
) -> tuple[types.Range, str]:
    """(range, insertText) of the suggestion at (line, column): from the line start after indentation."""
    here = client_position(lines, line, column, codec)
    before = lines[line][:column]
    if before and not before.strip():
        return types.Range(start=types.Position(line=here.line, character=0), end=here), before + suggestion
    return types.Range(start=here, end=here), suggestion


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
        rng, text = inline_edit(found.lines, found.line, found.column, found.text, found.codec)
        return types.InlineCompletionList(
            items=[
                types.InlineCompletionItem(
                    insert_text=text,
                    range=rng,
                    command=types.Command(
                        title="codectx suggestion accepted",
                        command="codectx.accepted",
                        arguments=[{"requestId": found.request_id}],
                    ),
                )
            ]
        )
