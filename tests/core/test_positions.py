"""codectx/positions.py: `FILE:LINE:COL` parsing and the 1-based to 0-based conversion."""

from __future__ import annotations

from pathlib import Path

import pytest

from codectx.errors import UsageError
from codectx.positions import Cursor, cursor_from_args, split_location, to_zero_based, zero_based_json


def test_split_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x\n")
    (tmp_path / "odd:name.py").write_text("x\n")
    (tmp_path / "dir:1").mkdir()
    assert split_location("a.py") == ("a.py", None, None)
    assert split_location("a.py:3") == ("a.py", "3", None)
    assert split_location("a.py:3:9") == ("a.py", "3", "9")
    assert split_location("odd:name.py") == ("odd:name.py", None, None)  # an existing name is itself
    assert split_location("odd:name.py:2:1") == ("odd:name.py", "2", "1")
    assert split_location("odd:name.py:2") == ("odd:name.py", "2", None)  # was the name, whole
    assert split_location("odd:name.py:2-5") == ("odd:name.py", "2", None)
    assert split_location("dir:1/b.py:4") == ("dir:1/b.py", "4", None)
    assert split_location("a.py:x") == ("a.py", "x", None)  # a.py exists: a bad number, reported later
    assert split_location("missing.py:x") == ("missing.py:x", None, None)  # just a name
    assert split_location("missing.py:-2") == ("missing.py", "-2", None)
    # what `search` prints, FILE:FIRST-LAST, is line FIRST (a backwards range is left to be refused)
    assert split_location("missing.py:7-13") == ("missing.py", "7", None)
    assert split_location("a.py:7-13:2") == ("a.py", "7", "2")
    assert split_location("a.py:13-7") == ("a.py", "13-7", None)


def test_cursor_from_args() -> None:
    assert cursor_from_args("f.py", "3", None) == Cursor("f.py", 3, 1)
    assert cursor_from_args("f.py:3:4", None, None) == Cursor("f.py", 3, 4)
    assert cursor_from_args("f.py:3", None, "7") == Cursor("f.py", 3, 7)
    assert cursor_from_args("f.py:7-13", None, None) == Cursor("f.py", 7, 1)
    for file, line, column, message in [
        ("f.py", None, None, "give the cursor's line"),
        ("f.py", "0", None, "lines are 1-based"),
        ("f.py", "1", "-1", "columns are 1-based"),
        ("f.py", "1.5", None, "whole number"),
        ("f.py:2", "2", None, "given twice"),
        ("f.py:2:2", None, "2", "given twice"),
        ("f.py:9-3", None, None, "lines 9-3 run backwards"),
    ]:
        with pytest.raises(UsageError, match=message):
            cursor_from_args(file, line, column)


def test_to_zero_based() -> None:
    text = "one\ntwo\n"
    assert to_zero_based(Cursor("f", 1, 1), text, "f") == (0, 0)
    assert to_zero_based(Cursor("f", 2, 4), text, "f") == (1, 3)
    assert to_zero_based(Cursor("f", 3, 1), text, "f") == (2, 0)  # after the final newline
    with pytest.raises(UsageError, match=r"line 4 is past the end of f \(it has 2 lines\)"):
        to_zero_based(Cursor("f", 4, 1), text, "f")
    with pytest.raises(UsageError, match=r"it has 1 line\)"):
        to_zero_based(Cursor("f", 3, 1), "only", "f")
    with pytest.raises(UsageError, match="the last column is 4"):
        to_zero_based(Cursor("f", 1, 5), text, "f")
    assert list(zero_based_json({"a": 1})) == ["positions", "a"]
