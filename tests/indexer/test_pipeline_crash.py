"""kill -9 of a running `codectx index`: the next run must complete the index exactly."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from codectx.indexer.storage.store import IndexStore

pytestmark = pytest.mark.slow


def make_tree(root: Path, n_files: int = 60) -> None:
    for i in range(n_files):
        body = "\n\n".join(
            f'def handler_{i}_{j}(request, item_{j}):\n    """Handle case {i}.{j} of the request."""\n'
            f"    value = request.get('k{i}_{j}', {j})\n    return [value, item_{j}, {i * j}]"
            for j in range(6)
        )
        path = root / f"pkg{i % 5}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Module {i}."""\n\n{body}\n')


def progress_at(stage: str, at_least: int) -> Callable[[str], bool]:
    """A predicate on progress lines: `stage` has reached `at_least` items but is not finished."""

    def check(line: str) -> bool:
        m = re.match(rf"{stage}: (\d+)/(\d+)", line)
        return bool(m) and at_least <= int(m.group(1)) < int(m.group(2))  # type: ignore[union-attr]

    return check


def run_index(root: Path, *extra: str, kill_on: Callable[[str], bool] | None = None) -> tuple[int, str]:
    env = {**os.environ, "CODECTX_INDEX_EMBED_BACKEND": "torch", "CODECTX_INDEX_EMBED_BATCH_SIZE": "8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codectx", "index", str(root), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None and proc.stdout is not None
    seen: list[str] = []
    for line in proc.stderr:
        seen.append(line)
        if kill_on is not None and kill_on(line):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=600)
    return proc.returncode, "".join(seen) + proc.stdout.read()


def snapshot(index_dir: Path) -> dict[str, object]:
    store = IndexStore.open(index_dir)
    records = store.file_records()
    return {
        "chunks": sorted((c.path, c.start_line, c.content_hash) for c in store.all_chunks()),
        "files": {p: (r.content_hash, r.n_chunks) for p, r in records.items()},
        "symbols": sorted((d.path, d.qualname) for p in records for d in store.symbols_in_file(p)),
    }


def test_kill_during_embedding_then_rerun_equals_clean_build(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_tree(root, 100)
    # Killed once the first batch of vectors is committed (stages.EMBED_COMMIT = 256).
    code, out = run_index(root, kill_on=progress_at("embed", 300))
    assert code == -signal.SIGKILL, out
    store = IndexStore.open(root / ".codectx")
    partial = store.stats("all-MiniLM-L6-v2")
    assert partial.files == 100 and partial.vectors_done >= 256 and partial.vectors_pending > 0
    assert store.fts_search("handle case 7.3", 3)
    # The committed vectors say whose they are before the run ends: search uses them (it read
    # the model from meta.json, written only at the end, and saw "no vectors yet").
    assert store.model_id == "all-MiniLM-L6-v2" and store.stats().vectors_done == partial.vectors_done

    code, out = run_index(root)
    assert code == 0, out
    resumed = IndexStore.open(root / ".codectx").stats("all-MiniLM-L6-v2")
    assert resumed.vectors_pending == 0 and resumed.vectors_done == len(
        IndexStore.open(root / ".codectx").chunk_hashes()
    )

    code, out = run_index(root, "--no-embed", "--index-dir", str(tmp_path / "clean"))
    assert code == 0, out
    assert snapshot(root / ".codectx") == snapshot(tmp_path / "clean")


def test_kill_during_parse_and_commit_then_rerun_equals_clean_build(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make_tree(root, 500)
    run_index(root, "--no-embed")
    # Touch every file so that the second run rewrites them all, and kill it midway.
    for path in root.rglob("*.py"):
        path.write_text(path.read_text().replace("Handle case", "Process case"))
    # Killed after the first lexical commit (stages.COMMIT_FILES = 400), during the second batch.
    code, out = run_index(root, "--no-embed", kill_on=progress_at("commit", 400))
    assert code == -signal.SIGKILL, out
    store = IndexStore.open(root / ".codectx")
    assert store.fts_search("process case", 5) and store.fts_search("handle case", 5)  # half rewritten

    code, out = run_index(root, "--no-embed")
    assert code == 0, out
    code, out = run_index(root, "--no-embed", "--index-dir", str(tmp_path / "clean"))
    assert code == 0, out
    assert snapshot(root / ".codectx") == snapshot(tmp_path / "clean")
    assert not IndexStore.open(root / ".codectx").fts_search("handle", 5)
