"""Reading a model server's Prometheus text (vLLM's, vllm-router's) with prometheus-client's parser.

The text format has quoting rules (a `}` or `"` inside a label value, escaped
newlines, exemplars) that a regex gets wrong, so every reader of `/metrics`
in codectx goes through here. Pure: text in, numbers out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

HITS = "vllm:prefix_cache_hits_total"
QUERIES = "vllm:prefix_cache_queries_total"
WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_USAGE = "vllm:kv_cache_usage_perc"


def samples(text: str) -> list[Sample]:
    """Every sample of a Prometheus text exposition; from malformed text, the lines that parse."""
    try:
        return [s for family in text_string_to_metric_families(text) for s in family.samples]
    except ValueError:
        pass
    # A truncated or partly foreign answer: read it line by line and keep the good samples.
    found: list[Sample] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        try:
            found.extend(s for family in text_string_to_metric_families(line + "\n") for s in family.samples)
        except ValueError:
            continue
    return found


def metric(text: str | Iterable[Sample], name: str, **labels: str) -> float:
    """Sum of the samples named `name` whose labels include `labels`."""
    rows = samples(text) if isinstance(text, str) else text
    return sum(
        s.value for s in rows if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def totals(text: str) -> dict[str, float]:
    """{sample name: value summed over label sets}, without histogram buckets and `_created` stamps."""
    out: dict[str, float] = {}
    for s in samples(text):
        if s.name.endswith(("_bucket", "_created")):
            continue
        out[s.name] = out.get(s.name, 0.0) + s.value
    return out


def hit_rate(before: str, after: str) -> float | None:
    """Prefix-cache hits / queries between two scrapes; None when nothing was queried."""
    queries = metric(after, QUERIES) - metric(before, QUERIES)
    if queries <= 0:
        return None
    return (metric(after, HITS) - metric(before, HITS)) / queries


@dataclass(frozen=True)
class ServerLoad:
    """What one scrape says about a vLLM server's (or several summed) load right now."""

    waiting: float  # requests queued for the scheduler
    running: float
    kv_cache_usage: float  # 0..1; the highest of the engines scraped

    @classmethod
    def parse(cls, text: str) -> ServerLoad:
        rows = samples(text)
        kv = [s.value for s in rows if s.name == KV_USAGE]
        return cls(metric(rows, WAITING), metric(rows, RUNNING), max(kv, default=0.0))
