"""One chat answer streamed: the model's deltas shown with placeholders put back, stopping at once.

`stream_answer` runs the stream in its own task, so `ChatService.cancel` and the language server's
`$/cancelRequest` both end it the same way: the task is cancelled, leaving the client's
`async with` closes the HTTP stream (vLLM aborts the request), and what arrived is kept.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codectx.app.chat_context import Piece, TurnInput
from codectx.app.chat_model import Turn
from codectx.app.restore import restore_prose
from codectx.app.session import WorkspaceSession
from codectx.errors import CodectxError
from codectx.privacy.pieces import Placeholders
from codectx.settings import Settings

OnDelta = Callable[[str, str], None]  # (turn id, text)


@dataclass
class Running:
    task: asyncio.Task[Any] | None = None
    stopped: bool = False


async def stream_answer(
    session: WorkspaceSession,
    messages: list[dict[str, str]],
    sources: list[Any],
    reserve: int,
    served: str,
    turn_id: str,
    known: Placeholders,
    running: Running,
    on_delta: OnDelta | None,
) -> Outcome:
    """Stream one answer; deltas (placeholders put back) go to `on_delta` as they arrive. A stop
    (cancel, or the caller cancelled) gives the text so far with `cancelled`; a failure after some
    text gives it with `error`; a failure before any text is in `failure` for the caller to raise."""
    outcome = Outcome()
    shown = _Shown(known)

    async def run() -> None:
        stream = session.client.stream_chat(messages, sources=sources, max_tokens=reserve, model=served)
        try:
            async with stream:
                outcome.prepared = stream.prepared
                async for delta in stream:
                    outcome.raw += delta
                    piece = shown.feed(delta)
                    if piece and on_delta is not None:
                        on_delta(turn_id, piece)
        finally:
            outcome.prepared = stream.prepared or outcome.prepared
            outcome.audit_id = stream.audit_id
            if stream.usage is not None:
                outcome.usage = (stream.usage.prompt_tokens, stream.usage.completion_tokens)
            if stream.ttft_s is not None:
                outcome.timings["ttft_ms"] = round(stream.ttft_s * 1000, 1)
            outcome.timings["total_ms"] = round(stream.total_s * 1000, 1)

    if running.stopped:  # stopped while the context was gathered: nothing is sent
        outcome.cancelled = True
        return outcome
    task = running.task = asyncio.ensure_future(run())
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()  # $/cancelRequest cancelled the caller: close the stream too
        running.stopped = True
    with_cancel = running.stopped
    try:
        await task
    except asyncio.CancelledError:
        outcome.cancelled = True
    except CodectxError as exc:
        outcome.error, outcome.failure = str(exc), exc
    outcome.cancelled = outcome.cancelled or with_cancel
    rest = shown.finish(outcome.raw)
    if rest and on_delta is not None:
        on_delta(turn_id, rest)
    return outcome


@dataclass
class Outcome:
    raw: str = ""
    cancelled: bool = False
    error: str = ""
    failure: CodectxError | None = None
    prepared: Any = None
    audit_id: str | None = None
    usage: tuple[int, int] = (0, 0)
    timings: dict[str, float] = field(default_factory=dict)


class _Shown:
    """The answer as the user sees it, streamed: placeholders put back, a piece that may be the
    start of a placeholder held until it is complete."""

    def __init__(self, known: Placeholders) -> None:
        self.known = known
        self.raw = ""
        self.sent = ""

    def feed(self, delta: str) -> str:
        self.raw += delta
        cut = self.raw.rfind("[")
        safe = self.raw if cut == -1 or "]" in self.raw[cut:] or len(self.raw) - cut > 64 else self.raw[:cut]
        return self._emit(restore_prose(safe, self.known))

    def finish(self, raw: str) -> str:
        return self._emit(restore_prose(raw, self.known))

    def _emit(self, text: str) -> str:
        if not text.startswith(self.sent):
            return ""  # the final result's text is authoritative
        piece, self.sent = text[len(self.sent) :], text
        return piece


def answer_tokens(chat_max_tokens: int, limit: int | None) -> int:
    """The answer's reserve: backend.chat_max_tokens, at most a quarter of the window."""
    return chat_max_tokens if limit is None else max(16, min(chat_max_tokens, limit // 4))


def context_budget(settings: Settings, limit: int | None, reserve: int) -> int:
    """A turn's context budget: retriever.chat_budget_tokens, at most half of what the answer
    leaves of the model's window (`limit`, when the server said)."""
    budget = settings.retriever.chat_budget_tokens
    return budget if limit is None else max(64, min(budget, (limit - reserve) // 2))


def record_of(
    turn: TurnInput,
    uri: str,
    answer: Turn,
    outcome: Outcome,
    pieces: list[Piece],
    budget: int,
    tokens: int,
    model: str,
) -> dict[str, Any]:
    prepared = outcome.prepared
    body: bytes = prepared.content if prepared is not None else b""
    line, character = turn.position or ((turn.selection or (0, 0))[:2])
    return {
        "id": f"chat-{answer.turn_id}-{hashlib.sha256(body).hexdigest()[:8]}",
        "kind": "chat",
        "uri": uri,
        "path": turn.path or "",
        "line": line,
        "character": character,
        "time": time.time(),
        "status": "cancelled" if answer.cancelled else ("error" if outcome.error else "ok"),
        "error": outcome.error,
        "items": [
            {
                "path": p.path,
                "start_line": p.start_line,
                "end_line": p.end_line,
                "symbol": p.symbol,
                "reason": p.reason,
                "tokens": int(len(p.text) / 3),
            }
            for p in pieces
        ],
        "budget": {"total": budget, "used": tokens},
        "redactions": [
            {"rule": f.rule, "line": f.line, "hmac8": f.hmac8}
            for f in (prepared.findings if prepared else [])
        ],
        "payload": body.decode("utf-8", errors="replace"),
        "endpoint": prepared.endpoint if prepared is not None else "",
        "sha256": hashlib.sha256(body).hexdigest() if body else "",
        "audit_id": outcome.audit_id or "",
        "text": answer.text,
        "model": model,
        "timings": {},
    }
