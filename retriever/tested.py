"""What a test tests: the definitions the enclosing test's name names.

`def test_timetz(self):` calls `self.arrow.timetz()`; `def test_month_name(self):` calls
`self.locale.month_name(`; `class TestDateTimeField:` builds `fields.DateTime(`. A test's name
says which function it exercises even when nothing in the test's text says what the receiver
is. In the development set's test files the not-typed call's callee is named by the enclosing
test's name in about a third of the tasks (arrow 31 of 70, marshmallow 30 of 87, boltons 32 of
89), often where no other list finds it (`self.arrow` is set by a fixture elsewhere).

A test name's words (`test_from_timestamp` -> from, timestamp) are joined in every contiguous
run the usual ways (`from_timestamp`, `fromtimestamp`, `fromTimestamp`, `FromTimestamp`) and
looked up as definition names outside test code; longer runs first, the innermost test first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from codectx.indexer.model import Definition
from codectx.indexer.parsing.identifiers import split_identifier
from codectx.retriever.cursor_info import Scope
from codectx.retriever.testfiles import is_test_path

MAX_RUN = 4  # words in one name
MIN_SINGLE = 3  # a one-word name shorter than this (`at`, `id`) is too common to mean much
PER_NAME = 2  # definitions kept per name (a common method name has many)
MAX_DEFINITIONS = 12
MAX_WORDS = 6  # of a test's name: a longer one's tail is detail (`..._with_local_tz_info`)
# Names looked up per request: in the index's lookup phase each lookup scans the name columns
# (~0.5 ms on 200,000 definitions); six words make at most 60 names.
MAX_LOOKUPS = 80
_TEST_NAME = re.compile(r"^(?:test_|Test_?(?=[A-Z]))(\w+)$")


def words_of_test(name: str) -> list[str]:
    """The words of a test's name after its `test`/`Test` prefix, lower case; [] for a name
    that is not a test's."""
    found = _TEST_NAME.match(name)
    if found is None:
        return []
    return split_identifier(found.group(1))[:MAX_WORDS]


def named_candidates(words: Sequence[str]) -> list[str]:
    """Definition names a test's words may spell, longer runs first."""
    out: dict[str, None] = {}
    for size in range(min(MAX_RUN, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            run = list(words[i : i + size])
            if size == 1 and len(run[0]) < MIN_SINGLE:
                continue
            for name in (
                "_".join(run),
                "".join(run),
                run[0] + "".join(w.capitalize() for w in run[1:]),
                "".join(w.capitalize() for w in run),
            ):
                out.setdefault(name, None)
    return list(out)


def definitions_tested(
    path: str, scopes: Sequence[Scope], named: Callable[[str], list[Definition]]
) -> list[tuple[Definition, str]]:
    """(definition, the name that matched) for the tests enclosing the cursor in a test file,
    innermost first; none outside test code."""
    if not is_test_path(path):
        return []
    out: list[tuple[Definition, str]] = []
    seen: set[tuple[str, int]] = set()
    lookups = 0
    for scope in reversed(scopes):
        for name in named_candidates(words_of_test(scope.name.rsplit(".", 1)[-1])):
            lookups += 1
            if lookups > MAX_LOOKUPS:
                return out
            kept = 0
            for d in named(name):
                key = (d.path, d.start_line)
                if key in seen or is_test_path(d.path):
                    continue
                seen.add(key)
                out.append((d, name))
                kept += 1
                if kept >= PER_NAME or len(out) >= MAX_DEFINITIONS:
                    break
            if len(out) >= MAX_DEFINITIONS:
                return out
    return out
