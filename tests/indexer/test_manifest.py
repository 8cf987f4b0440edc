"""The quick no-op check: `codectx index` on an unchanged workspace answers from the manifest,
and any change (edit, new or deleted file, settings, pending vectors, a write elsewhere) falls
through to a real run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from codectx.indexer.pipeline import index_paths
from codectx.indexer.walk.manifest import Manifest, quick_check

from codectx.cli import main
from codectx.settings import load_settings

TREE = {
    "src/app.py": "def run(port: int) -> int:\n    return port + 1\n",
    "src/util.py": "def helper() -> str:\n    return 'x'\n",
    "web/api.ts": "export function load(): number {\n  return 1;\n}\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def index_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(["index", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def bump(path: Path, text: str) -> None:
    """Change a file so that size and mtime both move (coarse mtime clocks included)."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_unchanged_workspace_answers_quickly_and_changes_fall_through(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = index_json(capsys, str(tree), "--no-embed")
    assert first["added"] == 3 and not first["quick"]
    again = index_json(capsys, str(tree), "--no-embed")
    assert again["quick"] and again["files"] == 3 and again["unchanged"] == 3
    assert again["chunks"] == first["chunks"] and again["chunks_per_language"] == first["chunks_per_language"]

    bump(tree / "src" / "util.py", "def helper() -> str:\n    return 'changed'\n")
    edited = index_json(capsys, str(tree), "--no-embed")
    assert not edited["quick"] and edited["updated"] == 1 and edited["unchanged"] == 2

    (tree / "src" / "new.py").write_text("def fresh():\n    pass\n")
    added = index_json(capsys, str(tree), "--no-embed")
    assert not added["quick"] and added["added"] == 1

    (tree / "web" / "api.ts").unlink()
    removed = index_json(capsys, str(tree), "--no-embed")
    assert not removed["quick"] and removed["removed"] == 1 and removed["files"] == 3
    assert index_json(capsys, str(tree), "--no-embed")["quick"]


