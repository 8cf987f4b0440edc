"""Chat: multi-turn conversations about the workspace, one service for every surface.

    chat = ChatService()                                   # conversations under the state folder
    conv = chat.start("Reports")
    result = await chat.send(session, conv.conversation_id, TurnInput("How does scale work?"),
                             on_delta=print, on_notice=lambda kind, msg, turn_id: ...)
    chat.cancel(conv.conversation_id)                      # closes the stream: vLLM aborts

A turn: its context is gathered (codectx.app.chat_context, in a worker thread), each piece
redacted with its own path; the history is fitted into the server's `max_model_len` with the
answer's reserve kept (older turns summarised by the model through the same gate, or dropped,
and the user told; the system prompt and the new turn are never dropped); the messages stream
through the client (the privacy gate and the audit log, as for completions); placeholders the
model repeats are put back in what the user sees, never in what later turns resend.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from codectx.app import chat_prompt as prompt
from codectx.app.chat_apply import apply_block, target_refusal
from codectx.app.chat_context import Gathered, Gatherer, Piece, Span, TurnInput
from codectx.app.chat_model import (
    UNTITLED,
    Citation,
    CodeBlock,
    Conversation,
    Turn,
    TurnResult,
    blocks_of,
    markdown,
    now,
)
from codectx.app.chat_store import ChatStore, UnknownConversation
from codectx.app.chat_stream import OnDelta, Running, answer_tokens, context_budget, record_of, stream_answer
from codectx.app.documents import DocumentCache
from codectx.app.model import source_span
from codectx.app.refactor import EditRefused
from codectx.app.restore import (
    FOREIGN_WHY,
    foreign,
    placeholders_between,
    restore_prose,
    restored_values,
    unprotected,
)
from codectx.app.session import WorkspaceSession
from codectx.backend.errors import BackendError
from codectx.errors import CodectxError, UsageError
from codectx.privacy.egress import SourceSpan
from codectx.privacy.pieces import Placeholders

log = logging.getLogger(__name__)

OnNotice = Callable[[str, str, "str | None"], None]  # (kind, message, turn id or None)
MARGIN = 48  # tokens kept free beyond the estimate (the estimate is not exact)

__all__ = ["ChatService", "TurnInput", "UnknownConversation", "apply_block"]


class Busy(CodectxError):
    """A turn of the conversation is still running."""


@dataclass
class _Fitted:
    messages: list[dict[str, str]]
    pieces: list[Piece]
    content: str
    notices: list[tuple[str, str]] = field(default_factory=list)


class ChatService:
    """Conversations (saved in a ChatStore) and the turns that run on a WorkspaceSession."""

    def __init__(self, store: ChatStore | None = None) -> None:
        self.store = store if store is not None else ChatStore()
        self.running: dict[str, Running] = {}
        self.placeholders: dict[str, Placeholders] = {}  # per conversation, this process only
        # Tokens the server counted per estimated token, per model (learnt from each answer's usage):
        # the estimate from characters per token is low on text unlike code.
        self.token_factor: dict[str, float] = {}
        self.documents = DocumentCache()  # workspace files' texts, kept across turns
        self._redactor: Any = None  # for exports, made on first use

    # ---- conversations ----------------------------------------------------------------------

    def start(self, title: str | None = None) -> Conversation:
        return self.store.create(title)

    def get(self, conversation_id: object) -> Conversation:
        return self.store.get(conversation_id)

    def conversations(self) -> list[Conversation]:
        return self.store.all()

    def delete(self, conversation_id: object) -> bool:
        self.cancel(conversation_id)
        return self.store.delete(conversation_id)

    def export(self, conversation_id: object) -> str:
        """The conversation as Markdown to share (chat_model.markdown): answers with their
        placeholders, questions as the requests had them (those stored before that was kept, and
        the title, redacted here with the user-level settings)."""
        return markdown(self.store.get(conversation_id), self._redacted)

    def _redacted(self, text: str) -> str:
        if self._redactor is None:
            from codectx.privacy.redact import Redactor
            from codectx.settings import load_settings

            self._redactor = Redactor(load_settings(None, {}))
        shown: str = self._redactor.redact(text, "").text
        return shown

    def record(self, conversation_id: object, turn_id: str) -> dict[str, Any]:
        """What a turn sent (the fields of the language server's request record)."""
        turn = self.store.get(conversation_id).turn(turn_id)
        if turn is None or turn.role != "assistant" or not turn.record:
            raise CodectxError(f"no answered turn {turn_id!r} in this conversation")
        return turn.record

    def cancel(self, conversation_id: object) -> bool:
        """Stop the running turn (its stream is closed, so the engine aborts); False if none ran."""
        running = self.running.get(str(conversation_id))
        if running is None:
            return False
        running.stopped = True
        if running.task is not None:
            running.task.cancel()
        return True

    def apply(
        self,
        conversation_id: object,
        turn_id: str,
        index: int,
        path: str,
        text: str,
        selection: tuple[int, int, int, int] | None,
        shown: Callable[[str], str] | None,
    ) -> tuple[str, list[str]]:
        """(the whole file after applying block `index` of an answer, warnings); EditRefused when the
        result does not parse, or when `path` is never a target (chat_apply.target_refusal: under
        `.git/`, never-send; the surface judges it with the folder's settings before it reads the
        file, this with the built-in list).

        `shown` (text -> as a request would send it; None only when privacy.redact is off) checks
        the secrets the block puts back (restore.py). A secret is written only into a file that
        holds that value already (the file it came from): one from another file (a git-ignored
        `local_settings.py`, the question) could land in a tracked file and be committed, so it
        keeps its placeholder in the block, and a warning says so. One the model moved where no
        rule finds it keeps its placeholder too, with its own warning. When the block's secrets
        cannot be told apart (no mapping in memory after a restart, and the stored texts do not
        align), all of them keep their placeholders: unchecked, none is written."""
        refused = target_refusal(path, None)
        if refused:
            raise EditRefused(refused)
        turn = self.store.get(conversation_id).turn(turn_id)
        if turn is None or turn.role != "assistant" or not 0 <= index < len(turn.blocks):
            raise CodectxError(f"turn {turn_id!r} has no code block {index!r}")
        block = turn.blocks[index]
        raw_blocks = blocks_of(turn.sent) if turn.sent else []
        raw = raw_blocks[index] if len(raw_blocks) == len(turn.blocks) else None
        if shown is None or (raw is not None and raw.text == block.text):
            return apply_block(block, path, text, selection)  # nothing was put back in this block
        if raw is None:
            raise EditRefused(
                "codectx cannot tell which secrets this code block puts back (the stored answer "
                "does not match what the model sent); nothing was changed"
            )
        put_back = self._put_back(conversation_id, raw.text, block.text)
        if put_back is None:
            new, warnings = apply_block(raw, path, text, selection)
            warnings.append(
                "the redacted secrets in this block were left as placeholders: codectx could not tell "
                "them apart to check where they go; put the values in yourself"
            )
            return new, warnings
        return _checked(block, raw, put_back, path, text, selection, shown)

    def _put_back(self, conversation_id: object, raw: str, restored: str) -> Placeholders | None:
        """What restoring `raw` (a block as the model sent it) into `restored` put back: from this
        process's mapping when it made the answer, else from the two texts; None if unsure."""
        known = self.placeholders.get(str(conversation_id))
        if known is not None:
            mapping = restored_values(raw, known)
            if restore_prose(raw, Placeholders(mapping)) == restored:
                return Placeholders(mapping)
        return placeholders_between(raw, restored)

    # ---- a turn ---------------------------------------------------------------------------------

    async def send(
        self,
        session: WorkspaceSession,
        conversation_id: object,
        turn: TurnInput,
        *,
        on_delta: OnDelta | None = None,
        on_notice: OnNotice | None = None,
        uri: str = "",
        before: Callable[[], Awaitable[None]] | None = None,
    ) -> TurnResult:
        """Run one turn. `before` is awaited first, as part of the turn (the language server waits
        there for the first index), so a cancel while it runs stops the turn like any other."""
        conv = self.store.get(conversation_id)
        cid = conv.conversation_id
        if not turn.message.strip():
            raise UsageError("the message is empty")
        if cid in self.running:
            raise Busy("a turn of this conversation is still running; stop it or wait for it")
        running = self.running[cid] = Running()

        async def whole() -> TurnResult:
            if before is not None:
                await before()
            return await self._turn(session, conv, turn, running, on_delta, on_notice, uri)

        work = asyncio.ensure_future(whole())
        try:
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                # The caller was cancelled ($/cancelRequest), perhaps while the context was still
                # being gathered: stop the turn as codectx/chat/cancel does, so the caller still
                # gets a result with `cancelled` and the conversation keeps the stopped turn.
                self.cancel(cid)
                return await work
        finally:
            self.running.pop(cid, None)

    async def _turn(
        self,
        session: WorkspaceSession,
        conv: Conversation,
        turn: TurnInput,
        running: Running,
        on_delta: OnDelta | None,
        on_notice: OnNotice | None,
        uri: str,
    ) -> TurnResult:
        started = time.monotonic()
        client = session.client
        served = await session.model.chat_model("chat")
        limit = await client.context_limit()
        base_ratio = await client.chars_per_token() * 0.85
        ratio = base_ratio / self.token_factor.get(served, 1.0)
        reserve = answer_tokens(session.settings.backend.chat_max_tokens, limit)
        budget = context_budget(session.settings, limit, reserve)
        pieces = session.redaction.pieces()
        kept = prompt.kept_turns(conv)
        users = [t for t in kept if t.role == "user"]
        turn.previous = users[-1].text if users else ""
        already: set[Span] = {
            (c.path, c.start_line, c.end_line) for t in kept if t.role == "assistant" for c in t.citations
        }
        gatherer = Gatherer(
            session,
            client.gate,
            pieces,
            budget,
            ratio,
            already,
            session.settings.root,
            session.settings.privacy.scan_timeout_s,
            self.documents,
            session.redaction.read_open,
        )
        # Stopped already (while `before` ran): nothing will be sent, so nothing is gathered.
        gathered = (
            Gathered(budget=budget) if running.stopped else await asyncio.to_thread(gatherer.gather, turn)
        )
        notices: list[str] = []

        def tell(kind: str, message: str, turn_id: str | None) -> None:
            notices.append(message)
            if on_notice is not None:
                on_notice(kind, message, turn_id)

        for kind, message in gathered.notices:
            tell(kind, message, None)
        question = gatherer.redact(turn.message.strip(), "")
        # Stopped while gathering: nothing will be sent, so no compaction request either.
        window = None if running.stopped else limit
        fitted = await self._fit(session, conv, question, gathered.pieces, window, reserve, ratio, served)
        n = conv.user_turns + 1
        turn_id = f"a{n}"
        for kind, message in fitted.notices:
            tell(kind, message, None)
        user = Turn(f"u{n}", "user", turn.message.strip(), sent=fitted.content, shown=question)
        known = self.placeholders.setdefault(conv.conversation_id, Placeholders())
        if pieces is not None:
            for token, original in pieces.placeholders.originals.items():
                known.add(token, original)
        # The audit names every file whose lines the body carries: this turn's pieces, and those of
        # the earlier turns the history sends again.
        sources = _sources(fitted.pieces, prompt.kept_turns(conv))
        context_ms = (time.monotonic() - started) * 1000
        outcome = await stream_answer(
            session, fitted.messages, sources, reserve, served, turn_id, known, running, on_delta
        )
        if outcome.error and not outcome.raw:
            raise outcome.failure or CodectxError(outcome.error)
        if outcome.usage[0] > 0:
            estimated = prompt.estimate(fitted.messages, base_ratio)
            self.token_factor[served] = max(1.0, outcome.usage[0] / max(estimated, 1))
        if outcome.error:
            tell("error", f"the model server failed during the answer: {outcome.error}", turn_id)
        text = restore_prose(outcome.raw, known)
        citations = [Citation(p.path, p.start_line, p.end_line, p.reason, p.symbol) for p in fitted.pieces]
        answer = Turn(
            turn_id,
            "assistant",
            text,
            citations=citations,
            blocks=blocks_of(text),
            notices=list(notices),
            cancelled=outcome.cancelled,
            sent=outcome.raw,
        )
        tokens = sum(gatherer.cost(p.text) for p in fitted.pieces)
        answer.record = record_of(turn, uri, answer, outcome, fitted.pieces, budget, tokens, served)
        answer.record["timings"] = {"context_ms": round(context_ms, 1), **outcome.timings}
        if n == 1 and conv.title == UNTITLED:
            # As the request had it: a token pasted into the question is masked (masked, then cut,
            # so that no secret is cut where its rule would no longer see it).
            conv.title = question.split("\n", 1)[0][:60]
        conv.turns += [user, answer]
        conv.updated_at = now()
        self.store.save(conv)
        usage = outcome.usage
        return TurnResult(
            conv.conversation_id,
            answer,
            notices,
            outcome.audit_id,
            usage[0],
            usage[1],
            tokens,
            budget,
            outcome.error,
        )

    async def _fit(
        self,
        session: WorkspaceSession,
        conv: Conversation,
        question: str,
        pieces: list[Piece],
        limit: int | None,
        reserve: int,
        ratio: float,
        served: str,
    ) -> _Fitted:
        """The messages of the new turn within the window: older turns compacted (a model summary),
        else dropped; then the turn's own context cut from its end. Changes `conv` when it compacts."""
        pieces = list(pieces)
        notices: list[tuple[str, str]] = []

        def build() -> _Fitted:
            content = prompt.user_content(question, pieces)
            messages = [*prompt.history(conv), {"role": "user", "content": content}]
            return _Fitted(messages, list(pieces), content, notices)

        fitted = build()
        if limit is None:
            return fitted
        room = limit - reserve - MARGIN
        for keep_last in (True, False):
            if prompt.estimate(fitted.messages, ratio) <= room:
                return fitted
            count = prompt.older_turns(conv, keep_last)
            if count == 0:
                continue
            first, last = conv.first_kept, conv.first_kept + count
            summary = await self._summarise(session, conv, count, limit, ratio, served)
            a, b = first // 2 + 1, max(first // 2 + 1, last // 2)
            span = f"older turns {a}-{b} were" if b > a else f"older turn {a} was"
            window = f"to fit the model's {limit}-token window"
            if summary:
                conv.summary, conv.first_kept = summary, last
                notices.append(("compacted", f"{span} summarised {window}"))
            else:
                conv.first_kept = last
                notices.append(("dropped", f"{span} dropped {window}"))
            fitted = build()
        cut = 0

        def too_big() -> bool:
            return prompt.estimate(fitted.messages, ratio) > room

        # What goes first: implicit snippets (from the end), then the summary, then mentioned ones.
        for implicit in (True, False):
            while too_big() and any(_implicit(p) or not implicit for p in pieces):
                drop = max(i for i, p in enumerate(pieces) if _implicit(p) or not implicit)
                pieces.pop(drop)
                cut += 1
                fitted = build()
            if implicit and too_big() and conv.summary:
                conv.summary = ""
                notices.append(("dropped", "the summary of older turns was dropped to fit the window"))
                fitted = build()
        if cut:
            notices.append(("budget", f"{cut} context snippet(s) left out to fit the model's window"))
        if prompt.estimate(fitted.messages, ratio) > room:
            raise UsageError(f"the question is too long for the model's {limit}-token window")
        return fitted

    async def _summarise(
        self, session: WorkspaceSession, conv: Conversation, count: int, limit: int, ratio: float, served: str
    ) -> str:
        """The model's summary of the first `count` kept turns, through the privacy gate; "" when
        the request failed (the turns are then dropped)."""
        answer = min(160, max(32, limit // 8))
        messages = prompt.summary_followup(conv, count)
        if prompt.estimate(messages, ratio) + answer + MARGIN > limit:
            room = int((limit - answer - MARGIN - 120) * ratio)
            messages = prompt.summary_messages(conv, count, room)
        sources = _sources([], prompt.kept_turns(conv)[:count])
        try:
            result = await session.client.chat(messages, sources=sources, model=served, max_tokens=answer)
        except BackendError as exc:
            log.info("chat: compaction failed, dropping older turns: %s", exc)
            return ""
        return result.text.strip() or "(no summary)"


def _sources(pieces: Sequence[Piece], turns: Sequence[Turn]) -> list[SourceSpan]:
    """The file spans a request carries: `pieces`, and the snippets of earlier `turns` it sends again
    (the user message before each assistant turn held the lines its citations name), each once."""
    spans = [(p.path, p.start_line, p.end_line) for p in pieces]
    spans += [(c.path, c.start_line, c.end_line) for t in turns if t.role == "assistant" for c in t.citations]
    return [source_span(*span) for span in dict.fromkeys(spans)]


def _implicit(piece: Piece) -> bool:
    """A snippet codectx chose (not one the user mentioned or selected)."""
    return not (piece.reason.startswith("@") or piece.reason == "selection")


def _checked(
    block: CodeBlock,
    raw: CodeBlock,
    put_back: Placeholders,
    path: str,
    text: str,
    selection: tuple[int, int, int, int] | None,
    shown: Callable[[str], str],
) -> tuple[str, list[str]]:
    """`block` applied with only the secrets that may go back: those `path` already holds (the
    file they came from) and that a rule still finds where the block puts them; the others stay
    placeholders (as in `raw`, the block as the model sent it), each kind with its warning."""
    others = foreign(text, put_back.originals.values())
    new, warnings = apply_block(block, path, text, selection)
    held = [o for o in put_back.originals.values() if o not in others]
    exposed = unprotected(text, new, held, shown)
    if not others and not exposed:
        return new, warnings
    kept = Placeholders({t: o for t, o in put_back.originals.items() if o not in others | exposed})
    new, warnings = apply_block(replace(block, text=restore_prose(raw.text, kept)), path, text, selection)
    if others:
        warnings.append(
            f"{len(others)} redacted secret(s) were left as placeholders: {path} does not hold "
            f"them; {FOREIGN_WHY}; put the value in yourself (an environment variable, a secrets file)"
        )
    if exposed:
        warnings.append(
            f"{len(exposed)} redacted secret(s) were left as placeholders: the answer moved them "
            "where codectx would not recognise them as secrets, and the next request would send "
            "them in cleartext; put the value in yourself (an environment variable, a secrets file)"
        )
    return new, warnings
