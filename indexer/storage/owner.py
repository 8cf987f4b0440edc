"""Which folders codectx may delete: only those it created itself, marked by a file inside.

The index folder is chosen by the user (`index.index_dir`, a user-level key);
it may be a folder that already exists and holds something else. codectx
writes `.codectx-index` into every index folder it creates, and deletes or
rebuilds `<index>/db` only when that marker is there. An index made before
markers existed (its `meta.json` names a codectx schema) is adopted once.
"""

from __future__ import annotations

import json
import os
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
    links = _links(index_dir)
    if links:
        raise FolderNotOwned(
            f"the index folder {index_dir} holds links ({', '.join(links[:3])}); codectx writes only "
            "into folders of its own, not through links to others. Remove them, or choose a new folder "
            "for index.index_dir"
        )
    if not (index_dir / MARKER).is_file():
        mark(index_dir)


def _links(index_dir: Path) -> list[str]:
    """Symbolic links where the store writes: the database folder, its tables, the schema file.
    Through one, a folder shipped with a repository (marker and all) would send writes into
    another index. (The lookup files check their own folder: a link there is skipped, warned.)"""
    found = [name for name in ("db", META_FILE) if (index_dir / name).is_symlink()]
    if "db" not in found:
        try:
            with os.scandir(index_dir / "db") as entries:
                found += [f"db/{e.name}" for e in entries if e.is_symlink()]
        except OSError:  # no db/ yet
            pass
    return sorted(found)


def check_deletable(index_dir: Path, what: Path) -> None:
    """Raise FolderNotOwned unless `what`, inside `index_dir`, may be deleted."""
    if not owns(index_dir):
        raise FolderNotOwned(
            f"not deleting {what}: {index_dir} has no {MARKER} marker, so codectx did not create it"
        )
