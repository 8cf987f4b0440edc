"""WorkspaceSession's index methods for the coming surfaces (chat, MCP): definitions, search, and
reading a confined file, on a real index of a small workspace (no model server needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codectx.app.cli import CommandIndex, NoIndexSource
from codectx.app.files import NeverSend
from codectx.app.index import UnknownFile, index_folder
from codectx.app.session import NoIndex, WorkspaceSession
from codectx.errors import CodectxError, UsageError
from codectx.settings import Settings
from tests.support.workspace import lexical_settings, write_workspace

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token shape, split for scanners

FILES = {
    "app/phone.py": '''"""Contact helpers."""


def normalize_phone_number(raw):
    digits = [c for c in raw if c.isdigit()]
    return "+" + "".join(digits[-11:])
''',
    "app/cache.py": '''class LruCache:
    """Keeps the most recently used entries."""

    def evict_oldest(self):
        self.entries.pop(next(iter(self.entries)))
''',
    "app/deploy.py": f'GITHUB_TOKEN = "{TOKEN}"\n\n\ndef push():\n    return GITHUB_TOKEN\n',
}


def settings_for(root: Path) -> Settings:
    return lexical_settings(root)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", FILES)


def session_of(root: Path) -> WorkspaceSession:
    settings = settings_for(root)
    return WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)


@pytest.fixture
def session(ws: Path) -> WorkspaceSession:
    index_folder(ws, settings_for(ws), None, progress=lambda *a, **k: None, embedder=None)
    return session_of(ws)


def test_definitions_by_short_and_qualified_name(session: WorkspaceSession) -> None:
    [site] = session.definitions("normalize_phone_number")
    assert (site.path, site.kind, site.start_line) == ("app/phone.py", "function", 3)
    assert site.end_line == 5
    [method] = session.definitions("LruCache.evict_oldest")
    assert (method.path, method.name, method.start_line) == ("app/cache.py", "evict_oldest", 3)
    assert session.definitions("no_such_name") == []


def test_several_names_at_once_in_every_phase(session: WorkspaceSession, tmp_path: Path) -> None:
    """`definitions_of` answers what `definitions` answers name by name: from one index scan in a
    one-shot session, from the snapshot (Arrow copies, then memory) once it loads in the background
    as the language server's does."""
    from codectx.retriever.snapshotload import hold_loads_until

    from codectx.app.index import load_in_background, snapshot_phase

    names = ["normalize_phone_number", "LruCache.evict_oldest", "evict_oldest", "no_such_name"]
    each = {n: found for n in names if (found := session.definitions(n))}
    assert set(each) == {"normalize_phone_number", "LruCache.evict_oldest", "evict_oldest"}
    store = session.index.open_store()
    assert store is not None and snapshot_phase(store) == "direct"
    assert session.definitions_of(names) == each
    gate = tmp_path / "release"
    hold_loads_until(gate)
    try:
        load_in_background(store)
        assert snapshot_phase(store) == "lookup"
        assert session.definitions_of(names) == each
    finally:
        hold_loads_until(None)
        gate.touch()


def test_search_through_the_session(session: WorkspaceSession) -> None:
    answer = session.search("evict oldest", 3, dense=False)
    assert answer.results and answer.results[0].path == "app/cache.py"


def test_read_file_lines_with_secrets_redacted(session: WorkspaceSession) -> None:
    part = session.read_file("app/phone.py", 3, 4)
    assert part.text == "def normalize_phone_number(raw):\n    digits = [c for c in raw if c.isdigit()]"
    assert (part.path, part.start_line, part.end_line, part.redacted) == ("app/phone.py", 3, 4, True)
    secret = session.read_file("app/deploy.py")
    assert TOKEN not in secret.text and "[REDACTED:" in secret.text
    assert secret.text.endswith("return GITHUB_TOKEN\n")
    assert TOKEN in session.read_file("app/deploy.py", redact=False).text  # for text kept locally


def test_read_file_refuses_what_must_not_leave(session: WorkspaceSession, ws: Path, tmp_path: Path) -> None:
    (ws / ".env").write_text(f"TOKEN={TOKEN}\n")
    with pytest.raises(NeverSend, match="never-send"):
        session.read_file(".env")
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    os.symlink(outside, ws / "app" / "link.py")
    with pytest.raises(UnknownFile, match="outside the workspace"):
        session.read_file("app/link.py")
    with pytest.raises(UnknownFile, match="outside the workspace"):
        session.read_file("../outside.py")
    (ws / "app" / "blob.py").write_bytes(b"\x00\x01" * 100)
    with pytest.raises(UnknownFile, match="binary"):
        session.read_file("app/blob.py")
    with pytest.raises(UsageError, match="outside"):
        session.read_file("app/phone.py", 40, 50)


def test_no_index_yet(ws: Path) -> None:
    """The language server's folders answer None while indexing runs: NoIndex, a clear message; the
    shell's index names the command that builds one."""
    settings = settings_for(ws)
    waiting = WorkspaceSession(settings, index=NoIndexSource(), embedder=lambda: None)
    with pytest.raises(NoIndex, match="no index is ready yet"):
        waiting.definitions("normalize_phone_number")
    with pytest.raises(CodectxError, match="run `codectx index`"):
        session_of(ws).definitions("normalize_phone_number")


def test_read_file_refuses_pipes_and_huge_files_without_reading_them(
    session: WorkspaceSession, ws: Path
) -> None:
    """A named pipe in the workspace would block a plain read until some process wrote to it; a huge
    file is refused by its size before any of it is read."""
    import threading

    os.mkfifo(ws / "app" / "pipe.py")
    outcome: list[BaseException | None] = []

    def read_pipe() -> None:
        try:
            session.read_file("app/pipe.py")
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read_pipe, daemon=True)
    reader.start()
    reader.join(60)  # a generous limit, not a timing assertion: a blocked read never returns
    assert outcome, "reading a named pipe blocked"
    assert isinstance(outcome[0], UnknownFile) and "not a regular file" in str(outcome[0])
    with open(ws / "app" / "huge.py", "wb") as huge:
        huge.truncate(64_000_000)  # sparse: nothing is written, the size says it all
    with pytest.raises(UnknownFile, match="too large"):
        session.read_file("app/huge.py")
