"""Completions at a cursor: the fill-in-the-middle prompt, the stream, post-processing.

context (assembled by the retriever, or cut from the document when there is none) -> each piece
redacted with its own path (codectx.app.redaction) -> the prompt fitted to the server's context
length -> the family's FIM prompt (codectx.backend.prompts) -> the client (privacy gate, audit,
send) -> post-processing and placeholder restoration. Completions always stream, so the
first-token timeout applies and the stream is closed as soon as the block or line is complete
(vLLM then stops generating).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codectx.app.index import AssembledContext, RankedPiece
from codectx.app.model import ServedModel, source_span
from codectx.app.redaction import RequestRedaction, cursor_offset, redact_around_cursor, redact_items
from codectx.app.restore import foreign, restore_completion, restored_values, unprotected
from codectx.app.results import Completion, DryRun, SentRequest
from codectx.backend.errors import BackendOffline, BackendRejected, BackendTimeout, BackendUnavailable
from codectx.backend.families import Family, detect_family, get_family
from codectx.backend.postprocess import block_ended, choose_mode, postprocess
from codectx.backend.prompts import (
    FimPrompt,
    Snippet,
    build_fim_prompt,
    fit_prompt,
    split_document,
    stable_prefix,
)
from codectx.backend.textstream import TextStream
from codectx.privacy.egress import SourceSpan
from codectx.privacy.pieces import Placeholders
from codectx.settings import Settings

log = logging.getLogger(__name__)

# Characters per token, to size the document-only fallback from the token budget.
CHARS_PER_TOKEN = 3.5
PLACEHOLDER_MODEL = "<first model served by backend.url>"
# A made-up redaction token, tokenized once to learn what a placeholder costs in the prompt budget.
PLACEHOLDER_SAMPLE = "[REDACTED:keyword-assignment:0f3a9c1e]"

Remember = Callable[[SentRequest], None]


@dataclass(frozen=True)
class CompletionAsk:
    """Where a completion is asked for: a 0-based (line, character) of `path` (workspace-relative),
    the document's `text`, and the context assembled for it (None: the document alone)."""

    path: str
    text: str
    line: int
    character: int
    context: AssembledContext | None = None


@dataclass(frozen=True)
class BuiltPrompt:
    """A completion prompt and what went into it."""

    prompt: FimPrompt
    sources: list[SourceSpan]  # for the audit log: the document's window, then each snippet
    items: list[dict[str, Any]]  # the context items that made it in (for "show context")
    prefix: str  # what the model sees around the cursor (redacted)
    suffix: str
    placeholders: Placeholders  # each redaction token in the prompt -> the text it replaced


def summary(item: RankedPiece) -> dict[str, Any]:
    return {
        "path": item.path,
        "start_line": item.start_line,
        "end_line": item.end_line,
        "symbol": item.symbol,
        "reason": item.reason,
        "tokens": item.tokens,
    }


