"""What may be a workspace: not the disk's root, the home folder, or a folder that holds the home.

Indexing one of these reads every project, download and dotfile under it (codectx's own state
folder among them), and confining paths to it confines nothing. The language server and the MCP
server refuse them; the command line refuses them as a default (a folder found from the current
one), and takes one only when it is named (`codectx index .`).
"""

from __future__ import annotations

import os
from pathlib import Path


def too_broad(folder: Path) -> str | None:
    """What `folder` is if it is too broad to be a workspace ("your home folder", ...), else None."""
    real = Path(os.path.realpath(folder))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    if real == Path(real.anchor):
        return "the root of the disk"
    if real == home:
        return "your home folder"
    if home.is_relative_to(real):
        return "a folder holding your home folder"
    return None


def refusal(folder: Path, advice: str) -> str | None:
    """The message a server gives when it is handed a too-broad folder, ending in `advice`."""
    what = too_broad(folder)
    if what is None:
        return None
    return f"codectx does not index {os.path.realpath(folder)} ({what}) as a workspace: {advice}"
