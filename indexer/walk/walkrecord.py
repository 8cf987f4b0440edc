"""A record of the last walk of a workspace, so that the next walk redoes only what may have changed.

`codectx index` after a one-file edit walks the whole workspace before it knows what to re-index,
and most of that walk is Python deciding, entry by entry, what it already decided last time
(ignore rules, the never-index list, languages, content sniffs). `walk.json`, beside the index,
keeps each folder's listing with every entry's verdict, and the next walk replays a folder's
record instead of listing it when nothing it depends on can have changed:

- the folder's own mtime and ctime: any entry added, removed or renamed changes them;
- the ignore rules in force there: a signature of the stat of every ignore file from the
  workspace root down (the global git excludes file by path and stat, `.git/info/exclude`, each
  `.gitignore`, `.ignore` and `.codectxignore`), so an edited ignore file invalidates every
  folder below it; settings and this code's own source are in the
  record's header, so changing either drops the whole record;
- per file, its size, mtime and ctime (ctime also moves on chmod): a file whose stat differs is
  judged afresh. Verdicts from the path alone (never-index, ignored, lockfile, unsupported name)
  need no stat at all.

Folders with a symlink, a special file or an unreadable entry, folders reached through a symlink,
and verdicts that depend on walk order (duplicates, loops) are never recorded: those folders are
listed every time. A folder or file changed within `RACY_NS` of the walk that recorded it is not
trusted either, since a second change in the same timestamp tick would leave its stat unchanged.

The replay visits folders in the same order as a plain walk and keeps its loop and duplicate
checks, so the outcome (`Discovery`) is the same as `discover()`'s; tests compare the two.

The record is rewritten (atomically) when a folder was listed anew, or once `REJUDGE_BATCH`
files were judged afresh: a few edited files are cheaper to judge again on the next walk than
700 KB of record (Django) is to rewrite. It describes the workspace, not the index, so it needs
no lock: two walks writing at once each leave a complete, correct record.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codectx.indexer.parsing import languages
from codectx.indexer.parsing.languages import language_for
from codectx.indexer.walk import discovery, gitexcludes, ignorefiles, skiprules, walkfile
from codectx.indexer.walk.discovery import Discovery, DiscoveryError, SourceFile, Walker
from codectx.indexer.walk.ignorefiles import IgnoreRules
from codectx.indexer.walk.walkfile import (
    BY_NAME,
    DESCEND,
    LISTED,
    NOT_WALKED,
    SKIPPED,
    WALK_FILE,
    WalkRecord,
    entry_ok,
    folder_ok,
)

from codectx.privacy import policy
from codectx.settings import Settings

__all__ = ["RACY_NS", "REJUDGE_BATCH", "WALK_FILE", "WalkRecord", "discover_cached", "header_for"]

RACY_NS = 2_000_000_000  # coarse file system timestamps: trust only what is older than this
REJUDGE_BATCH = 64  # files judged afresh in recorded folders before the record is rewritten
IGNORE_FILES = tuple(name for name, _tier in ignorefiles.FOLDER_FILES)

_SHAPING_MODULES = (discovery, skiprules, languages, policy, ignorefiles, gitexcludes, walkfile)


def _code_hash() -> str:
    """The source of the code whose verdicts the record keeps: a changed rule drops old records."""
    h = hashlib.sha256()
    for source in (*(m.__file__ for m in _SHAPING_MODULES), __file__):
        try:
            h.update(Path(source or "").read_bytes())
        except OSError:
            h.update(str(source).encode())
    return h.hexdigest()[:16]


def header_for(root: Path, fingerprint: str) -> dict[str, Any]:
    """What a record must have been made with to be used: this workspace, settings and code."""
    return {"root": str(root), "settings": fingerprint, "code": _code_hash()}


class _LazyRules:
    """A folder's ignore rules, read only when some entry there must be judged afresh."""

    def __init__(
        self,
        walker: Walker,
        parent: _LazyRules | None,
        real_dir: str,
        rel_dir: str,
        names: set[str] | None,
        base: IgnoreRules | None = None,
    ) -> None:
        self.walker, self.parent = walker, parent
        self.real_dir, self.rel_dir, self.names = real_dir, rel_dir, names
        self.rules = base

    def get(self) -> IgnoreRules:
        if self.rules is None:
            assert self.parent is not None
            self.rules = self.walker.rules_for(self.real_dir, self.rel_dir, self.parent.get(), self.names)
        return self.rules