class Completer:
    """The completion pipeline of one session; it learns the server's prompt budget as it goes."""

    def __init__(
        self, settings: Settings, model: ServedModel, redaction: RequestRedaction, remember: Remember
    ) -> None:
        self.settings = settings
        self.model = model
        self.client = model.client
        self.redaction = redaction
        self.remember = remember
        self.repo_name = settings.root.name if settings.root is not None else "repo"
        self.placeholder_chars: float | None = None  # budget characters one placeholder costs
        self._shrink = 1.0  # learned when the server said a prompt was over its context length

    async def warm_up(self) -> None:
        """The once-per-process work before the first keystroke: the server's answers
        (`ask_server`) and the privacy scanner's first (slow) run. Sends no code."""
        await self.ask_server()
        self.client.gate.prepare("warm-up", {"prompt": "def f():\n    return 1\n"}, [])

    async def ask_server(self) -> None:
        """What the first completion would otherwise ask the server before its request (the model
        name, stop-token ids, the prompt's room): remembered, so it need not wait for them. Only
        built-in samples are sent, never code. Nothing is asked offline or without a server."""
        if self.settings.privacy.offline or not self.settings.backend.url:
            return
        _, family = await self.model.family()
        await self.stop_options(family)
        await self.max_prompt_chars()

    async def stop_options(self, family: Family, ask_server: bool = True) -> tuple[list[str], dict[str, Any]]:
        """(stop strings, extra body fields): special stop tokens go as `stop_token_ids`.

        vLLM drops special tokens from the text before matching `stop` strings,
        so those can never fire; ids always do. Tokens the server cannot map
        stay stop strings, with special tokens kept in the text so they match.
        """
        extra = dict(family.request)
        ids = await self.client.special_token_ids(family.stop) if ask_server else {}
        if ids:
            extra["stop_token_ids"] = list(ids.values())
        strings = [s for s in family.stop if s not in ids]
        if strings:
            extra["skip_special_tokens"] = False
        return strings, extra

    async def max_prompt_chars(self) -> int | None:
        """Room for the prompt in characters, from the server's context length (None: no limit known)."""
        limit = await self.client.context_limit()
        if limit is None:
            return None
        # 15% headroom: the user's code may tokenize less densely than the sample.
        ratio = await self.client.chars_per_token() * 0.85
        if self.placeholder_chars is None:
            self.placeholder_chars = await self._placeholder_cost(ratio)
        return max(256, int((limit - self.settings.backend.max_tokens - 32) * ratio * self._shrink))

    async def _placeholder_cost(self, ratio: float) -> float:
        """Budget characters one redaction placeholder uses: its tokens (a placeholder tokenizes far
        more densely than code) times characters per token. Only a made-up placeholder is sent."""
        try:
            tokens = len(await self.client.tokenize(PLACEHOLDER_SAMPLE))
        except Exception:  # no /tokenize: assume one token per character, the worst case
            tokens = len(PLACEHOLDER_SAMPLE)
        return tokens * ratio

    def build_prompt(self, family: Family, ask: CompletionAsk, max_chars: int | None = None) -> BuiltPrompt:
        """The prompt for a cursor; every piece is redacted with its own path first."""
        path, text, line, character, context = ask.path, ask.text, ask.line, ask.character, ask.context
        found: list[RankedPiece] = []
        if context is not None:
            prefix, first = stable_prefix(text, context.prefix, context.prefix_start_line, line)
            suffix, last = context.suffix, context.suffix_end_line
            found = list(context.items)
        else:
            budget = self.settings.retriever.budget_tokens * CHARS_PER_TOKEN
            prefix, suffix, first, last = split_document(
                text,
                line,
                character,
                prefix_chars=int(budget * self.settings.retriever.prefix_share),
                suffix_chars=int(budget * self.settings.retriever.suffix_share),
            )
        found = self.redaction.sendable(found)
        snippets = [Snippet(i.path, i.start_line, i.end_line, i.text) for i in found]
        pieces = self.redaction.pieces()
        if pieces is not None:
            # Redacted before fitting: the fit sees the real lengths, so redaction never overruns it.
            prefix, suffix = redact_around_cursor(pieces, path, text, line, character, prefix, suffix)
            snippets = redact_items(pieces, found, self.redaction.reader(path, text))
        if max_chars is not None:
            weight = self.placeholder_chars or float(len(PLACEHOLDER_SAMPLE))
            prefix, suffix, snippets, dropped = fit_prompt(
                prefix, suffix, snippets, max_chars, placeholder_chars=weight
            )
            first += dropped
            found = found[: len(snippets)]
        prompt = build_fim_prompt(
            family, prefix=prefix, suffix=suffix, path=path, repo=self.repo_name, snippets=snippets
        )
        sources = [source_span(path, first, last)]
        sources += [source_span(s.path, s.start_line, s.end_line) for s in snippets]
        placeholders = pieces.placeholders if pieces is not None else Placeholders()
        return BuiltPrompt(prompt, sources, [summary(i) for i in found], prefix, suffix, placeholders)

    async def dry_run(
        self, ask: CompletionAsk, status: str = "dry-run", on_sent: Remember | None = None
    ) -> DryRun:
        """Build, redact and record the request that `complete` would send; send nothing.

        With a server configured (and not offline) it is asked for its model name and
        stop-token ids, so the body is exactly what `complete` sends; no code leaves.
        """
        b = self.settings.backend
        ask_server = bool(b.url) and not self.client.gate.offline
        model, max_chars, note = b.model or PLACEHOLDER_MODEL, None, ""
        if ask_server:
            try:
                model = b.model or await self.client.model()  # GETs: no code leaves
                max_chars = await self.max_prompt_chars()
            except (BackendUnavailable, BackendTimeout) as exc:
                # A dry run shows what would be sent; a server that is down should not hide it.
                ask_server = False
                note = f"the model server did not answer ({exc}); the body uses the configured defaults"
        family = detect_family(model, b.family) if model != PLACEHOLDER_MODEL else _configured(b.family)
        built = self.build_prompt(family, ask, max_chars)
        stop, extra = await self.stop_options(family, ask_server=ask_server)
        body = await self.client.completion_body(
            built.prompt.text, stop=stop, stream=True, model=model, extra=extra
        )
        prepared, audit_id = self.client.dry_run("/v1/completions", body, built.sources, status=status)
        sent = SentRequest.of("dry-run", ask.path, prepared, built.items, audit_id, built.prompt.text)
        self.remember(sent)
        if on_sent is not None:
            on_sent(sent)
        return DryRun(prepared.content, prepared.endpoint, audit_id, built.prompt, note)

    def _guard(
        self, ask: CompletionAsk, raw: str, placeholders: Placeholders
    ) -> Callable[[str], set[str]] | None:
        """restored completion -> the secrets it must not put back (restore.py): another file's (the
        document does not hold them), or one it would put where no rule finds it."""
        if "[REDACTED:" not in raw:
            return None
        shown = self.redaction.shown(ask.path)
        at = cursor_offset(ask.text, ask.line, ask.character)
        values = restored_values(raw, placeholders).values()
        others = foreign(ask.text, values)

        def exposed(restored: str) -> set[str]:
            if shown is None:
                return others
            return others | unprotected(ask.text, ask.text[:at] + restored + ask.text[at:], values, shown)

        return exposed

    async def complete(
        self,
        path: str,
        text: str,
        line: int,
        character: int,
        context: AssembledContext | None,
        *,
        mode: str = "auto",
        on_delta: Callable[[str], None] | None = None,
        context_ms: float = 0.0,
        on_sent: Remember | None = None,
    ) -> Completion:
        """A post-processed completion at a 0-based (line, character) of `path` (workspace-relative).

        `context_ms`: how long assembling `context` took (it counts in the completion's timings).
        `on_sent` gets what was sent as soon as the request is over, also when it failed or was
        cancelled.
        Offline (privacy.offline): the request is built and logged, then BackendOffline is raised.
        """
        ask = CompletionAsk(path, text, line, character, context)
        if self.client.gate.offline:
            dry = await self.dry_run(ask, "offline", on_sent)
            raise BackendOffline(
                f"offline mode (privacy.offline): request built and logged "
                f"(audit id {dry.audit_id}), not sent",
                audit_id=dry.audit_id,
                body=dry.body,
            )
        started = time.perf_counter() - context_ms / 1000
        model, family = await self.model.family()
        max_chars = await self.max_prompt_chars()
        stop, extra = await self.stop_options(family)
        for attempt in (1, 2):
            built = self.build_prompt(family, ask, max_chars)
            prefix, suffix = built.prefix, built.suffix
            if mode == "auto":
                mode = choose_mode(prefix, suffix)
            stream = self.client.stream_complete(
                built.prompt.text, sources=built.sources, stop=stop, model=model, extra=extra
            )
            try:
                async with stream:
                    async for delta in stream:
                        if on_delta is not None:
                            on_delta(delta)
                        maybe_done = "\n" in delta or any(t[:1] in delta for t in family.special)
                        if maybe_done and block_ended(
                            stream.text, prefix=prefix, suffix=suffix, mode=mode, special=family.special
                        ):
                            break  # leaving the block closes the stream: the server stops generating
                break
            except BackendRejected as exc:
                limit = await self.client.context_limit()
                shrink = _overflow_shrink(exc, self.settings.backend.max_tokens, limit)
                if attempt == 2 or shrink is None or max_chars is None:
                    raise
                # The text tokenized more densely than the sample: cut harder, now and from now on.
                log.info(
                    "the model server refused a %d-character prompt as over its context (%s); "
                    "cutting it to %.2f of that",
                    len(built.prompt.text),
                    exc.server_message[:200],
                    shrink,
                )
                self._shrink = min(self._shrink, shrink)
                # Cut from what was sent, not from the budget: a prompt under its budget can
                # still be too many tokens.
                max_chars = max(256, int(min(max_chars, len(built.prompt.text)) * shrink))
            finally:
                sent = _sent("completion", path, stream, built)
                self.remember(sent)
                if on_sent is not None:
                    on_sent(sent)
        final = postprocess(stream.text, prefix=prefix, suffix=suffix, mode=mode, special=family.special)
        final = restore_completion(final, built.placeholders, self._guard(ask, final, built.placeholders))
        usage = stream.usage
        return Completion(
            text=final,
            raw_text=stream.text,
            model=stream.model or model,
            mode=mode,
            finish_reason=stream.finish_reason or ("block_end" if stream.text else None),
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            request_id=stream.audit_id,
            timings={
                "context_ms": context_ms,
                "ttft_ms": (stream.ttft_s or 0.0) * 1000,
                "total_ms": (time.perf_counter() - started) * 1000,
            },
            sent=sent,
        )


