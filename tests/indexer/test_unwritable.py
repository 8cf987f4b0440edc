"""Index folders that cannot be written: a clear message, never a traceback, nothing lost.

The index folder under a file, replaced by a file, in /proc, on a read-only mount (or, for
a user who is not root, a read-only folder), and a disk that fills up while vectors are
being written. The full disk is a real small tmpfs where this machine lets the test mount
one (root); everywhere, the same failure is also injected at LanceDB's write call, the
layer below codectx, with the errno a full disk gives.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from codectx.indexer import stages
from codectx.indexer.errors import IndexUnwritable
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage.store import IndexStore

from codectx.cli import main
from codectx.settings import load_settings


def make_workspace(root: Path, n: int = 8) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = "\n\n".join(
            f"def handle_{i}_{j}(request):\n    return request.get('k{i}_{j}', {j})" for j in range(6)
        )
        (root / f"mod_{i}.py").write_text(body + "\n")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_dir_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path / "ws")
    blocker = tmp_path / "a-file"
    blocker.write_text("keep me\n")
    code, _, err = run(
        capsys, "index", str(tmp_path / "ws"), "--no-embed", "--index-dir", str(blocker / "idx")
    )
    assert code != 0
    assert f"{blocker} is a file, not a folder" in err and "--index-dir" in err
    assert blocker.read_text() == "keep me\n"


def test_index_folder_replaced_by_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    make_workspace(root)
    (root / ".codectx").write_text("someone's notes\n")
    code, _, err = run(capsys, "index", str(root), "--no-embed")
    assert code != 0
    assert "is a file, not a folder; move it away" in err
    assert (root / ".codectx").read_text() == "someone's notes\n"  # never deleted: not ours


def test_index_dir_in_proc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_workspace(tmp_path / "ws")
    code, _, err = run(
        capsys, "index", str(tmp_path / "ws"), "--no-embed", "--index-dir", "/proc/codectx/idx"
    )
    assert code != 0
    assert "cannot write the index folder /proc/codectx/idx" in err


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs of our own, unmounted after the test."""
    if not _can_mount():
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _read_only(path: Path, mounted: bool) -> None:
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)
    else:
        for folder, _dirs, files in os.walk(path):
            for name in files:
                os.chmod(os.path.join(folder, name), 0o444)
            os.chmod(folder, 0o555)


@pytest.fixture
def read_only_place(tmp_path: Path) -> Iterator[tuple[Path, bool]]:
    """A folder that can be made read-only: a tmpfs remounted read-only as root, else chmod."""
    if _can_mount():
        mnt = tmp_path / "ro"
        mnt.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], check=True)
        try:
            yield mnt, True
        finally:
            subprocess.run(["umount", "-l", str(mnt)], check=False)
    elif os.geteuid() != 0:
        yield tmp_path / "ro", False
    else:
        pytest.skip("root without mount: no way to make a folder read-only")


def test_read_only_index(read_only_place: tuple[Path, bool], capsys: pytest.CaptureFixture[str]) -> None:
    place, mounted = read_only_place
    root = place / "ws"
    make_workspace(root)
    assert run(capsys, "index", str(root), "--no-embed")[0] == 0
    (root / "mod_new.py").write_text("def fresh():\n    return 1\n")  # before the folder goes read-only
    _read_only(place, mounted)
    # A change to index: the run needs to write, and says why it cannot.
    code, _, err = run(capsys, "index", str(root), "--no-embed")
    assert code != 0 and "Traceback" not in err
    assert "read-only" in err or "permission denied" in err, err
    # Reading still works: status and search answer from the index as it is.
    code, out, err = run(capsys, "status", str(root))
    assert code == 0 and "1 new" in out, (out, err)
    code, out, err = run(capsys, "search", "handle request", str(root), "--lexical")
    assert code == 0 and "mod_" in out, (out, err)


def _settings(root: Path, tmp_path: Path, index_dir: Path) -> Any:
    overrides = {"index.index_dir": str(index_dir), "index.embed_batch_size": 8}
    return load_settings(root, overrides, environ={}, user_config=tmp_path / "none.toml")


@pytest.fixture(scope="module")
def embedder() -> Any:
    from codectx.indexer.embedding.embedder import Embedder

    return Embedder(backend="torch", batch_size=8)


