"""Shared benchmark helpers: pinned sdists from PyPI, unpacked under bench/data, and result files.

Sources are downloaded with `pip download --no-deps --no-binary :all: NAME==VERSION`
into bench/data/sdists (gitignored) and unpacked under bench/data/src; nothing is vendored.
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
RESULTS = HERE / "results"


def fetch_sdist(name: str, version: str) -> Path:
    """The unpacked source tree of name==version, downloaded once."""
    sdists = DATA / "sdists"
    sdists.mkdir(parents=True, exist_ok=True)
    prefix = f"{name}-{version}".lower()

    def found() -> list[Path]:
        return [p for p in sdists.iterdir() if p.name.lower().startswith(prefix)]

    if not found():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{name}=={version}",
                "-d",
                str(sdists),
            ],
            check=True,
        )
    archive = found()[0]
    dest = DATA / "src"
    dest.mkdir(parents=True, exist_ok=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            top = zf.namelist()[0].split("/")[0]
            if not (dest / top).exists():
                zf.extractall(dest)
        return dest / top
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        if not (dest / top).exists():
            tar.extractall(dest, filter="data")
    return dest / top


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> dict[str, Any]:
    import os

    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg_at_start": os.getloadavg(),
        "platform": platform.platform(),
    }


def write_results(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return path


def table(rows: Sequence[tuple[str, ...]], headers: tuple[str, ...] = ("metric", "value", "target")) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [" | ".join(str(h).ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
