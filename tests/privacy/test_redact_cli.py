"""`codectx redact`: files and stdin, --json without values, --strict, --check, clear errors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from codectx.cli import main

TOKEN = "github_pat_" + "11ABCDEFG0" * 2 + "ab_" + "Zq8Lm3Nx7Rt2Vb5Kc9Wd4Hf6" * 2 + "Jy1Pz"
SOURCE = f"""import os

API = "{TOKEN}"
DB = "mysql://app:V3ry$ecret9@db:3306/main"
HOME = os.environ["HOME"]
"""


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def _run(
    args: list[str], capsysbinary: pytest.CaptureFixture[bytes], stdin: bytes = b"", monkeypatch: Any = None
) -> tuple[int, bytes, bytes]:
    """The real command line in this process (a fresh interpreter would re-import every package)."""
    if monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    code = main(args)
    out, err = capsysbinary.readouterr()
    return code, out, err


def test_redacts_a_file_keeping_everything_else(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    src = tmp_path / "app.py"
    src.write_text(SOURCE)
    assert main(["redact", str(src)]) == 0
    captured = capsysbinary.readouterr()
    out = captured.out.decode()
    assert TOKEN not in out and "V3ry$ecret9" not in out
    assert out.count("\n") == SOURCE.count("\n")
    assert 'HOME = os.environ["HOME"]' in out
    assert out.startswith('import os\n\nAPI = "[REDACTED:github-fine-grained-pat:')
    assert b"redacted 2 secret(s)" in captured.err


def test_json_lists_findings_without_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "app.py"
    src.write_text(SOURCE)
    assert main(["redact", "--json", str(src)]) == 0
    out = capsys.readouterr().out
    report = json.loads(out)
    assert [f["rule"] for f in report["findings"]] == ["github-fine-grained-pat", "url-password"]
    assert [f["line"] for f in report["findings"]] == [2, 3]
    assert TOKEN not in out and "V3ry$ecret9" not in out
    first = report["findings"][0]
    assert SOURCE[first["start"] : first["end"]] == TOKEN


def test_stdin_and_invalid_utf8_survive(capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: Any) -> None:
    data = b"caf\xe9 = 1\ntoken = 'npm_" + b"a1B2c3" * 6 + b"'\n\xff\xfe tail\n"
    code, out, _ = _run(["redact", "-"], capsysbinary, data, monkeypatch)
    assert code == 0
    assert out.startswith(b"caf\xe9 = 1\ntoken = '[REDACTED:npm-token:")
    assert out.endswith(b"'\n\xff\xfe tail\n")  # undecodable bytes come back unchanged


def test_invisible_characters_are_stripped(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: Any
) -> None:
    code, out, err = _run(["redact"], capsysbinary, "x = 1\u202e\u200b\n".encode(), monkeypatch)
    assert code == 0 and out == b"x = 1\n"
    assert b"stripped 2 invisible" in err


def test_strict_adds_entropy_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "x.py"
    src.write_text("salt = q8Rz2LmN4vXw7TyB1cKd9FhJ\n")  # bare in code: only the strict tier takes it
    assert main(["redact", "--json", str(src)]) == 0
    assert json.loads(capsys.readouterr().out)["findings"] == []
    assert main(["redact", "--json", "--strict", str(src)]) == 0
    assert [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["high-entropy"]


def test_check_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean, dirty = tmp_path / "clean.py", tmp_path / "dirty.py"
    clean.write_text("x = 1\n")
    dirty.write_text(SOURCE)
    assert main(["redact", "--check", str(clean)]) == 0
    assert main(["redact", "--check", str(dirty)]) == 1
    out = capsys.readouterr().out
    assert f"{dirty}:3: github-fine-grained-pat" in out and TOKEN not in out


@pytest.mark.parametrize(
    ("setup", "message"),
    [("missing", "no such file"), ("folder", "is a folder"), ("binary", "looks binary")],
)
def test_clear_errors(
    tmp_path: Path, setup: str, message: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    target = tmp_path / "t"
    if setup == "folder":
        target.mkdir()
    elif setup == "binary":
        target.write_bytes(b"\x7fELF\x00\x00\x01")
    code, out, err = _run(["redact", str(target)], capsysbinary)
    assert code == 2 and out == b""
    assert err.startswith(b"codectx: error:") and message.encode() in err


def test_help_mentions_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["redact", "--help"])
    assert exit_info.value.code == 0
    assert "[REDACTED:<rule>:<tag>]" in capsys.readouterr().out
