"""The index's lookup files (indexer/storage/lookupfiles.py): written by every index run, equal to
the tables they copy, and refused whenever they might not be (a later write, damage, a link).

Real indexer, LanceDB and pyarrow on a small workspace.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from codectx.indexer.pipeline import index_paths, index_workspace
from codectx.indexer.storage import lookupfiles
from codectx.indexer.storage.store import IndexStore

from tests.support.workspace import lexical_settings, write_workspace

FILES = {
    "app/models.py": "class Invoice:\n    def total(self):\n        return 1\n",
    "app/billing.py": "from app.models import Invoice\n\n\ndef charge(invoice: Invoice) -> int:\n"
    "    return invoice.total()\n",
    "app/util.py": "import os\n\n\ndef home() -> str:\n    return os.path.expanduser('~')\n",
}


def _indexed(tmp_path: Path) -> tuple[Path, Path, object]:
    root = write_workspace(tmp_path / "ws", FILES)
    settings = lexical_settings(root)
    index_workspace(root, settings)
    return root, settings.index_dir(), settings


def test_an_index_run_leaves_lookup_files_that_answer_as_the_store_does(tmp_path: Path) -> None:
    _root, index_dir, _settings = _indexed(tmp_path)
    assert lookupfiles.is_current(index_dir)
    reader = lookupfiles.LookupReader.open(index_dir)
    assert reader is not None
    copies, store = reader.columns(), IndexStore.open(index_dir)
    for name in ("Invoice", "total", "charge", "home", "Invoice.total", "missing"):
        assert copies.symbols_named(name) == list(store.symbols_named(name)), name
    for path in FILES:
        assert copies.chunks_for_file(path) == list(store.chunks_for_file(path)), path
        assert copies.file_imports(path) == list(store.file_imports(path)), path
        assert copies.symbols_in_file(path) == list(store.symbols_in_file(path)), path
    assert reader.chunk_count() == store.chunk_count()


def test_a_write_after_the_copy_makes_it_unusable(tmp_path: Path) -> None:
    root, index_dir, settings = _indexed(tmp_path)
    kept = tmp_path / "kept"
    shutil.copytree(index_dir / lookupfiles.LOOKUPS_DIR, kept)
    (root / "app" / "util.py").write_text("def away() -> None:\n    pass\n", "utf-8")
    index_paths(root, [root / "app" / "util.py"], settings)
    new = lookupfiles.LookupReader.open(index_dir)
    assert new is not None and new.columns().symbols_named("away")  # the run wrote a fresh copy
    # The copy from before that write, put back: its stamp no longer matches the tables.
    shutil.rmtree(index_dir / lookupfiles.LOOKUPS_DIR)
    shutil.copytree(kept, index_dir / lookupfiles.LOOKUPS_DIR)
    assert not lookupfiles.is_current(index_dir)
    assert lookupfiles.read(index_dir) is None
    # A run with nothing to do copies the tables again.
    index_workspace(root, settings)
    assert lookupfiles.is_current(index_dir)
    assert lookupfiles.LookupReader.open(index_dir) is not None


def test_damaged_or_linked_files_are_refused_without_an_error(tmp_path: Path) -> None:
    _root, index_dir, _settings = _indexed(tmp_path)
    chunks = index_dir / lookupfiles.LOOKUPS_DIR / "chunks.arrow"
    data = chunks.read_bytes()
    chunks.write_bytes(data[: len(data) // 2])
    assert lookupfiles.is_current(index_dir)  # the stamp file alone cannot tell
    assert lookupfiles.read(index_dir) is None
    chunks.write_bytes(b"not arrow at all")
    assert lookupfiles.LookupReader.open(index_dir) is None
    outside = tmp_path / "elsewhere.arrow"
    outside.write_bytes(data)
    chunks.unlink()
    chunks.symlink_to(outside)
    assert lookupfiles.read(index_dir) is None


def test_no_lance_tables_means_no_stamp(tmp_path: Path) -> None:
    assert lookupfiles.stamp(tmp_path) is None
    assert lookupfiles.read(tmp_path) is None
    assert not lookupfiles.is_current(tmp_path)


def test_links_planted_in_the_index_folder_are_not_written_through(tmp_path: Path) -> None:
    root, index_dir, settings = _indexed(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    folder = index_dir / lookupfiles.LOOKUPS_DIR
    (folder / "chunks.arrow.tmp").symlink_to(victim)  # a hostile workspace's planted temp file
    (root / "app" / "util.py").write_text("def other() -> None:\n    pass\n", "utf-8")
    index_paths(root, [root / "app" / "util.py"], settings)
    assert victim.read_text() == "keep me"
    assert lookupfiles.is_current(index_dir)
    # The whole lookup folder a link elsewhere: nothing is written there, and nothing read.
    shutil.rmtree(folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere, target_is_directory=True)
    (root / "app" / "util.py").write_text("def third() -> None:\n    pass\n", "utf-8")
    report = index_paths(root, [root / "app" / "util.py"], settings)
    assert list(elsewhere.iterdir()) == []
    assert any("lookup files were not written" in w for w in report.warnings)
    assert lookupfiles.read(index_dir) is None
