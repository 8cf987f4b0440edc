"""Process tuning (codectx/tuning.py) is an explicit call: importing codectx, opening an index and
answering from it change nothing process-wide until an entry point asks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import gc, json, os, pkgutil, sys, importlib
import numpy  # loads BLAS, so that its thread count is there before and after
from threadpoolctl import threadpool_info

def state():
    import pydantic
    return {
        "threshold": list(gc.get_threshold()),
        "frozen": gc.get_freeze_count(),
        "enabled": gc.isenabled(),
        "meta_path": [type(f).__name__ for f in sys.meta_path],
        "environ": sorted(os.environ.items()),
        "blas": sorted((i["internal_api"], i["num_threads"]) for i in threadpool_info()),
        "defer_build": bool(pydantic.BaseModel.model_config.get("defer_build")),
    }

before = state()
import codectx
names = ["codectx.cli", "codectx.tuning", "codectx.runtime"]
for pkg in ("codectx.indexer", "codectx.retriever"):
    module = importlib.import_module(pkg)
    names += [m.name for m in pkgutil.walk_packages(module.__path__, pkg + ".")]
for name in names:
    importlib.import_module(name)

# An index built, opened and answered from, in memory as a language server keeps it.
from pathlib import Path
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage.store import IndexStore
from codectx.retriever.context import assemble_context
from codectx.retriever.search import HybridSearcher
from codectx.settings import load_settings
root = Path(sys.argv[1])
settings = load_settings(root, {"index.embed": False}, environ={})
index_workspace(root, settings)
store = IndexStore.open(settings.index_dir())
HybridSearcher(store, settings, preload=True).search("add numbers")
assemble_context(store, settings, "calc.py", (root / "calc.py").read_text(), 3, 4)
after = state()

import overrides, lance_namespace_urllib3_client as client
from codectx.tuning import is_deferred, mark_override
print(json.dumps({
    "modules": len(names),
    "before": before,
    "after": after,
    "override_patched": overrides.override is mark_override,
    "client_deferred": is_deferred(client),
}))
"""


def test_importing_codectx_and_answering_from_an_index_tunes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n\n')
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["modules"] > 40
    assert found["after"] == found["before"]
    assert not found["override_patched"] and not found["client_deferred"]


ASKED = r"""
import gc, sys
from threadpoolctl import threadpool_info
from codectx import tuning
tuning.light_lancedb_import()
tuning.serve_queries()
import lancedb
import numpy
tuning.query_threads()
import overrides, lance_namespace_urllib3_client as client
before = gc.get_freeze_count()
tuning.settle_heap()
blas = {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
print(overrides.override is tuning.mark_override or sys.version_info >= (3, 12), tuning.is_deferred(client),
      gc.get_freeze_count() > before, gc.get_threshold()[2] >= tuning.FULL_EVERY, blas <= {1})
"""


def test_the_entry_points_switches_do_what_they_say() -> None:
    out = subprocess.run([sys.executable, "-c", ASKED], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 5
