"""A damaged index: each of 31 kinds of damage ends in a working index after one `codectx index`.

A clean index of a small workspace is built once; each case copies it, damages it (LanceDB
data files truncated, bit-flipped or deleted, a table or its version history deleted, the
full-text index deleted, `db/` replaced by a file, meta.json, manifest.json, journal.json or
walk.json as garbage or valid JSON of the wrong shape, ...), then runs the real command once,
in process, so any exception that is not a clear message fails the test with its traceback.

After that one run: exit status 0, a message that says what was found, every table reads back
in full, the same files and chunks as the clean build, a search that finds a known function,
and the next run answers "up to date".
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codectx.indexer.storage.store import IndexStore

from codectx.cli import main

pytestmark = pytest.mark.slow

Damage = Callable[[Path], None]


def make_workspace(root: Path) -> None:
    for i in range(12):
        body = "\n\n".join(
            f"def step_{i}_{j}(value, factor={j}):\n"
            f'    """Step {j} of stage {i}: scale and shift the value."""\n'
            f"    return value * factor + {i}"
            for j in range(5)
        )
        path = root / f"pkg{i % 3}" / f"stage_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'"""Stage {i}."""\n\n{body}\n')
    (root / "pkg0" / "ledger.py").write_text(
        "def reconcile_quarterly_ledger(entries):\n"
        '    """Match each ledger entry with its bank statement line."""\n'
        "    return sorted(entries)\n"
    )
    (root / "README.md").write_text("# Stages\n\nEach stage scales a value.\n")


# -- where things are in an index folder ---------------------------------------------------


def table_dir(index: Path, table: str) -> Path:
    return index / "db" / f"{table}.lance"


def data_file(index: Path, table: str) -> Path:
    files = sorted((table_dir(index, table) / "data").glob("*.lance"), key=lambda p: p.stat().st_size)
    return files[-1]


def latest_manifest(index: Path, table: str) -> Path:
    # Version files are named u64::MAX - version: the smallest number is the newest.
    files = sorted((table_dir(index, table) / "_versions").glob("*.manifest"), key=lambda p: int(p.stem))
    return files[0]


def fts_dir(index: Path) -> Path:
    return next(d for d in (table_dir(index, "chunks") / "_indices").iterdir() if any(d.glob("*invert*")))


def btree_dir(index: Path) -> Path:
    """A B-tree index of the symbols table (`LOOKUP_COLUMNS`)."""
    return next(d for d in (table_dir(index, "symbols") / "_indices").iterdir() if any(d.glob("page_data*")))


# -- kinds of damage ------------------------------------------------------------------------


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def bitflip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for share in (0.1, 0.3, 0.5, 0.7, 0.9):
        data[int(len(data) * share)] ^= 0xFF
    data[-12] ^= 0xFF  # inside the footer
    path.write_bytes(bytes(data))


def write(name: str, text: str) -> Damage:
    def damage(index: Path) -> None:
        (index / name).write_text(text)

    return damage


def on(what: Callable[[Path], Path], action: Callable[[Path], None]) -> Damage:
    return lambda index: action(what(index))


def delete(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def replace_by_file(path: Path) -> None:
    delete(path)
    path.write_text("not a folder\n")


def both(*damages: Damage) -> Damage:
    def damage(index: Path) -> None:
        for d in damages:
            d(index)

    return damage


def drop_manifest(index: Path) -> None:
    (index / "manifest.json").unlink()


KINDS: dict[str, Damage] = {
    "chunks data truncated": on(lambda i: data_file(i, "chunks"), truncate),
    "chunks data bit-flipped": on(lambda i: data_file(i, "chunks"), bitflip),
    "chunks data deleted": on(lambda i: data_file(i, "chunks"), delete),
    "files data truncated": on(lambda i: data_file(i, "files"), truncate),
    "files data deleted": on(lambda i: data_file(i, "files"), delete),
    "symbols data bit-flipped": on(lambda i: data_file(i, "symbols"), bitflip),
    "symbols data truncated to nothing": on(lambda i: data_file(i, "symbols"), lambda p: truncate(p, 0)),
    "chunks table deleted": on(lambda i: table_dir(i, "chunks"), delete),
    "files table deleted": on(lambda i: table_dir(i, "files"), delete),
    "symbols table deleted": on(lambda i: table_dir(i, "symbols"), delete),
    "chunks _versions deleted": on(lambda i: table_dir(i, "chunks") / "_versions", delete),
    "files _versions deleted": on(lambda i: table_dir(i, "files") / "_versions", delete),
    "latest chunks version truncated": on(lambda i: latest_manifest(i, "chunks"), truncate),
    "latest files version garbage": on(
        lambda i: latest_manifest(i, "files"), lambda p: p.write_bytes(b"\x00junk" * 9)
    ),
    "version hint garbage": on(
        lambda i: table_dir(i, "chunks") / "_versions" / "latest_version_hint.json",
        lambda p: p.write_text("{not json"),
    ),
    "full-text index deleted": on(fts_dir, delete),
    "full-text index file truncated": on(lambda i: fts_dir(i) / "part_0_invert.lance", truncate),
    "B-tree index deleted": on(btree_dir, delete),
    "B-tree index file truncated": on(lambda i: btree_dir(i) / "page_data.lance", truncate),
    "db replaced by a file": on(lambda i: i / "db", replace_by_file),
    "db deleted": on(lambda i: i / "db", delete),
    "meta.json deleted": on(lambda i: i / "meta.json", delete),
    "meta.json garbage": write("meta.json", "{{{ not json"),
    "meta.json a list": write("meta.json", "[1, 2, 3]"),
    "meta.json schema version of another type": write("meta.json", '{"schema_version": "1"}'),
    "manifest.json garbage": write("manifest.json", "\x00\x01 garbage"),
    "manifest.json a list": write("manifest.json", '["files", "fingerprint"]'),
    "manifest.json a number": write("manifest.json", "5"),
    "manifest.json wrong value types": write(
        "manifest.json",
        json.dumps({"format": 1, "fingerprint": 7, "embedded": "yes", "report": [], "files": {"a.py": "x"}}),
    ),
    "journal.json garbage": write("journal.json", "not json at all"),
    "journal.json a number": write("journal.json", "5"),
    "journal.json an object": write("journal.json", '{"pkg0/stage_0.py": true}'),
    "walk.json a list": write("walk.json", "[1, 2]"),
    "walk.json garbage": write("walk.json", "\x00"),
    "manifest gone and chunks data truncated": both(
        drop_manifest, on(lambda i: data_file(i, "chunks"), truncate)
    ),
    "manifest gone and files table deleted": both(drop_manifest, on(lambda i: table_dir(i, "files"), delete)),
}

# Messages that say something was found (the run's warnings, a rebuild, a recovery).
FOUND = ("rebuilt the index", "codectx: warning:", "recovered from an interrupted run")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    root = tmp_path_factory.mktemp("clean") / "ws"
    root.mkdir()
    make_workspace(root)
    assert main(["index", str(root), "--no-embed"]) == 0
    stats = IndexStore.open(root / ".codectx").stats()
    return root, {"files": stats.files, "chunks": stats.chunks}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_there_are_at_least_31_kinds() -> None:
    assert len(KINDS) >= 31


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_damage_ends_in_a_working_index_after_one_run(
    kind: str, clean: tuple[Path, dict[str, int]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, counts = clean
    root = tmp_path / "ws"
    shutil.copytree(source, root, symlinks=True)
    index = root / ".codectx"
    KINDS[kind](index)
    capsys.readouterr()

    # Before the repair, the read-only commands answer with a message (or normally), never a crash.
    for argv in (["status", str(root)], ["search", "ledger", str(root), "--lexical"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 or ("codectx: error:" in err and "codectx index" in err), (argv, out, err)

    code, out, err = run(capsys, "index", str(root), "--no-embed")
    assert code == 0, err
    assert "Traceback" not in out + err
    if not kind.startswith("walk.json"):  # the walk record vouches for no table
        assert not out.startswith("up to date"), out  # never trusted without a look
    assert any(word in out + err for word in FOUND), (out, err)

    store = IndexStore.open(index)
    store.verify(deep=True)
    assert [d.path for d in store.symbols_named("reconcile_quarterly_ledger")] == ["pkg0/ledger.py"]
    stats = store.stats()
    assert {"files": stats.files, "chunks": stats.chunks} == counts

    code, out, err = run(capsys, "search", "reconcile quarterly ledger", str(root), "--lexical", "--json")
    assert code == 0, err
    assert json.loads(out)["results"][0]["path"] == "pkg0/ledger.py"

    code, out, err = run(capsys, "index", str(root), "--no-embed")
    assert code == 0 and out.startswith("up to date"), (out, err)


@pytest.fixture(scope="module")
def embedder() -> Any:
    from codectx.indexer.embedding.embedder import Embedder

    return Embedder(backend="torch", batch_size=16)


def _embedded(tmp_path: Path, embedder: Any) -> tuple[Path, Any]:
    from codectx.indexer.pipeline import index_workspace

    from codectx.settings import load_settings

    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root)
    settings = load_settings(root, {}, environ={}, user_config=tmp_path / "none.toml")
    first = index_workspace(root, settings, embedder=embedder)
    assert first.vectors_embedded > 0 and first.vectors_pending == 0
    return root, settings


def test_a_rebuild_keeps_the_embedding_cache_when_it_is_intact(tmp_path: Path, embedder: Any) -> None:
    from codectx.indexer.pipeline import index_workspace

    root, settings = _embedded(tmp_path, embedder)
    index = root / ".codectx"
    drop_manifest(index)
    truncate(data_file(index, "chunks"))
    calls = embedder.calls
    report = index_workspace(root, settings, embedder=embedder)
    assert report.rebuilt and "cannot be read" in report.rebuilt
    assert report.vectors_embedded == 0 and embedder.calls == calls  # every vector came from the cache
    assert report.vectors_pending == 0
    store = IndexStore.open(index)
    store.verify(deep=True)
    hits = store.vector_search(embedder.embed_query("reconcile the quarterly ledger"), 1, embedder.model_id)
    assert hits[0].chunk.path == "pkg0/ledger.py"


def test_a_damaged_vectors_table_is_dropped_and_computed_again(tmp_path: Path, embedder: Any) -> None:
    from codectx.indexer.pipeline import index_workspace

    root, settings = _embedded(tmp_path, embedder)
    index = root / ".codectx"
    vectors = sorted(p.name.removesuffix(".lance") for p in (index / "db").glob("vectors_*.lance"))
    truncate(data_file(index, vectors[0]))
    report = index_workspace(root, settings, embedder=embedder)
    assert not report.rebuilt  # the lexical tables were fine
    assert any("did not read back" in w for w in report.warnings)
    assert report.vectors_pending == 0
    IndexStore.open(index).verify(deep=True)
    assert index_workspace(root, settings, embedder=embedder).quick


def test_a_save_into_a_damaged_index_indexes_the_whole_workspace(
    clean: tuple[Path, dict[str, int]], tmp_path: Path
) -> None:
    """The language server re-indexes saved files with `index_paths`: a rebuild must not leave an
    index of just those files."""
    from codectx.indexer.pipeline import index_paths

    from codectx.settings import load_settings

    source, counts = clean
    root = tmp_path / "ws"
    shutil.copytree(source, root, symlinks=True)
    drop_manifest(root / ".codectx")
    truncate(data_file(root / ".codectx", "files"))
    settings = load_settings(root, {"index.embed": False}, environ={}, user_config=tmp_path / "none.toml")
    report = index_paths(root, ["pkg0/ledger.py"], settings, embed=False)
    assert report.rebuilt
    stats = IndexStore.open(root / ".codectx").stats()
    assert {"files": stats.files, "chunks": stats.chunks} == counts


def test_damage_that_keeps_size_and_mtime_is_caught_by_the_first_reader(
    clean: tuple[Path, dict[str, int]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bit flip that leaves the file's size and mtime as they were slips past the manifest's
    check; the first command that reads the table withdraws the manifest, so the next
    `codectx index` looks instead of answering "up to date"."""
    source, counts = clean
    root = tmp_path / "ws"
    shutil.copytree(source, root, symlinks=True)
    target = data_file(root / ".codectx", "chunks")
    before = target.stat()
    bitflip(target)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, _, err = run(capsys, "search", "ledger", str(root), "--lexical")
    assert code != 0 and "run `codectx index` to rebuild it" in err
    code, out, err = run(capsys, "index", str(root), "--no-embed")
    assert code == 0 and "rebuilt the index" in out, (out, err)
    stats = IndexStore.open(root / ".codectx").stats()
    assert {"files": stats.files, "chunks": stats.chunks} == counts


@pytest.mark.parametrize(
    "kind",
    ["chunks data bit-flipped", "files data truncated", "full-text index deleted", "db replaced by a file"],
)
def test_a_separate_process_shows_no_traceback_or_rust_panic(
    kind: str, clean: tuple[Path, dict[str, int]], tmp_path: Path
) -> None:
    """What a user's terminal shows, from a real `codectx index` process (LanceDB's Rust log
    and panics write to the file descriptor directly, past Python's sys.stderr)."""
    import subprocess
    import sys

    source, _ = clean
    root = tmp_path / "ws"
    shutil.copytree(source, root, symlinks=True)
    KINDS[kind](root / ".codectx")
    env = {k: v for k, v in os.environ.items() if k != "LANCEDB_LOG"}
    for _ in range(2):  # the repair, then the check that it held
        done = subprocess.run(
            [sys.executable, "-m", "codectx", "index", str(root), "--no-embed"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        for marker in ("Traceback", "panicked", "RUST_BACKTRACE", " WARN ", "RuntimeError"):
            assert marker not in done.stderr, done.stderr
    assert done.stdout.startswith("up to date")
