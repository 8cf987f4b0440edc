"""The model-server client: OpenAI-compatible completions, chat, models, tokenize, metrics.

How to construct and use it (the serving engineer's tests, `backend check`, bench):

    from codectx.settings import load_settings
    from codectx.backend.client import BackendClient, parse_metrics

    settings = load_settings(None, {"backend.url": "http://127.0.0.1:8000/v1"})
    async with BackendClient(settings) as client:           # gate=None: the privacy EgressGate
        names = await client.models()                        # GET /v1/models
        result = await client.complete(prompt, max_tokens=16, stop=["<|endoftext|>"])
        result.text, result.finish_reason, result.usage.completion_tokens, result.ttft_s
        async with client.stream_complete(prompt, max_tokens=32) as stream:
            async for delta in stream:                       # text deltas as they arrive
                ...
        stream.text, stream.finish_reason, stream.usage, stream.ttft_s, stream.audit_id  # after the block
        answer = await client.chat([{"role": "user", "content": "hi"}])
        count = len(await client.tokenize("def f(): pass"))  # POST /tokenize (server root)
        ids = await client.special_token_ids(["<|endoftext|>", "<|file_sep|>"])  # for stop_token_ids
        metrics = parse_metrics(await client.metrics_text())  # GET /metrics (server root)

Cancelling the task that iterates a stream (or leaving its `async with`)
closes the HTTP response at once, so vLLM aborts the request. The prompt is
sent raw to /v1/completions (FIM prompts are built by codectx.backend.prompts,
never by a chat template). Every POST goes through the privacy gate in
codectx.backend.transport; errors are codectx.backend.errors exceptions.
`BackendClient(settings, http_transport=httpx.MockTransport(...))` is for unit tests.
Options of complete/stream_complete/chat: max_tokens, temperature, stop, model, and `extra`
(more body fields, e.g. {"stop_token_ids": [...], "ignore_eos": True}). Editor-level
completions (context, FIM prompt, post-processing) are codectx.app (WorkspaceSession).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from codectx.backend.errors import (
    BackendNotConfigured,
    BackendOffline,
    BackendProtocolError,
    BackendRejected,
)
from codectx.backend.gate import Gate, Prepared, Sources, default_gate
from codectx.backend.textstream import TextStream
from codectx.backend.transport import Transport
from codectx.backend.wire import Reply, Usage

from codectx.settings import Settings


class RequestOptions(TypedDict, total=False):
    """What a caller may set on one completion or chat request; what it leaves out comes from the
    settings (backend.max_tokens, backend.temperature, backend.model or the server's first model)."""

    max_tokens: int | None
    temperature: float | None
    stop: Sequence[str]
    model: str | None
    extra: dict[str, Any] | None  # more body fields (JSON), e.g. stop_token_ids


@dataclass
class CompletionResult:
    text: str
    finish_reason: str | None
    model: str
    usage: Usage
    audit_id: str | None
    response_id: str | None = None
    ttft_s: float | None = None
    total_s: float = 0.0
    prepared: Prepared | None = None  # the exact (redacted) request the gate let out


class BackendClient:
    """Async client for one OpenAI-compatible server; cheap to construct, close with `aclose()`."""

    def __init__(
        self,
        settings: Settings,
        gate: Gate | None = None,
        *,
        http_transport: Any = None,
        transport: Transport | None = None,
    ) -> None:
        self.settings = settings
        self._gate = gate if gate is not None else (transport.gate if transport is not None else None)
        self._http_transport = http_transport
        self._transport = transport
        self._model: str | None = settings.backend.model
        self._token_ids: dict[tuple[str, tuple[str, ...]], dict[str, int]] = {}
        self._model_info: dict[str, Any] | None = None
        self._chars_per_token: dict[str, float] = {}

    @property
    def configured(self) -> bool:
        return bool(self.settings.backend.url) or self._transport is not None

    @property
    def transport(self) -> Transport:
        """Created on first use, so a client can exist before a server is configured."""
        if self._transport is None:
            if not self.settings.backend.url:
                raise BackendNotConfigured()
            self._transport = Transport(self.settings, self.gate, http_transport=self._http_transport)
        return self._transport

    @property
    def gate(self) -> Gate:
        """The privacy gate every request passes (exists without a server URL)."""
        if self._gate is None:
            self._gate = default_gate(self.settings)
        return self._gate

    def dry_run(
        self, endpoint: str, body: dict[str, Any], sources: Sources = (), *, status: str = "dry-run"
    ) -> tuple[Prepared, str]:
        """Run a body through the gate and record it as not sent: (prepared, audit id). Works unconfigured."""
        if self.settings.backend.url:
            return self.transport.dry_run(endpoint, body, sources, status=status)
        prepared = self.gate.prepare(f"<backend.url>{endpoint}", body, list(sources))
        return prepared, self.gate.record(prepared, False, status)

    def breaker_state(self) -> str | None:
        """The circuit breaker's state ("closed", "open", ...) once a request was made; None before."""
        return None if self._transport is None else str(self._transport.breaker.state)

    def server_recovered(self) -> None:
        """A probe found the server answering: requests need not wait out the breaker's interval."""
        if self._transport is not None:
            self._transport.breaker.success()

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()

    async def __aenter__(self) -> BackendClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- models ----------------------------------------------------------------------------

    async def models(self) -> list[str]:
        data = (await self.transport.get("/v1/models")).json()
        try:
            self._model_info = {str(m["id"]): m for m in data["data"] if isinstance(m, dict)}
            return [str(m["id"]) for m in data["data"]]
        except (KeyError, TypeError):
            raise BackendProtocolError(
                f"/v1/models answered without a model list: {str(data)[:200]}"
            ) from None

    async def context_limit(self) -> int | None:
        """The served model's context length in tokens (vLLM's max_model_len), if the server says."""
        if self._model_info is None:
            try:
                await self.models()
            except (BackendProtocolError, BackendRejected, BackendOffline):
                self._model_info = {}
        info = (self._model_info or {}).get(await self.model(), {})
        limit = info.get("max_model_len") if isinstance(info, dict) else None
        return limit if isinstance(limit, int) and limit > 0 else None

    async def chars_per_token(self) -> float:
        """About how many characters of code make one token for the served model (measured once,
        on a built-in sample, never on the user's code; 2.5 when the server cannot say)."""
        model = await self.model()
        if model not in self._chars_per_token:
            try:
                ids = await self.tokenize(CODE_SAMPLE)
                ratio = len(CODE_SAMPLE) / max(1, len(ids))
            except (BackendProtocolError, BackendRejected, BackendOffline):
                ratio = 2.5
            self._chars_per_token[model] = ratio
        return self._chars_per_token[model]

    async def model(self) -> str:
        """backend.model, else the first model the server serves (asked once)."""
        if self._model is None:
            names = await self.models()
            if not names:
                raise BackendProtocolError("the model server serves no models (/v1/models is empty)")
            self._model = names[0]
        return self._model

    @contextlib.contextmanager
    def _model_check(self) -> Iterator[None]:
        """A 404 for a discovered model name means the server changed models: ask again next time."""
        try:
            yield
        except BackendRejected as exc:
            if exc.status == 404 and self.settings.backend.model is None:
                self._model = None
                self._model_info = None
                self._token_ids.clear()
            raise

    # -- completions -----------------------------------------------------------------------

    async def completion_body(
        self, prompt: str, *, stream: bool = False, **options: Unpack[RequestOptions]
    ) -> dict[str, Any]:
        """The /v1/completions body, exactly as it will be handed to the gate."""
        return await self._body({"prompt": prompt}, int(self.settings.backend.max_tokens), stream, options)

    async def complete(
        self, prompt: str, *, sources: Sources = (), **options: Unpack[RequestOptions]
    ) -> CompletionResult:
        """A non-streaming completion of a raw prompt."""
        body = await self.completion_body(prompt, stream=False, **options)
        with self._model_check():
            reply = await self.transport.post("/v1/completions", body, sources)
        return _parse_whole(reply, body["model"], chat=False)

    def stream_complete(
        self, prompt: str, *, sources: Sources = (), **options: Unpack[RequestOptions]
    ) -> TextStream:
        """A streaming completion: `async with client.stream_complete(p) as s: async for d in s`."""
        return TextStream(self, "/v1/completions", prompt, sources, options, chat=False)

    # -- chat ------------------------------------------------------------------------------

    async def chat_body(
        self, messages: Sequence[dict[str, str]], *, stream: bool = False, **options: Unpack[RequestOptions]
    ) -> dict[str, Any]:
        """The /v1/chat/completions body (an answer gets at least 1024 tokens unless told otherwise)."""
        least = max(int(self.settings.backend.max_tokens), 1024)
        return await self._body({"messages": [dict(m) for m in messages]}, least, stream, options)

    async def _body(
        self, payload: dict[str, Any], default_max_tokens: int, stream: bool, options: RequestOptions
    ) -> dict[str, Any]:
        """A completion or chat body: the model, the payload, then the sampling options."""
        b = self.settings.backend
        max_tokens, temperature = options.get("max_tokens"), options.get("temperature")
        body: dict[str, Any] = {
            "model": options.get("model") or await self.model(),
            **payload,
            "max_tokens": int(max_tokens if max_tokens is not None else default_max_tokens),
            "temperature": float(temperature if temperature is not None else b.temperature),
            "stream": stream,
        }
        return _with_options(body, options.get("stop", ()), stream, options.get("extra"))

    async def chat(
        self, messages: Sequence[dict[str, str]], *, sources: Sources = (), **options: Unpack[RequestOptions]
    ) -> CompletionResult:
        body = await self.chat_body(messages, stream=False, **options)
        with self._model_check():
            reply = await self.transport.post("/v1/chat/completions", body, sources)
        return _parse_whole(reply, body["model"], chat=True)

    def stream_chat(
        self, messages: Sequence[dict[str, str]], *, sources: Sources = (), **options: Unpack[RequestOptions]
    ) -> TextStream:
        return TextStream(self, "/v1/chat/completions", messages, sources, options, chat=True)

    # -- tokenize and metrics --------------------------------------------------------------

    async def tokenize(self, text: str, *, sources: Sources = ()) -> list[int]:
        """Token ids of `text` under the served model (vLLM's /tokenize, at the server root)."""
        body = {"model": await self.model(), "prompt": text, "add_special_tokens": False}
        data = (await self.transport.post("/tokenize", body, sources)).json()
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list):
            raise BackendProtocolError(f"/tokenize answered without tokens: {str(data)[:200]}")
        return [int(t) for t in tokens]

    async def special_token_ids(self, tokens: Sequence[str]) -> dict[str, int]:
        """{token: id} for those of `tokens` that are single tokens of the served model (asked once).

        vLLM matches `stop` strings on text from which special tokens were
        already removed, so FIM stop tokens must be sent as `stop_token_ids`.
        A server without /tokenize gets {} (callers fall back to stop strings).
        """
        key = (await self.model(), tuple(tokens))
        if key not in self._token_ids:
            found: dict[str, int] = {}
            try:
                ids = await self.tokenize("".join(tokens))
                if len(ids) == len(tokens):
                    found = dict(zip(tokens, ids, strict=True))
                else:
                    for token in tokens:
                        one = await self.tokenize(token)
                        if len(one) == 1:
                            found[token] = one[0]
            except BackendOffline:
                return {}  # offline: nothing may be asked; stop strings will do
            except (BackendRejected, BackendProtocolError):
                found = {}
            self._token_ids[key] = found
        return self._token_ids[key]

    async def metrics_text(self) -> str:
        """The Prometheus text of /metrics (server root)."""
        return (await self.transport.get("/metrics")).text


