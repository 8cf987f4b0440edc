"""`--glob` means what it means in gitignore, rg and ruff; the store's SQL keeps a superset."""

from __future__ import annotations

import re

import pytest
from codectx.indexer.storage.pathglob import PathGlob

from codectx.errors import UsageError

PATHS = [
    "src/a.py",
    "src/attr/_make.py",
    "src/attr/__init__.py",
    "tests/test_a.py",
    "tests/unit/test_b.py",
    "docs/index.md",
    "setup.py",
    "pkg/tests/helper.py",
    "a_b/x.py",
    "a%b/y.py",
]

CASES = {
    "src/*.py": ["src/a.py"],
    "src/**/*.py": ["src/a.py", "src/attr/_make.py", "src/attr/__init__.py"],
    "*.py": [p for p in PATHS if p.endswith(".py")],
    "tests/": ["tests/test_a.py", "tests/unit/test_b.py", "pkg/tests/helper.py"],
    "tests": ["tests/test_a.py", "tests/unit/test_b.py", "pkg/tests/helper.py"],
    "/tests": ["tests/test_a.py", "tests/unit/test_b.py"],
    "!tests/**": [p for p in PATHS if not p.startswith("tests/")],
    "src/attr/_*.py": ["src/attr/_make.py", "src/attr/__init__.py"],
    "src/attr/_m*.py": ["src/attr/_make.py"],
    "src/?.py": ["src/a.py"],
    "a_b/*": ["a_b/x.py"],
    "a[%_]b/*.py": ["a_b/x.py", "a%b/y.py"],
    "**/test_*.py": ["tests/test_a.py", "tests/unit/test_b.py"],
}


def _like_matches(like: str, path: str) -> bool:
    out = []
    i = 0
    while i < len(like):
        ch = like[i]
        if ch == "\\":
            out.append(re.escape(like[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(out), path, re.S) is not None


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_glob_matches_like_gitignore(pattern: str) -> None:
    glob = PathGlob.parse(pattern)
    assert [p for p in PATHS if glob.matches(p)] == CASES[pattern]


@pytest.mark.parametrize("pattern", sorted(CASES))
def test_the_sql_prefilter_keeps_every_match(pattern: str) -> None:
    glob = PathGlob.parse(pattern)
    like = glob.like_prefilter()
    if like is None:
        assert glob.exclude
        return
    for path in CASES[pattern]:
        assert _like_matches(like, path), (pattern, like, path)
    # and it does filter: not everything passes the prefilter of an anchored pattern
    if pattern.startswith(("src/", "/tests")):
        assert not all(_like_matches(like, p) for p in PATHS)


@pytest.mark.parametrize("bad", ["", "!", "  "])
def test_an_empty_glob_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="glob"):
        PathGlob.parse(bad)


@pytest.mark.parametrize("bad", ["[", "src/[ab", "a[]b", "[!]x"])
def test_an_unclosed_class_is_a_usage_error(bad: str) -> None:
    """git's matcher gives up on such a pattern, so `search --glob '['` printed "No results"
    with no word on why."""
    with pytest.raises(UsageError, match="never closed"):
        PathGlob.parse(bad)


@pytest.mark.parametrize("good", ["[ab]*.py", "a[]]b", r"a\[b", "x[!a]"])
def test_a_closed_or_escaped_class_parses(good: str) -> None:
    assert PathGlob.parse(good).pattern == good


@pytest.mark.parametrize(("bad", "why"), [("[z-a]", "bad character range z-a"), ("src/[9-0]*.py", "9-0")])
def test_a_pattern_the_regex_engine_refuses_is_a_usage_error_naming_the_glob(bad: str, why: str) -> None:
    """`search --glob '[z-a]'` ended in a traceback (re.error) with nothing on stdout."""
    with pytest.raises(UsageError, match=re.escape(f"glob {bad!r}: ")) as caught:
        PathGlob.parse(bad)
    assert why in str(caught.value)
