"""What the last complete index run saw, readable without opening LanceDB.

`codectx index` on an unchanged workspace should answer at once, but importing
LanceDB alone takes about two seconds. So every complete run ends by writing
`manifest.json` beside the tables: each indexed file's size and mtime, a
fingerprint of the settings that shape the index, and the run's summary. The
CLI walks the workspace (cheap: unchanged files are not opened) and compares;
only when something differs does it load the indexer proper.

Every write to the index deletes the manifest first, so a run killed midway,
or a save re-indexed by the language server, never leaves a stale "up to date".

The manifest also vouches for the tables: it lists the size and mtime of every
file under `db/` as the run left them (`db_files`), so the quick check can
tell, with a few stats and still without LanceDB, that nothing has truncated,
rewritten or deleted them since; when something has, the run that follows
reads every table back (`IndexStore.verify(deep=True)`) before trusting it.
A manifest, journal or walk record that is not what codectx writes (wrong
JSON, another shape) counts as missing, with a note saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.indexer.report import IndexReport
from codectx.indexer.storage.layout import JOURNAL_FILE, META_FILE, SCHEMA_VERSION, open_new

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.indexer.walk.discovery import Discovery

MANIFEST_FILE = "manifest.json"
FORMAT = 1
# The vectors a complete run leaves per chunk (body, then name vectors): an index from before a
# kind existed fails the quick check once, so its first run fills the new kind in.
VECTOR_KINDS = ("body", "name")
# Keys that do not change what is indexed: how vectors are computed, whether this run embeds.
_RUNTIME_KEYS = ("embed", "embed_backend", "embed_batch_size", "index_dir")
# Summary fields carried from the last run into a quick report.
_CARRIED = (
    "files",
    "chunks",
    "chunks_per_language",
    "skipped",
    "model_id",
    "embed_backend",
    "vectors_pending",
)


def fingerprint(settings: Settings) -> str:
    """A hash of every setting that changes which files are indexed and how they are chunked."""
    shaping = {k: v for k, v in sorted(settings.index.as_dict().items()) if k not in _RUNTIME_KEYS}
    data: dict[str, Any] = {"schema": SCHEMA_VERSION, "vectors": VECTOR_KINDS, "index": shaping}
    if settings.privacy.never_send:  # never-send files are never indexed either (privacy/policy.py)
        data["never_send"] = list(settings.privacy.never_send)
    blob = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Manifest:
    fingerprint: str
    files: dict[str, tuple[int, int]]  # path -> (size, mtime_ns) of every indexed file
    embedded: bool  # vectors complete for `report["model_id"]`
    report: dict[str, Any]
    # The file's identity when read (inode, size, mtime, ctime): still the same later means no
    # write to the index happened in between (each one drops the manifest first).
    sig: tuple[int, int, int, int] | None = field(default=None, compare=False)
    # path under db/ -> (size, mtime_ns) of every table file the run left (None: not recorded)
    db_files: dict[str, tuple[int, int]] | None = None

    @staticmethod
    def path(index_dir: Path) -> Path:
        return index_dir / MANIFEST_FILE

    @classmethod
    def read(cls, index_dir: Path) -> Manifest | None:
        """The manifest, or None when missing, unreadable or of another format (never raises)."""
        return cls.read_checked(index_dir)[0]

    @classmethod
    def read_checked(cls, index_dir: Path) -> tuple[Manifest | None, str | None]:
        """(the manifest or None, what is wrong with the file when it exists but is not one)."""
        try:
            with cls.path(index_dir).open("rb") as fh:
                sig = _sig(os.fstat(fh.fileno()))
                raw = fh.read()
        except FileNotFoundError:
            return None, None
        except OSError as exc:
            return None, f"{MANIFEST_FILE} cannot be read ({exc.strerror or exc})"
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError:
            return None, f"{MANIFEST_FILE} is not valid JSON"
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None, f"{MANIFEST_FILE} is not a manifest of this codectx"
        try:
            return cls(
                _text(data["fingerprint"]),
                _stats(data["files"]),
                _flag(data["embedded"]),
                _mapping(data["report"]),
                sig,
                _stats(data["db_files"]) if "db_files" in data else None,
            ), None
        except (KeyError, TypeError, ValueError):
            return None, f"{MANIFEST_FILE} is not a manifest of this codectx"

    def write(self, index_dir: Path) -> None:
        """Write atomically (temp file, then rename)."""
        data = {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "embedded": self.embedded,
            "report": self.report,
            "files": {p: list(v) for p, v in sorted(self.files.items())},
        }
        if self.db_files is not None:
            data["db_files"] = {p: list(v) for p, v in sorted(self.db_files.items())}
        target = self.path(index_dir)
        tmp = target.with_name(f".{MANIFEST_FILE}.{os.getpid()}.tmp")
        try:
            with open_new(tmp) as fh:
                fh.write(json.dumps(data, separators=(",", ":")).encode("utf-8"))
            os.replace(tmp, target)
        except OSError:  # a full disk: no half-written temp file left behind
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def current_sig(cls, index_dir: Path) -> tuple[int, int, int, int] | None:
        """The manifest file's identity now (None when there is none): compare with `sig`."""
        try:
            return _sig(os.stat(cls.path(index_dir)))
        except OSError:
            return None

    @classmethod
    def drop(cls, index_dir: Path) -> None:
        """Forget the manifest: called before any write to the index."""
        try:
            cls.path(index_dir).unlink()
        except FileNotFoundError:
            pass