def _parse_whole(reply: Reply, model: str, *, chat: bool) -> CompletionResult:
    data = reply.json()
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] if chat else choice["text"]
    except (KeyError, IndexError, TypeError):
        raise BackendProtocolError(f"unexpected completion answer: {str(data)[:200]}") from None
    return CompletionResult(
        text=text or "",
        finish_reason=choice.get("finish_reason"),
        model=str(data.get("model") or model),
        usage=Usage.parse(data.get("usage")) or Usage(),
        audit_id=reply.audit_id,
        response_id=data.get("id"),
        ttft_s=None,
        total_s=reply.elapsed_s,
        prepared=reply.prepared,
    )


# Ordinary code for measuring a tokenizer's characters per token (no user code is ever used).
CODE_SAMPLE = """def parse_config(path: str, defaults: dict[str, int] | None = None) -> dict[str, int]:
    \"\"\"Read key = value lines, skipping comments and blank lines.\"\"\"
    values = dict(defaults or {})
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, raw = line.partition("=")
            try:
                values[key.strip()] = int(raw.strip())
            except ValueError:
                raise ValueError(f"{path}:{number}: {raw!r} is not a number") from None
    return values


export function debounce(fn, waitMs) {
  let timer = null;
  return (...args) => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => { timer = null; fn(...args); }, waitMs);
  };
}
"""


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {metric name: value summed over label sets} (histogram buckets skipped)."""
    from codectx.backend.promtext import totals

    return totals(text)


def _with_options(
    body: dict[str, Any], stop: Sequence[str], stream: bool, extra: dict[str, Any] | None
) -> dict[str, Any]:
    """The options completion and chat bodies share: stop strings, usage on streams, extras."""
    if stop:
        body["stop"] = list(stop)
    if stream:
        body["stream_options"] = {"include_usage": True}
    if extra:
        body.update(extra)
    return body
