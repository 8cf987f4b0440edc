"""Model replacements → minimal edits.

The model rewrites a whole selection; the editor should only see the part
that changed (cursor and undo stay sane, unrelated lines untouched). Whether
the result still parses was checked by the session (codectx.app.refactor:
check_parses) before the replacement got here.
"""

from __future__ import annotations

from dataclasses import dataclass

from codectx.lsp.positions import Codec, client_position, offset, split_lines
from lsprotocol import types

from codectx.app.restore import common_ends


@dataclass(frozen=True)
class Span:
    """A code-point span of the document: (line, column) to (line, column), end exclusive."""

    start_line: int
    start_col: int
    end_line: int
    end_col: int


def minimal_change(old: str, new: str) -> tuple[int, int, str]:
    """(start, end, replacement) in `old` coordinates: common prefix and suffix removed."""
    head, tail = common_ends(old, new)
    return head, len(old) - tail, new[head : len(new) - tail]


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index)
    col = index - (text.rfind("\n", 0, index) + 1)
    return line, col


def apply(text: str, span: Span, replacement: str) -> str:
    lines = split_lines(text)
    joined = "\n".join(lines)
    start = offset(lines, span.start_line, span.start_col)
    end = offset(lines, span.end_line, span.end_col)
    return joined[:start] + replacement + joined[end:]


def workspace_edit(
    uri: str,
    text: str,
    span: Span,
    replacement: str,
    codec: Codec,
    version: int | None = None,
) -> types.WorkspaceEdit | None:
    """The smallest edit turning the selection into `replacement`; None when nothing changes."""
    lines = split_lines(text)
    joined = "\n".join(lines)
    sel_start = offset(lines, span.start_line, span.start_col)
    sel_end = offset(lines, span.end_line, span.end_col)
    after = joined[:sel_start] + replacement + joined[sel_end:]
    if after == joined:
        return None
    head, end, new_text = minimal_change(joined[sel_start:sel_end], replacement)
    s_line, s_col = _line_col(joined, sel_start + head)
    e_line, e_col = _line_col(joined, sel_start + end)
    edit = types.TextEdit(
        range=types.Range(
            start=client_position(lines, s_line, s_col, codec),
            end=client_position(lines, e_line, e_col, codec),
        ),
        new_text=new_text,
    )
    if version is not None:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                    edits=[edit],
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: [edit]})
