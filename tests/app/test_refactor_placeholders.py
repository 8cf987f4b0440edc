"""Refactors and explain never write placeholders into the user's file.

The model sees `[REDACTED:...]`; the edit handed back has each placeholder replaced by the text
it stood for, here, on this machine. Lines whose placeholders the model dropped, invented or
garbled are kept as they are in the file, and a note says so. The loopback server answers
with whatever the test's model does to the code it was sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from codectx.backend.client import BackendClient

from codectx.app.cli import NoIndexSource
from codectx.app.restore import restore_completion, restore_edit
from codectx.app.session import WorkspaceSession
from codectx.privacy.pieces import Placeholders
from codectx.settings import load_settings
from tests.support import faultserver as fs

GH = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
PASSWORD = "Hunter2!Orchid_7319"
DOC = f'''def connect(host):
    token = "{GH}"
    password = "{PASSWORD}"
    return open_session(host, token, password)
'''


def model(edit: Callable[[str], str]) -> fs.Behaviour:
    """A chat model that returns `edit(code)` for the selection it was sent."""

    async def run(conn: fs.Conn) -> None:
        content = conn.request.json()["messages"][-1]["content"]
        code = re.findall(r"The selection to rewrite[^\n]*\n(`{3,})\w*\n(.*?)\n\1", content, re.S)[-1][1]
        message = {"content": f"```python\n{edit(code)}\n```"}
        reply = {"id": "x", "model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}
        await fs.json_reply(reply)(conn)

    return run


@pytest.fixture
def server() -> Iterator[fs.FaultServer]:
    srv = fs.FaultServer().start()
    srv.routes["/v1/models"] = fs.models("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")
    srv.routes["/tokenize"] = fs.tokenize()
    yield srv
    srv.stop()


def settings(tmp_path: Path, url: str) -> Any:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return load_settings(root, {"backend.url": url}, environ={}, user_config=tmp_path / "none.toml")


def session(s: Any, client: BackendClient) -> WorkspaceSession:
    return WorkspaceSession(s, index=NoIndexSource(), embedder=lambda: None, client=client)


async def refactor(
    tmp_path: Path, server: fs.FaultServer, edit: Callable[[str], str]
) -> tuple[str, list[str], str]:
    server.routes["/v1/chat/completions"] = model(edit)
    s = settings(tmp_path, server.url)
    async with BackendClient(s) as client:
        edit = await session(s, client).refactor_edit("db.py", DOC, (0, 0, 4, 0), "add type hints")
        code, notes = edit.code, edit.notes
    sent = server.requests[-1].body.decode()
    return code, notes, sent


async def test_placeholders_the_model_kept_are_put_back(tmp_path: Path, server: fs.FaultServer) -> None:
    code, notes, sent = await refactor(
        tmp_path, server, lambda c: c.replace("def connect(host):", "def connect(host: str):")
    )
    assert GH not in sent and PASSWORD not in sent and "[REDACTED:" in sent
    assert code == DOC.replace("def connect(host):", "def connect(host: str):")
    assert notes == []


async def test_a_dropped_placeholder_keeps_the_original_line(tmp_path: Path, server: fs.FaultServer) -> None:
    def drop(code: str) -> str:
        return "\n".join(row for row in code.split("\n") if "password =" not in row).replace(
            "(host)", "(host: str)"
        )

    code, notes, _ = await refactor(tmp_path, server, drop)
    assert f'    password = "{PASSWORD}"' in code and "def connect(host: str):" in code
    assert "[REDACTED" not in code
    assert notes and "kept as they are in the file" in notes[0]


async def test_an_invented_or_garbled_placeholder_never_reaches_the_file(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    def garble(code: str) -> str:
        code = re.sub(r"\[REDACTED:github-token:[0-9a-f]{8}\]", "[REDACTED:github-token:deadbeef]", code)
        return code.replace("[REDACTED:keyword-assignment:", "[REDACTED:keyword-assign")

    code, notes, _ = await refactor(tmp_path, server, garble)
    assert "REDACTED" not in code
    assert f'    token = "{GH}"' in code and f'    password = "{PASSWORD}"' in code
    assert notes


async def test_explain_shows_the_original_text_locally(tmp_path: Path, server: fs.FaultServer) -> None:
    async def explain(conn: fs.Conn) -> None:
        content = conn.request.json()["messages"][-1]["content"]
        token = re.findall(r"\[REDACTED:github-token:[0-9a-f]{8}\]", content)[0]
        message = {"content": f"It logs in with `{token}`."}
        reply = {"id": "x", "model": "m", "choices": [{"message": message, "finish_reason": "stop"}]}
        await fs.json_reply(reply)(conn)

    server.routes["/v1/chat/completions"] = explain
    s = settings(tmp_path, server.url)
    async with BackendClient(s) as client:
        answer = await session(s, client).explain("db.py", DOC, 1, 2)
    assert answer.text == f"It logs in with `{GH}`."
    assert GH not in server.requests[-1].body.decode()


def test_restore_edit_aligns_lines_and_notes_what_it_kept() -> None:
    ph = Placeholders({"[REDACTED:stripe-key:0a1b2c3d]": "sk_live_REAL"})
    sent = 'a = 1\nkey = "[REDACTED:stripe-key:0a1b2c3d]"\nb = 2'
    original = 'a = 1\nkey = "sk_live_REAL"\nb = 2'
    assert restore_edit('a = 10\nkey = "[REDACTED:stripe-key:0a1b2c3d]"\nb = 2', sent, original, ph) == (
        'a = 10\nkey = "sk_live_REAL"\nb = 2',
        [],
    )
    code, notes = restore_edit("a = 10\nb = 2", sent, original, ph)  # dropped: the line comes back
    assert code == 'a = 10\nkey = "sk_live_REAL"\nb = 2' and notes
    code, notes = restore_edit('a = 10\nkey = "[REDACTED]"\nb = 2', sent, original, ph)  # garbled
    assert code == 'a = 10\nkey = "sk_live_REAL"\nb = 2' and notes


def test_a_multi_line_placeholder_takes_back_its_lines() -> None:
    block = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----"
    ph = Placeholders({"[REDACTED:private-key:11112222]": block})
    sent = 'KEY = """[REDACTED:private-key:11112222]\n\n"""\nx = 1'
    original = f'KEY = """{block}"""\nx = 1'
    code, notes = restore_edit('KEY = """[REDACTED:private-key:11112222]\n\n"""\nx = 2', sent, original, ph)
    assert code == f'KEY = """{block}"""\nx = 2' and notes == []


def test_a_completion_is_cut_before_a_placeholder_it_cannot_restore() -> None:
    ph = Placeholders({"[REDACTED:github-token:0123abcd]": GH})
    assert restore_completion('t = "[REDACTED:github-token:0123abcd]"', ph) == f't = "{GH}"'
    assert restore_completion('x = 1\nt = "[REDACTED:github-token:99999999]"', ph) == "x = 1"
    assert restore_completion("x = 1\ny = REDACTED", ph) == "x = 1"
    assert restore_completion("plain", ph) == "plain"


LETTERS = "Parsnipcrumble"  # a secret only by where it sits: letters only, under a password name
SETTINGS_DOC = f'''def get_db_settings():
    db_password = "{LETTERS}"
    return {{"user": "app", "password": db_password}}
'''


async def test_a_secret_the_model_moves_out_of_sight_is_not_put_there(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    """Red team 2: the model answered `creds = ("app", "[REDACTED:...]")` and dropped the assignment;
    put back, `Parsnipcrumble` sat where no rule finds it, and the next request sent it. (A tuple
    named `creds` is a rule's since stop 55; one named `pair` is still no rule's.)"""

    def move(code: str) -> str:
        token = re.findall(r"\[REDACTED:[a-z-]+:[0-9a-f]{8}\]", code)[0]
        return f'def get_db_settings():\n    pair = ("app", "{token}")\n    return pair'

    server.routes["/v1/chat/completions"] = model(move)
    s = settings(tmp_path, server.url)
    async with BackendClient(s) as client:
        edit = await session(s, client).refactor_edit("db.py", SETTINGS_DOC, (0, 0, 3, 0), "tuple")
    assert LETTERS not in server.requests[-1].body.decode()
    assert f'("app", "{LETTERS}")' not in edit.code and "REDACTED" not in edit.code
    assert f'    db_password = "{LETTERS}"' in edit.code  # the file's own line is kept
    assert any("would not recognise it" in n for n in edit.notes)


async def test_a_secret_kept_where_a_rule_finds_it_is_put_back(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    def rename(code: str) -> str:
        return code.replace("db_password", "database_password")

    server.routes["/v1/chat/completions"] = model(rename)
    s = settings(tmp_path, server.url)
    async with BackendClient(s) as client:
        edit = await session(s, client).refactor_edit("db.py", SETTINGS_DOC, (0, 0, 3, 0), "rename")
    assert edit.code == SETTINGS_DOC.replace("db_password", "database_password") and edit.notes == []


def test_unprotected_compares_what_a_request_would_show_before_and_after_an_edit(tmp_path: Path) -> None:
    from codectx.app.restore import unprotected
    from codectx.privacy.redact import Redactor

    redactor = Redactor(settings(tmp_path, "http://127.0.0.1:9/v1"))

    def shown(text: str) -> str:
        return redactor.redact(text, "app/x.py").text

    before = SETTINGS_DOC + "\n" * 12 + "WELCOME = ''\n"  # out of reach of the assignment's line
    moved = before.replace("WELCOME = ''", f'WELCOME = "{LETTERS}"')
    assert unprotected(before, moved, [LETTERS], shown) == {LETTERS}
    kept = before.replace("WELCOME = ''", f'admin_password = "{LETTERS}"')
    assert unprotected(before, kept, [LETTERS], shown) == set()
    # A value already visible before the edit is not the edit's doing.
    assert unprotected(moved, moved + "\n", [LETTERS], shown) == set()
    # The review: a copy far below the original was masked by it when the edit was redacted as one
    # text (a value found secret is masked wherever it recurs); a request sending only the copy's
    # lines sent it. Each occurrence is judged with the lines a request scans around it.
    filler = "".join(f"x{i} = {i}\n" for i in range(20))
    copied = SETTINGS_DOC + filler + f'WELCOME = "{LETTERS}"\n'
    assert unprotected(SETTINGS_DOC, copied, [LETTERS], shown) == {LETTERS}
    near = SETTINGS_DOC + f'WELCOME = "{LETTERS}"\n'  # within a request's margin of the original
    assert unprotected(SETTINGS_DOC, near, [LETTERS], shown) == set()


def test_a_completion_is_cut_before_a_secret_it_would_move_out_of_sight() -> None:
    ph = Placeholders({"[REDACTED:keyword-assignment:0123abcd]": LETTERS})

    def guard(restored: str) -> set[str]:
        return {LETTERS} if f'WELCOME = "{LETTERS}"' in restored else set()

    moved = 'x = 1\nWELCOME = "[REDACTED:keyword-assignment:0123abcd]"'
    assert restore_completion(moved, ph, guard) == "x = 1"
    kept = 'x = 1\ndb_password = "[REDACTED:keyword-assignment:0123abcd]"'
    assert restore_completion(kept, ph, guard) == f'x = 1\ndb_password = "{LETTERS}"'


def test_placeholders_between_recovers_what_a_stored_answer_put_back() -> None:
    from codectx.app.restore import placeholders_between

    raw = 'a = "[REDACTED:github-token:0123abcd]"\nb = "[REDACTED:keyword-assignment:89abcdef]"'
    restored = f'a = "{GH}"\nb = "{LETTERS}"'
    assert placeholders_between(raw, restored).originals == {
        "[REDACTED:github-token:0123abcd]": GH,
        "[REDACTED:keyword-assignment:89abcdef]": LETTERS,
    }
    assert placeholders_between("no tokens", "no tokens") == Placeholders()
    assert placeholders_between('a = "[REDACTED:github-token:0123abcd]"', "something else") is None
    # A multi-line value takes back the line breaks its token kept.
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----"
    raw = 'KEY = """[REDACTED:private-key:11112222]\n\n"""\nW = "[REDACTED:keyword-assignment:89abcdef]"'
    found = placeholders_between(raw, f'KEY = """{key}"""\nW = "{LETTERS}"')
    assert found is not None and found.originals == {
        "[REDACTED:private-key:11112222]": key,
        "[REDACTED:keyword-assignment:89abcdef]": LETTERS,
    }
    # Adjacent tokens that do not align fail at once (a regex of lazy groups backtracked for minutes).
    adjacent = "".join(f"[REDACTED:github-token:0000000{i}]" for i in range(8))
    assert placeholders_between(adjacent, "x" * 50) is None


FOREIGN = "LocalPwZq03x"  # a password of a git-ignored local_settings.py, which the edited file does not hold
FOREIGN_TOKEN = "[REDACTED:keyword-assignment:0fe1a2b3]"
WORKER = "from local_settings import DB_PASSWORD\n\n\ndef start():\n    return open_pool(DB_PASSWORD)\n"


def test_a_refactor_never_writes_another_files_secret_into_this_one() -> None:
    """Red team 9 (P03): the refactor's context carried local_settings.py's line, masked; the model
    moved its placeholder into worker.py and the edit wrote the password there. Chat's
    apply-code-block refused exactly this; refactors now do too."""
    from codectx.app.refactor import _keep_protected

    ph = Placeholders({FOREIGN_TOKEN: FOREIGN})
    sent = original = WORKER
    raw = WORKER.replace(
        "    return open_pool(DB_PASSWORD)",
        f'    DB_PASSWORD = "{FOREIGN_TOKEN}"\n    return open_pool(DB_PASSWORD)',
    )
    code, notes = restore_edit(raw, sent, original, ph)
    assert FOREIGN in code  # what restoring alone would write
    kept, notes = _keep_protected(raw, code, notes, (sent, original), ph, None, WORKER, (0, len(WORKER)))
    assert FOREIGN not in kept and "[REDACTED" not in kept
    assert any("only into the file it came from" in n for n in notes)
    # The file that holds it gets it back.
    own = WORKER + f'\nDB_PASSWORD = "{FOREIGN}"\n'
    kept, notes = _keep_protected(raw, code, [], (sent, original), ph, None, own, (0, len(WORKER)))
    assert FOREIGN in kept and notes == []


def test_a_completion_is_cut_before_another_files_secret() -> None:
    """Red team 9 (P04): the same through inline completion."""
    from types import SimpleNamespace

    from codectx.app.completion import Completer, CompletionAsk

    ph = Placeholders({FOREIGN_TOKEN: FOREIGN})
    me = SimpleNamespace(redaction=SimpleNamespace(shown=lambda path: None))
    suggestion = f'    DB_PASSWORD = "{FOREIGN_TOKEN}"\n    return open_pool(DB_PASSWORD)'
    ask = CompletionAsk("src/worker.py", WORKER, 3, 12)
    guard = Completer._guard(me, ask, suggestion, ph)  # type: ignore[arg-type]
    assert restore_completion(suggestion, ph, guard) == ""
    own = CompletionAsk("src/local_settings.py", f'DB_PASSWORD = "{FOREIGN}"\n' + WORKER, 4, 12)
    guard = Completer._guard(me, own, suggestion, ph)  # type: ignore[arg-type]
    assert FOREIGN in restore_completion(suggestion, ph, guard)


def test_a_quoted_literal_in_a_diagnostic_is_judged_as_a_value(tmp_path: Path) -> None:
    """Red team 9 (P01, P02): a type checker quotes a constant's value wherever it is defined
    (`Argument of type "Literal['...']"`); @problems and the quick fix's instruction sent it."""
    from codectx.privacy.pieces import PieceRedactor
    from codectx.privacy.redact import Redactor

    pieces = PieceRedactor(Redactor(settings(tmp_path, "http://127.0.0.1:9/v1")))
    pyright = (
        f"""line 5: error: Argument of type "Literal['{FOREIGN}']" cannot be assigned """
        """to parameter "size" of type "int\""""
    )
    typescript = (
        f"""line 2: error: Argument of type '"{FOREIGN}"' is not assignable to parameter of type 'number'."""
    )
    for message in (pyright, typescript, f"Fix this problem reported by a tool: {pyright}"):
        out = pieces.message(message, "src/worker.py")
        assert FOREIGN not in out and "[REDACTED:" in out
    # Names a message quotes, and words in a literal type, are no secrets (the review: `"requests"`
    # was masked, and then every `requests` in the request).
    names = (
        'line 2: error: "open_pool" is not defined; Import "requests" could not be resolved; '
        "'ValidationError' is unused; \"tmpResult2\" is possibly unbound"
    )
    assert pieces.message(names, "src/worker.py") == names
    words = """Type "Literal['production', 'staging']" is not assignable to "Mode\""""
    assert pieces.message(words, "src/worker.py") == words
    assert pieces.text("import requests\n", "src/worker.py") == "import requests\n"
    # Once found, the value is masked wherever else this request has it.
    assert FOREIGN not in pieces.echo(f"size = {FOREIGN}")
