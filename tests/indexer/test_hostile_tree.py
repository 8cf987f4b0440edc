"""A hostile workspace: every item is indexed or skipped with a reason; nothing stops the run.

The tree is generated here, in a temporary folder (no binary junk is committed). It holds
ignore files with lines pathspec refuses, names that are not UTF-8, binary, huge, minified,
invalid-UTF-8, UTF-16/32, deep, oddly named and pathologically shaped files, FIFOs, symlink
loops, links out of the workspace and onto a secret file; and, between the walk and the
parse, files that turn into a FIFO, into a link out, or grow past the size cap. One real
`index_workspace` run must finish (no hang, no crash), account for all of them, and index
no byte from outside the workspace or from a never-index file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.report import ProgressEvent
from codectx.indexer.storage.store import IndexStore

from codectx.settings import load_settings

pytestmark = pytest.mark.slow

OUTSIDE = "OUTSIDE_CONTENT_MARKER_7f3a"
SECRET = "SECRET_ENV_MARKER_91c2"
CAP = 1_000_000


def build(root: Path, outside: Path) -> dict[str, str]:
    """Write the tree; returns {item: what must become of it} for the report below."""
    outside.mkdir()
    (outside / "stolen.py").write_text(f"def stolen():\n    return '{OUTSIDE}'\n")
    root.mkdir()
    w = root.joinpath
    (w("ok.py")).write_text("def plain_function(x):\n    return x + 1\n")
    # 1-4: ignore-file lines pathspec cannot compile (git skips them); the good lines still apply.
    w(".gitignore").write_text("\\\n!\nfoo\\\n*.log\n")
    w("sub").mkdir()
    w("sub", ".codectxignore").write_text("[z-a]\nignored_here.py\n")
    w("sub", "ignored_here.py").write_text("def should_be_ignored():\n    pass\n")
    w("sub", "kept.py").write_text("def kept_in_sub():\n    return 2\n")
    w("debug.log").write_text("ignored by the good *.log line\n")
    # 5-6: names that are not UTF-8 (a file and a folder)
    bad_file = os.path.join(os.fsencode(root), b"caf\xe9.py")
    with open(bad_file, "wb") as fh:
        fh.write(b"def cafe():\n    pass\n")
    bad_dir = os.path.join(os.fsencode(root), b"d\xff")
    os.mkdir(bad_dir)
    with open(os.path.join(bad_dir, b"inner.py"), "wb") as fh:
        fh.write(b"def inner():\n    pass\n")
    # 7-11: binary, huge, minified, lockfile, invalid UTF-8
    w("blob.py").write_bytes(b"def x():\n\x00\x01\x02 binary\n")
    w("huge.py").write_text("x = 1\n" * (CAP // 6 + 10))
    w("app.min.js").write_text("var a=1;" * 500)
    w("package-lock.json").write_text("{}\n")
    w("latin1.py").write_bytes(b"def latin():\n    return 'caf\xe9'\n")
    # 12-13: UTF-16 and UTF-32 with a byte-order mark
    w("wide16.py").write_bytes("def wide_sixteen():\n    return 16\n".encode("utf-16"))
    w("wide32.py").write_bytes(
        b"\x00\x00\xfe\xff" + "def wide_thirty_two():\n    return 32\n".encode("utf-32-be")
    )
    # 14: deep nesting
    deep = root.joinpath(*[f"d{i}" for i in range(60)])
    deep.mkdir(parents=True)
    (deep / "bottom.py").write_text("def deep_down():\n    return 60\n")
    # 15: odd names
    w('a b\'c "quoted".py').write_text("def odd_name():\n    return 'odd'\n")
    w("-rf.py").write_text("def dash_name():\n    return '-'\n")
    # 16: a FIFO present at discovery
    os.mkfifo(w("pipe.py"))
    # 17-20: symlink loop, links out (file and folder), a broken link
    w("loop").mkdir()
    os.symlink("..", w("loop", "up"))
    os.symlink(outside / "stolen.py", w("link_out.py"))
    os.symlink(outside, w("dir_out"))
    os.symlink(w("missing.py"), w("broken.py"))
    # 21-22: a secret file, and a link onto it under an innocent name
    w(".env").write_text(f"TOKEN={SECRET}\n")
    os.symlink(".env", w("settings_link.py"))
    # 23-25: files that change between the walk and the parse (see `race` below)
    w("becomes_fifo.py").write_text("def before_fifo():\n    pass\n")
    w("becomes_link.py").write_text("def before_link():\n    pass\n")
    w("grows.py").write_text("def before_growth():\n    pass\n")
    # 26: 20k functions (under the cap), 27: a def with 20k comment lines (tree-sitter takes
    # minutes on it: the parse budget ends it), 28: one 900 KB line
    w("many.py").write_text("\n".join(f"def f{i}(a):\n    return a + {i}" for i in range(20000)) + "\n")
    w("comments.py").write_text("def f():\n" + "    # comment line\n" * 20000 + "    pass\n")
    head = "".join(f"VALUE_{i} = {i}\n" for i in range(600))  # short lines first: not "minified"
    w("oneline.py").write_text(head + "DATA = '" + "x" * 900_000 + "'\n")
    # 29: a virtualenv under another name
    w("env2").mkdir()
    w("env2", "pyvenv.cfg").write_text("home = /usr\n")
    w("env2", "lib.py").write_text("def venv_code():\n    pass\n")
    return {}


def race(root: Path, outside: Path) -> Any:
    """A progress hook that changes files after discovery, before they are read."""
    done = {"yes": False}

    def hook(event: ProgressEvent) -> None:
        if event.stage == "discover" and event.total and not done["yes"]:
            done["yes"] = True
            os.unlink(root / "becomes_fifo.py")
            os.mkfifo(root / "becomes_fifo.py")
            os.unlink(root / "becomes_link.py")
            os.symlink(outside / "stolen.py", root / "becomes_link.py")
            with open(root / "grows.py", "a") as fh:
                fh.write("# padding\n" * (CAP // 10 + 10))

    return hook


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, IndexStore]:
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "ws", base / "outside"
    build(root, outside)
    settings = load_settings(root, {"index.embed": False}, environ={}, user_config=base / "none.toml")
    report = index_workspace(root, settings, race(root, outside), embed=False)
    return root, report, IndexStore.open(settings.index_dir())


def test_every_item_is_indexed_or_skipped_with_a_reason(indexed: tuple[Path, Any, IndexStore]) -> None:
    _, report, store = indexed
    files = set(store.file_records())
    skipped = {s["path"]: s["reason"] for s in report.skipped_files}
    deep = "/".join(f"d{i}" for i in range(60)) + "/bottom.py"
    must_index = {
        "ok.py",
        "sub/kept.py",
        "latin1.py",
        "wide16.py",
        "wide32.py",
        deep,
        'a b\'c "quoted".py',
        "-rf.py",
        "many.py",
        "comments.py",
        "oneline.py",
    }
    assert must_index <= files, must_index - files
    expected_skips = {
        "caf\\xe9.py": "undecodable-name",
        "d\\xff": "undecodable-name",
        "blob.py": "binary",
        "huge.py": "too-large",
        "app.min.js": "minified",
        "package-lock.json": "lockfile",
        "pipe.py": "special-file",
        "link_out.py": "symlink-outside-root",
        "dir_out": "symlink-outside-root",
        "broken.py": "broken-symlink",
        ".env": "secret-file",
        "settings_link.py": "secret-file",
        "becomes_fifo.py": "changed-kind",
        "becomes_link.py": "symlink-outside-root",
        "grows.py": "too-large",
        "env2/": "ignored",
    }
    for path, reason in expected_skips.items():
        assert skipped.get(path) == reason, (path, skipped.get(path))
    assert "loop/up/" in skipped and skipped["loop/up/"] == "symlink-loop"
    # Ignored by the valid lines next to the invalid ones.
    assert not {"sub/ignored_here.py", "debug.log"} & (files | set(skipped))


def test_the_bad_lines_and_names_are_warned_about_once_each(indexed: tuple[Path, Any, IndexStore]) -> None:
    _, report, _ = indexed
    warnings = "\n".join(report.warnings + report.errors)
    for where in (".gitignore:1:", ".gitignore:2:", ".gitignore:3:", "sub/.codectxignore:1:"):
        assert sum(w.startswith(where) for w in report.warnings) == 1, (where, warnings)
    assert "caf\\xe9.py: the name is not valid UTF-8" in warnings
    assert "comments.py: parsing took longer than index.parse_timeout_s" in warnings
    assert "becomes_fifo.py: no longer a regular file (now a FIFO)" in warnings


def test_no_outside_or_secret_content_is_indexed(indexed: tuple[Path, Any, IndexStore]) -> None:
    _, _, store = indexed
    texts = [c.text for c in store.all_chunks()]
    assert not any(OUTSIDE in t for t in texts)
    assert not any(SECRET in t for t in texts)


def test_hostile_shapes_are_bounded(indexed: tuple[Path, Any, IndexStore]) -> None:
    _, _, store = indexed
    budget = 1500
    many = store.chunks_for_file("many.py")
    assert len(many) == 20000 and {c.symbol for c in many} >= {"f0", "f19999"}
    pieces = [c for c in store.chunks_for_file("oneline.py") if c.start_line == c.end_line == 600]
    assert len(pieces) == -(-900_009 // budget) and all(len(c.text) <= budget for c in pieces)
    assert "".join(c.text for c in pieces) == "DATA = '" + "x" * 900_000 + "'"
    assert store.chunks_for_file("comments.py")  # indexed as plain text
    wide = store.chunks_for_file("wide16.py") + store.chunks_for_file("wide32.py")
    assert {c.symbol for c in wide} == {"wide_sixteen", "wide_thirty_two"}
