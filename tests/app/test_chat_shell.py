"""`codectx ask` and `codectx chat` in the shell: the real command lines against a loopback model server.

The loopback server (tests/support/lsp_helpers.FixedBackend) records every request, so the tests see the
exact bytes: the question and its context in the last user message, the previous turn carried by
the next one, a never-send `@file` refused and never sent. Conversations go to the sandboxed state
folder, never the workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import chat_scenario
from tests.support.lsp_helpers import FixedBackend, make_repo


def codectx(
    args: list[str], cwd: Path, stdin: str = "", timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODECTX_")}
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "codectx", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo")
    (root / ".env").write_text("API_TOKEN=do-not-send-this-value\n", encoding="utf-8")
    done = codectx(["index", str(root), "--no-embed"], root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def backend(repo: Path) -> Iterator[FixedBackend]:
    server = chat_scenario.real_mode_backend(repo)
    try:
        yield server
    finally:
        server.stop()


def chats(backend: FixedBackend) -> list[dict[str, Any]]:
    return [r for r in backend.requests if r["path"].endswith("/chat/completions")]


def test_ask_json_cites_streams_and_continues(repo: Path, backend: FixedBackend) -> None:
    question = chat_scenario.QUESTION
    args = [
        "ask",
        question,
        "--file",
        "calc/report.py",
        "--line",
        "7",
        "--backend-url",
        backend.url,
        "--lexical",
    ]
    done = codectx([*args, "--json"], repo)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["text"] == chat_scenario.answer_for(question, repo)
    spans = {(c["path"], c["startLine"], c["endLine"], c["reason"]) for c in result["citations"]}
    assert ("calc/report.py", 5, 10, "enclosing scope") in spans, spans  # --line 7 is inside summary
    assert any(c.get("symbol") == "scale" and c["path"] == "calc/ops.py" for c in result["citations"])
    (sent,) = chats(backend)
    last = sent["body"]["messages"][-1]["content"]
    assert (
        last.startswith(question) and "def summary(values):" in last and "def scale(values, factor):" in last
    )
    # Citations equal the items sent: each cited span's label is in the request.
    for c in result["citations"]:
        assert f"{c['path']}#L{c['startLine'] + 1}-L{c['endLine'] + 1}" in last
    # The conversation is saved under the state folder, never in the workspace.
    cid = result["conversationId"]
    assert not list(repo.rglob(f"{cid}*"))
    # A second question in the same conversation carries the first turn, byte for byte.
    again = codectx(
        ["ask", "And add?", "--conversation", cid, "--backend-url", backend.url, "--lexical"], repo
    )
    assert again.returncode == 0, again.stderr
    assert "Sources:" in again.stdout or "add" in again.stdout
    first, second = chats(backend)
    assert second["body"]["messages"][: len(first["body"]["messages"])] == first["body"]["messages"]
    assert second["body"]["messages"][len(first["body"]["messages"])]["role"] == "assistant"
    assert second["body"]["messages"][-1]["content"].startswith("And add?")
    # The first turn's snippets are not sent again.
    assert "def summary(values):" not in second["body"]["messages"][-1]["content"]
    # But the history sends them: the audit entry names their files (red team 9, A02: it named
    # only the new turn's pieces, `files: none` here).
    audit = codectx(["audit", "show", "--json", "--last", "1"], repo)
    (entry,) = [json.loads(line) for line in audit.stdout.splitlines()]
    assert "def summary(values):" in json.dumps(second["body"])
    assert "calc/report.py" in {s["path"] for s in entry["sources"]}, entry["sources"]
    listed = codectx(["chat", "--list", "--json"], repo)
    assert [c["conversationId"] for c in json.loads(listed.stdout)] == [cid]
    assert json.loads(listed.stdout)[0]["turns"] == 2


def test_ask_refuses_a_never_send_mention(repo: Path, backend: FixedBackend) -> None:
    done = codectx(["ask", chat_scenario.REFUSED_QUESTION, "--backend-url", backend.url, "--lexical"], repo)
    assert done.returncode == 0, done.stderr
    assert "refused" in done.stderr and ".env" in done.stderr
    assert all(b"do-not-send-this-value" not in r["raw"] for r in backend.requests)
    assert "do-not-send-this-value" not in done.stdout + done.stderr
    # The current file a never-send one: left out, as before, and now the user is told.
    current = codectx(
        ["ask", "what is this?", "--file", ".env", "--backend-url", backend.url, "--lexical"], repo
    )
    assert current.returncode == 0, current.stderr
    assert "the current file .env is not sent" in current.stderr
    assert all(b"do-not-send-this-value" not in r["raw"] for r in backend.requests)


def test_ask_errors_are_clear(repo: Path, tmp_path: Path) -> None:
    def saved() -> list[str]:
        return [c["conversationId"] for c in json.loads(codectx(["chat", "--list", "--json"], repo).stdout)]

    before = saved()
    dead = codectx(["ask", "hello?", "--backend-url", "http://127.0.0.1:9/v1"], repo)
    assert dead.returncode != 0 and "codectx: error:" in dead.stderr and "Traceback" not in dead.stderr
    unset = codectx(["ask", "hello?"], repo)
    assert unset.returncode != 0 and "backend" in unset.stderr.lower() and "Traceback" not in unset.stderr
    missing = codectx(["ask", "hi", "--file", "nope.py", "--backend-url", "http://127.0.0.1:9/v1"], repo)
    assert missing.returncode != 0 and "nope.py" in missing.stderr and "Traceback" not in missing.stderr
    lineless = codectx(["ask", "hi", "--line", "5", "--backend-url", "http://127.0.0.1:9/v1"], repo)
    assert lineless.returncode == 2 and "--line needs --file" in lineless.stderr  # it was ignored
    both = codectx(["chat", "--list", "--export", "0123456789ab"], repo)
    assert both.returncode == 2 and "not allowed with" in both.stderr  # it listed, ignoring --export
    helped = codectx(["ask", "--help"], repo)
    assert helped.returncode == 0 and "@file:PATH" in helped.stdout and "--json" in helped.stdout
    # A chat fed questions by a script: a turn with no answer makes the exit status (it was 0).
    piped = codectx(["chat", "--backend-url", "http://127.0.0.1:9/v1", "--lexical"], repo, stdin="hi\n")
    assert piped.returncode == 3 and "codectx: error:" in piped.stderr and "Traceback" not in piped.stderr
    # --json shapes --list only; a conversation is text (it printed text under --json before).
    misused = codectx(["chat", "--json", "--backend-url", "http://127.0.0.1:9/v1"], repo, stdin="hi\n")
    assert misused.returncode == 2 and "codectx ask --json" in misused.stderr
    # None of these left an empty conversation behind in `chat --list` (each did: "0 turns").
    empty = codectx(["chat", "--backend-url", "http://127.0.0.1:9/v1", "--lexical"], repo, stdin="/clear\n")
    assert empty.returncode == 0, empty.stderr
    assert saved() == before


def test_interactive_chat_commands(repo: Path, backend: FixedBackend, tmp_path: Path) -> None:
    saved = tmp_path / "talk.md"
    script = "\n".join(
        [
            "/file calc/report.py 7",
            chat_scenario.QUESTION,
            f"/save {saved}",
            "/clear",
            "/nonsense",
            "What is in @file:.env ?",
            "/quit",
        ]
    )
    done = codectx(["chat", "--backend-url", backend.url, "--lexical"], repo, stdin=script + "\n")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert chat_scenario.answer_for(chat_scenario.QUESTION, repo).split("\n")[0] in done.stdout
    assert "calc/ops.py:9-11" in done.stdout  # a citation (1-based lines)
    assert "current file: calc/report.py" in done.stderr and "unknown command /nonsense" in done.stderr
    text = saved.read_text("utf-8")
    assert chat_scenario.QUESTION in text and "## codectx" in text
    assert "refused" in done.stderr
    # /clear started a second conversation: two saved, the refused question in the newer one.
    listed = json.loads(codectx(["chat", "--list", "--json"], repo).stdout)
    assert len(listed) == 2 and listed[0]["title"].startswith("What is in")
    exported = codectx(["chat", "--export", listed[1]["conversationId"]], repo)
    assert chat_scenario.QUESTION in exported.stdout
    gone = codectx(["chat", "--delete", listed[1]["conversationId"]], repo)
    assert gone.returncode == 0
    assert len(json.loads(codectx(["chat", "--list", "--json"], repo).stdout)) == 1


def test_save_never_overwrites_a_file_unless_told(repo: Path, backend: FixedBackend, tmp_path: Path) -> None:
    """Red team 5 (S9): `/save index.php` replaced the source file with the Markdown transcript.
    An existing path (a link too, even a dangling one) is refused; `/save! PATH` replaces it."""
    source = repo / "calc" / "report.py"
    before = source.read_text("utf-8")
    notes, fresh, link = tmp_path / "notes.md", tmp_path / "talk.md", tmp_path / "link.md"
    notes.write_text("my own notes\n", encoding="utf-8")
    link.symlink_to(tmp_path / "nowhere.md")
    script = [chat_scenario.QUESTION, f"/save {source}", f"/save {link}", f"/save {notes}", f"/save {fresh}"]
    done = codectx(
        ["chat", "--backend-url", backend.url, "--lexical"],
        repo,
        stdin="\n".join([*script, "/help", "/quit"]) + "\n",
    )
    assert done.returncode == 0, done.stderr
    assert source.read_text("utf-8") == before and not (tmp_path / "nowhere.md").exists()
    assert notes.read_text("utf-8") == "my own notes\n"
    assert f"{source} exists; nothing saved (/save! {source} overwrites it" in done.stderr
    assert done.stderr.count("exists; nothing saved") == 3
    assert chat_scenario.QUESTION in fresh.read_text("utf-8") and f"saved to {fresh}" in done.stderr
    assert "/save! PATH" in done.stdout  # /help names the overwriting form
    again = codectx(
        ["chat", "--backend-url", backend.url, "--lexical"], repo, stdin=f"/save! {notes}\n/quit\n"
    )
    assert again.returncode == 0, again.stderr
    assert notes.read_text("utf-8").startswith("# ") and f"saved to {notes}" in again.stderr


def test_ask_diff_folder_and_codebase_mentions(repo: Path, backend: FixedBackend) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    (repo / ".git").rmdir()
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", "-A", ":!.env")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    ops = repo / "calc" / "ops.py"
    ops.write_text(ops.read_text("utf-8").replace("return total", "return total  # summed"), "utf-8")
    (repo / ".env").write_text("API_TOKEN=changed-secret-value\n", encoding="utf-8")
    git("add", "-N", ".env")  # even a tracked never-send file's diff stays out
    question = "What changed? @diff and @folder:calc/"
    done = codectx(["ask", question, "--backend-url", backend.url, "--lexical", "--json"], repo)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    reasons = {(c["reason"], c["path"]) for c in result["citations"]}
    assert ("@diff", "calc/ops.py") in reasons, reasons
    assert ("@folder", "calc/report.py") in reasons or ("@folder", "calc/ops.py") in reasons, reasons
    last = chats(backend)[-1]["body"]["messages"][-1]["content"]
    assert "# summed" in last
    assert all(b"changed-secret-value" not in r["raw"] for r in backend.requests) and ".env" in done.stderr
    searched = codectx(
        [
            "ask",
            "@codebase:multiply every value by factor",
            "--backend-url",
            backend.url,
            "--lexical",
            "--json",
        ],
        repo,
    )
    cited = json.loads(searched.stdout)["citations"]
    assert any(c["reason"] == "@codebase" and c.get("symbol") == "scale" for c in cited), cited


def test_diff_leaves_out_renamed_never_send_files_and_masks_a_keys_unchanged_lines(
    repo: Path, backend: FixedBackend
) -> None:
    """Red team 3: `git mv .pgpass hosts.txt` sent .pgpass's lines as the hunk's context, and a
    changed line inside a key block sent the key's other lines (the hunk has no BEGIN line)."""
    import base64
    import random

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
            check=True,
            capture_output=True,
        )

    rng = random.Random(7)
    body = base64.b64encode(bytes(rng.randrange(256) for _ in range(48 * 20))).decode()
    key_lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    secret_yaml = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  tls.key: |\n"
        "    -----BEGIN RSA PRIVATE KEY-----\n"
        + "".join(f"    {line}\n" for line in key_lines)
        + "    -----END RSA PRIVATE KEY-----\n"
    )
    (repo / "deploy").mkdir()
    (repo / "deploy" / "tls-secret.yaml").write_text(secret_yaml, "utf-8")
    (repo / "deploy" / ".pgpass").write_text("db2.internal:5432:prod:app:rnRBBtGaprBPhLERW0Cb\n", "utf-8")
    (repo / ".git").rmdir()
    git("init", "-q")
    git("add", "-A", ":!.env")
    git("commit", "-qm", "base")
    middle = len(key_lines) // 2
    changed = key_lines[middle][:-4] + "AAAA"
    (repo / "deploy" / "tls-secret.yaml").write_text(secret_yaml.replace(key_lines[middle], changed), "utf-8")
    git("mv", "deploy/.pgpass", "deploy/pg_hosts.txt")
    with (repo / "deploy" / "pg_hosts.txt").open("a", encoding="utf-8") as f:
        f.write("replica.internal:5432:*:ro:readonly\n")
    done = codectx(["ask", "review @diff", "--backend-url", backend.url, "--lexical", "--json"], repo)
    assert done.returncode == 0, done.stderr
    cited = {(c["reason"], c["path"]) for c in json.loads(done.stdout)["citations"]}
    assert ("@diff", "deploy/tls-secret.yaml") in cited, cited
    assert not any(path.startswith("deploy/pg") or path.endswith(".pgpass") for _r, path in cited), cited
    assert ".pgpass" in done.stderr  # the user is told what was left out
    sent = b"".join(r["raw"] for r in chats(backend))
    assert b"rnRBBtGaprBPhLERW0Cb" not in sent
    assert b"@@ " in sent  # the key file's hunk went, masked
    leaked = [line for line in [*key_lines, changed] if line.encode() in sent]
    assert leaked == [], f"{len(leaked)} key lines sent"


