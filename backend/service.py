"""The completion and refactor service: the one path every editor or shell request takes.

context (the retriever, when present) -> FIM prompt for the model's family ->
the client (privacy gate, audit, send) -> post-processing. Completions always
stream, so the first-token timeout applies and the stream is closed as soon
as the block or line is complete (vLLM then stops generating). The last
request's context items, findings and exact payload are kept for "show
context" in the editor.

    service = CompletionService(settings, BackendClient(settings), context_provider=provider)
    result = await service.complete("pkg/mod.py", text, line, character)   # 0-based position
    new_code = await service.refactor("pkg/mod.py", text, (l0, c0, l1, c1), "use pathlib")
    prose = await service.explain("pkg/mod.py", text, (l0, c0, l1, c1))
    await service.warm_up()   # optional, at start-up: model name, stop-token ids, scanner warm-up

The LSP passes its own `context=` (assembled in a thread) and `on_delta=` (raw
text pieces as they stream); `result.sent` / `service.last` hold what was sent.

`context_provider(path, text, line, character)` returns a ContextResult-like
object (.items, .prefix, .suffix, .prefix_start_line, .suffix_end_line) or
None; without one the prefix and suffix are cut from the document.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendError, BackendOffline, BackendRejected
from codectx.backend.families import Family, detect_family, get_family
from codectx.backend.postprocess import block_ended, choose_mode, postprocess
from codectx.backend.prompts import (
    FimPrompt,
    Snippet,
    build_fim_prompt,
    document_lines,
    fit_prompt,
    split_document,
    stable_prefix,
)
from codectx.backend.redaction import (
    piece_redactor,
    redact_around_cursor,
    redact_items,
    sendable,
    source_reader,
)
from codectx.backend.refactor import (
    RefactorRequest,
    build_explain_messages,
    build_messages,
    enclosing_scope,
    parse_answer,
    select_span,
    strip_thinking,
)
from codectx.backend.restore import restore_completion, restore_edit, restore_prose

from codectx.errors import UsageError
from codectx.privacy.egress import SourceSpan
from codectx.privacy.pieces import PieceRedactor, Placeholders

# Characters per token, to size the document-only fallback from the token budget.
CHARS_PER_TOKEN = 3.5
PLACEHOLDER_MODEL = "<first model served by backend.url>"
# A made-up redaction token, tokenized once to learn what a placeholder costs in the prompt budget.
PLACEHOLDER_SAMPLE = "[REDACTED:keyword-assignment:0f3a9c1e]"


class ContextLike(Protocol):
    items: Sequence[Any]
    prefix: str
    suffix: str


ContextProvider = Callable[[str, str, int, int], Any]


def source_span(path: str, start_line: int, end_line: int) -> SourceSpan:
    return SourceSpan(path, start_line, end_line)


@dataclass
class Completion:
    text: str  # what the editor inserts (post-processed)
    raw_text: str
    model: str
    mode: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    request_id: str | None  # the audit id of the request
    timings: dict[str, float] = field(default_factory=dict)  # context_ms, ttft_ms, total_ms
    sent: LastRequest | None = None  # this request's payload, items and findings ("show context")

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "raw_text": self.raw_text,
            "model": self.model,
            "mode": self.mode,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "request_id": self.request_id,
            "timings": {k: round(v, 2) for k, v in self.timings.items()},
        }


@dataclass
class LastRequest:
    """What the last request sent and why (for "show context")."""

    kind: str  # "completion", "refactor" or "dry-run"
    path: str
    endpoint: str
    body: bytes  # the exact bytes the gate let out (or would have)
    items: list[dict[str, Any]]
    findings: list[Any]
    audit_id: str | None
    prompt: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "endpoint": self.endpoint,
            "bytes": len(self.body),
            "body": self.body.decode("utf-8", errors="replace"),
            "items": self.items,
            "findings": [getattr(f, "as_dict", lambda f=f: str(f))() for f in self.findings],
            "audit_id": self.audit_id,
        }


@dataclass
class DryRun:
    body: bytes
    endpoint: str
    audit_id: str | None
    prompt: FimPrompt


class CompletionService:
    """Completions and refactors for one workspace; share one instance (it holds the connection pool)."""

    def __init__(
        self,
        settings: Any,
        client: BackendClient,
        gate: Any = None,
        context_provider: ContextProvider | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        if gate is not None and gate is not client.gate:
            raise ValueError("CompletionService: pass the client's own gate (BackendClient(settings, gate))")
        self.context_provider = context_provider
        self.last: LastRequest | None = None
        root = getattr(settings, "root", None)
        self.repo_name = root.name if root is not None else "repo"
        self.notes: list[str] = []  # what restoring the last edit's placeholders had to do
        # path -> that file's text now, for scanning around retrieved chunks (the LSP passes open buffers)
        self.read_open: Callable[[str], str | None] | None = None
        self._placeholder_chars: float | None = None
        self._shrink = 1.0  # learned when the server said a prompt was over its context length

    def pieces(self) -> PieceRedactor | None:
        """A fresh piece redactor for one request (None when privacy.redact is off)."""
        pieces = piece_redactor(self.client.gate, self.settings)
        if pieces is not None:
            pieces.deadline = time.monotonic() + float(self.settings.privacy.scan_timeout_s)
        return pieces

    def source_reader(self, path: str, text: str) -> Callable[[str], str | None]:
        on_disk = source_reader(getattr(self.settings, "root", None), (path, text))
        opened = self.read_open

        def read(other: str) -> str | None:
            if opened is not None and other != path:
                found = opened(other)
                if found is not None:
                    return found
            return on_disk(other)

        return read

    async def family(self) -> tuple[str, Family]:
        model = await self.client.model()
        return model, detect_family(model, self.settings.backend.family)

    async def warm_up(self) -> None:
        """Do the once-per-process work before the first keystroke: the model name, stop-token ids,
        and the privacy scanner's first (slow) run. Sends no code."""
        _, family = await self.family()
        await self.stop_options(family)
        self.client.gate.prepare("warm-up", {"prompt": "def f():\n    return 1\n"}, [])

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

    def _context(self, path: str, text: str, line: int, character: int, context: Any) -> Any:
        if context is None and self.context_provider is not None:
            context = self.context_provider(path, text, line, character)
        return context

    async def max_prompt_chars(self) -> int | None:
        """Room for the prompt in characters, from the server's context length (None: no limit known)."""
        limit = await self.client.context_limit()
        if limit is None:
            return None
        # 15% headroom: the user's code may tokenize less densely than the sample.
        ratio = await self.client.chars_per_token() * 0.85
        if self._placeholder_chars is None:
            self._placeholder_chars = await self._placeholder_cost(ratio)
        return max(256, int((limit - int(self.settings.backend.max_tokens) - 32) * ratio * self._shrink))

    async def _placeholder_cost(self, ratio: float) -> float:
        """Budget characters one redaction placeholder uses: its tokens (a placeholder tokenizes far
        more densely than code) times characters per token. Only a made-up placeholder is sent."""
        try:
            tokens = len(await self.client.tokenize(PLACEHOLDER_SAMPLE))
        except Exception:  # no /tokenize: assume one token per character, the worst case
            tokens = len(PLACEHOLDER_SAMPLE)
        return tokens * ratio

    def build_prompt(
        self,
        family: Family,
        path: str,
        text: str,
        line: int,
        character: int,
        context: Any,
        max_chars: int | None = None,
    ) -> tuple[FimPrompt, list[Any], list[dict[str, Any]], str, str, Placeholders]:
        """(prompt, sources for the gate, item summaries, prefix, suffix, placeholders).

        Every piece is redacted with its own path first; `prefix` and `suffix` are what the model
        sees, and `placeholders` maps each token in the prompt to the text it replaced."""
        if context is not None:
            first = int(getattr(context, "prefix_start_line", 0))
            prefix, first = stable_prefix(text, context.prefix, first, line)
            suffix = context.suffix
            last = int(getattr(context, "suffix_end_line", line))
            items = list(context.items)
        else:
            budget = float(self.settings.retriever.budget_tokens) * CHARS_PER_TOKEN
            prefix, suffix, first, last = split_document(
                text,
                line,
                character,
                prefix_chars=int(budget * self.settings.retriever.prefix_share),
                suffix_chars=int(budget * self.settings.retriever.suffix_share),
            )
            items = []
        items = sendable(items, self.client.gate)
        pieces = self.pieces()
        if pieces is not None:
            # Redacted before fitting: the fit sees the real lengths, so redaction never overruns it.
            prefix, suffix = redact_around_cursor(pieces, path, text, line, character, prefix, suffix)
            items = redact_items(pieces, items, self.source_reader(path, text))
        snippets = [Snippet(i.path, i.start_line, i.end_line, i.text) for i in items]
        if max_chars is not None:
            weight = self._placeholder_chars or float(len(PLACEHOLDER_SAMPLE))
            prefix, suffix, snippets, dropped = fit_prompt(
                prefix, suffix, snippets, max_chars, placeholder_chars=weight
            )
            first += dropped
            items = items[: len(snippets)]
        prompt = build_fim_prompt(
            family, prefix=prefix, suffix=suffix, path=path, repo=self.repo_name, snippets=snippets
        )
        sources = [source_span(path, first, last)] + [
            source_span(s.path, s.start_line, s.end_line) for s in snippets
        ]
        summaries = [
            {
                "path": i.path,
                "start_line": i.start_line,
                "end_line": i.end_line,
                "symbol": getattr(i, "symbol", ""),
                "reason": getattr(i, "reason", ""),
                "tokens": getattr(i, "tokens", 0),
            }
            for i in items
        ]
        return prompt, sources, summaries, prefix, suffix, pieces.placeholders if pieces else Placeholders()

    async def dry_run(
        self, path: str, text: str, line: int, character: int, *, context: Any = None, status: str = "dry-run"
    ) -> DryRun:
        """Build, redact and record the request that `complete` would send; send nothing.

        With a server configured (and not offline) it is asked for its model name and
        stop-token ids, so the body is exactly what `complete` sends; no code leaves.
        """
        b = self.settings.backend
        offline = bool(getattr(self.client.gate, "offline", False))
        if b.model:
            model = b.model
        elif b.url and not offline:
            model = await self.client.model()  # a GET: no code leaves
        else:
            model = PLACEHOLDER_MODEL
        family = detect_family(model, b.family) if model != PLACEHOLDER_MODEL else _configured(b.family)
        context = self._context(path, text, line, character, context)
        max_chars = await self.max_prompt_chars() if b.url and not offline else None
        prompt, sources, summaries, _, _, _ = self.build_prompt(
            family, path, text, line, character, context, max_chars
        )
        stop, extra = await self.stop_options(family, ask_server=bool(b.url) and not offline)
        body = await self.client.completion_body(
            prompt.text, stop=stop, stream=True, model=model, extra=extra
        )
        prepared, audit_id = self.client.dry_run("/v1/completions", body, sources, status=status)
        self.last = LastRequest(
            "dry-run",
            path,
            prepared.endpoint,
            prepared.content,
            summaries,
            list(getattr(prepared, "findings", []) or []),
            audit_id,
            prompt.text,
        )
        return DryRun(prepared.content, prepared.endpoint, audit_id, prompt)

    async def complete(
        self,
        path: str,
        text: str,
        line: int,
        character: int,
        *,
        context: Any = None,
        mode: str = "auto",
        on_delta: Callable[[str], None] | None = None,
    ) -> Completion:
        """A post-processed completion at a 0-based (line, character) of `path` (workspace-relative).

        Offline (privacy.offline): the request is built and logged, then BackendOffline is raised.
        """
        if getattr(self.client.gate, "offline", False):
            dry = await self.dry_run(path, text, line, character, context=context, status="offline")
            raise BackendOffline(
                f"offline mode (privacy.offline): request built and logged "
                f"(audit id {dry.audit_id}), not sent",
                audit_id=dry.audit_id,
                body=dry.body,
            )
        started = time.perf_counter()
        context = self._context(path, text, line, character, context)
        context_ms = (time.perf_counter() - started) * 1000
        model, family = await self.family()
        max_chars = await self.max_prompt_chars()
        stop, extra = await self.stop_options(family)
        for attempt in (1, 2):
            prompt, sources, summaries, prefix, suffix, placeholders = self.build_prompt(
                family, path, text, line, character, context, max_chars
            )
            if mode == "auto":
                mode = choose_mode(prefix, suffix)
            stream = self.client.stream_complete(
                prompt.text, sources=sources, stop=stop, model=model, extra=extra
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
                shrink = _overflow_shrink(exc, int(self.settings.backend.max_tokens))
                if attempt == 2 or shrink is None or max_chars is None:
                    raise
                # The text tokenized more densely than the sample: cut harder, now and from now on.
                self._shrink = min(self._shrink, shrink)
                max_chars = max(256, int(max_chars * shrink))
            finally:
                self.last = LastRequest(
                    "completion",
                    path,
                    getattr(stream.prepared, "endpoint", ""),
                    getattr(stream.prepared, "content", b""),
                    summaries,
                    list(getattr(stream.prepared, "findings", []) or []),
                    stream.audit_id,
                    prompt.text,
                )
        final = postprocess(stream.text, prefix=prefix, suffix=suffix, mode=mode, special=family.special)
        final = restore_completion(final, placeholders)
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
            sent=self.last,
        )

    async def _chat_model(self, what: str) -> str:
        model, family = await self.family()
        if not family.chat:
            raise BackendError(
                f"{what} needs a chat (instruct) model; the {family.name} family served as "
                f"'{model}' has no chat template"
            )
        return model

    async def _chat(
        self, kind: str, path: str, items: list[Any], scope: tuple[int, int], messages: list[dict[str, str]]
    ) -> str:
        model = await self._chat_model(kind)
        sources = [source_span(path, *scope)] + [source_span(i.path, i.start_line, i.end_line) for i in items]
        result = await self.client.chat(messages, sources=sources, model=model)
        self.last = LastRequest(
            kind,
            path,
            getattr(result.prepared, "endpoint", ""),
            getattr(result.prepared, "content", b""),
            [{"path": i.path, "start_line": i.start_line, "end_line": i.end_line} for i in items],
            list(getattr(result.prepared, "findings", []) or []),
            result.audit_id,
            "",
        )
        return result.text

    def _request(
        self, path: str, text: str, selection: tuple[int, int, int, int], instruction: str, context: Any
    ) -> tuple[RefactorRequest, list[Any], str, Placeholders]:
        """(the request as the model sees it, its items, the original selection, placeholders).

        The selection, its scope, the instruction and each item are redacted before the messages are
        built, the selection and scope together (a secret across the selection's edge is masked whole
        in both)."""
        selected, start_line, end_line, (a, b) = select_span(path, text, selection)
        scope_start, scope_end = enclosing_scope(path, text, start_line, end_line)
        rows = document_lines(text)
        sa = sum(len(r) for r in rows[:scope_start])
        sb = sa + sum(len(r) for r in rows[scope_start : scope_end + 1])
        scope = text[sa:sb]
        context = self._context(path, text, start_line, selection[1], context)
        items = sendable(context.items if context is not None else [], self.client.gate)
        pieces = self.pieces()
        sent_selection, sent_scope = selected, scope
        if pieces is not None:
            sent_selection, sent_scope = pieces.document(text, path, [(a, b), (sa, sb)])
            instruction = pieces.echo(pieces.text(instruction, ""))
            items = redact_items(pieces, items, self.source_reader(path, text))
        request = RefactorRequest(
            path, instruction, sent_selection, start_line, end_line, sent_scope, scope_start, scope_end
        )
        return request, items, selected, pieces.placeholders if pieces is not None else Placeholders()

    async def refactor(
        self,
        path: str,
        text: str,
        selection: tuple[int, int, int, int],
        instruction: str,
        *,
        context: Any = None,
    ) -> str:
        """The replacement for `selection` = (start line, start char, end line, end char), 0-based."""
        code, _notes = await self.refactor_edit(path, text, selection, instruction, context=context)
        return code

    async def refactor_edit(
        self,
        path: str,
        text: str,
        selection: tuple[int, int, int, int],
        instruction: str,
        *,
        context: Any = None,
    ) -> tuple[str, list[str]]:
        """(replacement, notes): the model edits the redacted selection; its placeholders are put back
        here. Lines whose placeholders the model dropped or garbled stay as in the file (see notes)."""
        if not instruction.strip():
            raise UsageError("say what the refactor should do (an instruction is required)")
        await self._chat_model("refactoring")
        request, items, original, placeholders = self._request(path, text, selection, instruction, context)
        answer = await self._chat(
            "refactor",
            path,
            items,
            (request.scope_start_line, request.scope_end_line),
            build_messages(request, items),
        )
        code = parse_answer(answer, request.selection)
        code, notes = restore_edit(code, request.selection, original, placeholders)
        self.notes = notes
        return code, notes

    async def explain(
        self, path: str, text: str, selection: tuple[int, int, int, int], *, context: Any = None
    ) -> str:
        """A short explanation (Markdown) of the selected code, with its scope and context."""
        await self._chat_model("explaining code")
        request, items, _, placeholders = self._request(path, text, selection, "", context)
        answer = await self._chat(
            "explain",
            path,
            items,
            (request.scope_start_line, request.scope_end_line),
            build_explain_messages(request, items),
        )
        return restore_prose(strip_thinking(answer), placeholders)

    def redact_span(self, path: str, text: str, start: int, end: int) -> tuple[str, Placeholders]:
        """text[start:end] redacted with the document around it (for callers building their own messages)."""
        pieces = self.pieces()
        if pieces is None:
            return text[start:end], Placeholders()
        return pieces.document(text, path, [(start, end)])[0], pieces.placeholders


_CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+)")
_PROMPT_TOKENS = re.compile(r"(?:contains at least|contains|requested) (\d+) (?:input )?tokens")


def _overflow_shrink(exc: BackendRejected, max_tokens: int) -> float | None:
    """The factor a prompt must shrink by, from a server's "over the context length" answer, or None."""
    text = f"{exc} {getattr(exc, 'server_message', '')}"
    limit, used = _CONTEXT_LIMIT.search(text), _PROMPT_TOKENS.search(text)
    if exc.status != 400 or limit is None or used is None:
        return None
    room = int(limit.group(1)) - max_tokens - 32
    return max(0.1, min(0.95, room / max(1, int(used.group(1))) * 0.9))


def _configured(name: str) -> Family:
    return get_family("qwen" if name in ("", "auto") else name)
