"""Two vLLM CPU replicas behind a real vllm-router, with codectx's client pointed at the router.

The plan comes from the `cpu-cluster` profile (the same one `codectx backend
serve --profile cpu-cluster` runs), on free loopback ports. Replicas start in
parallel; the router starts once they answer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from codectx.backend.bench import metric
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendError
from codectx.backend.serve import ProcessSpec

from codectx.settings import Settings, load_settings
from tests.support.vllm_engine import Engine, engine_plan, start, vllm_model, vllm_server, wait_ready

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
__all__ = ["vllm_model", "vllm_server"]

FINISHED = "vllm:e2e_request_latency_seconds_count"


@pytest.fixture(scope="module")
def cluster(
    vllm_model: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[list[Engine], Engine]]:
    """[session engine, spare replica] behind vllm-router.

    The session's engine (tests.support.vllm_engine) is the first replica, so only one
    more engine starts here, in parallel with it: CI pays one start-up, not two.
    """
    log_dir = tmp_path_factory.mktemp("cluster-logs")
    plan = engine_plan(vllm_model, replicas=2, profile_name="cpu-cluster")
    replica_specs = [p for p in plan.processes if p.role == "replica"]
    (router_spec,) = [p for p in plan.processes if p.role == "router"]
    spare = start(replica_specs[1], log_dir, plan.served_model_name)
    started = [spare]
    try:
        first: Engine = request.getfixturevalue("vllm_server")
        wait_ready([spare])
        argv = list(router_spec.argv)
        at = argv.index("--worker-urls") + 1
        argv[at : at + 2] = [first.root, spare.root]
        router = start(
            ProcessSpec("router", tuple(argv), router_spec.env, router_spec.url), log_dir, first.model_name
        )
        started.append(router)
        wait_ready([router], timeout_s=120)
        yield [first, spare], router
    finally:
        for engine in reversed(started):
            engine.stop()


def router_settings(router: Engine) -> Settings:
    return load_settings(
        None,
        {
            "backend.url": router.api_url,
            "backend.first_byte_timeout_s": 120.0,
            "backend.first_token_timeout_s": 120.0,
            "backend.total_timeout_s": 300.0,
            "backend.breaker_interval_s": 0.0,
        },
    )


async def finished_on(replica: Engine) -> float:
    async with BackendClient(load_settings(None, {"backend.url": replica.api_url})) as client:
        return metric(await client.metrics_text(), FINISHED)


def prompt(path: str, cursor: int) -> str:
    body = "".join(f"def handler_{i}(request):\n    return respond(request, {i})\n\n" for i in range(cursor))
    return f"<|repo_name|>svc\n<|file_sep|>{path}\n<|fim_prefix|>{body}<|fim_suffix|>\n<|fim_middle|>"


async def test_router_spreads_completions_and_survives_a_dead_replica(
    cluster: tuple[list[Engine], Engine],
) -> None:
    replicas, router = cluster
    survivor, victim = replicas
    async with BackendClient(router_settings(router)) as client:
        assert await client.models() == [router.model_name]
        assert len(await client.tokenize("<|fim_middle|>")) == 1  # /tokenize passes through the router
        stops = {"ignore_eos": True}  # exact lengths from random weights

        # Different files from concurrent editors: the router spreads them over both replicas.
        base = [await finished_on(r) for r in replicas]
        prompts = [prompt(f"svc/file_{i}.py", 3 + i % 5) for i in range(16)]
        for batch in (prompts[:8], prompts[8:]):
            results = await asyncio.gather(
                *(client.complete(p, max_tokens=8, temperature=0.0, extra=stops) for p in batch)
            )
            assert all(r.usage.completion_tokens == 8 for r in results)
        served = [await finished_on(r) - b for r, b in zip(replicas, base, strict=True)]
        assert sum(served) == 16
        assert all(n > 0 for n in served), f"requests per replica: {served}"

        # Kill the spare replica while a completion is in flight: only that one may fail.
        failures: list[str] = []
        done = 0
        killed_at: list[int] = []
        survivor_before = await finished_on(survivor)

        async def kill_when_busy() -> None:
            while done < 6:
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.1)  # the 7th request is under way
            assert victim.proc is not None
            killed_at.append(done)  # completions counted from here on are after the kill
            os.killpg(victim.proc.pid, signal.SIGKILL)
            await asyncio.to_thread(victim.proc.wait, 30)

        killer = asyncio.create_task(kill_when_busy())
        for i in range(24):
            try:
                result = await client.complete(
                    prompt(f"svc/after_{i % 3}.py", 4 + i), max_tokens=32, temperature=0.0, extra=stops
                )
                assert result.usage.completion_tokens == 32
                done += 1
            except BackendError as exc:
                failures.append(str(exc))
        await killer
        # vLLM publishes its finished-requests counter a step after the response: read until
        # it has caught up (or 10 s passed) rather than once.
        # The one in flight at the kill may have finished on the victim just before it died.
        after_kill = done - killed_at[0] - 1
        deadline = time.monotonic() + 10
        survivor_served = await finished_on(survivor) - survivor_before
        while survivor_served < after_kill and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            survivor_served = await finished_on(survivor) - survivor_before
    assert len(failures) <= 1, failures
    assert done >= 23
    # Everything after the kill was served by the survivor.
    assert after_kill >= 15 and survivor_served >= after_kill, (killed_at, done, survivor_served)


async def test_burst_small_mode_through_the_router(cluster: tuple[list[Engine], Engine]) -> None:
    """`make bench-burst`'s traffic, small: every request ends served, superseded or debounced."""
    from codectx.backend.burst import BurstOptions, run_level

    replicas, router = cluster
    alive = [r for r in replicas if r.alive()]  # the test above killed one: the router routes around it
    opts = BurstOptions(
        developers=3,
        keystrokes=8,
        keystroke_ms=40,
        pause_every=4,
        pause_ms=200,
        debounce_ms=20,
        budget_ms=120_000,
    )
    report = await run_level(router_settings(router), opts, [r.api_url for r in alive])
    assert report.requests == 3 * 8 == sum(report.outcomes.values())
    assert report.outcomes["failed"] == 0, report.errors
    # No admission limit on these engines and a budget nothing reaches: nothing shed or timed out.
    assert report.outcomes["shed"] == report.outcomes["timeout"] == 0 == report.server_sheds
    # The last keystroke of each run waits for its suggestion: at least those are served.
    assert report.outcomes["served"] >= 3 * 2
    assert report.ttft_p95_ms >= report.ttft_p50_ms > 0
