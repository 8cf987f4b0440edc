"""Reading one workspace file for a surface (chat, MCP, a "show me" command): confined, policed, redacted.

A surface that hands a file's text to a model (an MCP client is one) asks the session, never the disk:
the path must resolve inside the workspace (a symlink pointing out is refused, naming both), a
never-send file is refused by the pattern that matches it, folders, binary and huge files get a clear
message, and with privacy.redact on the lines come back with secrets replaced by placeholders
(found in the whole file, so a secret that crosses the span's edge is masked whole).
"""

from __future__ import annotations

import os

from codectx.app.index import read_document, relative_path
from codectx.app.redaction import RequestRedaction
from codectx.app.results import FileText
from codectx.errors import CodectxError, UsageError
from codectx.privacy.policy import never_send_match
from codectx.settings import Settings


class NeverSend(CodectxError):
    """The file matches a never-send pattern: codectx neither reads it for a surface nor sends it."""


def read_confined(
    settings: Settings,
    redaction: RequestRedaction,
    path: str,
    start_line: int | None = None,
    end_line: int | None = None,
    *,
    redact: bool = True,
) -> FileText:
    """Lines start_line..end_line (0-based, inclusive; default: all) of a workspace file."""
    root = settings.root
    if root is None:
        raise UsageError("this session has no workspace root; it cannot read files")
    rel = relative_path(root, root / path)
    pattern = never_send_match(rel, settings)
    if pattern:
        raise NeverSend(f"{rel} matches the never-send pattern '{pattern}'; codectx does not read it out")
    # A link inside the workspace is judged by its target too: `notes.txt -> .env` is not read (its
    # lines would not be sent, but an error's line count would be).
    real = os.path.relpath(os.path.realpath(root / rel), os.path.realpath(root)).replace(os.sep, "/")
    pattern = never_send_match(real, settings) if real != rel else None
    if pattern:
        raise NeverSend(f"{rel} leads to {real}, which matches the never-send pattern '{pattern}'")
    text = read_document(root / rel)
    if start_line is None and end_line is None:  # the whole file (a chat turn reads tens of them)
        first, last, start, end = 0, text.count("\n"), 0, len(text)
    else:
        lines = text.split("\n")
        first = 0 if start_line is None else start_line
        last = len(lines) - 1 if end_line is None else min(end_line, len(lines) - 1)
        if first < 0 or first > last:
            raise UsageError(
                f"lines {first + 1}-{last + 1} are outside {rel} ({len(lines)} lines)"
            )  # 1-based
        start = sum(len(row) + 1 for row in lines[:first])
        end = start + len("\n".join(lines[first : last + 1]))
    pieces = redaction.pieces() if redact else None
    if pieces is None:
        return FileText(rel, first, last, text[start:end], redacted=False)
    return FileText(rel, first, last, pieces.document(text, rel, [(start, end)])[0], redacted=True)
