"""Ignore files: gitignore-syntax patterns as the walk applies them, folder by folder.

Precedence, lowest first (a later match wins, so a higher tier can re-include with `!`): the
user's global git excludes, `settings.index.exclude`, `.git/info/exclude`, `.gitignore` files,
`.ignore` files, `.codectxignore` files. Within a tier the deeper file wins. This is ripgrep's
and fd's order: a `.ignore` anywhere beats any `.gitignore` (`!generated.py` in `.ignore`
re-includes a file a `.gitignore` excludes), and `.ignore` applies outside git repositories too.
One exception: what the user excludes (global excludes, `settings.index.exclude`,
`.git/info/exclude`) no ignore file of the repository re-includes; a cloned repository's
`!local_notes.md` does not bring back what the user keeps out.

A pattern line that git would refuse (`\\`, `!`, `foo\\`, `[z-a]`) is dropped, as git drops it,
with one warning naming the file and line (`pattern_warnings`); the rest of the file still
applies. `IgnoreRules` is the stack of specs in force in one folder (each relative to the folder
that holds its file); walk/discovery.py builds it as it descends, walk/walkrecord.py keeps it
per recorded folder.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pathspec


@functools.lru_cache(maxsize=64)
def ignore_spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    """The spec of the valid lines of `patterns` (git drops invalid lines; so do we)."""
    return pathspec.GitIgnoreSpec.from_lines(_valid_lines(patterns)[0])


@functools.lru_cache(maxsize=64)
def _valid_lines(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[tuple[int, str], ...]]:
    """(the lines pathspec compiles, (1-based number, line) of each it refuses)."""
    try:
        pathspec.GitIgnoreSpec.from_lines(patterns)
        return patterns, ()
    except Exception:  # GitIgnorePatternError (`\\`, `!`), re.error (`[z-a]`), RE2's errors
        pass
    good: list[str] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(patterns, 1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception:
            bad.append((number, line))
        else:
            good.append(line)
    return tuple(good), tuple(bad)


def pattern_warnings(patterns: tuple[str, ...], source: str) -> list[str]:
    """One warning per invalid line of an ignore file or pattern list, naming `source` and the line."""
    return [
        f"{source}:{number}: invalid ignore pattern {line!r} skipped (git skips it too)"
        for number, line in _valid_lines(patterns)[1]
    ]


# Tiers, lowest precedence first (see the module docstring).
GLOBAL, SETTINGS, INFO_EXCLUDE, GITIGNORE, DOT_IGNORE, CODECTXIGNORE = range(6)
# The user's own tiers, not the repository's: what they exclude, a repository's `!` cannot re-include.
USER_TIERS = frozenset({GLOBAL, SETTINGS, INFO_EXCLUDE})
# The ignore files a folder may hold, with their tiers.
FOLDER_FILES: tuple[tuple[str, int], ...] = (
    (".gitignore", GITIGNORE),
    (".ignore", DOT_IGNORE),
    (".codectxignore", CODECTXIGNORE),
)
IGNORE_MAX_BYTES = 4 << 20  # an ignore file past this is not one (a log, a dump): skipped, warned


@dataclass(frozen=True)
class IgnoreRules:
    """Ignore specs in force for one folder, lowest precedence first: (tier, base folder, spec)."""

    specs: tuple[tuple[int, str, pathspec.GitIgnoreSpec], ...]

    def adding(self, tier: int, base: str, spec: pathspec.GitIgnoreSpec) -> IgnoreRules:
        """These rules and one more spec, placed after every spec of its tier or a lower one."""
        at = len(self.specs)
        while at and self.specs[at - 1][0] > tier:
            at -= 1
        return IgnoreRules((*self.specs[:at], (tier, base, spec), *self.specs[at:]))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        locked = False  # ignored by the user's own patterns: no file of the repository brings it back
        for tier, base, spec in self.specs:
            sub = rel[len(base) + 1 :] if base else rel
            if is_dir:
                sub += "/"
            result = spec.check_file(sub).include
            if result is None:
                continue
            if tier in USER_TIERS:
                verdict = locked = result
            elif result or not locked:
                verdict = result
        return verdict


def read_limited(path: Path, max_bytes: int = IGNORE_MAX_BYTES) -> tuple[str | None, str | None]:
    """(the text of a pattern or config file, None) or (None, what is wrong with it): "missing",
    unreadable, not a file, binary (a NUL byte) or past `max_bytes`. Invalid UTF-8 is replaced."""
    try:
        # Opened without blocking and checked before reading: a FIFO would block the open, a
        # device (/dev/zero through a link) never ends.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None, "missing"
    except IsADirectoryError:
        return None, "is a folder, not a file"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            return None, "is a folder, not a file"
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return None, f"larger than {max_bytes // (1 << 20)} MiB, so not a pattern file"
    if b"\0" in data:
        return None, "binary (it has NUL bytes), so not a pattern file"
    return data.decode("utf-8", errors="replace"), None


def read_patterns(path: Path, root: Path | None = None) -> tuple[tuple[str, ...], str | None]:
    """(the lines of an ignore file, None), or ((), what is wrong with it) when it is there but is
    not one: not a regular file (a FIFO would block the walk, a link to /dev/zero never ends),
    a link that leads out of `root` (its lines would come back in warnings), binary or too large.
    A missing file is ((), None): the usual case."""
    text, problem = read_limited(path)  # checks it is a regular file before reading it
    if text is None:
        return (), None if problem == "missing" else problem
    if root is not None:
        real, folder = os.path.realpath(path), os.path.realpath(root)
        if real != folder and not real.startswith(folder.rstrip(os.sep) + os.sep):
            return (), "a link that leads outside the workspace"
    return tuple(text.splitlines()), None
