"""Explanations as documents: the model's answer written as markdown and opened by the editor.

A code explanation is usually several paragraphs, too long for a message
popup. When the client supports `window/showDocument`, the answer is written
to a markdown file in the server's own cache folder (never the workspace)
and the editor is asked to open it; if the client cannot or will not, the
answer is shown as a message as before. Only the newest few answers are kept.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.edits import Span
    from codectx.lsp.server import CodectxServer

log = logging.getLogger(__name__)

KEEP = 20
PREFIX = "explain-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def answer_markdown(rel: str, span: Span, answer: str, code: str, language: str | None) -> str:
    """The answer as a markdown document: a heading naming the code, the answer, then the code."""
    lines = (
        f"line {span.start_line + 1}"
        if span.start_line == span.end_line
        else (f"lines {span.start_line + 1}–{span.end_line + 1}")
    )
    fence = "````" if "```" in code else "```"
    return (
        f"# Explanation of `{rel}`, {lines}\n\n"
        f"{answer.strip()}\n\n"
        f"## The code\n\n{fence}{language or ''}\n{code}\n{fence}\n"
    )


def answer_path(folder: Path, rel: str, span: Span, now: float) -> Path:
    stem = _UNSAFE.sub("_", Path(rel).name)[:60] or "code"
    # The time first, zero-padded: name order is age order, whatever the file system's mtimes.
    return folder / f"{PREFIX}{int(now * 1000):015d}-{stem}-L{span.start_line + 1}.md"


def write_answer(folder: Path, path: Path, text: str, keep: int = KEEP) -> Path:
    """Write one answer (owner-only: it quotes the user's code) and drop all but the newest `keep`."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)
    older = sorted((p for p in folder.glob(f"{PREFIX}*.md") if p != path), reverse=True)
    for stale in older[max(0, keep - 1) :]:
        stale.unlink(missing_ok=True)
    return path


def supports_show_document(ls: CodectxServer) -> bool:
    caps = ls.client_capabilities
    window = caps.window if caps else None
    show = window.show_document if window else None
    return bool(show and show.support)


def show_answer(
    ls: CodectxServer, rel: str, span: Span, answer: str, code: str, language: str | None
) -> None:
    """Open the answer as a document when the client can, else show it as a message. Returns at once."""
    if not supports_show_document(ls) or ls.answers_dir is None:
        _message(ls, answer)
        return
    text = answer_markdown(rel, span, answer, code, language)
    path = answer_path(ls.answers_dir, rel, span, time.time())
    asyncio.get_running_loop().create_task(_open(ls, path, text, answer))


async def _open(ls: CodectxServer, path: Path, text: str, answer: str) -> None:
    assert ls.answers_dir is not None
    try:
        await asyncio.get_running_loop().run_in_executor(None, write_answer, ls.answers_dir, path, text)
        result = await ls.window_show_document_async(
            types.ShowDocumentParams(uri=path.as_uri(), external=False, take_focus=True)
        )
        if result is not None and result.success:
            return
        log.info("the editor did not open %s; showing the answer as a message", path)
    except Exception:
        log.warning("could not show the answer as a document; showing it as a message", exc_info=True)
    _message(ls, answer)


def _message(ls: CodectxServer, answer: str) -> None:
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=answer))
