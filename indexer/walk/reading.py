"""Reading a file that discovery listed: what was discovered, or nothing.

Between the walk and the parse a file can change under the indexer: replaced
by a FIFO (a plain `open` would wait forever for a writer), by a symlink to a
file outside the workspace or to a secret file inside it, or grown past the
size cap. `read_discovered` re-checks all of that on the open file itself and
reads at most `max_bytes + 1` bytes, so no file costs more than the cap; any
other outcome is a `NotIndexed` with a stable reason and a message for the
user, and the file is skipped for this run.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from codectx.indexer.walk.discovery import SourceFile

from codectx.privacy.policy import is_never_index
from codectx.settings import Settings

_O_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


@dataclass(frozen=True)
class NotIndexed:
    """Why a discovered file was not read: `reason` is a skip reason, `message` names the file."""

    reason: str  # changed-kind, symlink-outside-root, secret-file, too-large, unreadable, vanished
    message: str


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return "special file"


def _inside(root: str, real: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def read_discovered(sf: SourceFile, root: Path, settings: Settings) -> bytes | NotIndexed:
    """The bytes of `sf` if it is still a regular file inside `root` under the size cap."""
    max_bytes = int(settings.index.max_file_bytes)
    try:
        # O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
        fd = os.open(sf.real, _O_FLAGS)
    except FileNotFoundError:
        return NotIndexed("vanished", f"{sf.path}: deleted since it was discovered; skipped")
    except OSError as exc:
        return NotIndexed("unreadable", f"{sf.path}: cannot read: {exc.strerror or exc}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return NotIndexed(
                "changed-kind",
                f"{sf.path}: no longer a regular file (now a {_kind(st.st_mode)}); skipped",
            )
        real = os.path.realpath(sf.real)
        real_root = os.path.realpath(root)
        if not _inside(real_root, real):
            return NotIndexed(
                "symlink-outside-root",
                f"{sf.path}: now leads outside the workspace (to {real}); skipped",
            )
        try:
            at_real = os.stat(real)
        except OSError:
            at_real = None
        if at_real is None or (at_real.st_dev, at_real.st_ino) != (st.st_dev, st.st_ino):
            return NotIndexed("changed-kind", f"{sf.path}: replaced while being read; skipped")
        rel_real = os.path.relpath(real, real_root).replace(os.sep, "/")
        if rel_real != sf.path and is_never_index(rel_real, settings):
            return NotIndexed("secret-file", f"{sf.path}: now leads to a secret file ({rel_real}); skipped")
        grown = f"{sf.path}: grew past index.max_file_bytes ({max_bytes})"
        if st.st_size > max_bytes:
            return NotIndexed("too-large", f"{grown} since discovery; skipped")
        chunks: list[bytes] = []
        left = max_bytes + 1  # one byte more than allowed tells "grew while reading" apart
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            chunks.append(part)
            left -= len(part)
        if left <= 0:
            return NotIndexed("too-large", f"{grown} while being read; skipped")
        return b"".join(chunks)
    except OSError as exc:
        return NotIndexed("unreadable", f"{sf.path}: cannot read: {exc.strerror or exc}")
    finally:
        os.close(fd)
