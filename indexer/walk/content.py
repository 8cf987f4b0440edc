"""What a file's bytes are: its text, and whether it is worth indexing at all.

`decode_source` never fails on bad bytes: invalid UTF-8 becomes replacement characters, so the
rest of such a file stays searchable, and UTF-16/32 files with a byte-order mark are decoded by
it. `sniff` reads a file's first bytes and name for what discovery skips by content: binary,
generated and minified files (the patterns and limits are walk/skiprules.py's).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pathspec
from codectx.indexer.walk.skiprules import (
    GENERATED_HEADER,
    GENERATED_NAMES,
    HEADER_BYTES,
    MINIFIED_AVG_LINE,
    MINIFIED_MIN_SAMPLE,
    MINIFIED_NAMES,
)


@functools.cache
def _names_spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


# Byte-order marks, longest first: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xfe\xff", "utf-16-be"),
    (b"\xff\xfe", "utf-16-le"),
)


def bom_encoding(data: bytes) -> tuple[str, int] | None:
    """(codec, BOM length) when `data` starts with a byte-order mark, else None."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return codec, len(bom)
    return None


def decode_source(data: bytes) -> str:
    """A file's text: UTF-8, or UTF-16/32 when a BOM says so (BOM dropped), bad bytes replaced."""
    found = bom_encoding(data)
    if found is None:
        return data.decode("utf-8", errors="replace")
    codec, skip = found
    return data[skip:].decode(codec, errors="replace")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD, as `decode_source` replaces bad bytes.

    A client can send them (a JSON escape such as `\\ud800` in a batch record, an LSP or MCP
    message; argv's undecodable bytes): tokenizers refuse such strings with a TypeError, and
    no valid text holds one, so the check costs one C-level encode on the usual path.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def text_head(head: bytes) -> bytes:
    """The first bytes as UTF-8, so that a UTF-16/32 file is sniffed by its text, not its zero bytes."""
    found = bom_encoding(head)
    if found is None or found[0] == "utf-8":
        return head
    return decode_source(head).encode("utf-8", errors="replace")


def read_source(abs_path: Path) -> str:
    """A file's text (see `decode_source`); never an exception for bad bytes."""
    return decode_source(abs_path.read_bytes())


def sniff(head: bytes, name: str) -> str | None:
    """A skip reason from a file's first bytes and name: binary, generated, minified; None if fine."""
    head = text_head(head)
    if b"\0" in head:
        return "binary"
    if _names_spec(MINIFIED_NAMES).match_file(name):
        return "minified"
    if _names_spec(GENERATED_NAMES).match_file(name):
        return "generated"
    if GENERATED_HEADER.search(head[:HEADER_BYTES]):
        return "generated"
    if len(head) >= MINIFIED_MIN_SAMPLE:
        lines = head.count(b"\n") + 1
        if len(head) / lines > MINIFIED_AVG_LINE:
            return "minified"
    return None