def test_diff_of_a_notebook_masks_an_output_that_shows_a_secret(repo: Path, backend: FixedBackend) -> None:
    """Red team 8 (R2): a re-run notebook's diff showed the new output of `os.environ[...]`, which
    `@file` of the same notebook masks: the output is a secret by its cell's source, which stands
    outside the hunk. A diff's notebook is judged whole."""

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
            check=True,
            capture_output=True,
        )

    def notebook(shown: str) -> str:
        cell = {
            "cell_type": "code",
            "execution_count": 1,
            "id": "c1",
            "metadata": {},
            "outputs": [
                {
                    "data": {"text/plain": [shown]},
                    "execution_count": 1,
                    "metadata": {},
                    "output_type": "execute_result",
                }
            ],
            "source": [
                "import os\n",
                "\n",
                "# which key is this kernel using?\n",
                'os.environ["OPENAI_API_KEY"]',
            ],
        }
        body = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return json.dumps(body, indent=1) + "\n"

    (repo / "nb").mkdir()
    (repo / "nb" / "explore.ipynb").write_text(notebook("'<unset>'"), "utf-8")
    (repo / ".git").rmdir()
    git("init", "-q")
    git("add", "-A", ":!.env")
    git("commit", "-qm", "base")
    (repo / "nb" / "explore.ipynb").write_text(notebook("'KiteHarbor42'"), "utf-8")
    done = codectx(["ask", "what changed? @diff", "--backend-url", backend.url, "--lexical", "--json"], repo)
    assert done.returncode == 0, done.stderr
    cited = {(c["reason"], c["path"]) for c in json.loads(done.stdout)["citations"]}
    assert ("@diff", "nb/explore.ipynb") in cited, cited
    sent = b"".join(r["raw"] for r in chats(backend))
    assert b"@@ " in sent  # the hunk went
    assert b"KiteHarbor42" not in sent


