"""`codectx -V`, and the platform story: Linux and macOS run, Windows is refused at start-up."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codectx import __version__
from codectx.cli import main
from codectx.platforms import unsupported_platform


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flag(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([flag])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"codectx {__version__}"


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_linux_and_macos_supported(platform: str) -> None:
    assert unsupported_platform(platform) is None


@pytest.mark.parametrize("platform", ["win32", "cygwin", "freebsd14", "emscripten"])
def test_other_platforms_get_a_message(platform: str) -> None:
    message = unsupported_platform(platform)
    assert message and "Linux and macOS" in message


def test_windows_refused_before_any_work() -> None:
    """The entry point refuses, with one line and exit 2, before it imports any command module."""
    code = (
        "import sys; sys.platform = 'win32'\n"
        "from codectx.cli import main\n"
        "rc = main(['index', '.'])\n"
        "assert 'codectx.indexer.cli' not in sys.modules, 'a command module was imported'\n"
        "raise SystemExit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("codectx: error: codectx runs on Linux and macOS, not on Windows")
    assert "WSL" in proc.stderr and "Traceback" not in proc.stderr
