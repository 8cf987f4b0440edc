"""The request discipline shared by completion and inline completion.

- Newer requests for the same document (and kind) supersede older ones: the
  older backend stream is cancelled and the older request answers empty.
- `$/cancelRequest` cancels the handler task, which cancels the stream.
- A request that outlives `lsp.request_budget_ms` returns what has streamed
  so far (cut at a word boundary) or nothing.
- A backend failure answers empty and tells the user once, not per keystroke.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codectx.backend.errors import BackendNotConfigured
from codectx.lsp import observe
from codectx.lsp.positions import Codec, clamp, split_lines
from lsprotocol import types

from codectx.errors import CodectxError

if TYPE_CHECKING:
    from codectx.lsp.folders import Folder
    from codectx.lsp.history import RequestRecord
    from codectx.lsp.server import CodectxServer

log = logging.getLogger(__name__)


def cut_partial(text: str) -> str:
    """A partial suggestion cut back to the last whole line, or else the last whole word."""
    if "\n" in text:
        return text[: text.rfind("\n")].rstrip()
    for i in range(len(text) - 1, -1, -1):
        if not (text[i].isalnum() or text[i] == "_"):
            return text[: i + 1].rstrip()
    return ""


class Suggester:
    def __init__(self, server: CodectxServer) -> None:
        self._ls = server
        self._inner: dict[tuple[str, str], asyncio.Task[str]] = {}

    async def suggest(
        self, kind: str, uri: str, folder: Folder, rel: str, text: str, line: int, column: int
    ) -> tuple[str, str]:
        """(suggestion, request id) at (line, column); "" when none in time. Awaits the backend."""
        ls = self._ls
        record = ls.history.start(kind, uri, rel, line, column)
        observe.started(ls, kind)
        key = (kind, uri)
        previous = self._inner.get(key)
        if previous is not None and not previous.done():
            previous.cancel()
        deltas: list[str] = []
        task = asyncio.get_running_loop().create_task(
            self._suggestion(folder, record, rel, text, line, column, deltas)
        )
        self._inner[key] = task
        budget = folder.settings.lsp.request_budget_ms / 1000
        try:
            done, _ = await asyncio.wait({task}, timeout=budget)
        except asyncio.CancelledError:
            task.cancel()
            record.status = "cancelled"
            observe.finished(ls, record)
            raise
        finally:
            if self._inner.get(key) is task and task.done():
                del self._inner[key]
        if not done:
            task.cancel()
            partial = cut_partial("".join(deltas))
            record.status = "timeout"
            record.text = partial
            if self._inner.get(key) is task:
                del self._inner[key]
            # Counted once the cancelled task has unwound and recorded what it sent.
            task.add_done_callback(lambda _task: observe.finished(ls, record))
            return partial, record.id
        if task.cancelled():
            record.status = "superseded"
            observe.finished(ls, record)
            return "", record.id
        exc = task.exception()
        if exc is not None:
            record.status = "error"
            record.error = str(exc)
            observe.finished(ls, record, exc)
            ls.health.observe_exception(folder.settings, exc)
            self.report(exc)
            return "", record.id
        ls.notices.resolved("backend")
        ls.health.ok(folder.settings, record.model, record.timings.get("ttft_ms"))
        result = task.result()
        record.status = "ok" if result else "empty"
        record.text = result
        observe.finished(ls, record)
        return result, record.id

    async def _suggestion(
        self,
        folder: Folder,
        record: RequestRecord,
        rel: str,
        text: str,
        line: int,
        column: int,
        deltas: list[str],
    ) -> str:
        """The model's completion at the cursor; streamed pieces are appended to `deltas` as they come."""
        debounce = folder.settings.lsp.debounce_ms / 1000
        if debounce:
            await asyncio.sleep(debounce)  # a newer keystroke cancels us here, before any work
        started = time.perf_counter()
        # The store's opening waits for this whole answer, not just its context: the first model
        # request imports the HTTP stack (~0.3 s), and LanceDB's open would compete with it.
        try:
            context = await self._ls.context(folder, record.uri, rel, text, line, column, answers=False)
            record.timings["context_ms"] = (time.perf_counter() - started) * 1000
            if context is not None:
                record.used(context, budget=True)
            completion = await self._ls.session(folder).completer.complete(
                rel, text, line, column, context=context, on_delta=deltas.append, on_sent=record.remember
            )
        finally:
            folder.keeper.note_answered()
        record.model = completion.model
        record.timings["ttft_ms"] = completion.timings.get("ttft_ms", 0.0)
        record.timings["backend_total_ms"] = completion.timings.get("total_ms", 0.0)
        if completion.request_id:
            record.audit_id = completion.request_id
        record.timings["total_ms"] = (time.perf_counter() - started) * 1000
        return completion.text

    def report(self, exc: BaseException) -> None:
        """One message per outage; the next one only after a success."""
        if isinstance(exc, BackendNotConfigured):
            self._ls.notices.once(
                "backend",
                "no AI suggestions: no model server configured. In your editor's codectx settings set "
                "backend.url (e.g. http://127.0.0.1:8000/v1); or: " + str(exc),
                types.MessageType.Warning,
            )
        elif isinstance(exc, CodectxError):
            self._ls.notices.once("backend", f"no AI suggestions: {exc}", types.MessageType.Warning)
        else:
            log.error("suggestion crashed", exc_info=exc)
            self._ls.notices.once(
                "backend",
                f"no AI suggestions: internal error {type(exc).__name__}: {exc}",
                types.MessageType.Error,
            )


@dataclass(frozen=True)
class CursorSuggestion:
    """A suggestion for the cursor of one document, with what the handlers need to place it."""

    lines: list[str]
    line: int
    column: int
    codec: Codec
    text: str
    request_id: str


async def suggestion_at(
    ls: CodectxServer, kind: str, uri: str, position: types.Position
) -> CursorSuggestion | None:
    """The shared part of completion and inline completion; None when there is nothing to offer."""
    folder, _path, rel, text = ls.document(uri)
    if not folder.settings.lsp.completion:
        return None
    lines = split_lines(text)
    codec = Codec.of(ls.workspace.position_encoding)
    line, column = clamp(lines, position, codec)
    joined = "\n".join(lines)
    suggestion, request_id = await ls.suggester.suggest(kind, uri, folder, rel, joined, line, column)
    if not suggestion.strip():
        return None
    return CursorSuggestion(lines, line, column, codec, suggestion, request_id)
