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
