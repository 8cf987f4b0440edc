"""Workspace files' texts kept across chat turns, and their lines' offsets.

A chat turn reads the files of about eighty search hits and slices lines out of each; the next
turn, about another question, reads many of the same files again (a package's central modules
come up in most answers). Each text is kept with the file's identity and change stamp (device,
inode, size, modification time in nanoseconds), checked by one stat before every use, so a file
saved since is read again. The lines' summed lengths are kept with the text they were counted
in. Only the reading is cached: whether a path may be read at all is judged by the caller, each
turn. Bounded (least recently used first out); one ChatService's turns share it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from codectx.app.index import read_document

LIMIT = 512  # files kept (a Django module is ~20 kB: ~10 MB at most)


@dataclass
class _Kept:
    stamp: tuple[int, int, int, int]
    text: str
    sums: list[int] | None = None


class DocumentCache:
    """Texts of files by path, valid while their stat stamp is unchanged; see the module docstring."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def text(self, path: Path) -> str:
        """The file's text (read_document's, and its errors), read again when the file changed."""
        key = str(path)
        try:
            st = os.stat(path)
        except OSError:
            return read_document(path)  # its clear error for a missing or unreadable file
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept.stamp == stamp:
                self._kept.move_to_end(key)
                return kept.text
        text = read_document(path)
        with self._lock:
            self._kept[key] = _Kept(stamp, text)
            while len(self._kept) > self.limit:
                self._kept.popitem(last=False)
        return text

    def sums(self, path: Path, text: str) -> list[int]:
        """Where each line of `text` starts, less its line number: the lengths of the lines before
        it summed (counted once per kept text; `text` not the kept one: counted now)."""
        with self._lock:
            kept = self._kept.get(str(path))
            if kept is not None and kept.text is text and kept.sums is not None:
                return kept.sums
        sums = line_sums(text)
        with self._lock:
            kept = self._kept.get(str(path))
            if kept is not None and kept.text is text:
                kept.sums = sums
        return sums


def line_sums(text: str) -> list[int]:
    """The summed lengths of a text's lines before each line (accumulate over map(len): no Python
    loop per line, for files of thousands of lines)."""
    return list(accumulate(map(len, text.split("\n")), initial=0))