def _sig(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("not a boolean")
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return dict(value)


def _stats(value: Any) -> dict[str, tuple[int, int]]:
    """{path: [size, mtime_ns]} of the right types, or TypeError."""
    out: dict[str, tuple[int, int]] = {}
    for path, pair in _mapping(value).items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(v) is int for v in pair)):
            raise TypeError("not a [size, mtime_ns] pair")
        out[path] = (pair[0], pair[1])
    return out


def db_snapshot(index_dir: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under `index_dir/db`, by path relative to it."""
    root = index_dir / "db"
    out: dict[str, tuple[int, int]] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
    return out


def db_changed(index_dir: Path, recorded: Mapping[str, tuple[int, int]]) -> str | None:
    """The first table file that is no longer as `recorded` (missing, resized, rewritten), or None."""
    root = index_dir / "db"
    if not recorded:
        return None if root.is_dir() else "db"
    prefix = str(root) + os.sep  # strings, not Paths: this runs on every no-op `codectx index`
    for rel, (size, mtime_ns) in recorded.items():
        try:
            st = os.stat(prefix + rel)
        except OSError:
            return f"db/{rel} is missing"
        if st.st_size != size or st.st_mtime_ns != mtime_ns:
            return f"db/{rel} was changed since the last run"
    return None


def summary(report: IndexReport) -> dict[str, Any]:
    return {key: getattr(report, key) for key in _CARRIED}


@dataclass(frozen=True)
class QuickCheck:
    """A quick check's outcome: the no-op report, or the walk a real run can start from."""

    report: IndexReport | None  # set when nothing changed since the last complete run
    found: Discovery | None = None  # the workspace as walked (when the manifest was usable)
    known: Mapping[str, tuple[int, int]] | None = None  # the files the walk trusted unopened
    walk_s: float = 0.0
    manifest_sig: tuple[int, int, int, int] | None = None  # the manifest `known` came from
    # The tables are as the last complete run left them (the manifest's db_files still match):
    # the run need not read them all back before trusting them.
    vouched: bool = False
    notes: tuple[str, ...] = ()  # damage found on the way (a manifest that is not one, ...)


def quick_check(root: Path, settings: Settings, embed: bool) -> IndexReport | None:
    """The report of a no-op run if nothing changed since the last complete run, else None."""
    return check_workspace(root, settings, embed).report


def check_workspace(root: Path, settings: Settings, embed: bool) -> QuickCheck:
    """Compare the workspace with the manifest of the last complete run.

    Walks the workspace like a real run would (so new, deleted and ignored files count) but
    opens no unchanged file and never imports LanceDB. `embed`: this run wants vectors.
    When something changed, the walk comes back too, so the run that follows need not
    repeat it (its `known` files are the manifest's, which are the index's own records).
    """
    from codectx.indexer.walk.walkrecord import discover_cached

    index_dir = settings.index_dir()
    if index_dir.exists() and not index_dir.is_dir():
        return QuickCheck(None)  # the run says so clearly (indexer/storage/lock.py)
    manifest, problem = Manifest.read_checked(index_dir)
    notes = (f"{problem}; the index is checked in full and the manifest written again",) if problem else ()
    shaping = fingerprint(settings)
    if manifest is None or manifest.fingerprint != shaping:
        return QuickCheck(None, notes=notes)
    if (index_dir / JOURNAL_FILE).exists():
        return QuickCheck(None)  # an interrupted write waits to be rolled back
    try:
        meta = json.loads((index_dir / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return QuickCheck(None)
    if not isinstance(meta, dict) or meta.get("schema_version") != SCHEMA_VERSION:
        return QuickCheck(None)  # an older or damaged index: the store rebuilds it
    changed = db_changed(index_dir, manifest.db_files) if manifest.db_files is not None else "unknown"
    if changed is not None:
        # Table files moved under us: no "up to date" until the run has read them all back.
        note = () if changed == "unknown" else (f"{changed}; reading every table back",)
        return QuickCheck(None, notes=note)
    start = time.perf_counter()
    found = discover_cached(root, settings, index_dir, shaping, known=manifest.files)
    walk_s = time.perf_counter() - start
    if embed and not (manifest.embedded and not manifest.report.get("vectors_pending")):
        return QuickCheck(None, found, manifest.files, walk_s, manifest.sig, vouched=True)
    if not _same(found.files, manifest.files):
        return QuickCheck(None, found, manifest.files, walk_s, manifest.sig, vouched=True)
    report = IndexReport(root=str(root), index_dir=str(index_dir), quick=True)
    for key, value in manifest.report.items():
        if key in _CARRIED:
            setattr(report, key, value)
    report.unchanged = len(found.files)
    report.note_discovery(found)
    return QuickCheck(report, found, manifest.files, walk_s, manifest.sig)


def _same(found: Any, files: Mapping[str, tuple[int, int]]) -> bool:
    if len(found) != len(files):
        return False
    return all(files.get(sf.path) == (sf.size, sf.mtime_ns) for sf in found)