def _stat_sig(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _rules_sig(parent_sig: str, real_dir: str, names: Any) -> str:
    own = [f"{n}={_stat_sig(os.path.join(real_dir, n))}" for n in IGNORE_FILES if n in names]
    if not own:
        return parent_sig
    return hashlib.sha256("|".join([parent_sig, *own]).encode()).hexdigest()[:16]


class _CachingWalker(Walker):
    """`Walker` that replays the folders `old` still describes and records every folder it can."""

    def __init__(self, root: Path, settings: Settings, old: WalkRecord | None, racy_ns: int) -> None:
        super().__init__(root, settings)
        self.started = time.time_ns()
        self.old_dirs: dict[str, list[Any]] = old.dirs if old is not None else {}
        self.trusted_before = (old.walked_ns if old is not None else 0) - racy_ns
        self.now_trusted_before = self.started - racy_ns
        self.new_dirs: dict[str, list[Any]] = {}
        # When to rewrite the record: a folder listed anew (or one listed only because it was too
        # recent for the old record and is old enough now), or many files judged afresh. A few
        # edited files are cheaper to judge again next time than the record is to rewrite.
        self.dirs_changed = False
        self.rejudged = 0

    def trusted(self, ctime_ns: int, folder: bool = False) -> bool:
        if ctime_ns <= self.trusted_before:
            return True
        if folder and ctime_ns <= self.now_trusted_before:
            self.dirs_changed = True
        return False

    @property
    def changed(self) -> bool:
        return self.dirs_changed or self.rejudged >= REJUDGE_BATCH

    def walk(self) -> Discovery:
        root = str(self.root)
        root_stat = os.stat(root)
        visited: set[tuple[int, int]] = {(root_stat.st_dev, root_stat.st_ino)}
        # The workspace-wide rules: `.git/info/exclude`, and the global excludes by path and stat
        # (editing that file, or pointing core.excludesFile elsewhere, re-judges every folder).
        info_sig = _stat_sig(os.path.join(root, ".git", "info", "exclude"))
        glob_path = self.excludes.path
        glob_sig = f"{glob_path}={_stat_sig(str(glob_path))}" if glob_path is not None else "-"
        base_sig = hashlib.sha256(f"{info_sig}|{glob_sig}".encode()).hexdigest()[:16]
        base = _LazyRules(self, None, root, "", None, self.base_rules())
        stack: list[_Todo] = [(root, "", base, (root,), root_stat, base_sig)]
        while stack:
            todo = stack.pop()
            subdirs = self._replay(todo, visited)
            if subdirs is None:
                subdirs = self._list(todo, visited)
                rel_dir = todo[1]
                if self.new_dirs.get(rel_dir) != self.old_dirs.get(rel_dir):
                    self.dirs_changed = True
            stack.extend(reversed(subdirs))
        self.out.files.sort(key=lambda f: f.path)
        return self.out

    def _replay(self, todo: _Todo, visited: set[tuple[int, int]]) -> list[_Todo] | None:
        """Replay a folder's record; None when it is missing or may be stale (then it is listed)."""
        real_dir, rel_dir, parent, ancestors, st_dir, parent_sig = todo
        rec: Any = self.old_dirs.get(rel_dir)
        if not folder_ok(rec) or rec[0] != st_dir.st_mtime_ns or rec[1] != st_dir.st_ctime_ns:
            return None
        if not self.trusted(st_dir.st_ctime_ns, folder=True):
            return None
        entries: list[list[Any]] = rec[3]
        if not all(entry_ok(e) for e in entries):
            return None  # a damaged record: list the folder afresh
        names = {e[0] for e in entries}
        sig = _rules_sig(parent_sig, real_dir, names)
        if sig != rec[2]:
            return None
        # Stat first, emit after: an entry gone missing means the listing changed under us.
        prefix = real_dir if real_dir.endswith("/") else real_dir + "/"
        stats: list[os.stat_result | None] = []
        for entry in entries:
            kind = entry[1]
            if kind in (NOT_WALKED, BY_NAME):
                stats.append(None)
                continue
            try:
                st = os.stat(prefix + entry[0])
            except OSError:
                return None
            if not (stat.S_ISDIR(st.st_mode) if kind == DESCEND else stat.S_ISREG(st.st_mode)):
                return None
            stats.append(st)
        rules = _LazyRules(self, parent, real_dir, rel_dir, names)
        rel_prefix = rel_dir + "/" if rel_dir else ""
        cacheable = True
        new_entries = entries  # copied on the first change
        subdirs: list[_Todo] = []
        files = self.out.files
        for i, entry in enumerate(entries):
            kind = entry[1]
            if kind in (NOT_WALKED, BY_NAME):
                if entry[2]:
                    self.skip(rel_prefix + entry[0] + ("/" if kind == NOT_WALKED else ""), entry[2])
                continue
            entry_st = stats[i]
            assert entry_st is not None
            st = entry_st
            name = entry[0]
            rel, path = rel_prefix + name, prefix + name
            if kind == DESCEND:
                key = (st.st_dev, st.st_ino)
                if key in visited:  # a symlink walked earlier leads here: as a plain walk decides
                    self.skip(rel + "/", "symlink-loop" if path in ancestors else "duplicate")
                    cacheable = False
                    continue
                visited.add(key)
                subdirs.append((path, rel, rules, (*ancestors, path), st, sig))
                continue
            if (
                entry[3] == st.st_size
                and entry[4] == st.st_mtime_ns
                and entry[5] == st.st_ctime_ns
                and self.trusted(st.st_ctime_ns)
            ):
                if kind == LISTED:
                    files.append(SourceFile(rel, path, st.st_size, st.st_mtime_ns, entry[2]))
                else:
                    self.skip(rel, entry[2])
                continue
            self.rejudged += 1
            judged = self._judge(name, rel, path, st, language_for(rel))
            if judged is None:
                cacheable = False
            elif judged != entry:
                if new_entries is entries:
                    new_entries = list(entries)
                new_entries[i] = judged
        if cacheable:
            self.new_dirs[rel_dir] = rec if new_entries is entries else [rec[0], rec[1], sig, new_entries]
        else:
            self.dirs_changed = True
        return subdirs

    def _judge(
        self, name: str, rel: str, path: str, st: os.stat_result, language: str | None
    ) -> list[Any] | None:
        """Judge a file by size and content (its path passed) and return its entry; None: do not record."""
        n_files, n_skipped = len(self.out.files), len(self.out.skipped)
        self.by_content(name, rel, path, st, language)
        sig = [st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        if len(self.out.files) > n_files:
            return [name, LISTED, self.out.files[-1].language, *sig]
        if len(self.out.skipped) > n_skipped:
            reason = self.out.skipped[-1].reason
            return None if reason == "unreadable" else [name, SKIPPED, reason, *sig]
        return None

    def _list(self, todo: _Todo, visited: set[tuple[int, int]]) -> list[_Todo]:
        """List a folder as `Walker.walk` does, recording its entries when that is safe."""
        real_dir, rel_dir, parent, ancestors, st_dir, parent_sig = todo
        try:
            entries = sorted(os.scandir(real_dir), key=lambda e: e.name)
        except OSError:
            self.skip(rel_dir + "/" if rel_dir else ".", "unreadable")
            return []
        names = {e.name for e in entries}
        if rel_dir and "pyvenv.cfg" in names:  # a virtualenv, whatever its name
            self.skip(rel_dir + "/", "ignored")
            return []
        rules = _LazyRules(self, parent, real_dir, rel_dir, names)
        sig = _rules_sig(parent_sig, real_dir, names)
        # A folder reached through a symlink is listed every time (its record would be keyed by
        # a path that is not where it lives).
        cacheable = real_dir == (os.path.join(str(self.root), rel_dir) if rel_dir else str(self.root))
        linked = not cacheable
        recorded: list[list[Any]] = []
        subdirs: list[_Todo] = []
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if discovery.undecodable(name):
                self.skip_undecodable(rel)  # warned on every walk: never recorded
                cacheable = False
                continue
            st: os.stat_result | None
            try:
                st = None if entry.is_symlink() else os.stat(entry.path)
            except OSError:
                st = None
            if st is None or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                cacheable = False  # symlinks, vanished or special entries: judged afresh every time
                child = self._entry(entry, rel, rules.get(), ancestors, visited)
                if child is not None:
                    real_child, child_rel = child
                    try:
                        st_child = os.stat(real_child)
                    except OSError:
                        continue
                    subdirs.append((real_child, child_rel, rules, (*ancestors, real_child), st_child, sig))
                continue
            if stat.S_ISDIR(st.st_mode):
                n_skipped = len(self.out.skipped)
                child = self._folder(name, rel, entry.path, st, rules.get(), ancestors, visited)
                if child is not None:
                    subdirs.append((entry.path, rel, rules, (*ancestors, entry.path), st, sig))
                    recorded.append([name, DESCEND])
                    continue
                reason = self.out.skipped[-1].reason if len(self.out.skipped) > n_skipped else ""
                if reason in ("duplicate", "symlink-loop"):
                    cacheable = False  # depends on what was walked before
                recorded.append([name, NOT_WALKED, reason])
                continue
            if linked and self.secret_target(entry.path, rel):
                self.skip(rel, "secret-file")  # in a folder reached through a symlink: its real path
                continue
            verdict, language = self.by_name(name, rel, rules.get())
            if verdict is not None:
                if verdict:
                    self.skip(rel, verdict)
                recorded.append([name, BY_NAME, verdict])
                continue
            judged = self._judge(name, rel, entry.path, st, language)
            if judged is None:
                cacheable = False
            else:
                recorded.append(judged)
        if cacheable:
            self.new_dirs[rel_dir] = [st_dir.st_mtime_ns, st_dir.st_ctime_ns, sig, recorded]
        return subdirs


# A folder to visit: real path, workspace-relative path, parent's rules, real ancestors (loop
# detection), its stat, and the signature of the ignore rules in force in its parent.
_Todo = tuple[str, str, _LazyRules, tuple[str, ...], os.stat_result, str]


def discover_cached(
    root: Path,
    settings: Settings,
    index_dir: Path,
    fingerprint: str,
    known: Mapping[str, tuple[int, int]] | None = None,
    racy_ns: int = RACY_NS,
) -> Discovery:
    """`discover(root, settings, known)`, replaying what `index_dir/walk.json` recorded; the record
    is rewritten when this walk saw something new. `fingerprint`: the settings that shape the walk."""
    try:
        real_root = Path(os.path.realpath(root))
    except OSError as exc:
        raise DiscoveryError(f"cannot resolve workspace {root}: {exc}") from exc
    if not real_root.is_dir():
        return discovery.discover(root, settings, known)  # the same clear message
    header = header_for(real_root, fingerprint)
    old, problem = WalkRecord.read_checked(index_dir, header)
    walker = _CachingWalker(real_root, settings, old, racy_ns)
    walker.known = known or {}
    found = walker.walk()
    if problem:
        found.warnings.append(problem)
    if walker.changed and index_dir.is_dir():
        WalkRecord(header, walker.started, walker.new_dirs).write(index_dir)
    return found
