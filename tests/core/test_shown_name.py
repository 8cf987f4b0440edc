"""Names from the workspace as text for a terminal: controls and bidirectional marks escaped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codectx.clikit import shown_name


def test_controls_and_bidi_marks_are_escaped_and_other_text_is_kept() -> None:
    assert shown_name("src/app.py") == "src/app.py"
    assert shown_name("docs/résumé 日本.md") == "docs/résumé 日本.md"
    assert shown_name("a\x1b[31mb") == "a\\x1b[31mb"
    assert shown_name("a\rb\nc\td\x7f\x9b") == "a\\x0db\\x0ac\\x09d\\x7f\\x9b"
    assert shown_name("evil\u202etxt.py") == "evil\\u202etxt.py"


def test_search_lists_a_hostile_file_name_on_one_line(tmp_path: Path) -> None:
    """`codectx search` (a real index) prints the name of a file whose name holds ESC, CR and LF
    escaped: one line per hit, nothing a terminal would act on."""
    ws = tmp_path / "ws"
    ws.mkdir()
    name = "notes\x1b[2K\r\x1b[1Afiles: none\nx.py"
    (ws / name).write_text("def helper_quokka():\n    return 1\n", encoding="utf-8")
    cli = [sys.executable, "-m", "codectx"]
    env_args = {"capture_output": True, "text": True, "timeout": 300, "cwd": ws}
    index = subprocess.run([*cli, "index", "--no-embed", "."], **env_args)
    assert index.returncode == 0, index.stderr
    found = subprocess.run([*cli, "search", "helper_quokka", "--lexical"], **env_args)
    assert found.returncode == 0, found.stderr
    hits = [line for line in found.stdout.splitlines() if "helper_quokka" in line]
    assert hits and "\x1b" not in found.stdout and "\r" not in found.stdout
    assert "notes\\x1b[2K\\x0d\\x1b[1Afiles: none\\x0ax.py:1-2" in hits[0]