def test_settings_and_missing_vectors_are_not_up_to_date(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    index_json(capsys, str(tree), "--no-embed")
    assert index_json(capsys, str(tree), "--no-embed")["quick"]
    # A size cap that now excludes a file changes what is indexed.
    monkeypatch.setenv("CODECTX_INDEX_MAX_FILE_BYTES", "40")
    capped = index_json(capsys, str(tree), "--no-embed")
    assert not capped["quick"] and capped["skipped"].get("too-large", 0) >= 1
    monkeypatch.delenv("CODECTX_INDEX_MAX_FILE_BYTES")
    restored = index_json(capsys, str(tree), "--no-embed")
    assert not restored["quick"]
    # The last runs computed no vectors: a run that wants them is a real run, then a quick one.
    monkeypatch.setenv("CODECTX_INDEX_EMBED_BACKEND", "torch")
    embedded = index_json(capsys, str(tree))
    assert not embedded["quick"] and embedded["vectors_embedded"] > 0 and embedded["vectors_pending"] == 0
    quick = index_json(capsys, str(tree))
    assert quick["quick"] and quick["vectors_pending"] == 0


def test_any_write_to_the_index_drops_the_manifest(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index_json(capsys, str(tree), "--no-embed")
    settings = load_settings(tree.resolve(), {"index.embed": False})
    index_dir = settings.index_dir()
    assert Manifest.read(index_dir) is not None
    assert quick_check(tree.resolve(), settings, embed=False) is not None
    # An editor's save re-indexed by the language server (same size and mtime trick aside).
    target = tree / "src" / "app.py"
    bump(target, "def run(port: int) -> int:\n    return port + 2\n")
    index_paths(tree, [target], settings, embed=False)
    assert Manifest.read(index_dir) is None
    assert quick_check(tree.resolve(), settings, embed=False) is None
    # A run killed mid-write leaves its journal: never "up to date" until it is rolled back.
    assert not index_json(capsys, str(tree), "--no-embed")["quick"]
    (index_dir / "journal.json").write_text("[]")
    assert quick_check(tree.resolve(), settings, embed=False) is None
    # A damaged manifest is ignored, not trusted.
    (index_dir / "journal.json").unlink()
    Manifest.path(index_dir).write_text("{not json")
    assert quick_check(tree.resolve(), settings, embed=False) is None


def test_quick_path_does_not_load_lancedb(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index_json(capsys, str(tree), "--no-embed")
    probe = (
        "import sys\nfrom codectx.cli import main\n"
        f"code = main(['index', {str(tree)!r}, '--no-embed'])\n"
        "print('LANCEDB' if 'lancedb' in sys.modules else 'NO-LANCEDB', code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "up to date" in out.stdout and "NO-LANCEDB 0" in out.stdout


def test_a_real_run_reuses_the_checks_walk_only_while_it_matches_the_index(tree: Path) -> None:
    from codectx.indexer.pipeline import index_workspace
    from codectx.indexer.walk.manifest import check_workspace

    settings = load_settings(tree.resolve(), environ={})
    index_workspace(tree.resolve(), settings, embed=False)
    bump(tree / "src" / "util.py", "def helper() -> str:\n    return 'one'\n")
    checked = check_workspace(tree.resolve(), settings, embed=False)
    assert checked.report is None and checked.found is not None  # changed: the walk comes back
    report = index_workspace(tree.resolve(), settings, embed=False, check_manifest=False, checked=checked)
    assert report.updated == 1 and report.unchanged == 2

    # A walk taken before another writer ran is stale: the run walks again and sees the new edit.
    bump(tree / "src" / "app.py", "def run(port: int) -> int:\n    return port + 2\n")
    stale = check_workspace(tree.resolve(), settings, embed=False)
    index_workspace(tree.resolve(), settings, embed=False)  # the other writer
    bump(tree / "web" / "api.ts", "export function load(): number {\n  return 2;\n}\n")
    later = index_workspace(tree.resolve(), settings, embed=False, check_manifest=False, checked=stale)
    assert later.updated == 1 and later.added == 0 and later.removed == 0
    assert Manifest.read(settings.index_dir()) is not None


def test_the_manifest_lists_exactly_the_index_records(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A complete run writes the manifest from the records it read and wrote, without re-reading
    the files table: after edits, additions and deletions it must still match that table."""
    from codectx.indexer.storage.store import IndexStore

    settings = load_settings(tree.resolve(), {"index.embed": False})
    index_dir = settings.index_dir()

    def matches() -> None:
        manifest = Manifest.read(index_dir)
        assert manifest is not None
        records = IndexStore.open(index_dir).file_records()
        assert manifest.files == {p: (r.size, r.mtime_ns) for p, r in records.items()}

    index_json(capsys, str(tree), "--no-embed")
    matches()
    bump(tree / "src" / "util.py", "def helper() -> str:\n    return 'edited'\n")
    (tree / "src" / "new.py").write_text("def fresh():\n    pass\n")
    (tree / "web" / "api.ts").unlink()
    report = index_json(capsys, str(tree), "--no-embed")
    assert (report["updated"], report["added"], report["removed"]) == (1, 1, 1)
    matches()
    assert set(Manifest.read(index_dir).files) == {"src/app.py", "src/util.py", "src/new.py"}  # type: ignore[union-attr]


def test_a_run_after_the_check_trusts_the_manifest_only_while_it_is_untouched(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codectx.indexer.pipeline import index_workspace
    from codectx.indexer.storage.store import IndexStore
    from codectx.indexer.walk.manifest import check_workspace

    root = tree.resolve()
    settings = load_settings(root, environ={})
    index_workspace(root, settings, embed=False)
    reads: list[int] = []
    real = IndexStore.file_records

    def counted(self: IndexStore) -> dict:  # type: ignore[type-arg]
        reads.append(1)
        return real(self)

    monkeypatch.setattr(IndexStore, "file_records", counted)
    bump(tree / "src" / "util.py", "def helper() -> str:\n    return 'one'\n")
    checked = check_workspace(root, settings, embed=False)
    report = index_workspace(root, settings, embed=False, check_manifest=False, checked=checked)
    assert report.updated == 1 and report.unchanged == 2 and reads == []

    # The same manifest bytes rewritten (as by another complete run) is not the same manifest.
    bump(tree / "src" / "app.py", "def run(port: int) -> int:\n    return port + 2\n")
    checked = check_workspace(root, settings, embed=False)
    manifest = Manifest.read(settings.index_dir())
    assert manifest is not None
    Manifest.drop(settings.index_dir())
    manifest.write(settings.index_dir())
    report = index_workspace(root, settings, embed=False, check_manifest=False, checked=checked)
    assert report.updated == 1 and reads == [1]
