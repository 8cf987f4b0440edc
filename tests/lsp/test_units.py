"""The language server's pure parts: settings layers, URIs, positions, edits, partial text."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from codectx.lsp.completion import make_item, relative_indent, snippet_escape
from codectx.lsp.config import build_settings, normalize
from codectx.lsp.edits import Span, minimal_change, workspace_edit
from codectx.lsp.errors import UriRefused
from codectx.lsp.folders import IndexProgress, progress_from
from codectx.lsp.positions import Codec, split_lines
from codectx.lsp.suggest import Suggester, cut_partial
from codectx.lsp.uris import folder_for, uri_to_path
from lsprotocol import types

from codectx.app.refactor import EditRefused, check_parses


def test_normalize_accepts_the_three_shapes() -> None:
    for raw in (
        {"codectx": {"backend": {"url": "http://a/v1"}}},
        {"backend": {"url": "http://a/v1"}},
        {"backend.url": "http://a/v1"},
    ):
        data, problems = normalize(raw, "editor")
        assert data == {"backend": {"url": "http://a/v1"}} and problems == []


def test_user_level_privacy_keys_accepted_folder_level_dropped(tmp_path: Path) -> None:
    result = build_settings(
        tmp_path,
        editor_user={"codectx": {"backend": {"url": "http://mine/v1"}}},
        editor_folder={"codectx": {"backend": {"url": "http://evil/v1"}, "lsp": {"debounce_ms": 10}}},
        environ={},
        user_config=tmp_path / "none.toml",
    )
    assert result.settings.backend.url == "http://mine/v1"
    assert result.settings.lsp.debounce_ms == 10  # harmless keys still apply from the folder
    assert any("backend.url" in p and "user-level" in p for p in result.problems)


def test_bad_values_fall_back_to_defaults(tmp_path: Path) -> None:
    result = build_settings(
        tmp_path,
        editor_user={"lsp": {"request_budget_ms": 1, "debounce_ms": "x", "completion": False}},
        environ={},
        user_config=tmp_path / "none.toml",
    )
    assert result.settings.lsp.request_budget_ms == 3000
    assert result.settings.lsp.debounce_ms == 75
    assert result.settings.lsp.completion is False
    assert len(result.problems) == 2


def test_broken_workspace_toml_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / ".codectx.toml").write_text("[lsp\nbroken")
    result = build_settings(tmp_path, environ={}, user_config=tmp_path / "none.toml")
    assert result.settings.lsp.debounce_ms == 75
    assert any("invalid TOML" in p for p in result.problems)


@pytest.mark.parametrize(
    "uri",
    [
        "untitled:x",
        "vscode-notebook-cell:/a",
        "file://host/a.py",
        "ftp://x/a.py",
        "file:///ws/.env?x=1",  # red team 2: read as `.env`, judged apart from it in places
        "file:///ws/.env#L1",
    ],
)
def test_non_local_uris_refused(uri: str) -> None:
    with pytest.raises(UriRefused):
        uri_to_path(uri)


def test_folder_for_resolves_dotdot_and_picks_innermost(tmp_path: Path) -> None:
    outer, inner = tmp_path / "a", tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert folder_for(inner / "x.py", [outer, inner]) == inner.resolve()
    with pytest.raises(UriRefused):
        folder_for(inner / ".." / ".." / "x.py", [outer])


def test_utf16_positions() -> None:
    codec = Codec.of("utf-16")
    line = "s = '😀' + x"
    assert codec.to_index(line, 7) == 6  # the emoji is two UTF-16 units, one code point
    assert codec.to_client(line, 6) == 7
    assert Codec.of("utf-8").to_index("é = 1", 2) == 1


def test_minimal_change_trims_common_ends() -> None:
    assert minimal_change("def f(a):\n    return a\n", "def f(a: int):\n    return a\n") == (7, 7, ": int")
    assert minimal_change("same", "same") == (4, 4, "")


def test_workspace_edit_is_minimal_and_versioned() -> None:
    text = "def f(a):\n    return a\n\n\ndef g():\n    pass\n"
    span = Span(0, 0, 1, 12)
    edit = workspace_edit("file:///w/x.py", text, span, "def f(a: int) -> int:\n    return a", Codec(), 3)
    assert edit is not None and edit.document_changes
    change = edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit) and change.text_document.version == 3
    (te,) = change.edits
    assert te.range.start == types.Position(line=0, character=7) and te.range.end.line == 0
    assert isinstance(te, types.TextEdit) and te.new_text == ": int) -> int"


def test_edit_that_breaks_parsing_is_refused() -> None:
    text = "def f(a):\n    return a\n"
    with pytest.raises(EditRefused, match="does not parse"):
        check_parses(text, "def f(a:\n    return (a\n", "python")
    # A file that was already broken may still be edited (else it could never be fixed).
    broken = "def f(a:\n    return a\n"
    check_parses(broken, "def f(a\n    return a\n", "python")
    check_parses(text, "def f(a:\n", None)  # no language known: nothing to check against


def test_cut_partial_keeps_whole_lines_or_words() -> None:
    assert cut_partial("x = 1\ny = comp") == "x = 1"
    assert cut_partial("return value + oth") == "return value +"
    assert cut_partial("abc") == ""


def test_completion_item_snippet_expands_to_the_suggestion() -> None:
    lines = split_lines("def f():\n    tot\n")
    item = make_item(lines, 1, 7, "al = price * ${qty}\n    return total", Codec(), "completion-1")
    assert item.text_edit is not None and isinstance(item.text_edit, types.TextEdit)
    assert item.text_edit.range.start == types.Position(line=1, character=4)
    assert item.text_edit.new_text == "total = price * \\${qty\\}\nreturn total"
    assert item.data == {"source": "codectx", "requestId": "completion-1"}
    assert snippet_escape("a\\b") == "a\\\\b"
    # The typed word is read from its start (a search from every position of a long word
    # re-read it to the end: 2.4 s after 20,000 characters of a hex string and its quote).
    long = ["x = '" + "a1" * 3000 + "'"]
    edit = make_item(long, 0, len(long[0]), " + y", Codec(), "c").text_edit
    assert isinstance(edit, types.TextEdit) and edit.range.start.character == len(long[0])
    word = ["x = foo_b"]
    edit = make_item(word, 0, 9, "ar", Codec(), "c").text_edit
    assert isinstance(edit, types.TextEdit) and edit.range.start.character == 4
    assert relative_indent("x\n        y", "    ") == "x\n    y"


def test_progress_from_pipeline_events_and_kwargs() -> None:
    class Event:
        def __init__(self, stage: str, done: int, total: int) -> None:
            self.stage, self.done, self.total, self.message = stage, done, total, ""

    assert progress_from(Event("parse", 3, 10)) == {"stage": "parse", "files": 3, "files_total": 10}
    assert progress_from(Event("embed", 5, 50))["vectors_total"] == 50
    assert progress_from(Event("chunks", 900, 900)) == {"stage": "chunks", "chunks": 900}
    assert progress_from(files=2, chunks=7) == {"files": 2, "chunks": 7}
    p = IndexProgress(files=1, files_total=2, chunks=3, vectors=4, vectors_total=8)
    assert p.message() == "1/2 files, 3 chunks, 4/8 vectors" and p.percentage() == 75


def test_a_new_run_keeps_the_index_chunk_count_until_it_reports_its_own() -> None:
    """While a run updates an index, health and the status line show the index's last chunk
    count, not 0 (a Django-size index read `chunks: 0` for the whole embedding run)."""
    from codectx.lsp.folders import Workspaces

    sent: list[tuple[str, int, int, int]] = []

    def sink(folder: object, p: IndexProgress, event: str) -> None:
        sent.append((event, p.chunks, p.files, p.vectors_pending))

    spaces = Workspaces(sink, print, embedders=None)  # type: ignore[arg-type]
    folder = SimpleNamespace(
        progress=IndexProgress(stage="ready", files=40, chunks=900, vectors_pending=12), reported_at=5.0
    )
    spaces._begun(folder)  # type: ignore[arg-type]
    assert sent == [("begin", 900, 0, 12)]
    assert folder.progress.stage == "starting" and folder.reported_at == 0.0


def test_folder_layer_repeating_user_values_is_not_a_warning(tmp_path: Path) -> None:
    same = {"codectx": {"backend": {"url": "http://mine/v1"}}}
    result = build_settings(tmp_path, same, same, environ={}, user_config=tmp_path / "none.toml")
    assert result.settings.backend.url == "http://mine/v1" and result.problems == []


def test_inline_edit_starts_at_line_start_after_indentation_only() -> None:
    from codectx.lsp.inline import inline_edit

    lines = split_lines("def f():\n\t    \n    x = 1\n    s = '😀' + \n")
    rng, text = inline_edit(lines, 1, 5, "return 1", Codec())
    assert (rng.start, rng.end) == (types.Position(line=1, character=0), types.Position(line=1, character=5))
    assert text == "\t    return 1"  # tabs and spaces kept exactly
    rng, text = inline_edit(lines, 2, 9, "  # one", Codec())
    assert rng.start == rng.end == types.Position(line=2, character=9) and text == "  # one"
    rng, text = inline_edit(lines, 0, 0, "import os", Codec())  # column 0: nothing to carry
    assert rng.start == rng.end == types.Position(line=0, character=0) and text == "import os"
    # After non-ASCII text the end is in the client's units (the emoji is 2 UTF-16 units).
    rng, _ = inline_edit(lines, 3, 14, "t", Codec())  # the end of the line
    assert rng.start == rng.end == types.Position(line=3, character=15)


def test_health_monitor_notifies_on_state_changes_only(tmp_path: Path) -> None:
    from codectx.backend.errors import BackendRejected, BackendTimeout, BackendUnavailable
    from codectx.lsp.health import HealthMonitor, classify, pick_model, public_endpoint

    settings = build_settings(tmp_path, {"backend": {"url": "http://u:secret@127.0.0.1:8000/v1"}}).settings
    sent: list[dict] = []
    monitor = HealthMonitor(sent.append, clock=lambda: 123.0)
    assert monitor.current(settings).state == "unknown"
    monitor.ok(settings, "m", 12.5)
    monitor.ok(settings, None, 10.0)  # still ok: no news, and the model is remembered
    assert monitor.backend.model == "m"
    monitor.failed(settings, BackendUnavailable("connection refused"))
    monitor.failed(settings, BackendTimeout("slow", phase="connect"))
    assert [s["state"] for s in sent] == ["ok", "unreachable"]
    assert sent[0] == {
        "state": "ok",
        "endpoint": "http://127.0.0.1:8000/v1",  # the password never reaches the editor
        "model": "m",
        "latency_ms": 12.5,
        "error": None,
        "checked_at": 123.0,
    }
    assert classify(BackendRejected("no", status=401)) == "error"
    assert public_endpoint("https://[::1]:9/v1?k=v") == "https://[::1]:9/v1"
    assert pick_model(settings, ["a", "b"]) == ("a", None)
    monitor.observe_exception(settings, ValueError("a bug, not the backend"))
    assert monitor.backend.state == "unreachable"
    off = build_settings(tmp_path, {}).settings
    assert HealthMonitor(sent.append).current(off).state == "disabled"


def test_answer_files_are_private_and_pruned(tmp_path: Path) -> None:
    from codectx.lsp.answers import answer_markdown, answer_path, write_answer

    folder = tmp_path / "answers"
    span = Span(3, 0, 6, 0)
    text = answer_markdown("pkg/m.py", span, "It adds.", "def add():\n    ```\n", "python")
    assert text.startswith("# Explanation of `pkg/m.py`, lines 4–7\n\nIt adds.")
    assert "````python\ndef add():\n    ```\n\n````" in text  # a longer fence around code with ```
    paths = [
        write_answer(folder, answer_path(folder, f"pkg/{name}", span, 999.5 + i), f"answer {i}", keep=3)
        for i, name in enumerate(["z y.py", "a.py", "m.py", "b.py", "c.py"])
    ]
    left = sorted(p.name for p in folder.iterdir())
    assert left == [p.name for p in paths[-3:]]  # the newest three, whatever their names
    assert paths[-1].name == "explain-000000001003500-c.py-L4.md"
    assert paths[0].name.endswith("-z_y.py-L4.md")  # no spaces or slashes in names
    assert paths[-1].read_text() == "answer 4"
    assert (folder.stat().st_mode & 0o077) == 0 and (paths[-1].stat().st_mode & 0o077) == 0


class _Recorder:
    """The parts of the server a suggestion touches, recording what is called in which order."""

    def __init__(self, fail: bool) -> None:
        self.calls: list[str] = []
        self.fail = fail
        self.keeper = SimpleNamespace(note_answered=lambda: self.calls.append("answered"))
        self.settings = SimpleNamespace(lsp=SimpleNamespace(debounce_ms=0))
        self.completer = SimpleNamespace(complete=self._complete)

    async def context(self, *_args: object, answers: bool = True) -> None:
        self.calls.append(f"context answers={answers}")

    def session(self, _folder: object) -> SimpleNamespace:
        return SimpleNamespace(completer=self.completer)

    async def _complete(self, *_args: object, **_kwargs: object) -> SimpleNamespace:
        self.calls.append("model request")
        if self.fail:
            raise RuntimeError("the model server went away")
        return SimpleNamespace(text="x", model="m", timings={}, request_id="")


@pytest.mark.parametrize("fail", [False, True])
async def test_a_completion_tells_the_keeper_after_its_model_answer_not_after_its_context(fail: bool) -> None:
    # The keeper defers opening LanceDB until a first answer; a completion's answer includes its model
    # request (the first one imports the HTTP stack), so the signal comes after it, failed or not.
    server = _Recorder(fail)
    folder = SimpleNamespace(settings=server.settings, keeper=server.keeper)
    record = SimpleNamespace(uri="file:///a.py", timings={}, remember=None, model="", audit_id="")
    suggester = Suggester(server)  # type: ignore[arg-type]
    try:
        await suggester._suggestion(folder, record, "a.py", "x = 1\n", 0, 5, [])  # type: ignore[arg-type]
    except RuntimeError:
        assert fail
    assert server.calls == ["context answers=False", "model request", "answered"]


def test_a_nul_character_in_a_file_uri_is_refused(tmp_path: Path) -> None:
    """`%00` decoded into the path, and resolving it raised a bare ValueError."""
    with pytest.raises(UriRefused, match="NUL"):
        folder_for(uri_to_path(tmp_path.as_uri() + "/a%00b.py"), [tmp_path])
