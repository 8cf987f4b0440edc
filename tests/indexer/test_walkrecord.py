"""The walk record (`walk.json`): a replayed walk finds exactly what a plain walk finds, whatever changed."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from codectx.indexer.walk.discovery import Discovery, discover
from codectx.indexer.walk.manifest import fingerprint
from codectx.indexer.walk.walkrecord import RACY_NS, REJUDGE_BATCH, WALK_FILE, discover_cached

from codectx.settings import Settings, load_settings


def _w(root: Path, rel: str, text: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _tree(root: Path) -> Path:
    """Ignore files at several levels, the default skips, symlinks, a loop, a virtualenv."""
    _w(root, ".gitignore", "*.log\n/build/\n")
    _w(root, ".git/info/exclude", "scratch_*.py\n")
    _w(root, "app/main.py", "def main():\n    return 1\n")
    _w(root, "app/util.py")
    _w(root, "app/debug.log", "log\n")
    _w(root, "app/scratch_a.py")
    _w(root, "app/deep/er/mod.py")
    _w(root, "app/deep/er/notes.md", "# notes\n")
    _w(root, "app/deep/.codectxignore", "secret_stuff/\n")
    _w(root, "app/deep/secret_stuff/x.py")
    _w(root, "lib/.gitignore", "gen_*.py\n!gen_keep.py\n")
    _w(root, "lib/gen_a.py")
    _w(root, "lib/gen_keep.py")
    _w(root, "lib/core.h", "class A { public: int x; };\n")
    _w(root, "lib/plain.h", "int f(void);\n")
    _w(root, "lib/blob.py", b"\x00\x01binary")
    _w(root, "lib/big.py", "x = 1\n" * 40)
    _w(root, "web/app.min.js", "var a=1;")
    _w(root, "web/index.ts", "export const a = 1;\n")
    _w(root, "web/package-lock.json", "{}\n")
    _w(root, "web/node_modules/dep/index.js", "module.exports = 1;\n")
    _w(root, "env/pyvenv.cfg", "home = /usr\n")
    _w(root, "env/lib/site.py")
    _w(root, "build/out.py")
    _w(root, "bin/run", "#!/usr/bin/env python3\nprint(1)\n")
    _w(root, "data/image.png", b"\x89PNG\r\n\x1a\n\0\0")
    _w(root, "zz_late/inner/z.py")
    _w(root, ".env", "KEY=value\n")
    _w(root, "certs/server.pem", "-----BEGIN-----\n")
    os.symlink(root / "app" / "deep", root / "lib" / "deep_link")  # a folder walked twice
    os.symlink(root / "lib", root / "lib" / "loop")  # a loop
    os.symlink(root / "app" / "util.py", root / "web" / "util_link.py")
    return root


def _settings(root: Path, **overrides: object) -> Settings:
    return load_settings(
        root, {"index.max_file_bytes": 200, **{f"index.{k}": v for k, v in overrides.items()}}
    )


def _cached(root: Path, settings: Settings, racy_ns: int = 0) -> Discovery:
    index_dir = settings.index_dir()
    index_dir.mkdir(parents=True, exist_ok=True)
    return discover_cached(root, settings, index_dir, fingerprint(settings), racy_ns=racy_ns)


def _same_as_plain(root: Path, settings: Settings) -> Discovery:
    found = _cached(root, settings)
    plain = discover(root, settings)
    assert found.files == plain.files
    assert found.skipped == plain.skipped
    return found


def _tick() -> None:
    """Let the file system clock move on, so a change after a walk gets a newer timestamp.

    (Production code trusts nothing changed within RACY_NS of a walk; these tests pass 0.)"""
    time.sleep(0.03)


def _record(settings: Settings) -> dict:  # type: ignore[type-arg]
    return json.loads((settings.index_dir() / WALK_FILE).read_text())  # type: ignore[no-any-return]


def test_replayed_walk_matches_the_plain_walk(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ws")
    settings = _settings(root)
    first = _same_as_plain(root, settings)
    assert (settings.index_dir() / WALK_FILE).exists()
    _tick()
    again = _same_as_plain(root, settings)
    assert {f.path for f in again.files} == {f.path for f in first.files}
    paths = {f.path for f in again.files}
    assert "app/main.py" in paths and "bin/run" in paths and "lib/gen_keep.py" in paths
    assert "lib/gen_a.py" not in paths and "app/scratch_a.py" not in paths
    reasons = {s.path: s.reason for s in again.skipped}
    assert reasons["lib/loop/"] == "symlink-loop" and reasons["lib/blob.py"] == "binary"
    assert reasons["lib/big.py"] == "too-large" and reasons[".env"] == "secret-file"
    record = _record(settings)
    # Folders holding a symlink are listed every time, never recorded; plain ones are.
    assert "lib" not in record["dirs"] and "web" not in record["dirs"]
    assert "app" in record["dirs"] and "app/deep/er" in record["dirs"]


def test_the_record_is_replayed_but_not_when_too_recent(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "pkg/a.py")
    settings = _settings(root)
    _cached(root, settings)
    # Tamper with the recorded verdict: a replay shows it, a fresh judgement would not.
    path = settings.index_dir() / WALK_FILE
    data = json.loads(path.read_text())
    entry = next(e for e in data["dirs"]["pkg"][3] if e[0] == "a.py")
    entry[2] = "tampered"
    path.write_text(json.dumps(data))
    _tick()
    # Files and folders changed within RACY_NS of the recording walk are judged afresh.
    assert [f.language for f in _cached(root, settings, racy_ns=RACY_NS).files] == ["python"]
    data["walked_ns"] = time.time_ns()
    path.write_text(json.dumps(data))
    _tick()
    assert [f.language for f in _cached(root, settings, racy_ns=0).files] == ["tampered"]
    # The same for a folder's listing: drop a.py from it.
    data["dirs"]["pkg"][3] = [e for e in data["dirs"]["pkg"][3] if e[0] != "a.py"]
    data["walked_ns"] = os.stat(root / "pkg").st_ctime_ns  # the folder changed as it was listed
    path.write_text(json.dumps(data))
    assert [f.path for f in _cached(root, settings, racy_ns=RACY_NS).files] == ["pkg/a.py"]
    data["walked_ns"] = time.time_ns()
    path.write_text(json.dumps(data))
    assert _cached(root, settings, racy_ns=0).files == []
    # A file changed just before the recording walk, in a folder that had not: only the file is
    # judged afresh.
    path.unlink()
    _tick()
    (root / "pkg/a.py").write_text("x = 2\n")
    _cached(root, settings)
    data = json.loads(path.read_text())
    data["dirs"]["pkg"][3][0][2] = "tampered"
    dir_ctime, file_ctime = os.stat(root / "pkg").st_ctime_ns, os.stat(root / "pkg/a.py").st_ctime_ns
    assert file_ctime > dir_ctime
    data["walked_ns"] = file_ctime
    path.write_text(json.dumps(data))
    found = _cached(root, settings, racy_ns=(file_ctime - dir_ctime) // 2)
    assert [(f.path, f.language) for f in found.files] == [("pkg/a.py", "python")]


def _add_file(root: Path) -> None:
    _w(root, "app/deep/er/new.py")


def _delete_file(root: Path) -> None:
    (root / "app/deep/er/mod.py").unlink()


def _rename_file(root: Path) -> None:
    (root / "app/util.py").rename(root / "app/util.log")  # now ignored by the root .gitignore


def _new_folder(root: Path) -> None:
    _w(root, "app/deep/er/sub/fresh.py")


def _content_turns_binary(root: Path) -> None:
    (root / "app/main.py").write_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00x")


def _grows_past_the_cap(root: Path) -> None:
    (root / "app/deep/er/mod.py").write_text("y = 2\n" * 50)


def _shrinks_under_the_cap(root: Path) -> None:
    (root / "lib/big.py").write_text("x = 1\n")


def _root_gitignore_edited(root: Path) -> None:
    (root / ".gitignore").write_text("*.log\n/build/\nmod.py\n")  # reaches a deep, recorded folder


def _nested_gitignore_added(root: Path) -> None:
    _w(root, "app/deep/.gitignore", "*.md\n")


def _codectxignore_edited(root: Path) -> None:
    (root / "app/deep/.codectxignore").write_text("er/\n")


def _codectxignore_removed(root: Path) -> None:
    (root / "app/deep/.codectxignore").unlink()


def _git_exclude_edited(root: Path) -> None:
    (root / ".git/info/exclude").write_text("main.py\n")


def _dot_ignore_added(root: Path) -> None:
    _w(root, "app/deep/.ignore", "er/*.md\n")


def _dot_ignore_negates_a_gitignore(root: Path) -> None:
    _w(root, ".ignore", "!gen_a.py\n")  # beats lib/.gitignore's gen_*.py (ripgrep's precedence)


def _global_excludes_written(root: Path) -> None:
    _w(Path(os.environ["XDG_CONFIG_HOME"]), "git/ignore", "util.py\n")


def _symlink_added(root: Path) -> None:
    os.symlink(root / "web", root / "app" / "deep" / "er" / "web_link")


def _symlink_to_a_later_folder_added(root: Path) -> None:
    # Walked first through the link, so the recorded `zz_late/inner` becomes the duplicate.
    os.symlink(root / "zz_late" / "inner", root / "app" / "deep" / "er" / "inner_link")


def _same_size_binary_mtime_kept(root: Path) -> None:
    path = root / "app/util.py"
    st = path.stat()
    path.write_bytes(b"\x00" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # only the ctime tells


def _bigger_binary_mtime_kept(root: Path) -> None:
    path = root / "app/util.py"
    st = path.stat()
    path.write_bytes(b"\x00" * (st.st_size + 3))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _folder_becomes_virtualenv(root: Path) -> None:
    _w(root, "app/deep/er/pyvenv.cfg", "home = /usr\n")


def _made_unreadable(root: Path) -> None:
    os.chmod(root / "app/util.py", 0)


@pytest.mark.parametrize(
    "change",
    [
        _add_file,
        _delete_file,
        _rename_file,
        _new_folder,
        _content_turns_binary,
        _grows_past_the_cap,
        _shrinks_under_the_cap,
        _root_gitignore_edited,
        _nested_gitignore_added,
        _codectxignore_edited,
        _codectxignore_removed,
        _git_exclude_edited,
        _dot_ignore_added,
        _dot_ignore_negates_a_gitignore,
        _global_excludes_written,
        _symlink_added,
        _symlink_to_a_later_folder_added,
        _same_size_binary_mtime_kept,
        _bigger_binary_mtime_kept,
        _folder_becomes_virtualenv,
        _made_unreadable,
    ],
)
@pytest.mark.parametrize("trust_all", [False, True], ids=["racy-guard", "stat-only"])
def test_every_change_is_seen(tmp_path: Path, change: Callable[[Path], None], trust_all: bool) -> None:
    root = _tree(tmp_path / "ws")
    settings = _settings(root)
    before = _same_as_plain(root, settings)
    _tick()
    _same_as_plain(root, settings)  # now replayed
    _tick()
    if trust_all:
        # A record that claims to be from the future trusts every timestamp: the changes must
        # then show in the stat comparisons alone.
        path = settings.index_dir() / WALK_FILE
        data = json.loads(path.read_text())
        data["walked_ns"] = time.time_ns() + 3600 * 10**9
        path.write_text(json.dumps(data))
    change(root)
    after = _same_as_plain(root, settings)
    if change is not _made_unreadable or os.geteuid() != 0:  # root reads a mode-0 file anyway
        assert (after.files, after.skipped) != (before.files, before.skipped)
    _tick()
    _same_as_plain(root, settings)  # and the record written after the change replays right


def test_settings_change_and_damaged_record_fall_back_to_a_plain_walk(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ws")
    settings = _settings(root)
    _same_as_plain(root, settings)
    _tick()
    narrower = _settings(root, exclude=["app/"])
    found = _same_as_plain(root, narrower)
    assert not any(f.path.startswith("app/") for f in found.files)
    (settings.index_dir() / WALK_FILE).write_text('{"format": 1, "header": ')
    _same_as_plain(root, settings)
    assert _record(settings)["format"] == 1  # rewritten whole


def test_missing_index_folder_or_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "a.py")
    settings = _settings(root)
    found = discover_cached(root, settings, tmp_path / "no-index", fingerprint(settings))
    assert [f.path for f in found.files] == ["a.py"]
    assert not (tmp_path / "no-index").exists()
    from codectx.indexer.walk.discovery import DiscoveryError

    with pytest.raises(DiscoveryError, match="does not exist"):
        discover_cached(tmp_path / "gone", settings, tmp_path, fingerprint(settings))


def test_the_record_is_rewritten_only_when_it_learns_something(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    _w(root, "pkg/a.py")
    _w(root, "b.md", "# b\n")
    settings = _settings(root)
    hour = 3600 * 10**9
    _cached(root, settings, racy_ns=hour)
    first = _record(settings)["walked_ns"]
    newest = max(os.stat(p).st_ctime_ns for p in (root, root / "pkg", root / "pkg/a.py", root / "b.md"))
    _cached(root, settings, racy_ns=hour)  # all too recent to trust, and nothing new: kept
    assert _record(settings)["walked_ns"] == first
    _tick()
    # Too recent for the first walk, old enough for this one: judged afresh once more, and the
    # record rewritten with this walk's time, so that the next walk trusts it.
    racy = first - newest + 1
    _cached(root, settings, racy_ns=racy)
    second = _record(settings)["walked_ns"]
    assert second > first
    _tick()
    _cached(root, settings, racy_ns=racy)  # replayed: nothing to write
    assert _record(settings)["walked_ns"] == second
    _tick()
    _w(root, "pkg/c.py")
    # pkg/ changed: let it grow older than the window, or this walk could not record it as
    # trusted and the next one would list it again (how soon the first walk ran after the
    # fixture was written sets `racy`, so a slow start made this test fail under load).
    time.sleep(racy / 1e9 + 0.03)
    found = _cached(root, settings, racy_ns=racy)
    assert [f.path for f in found.files] == ["b.md", "pkg/a.py", "pkg/c.py"]
    third = _record(settings)["walked_ns"]
    assert third > second
    _tick()
    # A few edited files are judged afresh on every walk rather than rewriting the record...
    (root / "pkg/a.py").write_bytes(b"\x00binary now")
    for _ in range(2):
        found = _cached(root, settings, racy_ns=racy)
        assert [f.path for f in found.files] == ["b.md", "pkg/c.py"]
        assert {s.path: s.reason for s in found.skipped}["pkg/a.py"] == "binary"
        assert _record(settings)["walked_ns"] == third
    # ...many are recorded.
    for i in range(REJUDGE_BATCH):
        _w(root, f"many/m{i}.py")
    _cached(root, settings, racy_ns=racy)
    _tick()
    for i in range(REJUDGE_BATCH):
        _w(root, f"many/m{i}.py", "x = 2\n")
    fourth = _record(settings)["walked_ns"]
    assert len(_cached(root, settings, racy_ns=racy).files) == REJUDGE_BATCH + 2
    assert _record(settings)["walked_ns"] > fourth
