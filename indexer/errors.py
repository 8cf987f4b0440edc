"""The indexer's exception tree: every error here carries a message for the user."""

from __future__ import annotations

import errno
from pathlib import Path

from codectx.errors import CodectxError


class IndexerError(CodectxError):
    """Root of the indexer's errors."""


class IndexNotFound(IndexerError):
    """There is no index where one was expected; the message names the command to build it."""


class IndexSchemaMismatch(IndexerError):
    """The index was written by another version of codectx and must be rebuilt."""


class IndexLocked(IndexerError):
    """Another process is indexing the same workspace."""


class IndexCorrupt(IndexerError):
    """The index folder exists but cannot be read; rebuilding it fixes this."""


class IndexUnwritable(IndexerError):
    """The index folder cannot be written (full disk, read-only, no permission); nothing is lost."""


class EmbedderError(IndexerError):
    """The embedding model cannot be found or loaded."""


# Failures that mean "cannot write here", not "the index is damaged": never a reason to rebuild.
_UNWRITABLE = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}
_UNWRITABLE_TEXT = {
    "No space left on device": errno.ENOSPC,
    "Disk quota exceeded": errno.EDQUOT,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
}


def unwritable_reason(exc: BaseException) -> str | None:
    """Why a failed write cannot succeed here (full disk, read-only, denied), or None.

    LanceDB reports these as text inside its own errors, so the message is read too."""
    code = exc.errno if isinstance(exc, OSError) else None
    if code not in _UNWRITABLE:
        text = str(exc)
        code = next((c for phrase, c in _UNWRITABLE_TEXT.items() if phrase in text), None)
    return _UNWRITABLE.get(code) if code is not None else None


def unwritable(index_dir: Path, exc: OSError | Exception) -> IndexUnwritable:
    """The message for an index folder that cannot be made or written, naming what is in the way."""
    where = f"the index folder {index_dir}"
    fix = "choose another folder with --index-dir (or index.index_dir)"
    if index_dir.exists() and not index_dir.is_dir():
        return IndexUnwritable(f"{where} is a file, not a folder; move it away, or {fix}")
    blocker = next((p for p in index_dir.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return IndexUnwritable(f"cannot create {where}: {blocker} is a file, not a folder; {fix}")
    reason = unwritable_reason(exc)
    if reason == "no space left on the device" or reason == "the disk quota is exceeded":
        return IndexUnwritable(
            f"cannot write {where}: {reason}. What was already committed is kept; make room "
            "(or choose another folder with --index-dir) and run `codectx index` again"
        )
    if reason is not None:
        return IndexUnwritable(f"cannot write {where}: {reason}; {fix}")
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return IndexUnwritable(f"cannot write {where}: {detail}; {fix}")
