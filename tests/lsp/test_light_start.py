"""What the language server imports before it answers `initialize`, and what asking for an index
that is not there costs: neither loads LanceDB (a second of a 2-core machine's start-up).

Each check runs in a fresh interpreter, so what another test imported does not count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def _modules_after(code: str) -> dict[str, object]:
    script = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules for m in HEAVY}))"
    done = subprocess.run(
        [sys.executable, "-c", "HEAVY = ('lancedb', 'pyarrow', 'numpy')\n" + script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_server_and_its_handlers_import_without_lancedb() -> None:
    found = _modules_after(
        "from codectx import cli\ncli.build_parser('lsp')\n"
        "from codectx.lsp.registry import build_server\nbuild_server()"
    )
    assert found == {"lancedb": False, "pyarrow": False, "numpy": False}


def test_no_index_is_reported_before_lancedb_is_imported(tmp_path: Path) -> None:
    found = _modules_after(
        "from codectx.app.index import index_exists, open_existing\n"
        "from codectx.errors import CodectxError\n"
        f"assert not index_exists({str(tmp_path)!r})\n"
        "try:\n"
        f"    open_existing({str(tmp_path)!r})\n"
        "except CodectxError as exc:\n"
        "    assert 'no index at' in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('an index was opened where there is none')"
    )
    assert found["lancedb"] is False
