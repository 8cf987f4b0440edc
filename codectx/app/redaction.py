"""The pieces of one request, redacted before the prompt is assembled (see codectx.privacy.pieces).

A completion's prefix and suffix, a refactor's selection and scope, and every
retrieved item are redacted here with their own path, the secrets found in
the original text around each cut. Item texts come from the index; the file
they came from is read (inside the workspace only) so a secret crossing a
chunk's edge is seen whole. The egress gate still scans the assembled body.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from codectx.app.index import ContextPiece
from codectx.backend.prompts import Snippet
from codectx.backend.transport import Gate
from codectx.indexer.walk.content import decode_source
from codectx.privacy.egress import EgressGate
from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import Redactor
from codectx.privacy.sqlrows import LEAD_REACH
from codectx.settings import Settings

SourceReader = Callable[[str], "str | None"]
OpenText = Callable[[str], "str | None"]  # workspace path -> an open buffer's text, or None
P = TypeVar("P", bound=ContextPiece)
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def source_reader(
    root: Path | None, current: tuple[str, str] | None = None, limit: int = MAX_SOURCE_BYTES
) -> SourceReader:
    """path -> that file's text now (the current document's own text for its path), or None.

    Only regular files under `root`, at most `limit` bytes (at least the index's own file limit:
    a chunk whose file is not read is withheld); decoded as the indexer decodes (a BOM's UTF-16,
    bad bytes replaced), so that its chunks are found in it. Results are cached per reader (one
    request).
    """
    cache: dict[str, str | None] = {}
    if current is not None:
        cache[current[0]] = current[1]
    base = root.resolve() if root is not None else None

    def read(path: str) -> str | None:
        if path in cache:
            return cache[path]
        text = None
        if base is not None:
            try:
                target = (base / path).resolve()
                inside = target.is_relative_to(base) and target.is_file()
                if inside and target.stat().st_size <= limit:
                    text = decode_source(target.read_bytes())
            except (OSError, ValueError):
                text = None
        cache[path] = text
        return text

    return read


def cursor_offset(text: str, line: int, character: int) -> int:
    """The offset of a 0-based (line, character) in `text` (lines split at \\n), clamped."""
    pos = 0
    for _ in range(max(0, line)):
        nxt = text.find("\n", pos)
        if nxt == -1:
            return len(text)
        pos = nxt + 1
    end = text.find("\n", pos)
    end = len(text) if end == -1 else end
    return min(pos + max(0, character), end)


def redact_around_cursor(
    pieces: PieceRedactor, path: str, text: str, line: int, character: int, prefix: str, suffix: str
) -> tuple[str, str]:
    """(prefix, suffix) redacted, secrets found in the document around them, the cursor's line probed."""
    cursor = cursor_offset(text, line, character)
    a, b = cursor - len(prefix), cursor + len(suffix)
    if a >= 0 and text[a:cursor] == prefix and text[cursor:b] == suffix:
        red_prefix, red_suffix = pieces.document(text, path, [(a, cursor), (cursor, b)], cursor=cursor)
        return red_prefix, red_suffix
    # Not literally cut from this text (a transformed prefix): the two pieces are adjacent anyway.
    joined = prefix + suffix
    red_prefix, red_suffix = pieces.document(
        joined, path, [(0, len(prefix)), (len(prefix), len(joined))], cursor=len(prefix)
    )
    return red_prefix, red_suffix


def sendable(items: Sequence[P], gate: Gate) -> list[P]:
    """Items whose file may be sent: a chunk of a never-send file (an index from before a never-send
    glob was added, say) is dropped here rather than blocking the whole request at the gate."""
    return [i for i in items if gate.refusal(i.path) is None]


def redact_items(pieces: PieceRedactor, items: Sequence[ContextPiece], read: SourceReader) -> list[Snippet]:
    """Each retrieved item as a snippet with its text redacted (path and lines unchanged)."""
    out = []
    for item in items:
        source = read(item.path)
        redacted = pieces.chunk(item.text, item.path, item.start_line, source)
        out.append(Snippet(item.path, item.start_line, item.end_line, redacted))
    # A value found secret in one piece is masked wherever it recurs (first pieces were scanned first).
    return [Snippet(s.path, s.start_line, s.end_line, pieces.echo(s.text)) for s in out]


def piece_redactor(gate: Gate, settings: Settings) -> PieceRedactor | None:
    """A redactor for one request's pieces (the gate's own engine and key), or None when redaction is off."""
    if not settings.privacy.redact:
        return None
    redactor = gate.redactor if isinstance(gate, EgressGate) else Redactor(settings)
    return PieceRedactor(redactor)


class RequestRedaction:
    """How a session redacts each request's pieces: its settings, its gate, and open buffers' text."""

    def __init__(self, settings: Settings, gate: Gate, read_open: OpenText | None = None) -> None:
        self.settings = settings
        self.gate = gate
        self.read_open = read_open  # path -> an open buffer's text (the editor's unsaved edits), or None

    def pieces(self) -> PieceRedactor | None:
        """A fresh piece redactor for one request (None when privacy.redact is off)."""
        pieces = piece_redactor(self.gate, self.settings)
        if pieces is not None:
            pieces.deadline = time.monotonic() + self.settings.privacy.scan_timeout_s
        return pieces

    def shown(self, path: str) -> Callable[[str], str] | None:
        """text -> that text of `path` as a request would send it (a fresh piece redactor per call,
        so that one text's secrets do not mask another's); None when privacy.redact is off."""
        if not self.settings.privacy.redact:
            return None

        def shown(text: str) -> str:
            pieces = self.pieces()
            return text if pieces is None else pieces.text(text, path)

        return shown

    def reader(self, path: str, text: str) -> SourceReader:
        """path -> that file's text now, to scan around a retrieved chunk: the request's own document,
        an open buffer, else the file on disk (inside the workspace only)."""
        on_disk = source_reader(self.settings.root, (path, text), self.source_limit)
        opened = self.read_open

        def read(other: str) -> str | None:
            if opened is not None and other != path:
                found = opened(other)
                if found is not None:
                    return found
            return on_disk(other)

        return read

    @property
    def source_limit(self) -> int:
        """The largest file read around a chunk: as large as the index reads, within the reach the
        SQL and table readers look up for a header."""
        return min(max(MAX_SOURCE_BYTES, self.settings.index.max_file_bytes), LEAD_REACH)

    def sendable(self, items: Sequence[P]) -> list[P]:
        return sendable(items, self.gate)
