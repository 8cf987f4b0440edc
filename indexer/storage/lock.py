"""The writer lock of an index folder: one indexing process at a time.

An `fcntl.flock` on `<index>/lock`; the kernel releases it when the holder
dies (kill -9 included), so a crash never leaves a stale lock. The holder's
pid is written into the file so that the refusal can name it.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from codectx.indexer.errors import IndexLocked, unwritable

LOCK_FILE = "lock"


class IndexLock:
    def __init__(self, index_dir: Path) -> None:
        self.path = Path(index_dir) / LOCK_FILE
        self._fd: int | None = None

    def holder(self) -> int | None:
        """The pid recorded by the current (or last) holder, if readable."""
        try:
            text = self.path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return int(text) if text.isdigit() else None

    def acquire(self, wait_s: float = 0.0) -> None:
        """Take the lock, waiting up to `wait_s`; raises IndexLocked naming the holder."""
        from codectx.indexer.storage.owner import claim

        try:
            claim(self.path.parent)  # never a lock file in a folder codectx did not create
            # Never through a link (claim refuses them; this holds if one appears meanwhile).
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:  # a file in the way, a read-only mount, /proc, no permission
            raise unwritable(self.path.parent, exc) from None
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    pid = self.holder()
                    who = f" (pid {pid})" if pid else ""
                    raise IndexLocked(
                        f"another codectx index is running{who} on {self.path.parent}; "
                        "wait for it to finish or stop it"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> IndexLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
