"""Bursts of editor traffic: N simulated developers typing, with requests that behave as the editors'.

Each developer edits their own file (so a cache-aware router can keep it on one
replica), typing in runs with pauses. Every keystroke starts a completion for
the new cursor after the editor's debounce; a newer keystroke cancels the
pending one (superseded: its stream is closed, so vLLM aborts it); a request
that outlives the editor's budget is cancelled too (timeout). The last keystroke
of a run waits for its answer. Requests go through codectx's own client (privacy
gate, audit, retries of a shed before the first token), so what is measured is
what an editor gets.

Outcomes of each request: served, superseded, debounced (superseded before it was
sent), timeout, shed (the server refused it: 429/503, still after retries), and
failed (anything else: nothing should ever land there). `bench/bench_burst.py`
runs levels of N against two replicas behind vllm-router; `tests/backend/test_cluster.py`
runs a small one.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from codectx.backend.bench import LoadSampler, fim_prompt, percentile, repo_text, stop_token_ids
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendError
from codectx.backend.families import detect_family
from codectx.backend.promtext import metric

from codectx.settings import load_settings

REJECTIONS = "vllm:admission_rejections_total"
OUTCOMES = ("served", "superseded", "debounced", "timeout", "shed", "failed")


@dataclass(frozen=True)
class BurstOptions:
    developers: int = 4
    keystrokes: int = 24  # per developer
    keystroke_ms: float = 150.0  # mean gap between keystrokes while typing
    pause_every: int = 6  # a pause (reading the suggestion) after this many keystrokes
    pause_ms: float = 1500.0
    debounce_ms: float = 75.0  # lsp.debounce_ms
    budget_ms: float = 3000.0  # lsp.request_budget_ms
    max_tokens: int = 16
    prompt_tokens: int = 600  # about this many tokens per prompt (repo-level FIM)
    seed: int = 0


@dataclass
class LevelReport:
    developers: int
    requests: int  # keystrokes that asked for a completion
    outcomes: dict[str, int]
    ttft_p50_ms: float
    ttft_p95_ms: float
    queue_depth_max: float  # vllm:num_requests_waiting summed over the replicas, highest scrape
    running_max: float
    server_sheds: float  # vllm:admission_rejections_total over the level (retried ones included)
    wall_s: float
    errors: list[str] = field(default_factory=list)  # the failed ones' messages

    @property
    def sent(self) -> int:
        return self.requests - self.outcomes.get("debounced", 0)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "sent": self.sent}


@dataclass
class _Request:
    status: str = "debounced"
    ttft_s: float | None = None
    error: str = ""


class _Traffic:
    """One level's shared state: the client, the prompts' layout, what happened."""

    def __init__(
        self, client: BackendClient, opts: BurstOptions, family: Any, extra: dict[str, Any], chars: int
    ) -> None:
        self.client = client
        self.family = family
        self.opts = opts
        self.extra = extra
        self.context_chars = chars
        self.repo = repo_text(opts.seed)
        self.requests: list[_Request] = []

    async def complete(self, prompt: str, record: _Request) -> None:
        o = self.opts
        try:
            await asyncio.sleep(o.debounce_ms / 1000)  # a newer keystroke cancels us here: debounced
            record.status = "superseded"
            async with asyncio.timeout(o.budget_ms / 1000):
                stream = self.client.stream_complete(
                    prompt, max_tokens=o.max_tokens, temperature=0.0, extra=self.extra
                )
                async with stream:
                    async for _ in stream:
                        pass
            record.status, record.ttft_s = "served", stream.ttft_s
        except TimeoutError:
            record.status = "timeout"
        except BackendError as exc:
            shed = getattr(exc, "status", None) in (429, 503)
            record.status, record.error = ("shed", "") if shed else ("failed", str(exc)[:300])
        # CancelledError (a newer keystroke) propagates with the status set above.

    async def developer(self, index: int) -> None:
        o = self.opts
        rng = random.Random(o.seed * 1000 + index)
        # Each developer edits their own file: its own text, the shared retrieved context.
        text = self.repo.current[index * 97 % 2000 :] + self.repo.current[: index * 97 % 2000]
        repo = replace(self.repo, current_path=f"src/pkg/dev_{index}.py", current=text)
        cursor = 1600 + rng.randrange(400)
        pending: asyncio.Task[None] | None = None
        for k in range(o.keystrokes):
            cursor += 1
            if pending is not None and not pending.done():
                pending.cancel()  # superseded by this keystroke
            record = _Request()
            self.requests.append(record)
            prompt = fim_prompt(self.family, repo, self.context_chars, cursor, window=900)
            pending = asyncio.get_running_loop().create_task(self.complete(prompt, record))
            last_of_run = (k + 1) % o.pause_every == 0 or k == o.keystrokes - 1
            if last_of_run:
                await asyncio.gather(pending, return_exceptions=True)  # read the suggestion
                await asyncio.sleep(o.pause_ms / 1000 * rng.uniform(0.5, 1.5))
            else:
                await asyncio.sleep(rng.expovariate(1000 / o.keystroke_ms))
        if pending is not None:
            await asyncio.gather(pending, return_exceptions=True)


async def _context_chars(client: BackendClient, family: Any, tokens: int) -> int:
    """Retrieved-context size that makes prompts of about `tokens` tokens for this tokenizer."""
    repo = repo_text(0)
    probe = fim_prompt(family, repo, 3000, 2000, window=900)
    per_char = len(await client.tokenize(probe)) / len(probe)
    base = len(fim_prompt(family, repo, 0, 2000, window=900))
    return max(0, int(tokens / per_char) - base)


async def _scrape(client: BackendClient) -> str:
    """A replica's /metrics; "" when it cannot answer (a dead replica is the router's business)."""
    try:
        return await client.metrics_text()
    except BackendError:
        return ""


async def run_level(settings: Any, opts: BurstOptions, replica_urls: Sequence[str] = ()) -> LevelReport:
    """One level of `opts.developers` developers; `replica_urls` (API URLs) are scraped for load."""
    scrapers = [BackendClient(load_settings(None, {"backend.url": url})) for url in replica_urls]
    async with BackendClient(settings) as client:
        family = detect_family(await client.model(), settings.backend.family)
        extra = {"stop_token_ids": await stop_token_ids(client, family.stop)}
        chars = await _context_chars(client, family, opts.prompt_tokens)
        traffic = _Traffic(client, opts, family, extra, chars)
        before = [await _scrape(s) for s in scrapers]
        samplers = [LoadSampler(s, interval_s=0.5) for s in scrapers]
        started = time.monotonic()
        async with contextlib.AsyncExitStack() as stack:
            for sampler in samplers:
                await stack.enter_async_context(sampler)
            await asyncio.gather(*(traffic.developer(i) for i in range(opts.developers)))
        wall = time.monotonic() - started
        after = [await _scrape(s) for s in scrapers]
    for scraper in scrapers:
        await scraper.aclose()
    counts = Counter(r.status for r in traffic.requests)
    ttfts = [r.ttft_s for r in traffic.requests if r.status == "served" and r.ttft_s is not None]
    # Peaks per replica, summed: a conservative view of the cluster's queue at its worst.
    return LevelReport(
        developers=opts.developers,
        requests=len(traffic.requests),
        outcomes={name: counts.get(name, 0) for name in OUTCOMES},
        ttft_p50_ms=percentile(ttfts, 50) * 1000,
        ttft_p95_ms=percentile(ttfts, 95) * 1000,
        queue_depth_max=sum(s.peak("waiting") for s in samplers),
        running_max=sum(s.peak("running") for s in samplers),
        server_sheds=sum(
            metric(a, REJECTIONS) - metric(b, REJECTIONS) for a, b in zip(after, before, strict=True)
        ),
        wall_s=wall,
        errors=sorted({r.error for r in traffic.requests if r.status == "failed"})[:5],
    )


def knee(levels: Sequence[LevelReport], factor: float = 2.0) -> LevelReport | None:
    """The first level whose TTFT p95 is `factor` times the lightest level's, or that sheds."""
    if not levels:
        return None
    base = levels[0].ttft_p95_ms or 1.0
    for level in levels[1:]:
        if level.ttft_p95_ms > factor * base or level.outcomes["shed"] or level.outcomes["timeout"]:
            return level
    return None


def format_levels(levels: Sequence[LevelReport]) -> str:
    head = (
        f"{'devs':>4} {'reqs':>5} {'served':>6} {'supers':>6} {'debnc':>5} {'t/o':>4} {'shed':>4} "
        f"{'fail':>4} {'TTFT p50':>9} {'p95':>8} {'queue':>5} {'run':>4} {'sheds@srv':>9}"
    )
    rows = [
        f"{lv.developers:>4} {lv.requests:>5} {lv.outcomes['served']:>6} {lv.outcomes['superseded']:>6} "
        f"{lv.outcomes['debounced']:>5} {lv.outcomes['timeout']:>4} {lv.outcomes['shed']:>4} "
        f"{lv.outcomes['failed']:>4} {lv.ttft_p50_ms:>7.0f}ms {lv.ttft_p95_ms:>6.0f}ms "
        f"{lv.queue_depth_max:>5.0f} {lv.running_max:>4.0f} {lv.server_sheds:>9.0f}"
        for lv in levels
    ]
    return "\n".join([head, *rows])
