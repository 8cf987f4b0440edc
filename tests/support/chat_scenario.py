"""The chat tests' shared scenario: the questions, the loopback model's answers, the server command.

tests/lsp/test_chat_contract.py (docs/chat-protocol.md from a plain LSP client), tests/e2e/test_nvim_chat.py
(Neovim) and tests/e2e/test_vscode_chat.py (code-server) ask the same questions of the real `codectx lsp`;
its model server is a loopback one (`real_mode_backend`) whose chat answer is `answer_for` the
question found in the last user message, so the tests know the exact text, its code block and the
definitions it names (real lines of the fixture repository).

WHERE THE SERVER IS SELECTED: `server_command()`. CODECTX_CHAT_SERVER is `real` (the default:
`python -m codectx lsp`) or a JSON list (any other command that speaks the protocol, started with
the same loopback backend URL in its settings). The temporary stand-in server that lived here while
the editors were built before the server is gone; the real server passes the same checks.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The questions the tests ask; `answer_for` recognises them inside whatever prompt carries them.
QUESTION = "How does scale work?"
LONG_QUESTION = "Explain the whole package at length"
REFUSED_QUESTION = "What is in @file:.env ?"
NOTE = "# checked by codectx"
DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


def server_mode() -> str:
    return os.environ.get("CODECTX_CHAT_SERVER", "real")


def server_command() -> list[str]:
    """The command that starts the chat server the editor tests talk to (see the docstring)."""
    mode = server_mode()
    if mode == "real":
        return [sys.executable, "-m", "codectx", "lsp"]
    command = json.loads(mode)
    assert isinstance(command, list) and command, "CODECTX_CHAT_SERVER: real or a JSON list"
    return [str(part) for part in command]


def real_mode_backend(root: Path) -> Any:
    """A started loopback model server whose chat answers are `answer_for` (the tests pass its URL
    as the backend setting).

    The real server puts the user's question into the prompt's last user message; the test
    questions are recognised inside it. Stop it with `.stop()`.
    """
    from tests.support.lsp_helpers import FixedBackend

    def chat(body: dict[str, Any]) -> str:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        content = users[-1].get("content", "") if users else ""
        text = content if isinstance(content, str) else json.dumps(content)
        question = next((q for q in (LONG_QUESTION, REFUSED_QUESTION, QUESTION) if q in text), text)
        return answer_for(question, root)

    return FixedBackend(chat=chat, chunk_delay_s=0.01).start()


# --- deterministic answers (the loopback model's) ------------------------------------------------


@dataclass
class Definition:
    path: str
    name: str
    start: int  # 0-based, inclusive
    end: int
    source: str


def source_files(root: Path) -> list[Path]:
    skip = {".git", ".venv", "node_modules", "__pycache__", ".codectx"}
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not (set(p.relative_to(root).parts) & skip) and p.stat().st_size < 200_000
    )


def definitions(root: Path) -> list[Definition]:
    """Top-level Python definitions: each from its `def`/`class` line to its last non-blank line."""
    found: list[Definition] = []
    for path in source_files(root):
        if path.suffix != ".py":
            continue
        lines = path.read_text("utf-8", errors="replace").splitlines()
        found.extend(definitions_in(path.relative_to(root).as_posix(), lines))
    return found


def definitions_in(rel: str, lines: list[str]) -> list[Definition]:
    found = []
    starts = [i for i, line in enumerate(lines) if DEFINITION.match(line)]
    for i in starts:
        end = i
        for j in range(i + 1, len(lines)):
            if lines[j].strip() and not lines[j][0].isspace():
                break
            if lines[j].strip():
                end = j
        name = DEFINITION.match(lines[i]).group(1)  # type: ignore[union-attr]
        found.append(Definition(rel, name, i, end, "\n".join(lines[i : end + 1])))
    return found


def named_in(question: str, root: Path) -> list[Definition]:
    words = set(re.findall(r"[A-Za-z_]\w*", question))
    return [d for d in definitions(root) if d.name in words]


def annotated(definition: Definition) -> str:
    """The definition with NOTE after its first line: the code block the answer proposes."""
    head, _, rest = definition.source.partition("\n")
    return f"{head}\n    {NOTE}\n{rest}" if rest else f"{head}\n    {NOTE}\n    pass"


def answer_for(question: str, root: Path) -> str:
    if LONG_QUESTION in question:
        return "".join(f"Part {i}: the package keeps its helpers small and composable.\n" for i in range(400))
    if REFUSED_QUESTION.split("@")[0].strip() in question and "@file:.env" in question:
        return "I cannot see that file: it was not sent.\n"
    named = named_in(question, root)
    if not named:
        return "I found nothing in the workspace by that name.\n"
    first = named[0]
    return (
        f"`{first.name}` is defined in `{first.path}` (lines {first.start + 1}-{first.end + 1}).\n\n"
        f"A version with a note:\n\n"
        f"```python path={first.path}\n{annotated(first)}\n```\n\n"
        f"Apply the block to update `{first.path}`.\n"
    )
