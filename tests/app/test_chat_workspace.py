"""The shell chat's workspace: an interactive `codectx chat` reads the index into memory in the
background, as the language server does; a one-shot `codectx ask` does not."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codectx.app.chat_cli import Workspace, register
from codectx.app.index import hold_background_loads, snapshot_phase
from tests.support.indexes import build_index
from tests.support.lsp_helpers import make_repo


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(list(argv))


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Path]:
    # Background loads wait for this file, and small indexes load in the background too.
    path = tmp_path / "gate"
    hold_background_loads(path)
    try:
        yield path
    finally:
        path.touch()
        hold_background_loads(None)


def test_the_interactive_shell_loads_the_snapshot_in_the_background(tmp_path: Path, gate: Path) -> None:
    root = make_repo(tmp_path / "repo")
    _settings, _store = build_index(root)
    space = Workspace(_args("chat", "--root", str(root), "--backend-url", "http://127.0.0.1:9/v1"))
    one_shot = space.session()
    assert one_shot.index.open_store() is not None
    assert snapshot_phase(one_shot.index.open_store()) == "direct"  # `codectx ask`: no load
    shell = space.session(long_lived=True)
    store = shell.index.open_store()
    assert store is not None
    assert snapshot_phase(store) == "lookup"  # loading, held by the gate; answered from lookups
    gate.touch()
    deadline = time.monotonic() + 120  # a wait for the load, not a time limit on it
    while snapshot_phase(store) != "memory" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert snapshot_phase(store) == "memory"
    answer = shell.search("compute the total")
    assert answer.results  # searches now come from memory


def test_the_shell_asks_for_a_long_lived_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codectx.app.chat import ChatService
    from codectx.app.chat_shell import Shell

    root = make_repo(tmp_path / "repo")
    build_index(root)
    space = Workspace(_args("chat", "--root", str(root), "--backend-url", "http://127.0.0.1:9/v1"))
    asked: list[bool] = []
    session = space.session

    def spy(long_lived: bool = False) -> object:
        asked.append(long_lived)
        return session(long_lived=False)  # the background load itself is the test above

    monkeypatch.setattr(space, "session", spy)
    monkeypatch.setattr("builtins.input", lambda _prompt="": (_ for _ in ()).throw(EOFError))
    chat = ChatService()
    shell = Shell(chat, space, chat.start().conversation_id, history=tmp_path / "history")
    assert shell.run() == 0
    assert asked == [True]
