"""The files of an index folder besides LanceDB's tables, and how codectx writes them.

An index folder holds `meta.json` (schema version, model id, last run), `db/` (LanceDB), a
`.gitignore` of `*`, the lock file (indexer/storage/lock.py), the `.codectx-index` marker
(indexer/storage/owner.py), the last complete run's `manifest.json` and the last walk's
`walk.json` (indexer/walk/), the lookup files under `lookups/` (indexer/storage/lookupfiles.py),
and, only while a write is in progress, `journal.json`. The names
live here, apart from the store, so that the quick "up to date" check reads them without
importing LanceDB.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, BinaryIO

JOURNAL_FILE = "journal.json"  # the store's record of a write in progress
META_FILE = "meta.json"  # the store's schema version and model
# The index's on-disk schema (checked against meta.json by the store).
SCHEMA_VERSION = 1


def index_exists(index_dir: Path) -> bool:
    """Whether an index was written at `index_dir` (its meta file), known without LanceDB."""
    return (Path(index_dir) / META_FILE).is_file()


def require_index(index_dir: Path) -> None:
    """IndexNotFound unless an index was written at `index_dir`."""
    if not index_exists(index_dir):
        from codectx.indexer.errors import IndexNotFound

        raise IndexNotFound(f"no index at {index_dir}; run `codectx index` in the workspace first")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON durably: a temp file, fsynced, renamed over `path`."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open_new(tmp) as fh:
            fh.write(json.dumps(data, indent=1).encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:  # a full disk: no half-written temp file left behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def open_new(tmp: Path) -> BinaryIO:
    """A temp file in the index folder, created new for writing. The folder is often in the
    workspace, which is untrusted: whatever is at that name already (a leftover, or a link
    planted to redirect the write) is removed first, and the file is opened without following
    a link, so the write lands in this file and nowhere else."""
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    return os.fdopen(fd, "wb")
