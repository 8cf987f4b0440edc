"""`codectx backend check` and `codectx backend bench`: probe and measure a model server.

Both talk to the server only through codectx's client (BackendClient), so
what they measure is what an editor request costs. The FIM prompts are
synthetic but realistic: repository-level Qwen layout, built from fixed
standard-library source text, with the cursor moving through one file so
consecutive requests share a long prefix, as they do in an editor.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendError
from codectx.backend.families import Family, detect_family
from codectx.backend.prompts import Snippet, build_fim_prompt
from codectx.backend.promtext import HITS, QUERIES, ServerLoad, hit_rate, metric  # noqa: F401 (re-exported)
from codectx.backend.testmodel import corpus_text


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


# -- prompts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RepoText:
    """Fixed source files: some become retrieved context, one is the file being edited."""

    context: tuple[tuple[str, str], ...]
    current_path: str
    current: str


def repo_text(seed: int = 0) -> RepoText:
    text = corpus_text()
    rng = random.Random(seed)
    # Whole-line pieces of ~1.2K characters: the shape of retrieved function chunks.
    lines = text.splitlines(keepends=True)
    pieces, piece = [], ""
    for line in lines:
        piece += line
        if len(piece) > 1200:
            pieces.append(piece)
            piece = ""
    rng.shuffle(pieces)
    context = tuple((f"src/pkg/mod_{i}.py", p) for i, p in enumerate(pieces[:40]))
    current = "".join(pieces[40:48])
    return RepoText(context, "src/pkg/editing.py", current)


def fim_prompt(family: Family, repo: RepoText, context_chars: int, cursor: int, window: int = 1500) -> str:
    """Repo-level FIM in the family's layout: retrieved files first (stable order), then the current file."""
    snippets = []
    used = 0
    for path, content in repo.context:
        if used >= context_chars:
            break
        piece = content[: context_chars - used]
        snippets.append(Snippet(path, 0, piece.count("\n"), piece))
        used += len(piece)
    # The prefix starts at a coarse anchor, not at cursor - window: a window sliding with
    # every keystroke would change the prompt's start and defeat vLLM's prefix cache.
    anchor = max(0, cursor - window) // 1024 * 1024
    prefix = repo.current[anchor:cursor]
    suffix = repo.current[cursor : cursor + window // 3]
    return build_fim_prompt(
        family, prefix=prefix, suffix=suffix, path=repo.current_path, repo="bench", snippets=snippets
    ).text


async def sized_prompts(
    client: BackendClient, family: Family, repo: RepoText, tokens: int, count: int, step: int = 40
) -> list[str]:
    """`count` prompts of at most about `tokens` tokens, the cursor moving `step` characters each time."""
    window = 1500
    cursors = [2000 + i * step for i in range(count)]
    probe = fim_prompt(family, repo, 4000, 2000, window)
    chars_per_token = len(probe) / max(1, len(await client.tokenize(probe)))
    context_chars = max(0, int(tokens * chars_per_token) - 2 * window)
    for _ in range(4):
        prompts = [fim_prompt(family, repo, context_chars, c, window) for c in cursors]
        longest = max(prompts, key=len)
        excess = len(await client.tokenize(longest)) - tokens
        if excess <= 0 or context_chars == 0:
            break
        context_chars = max(0, context_chars - int(excess * chars_per_token * 1.2) - 64)
    return prompts


async def stop_token_ids(client: BackendClient, tokens: Sequence[str]) -> list[int]:
    """Ids of those stop tokens the served tokenizer knows as single tokens.

    vLLM matches `stop` strings against text from which special tokens are
    already stripped, so they never fire for `<|endoftext|>` and friends, and it
    accepts at most 4 of them; `stop_token_ids` has neither problem.
    """
    return list((await client.special_token_ids(tokens)).values())


async def served_family(client: BackendClient, settings: Any) -> Family:
    return detect_family(await client.model(), settings.backend.family)


async def server_limits(client: BackendClient) -> int | None:
    """The served model's max_model_len, where the server says (vLLM does in /v1/models)."""
    data = (await client.transport.get("/v1/models")).json()
    try:
        return int(data["data"][0]["max_model_len"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


# -- check -----------------------------------------------------------------------------------


@dataclass
class CheckReport:
    url: str
    reachable: bool = False
    models: list[str] = field(default_factory=list)
    model: str = ""
    fim_ok: bool = False
    completion: str = ""
    completion_tokens: int = 0
    ttft_ms: float | None = None
    total_ms: float | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.reachable and bool(self.model) and self.fim_ok

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


async def check(settings: Any) -> CheckReport:
    report = CheckReport(url=str(settings.backend.url or ""))
    async with BackendClient(settings) as client:
        try:
            report.models = await client.models()
            report.reachable = True
            report.model = await client.model()
            if report.model not in report.models:
                report.error = f"model '{report.model}' is not served (served: {', '.join(report.models)})"
                return report
            family = await served_family(client, settings)
            prompt = build_fim_prompt(
                family, prefix="def add(a, b):\n    return ", suffix="\n\nprint(add(1, 2))\n", path="check.py"
            ).text
            stops = {"stop_token_ids": await stop_token_ids(client, family.stop)}
            async with client.stream_complete(prompt, max_tokens=8, temperature=0.0, extra=stops) as stream:
                async for _ in stream:
                    pass
            report.completion = stream.text
            report.completion_tokens = stream.usage.completion_tokens if stream.usage else 0
            report.ttft_ms = None if stream.ttft_s is None else stream.ttft_s * 1000
            report.total_ms = stream.total_s * 1000
            report.fim_ok = stream.finish_reason is not None
        except BackendError as exc:
            report.error = str(exc)
    return report


def run_check(settings: Any) -> CheckReport:
    return asyncio.run(check(settings))


def format_check(r: CheckReport) -> str:
    def mark(ok: bool) -> str:
        return "ok  " if ok else "FAIL"

    lines = [
        f"{mark(r.reachable)} reachable        {r.url}",
        f"{mark(bool(r.model))} model served     {r.model or '-'}"
        + (f" (of {', '.join(r.models)})" if len(r.models) > 1 else ""),
        f"{mark(r.fim_ok)} FIM round trip   {r.completion_tokens} tokens: {r.completion[:60]!r}",
    ]
    if r.ttft_ms is not None:
        lines.append(f"     time to first token {r.ttft_ms:.0f} ms, total {r.total_ms or 0:.0f} ms")
    if r.error:
        lines.append(f"error: {r.error}")
    return "\n".join(lines)


# -- bench -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchOptions:
    concurrency: tuple[int, ...] = (1, 4, 16)
    requests: int = 32
    max_tokens: int = 32
    prompt_tokens: int = 1500
    seed: int = 0


@dataclass
class LevelResult:
    concurrency: int
    requests: int
    errors: int
    ttft_p50_ms: float
    ttft_p95_ms: float
    itl_p50_ms: float
    itl_p95_ms: float
    tokens_per_s: float
    completion_tokens: int
    wall_s: float
    prefix_cache_hit_rate: float | None
    prefix_cache_hits: float = 0.0  # tokens served from the prefix cache during the level
    queue_depth_max: float = 0.0  # vllm:num_requests_waiting, highest scrape during the level
    running_max: float = 0.0  # vllm:num_requests_running, highest scrape
    kv_cache_usage_max: float = 0.0  # vllm:kv_cache_usage_perc (0..1), highest scrape
    load_scrapes: int = 0
    error_messages: list[str] = field(default_factory=list)


@dataclass
class BenchReport:
    url: str
    model: str
    prompt_tokens: int
    max_tokens: int
    levels: list[LevelResult]
    prefix_cache_hit_rate: float | None

    @property
    def ok(self) -> bool:
        return all(level.errors == 0 for level in self.levels)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


class LoadSampler:
    """Scrapes the server's /metrics while a level runs: the deepest queue and fullest KV cache seen.

    A failed scrape (a server without /metrics) is skipped, never an error of the level.
    """

    def __init__(self, client: BackendClient, interval_s: float = 0.25) -> None:
        self._client = client
        self._interval = interval_s
        self._task: asyncio.Task[None] | None = None
        self.loads: list[ServerLoad] = []

    async def _run(self) -> None:
        while True:
            try:
                self.loads.append(ServerLoad.parse(await self._client.metrics_text()))
            except BackendError:
                pass
            await asyncio.sleep(self._interval)

    async def __aenter__(self) -> LoadSampler:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def peak(self, field_name: str) -> float:
        return max((getattr(load, field_name) for load in self.loads), default=0.0)


async def _one(
    client: BackendClient, prompt: str, max_tokens: int, stop_ids: list[int]
) -> tuple[float, list[float], int]:
    """TTFT, inter-token gaps and completion tokens of one streamed FIM request."""
    gaps: list[float] = []
    last = 0.0
    extra = {"stop_token_ids": stop_ids}
    async with client.stream_complete(prompt, max_tokens=max_tokens, temperature=0.0, extra=extra) as stream:
        async for _ in stream:
            now = time.monotonic()
            if last:
                gaps.append(now - last)
            last = now
    if stream.ttft_s is None:
        return stream.total_s, gaps, 0
    tokens = stream.usage.completion_tokens if stream.usage else len(gaps) + 1
    return stream.ttft_s, gaps, tokens


async def _level(
    client: BackendClient, prompts: Sequence[str], concurrency: int, max_tokens: int, stop_ids: list[int]
) -> LevelResult:
    semaphore = asyncio.Semaphore(concurrency)
    ttfts: list[float] = []
    gaps: list[float] = []
    errors: list[str] = []
    tokens = 0

    async def run(prompt: str) -> None:
        nonlocal tokens
        async with semaphore:
            try:
                ttft, g, n = await _one(client, prompt, max_tokens, stop_ids)
            except BackendError as exc:
                errors.append(str(exc))
                return
            ttfts.append(ttft)
            gaps.extend(g)
            tokens += n

    before = await client.metrics_text()
    started = time.monotonic()
    async with LoadSampler(client) as sampler:
        await asyncio.gather(*(run(p) for p in prompts))
    wall = time.monotonic() - started
    after = await client.metrics_text()
    return LevelResult(
        concurrency=concurrency,
        requests=len(prompts),
        errors=len(errors),
        ttft_p50_ms=percentile(ttfts, 50) * 1000,
        ttft_p95_ms=percentile(ttfts, 95) * 1000,
        itl_p50_ms=percentile(gaps, 50) * 1000,
        itl_p95_ms=percentile(gaps, 95) * 1000,
        tokens_per_s=tokens / wall if wall > 0 else 0.0,
        completion_tokens=tokens,
        wall_s=wall,
        prefix_cache_hit_rate=hit_rate(before, after),
        prefix_cache_hits=metric(after, HITS) - metric(before, HITS),
        queue_depth_max=sampler.peak("waiting"),
        running_max=sampler.peak("running"),
        kv_cache_usage_max=sampler.peak("kv_cache_usage"),
        load_scrapes=len(sampler.loads),
        error_messages=sorted(set(errors))[:5],
    )


async def bench(settings: Any, options: BenchOptions) -> BenchReport:
    async with BackendClient(settings) as client:
        model = await client.model()
        limit = await server_limits(client)
        prompt_tokens = options.prompt_tokens
        if limit is not None:
            # Leave room for the completion: vLLM rejects prompt + max_tokens > max_model_len.
            prompt_tokens = min(prompt_tokens, limit - options.max_tokens - 64)
        repo = repo_text(options.seed)
        total = options.requests * len(options.concurrency)
        family = await served_family(client, settings)
        prompts = await sized_prompts(client, family, repo, prompt_tokens, total)
        stop_ids = await stop_token_ids(client, family.stop)
        before = await client.metrics_text()
        levels = []
        for i, level in enumerate(options.concurrency):
            chunk = prompts[i * options.requests : (i + 1) * options.requests]
            levels.append(await _level(client, chunk, level, options.max_tokens, stop_ids))
        after = await client.metrics_text()
    return BenchReport(
        url=str(settings.backend.url or ""),
        model=model,
        prompt_tokens=prompt_tokens,
        max_tokens=options.max_tokens,
        levels=levels,
        prefix_cache_hit_rate=hit_rate(before, after),
    )


def run_bench(settings: Any, options: BenchOptions) -> BenchReport:
    return asyncio.run(bench(settings, options))


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.0f}%"


def format_bench(r: BenchReport) -> str:
    head = (
        f"{r.model} at {r.url}: FIM prompts of ~{r.prompt_tokens} tokens, up to {r.max_tokens} new tokens\n"
        f"{'conc':>5} {'reqs':>5} {'err':>4} {'TTFT p50':>9} {'p95':>8} {'ITL p50':>8} {'p95':>7} "
        f"{'tok/s':>7} {'cache hit':>9} {'queue':>5} {'KV use':>6}"
    )
    rows = [
        f"{lv.concurrency:>5} {lv.requests:>5} {lv.errors:>4} "
        f"{lv.ttft_p50_ms:>7.0f}ms {lv.ttft_p95_ms:>6.0f}ms "
        f"{lv.itl_p50_ms:>6.1f}ms {lv.itl_p95_ms:>5.1f}ms {lv.tokens_per_s:>7.1f} "
        f"{_pct(lv.prefix_cache_hit_rate):>9} {lv.queue_depth_max:>5.0f} {_pct(lv.kv_cache_usage_max):>6}"
        for lv in r.levels
    ]
    errors = [f"  error: {m}" for lv in r.levels for m in lv.error_messages]
    tail = (
        f"prefix-cache hit rate over the run: {_pct(r.prefix_cache_hit_rate)}; "
        "queue = most requests waiting, KV use = fullest KV cache, in /metrics scrapes during the level"
    )
    return "\n".join([head, *rows, *errors, tail])
