"""Which files are test code, by their path: one rule for search (tests rank below the code
they test) and for definitions (pytest's fixtures are visible in test files only)."""

from __future__ import annotations

import posixpath
import re

# Test code: folders named tests/test/testing/__tests__, test_*.py, *_test.py, *.spec.ts, *.test.js.
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__)/|(^|/)test_[^/]*$|_test\.py$|\.(spec|test)\.[cm]?[jt]sx?$"
)


def is_test_path(path: str) -> bool:
    return TEST_PATH.search(path) is not None


def sees_fixtures(path: str) -> bool:
    """Whether pytest gives this file fixtures: a test file, or a conftest.py."""
    return is_test_path(path) or posixpath.basename(path) == "conftest.py"
