"""LanceDB's import skips its unused REST client and override checks when an entry point asks, and both
still work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codectx.tuning import mark_override

PROBE = """
import sys
from codectx.tuning import CLIENT, is_deferred, light_lancedb_import
light_lancedb_import()
import codectx.indexer.storage.store as store
client = sys.modules[CLIENT]
api_loaded = any(name.startswith(CLIENT + ".api") for name in sys.modules)
print("deferred" if is_deferred(client) and not api_loaded else "loaded")
import pyarrow as pa
import lancedb
db = lancedb.connect(sys.argv[1])
table = db.create_table("t", pa.table({"a": [1, 2, 3]}))
print("rows", table.count_rows())
from lance_namespace_urllib3_client import BranchApi  # the real package on first use
print("client", BranchApi.__name__, is_deferred(client))
"""


def test_store_import_defers_the_rest_client_and_lancedb_still_works(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "db")], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["deferred", "rows 3", "client BranchApi False"]


def test_mark_override_marks_like_typing_override() -> None:
    def plain() -> int:
        return 1

    assert mark_override(plain) is plain and plain.__override__  # type: ignore[attr-defined]

    def keyword() -> int:
        return 2

    assert mark_override(check_signature=False)(keyword) is keyword
    assert keyword.__override__  # type: ignore[attr-defined]


MODELS = """
import pydantic
from codectx.tuning import light_lancedb_import
light_lancedb_import()
import codectx.indexer.storage.store
import lance_namespace
print("restored", "defer_build" not in pydantic.BaseModel.model_config)
model = lance_namespace.ListTablesResponse
print("deferred", not model.__pydantic_complete__)
print("validates", model.model_validate({"tables": ["a", "b"]}).tables, model.__pydantic_complete__)
try:
    model.model_validate({"tables": 3})
except pydantic.ValidationError:
    print("rejects")
class Later(pydantic.BaseModel):
    x: int
print("later", Later.__pydantic_complete__, Later(x="4").x)
"""


def test_models_defined_by_the_lancedb_import_build_on_first_use_and_only_they() -> None:
    out = subprocess.run([sys.executable, "-c", MODELS], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "restored True",
        "deferred True",
        "validates ['a', 'b'] True",
        "rejects",
        "later True 4",
    ]
