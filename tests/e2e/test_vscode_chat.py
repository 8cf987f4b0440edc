"""The chat view of the VS Code extension, end to end in code-server (headless Chromium).

vscode-extension/e2e/chat.mjs drives the real editor: it opens the chat view, completes an
@-mention, asks, watches the answer stream in, clicks a citation, discards and then applies a code
block after its diff, sees a refused `@file:.env`, opens the context sent, stops a long answer,
exports, and resumes and deletes a conversation. The chat server is chosen by
tests/support/chat_scenario.py's `server_command()`: `codectx lsp` with a loopback model server whose
answers the scenario fixes. The .vsix is built by
tests/e2e/conftest.py's fixtures (a temporary copy of vscode-extension/).
"""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from tests.support import chat_scenario
from tests.support.lsp_helpers import make_repo
from tests.support.vscode import CHROMIUM, CODE_SERVER, NODE, node_env


@pytest.mark.slow
@pytest.mark.vscode
def test_chat_view_in_code_server(vsix: Path, workdir: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"  # screenshots and logs: tests write only to temporary folders
    for what, path in (("code-server", CODE_SERVER), ("Chromium", CHROMIUM)):
        if not path.exists():
            pytest.skip(f"{what} is missing at {path}: run `make vscode-env`")
    root = make_repo(tmp_path / "workspace")
    (root / ".env").write_text("API_TOKEN=do-not-send-this\n", encoding="utf-8")
    ops = root / "calc" / "ops.py"
    before = ops.read_text("utf-8")
    question, note = chat_scenario.QUESTION, chat_scenario.NOTE
    expect = tmp_path / "expect.json"
    expect.write_text(
        json.dumps(
            {
                "question": question,
                "long": chat_scenario.LONG_QUESTION,
                "refused": chat_scenario.REFUSED_QUESTION,
                "note": note,
                "blockPath": "calc/ops.py",
            }
        ),
        encoding="utf-8",
    )
    env = node_env()
    backend = chat_scenario.real_mode_backend(root)
    command = [
        str(NODE),
        "e2e/chat.mjs",
        "--vsix",
        str(vsix),
        "--code-server",
        str(CODE_SERVER),
        "--chromium",
        str(CHROMIUM),
        "--server",
        json.dumps(chat_scenario.server_command()),
        "--workspace",
        str(root),
        "--expect",
        str(expect),
        "--work",
        str(tmp_path / "e2e"),
        "--artifacts",
        str(artifacts),
    ]
    if backend is not None:
        command += ["--backend-url", backend.url]
    try:
        result = subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    finally:
        if backend is not None:
            backend.stop()
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"the chat e2e printed no result:\n{result.stderr[-6000:]}"
    report = json.loads(lines[-1])
    failed = [f"{r['name']}: {r['detail']}" for r in report["results"] if not r["ok"]]
    assert not failed and report["ok"], (
        f"chat end-to-end checks failed (screenshots and logs in {artifacts}):\n"
        + "\n".join(failed)
        + f"\n--- log ---\n{result.stderr[-6000:]}"
    )
    assert len(report["results"]) == 11
    seen = report["seen"]

    # Streamed: the answer's text grew through several states before it was complete.
    # The lengths are of the rendered Markdown, which may shrink by a character or two
    # when a closing backtick turns literal text into a code span, so not strictly sorted.
    lengths = seen["streamLengths"]
    growths = sum(later > earlier for earlier, later in itertools.pairwise(lengths))
    assert len(lengths) >= 3 and growths >= 2 and lengths[-1] > lengths[0], lengths
    # The answer as rendered: Markdown code span and code block, the block with an Apply button.
    assert "scale is defined in calc/ops.py (lines 9-11)." in seen["firstBody"]
    assert note in seen["firstBody"] and "```" not in seen["firstBody"]
    assert seen["applyButtons"] == 1
    assert any(c.startswith("calc/ops.py:9-11") for c in seen["citations"]), seen["citations"]
    assert seen["citationOpened"]["line"] == 9
    # @-mention completion: the kinds first, then the server's files.
    assert any("@file:" in k for k in seen["kinds"]) and any("@problems" in k for k in seen["kinds"])
    assert any("calc/ops.py" in item for item in seen["fileItems"])
    # Applied after the diff: exactly the note added under `def scale`, nothing else.
    after = seen["afterAccept"]
    assert f"def scale(values, factor):\n    {note}\n" in after
    assert after.replace(f"    {note}\n", "", 1) == before
    assert ops.read_text("utf-8") == after
    # The refused mention, the context sent, the stop, the export and the history.
    assert any(".env" in n for n in seen["refusedNotices"])
    assert "do-not-send-this" not in seen["refusedBody"]
    assert "calc/ops.py" in seen["context"]
    assert seen["stopState"] == "stopped"
    full = len(chat_scenario.answer_for(chat_scenario.LONG_QUESTION, root))
    assert 0 < seen["stoppedLength"] < full
    assert question in seen["export"]
    assert any(question in h for h in seen["history"])
    assert seen["resumed"] == [question, chat_scenario.REFUSED_QUESTION, chat_scenario.LONG_QUESTION]
