"""Positions on the command line: 1-based for people, `FILE:LINE:COL`, 0-based `--json` that says so.

Round trips on a real index: a place `codectx search` prints is fed back to `context` and
`complete` and addresses the same code; `FILE:LINE:COL` is the same as `--line/--character`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codectx.cli import main
from tests.support.indexes import build_index, copy_repo


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_repo("python", tmp_path)
    build_index(root)
    monkeypatch.chdir(root)
    return root


def test_a_line_search_prints_is_the_line_context_and_complete_address(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "search", "format_url", "--lexical", "-k", "3")
    assert code == 0, err
    first = re.search(r"^\s*1\. (\S+):(\d+)-(\d+)\s+(\S+)", out, re.MULTILINE)
    assert first is not None, out
    path, start, symbol = first.group(1), int(first.group(2)), first.group(4)
    assert symbol.endswith("format_url")
    # 1-based: the printed first line is the `def` line itself.
    assert (repo / path).read_text().split("\n")[start - 1].lstrip().startswith("def format_url")

    code, out, _ = run(capsys, "search", "format_url", "--lexical", "-k", "3", "--json")
    data = json.loads(out)
    assert data["positions"] == "0-based" and data["results"][0]["start_line"] == start - 1

    # The printed place, fed back (the column after `def `): the cursor is on that line.
    code, out, err = run(capsys, "context", f"{path}:{start}:5", "--lexical", "--json")
    assert code == 0, err
    ctx = json.loads(out)
    assert ctx["positions"] == "0-based" and (ctx["line"], ctx["character"]) == (start - 1, 4)
    code, out, _ = run(capsys, "context", f"{path}:{start}:5", "--lexical")
    assert out.startswith(f"{path}:{start}:5  budget")  # the text output says it back, 1-based

    # context's own text output lists fmt's definition (pkg/util/helpers.py, which main.py
    # imports) at the lines search printed for it.
    code, out, _ = run(capsys, "search", "format_url", "--lexical", "-k", "10")
    helpers = re.search(r"^\s*\d+\. pkg/util/helpers\.py:(\d+-\d+)\s+format_url", out, re.MULTILINE)
    assert helpers is not None, out
    code, out, _ = run(capsys, "context", "app/main.py:12:11", "--lexical")
    assert re.search(rf"definition\s+pkg/util/helpers\.py:{helpers.group(1)}\s+format_url", out), out

    dry = ["--dry-run", "--json", "--no-context"]
    code, out, err = run(capsys, "complete", f"{path}:{start}:5", *dry)
    assert code == 0, err
    prompt = json.loads(out)["body"]["prompt"]
    assert prompt.split("<|fim_suffix|>")[0].endswith("def ")  # the cursor is after `def `


def test_file_line_col_equals_line_and_character(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, by_flags, err = run(capsys, "context", "app/main.py", "--line", "12", "--character", "11", "--json",
                              "--lexical")  # fmt: skip
    assert code == 0, err
    code, by_location, err = run(capsys, "context", "app/main.py:12:11", "--json", "--lexical")
    assert code == 0, err
    flags, location = json.loads(by_flags), json.loads(by_location)
    flags.pop("timings_ms"), location.pop("timings_ms")
    assert flags == location and (flags["line"], flags["character"]) == (11, 10)
    # FILE:LINE alone is column 1; mixing FILE:LINE with --character works too.
    code, out, _ = run(capsys, "context", "app/main.py:12", "--character", "11", "--json", "--lexical")
    assert (json.loads(out)["line"], json.loads(out)["character"]) == (11, 10)
    code, out, _ = run(capsys, "context", "app/main.py:12", "--json", "--lexical")
    assert json.loads(out)["character"] == 0
    # The 1-based line 12 is `url = fmt(...)`: its context has fmt's definition.
    assert (repo / "app/main.py").read_text().split("\n")[11].strip().startswith("url = fmt(")
    assert any(i["symbol"].endswith("format_url") for i in flags["items"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--line", "0"], "line 0 is not a position: lines are 1-based"),
        (["--line", "-3"], "lines are 1-based"),
        (["--line", "x2"], "line must be a whole number (1-based), not 'x2'"),
        (["--line", "999"], "line 999 is past the end of app/main.py (it has 17 lines)"),
        (["--line", "12", "--character", "0"], "column 0 is not a position: columns are 1-based"),
        (["--line", "12", "--character", "80"], "column 80 is past the end of line 12 of app/main.py"),
        ([":0"], "line 0 is not a position"),
        ([":abc"], "line must be a whole number"),
        ([":3", "--line", "3"], "the line is given twice"),
        ([], "give the cursor's line: --line L, or FILE:LINE[:COL] (1-based)"),
    ],
)
@pytest.mark.parametrize("command", ["context", "complete"])
def test_bad_positions_are_usage_errors(
    repo: Path, capsys: pytest.CaptureFixture[str], command: str, argv: list[str], message: str
) -> None:
    file = "app/main.py"
    if argv and argv[0].startswith(":"):
        file, argv = file + argv[0], argv[1:]
    code, _, err = run(capsys, command, file, *argv, "--dry-run" if command == "complete" else "--lexical")
    assert code == 2 and message in err and "Traceback" not in err, err


def test_past_the_end_counts_lines_as_editors_do(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "two.py").write_text("a = 1\nb = 2\n")
    code, _, err = run(capsys, "complete", "two.py:3:1", "--dry-run", "--json", "--no-context")
    assert code == 0, err  # the empty line after the final newline is a place to type
    code, _, err = run(capsys, "complete", "two.py:4", "--dry-run", "--no-context")
    assert code == 2 and "(it has 2 lines)" in err
    code, _, err = run(capsys, "complete", "two.py:1:6", "--dry-run", "--no-context")
    assert code == 0, err  # after the last character
    code, _, err = run(capsys, "complete", "two.py:1:7", "--dry-run", "--no-context")
    assert code == 2 and "(5 characters: the last column is 6)" in err


def test_undecodable_bytes_on_stdin_are_read_as_the_same_file_on_disk_is(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes that are not UTF-8 on `--stdin` reached the tokenizer as lone surrogates (a
    TypeError traceback); the same bytes in the file on disk were replaced and worked."""
    import io

    edited = (repo / "app/main.py").read_bytes() + b'\nBAD = "\xff\xfe"\nurl2 = fmt(\n'
    (repo / "bad.py").write_bytes(edited)
    where = ["--line", "20", "--character", "12"]

    def piped() -> None:  # stdin as Python opens it in UTF-8 mode (undecodable bytes kept)
        stdin = io.TextIOWrapper(io.BytesIO(edited), encoding="utf-8", errors="surrogateescape")
        monkeypatch.setattr("sys.stdin", stdin)

    code, from_disk, err = run(capsys, "context", "bad.py", *where, "--json", "--lexical")
    assert code == 0, err
    piped()
    code, from_stdin, err = run(capsys, "context", "bad.py", *where, "--stdin", "--json", "--lexical")
    assert code == 0, err
    disk, stdin = json.loads(from_disk), json.loads(from_stdin)
    disk.pop("timings_ms"), stdin.pop("timings_ms")
    assert stdin == disk and any(i["symbol"].endswith("format_url") for i in stdin["items"])

    piped()
    dry = ["--dry-run", "--json", "--lexical"]
    code, out, err = run(capsys, "complete", "bad.py", *where, "--stdin", *dry)
    assert code == 0, err
    assert 'BAD = "\ufffd\ufffd"' in json.loads(out)["body"]["prompt"]


