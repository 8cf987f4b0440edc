"""Which folders codectx may delete: only those it created itself, marked by a file inside.

The index folder is chosen by the user (`index.index_dir`, a user-level key);
it may be a folder that already exists and holds something else. codectx
writes `.codectx-index` into every index folder it creates, and deletes or
rebuilds `<index>/db` only when that marker is there. An index made before
markers existed (its `meta.json` names a codectx schema) is adopted once.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from codectx.indexer.errors import IndexerError
from codectx.indexer.storage.layout import META_FILE

log = logging.getLogger(__name__)

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
    index_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private from its first moment
    links = _links(index_dir)
    if links:
        raise FolderNotOwned(
            f"the index folder {index_dir} holds links ({', '.join(links[:3])}); codectx writes only "
            "into folders of its own, not through links to others. Remove them, or choose a new folder "
            "for index.index_dir"
        )
    if not (index_dir / MARKER).is_file():
        mark(index_dir)
    keep_private(index_dir)


def keep_private(index_dir: Path) -> None:
    """Only the owner may enter the index folder: it holds the code's text unredacted, files the
    owner made unreadable to others among it, and the umask made its files readable by all
    (red team 3 read a 0600 file's text in 0644 LanceDB files)."""
    try:
        if index_dir.stat().st_mode & 0o077:
            index_dir.chmod(0o700)
    except OSError as exc:  # not ours to change (a shared folder): say so, index anyway
        log.warning("could not make the index folder %s private: %s", index_dir, exc)


# The lookup files check their own folder (a link there is skipped with a warning, the run goes
# on: indexer/storage/lookupfiles.py).
_OWN_CHECK = frozenset({"lookups"})
MAX_ENTRIES = 200_000  # an index folder holds hundreds (LanceDB compacts); past this, stop looking


def _links(index_dir: Path) -> list[str]:
    """Symbolic links anywhere in the index folder (the lookup files' folder aside): through one,
    a folder shipped with a repository (marker and all) would have codectx write elsewhere: the
    lock file truncated to a pid, `.gitignore` created, LanceDB's tables, versions and
    transactions written. 0.8 ms on Django's index (176 entries)."""
    found: list[str] = []
    stack, seen = [str(index_dir)], 0
    while stack and seen < MAX_ENTRIES:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if folder == str(index_dir) and (entry.name in _OWN_CHECK or entry.name.endswith(".tmp")):
                        continue  # temp names: their atomic writers replace a link, never follow it
                    if entry.is_symlink():
                        found.append(os.path.relpath(entry.path, index_dir))
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:  # gone meanwhile, or unreadable: nothing written there through a link
            continue
    return sorted(found)


def check_deletable(index_dir: Path, what: Path) -> None:
    """Raise FolderNotOwned unless `what`, inside `index_dir`, may be deleted."""
    if not owns(index_dir):
        raise FolderNotOwned(
            f"not deleting {what}: {index_dir} has no {MARKER} marker, so codectx did not create it"
        )
