"""Start-up split: what a language server does between `initialize` and its first context, per phase.

On an indexed Django 5.1.4 workspace (the index `bench/bench_lsp.py` keeps under
bench/data/lsp-index/<kind>; built here if missing, lexical only unless `--kind placeholder`),
times, in one fresh process:
- importing the heavy modules (LanceDB, tree-sitter, the retriever);
- opening the store and its tables;
- each structure the in-memory snapshot (retriever/snapshot.py) loads: the files table's
  imports (scan, then JSON decoding), the chunk table (scan, Arrow to Python, Chunk objects),
  the lookup maps, the symbol table, the BM25 index, the receiver counts, the token counts,
  the index figures (`stats`);
- the first completion context in the "lookup" phase (the background load held: LanceDB
  lookups, the open file's imports, LanceDB full-text search), the background load as the
  language server runs it, the same request in the "memory" phase, and a request that arrives
  while a background load runs.

Prints a table and writes bench/results/bench_startup-*.json (with the load average: the machine is
shared, so every figure is noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-bench-startup-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from common import DATA, fetch_sdist, machine, table, write_results  # noqa: E402

SDIST = ("django", "5.1.4")
FILE = "django/db/models/query.py"
LINE_TEXT = "        clone = self._chain()"  # a line inside a method of QuerySet


class Clock:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []

    def time(self, name: str, fn: Any, note: str = "") -> Any:
        t = time.perf_counter()
        value = fn()
        self.rows.append((name, (time.perf_counter() - t) * 1000, note))
        return value


def ensure_index(root: Path, index_dir: Path) -> None:
    if (index_dir / "meta.json").exists():
        return
    from codectx.indexer.pipeline import index_workspace

    from codectx.settings import load_settings

    print(f"indexing {root} (lexical only) into {index_dir} ...", flush=True)
    index_workspace(root, load_settings(root, {"index.index_dir": str(index_dir), "index.embed": False}))


def cursor(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith(LINE_TEXT):
            return i, len(ln)
    return len(lines) // 2, 0


def other_file_definitions(result: Any, path: str) -> int:
    return sum(1 for item in result.items if item.reason == "definition" and item.path != path)


def measure(root: Path, index_dir: Path) -> dict[str, Any]:
    clock = Clock()
    from codectx import tuning

    tuning.light_lancedb_import()
    tuning.serve_queries()
    clock.time("import LanceDB + store", lambda: __import__("codectx.indexer.storage.store"))
    clock.time("import parsers + retriever", lambda: __import__("codectx.retriever.context"))
    from codectx.indexer.storage.store import IndexStore
    from codectx.indexer.storage.tables import chunk_from_row, imports_from_json
    from codectx.retriever.context import assemble_context
    from codectx.retriever.lexical import LexicalIndex
    from codectx.retriever.receivers import ReceiverCalls
    from codectx.retriever.snapshot import IndexSnapshot
    from codectx.retriever.snapshotload import hold_loads_until
    from codectx.retriever.tokens import default_counter

    from codectx.settings import load_settings

    settings = load_settings(root, {"index.index_dir": str(index_dir), "index.embed": False})
    text = (root / FILE).read_text("utf-8")
    line, col = cursor(text)

    store = clock.time("open store", lambda: IndexStore.open(index_dir, create=False))
    clock.time("open tables (versions)", store.table_versions)
    # --- the lookup phase: the background load held (retriever/snapshotload.py's test hook)
    gate = _SANDBOX / "release"
    hold_loads_until(gate)
    cheap = IndexSnapshot(IndexStore.open(index_dir, create=False))
    cheap.load_in_background()
    first = clock.time(
        "first context, lookup phase (index lookups)",
        lambda: assemble_context(cheap, settings, FILE, text, line, col),
    )
    again = clock.time(
        "same request again, lookup phase",
        lambda: assemble_context(cheap, settings, FILE, text, line, col),
    )
    assert cheap.phase == "lookup", cheap.phase
    cheap_defs = other_file_definitions(first, FILE)
    stable = [(i.path, i.start_line) for i in first.items] == [(i.path, i.start_line) for i in again.items]
    # --- each structure of the snapshot, separately
    files_rows = clock.time(
        "files table scan (imports column)",
        lambda: store._scan("files", None, ["path", "indexed_at", "imports"]),
        "Arrow -> Python rows",
    )
    clock.time(
        "  decode imports JSON",
        lambda: {r["path"]: imports_from_json(r["imports"]) for r in files_rows},
        f"{len(files_rows)} files",
    )
    columns = [*store_chunk_columns(), "search"]
    arrow = clock.time(
        "chunk table scan to Arrow (+search text)",
        lambda: store._table("chunks").search().select(columns).limit(None).to_arrow(),
    )
    rows = clock.time("  Arrow -> Python rows", arrow.to_pylist, f"{arrow.num_rows} chunks")
    chunks = clock.time("  Chunk objects", lambda: [chunk_from_row(r) for r in rows])
    clock.time(
        "  by-path / by-hash / by-id maps",
        lambda: (
            {c.content_hash: c for c in chunks},
            {c.id: c for c in chunks},
        ),
    )
    symbols = clock.time("symbols table scan", store.all_symbols)
    snap = IndexSnapshot(store)
    clock.time("  symbol name map", snap._load_symbols, f"{len(symbols)} definitions")
    texts = [(c.id, r["search"] or "") for r, c in zip(rows, chunks, strict=True)]
    clock.time("BM25 index build", lambda: LexicalIndex(texts))
    chains = clock.time("references scan + decode", store.reference_chains)
    clock.time("  receiver counts", lambda: ReceiverCalls.of_files(chains))
    counter = default_counter()
    count_many = getattr(counter, "count_many", None)
    if count_many is not None:
        # Counts are cached by text: the background load below then finds them counted.
        clock.time("token counts (all chunks)", lambda: count_many([c.text for c in chunks]))
    clock.time("index figures (stats)", store.stats)
    # --- the background load as the language server runs it, then the same request on it
    gate.touch()
    loader = cheap._loader
    assert loader is not None
    clock.time("background load, all of it (released)", loader.join)
    for name, ms in cheap.load_timings_ms.items():
        clock.rows.append((f"  {name}", ms, "inside the background load"))
    snapshot = cheap
    loaded = clock.time(
        f"context, {snapshot.phase} phase (first)",
        lambda: assemble_context(snapshot, settings, FILE, text, line, col),
    )
    clock.time(
        f"context, {snapshot.phase} phase (again)",
        lambda: assemble_context(snapshot, settings, FILE, text, line, col),
    )
    # --- a request that arrives while a background load runs (they share the GIL and cores)
    hold_loads_until(None)
    busy = IndexSnapshot(IndexStore.open(index_dir, create=False))
    busy.load_in_background()
    clock.time(
        "context during a running background load",
        lambda: assemble_context(busy, settings, FILE, text, line, col),
        busy.phase,
    )
    if busy._loader is not None:
        busy._loader.join()
    return {
        "rows": [{"phase": n, "ms": round(ms, 1), "note": note} for n, ms, note in clock.rows],
        "cheap_other_file_definitions": cheap_defs,
        "cheap_stable": stable,
        "loaded_other_file_definitions": other_file_definitions(loaded, FILE),
        "chunks": arrow.num_rows,
        "files": len(files_rows),
        "symbols": len(symbols),
    }


def store_chunk_columns() -> list[str]:
    from codectx.indexer.storage.tables import CHUNK_COLUMNS

    return list(CHUNK_COLUMNS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kind", default="lexical", help="which bench_lsp index (lexical, placeholder)")
    args = parser.parse_args()
    root = fetch_sdist(*SDIST)
    index_dir = DATA / "lsp-index" / args.kind
    ensure_index(root, index_dir)
    load_before = os.getloadavg()
    result = measure(root, index_dir)
    result.update(
        {
            "workspace": f"{SDIST[0]}=={SDIST[1]}",
            "index": args.kind,
            "load_avg_before": load_before,
            "load_avg_after": os.getloadavg(),
            "machine": machine(),
            "command": " ".join([sys.executable, *sys.argv]),
        }
    )
    rows = [(r["phase"], f"{r['ms']:.1f} ms", r["note"]) for r in result["rows"]]
    cheap_defs = str(result["cheap_other_file_definitions"])
    rows.append(("lookup phase: definitions from other files", cheap_defs, ""))
    rows.append(("lookup phase: same order twice", str(result["cheap_stable"]), ""))
    rows.append(("loaded: definitions from other files", str(result["loaded_other_file_definitions"]), ""))
    print(table(rows, ("phase", "time", "note")))
    print(f"load average before/after: {load_before} / {result['load_avg_after']}")
    print(f"written: {write_results('bench_startup', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
