"""A workspace's own `.codectx/` is untrusted: links planted at the names of the index's temp files
must not redirect its writes (meta, journal, manifest, walk record, lookup files) to files
elsewhere. Real indexer and LanceDB, in process (the temp names carry this process's pid)."""

from __future__ import annotations

import os
from pathlib import Path

from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage.owner import mark
from codectx.indexer.walk.manifest import MANIFEST_FILE
from codectx.indexer.walk.walkfile import WALK_FILE

from tests.support.workspace import lexical_settings, write_workspace


def test_links_at_the_temp_names_are_replaced_not_written_through(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", {"app.py": "def run():\n    return 1\n"})
    index_dir = root / ".codectx"
    index_dir.mkdir()
    mark(index_dir)  # a hostile repository ships the marker too
    (index_dir / "lookups").mkdir()
    pid = os.getpid()
    names = [
        "meta.json.tmp",
        "journal.json.tmp",
        f".{MANIFEST_FILE}.{pid}.tmp",
        f".{WALK_FILE}.{pid}.tmp",
        "lookups/chunks.arrow.tmp",
        "lookups/stamp.tmp",
    ]
    victims = []
    for n, name in enumerate(names):
        victim = tmp_path / f"victim-{n}.txt"
        victim.write_text("keep me")
        (index_dir / name).symlink_to(victim)
        victims.append(victim)
    report = index_workspace(root, lexical_settings(root))
    assert report.files == 1
    assert [v.read_text() for v in victims] == ["keep me"] * len(victims)
    assert (index_dir / "meta.json").is_file() and not (index_dir / "meta.json").is_symlink()


def test_the_index_folder_is_the_owners_only(tmp_path: Path) -> None:
    """The index holds the code's text unredacted: red team 3 read a 0600 file's text in the
    index's 0644 files. New indexes and older ones opened again are made 0700."""
    root = write_workspace(tmp_path / "ws", {"app.py": "def run():\n    return 1\n"})
    (root / "acl.py").write_text("LOCKED_DOWN = 1\n")
    (root / "acl.py").chmod(0o600)
    old_umask = os.umask(0o022)
    try:
        index_workspace(root, lexical_settings(root))
        index_dir = root / ".codectx"
        assert index_dir.stat().st_mode & 0o777 == 0o700
        index_dir.chmod(0o755)  # an index made before this change
        index_workspace(root, lexical_settings(root))
        assert index_dir.stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(old_umask)
