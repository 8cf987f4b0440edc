"""A starting front end answers from the index's lookup files while LanceDB opens behind them.

The keeper's `prepare` defers opening the store until the first answer (bounded); meanwhile
`context_source` gives index lookups over the lookup files. Checked in a fresh interpreter, so
that "LanceDB was not imported before the first answer" means what it says. Real indexer,
LanceDB, pyarrow and retriever.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage import lookupfiles

from tests.support.workspace import lexical_settings, write_workspace

FILES = {
    "app/models.py": "class Invoice:\n    def total(self) -> int:\n        return 1\n",
    "app/billing.py": "from app.models import Invoice\n\n\ndef charge(invoice: Invoice) -> int:\n"
    "    return invoice.\n",
}

SCRIPT = """
import json, sys, threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from codectx.app.embedders import Embedders
from codectx.app.index import assemble
from codectx.app.keeper import IndexKeeper
from codectx.settings import load_settings

root = Path(sys.argv[1])
settings = load_settings(root, {"index.embed": False}, environ={}, user_config=root.parent / "none.toml")
keeper = IndexKeeper(root, settings, Embedders(), ThreadPoolExecutor(1), background_load=True,
                     check_wait_s=120)
opening = threading.Thread(target=keeper.prepare)
opening.start()
source = keeper.context_source()
text = (root / "app/billing.py").read_text()
context = assemble(source, settings, "app/billing.py", text, 4, 19)
out = {
    "phase": getattr(source, "phase", None),
    "source": type(source).__name__,
    "lancedb_before_answer": "lancedb" in sys.modules,
    "store_before_answer": keeper.store is not None,
    "items": [[item.path, item.symbol] for item in context.items],
    "notes": list(context.notes),
}
keeper.note_answered()
opening.join(120)
out["store_after_answer"] = keeper.store is not None
out["source_after_answer"] = type(keeper.context_source()).__name__
print(json.dumps(out))
"""


def _run(root: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(root)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_first_context_comes_from_the_lookup_files_before_lancedb_loads(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", FILES)
    index_workspace(root, lexical_settings(root))
    found = _run(root)
    assert found["phase"] == "early"
    assert found["lancedb_before_answer"] is False
    assert found["store_before_answer"] is False
    assert ["app/models.py", "Invoice"] in found["items"]  # the definition behind the import
    assert any("lookup files" in note for note in found["notes"])  # type: ignore[union-attr]
    assert found["store_after_answer"] is True
    assert found["source_after_answer"] == "IndexStore"


def test_without_current_lookup_files_the_store_answers(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", FILES)
    settings = lexical_settings(root)
    index_workspace(root, settings)
    lookupfiles.remove(settings.index_dir())
    found = _run(root)
    assert found["source"] == "IndexStore"  # opened for this answer, as before lookup files
    assert found["store_before_answer"] is True
    assert ["app/models.py", "Invoice"] in found["items"]
