"""The pieces of one request, redacted before the prompt is assembled (see codectx.privacy.pieces).

A completion's prefix and suffix, a refactor's selection and scope, and every
retrieved item are redacted here with their own path, the secrets found in
the original text around each cut. Item texts come from the index; the file
they came from is read (inside the workspace only) so a secret crossing a
chunk's edge is seen whole. The egress gate still scans the assembled body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from codectx.privacy.pieces import PieceRedactor
from codectx.privacy.redact import Redactor

SourceReader = Callable[[str], "str | None"]
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def source_reader(root: Path | None, current: tuple[str, str] | None = None) -> SourceReader:
    """path -> that file's text now (the current document's own text for its path), or None.

    Only regular files under `root`, at most MAX_SOURCE_BYTES; results are cached per reader (one
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
                if inside and target.stat().st_size <= MAX_SOURCE_BYTES:
                    text = target.read_bytes().decode("utf-8", "surrogateescape")
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


def sendable(items: Sequence[Any], gate: Any) -> list[Any]:
    """Items whose file may be sent: a chunk of a never-send file (an index from before a never-send
    glob was added, say) is dropped here rather than blocking the whole request at the gate."""
    refusal = getattr(gate, "refusal", None)
    if refusal is None:
        return list(items)
    return [i for i in items if refusal(str(i.path)) is None]


def redact_items(pieces: PieceRedactor, items: Sequence[Any], read: SourceReader) -> list[Any]:
    """Each retrieved item with its text redacted (same type, other fields unchanged)."""
    out = []
    for item in items:
        path, text = str(item.path), str(item.text)
        source = read(path)
        redacted = pieces.chunk(text, path, int(item.start_line), source)
        out.append(_with_text(item, redacted))
    # A value found secret in one piece is masked wherever it recurs (first pieces were scanned first).
    return [_with_text(i, pieces.echo(str(i.text))) for i in out]


def _with_text(item: Any, text: str) -> Any:
    if str(item.text) == text:
        return item
    try:
        return replace(item, text=text)
    except TypeError:
        from codectx.backend.prompts import Snippet

        return Snippet(str(item.path), int(item.start_line), int(item.end_line), text)


def piece_redactor(gate: Any, settings: Any) -> PieceRedactor | None:
    """A redactor for one request's pieces (the gate's own engine and key), or None when redaction is off."""
    if not bool(getattr(getattr(settings, "privacy", None), "redact", True)):
        return None
    redactor = getattr(gate, "redactor", None)
    if not isinstance(redactor, Redactor):
        redactor = Redactor(settings)
    return PieceRedactor(redactor)
