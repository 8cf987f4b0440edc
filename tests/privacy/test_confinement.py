"""Nothing outside the workspace is read or sent; secret files are judged by name and by real path.

`codectx complete` and `codectx context` resolve a document's real path and
refuse one outside the workspace (naming both) unless the user names the root
with `--root`; credential files in the home folder are refused either way. A
symlink is judged on its own name and on its target: `app/envlink.py ->
../.env` is never indexed, retrieved or sent. A loopback capture server
counts what would have left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from codectx.lsp.errors import UriRefused
from codectx.lsp.folders import Workspaces

from codectx.app.embedders import Embedders
from codectx.privacy.egress import EgressGate, SourceSpan
from codectx.privacy.errors import EgressBlocked
from codectx.settings import load_settings
from tests.support import faultserver as fs

SECRET = "ghp_" + "R8x2Lq9ZmW4tY7pK3vB6nC1dF5gH0jS8aE2u"
CODE = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def capture() -> Any:
    server = fs.FaultServer(routes={"/v1/models": fs.models("m")}, default=fs.sse(["x"])).start()
    yield server
    server.stop()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # credentials are planted in this test's own home
    root = tmp_path / "ws"
    (root / "app").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "app" / "calc.py").write_text(CODE)
    (root / ".env").write_text(f"GITHUB_TOKEN={SECRET}\nDB_PASSWORD=hunter2hunter2\n")
    (root / "app" / "envlink.py").symlink_to("../.env")
    outside = tmp_path / "outside.py"
    outside.write_text(f"TOKEN = '{SECRET}'\n")
    (root / "app" / "outlink.py").symlink_to(outside)
    return root


def _codectx(
    args: list[str], cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["CODECTX_INDEX_EMBED"] = "false"
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "codectx", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _home_credentials() -> list[Path]:
    home = Path(os.environ["HOME"])
    files = [home / ".aws" / "credentials", home / ".kube" / "config", home / ".docker" / "config.json"]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"token = {SECRET}\n")
    return files


def test_no_document_outside_the_workspace_is_sent_by_complete(ws: Path, capture: fs.FaultServer) -> None:
    url = ["--backend-url", capture.url, "--no-context"]
    outside = [Path("/etc/passwd"), *_home_credentials(), ws / "app" / "outlink.py"]
    for document in outside:
        done = _codectx(["complete", str(document), "--line", "1", *url], ws)
        assert done.returncode == 2, (document, done.stderr)
        assert "outside the workspace" in done.stderr or "not inside a workspace" in done.stderr
        assert str(document) in done.stderr and "Traceback" not in done.stderr
    # A link's target is named next to the workspace it left.
    done = _codectx(["complete", "app/outlink.py", "--line", "1", *url], ws)
    assert str(ws.parent / "outside.py") in done.stderr and str(ws) in done.stderr
    # From the home folder, home is no implicit workspace; naming it makes never-send refuse instead.
    home = Path(os.environ["HOME"])
    for document in outside[1:4]:
        assert _codectx(["complete", str(document), "--line", "1", *url], home).returncode == 2
        named = _codectx(["complete", str(document), "--line", "1", "--root", str(home), *url], home)
        assert named.returncode == 3 and "never-send" in named.stderr, named.stderr
    assert [r for r in capture.requests if r.path.endswith("/completions")] == []
    # A file inside the workspace still goes.
    done = _codectx(["complete", "app/calc.py", "--line", "2", "--character", "5", *url], ws)
    assert done.returncode == 0, done.stderr
    assert len([r for r in capture.requests if r.path.endswith("/completions")]) == 1


def test_context_refuses_documents_outside_the_workspace(ws: Path) -> None:
    for document in ("/etc/passwd", "app/outlink.py"):
        done = _codectx(["context", document, "--line", "1", "--lexical"], ws)
        assert done.returncode == 2, done.stderr
        assert "outside the workspace" in done.stderr or "not inside a workspace" in done.stderr


def test_a_symlink_to_a_secret_file_is_never_indexed_retrieved_or_sent(
    ws: Path, capture: fs.FaultServer
) -> None:
    # A folder link into an ignored folder: its files are judged on their real path too.
    (ws / ".gitignore").write_text("private/\n")
    (ws / "private" / ".aws").mkdir(parents=True)
    (ws / "private" / ".aws" / "credentials").write_text(f"aws_secret = {SECRET}\n")
    (ws / "app" / "cfg").symlink_to(ws / "private" / ".aws", target_is_directory=True)
    for run in range(2):  # the second run replays the walk record: same verdicts
        done = _codectx(["index", str(ws), "--json"], ws)
        assert done.returncode == 0, done.stderr
        listed = _codectx(["search", "GITHUB_TOKEN", str(ws), "--lexical", "--json", "--show"], ws)
        assert SECRET not in listed.stdout and "envlink" not in listed.stdout, run
        assert "cfg/credentials" not in listed.stdout
    from codectx.indexer.walk.discovery import discover

    found = discover(ws, load_settings(ws, environ={}))
    skipped = {s.path: s.reason for s in found.skipped}
    assert skipped["app/envlink.py"] == "secret-file" and skipped["app/cfg/credentials"] == "secret-file"
    assert "app/outlink.py" not in {f.path for f in found.files}
    # Sending it as the current document is refused on its real path.
    done = _codectx(
        ["complete", "app/envlink.py", "--line", "1", "--backend-url", capture.url, "--no-context"], ws
    )
    assert done.returncode == 3 and "is a link to .env" in done.stderr, done.stderr
    assert [r for r in capture.requests if r.path.endswith("/completions")] == []
    assert all(SECRET.encode() not in r.body and b"hunter2" not in r.body for r in capture.requests)


def test_gate_judges_sources_on_real_path_and_own_name(ws: Path, tmp_path: Path) -> None:
    (ws / ".env.py").symlink_to(ws / "app" / "calc.py")  # a secret-looking name for a benign file
    gate = EgressGate(load_settings(ws, environ={}))
    body = {"prompt": "x"}
    for path, why in (
        ("app/envlink.py", "is a link to .env"),
        ("app/outlink.py", "outside the workspace"),
        (".env.py", "never-send pattern"),
        ("../outside.py", "outside the workspace"),
    ):
        with pytest.raises(EgressBlocked, match=why):
            gate.prepare("http://127.0.0.1:9/v1/completions", body, [SourceSpan(path, 0, 0)])
    assert gate.prepare("http://127.0.0.1:9/v1/completions", body, [SourceSpan("app/calc.py", 0, 1)])


def test_lsp_refuses_links_by_their_own_name_and_by_their_target(ws: Path) -> None:
    (ws / "app" / "id_rsa.py").symlink_to(ws / "app" / "calc.py")
    spaces = Workspaces(sink=None, on_error=lambda message: None, embedders=Embedders())  # type: ignore[arg-type]
    spaces.set_folder(ws, load_settings(ws, environ={}))
    _, _, rel = spaces.locate((ws / "app" / "calc.py").as_uri())
    assert rel == "app/calc.py"
    with pytest.raises(UriRefused, match="never-send"):
        spaces.locate((ws / "app" / "id_rsa.py").as_uri())
    with pytest.raises(UriRefused, match="outside the workspace"):
        spaces.locate((ws / "app" / "outlink.py").as_uri())
    folder, _, rel = spaces.locate((ws / "app" / "envlink.py").as_uri())
    assert rel == ".env"  # the real path, which the gate refuses as never-send
    with pytest.raises(EgressBlocked, match="never-send"):
        EgressGate(folder.settings).prepare("u", {"prompt": "x"}, [SourceSpan(rel, 0, 0)])


@pytest.mark.parametrize(
    "name",
    [
        "#.env#",  # Emacs' auto-save
        ".#.env",  # Emacs' lock
        ".env copy",  # Finder
        "config/secrets copy 2.json",
        ".env - Copy",  # Explorer
        "keys/credentials - Copy (2).json",
        "credentials (1).json",  # a download
        "Copy of .env",  # Drive
        ".envs/.production/.django",  # cookiecutter-django
        ".env_prod",
        ".env-staging",
    ],
)
def test_a_copy_of_a_never_send_file_is_never_sent(ws: Path, name: str) -> None:
    """Red team 12 (F1): copies of `.env` and other credential files, named as file managers and
    editors name them, were read, indexed and sent (only backups' suffixes were known)."""
    from codectx.privacy.policy import is_never_index, never_send_match

    assert never_send_match(name, None) is not None and is_never_index(name)
    gate = EgressGate(load_settings(ws, environ={}))
    assert gate.refusal(name) is not None


@pytest.mark.parametrize("name", ["src/app copy.py", "notes (1).md", "copy.py", "#notes#", "docs/envs.md"])
def test_copies_of_ordinary_files_are_ordinary(name: str) -> None:
    from codectx.privacy.policy import never_send_match

    assert never_send_match(name, None) is None


def test_a_link_to_a_never_send_file_is_not_read_for_a_surface(tmp_path: Path) -> None:
    """Red team 12 (F6): `notes.txt -> .env` was read under the link's name; its lines were not sent,
    but an MCP error answer gave the file's line count and lengths."""
    from codectx.app.files import NeverSend, read_confined
    from codectx.app.redaction import RequestRedaction

    root = tmp_path / "w"
    root.mkdir()
    (root / ".env").write_text("API_TOKEN=abc\nDB_PASSWORD=def\n", encoding="utf-8")
    (root / "notes.txt").symlink_to(root / ".env")
    (root / "ok.txt").write_text("hello\n", encoding="utf-8")
    settings = load_settings(root, environ={})
    redaction = RequestRedaction(settings, EgressGate(settings))
    with pytest.raises(NeverSend, match=r"leads to \.env"):
        read_confined(settings, redaction, "notes.txt", 5, 9, redact=False)
    assert read_confined(settings, redaction, "ok.txt").text == "hello\n"