def test_the_first_last_range_search_prints_is_accepted_as_its_first_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README: what `search` prints can be given back to `context` or `complete`; search prints
    FILE:FIRST-LAST, which was refused ("line must be a whole number, not '7-13'")."""
    code, out, err = run(capsys, "search", "format_url", "--lexical", "-k", "1")
    assert code == 0, err
    printed = re.search(r"^\s*1\. (\S+:(\d+)-\d+)\s", out, re.MULTILINE)
    assert printed is not None, out
    place, first = printed.group(1), int(printed.group(2))

    code, out, err = run(capsys, "context", place, "--lexical", "--json")
    assert code == 0, err
    assert (json.loads(out)["line"], json.loads(out)["character"]) == (first - 1, 0)
    code, out, err = run(capsys, "complete", place, "--dry-run", "--json", "--no-context")
    assert code == 0, err
    before_cursor = json.loads(out)["body"]["prompt"].split("<|fim_suffix|>")[0]
    lines = (repo / place.split(":")[0]).read_text().split("\n")
    assert before_cursor.endswith(lines[first - 2] + "\n")  # the cursor is at line FIRST's start
    code, _, err = run(capsys, "context", "app/main.py:12-9", "--lexical")
    assert code == 2 and "lines 12-9 run backwards" in err
