"""`walk.json`: the walk record's file, its entry kinds, its reading, writing and shape checks.

What the record means and how a walk replays it is walk/walkrecord.py; this module is only the
file. Anything in it that is not what codectx writes (wrong JSON, another shape, another
version or settings) counts as missing: every folder is listed again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codectx.indexer.storage.layout import open_new

WALK_FILE = "walk.json"
FORMAT = 1
# Entry kinds in a folder record: [name, kind, ...].
DESCEND = "d"  # a folder walked into: [name, "d"]
NOT_WALKED = "D"  # a folder skipped by name or rules: [name, "D", reason or ""]
BY_NAME = "n"  # a file judged by its path alone: [name, "n", reason or ""]
LISTED = "f"  # an indexable file: [name, "f", language, size, mtime_ns, ctime_ns]
SKIPPED = "s"  # a file skipped by size or content: [name, "s", reason, size, mtime_ns, ctime_ns]


@dataclass
class WalkRecord:
    """What a walk saw: per workspace-relative folder, [mtime_ns, ctime_ns, rules signature, entries]."""

    header: dict[str, Any]
    walked_ns: int
    dirs: dict[str, list[Any]] = field(default_factory=dict)

    @staticmethod
    def path(index_dir: Path) -> Path:
        return index_dir / WALK_FILE

    @classmethod
    def read(cls, index_dir: Path, header: dict[str, Any]) -> WalkRecord | None:
        """The record, or None when missing, unreadable, or made with other settings or code."""
        return cls.read_checked(index_dir, header)[0]

    @classmethod
    def read_checked(cls, index_dir: Path, header: dict[str, Any]) -> tuple[WalkRecord | None, str | None]:
        """(the record or None, what is wrong with the file when it is not a walk record)."""
        damaged = f"{WALK_FILE} is not a walk record of this codectx; every folder is listed again"
        try:
            data = json.loads(cls.path(index_dir).read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        except (OSError, ValueError):
            return None, damaged
        if not isinstance(data, dict):
            return None, damaged  # valid JSON of another shape: as good as missing
        if data.get("format") != FORMAT or data.get("header") != header:
            return None, None  # another version, other settings: simply out of date
        dirs, walked = data.get("dirs"), data.get("walked_ns")
        if not isinstance(dirs, dict) or type(walked) is not int:
            return None, damaged
        return cls(header, walked, dirs), None

    def write(self, index_dir: Path) -> None:
        """Atomically (temp file, rename): a killed run leaves the old record or the new one."""
        data = {"format": FORMAT, "header": self.header, "walked_ns": self.walked_ns, "dirs": self.dirs}
        target = self.path(index_dir)
        tmp = target.with_name(f".{WALK_FILE}.{os.getpid()}.tmp")
        try:
            with open_new(tmp) as fh:
                fh.write(json.dumps(data, separators=(",", ":")).encode("utf-8"))
            os.replace(tmp, target)
        except OSError:  # a read-only index or a full disk still gets a correct (uncached) walk
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass


def folder_ok(rec: Any) -> bool:
    """A folder record of the right shape: [mtime_ns, ctime_ns, rules signature, entries]."""
    return (
        isinstance(rec, list)
        and len(rec) == 4
        and type(rec[0]) is int
        and type(rec[1]) is int
        and isinstance(rec[2], str)
        and isinstance(rec[3], list)
    )


def entry_ok(entry: Any) -> bool:
    """An entry of the right shape for its kind (see the kinds above); anything else is damage."""
    if not isinstance(entry, list) or len(entry) < 2:
        return False
    name, kind = entry[0], entry[1]
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        return False
    if kind == DESCEND:
        return len(entry) == 2
    if kind in (NOT_WALKED, BY_NAME):
        return len(entry) == 3 and isinstance(entry[2], str)
    if kind in (LISTED, SKIPPED):
        return (
            len(entry) == 6
            and isinstance(entry[2], str)
            and type(entry[3]) is int
            and type(entry[4]) is int
            and type(entry[5]) is int
        )
    return False
