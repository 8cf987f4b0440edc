"""Path globs for search filters: one meaning for `--glob`, the store's SQL and the retriever.

The meaning is gitignore's (what rg, ruff and git users expect): `*` and `?` stop at `/`, `**`
crosses folders, a pattern without a `/` matches a name at any depth (`*.py`), one with a `/`
is anchored at the workspace root (`src/*.py` matches `src/a.py`, not `src/pkg/a.py`), a folder
pattern matches everything under it (`tests/`), and a leading `!` excludes (`!tests/**`).
fnmatch, used before, let `*` cross `/` and had no exclusion.

The store cannot run gitignore matching inside LanceDB, so `like_prefilter` gives a SQL LIKE that
keeps a superset of the matches (or nothing to filter on, for an exclusion); the exact test runs
on each candidate after the query (`PathGlob.matches`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import pathspec

from codectx.errors import UsageError


@dataclass(frozen=True)
class PathGlob:
    """One `--glob` pattern; `exclude` when it started with `!`."""

    pattern: str
    exclude: bool
    spec: pathspec.GitIgnoreSpec

    @classmethod
    def parse(cls, text: str) -> PathGlob:
        raw = text.strip()
        exclude = raw.startswith("!")
        pattern = raw[1:] if exclude else raw
        if not pattern or pattern in {"/", "!"}:
            raise UsageError(f"glob {text!r}: empty pattern")
        if _unclosed_class(pattern):
            # git's matcher gives up on the whole pattern there: the search would find nothing.
            raise UsageError(
                f"glob {text!r}: '[' starts a character class that is never closed (write \\[ for a '[')"
            )
        try:
            spec = pathspec.GitIgnoreSpec.from_lines([pattern])
            # Compiled and tried here, not on the search's first candidate: a pattern the regex
            # engine refuses (`[z-a]`) must be the user's error, not a traceback mid-search.
            spec.match_file("probe")
        except re.error as exc:  # its position is in pathspec's regex, not in the glob: left out
            raise UsageError(f"glob {text!r}: {exc.msg}") from None
        except (ValueError, TypeError) as exc:  # pathspec's error for a malformed pattern
            raise UsageError(f"glob {text!r}: {exc}") from None
        return cls(pattern, exclude, spec)

    def matches(self, path: str) -> bool:
        """Whether a workspace-relative POSIX path passes this filter."""
        hit = self.spec.match_file(path)
        return not hit if self.exclude else hit

    def like_prefilter(self) -> str | None:
        """A LIKE pattern (escape `\\`) that every matching path satisfies; None: no prefilter."""
        if self.exclude:
            return None
        body = self.pattern.rstrip("/")
        anchored = "/" in body
        like = _like(body.lstrip("/"))
        # Unanchored patterns match a name at any depth; any pattern also matches what is under it.
        return (like if anchored else "%" + like) + "%"


@lru_cache(maxsize=64)
def path_glob(text: str) -> PathGlob:
    """`PathGlob.parse`, compiled once per pattern (a search tests it on every candidate)."""
    return PathGlob.parse(text)


def _unclosed_class(pattern: str) -> bool:
    """Whether an unescaped `[` has no `]` after it (a `]` right after `[` or `[!` is a member)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            j = i + 1 + (pattern[i + 1 : i + 2] in ("!", "^"))
            j += pattern[j : j + 1] == "]"
            close = pattern.find("]", j)
            if close < 0:
                return True
            i = close
        i += 1
    return False


def _like(glob: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):  # zero or more folders: `src/**/a.py` matches `src/a.py`
            if not out or out[-1] != "%":
                out.append("%")
            i += 3
            continue
        if ch == "[" and "]" in glob[i + 2 :]:
            i = glob.index("]", i + 2)  # a class is one character: "anything" keeps a superset
            ch = "*"
        if ch in "%_\\":
            out.append("\\" + ch)
        elif ch == "*":
            if not out or out[-1] != "%":
                out.append("%")
        elif ch == "?":
            out.append("_")
        else:
            out.append(ch)
        i += 1
    return "".join(out)