def test_diff_leaves_out_a_file_too_large_to_check(repo: Path, backend: FixedBackend) -> None:
    """Red team 11 (F9): a dump over the size a document is read at could not be read to judge its
    hunk, which was then judged alone: the changed row (no INSERT line in the hunk) went out."""

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
            check=True,
            capture_output=True,
        )

    rows = ",\n".join(f"({i}, 'user{i}@example.org', 'Pw{i:06d}Zq64x')" for i in range(130_000))
    dump = f"INSERT INTO users (id, email, password) VALUES\n{rows};\n"
    assert len(dump) > 5_000_000
    (repo / "db").mkdir()
    (repo / "db" / "dump.sql").write_text(dump, "utf-8")
    (repo / "calc" / "notes.md").write_text("first\n", "utf-8")
    (repo / ".git").rmdir()
    git("init", "-q")
    git("add", "-A", ":!.env")
    git("commit", "-qm", "base")
    (repo / "db" / "dump.sql").write_text(dump.replace("Pw120000Zq64x", "Pw999999Zq64x"), "utf-8")
    (repo / "calc" / "notes.md").write_text("first\nsecond\n", "utf-8")
    done = codectx(["ask", "what changed? @diff", "--backend-url", backend.url, "--lexical", "--json"], repo)
    assert done.returncode == 0, done.stderr
    cited = {(c["reason"], c["path"]) for c in json.loads(done.stdout)["citations"]}
    assert ("@diff", "calc/notes.md") in cited and ("@diff", "db/dump.sql") not in cited, cited
    assert "db/dump.sql" in done.stderr and "could not be read to check them" in done.stderr
    sent = b"".join(r["raw"] for r in chats(backend))
    assert b"Pw999999Zq64x" not in sent and b"Pw120000Zq64x" not in sent and b"Pw120001Zq64x" not in sent
