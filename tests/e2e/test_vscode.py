"""The VS Code extension from pytest: its own checks (type check, lint, unit tests),
packaging into a .vsix, and the end-to-end test in a real VS Code (code-server in
headless Chromium) against the real `codectx lsp`.

Everything is built in a temporary copy of vscode-extension/ (its node_modules
linked in), so the repository is never written to. Needs what `make vscode-env`
installs (Node 24, the extension's node_modules, code-server, Chromium); without
it these tests skip and say which target to run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO_ROOT
from tests.support.vscode import CHROMIUM, CODE_SERVER, NODE, node_env, node_tool, run_checked

REPO = REPO_ROOT
CODECTX = Path(sys.executable).parent / "codectx"


def test_typecheck(workdir: Path) -> None:
    run_checked([*node_tool(workdir, "tsc"), "--noEmit", "-p", "."], workdir, timeout=300)
    # The chat webview's page script: browser types, no Node or vscode.
    run_checked([*node_tool(workdir, "tsc"), "--noEmit", "-p", "src/chat/webview"], workdir, timeout=300)


def test_lint(workdir: Path) -> None:
    run_checked([*node_tool(workdir, "eslint"), "src", "test", "e2e"], workdir, timeout=300)


def test_unit_tests(workdir: Path) -> None:
    out = workdir / "vitest-report.json"
    vitest = [*node_tool(workdir, "vitest"), "run", "--reporter=json", f"--outputFile={out}"]
    run_checked(vitest, workdir, timeout=300)
    report = json.loads(out.read_text("utf-8"))
    assert report["success"] is True
    assert report["numFailedTests"] == 0
    # Every pure module has its tests; a missing file would silently shrink the suite.
    files = {Path(r["name"]).name for r in report["testResults"]}
    assert {
        "settings.test.ts",
        "status.test.ts",
        "contextView.test.ts",
        "commandArgs.test.ts",
        "backendHealth.test.ts",
        "healthProbe.test.ts",
        "traceChannel.test.ts",
        "serverLocation.test.ts",
        "chatMarkdown.test.ts",
        "chatMentions.test.ts",
        "chatSession.test.ts",
        "chatApplyFlow.test.ts",
        "chatProtocol.test.ts",
    } <= files
    assert report["numPassedTests"] >= 70


def test_vsix_contents(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest: dict[str, Any] = json.loads(z.read("extension/package.json"))
    assert "extension/dist/extension.js" in names
    # The chat view: its page script, stylesheet and icon ship; the view and its commands are declared.
    assert {"extension/dist/chat.js", "extension/media/chat.css", "extension/images/chat.svg"} <= names
    # Bundled: no sources, tests or dependencies ship.
    assert not [
        n for n in names if n.startswith(("extension/src/", "extension/node_modules/", "extension/test/"))
    ]
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"
    props = manifest["contributes"]["configuration"]["properties"]
    # Settings that could send code elsewhere or run a program cannot come from a workspace.
    for key in ("codectx.backend.url", "codectx.privacy.neverSend", "codectx.privacy.redact"):
        assert props[key]["scope"] == "application", key
    for key in ("codectx.server.command", "codectx.server.interpreter"):
        assert props[key]["scope"] == "machine", key
    # The API key lives in SecretStorage, never in settings.
    assert not [k for k in props if "key" in k.lower() and "apikey" in k.lower().replace(".", "")]
    commands = {c["command"] for c in manifest["contributes"]["commands"]}
    assert {
        "codectx.refactorSelection",
        "codectx.searchCodebase",
        "codectx.reindexWorkspace",
        "codectx.showContextSent",
        "codectx.showAuditLog",
        "codectx.setApiKey",
        "codectx.checkBackend",
    } <= commands
    assert {
        "codectx.chat.open",
        "codectx.chat.new",
        "codectx.chat.history",
        "codectx.chat.export",
    } <= commands
    assert manifest["contributes"]["views"]["codectx"] == [
        {
            "type": "webview",
            "id": "codectx.chat",
            "name": "Chat",
            "icon": "images/chat.svg",
            "contextualTitle": "codectx",
        }
    ]
    assert props["codectx.health.intervalSeconds"]["default"] == 60
    # A newcomer's path: an icon, a walkthrough whose media ship, default keys, no placeholder repository.
    assert manifest["icon"] == "images/icon.png" and "extension/images/icon.png" in names
    assert z_png(vsix, "extension/images/icon.png") == (128, 128)
    (walkthrough,) = manifest["contributes"]["walkthroughs"]
    steps = [step["id"] for step in walkthrough["steps"]]
    assert steps == ["installServer", "configureBackend", "firstCompletion"]
    for step in walkthrough["steps"]:
        assert f"extension/{step['media']['markdown']}" in names
        assert step["completionEvents"]
    keys = {k["command"]: k["key"] for k in manifest["contributes"]["keybindings"]}
    assert keys == {"codectx.refactorSelection": "ctrl+alt+r", "codectx.searchCodebase": "ctrl+alt+f"}
    assert "example.invalid" not in json.dumps(manifest)
    with zipfile.ZipFile(vsix) as z:
        assert z.read("extension/LICENSE.txt") == (REPO / "LICENSE").read_bytes()


def z_png(vsix: Path, name: str) -> tuple[int, int]:
    """Width and height of a PNG inside the package (from its IHDR chunk)."""
    with zipfile.ZipFile(vsix) as z:
        data = z.read(name)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.slow
@pytest.mark.vscode
def test_end_to_end_in_code_server(vsix: Path, workdir: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"  # screenshots and logs: tests write only to temporary folders
    for what, path in (("code-server", CODE_SERVER), ("Chromium", CHROMIUM), ("codectx", CODECTX)):
        if not path.exists():
            pytest.skip(f"{what} is missing at {path}: run `make vscode-env`")
    result = subprocess.run(
        [
            str(NODE),
            "e2e/run.mjs",
            "--vsix",
            str(vsix),
            "--codectx",
            str(CODECTX),
            "--code-server",
            str(CODE_SERVER),
            "--chromium",
            str(CHROMIUM),
            "--work",
            str(tmp_path / "e2e"),
            "--artifacts",
            str(artifacts),
        ],
        cwd=workdir,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the e2e printed no result:\n{result.stderr[-6000:]}"
    report = json.loads(lines[-1])
    failed = [f"{r['name']}: {r['detail']}" for r in report["results"] if not r["ok"]]
    assert not failed and report["ok"], (
        f"VS Code end-to-end checks failed (screenshots and logs in {artifacts}):\n"
        + "\n".join(failed)
        + f"\n--- log ---\n{result.stderr[-6000:]}"
    )
    names = {r["name"] for r in report["results"]}
    assert len(names) == 14
    # The probed health, search, reindex, trace and offline checks are among them (not silently dropped).
    needles = ("health probe", "Search Codebase", "Reindex", "trace", "offline")
    for needle in (*needles, "language status", "walkthrough", "Ctrl+Alt+F"):
        assert any(needle in name for name in names), needle
