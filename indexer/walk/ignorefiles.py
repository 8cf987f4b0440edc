"""Ignore files: gitignore-syntax patterns as the walk applies them, folder by folder.

A pattern line that git would refuse (`\\`, `!`, `foo\\`, `[z-a]`) is dropped, as git drops it,
with one warning naming the file and line (`pattern_warnings`); the rest of the file still
applies. `IgnoreRules` is the stack of specs in force in one folder (each relative to the folder
that holds its file); walk/discovery.py builds it as it descends, walk/walkrecord.py keeps it
per recorded folder.
"""

from __future__ import annotations

import functools
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


@dataclass(frozen=True)
class IgnoreRules:
    """Ignore specs in force for one folder, lowest precedence first: (base folder, spec)."""

    specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.specs:
            sub = rel[len(base) + 1 :] if base else rel
            if is_dir:
                sub += "/"
            result = spec.check_file(sub).include
            if result is not None:
                verdict = result
        return verdict


def read_patterns(path: Path) -> tuple[str, ...]:
    """The lines of an ignore file; none when it cannot be read (a missing file is the usual case)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return tuple(text.splitlines())
