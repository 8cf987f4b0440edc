"""The indexing pipeline on real files: incremental runs, embedding cache, partial index, lock, schema."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from codectx.indexer.embedding.embedder import Embedder
from codectx.indexer.errors import IndexLocked
from codectx.indexer.pipeline import ProgressEvent, index_paths, index_workspace
from codectx.indexer.storage.lock import IndexLock
from codectx.indexer.storage.store import IndexStore

from codectx.settings import load_settings
from tests.support.workspace import write_workspace

FILES = {
    "app/client.py": '''"""HTTP client."""
import json


class Client:
    """Talks to the server."""

    def send(self, payload: dict) -> bytes:
        """Serialize and send a payload."""
        return json.dumps(payload).encode()

    def close(self) -> None:
        self.closed = True
''',
    "app/util.py": "def slugify(title: str) -> str:\n    return title.lower().replace(' ', '-')\n",
    "web/cart.ts": "export function addItem(cart: string[], item: string): string[] {\n"
    "  return [...cart, item];\n}\n",
    "svc/add.go": "package svc\n\nfunc Add(a, b int) int {\n\treturn a + b\n}\n",
    "README.md": "# Demo\n\nA small project used by the tests.\n",
}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(backend="torch", batch_size=8)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", FILES)


def snapshot(root: Path) -> dict[str, object]:
    """What a clean build and an incrementally updated index must agree on."""
    store = IndexStore.open(root / ".codectx")
    chunks = sorted((c.path, c.start_line, c.end_line, c.content_hash) for c in store.all_chunks())
    records = {p: (r.content_hash, r.n_chunks) for p, r in store.file_records().items()}
    symbols = sorted((d.path, d.qualname) for p in records for d in store.symbols_in_file(p))
    return {"chunks": chunks, "files": records, "symbols": symbols, "stats": store.stats().vectors_pending}


def test_incremental_edit_delete_rename_reuse_vectors(ws: Path, embedder: Embedder) -> None:
    settings = load_settings(ws, environ={})
    first = index_workspace(ws, settings, embedder=embedder)
    assert first.added == len(FILES) and first.vectors_pending == 0 and first.errors == []
    assert embedder.calls == first.vectors_embedded > 0
    store = IndexStore.open(ws / ".codectx")
    assert {d.qualname for d in store.symbols_in_file("app/client.py")} >= {"Client", "Client.send"}

    # No change: nothing parsed, nothing embedded.
    calls = embedder.calls
    again = index_workspace(ws, settings, embedder=embedder)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, len(FILES))
    assert embedder.calls == calls

    # Edit one function: only the new chunk contents are embedded.
    path = ws / "app/util.py"
    path.write_text(path.read_text() + "\n\ndef shout(s: str) -> str:\n    return s.upper()\n")
    edited = index_workspace(ws, settings, embedder=embedder)
    assert edited.updated == 1 and edited.unchanged == len(FILES) - 1
    assert 0 < embedder.calls - calls == edited.vectors_embedded <= 2
    assert "shout" in {d.name for d in store.symbols_in_file("app/util.py")}

    # Rename: the moved file's chunks keep their vectors (same content hashes).
    calls = embedder.calls
    (ws / "web/cart.ts").rename(ws / "web/basket.ts")
    renamed = index_workspace(ws, settings, embedder=embedder)
    assert (renamed.added, renamed.removed) == (1, 1)
    assert embedder.calls == calls and renamed.vectors_embedded == 0
    assert [c.path for c in store.chunks_for_file("web/basket.ts")]
    assert store.chunks_for_file("web/cart.ts") == []
    vec = embedder.embed_query("add an item to the shopping cart")
    assert any(h.chunk.path == "web/basket.ts" for h in store.vector_search(vec, 3, embedder.model_id))

    # Delete: rows gone everywhere.
    (ws / "svc/add.go").unlink()
    deleted = index_workspace(ws, settings, embedder=embedder)
    assert deleted.removed == 1
    assert store.symbols_named("Add") == [] and store.chunks_for_file("svc/add.go") == []

    # The incrementally maintained index equals a clean build of the same tree.
    incremental = snapshot(ws)
    clean_dir = ws.parent / "clean"
    clean = load_settings(ws, {"index.index_dir": str(clean_dir)}, environ={})
    index_workspace(ws, clean, embedder=embedder)
    os.replace(ws / ".codectx", ws.parent / "incremental")
    os.replace(clean_dir, ws / ".codectx")
    assert snapshot(ws) == incremental


def test_partial_index_answers_fts_then_fills_vectors(ws: Path, embedder: Embedder) -> None:
    settings = load_settings(ws, environ={})
    events: list[ProgressEvent] = []
    report = index_workspace(ws, settings, events.append, embed=False)
    assert report.vectors_embedded == 0 and {e.stage for e in events} >= {"discover", "parse", "done"}
    store = IndexStore.open(ws / ".codectx")
    assert store.fts_search("slugify title", 3)[0].chunk.path == "app/util.py"
    stats = store.stats(embedder.model_id)
    assert stats.vectors_done == 0 and stats.vectors_pending == len(store.chunk_hashes()) > 0
    assert store.vector_search(embedder.embed_query("slug"), 3, embedder.model_id) == []

    calls = embedder.calls
    events.clear()
    filled = index_workspace(ws, settings, events.append, embedder=embedder)
    assert filled.added == 0 and filled.vectors_embedded == stats.vectors_pending == embedder.calls - calls
    assert store.stats(embedder.model_id).vectors_pending == 0
    assert any(e.stage == "embed" and e.done == e.total for e in events)
    # The index's chunk count is reported before the embedding begins, not only at the end.
    stages = [e.stage for e in events]
    counted = stages.index("chunks")
    assert events[counted].done == filled.chunks > 0 and counted < stages.index("embed")


def test_second_indexer_gets_clear_lock_message(ws: Path) -> None:
    settings = load_settings(ws, environ={})
    holder = IndexLock(ws / ".codectx")
    holder.acquire()
    try:
        with pytest.raises(IndexLocked, match=rf"another codectx index is running \(pid {os.getpid()}\)"):
            index_workspace(ws, settings, embed=False)
    finally:
        holder.release()
    assert index_workspace(ws, settings, embed=False).added == len(FILES)


def test_old_schema_is_rebuilt_with_a_message(ws: Path) -> None:
    settings = load_settings(ws, environ={})
    index_workspace(ws, settings, embed=False)
    meta_path = ws / ".codectx" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["schema_version"] = 0
    meta_path.write_text(json.dumps(meta))
    report = index_workspace(ws, settings, embed=False)
    assert report.rebuilt and "schema version 0" in report.rebuilt
    assert report.added == len(FILES) and IndexStore.open(ws / ".codectx").stats().files == len(FILES)


def test_bad_files_never_stop_the_run(ws: Path) -> None:
    (ws / "app/broken.py").write_text("def broken(:\n    pass\n\ndef fine():\n    return 1\n")
    (ws / "app/latin1.py").write_bytes(b"NAME = '\xe9t\xe9'\ndef caf\xe9():\n    pass\n")
    secret = ws / "app/locked.py"
    secret.write_text("def hidden():\n    pass\n")
    secret.chmod(0)
    try:
        report = index_workspace(ws, load_settings(ws, environ={}), embed=False)
    finally:
        secret.chmod(0o644)
    store = IndexStore.open(ws / ".codectx")
    assert "app/broken.py" in report.syntax_error_files
    assert "fine" in {d.name for d in store.symbols_in_file("app/broken.py")}
    assert store.chunks_for_file("app/latin1.py")
    if os.geteuid() != 0:  # root reads anything
        assert (
            any(line.startswith("app/locked.py") for line in report.errors) or "unreadable" in report.skipped
        )
    assert store.stats().files >= len(FILES) + 2


def test_index_paths_updates_one_file_and_drops_deleted(ws: Path, embedder: Embedder) -> None:
    settings = load_settings(ws, environ={})
    index_workspace(ws, settings, embedder=embedder)
    (ws / "app/util.py").write_text("def unslug(s: str) -> str:\n    return s.replace('-', ' ')\n")
    (ws / "README.md").unlink()
    (ws / "app/new.py").write_text("def brand_new():\n    return 42\n")
    calls = embedder.calls
    report = index_paths(
        ws, [ws / "app/util.py", "README.md", "app/new.py", "/etc/passwd"], settings, embedder=embedder
    )
    assert (report.updated, report.removed, report.added) == (1, 1, 1)
    assert any("outside the workspace" in e for e in report.errors)
    store = IndexStore.open(ws / ".codectx")
    assert [d.name for d in store.symbols_in_file("app/util.py")] == ["unslug"]
    assert store.symbols_named("brand_new") and store.chunks_for_file("README.md") == []
    assert embedder.calls - calls == report.vectors_embedded == 2
    assert store.stats(embedder.model_id).vectors_pending == 0


def test_a_file_that_is_not_utf8_is_indexed_with_a_warning_naming_it(tmp_path: Path) -> None:
    """A Latin-1 file read with U+FFFD in place of its bytes: it was reported as a syntax error
    only, with nothing saying why."""
    root = tmp_path / "ws"
    root.mkdir()
    latin1 = b'def caf\xe9():\n    return "na\xefve"\n\n\ndef plain():\n    return 1\n'
    (root / "latin1.py").write_bytes(latin1)
    (root / "bom.py").write_bytes(b'\xef\xbb\xbfx = "\xe9"\n')  # UTF-8's byte-order mark, then Latin-1
    (root / "utf16.py").write_bytes("\ufeffdef wide():\n    return 2\n".encode("utf-16"))
    (root / "ok.py").write_text('def fine():\n    return "\ufffd is a character too"\n', "utf-8")
    settings = load_settings(root, environ={})
    report = index_workspace(root, settings, embedder=None)
    notes = [w for w in report.warnings if "not valid UTF-8" in w]
    assert notes == [
        f"{name}: not valid UTF-8 (first at byte {at}); the bytes that do not decode read as U+FFFD "
        "(re-save the file as UTF-8 to index it as written)"
        for name, at in (("bom.py", 8), ("latin1.py", 7))
    ]
    names = {d.name for d in IndexStore.open(root / ".codectx").symbols_in_file("latin1.py")}
    assert "plain" in names  # the rest of the file is still indexed