def _sent(kind: str, path: str, stream: TextStream, built: BuiltPrompt) -> SentRequest:
    return SentRequest.of(kind, path, stream.prepared, built.items, stream.audit_id, built.prompt.text)


_CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+)")
_PROMPT_TOKENS = re.compile(r"(?:contains at least|contains|requested) (\d+) (?:input )?tokens")
# vLLM clamps max_tokens to the room the prompt leaves; a prompt that fills the whole window
# leaves none and is refused with this message instead of the context-length one.
_NO_ROOM = re.compile(r"max_tokens must be at least 1, got (-?\d+)")
_INPUT_OVER = re.compile(r"Input length \((\d+)\) exceeds model's maximum context length \((\d+)\)")


def _overflow_shrink(exc: BackendRejected, max_tokens: int, limit: int | None = None) -> float | None:
    """The factor a prompt must shrink by, from a server's "over the context length" answer, or None.

    `limit` is the server's context length as /v1/models reported it: the "no room left for the
    answer" refusal does not repeat it."""
    text = f"{exc} {exc.server_message}"
    if exc.status != 400:
        return None
    stated, used = _CONTEXT_LIMIT.search(text), _PROMPT_TOKENS.search(text)
    over = _INPUT_OVER.search(text)
    if stated is not None and used is not None:
        window, prompt = int(stated.group(1)), int(used.group(1))
    elif over is not None:
        window, prompt = int(over.group(2)), int(over.group(1))
    elif _NO_ROOM.search(text) is not None and limit is not None:
        window, prompt = limit, limit  # the prompt took the whole window
    else:
        return None
    room = window - max_tokens - 32
    return max(0.1, min(0.95, room / max(1, prompt) * 0.9))


def _configured(name: str) -> Family:
    return get_family("qwen" if name in ("", "auto") else name)
