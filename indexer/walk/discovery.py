"""Discovery: which files of a workspace get indexed, and why the others do not.

The walk honours the user's global git excludes (walk/gitexcludes.py), `.git/info/exclude`,
`.gitignore`, `.ignore` and `.codectxignore` files at every level (each relative to its own
folder; precedence as ripgrep's, walk/ignorefiles.py) and `settings.index.exclude`. It always
skips `.git/` and the index folder, and by default dependency folders (`node_modules/`,
`vendor/`, `third_party/`: code the project did not write), virtualenvs (any folder with a
`pyvenv.cfg`) and build output (`SKIP_DIRS`).

Secret-bearing files (the never-index / never-send policy, codectx/privacy/policy.py) are
never indexed, whatever any ignore file says. `.env.example`-style templates
count as secret files too: they are often filled in with real values.

Symlinks are resolved: one that leads out of the workspace root is skipped,
one whose target is a secret-bearing file is skipped like the file itself
(never-index is judged on the link's name and on its real path), and each
real folder is walked once, so loops end. One bad file never stops
discovery; it is listed in `Discovery.skipped` with a short, stable reason.

Invalid UTF-8 is not a reason to skip (walk/content.py decodes with replacement characters, and
UTF-16/32 by their byte-order mark); what a file's first bytes say (binary, generated, minified)
is walk/content.py's `sniff`.

Nothing in a workspace stops the walk: an ignore-file line that is not a valid
pattern (`\\`, `!`, `foo\\`, `[z-a]`) is dropped, as git drops it, and a file
or folder whose name is not valid UTF-8 is skipped ("undecodable-name"); each
gives one warning naming the file (and line) in `Discovery.warnings`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pathspec
from codectx.indexer.errors import IndexerError
from codectx.indexer.parsing.languages import language_for, language_from_shebang, refine_language
from codectx.indexer.walk import ignorefiles as tiers
from codectx.indexer.walk.content import sniff, text_head
from codectx.indexer.walk.gitexcludes import global_excludes
from codectx.indexer.walk.ignorefiles import IgnoreRules, ignore_spec, pattern_warnings, read_patterns
from codectx.indexer.walk.skiprules import (
    LOCKFILES,
    SKIP_DIRS,
    SNIFF_BYTES,
)

from codectx.errors import CodectxError
from codectx.privacy.policy import is_never_index, policy_for
from codectx.settings import Settings

__all__ = [
    "LOCKFILES",
    "SKIP_DIRS",
    "Discovery",
    "DiscoveryError",
    "Skipped",
    "SourceFile",
    "discover",
    "discover_files",
    "is_never_index",
]


class DiscoveryError(IndexerError):
    """The workspace itself cannot be walked (missing, not a folder)."""


@dataclass(frozen=True)
class SourceFile:
    path: str  # POSIX, workspace-relative
    real: str  # the absolute path walked (a string: a Path per file costs a fifth of a walk)
    size: int
    mtime_ns: int
    language: str

    @property
    def abs_path(self) -> Path:
        return Path(self.real)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str  # binary, too-large, minified, generated, lockfile, secret-file, ignored, ...


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # bad ignore lines, undecodable names

    def skipped_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.skipped:
            counts[item.reason] = counts.get(item.reason, 0) + 1
        return counts


def undecodable(name: str) -> bool:
    """True for a name that is not valid UTF-8 on disk (Python holds it with surrogate escapes)."""
    if name.isascii():
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown(path: str) -> str:
    """A path fit to print: undecodable bytes as \\xNN escapes."""
    return os.fsencode(path).decode("utf-8", errors="backslashreplace")


def _norm(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


class Walker:
    """One walk of a workspace: ignore rules per folder, symlink loops, size limits; walkrecord.py
    drives the same walker when it replays a recorded walk."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        self.max_bytes: int = settings.index.max_file_bytes
        self.out = Discovery()
        self.report_ignored = False
        self.known: Mapping[str, tuple[int, int]] = {}
        self.secret = policy_for(settings)
        self.out.warnings.extend(
            pattern_warnings(tuple(settings.index.never_index), "setting index.never_index")
        )
        self.excludes = global_excludes(root)  # read once per walk: walkrecord.py signs its stat
        self.out.warnings.extend(self.excludes.warnings)
        # Paths inside the walk are strings: pathlib objects for every entry cost a third of it.
        self.index_dir: str | None = None
        try:
            self.index_dir = os.path.realpath(settings.index_dir())
        except CodectxError:
            self.index_dir = None

    def compiled(self, patterns: tuple[str, ...], source: str) -> pathspec.GitIgnoreSpec:
        """The spec of `patterns`; each invalid line becomes a warning naming `source`."""
        self.out.warnings.extend(pattern_warnings(patterns, source))
        return ignore_spec(patterns)

    def base_rules(self) -> IgnoreRules:
        """The rules of the whole workspace: global excludes, settings, `.git/info/exclude`."""
        rules = IgnoreRules(())
        if self.excludes.patterns and self.excludes.path is not None:
            spec = self.compiled(self.excludes.patterns, f"global git excludes {self.excludes.path}")
            rules = rules.adding(tiers.GLOBAL, "", spec)
        exclude = tuple(self.settings.index.exclude)
        if exclude:
            rules = rules.adding(tiers.SETTINGS, "", self.compiled(exclude, "setting index.exclude"))
        info = self.patterns(str(self.root / ".git" / "info" / "exclude"), ".git/info/exclude")
        if info:
            rules = rules.adding(tiers.INFO_EXCLUDE, "", self.compiled(info, ".git/info/exclude"))
        return rules

    def patterns(self, path: str, source: str) -> tuple[str, ...]:
        """An ignore file's lines; none, with a warning, when it is there but is not one."""
        lines, problem = read_patterns(Path(path), self.root)
        if problem:
            self.out.warnings.append(f"{source}: {problem}; its patterns are not applied")
        return lines

    def rules_for(
        self, real_dir: str, rel_dir: str, parent: IgnoreRules, names: set[str] | None = None
    ) -> IgnoreRules:
        """The rules in force inside a folder; `names` (its listing) spares opening absent files."""
        rules = parent
        for ignore_file, tier in tiers.FOLDER_FILES:
            if names is not None and ignore_file not in names:
                continue
            source = shown(f"{rel_dir}/{ignore_file}" if rel_dir else ignore_file)
            patterns = self.patterns(os.path.join(real_dir, ignore_file), source)
            if patterns:
                rules = rules.adding(tier, rel_dir, self.compiled(patterns, source))
        return rules

    def skip(self, rel: str, reason: str) -> None:
        self.out.skipped.append(Skipped(rel, reason))

    def secret_target(self, real: str, rel: str) -> bool:
        """True when a file reached through a symlink (its own or a folder's) really is a never-index
        file: `app/envlink.py -> ../.env` is judged as `.env` too, not only by its benign name."""
        real_rel = os.path.relpath(real, self.root)
        return real_rel != rel and self.secret.refuses(real_rel)

    def skip_undecodable(self, rel: str) -> None:
        """A name that is not UTF-8 cannot be matched, stored or sent: skipped, with a warning."""
        self.skip(rel, "undecodable-name")
        self.out.warnings.append(f"{shown(rel)}: the name is not valid UTF-8; skipped")

    def inside_root(self, real: str) -> bool:
        root = str(self.root)
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def walk(self) -> Discovery:
        visited: set[tuple[int, int]] = set()
        root_stat = os.stat(self.root)
        visited.add((root_stat.st_dev, root_stat.st_ino))
        # Each entry: (real folder, workspace-relative folder, the parent's rules, real ancestors
        # for loop detection). A folder's own ignore files are read once its listing is known.
        stack: list[tuple[str, str, IgnoreRules, tuple[str, ...]]] = [
            (str(self.root), "", self.base_rules(), (str(self.root),))
        ]
        while stack:
            real_dir, rel_dir, parent_rules, ancestors = stack.pop()
            try:
                entries = sorted(os.scandir(real_dir), key=lambda e: e.name)
            except OSError:
                self.skip(rel_dir + "/" if rel_dir else ".", "unreadable")
                continue
            names = {e.name for e in entries}
            if rel_dir and "pyvenv.cfg" in names:  # a virtualenv, whatever its name
                self.skip(rel_dir + "/", "ignored")
                continue
            rules = self.rules_for(real_dir, rel_dir, parent_rules, names)
            subdirs: list[tuple[str, str, IgnoreRules, tuple[str, ...]]] = []
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                child = self._entry(entry, rel, rules, ancestors, visited)
                if child is not None:
                    real_child, child_rel = child
                    subdirs.append((real_child, child_rel, rules, (*ancestors, real_child)))
            stack.extend(reversed(subdirs))
        self.out.files.sort(key=lambda f: f.path)
        return self.out

    def _entry(
        self,
        entry: os.DirEntry[str],
        rel: str,
        rules: IgnoreRules,
        ancestors: tuple[str, ...],
        visited: set[tuple[int, int]],
    ) -> tuple[str, str] | None:
        """Handle one folder entry; return (real path, rel) of a folder to descend into."""
        if undecodable(entry.name):
            self.skip_undecodable(rel)
            return None
        try:
            is_link = entry.is_symlink()
            real = os.path.realpath(entry.path) if is_link else entry.path
            if is_link and not self.inside_root(real):
                self.skip(rel, "symlink-outside-root")
                return None
            st = os.stat(entry.path)  # follows links
        except FileNotFoundError:
            self.skip(rel, "broken-symlink")
            return None
        except OSError as exc:
            if "loop" in str(exc).lower() or getattr(exc, "errno", None) == 40:
                self.skip(rel, "symlink-loop")
            else:
                self.skip(rel, "unreadable")
            return None
        if stat.S_ISDIR(st.st_mode):
            return self._folder(entry.name, rel, real, st, rules, ancestors, visited)
        if not stat.S_ISREG(st.st_mode):
            self.skip(rel, "special-file")  # FIFOs, sockets, devices: never opened
            return None
        linked = is_link or entry.path != os.path.join(self.root, rel)  # itself or a folder above a link
        if linked and self.secret_target(real, rel):
            self.skip(rel, "secret-file")
            return None
        self._file(entry.name, rel, entry.path, st, rules)
        return None

    def skipped_folder(self, name: str, real: str) -> bool:
        """A folder skipped by name: dependencies, virtualenvs, build output, the index.

        (A virtualenv under another name is recognised by its `pyvenv.cfg` once listed.)"""
        return (
            name in SKIP_DIRS
            or name.endswith(".egg-info")
            or (self.index_dir is not None and real == self.index_dir)
        )

    def _folder(
        self,
        name: str,
        rel: str,
        real: str,
        st: os.stat_result,
        rules: IgnoreRules,
        ancestors: tuple[str, ...],
        visited: set[tuple[int, int]],
    ) -> tuple[str, str] | None:
        if name in (".git", ".codectx") or (self.index_dir is not None and real == self.index_dir):
            return None
        if self.skipped_folder(name, real):
            self.skip(rel + "/", "ignored")
            return None
        if rules.ignored(rel, is_dir=True):
            return None
        key = (st.st_dev, st.st_ino)
        if key in visited:
            self.skip(rel + "/", "symlink-loop" if real in ancestors else "duplicate")
            return None
        visited.add(key)
        return real, rel

    def _file(self, name: str, rel: str, path: str, st: os.stat_result, rules: IgnoreRules) -> None:
        verdict, language = self.by_name(name, rel, rules)
        if verdict is None:
            self.by_content(name, rel, path, st, language)
        elif verdict:
            self.skip(rel, verdict)

    def by_name(self, name: str, rel: str, rules: IgnoreRules) -> tuple[str | None, str | None]:
        """A file's verdict from its path alone: (skip reason, or "" when silently ignored, None);
        with None, the language its name gives (None: the content decides)."""
        if self.secret.refuses(rel):
            return "secret-file", None
        if rules.ignored(rel, is_dir=False):
            return ("ignored" if self.report_ignored else ""), None
        if name in LOCKFILES:
            return "lockfile", None
        language = language_for(rel)
        if language is None and "." in name:
            return "unsupported", None  # by name: no need to open it
        return None, language

    def by_content(self, name: str, rel: str, path: str, st: os.stat_result, language: str | None) -> None:
        """The rest of a file's verdict, from its size and first bytes: listed or skipped."""
        if st.st_size > self.max_bytes:
            self.skip(rel, "too-large")
            return
        known = self.known.get(rel)
        unchanged = known is not None and known[0] == st.st_size and known[1] == st.st_mtime_ns
        if unchanged and language and not name.endswith(".h"):  # `.h` needs the head to tell C from C++
            # Unchanged since the caller last saw it indexable: the content sniff would agree.
            self.out.files.append(SourceFile(rel, path, st.st_size, st.st_mtime_ns, language))
            return
        try:
            with open(path, "rb") as fh:
                head = fh.read(SNIFF_BYTES)
        except OSError:
            self.skip(rel, "unreadable")
            return
        head = text_head(head)
        if language is None:
            language = language_from_shebang(head.split(b"\n", 1)[0].decode("utf-8", "replace"))
        if language is None:
            self.skip(rel, "unsupported")
            return
        reason = sniff(head, name)
        if reason is not None:
            self.skip(rel, reason)
            return
        language = refine_language(language, rel, head)
        self.out.files.append(SourceFile(rel, path, st.st_size, st.st_mtime_ns, language))


def discover(root: Path, settings: Settings, known: Mapping[str, tuple[int, int]] | None = None) -> Discovery:
    """Every indexable file under `root`, and the skipped ones with a reason.

    `known` maps paths already indexed to their (size, mtime_ns): those files, when
    unchanged, are not opened again for the content sniff (a no-op re-index stays cheap).
    """
    try:
        real_root = Path(os.path.realpath(root))
    except OSError as exc:
        raise DiscoveryError(f"cannot resolve workspace {root}: {exc}") from exc
    if not real_root.exists():
        raise DiscoveryError(f"workspace does not exist: {root}")
    if not real_root.is_dir():
        raise DiscoveryError(f"workspace is not a folder: {root}")
    walker = Walker(real_root, settings)
    walker.known = known or {}
    return walker.walk()


def discover_files(root: Path, settings: Settings, paths: Iterable[str]) -> Discovery:
    """Discovery's verdict on a few workspace-relative paths, without walking the whole tree
    (walk/pathcheck.py: the same rules as `discover`, for files an editor saved)."""
    from codectx.indexer.walk.pathcheck import check_paths  # it builds on Walker, defined here

    return check_paths(root, settings, paths)
