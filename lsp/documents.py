"""Open documents: their unsaved text (kept by pygls' workspace) and recent edits.

Recent edits are the line ranges the user changed lately, across files, so
context assembly can include the code being worked on elsewhere. Documents
that are binary or too large are flagged here once, so every feature refuses
them the same way.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from codectx.lsp.errors import DocumentUnusable
from lsprotocol import types

MAX_RECENT = 32


@dataclass(frozen=True)
class RecentEdit:
    """A region the user edited: workspace-relative path, 0-based inclusive lines."""

    uri: str
    start_line: int
    end_line: int
    time: float


def check_usable(text: str, max_bytes: int) -> None:
    """Refuse binary and huge documents with a clear message."""
    if "\x00" in text[:8192]:
        raise DocumentUnusable("binary document (NUL bytes); codectx does not complete binary files")
    # len(text) is a cheap lower bound of the UTF-8 size; only encode when it matters.
    if len(text) > max_bytes or len(text.encode("utf-8", "replace")) > max_bytes:
        raise too_large(max_bytes)


def too_large(max_bytes: int) -> DocumentUnusable:
    return DocumentUnusable(
        f"document larger than lsp.max_document_bytes ({max_bytes} bytes); codectx skips it"
    )


class RecentEdits:
    """The last MAX_RECENT edited regions, newest first, merged per document."""

    def __init__(self, limit: int = MAX_RECENT) -> None:
        self._edits: deque[RecentEdit] = deque(maxlen=limit)

    def record(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start = change.range.start.line
                end = start + change.text.count("\n")
                self._add(RecentEdit(uri, start, max(end, change.range.end.line), time.monotonic()))

    def _add(self, edit: RecentEdit) -> None:
        # Typing keeps touching the same lines: widen the newest entry instead of flooding.
        if self._edits:
            last = self._edits[0]
            if (
                last.uri == edit.uri
                and edit.start_line <= last.end_line + 3
                and edit.end_line >= last.start_line - 3
            ):
                self._edits[0] = RecentEdit(
                    edit.uri,
                    min(last.start_line, edit.start_line),
                    max(last.end_line, edit.end_line),
                    edit.time,
                )
                return
        self._edits.appendleft(edit)

    def forget(self, uri: str) -> None:
        kept = [e for e in self._edits if e.uri != uri]
        self._edits.clear()
        self._edits.extend(kept)

    def others(self, uri: str) -> list[RecentEdit]:
        """Recent edits in documents other than `uri`, newest first."""
        return [e for e in self._edits if e.uri != uri]

    def all(self) -> list[RecentEdit]:
        return list(self._edits)
