"""Which operating systems codectx runs on; the entry point asks once, before any work.

Linux and macOS are supported. Windows is refused with a message: the index
lock (indexer/storage/lock.py) and the audit log's append lock (privacy/audit.py) are
POSIX `fcntl.flock` locks, which is what keeps a language server and a shell
command from writing the same index or log at once. Porting them is possible
(`msvcrt.locking`, or the `filelock` package), but an untested lock on the
audit log would be worse than a clear refusal; WSL 2 is Linux and works.
"""

from __future__ import annotations

import sys

SUPPORTED = ("linux", "darwin")


def unsupported_platform(platform: str | None = None) -> str | None:
    """Why codectx cannot run on this platform (a message for the user), or None if it can."""
    platform = sys.platform if platform is None else platform
    if platform.startswith(SUPPORTED):
        return None
    if platform in ("win32", "cygwin", "msys"):
        return (
            "codectx runs on Linux and macOS, not on Windows: its index and audit-log locks are "
            "POSIX file locks. Use it inside WSL 2 (Linux), where it works unchanged."
        )
    return f"codectx runs on Linux and macOS; this platform ({platform}) is not supported"
