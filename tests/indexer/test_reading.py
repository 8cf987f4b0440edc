"""Fast checks of the pieces that keep one bad file or line from stopping an index run.

(The whole hostile tree, through a real index run, is tests/indexer/test_hostile_tree.py.)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from codectx.indexer.parsing.chunker import _is_trivial
from codectx.indexer.parsing.parse import parse_file
from codectx.indexer.walk.content import decode_source, sniff
from codectx.indexer.walk.discovery import SourceFile, discover
from codectx.indexer.walk.manifest import Manifest
from codectx.indexer.walk.reading import NotIndexed, read_discovered
from codectx.indexer.walk.walkrecord import WalkRecord

from codectx.settings import load_settings


def settings(root: Path, **index: object) -> object:
    overrides = {f"index.{k}": v for k, v in index.items()}
    return load_settings(root, overrides, environ={}, user_config=root / "none.toml")


def discovered(root: Path, rel: str) -> SourceFile:
    path = root / rel
    st = path.stat()
    return SourceFile(rel, str(path), st.st_size, st.st_mtime_ns, "python")


def test_a_file_read_as_discovered(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    assert read_discovered(discovered(tmp_path, "a.py"), tmp_path, settings(tmp_path)) == b"x = 1\n"


def test_a_file_turned_fifo_is_not_opened_for_a_writer(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    sf = discovered(tmp_path, "a.py")
    os.unlink(tmp_path / "a.py")
    os.mkfifo(tmp_path / "a.py")
    got = read_discovered(sf, tmp_path, settings(tmp_path))  # would block forever with open()
    assert isinstance(got, NotIndexed) and got.reason == "changed-kind" and "FIFO" in got.message


def test_a_file_turned_link_out_is_not_read(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "out.py"
    root.mkdir()
    outside.write_text("secret = 1\n")
    (root / "a.py").write_text("x = 1\n")
    sf = discovered(root, "a.py")
    os.unlink(root / "a.py")
    os.symlink(outside, root / "a.py")
    got = read_discovered(sf, root, settings(root))
    assert isinstance(got, NotIndexed) and got.reason == "symlink-outside-root"


def test_a_file_turned_link_onto_a_secret_is_not_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("TOKEN=1\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    sf = discovered(tmp_path, "a.py")
    os.unlink(tmp_path / "a.py")
    os.symlink(".env", tmp_path / "a.py")
    got = read_discovered(sf, tmp_path, settings(tmp_path))
    assert isinstance(got, NotIndexed) and got.reason == "secret-file"


def test_a_file_grown_past_the_cap_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    sf = discovered(tmp_path, "a.py")
    (tmp_path / "a.py").write_text("x = 1\n" * 100)
    got = read_discovered(sf, tmp_path, settings(tmp_path, max_file_bytes=100))
    assert isinstance(got, NotIndexed) and got.reason == "too-large"


def test_a_deleted_file_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    sf = discovered(tmp_path, "a.py")
    os.unlink(tmp_path / "a.py")
    got = read_discovered(sf, tmp_path, settings(tmp_path))
    assert isinstance(got, NotIndexed) and got.reason == "vanished"


@pytest.mark.parametrize("line", ["\\", "!", "foo\\", "[z-a]"])
def test_a_bad_ignore_line_is_skipped_with_a_warning_and_the_rest_applies(tmp_path: Path, line: str) -> None:
    (tmp_path / ".gitignore").write_text(f"*.log\n{line}\nbuild_*.py\n")
    for name in ("keep.py", "build_x.py", "run.log"):
        (tmp_path / name).write_text("x = 1\n")
    found = discover(tmp_path, settings(tmp_path))
    assert [f.path for f in found.files] == ["keep.py"]
    assert found.warnings == [f".gitignore:2: invalid ignore pattern {line!r} skipped (git skips it too)"]


def test_a_name_that_is_not_utf8_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n")
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py"), "wb") as fh:
        fh.write(b"y = 2\n")
    found = discover(tmp_path, settings(tmp_path))
    assert [f.path for f in found.files] == ["ok.py"]
    assert [s.reason for s in found.skipped] == ["undecodable-name"]
    assert found.warnings == ["caf\\xe9.py: the name is not valid UTF-8; skipped"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_utf16_and_utf32_with_a_bom_are_text(codec: str) -> None:
    text = "def caf\u00e9():\n    return '\u20ac'\n"
    data = text.encode(codec)
    if not codec.endswith(("16", "32")):  # the plain codec names write the BOM themselves
        bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-le": b"\xff\xfe\x00\x00"}
        data = bom.get(codec, b"\x00\x00\xfe\xff") + data
    assert sniff(data, "a.py") is None
    assert decode_source(data) == text


def test_parse_past_its_budget_falls_back_to_plain_text(tmp_path: Path) -> None:
    slow = "def f():\n" + "    # comment line\n" * 20000 + "    pass\n"  # minutes in tree-sitter
    parsed = parse_file("slow.py", slow, "python", settings(tmp_path, parse_timeout_s=0.01))
    assert parsed.parse_timed_out and parsed.chunks and not parsed.definitions
    assert all(c.kind == "text" for c in parsed.chunks)
    quick = parse_file(
        "ok.py", "def g():\n    return 1\n", "python", settings(tmp_path, parse_timeout_s=0.01)
    )
    assert not quick.parse_timed_out and [c.symbol for c in quick.chunks] == ["g"]  # the parser recovered


def test_the_trivial_chunk_check_agrees_with_its_regex() -> None:
    regex = re.compile(r"[\s{}\[\]();,]+|\bend\b")
    cases = ["}", " };\n", "end", "};\nend\n}", "x", "{ a }", "extend", "} end", "", "\u00a0}", "end end"]
    for text in cases:
        assert _is_trivial(text) == (not regex.sub("", text)), text


@pytest.mark.parametrize("body", ["[1, 2]", "5", '"text"', "null", "{bad", '{"format": 1, "files": []}'])
def test_a_manifest_of_the_wrong_shape_is_missing_with_a_reason(tmp_path: Path, body: str) -> None:
    (tmp_path / "manifest.json").write_text(body)
    manifest, problem = Manifest.read_checked(tmp_path)
    assert manifest is None and problem and problem.startswith("manifest.json")


@pytest.mark.parametrize(
    "body", ["[1, 2]", "5", "{bad", '{"format": 1, "header": {}, "dirs": [], "walked_ns": 1}']
)
def test_a_walk_record_of_the_wrong_shape_is_missing_with_a_reason(tmp_path: Path, body: str) -> None:
    (tmp_path / "walk.json").write_text(body)
    header: dict[str, object] = {}
    record, problem = WalkRecord.read_checked(tmp_path, header)
    assert record is None and problem


def test_a_walk_record_with_damaged_entries_is_listed_afresh(tmp_path: Path) -> None:
    from codectx.indexer.walk.walkrecord import discover_cached

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    index = tmp_path / "idx"
    index.mkdir()
    s = settings(root)
    first = discover_cached(root, s, index, "fp", racy_ns=0)
    data = json.loads((index / "walk.json").read_text())
    for rec in data["dirs"].values():
        rec[3] = [["a.py", "f", 5, "not", "ints", None], 7]
    (index / "walk.json").write_text(json.dumps(data))
    again = discover_cached(root, s, index, "fp", racy_ns=0)
    assert again.files == first.files


def test_index_json_lists_each_skipped_path_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from codectx.cli import main

    root = tmp_path / "ws"
    root.mkdir()
    (root / "ok.py").write_text("def ok():\n    return 1\n")
    (root / "blob.py").write_bytes(b"\x00\x01binary")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "wide.py").write_bytes("def wide():\n    return 2\n".encode("utf-16"))
    (root / ".gitignore").write_text("[z-a]\n")
    for run in range(2):  # a full run, then a quick one
        assert main(["index", str(root), "--no-embed", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        skipped = {s["path"]: s["reason"] for s in report["skipped_files"]}
        assert skipped == {"blob.py": "binary", ".env": "secret-file", ".gitignore": "unsupported"}
        assert report["skipped"] == {"binary": 1, "secret-file": 1, "unsupported": 1}
        if run == 0:  # (a replayed walk does not read the ignore file again)
            warning = ".gitignore:1: invalid ignore pattern '[z-a]' skipped (git skips it too)"
            assert report["warnings"] == [warning]
    assert report["quick"] and report["files"] == 2  # ok.py and the UTF-16 file


@pytest.mark.parametrize(
    "head",
    [
        "--\n-- PostgreSQL database dump\n--\n\nSET statement_timeout = 0;\n",
        "-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)\n--\n-- Host: localhost\n",
        "-- MariaDB dump 10.19  Distrib 10.11.6-MariaDB\n",
        "PRAGMA foreign_keys=OFF;\nBEGIN TRANSACTION;\nCREATE TABLE users(id, api_token);\n",
    ],
)
def test_database_dumps_are_not_indexed(head: str) -> None:
    """Red team 2: a dump's rows (an api_token column's values) were retrieved as context for
    unrelated code. Dumps are generated data; a hand-written schema or seed file is still read."""
    assert sniff(head.encode(), "db/dump.sql") == "generated"


def test_a_hand_written_sql_file_is_indexed() -> None:
    schema = "-- users and their sessions\nCREATE TABLE users (id integer, password text);\n"
    assert sniff(schema.encode(), "db/schema.sql") is None
