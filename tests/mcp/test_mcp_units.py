"""The MCP server's pure pieces: loopback addresses, agents' paths, the name at a position."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from codectx.app.index import chain_at
from codectx.errors import UsageError
from codectx.mcp.server import loopback_address
from codectx.mcp.workspaces import PathRefused, Roots, Workspace, root_names
from tests.support.workspace import lexical_settings


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("localhost:80", ("127.0.0.1", 80)),
        ("[::1]:9", ("::1", 9)),
        ("8123", ("127.0.0.1", 8123)),
        ("127.0.0.2:5000", ("127.0.0.2", 5000)),
    ],
)
def test_loopback_addresses(spec: str, expected: tuple[str, int]) -> None:
    assert loopback_address(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "0.0.0.0:1",
        "10.0.0.1:80",
        "[::]:80",
        "host.local:80",
        "127.0.0.1:0",
        "127.0.0.1:70000",
        "127.0.0.1:http",
    ],
)
def test_other_addresses_are_refused(spec: str) -> None:
    with pytest.raises(UsageError):
        loopback_address(spec)


def _roots(names: list[str]) -> Roots:
    dummy: Any = None
    return Roots(
        [
            Workspace(n, Path("/w") / n, lexical_settings(Path("/w") / n), dummy, dummy, threading.Lock())
            for n in names
        ]
    )


def test_one_root_paths() -> None:
    roots = _roots(["api"])
    ws, rel = roots.locate("./src//app.py")
    assert (ws.name, rel) == ("api", "src/app.py")
    assert roots.shown(ws, rel) == "src/app.py"
    for bad in ("", "/etc/passwd", "C:/x", "src/../../x", "..", ".", "a/../b", ".codectx/manifest.json"):
        with pytest.raises(PathRefused):
            roots.locate(bad)


def test_several_roots_paths_start_with_the_root_name() -> None:
    roots = _roots(["api", "web"])
    ws, rel = roots.locate("web/src/main.ts")
    assert (ws.name, rel) == ("web", "src/main.ts")
    assert roots.shown(ws, rel) == "web/src/main.ts"
    with pytest.raises(PathRefused, match="root's name"):
        roots.locate("src/main.ts")
    assert roots.named("web").name == "web" and roots.named(None).name == "api"
    with pytest.raises(UsageError, match="the roots are: api, web"):
        roots.named("db")


def test_root_names_are_unique() -> None:
    assert root_names([Path("/a/app"), Path("/b/app"), Path("/c/web")]) == ["app", "app-2", "web"]


@pytest.mark.parametrize(
    ("line", "character", "chain"),
    [
        ("    self.session.send(x)", 11, "self.session"),
        ("    self.session.send(x)", 19, "self.session.send"),
        ("x = Foo::bar()", 10, "Foo::bar"),
        ("a.b", 3, "a.b"),
        ("   ", 1, ""),
        ("f(x, y)", 5, "y"),
    ],
)
def test_chain_at(line: str, character: int, chain: str) -> None:
    assert chain_at(line, character) == chain


def _reader(root: Path, limits: Any = None) -> Callable[..., dict[str, Any]]:
    """read_code over a workspace without an index (read_code needs none), answers parsed."""
    import json

    from codectx.app.cli import NoIndexSource
    from codectx.app.session import WorkspaceSession
    from codectx.mcp.tools import Tools
    from codectx.settings import load_settings

    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=NoIndexSource(), embedder=lambda: None)
    dummy: Any = None
    tools = Tools(Roots([Workspace("ws", root, settings, dummy, session, threading.Lock())]), limits)

    def read(path: str, *args: Any) -> dict[str, Any]:
        return json.loads(tools.read_code(path, *args).text)  # type: ignore[no-any-return]

    return read


def test_read_code_cuts_at_its_line_limit_and_says_where_to_go_on(tmp_path: Path) -> None:
    from codectx.mcp.tools import Limits

    root = tmp_path / "ws"
    root.mkdir()
    (root / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 13)))
    read = partial(_reader(root, Limits(max_read_lines=5)), "long.py")

    first = read()
    assert (first["start_line"], first["end_line"], first["truncated"]) == (1, 5, True)
    assert first["text"] == "x1 = 1\nx2 = 2\nx3 = 3\nx4 = 4\nx5 = 5" and "line 6" in first["notes"][0]
    exact = read(6, 10)
    assert (exact["end_line"], "truncated" in exact) == (10, False) and exact["text"].startswith("x6 = 6")
    tail = read(11)
    assert (tail["end_line"], "truncated" in tail, tail["text"]) == (13, False, "x11 = 11\nx12 = 12\n")
    asked_more = read(2, 12)
    assert (asked_more["end_line"], asked_more["truncated"]) == (6, True)


def test_read_code_cut_for_size_ends_at_the_last_whole_line_it_returns(tmp_path: Path) -> None:
    """224 lines of 3 KB were cut to 75,000 characters (~25 lines) while the answer said
    end_line 224 and "ask again from line 225": an agent following it skipped ~200 lines."""
    root = tmp_path / "ws"
    root.mkdir()
    rows = [f"row_{i} = '{chr(97 + i % 26) * 3000}'" for i in range(1, 225)]
    (root / "wide.py").write_text("\n".join(rows) + "\n")
    read = _reader(root)

    got = read("wide.py", 1, 400)
    end = got["end_line"]
    assert 1 < end < 224 and got["truncated"]
    assert got["text"] == "\n".join(rows[:end])  # whole lines, exactly the ones end_line says
    assert f"ask again from line {end + 1}" in got["notes"][-1]
    following = read("wide.py", end + 1, 400)
    assert following["text"].startswith(rows[end])

    (root / "one.py").write_text("x = '" + "y" * 100_000 + "'\nz = 1\n")
    huge = read("one.py")
    assert (huge["end_line"], huge["truncated"]) == (1, True)
    assert huge["text"] == ("x = '" + "y" * 100_000)[:75_000]
    assert "line 1 is longer than" in huge["notes"][0] and "line 2" in huge["notes"][1]


def test_only_the_storage_libraries_failures_count_as_a_damaged_index() -> None:
    """A KeyError of codectx's own is a bug to report; taken for damage, it would start a rebuild
    and hide it. One raised inside Arrow reading bad bytes is damage."""
    import io

    import pyarrow as pa

    from codectx.mcp.tools import _damage, _from_storage

    def ours() -> None:
        raise KeyError("chunk")

    for raising, expected in (
        (ours, False),
        (lambda: pa.ipc.open_file(io.BytesIO(b"not an arrow file at all")), True),
    ):
        try:
            raising()
        except (KeyError, OSError, ValueError) as exc:
            assert _from_storage(exc) is expected, exc
        else:
            raise AssertionError("it did not raise")
    # Bad bytes wherever they are read: any OSError, or a JSON column that does not decode.
    assert _damage(OSError(5, "Input/output error")) and _damage(json.JSONDecodeError("x", "{", 0))
    assert not _damage(KeyError("chunk"))
