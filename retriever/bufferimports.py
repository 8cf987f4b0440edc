"""The imports of the document being edited: the index's, unless the buffer's import lines differ.

The index holds each file's imports as of its last indexing (on save). An editor's buffer may
have added an import since (`import { formatCurrency } from "./money"`, then its first use): the
definitions it brings are what the next line needs. So each request compares the buffer's import
lines (`signature`) with the saved file's, read once per file version; where they differ, the
buffer's own imports are parsed (once per path and signature: typing elsewhere reuses them).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from codectx.indexer.model import Import

# Lines that import something at a file's top level, in the languages the index reads: Python/JS/
# TS `import`/`from`/`export ... from`, C's `#include`, Rust's `use`/`mod`/`extern crate`, C#'s
# `using`, Go's import specs (`\t"fmt"` in an import block); `require(` is found apart. Indented
# imports (Python's inside a function, a multi-line import's names) are not read: the pattern
# starts with the newline and the keyword, so a line that starts otherwise costs one character
# (0.3 ms on Django's largest file; reading indented lines too took 1.4 ms, and was paid twice
# per request on a file not seen before). An import added there waits for the save.
_IMPORT_LINE = re.compile(
    r"\n((?:import|from|export|use|using|require|extern|mod|package|library)\b[^\n]*"
    r'|#[ \t]*(?:include|import)\b[^\n]*|\t(?:[\w.]+[ \t]+)?"[^"\n]*"[ \t]*$)',
    re.M,
)
MAX_FILE_BYTES = 4 << 20  # a larger file is not read again for its signature: the index answers
CACHED = 64

_disk: dict[str, tuple[int, int, int]] = {}  # absolute path -> (mtime_ns, size, signature)
# (root, path, signature, index version) -> imports: a buffer's imports are resolved against the
# files on disk, so an index run (a file created since) parses them again.
_parsed: OrderedDict[tuple[str, str, int, object], list[Import]] = OrderedDict()
_lock = threading.Lock()  # requests run on a thread pool


def signature(text: str) -> int:
    """A hash of the text's top-level import lines (trailing space ignored) and of the lines that
    call `require(` (found with `str.find`: a pattern for them read every line again from each
    of its characters, 10 ms on a 70 kB file)."""
    lines = [m.group(1).rstrip() for m in _IMPORT_LINE.finditer("\n" + text)]
    at = text.find("require(")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        lines.append(text[start:end].strip())
        at = text.find("require(", end)
    return hash(tuple(lines))


def _saved_signature(root: Path | None, path: str) -> int | None:
    """The saved file's signature, read once per version; None when it cannot be read."""
    if root is None:
        return None
    full = os.path.join(root, path)
    try:
        info = os.stat(full)
        found = _disk.get(full)
        if found is not None and found[:2] == (info.st_mtime_ns, info.st_size):
            return found[2]
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None  # a device or FIFO in its place is never read
        with open(full, encoding="utf-8", errors="replace") as fh:
            sig = signature(fh.read())
    except OSError:
        return None
    with _lock:
        if len(_disk) > 4096:
            _disk.clear()
        _disk[full] = (info.st_mtime_ns, info.st_size, sig)
    return sig


def buffer_imports(
    indexed: list[Import],
    root: Path | None,
    path: str,
    text: str,
    parse: Callable[[], list[Import]],
    version: object = None,
) -> list[Import]:
    """`indexed` when the buffer imports what the saved file does; else the buffer's own imports
    (`parse`, cached by path, signature and the index's `version`). A file the index does not
    know is parsed too."""
    sig = signature(text)
    if indexed and sig == _saved_signature(root, path):
        return indexed
    key = (str(root), path, sig, version)
    with _lock:
        found = _parsed.get(key)
        if found is not None:
            _parsed.move_to_end(key)
            return found
    try:
        found = parse()
    except Exception:  # unparsable text: what the index knows, else name matching
        return indexed
    with _lock:
        _parsed[key] = found
        while len(_parsed) > CACHED:
            _parsed.popitem(last=False)
    return found
