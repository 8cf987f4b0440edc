"""textDocument/completion: the model's suggestion as one completion item.

For clients without inline completion (Neovim 0.11), the suggestion is an
item whose `textEdit` replaces the word typed so far with word + suggestion,
labelled and tagged (`data.source == "codectx"`) so it is recognisably
codectx's. Requests follow the discipline in codectx.lsp.suggest.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from codectx.lsp.handlers import guarded
from codectx.lsp.positions import Codec, client_position
from codectx.lsp.suggest import suggestion_at
from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.server import CodectxServer

_WORD_BEFORE = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z0-9_$]*$")  # starts at a word's start: linear
_INDENT = re.compile(r"[ \t]*")
LABEL_CHARS = 60


def _empty() -> types.CompletionList:
    return types.CompletionList(is_incomplete=True, items=[])


def snippet_escape(text: str) -> str:
    """Plain text as an LSP snippet that expands to exactly that text."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


def relative_indent(text: str, base: str) -> str:
    """Lines after the first with the current line's indentation removed.

    Clients re-indent snippet lines by the current line's indentation
    (insertTextMode adjustIndentation); the model's lines already carry it.
    """
    lines = text.split("\n")
    return "\n".join([lines[0], *[ln[len(base) :] if ln.startswith(base) else ln for ln in lines[1:]]])


def make_item(
    lines: list[str], line: int, column: int, suggestion: str, codec: Codec, request_id: str
) -> types.CompletionItem:
    """One item whose edit turns the typed word into word + suggestion."""
    word = _WORD_BEFORE.search(lines[line][:column])
    typed = word.group(0) if word else ""
    start = client_position(lines, line, column - len(typed), codec)
    end = client_position(lines, line, column, codec)
    new_text = typed + suggestion
    base_indent = _INDENT.match(lines[line]).group(0)  # type: ignore[union-attr]
    first = new_text.strip().splitlines()[0] if new_text.strip() else new_text
    label = first if len(first) <= LABEL_CHARS else first[: LABEL_CHARS - 1] + "…"
    extra = len(suggestion.splitlines()) - 1
    return types.CompletionItem(
        label=label,
        label_details=types.CompletionItemLabelDetails(
            detail=f" (+{extra} lines)" if extra > 0 else None, description="codectx"
        ),
        kind=types.CompletionItemKind.Snippet,
        detail="codectx AI suggestion",
        documentation=types.MarkupContent(kind=types.MarkupKind.Markdown, value=f"```\n{new_text}\n```"),
        sort_text="\x00codectx",
        filter_text=new_text,
        preselect=True,
        # A snippet, because editors such as Neovim 0.11 insert only the first word of a plain-text
        # item and apply its full text only when expanding a snippet.
        insert_text_format=types.InsertTextFormat.Snippet,
        insert_text_mode=types.InsertTextMode.AdjustIndentation,
        text_edit=types.TextEdit(
            range=types.Range(start=start, end=end),
            new_text=snippet_escape(relative_indent(new_text, base_indent)),
        ),
        data={"source": "codectx", "requestId": request_id},
    )


def register(server: CodectxServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[".", "(", ",", "=", " "], resolve_provider=False),
    )
    @guarded(default=_empty)
    async def completion(ls: CodectxServer, params: types.CompletionParams) -> types.CompletionList:
        """Awaits the backend for at most lsp.request_budget_ms; context assembly runs in a thread."""
        found = await suggestion_at(ls, "completion", params.text_document.uri, params.position)
        if found is None:
            return _empty()
        item = make_item(found.lines, found.line, found.column, found.text, found.codec, found.request_id)
        return types.CompletionList(is_incomplete=True, items=[item])
