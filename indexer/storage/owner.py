"""Which folders codectx may delete: only those it created itself, marked by a file inside.

The index folder is chosen by the user (`index.index_dir`, a user-level key);
it may be a folder that already exists and holds something else. codectx
writes `.codectx-index` into every index folder it creates, and deletes or
rebuilds `<index>/db` only when that marker is there. An index made before
markers existed (its `meta.json` names a codectx schema) is adopted once.
"""

from __future__ import annotations

import json
from pathlib import Path

from codectx.indexer.errors import IndexerError
from codectx.indexer.storage.layout import META_FILE

MARKER = ".codectx-index"
_TEXT = "This folder is a codectx index; codectx created it and may delete or rebuild what is in it.\n"


class FolderNotOwned(IndexerError):
    """An index folder holds things codectx did not create; it will not delete or write them."""


def owns(index_dir: Path) -> bool:
    """True if codectx created this index folder (marker present, or a pre-marker index: adopted)."""
    if (index_dir / MARKER).is_file():
        return True
    try:
        meta = json.loads((index_dir / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if isinstance(meta, dict) and "schema_version" in meta:
        mark(index_dir)
        return True
    return False


def mark(index_dir: Path) -> None:
    (index_dir / MARKER).write_text(_TEXT, encoding="utf-8")


def claim(index_dir: Path) -> None:
    """Make `index_dir` an index folder of ours: create it (marked), or refuse one that holds other things."""
    if index_dir.is_dir() and not owns(index_dir):
        others = [p.name for p in index_dir.iterdir() if p.name != "lock"]  # an older codectx's lock
        if others:
            raise FolderNotOwned(
                f"the index folder {index_dir} already exists and was not created by codectx (it holds "
                f"{', '.join(sorted(others)[:3])}{', ...' if len(others) > 3 else ''}); codectx will not "
                "write into it or delete anything there. Choose a new or empty folder for index.index_dir"
            )
    index_dir.mkdir(parents=True, exist_ok=True)
    if not (index_dir / MARKER).is_file():
        mark(index_dir)


def check_deletable(index_dir: Path, what: Path) -> None:
    """Raise FolderNotOwned unless `what`, inside `index_dir`, may be deleted."""
    if not owns(index_dir):
        raise FolderNotOwned(
            f"not deleting {what}: {index_dir} has no {MARKER} marker, so codectx did not create it"
        )