def _vectors_in(index_dir: Path, model_id: str) -> int:
    store = IndexStore.open(index_dir)
    return len(store.vector_hashes(model_id))


@pytest.mark.slow
def test_full_disk_while_embedding_keeps_the_batches_committed(
    small_disk: Path, tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    make_workspace(root, n=12)  # 72 functions: several batches of 16
    monkeypatch.setattr(stages, "EMBED_COMMIT", 16)
    index_dir = small_disk / "idx"
    settings = _settings(root, tmp_path, index_dir)
    filler = small_disk / "filler"

    def fill_disk_after_two_batches(event: Any) -> None:
        if event.stage == "embed" and event.done > 32 and not filler.exists():
            with filler.open("wb") as fh:  # every free byte of the tmpfs
                try:
                    while True:
                        fh.write(b"\0" * (1 << 20))
                except OSError:
                    pass

    with pytest.raises(IndexUnwritable) as info:
        index_workspace(root, settings, fill_disk_after_two_batches, embedder=embedder)
    assert "no space left on the device" in str(info.value) and "already committed is kept" in str(info.value)
    filler.unlink()
    kept = _vectors_in(index_dir, embedder.model_id)
    assert kept == 32  # the two batches committed before the disk filled; one batch lost
    again = index_workspace(root, settings, embedder=embedder)
    assert again.vectors_pending == 0
    total = IndexStore.open(index_dir).stats(embedder.model_id).vectors_done
    assert again.vectors_embedded == total - kept  # only what was not committed is embedded again


@pytest.mark.slow
def test_enospc_at_the_write_layer_keeps_the_batches_committed(
    tmp_path: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, injected: LanceDB's `Table.add` fails as a full disk makes it fail."""
    import lancedb.table

    root = tmp_path / "ws"
    make_workspace(root, n=12)
    monkeypatch.setattr(stages, "EMBED_COMMIT", 16)
    index_dir = tmp_path / "idx"
    settings = _settings(root, tmp_path, index_dir)
    real_add = lancedb.table.LanceTable.add
    vector_adds = {"n": 0}

    def add(self: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if self.name.startswith("vectors_"):
            vector_adds["n"] += 1
            if vector_adds["n"] > 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, data, *args, **kwargs)

    monkeypatch.setattr(lancedb.table.LanceTable, "add", add)
    with pytest.raises(IndexUnwritable, match="no space left on the device"):
        index_workspace(root, settings, embedder=embedder)
    monkeypatch.setattr(lancedb.table.LanceTable, "add", real_add)
    kept = _vectors_in(index_dir, embedder.model_id)
    assert kept == 48  # the batch that created the table and the two adds before the failure
    calls = embedder.calls
    again = index_workspace(root, settings, embedder=embedder)
    assert again.vectors_pending == 0 and again.vectors_embedded == embedder.calls - calls
    total = IndexStore.open(index_dir).stats(embedder.model_id).vectors_done
    assert again.vectors_embedded == total - kept  # only what was not committed is embedded again


def test_full_disk_during_the_lexical_commit_is_recovered_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while a batch of files is written: a message, the batches before it stay
    searchable, and the next run rolls the half-written batch back and completes the index."""
    import lancedb.table

    root = tmp_path / "ws"
    make_workspace(root, n=10)
    monkeypatch.setattr(stages, "COMMIT_FILES", 3)
    index_dir = tmp_path / "idx"
    settings = _settings(root, tmp_path, index_dir)
    real_add = lancedb.table.LanceTable.add
    chunk_adds = {"n": 0}

    def add(self: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        if self.name == "chunks":
            chunk_adds["n"] += 1
            if chunk_adds["n"] == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, data, *args, **kwargs)

    monkeypatch.setattr(lancedb.table.LanceTable, "add", add)
    with pytest.raises(IndexUnwritable, match="no space left on the device"):
        index_workspace(root, settings, embed=False)
    monkeypatch.setattr(lancedb.table.LanceTable, "add", real_add)
    assert len(IndexStore.open(index_dir).file_records()) == 6  # the two batches before the failure
    again = index_workspace(root, settings, embed=False)
    assert again.recovered == 3 and again.files == 10  # the journalled batch, rolled back and redone
    clean = index_workspace(root, _settings(root, tmp_path, tmp_path / "clean"), embed=False)
    assert (again.files, again.chunks) == (clean.files, clean.chunks)
