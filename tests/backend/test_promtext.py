"""Reading Prometheus text with prometheus-client's parser (the regex it replaced broke on these)."""

from __future__ import annotations

import pytest
from codectx.backend.client import parse_metrics
from codectx.backend.promtext import ServerLoad, hit_rate, metric, samples, totals

TEXT = """\
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="team}coder"} 3.0
vllm:num_requests_waiting{engine="1",model_name="say \\"hi\\"\\n"} 2.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="team}coder"} 4.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="team}coder"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="team}coder"} 0.75
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="team}coder"} 30.0
vllm:prefix_cache_hits_created{engine="0",model_name="team}coder"} 1.7e+09
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="team}coder"} 40.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="team}coder"} 1.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="team}coder"} 2.0
vllm:time_to_first_token_seconds_count{model_name="team}coder"} 2.0
vllm:time_to_first_token_seconds_sum{model_name="team}coder"} 0.5
"""


def test_label_values_with_braces_quotes_and_newlines() -> None:
    assert metric(TEXT, "vllm:num_requests_waiting") == 5.0
    assert metric(TEXT, "vllm:num_requests_waiting", model_name="team}coder") == 3.0
    assert metric(TEXT, "vllm:num_requests_waiting", model_name='say "hi"\n') == 2.0
    assert metric(TEXT, "vllm:num_requests_waiting", model_name="other") == 0.0


def test_totals_skip_buckets_and_created_stamps() -> None:
    got = totals(TEXT)
    assert got["vllm:time_to_first_token_seconds_count"] == 2.0
    assert not any(name.endswith(("_bucket", "_created")) for name in got)
    assert parse_metrics(TEXT) == got


def test_server_load_and_hit_rate() -> None:
    load = ServerLoad.parse(TEXT)
    assert (load.waiting, load.running, load.kv_cache_usage) == (5.0, 4.0, 0.75)
    later = TEXT.replace("} 30.0", "} 45.0").replace("} 40.0", "} 60.0")
    assert hit_rate(TEXT, later) == pytest.approx(0.75)
    assert hit_rate(TEXT, TEXT) is None


def test_malformed_text_keeps_what_parsed() -> None:
    broken = TEXT.split("# TYPE vllm:kv_cache_usage_perc")[0] + 'vllm:bad{le="1" 3\n'
    rows = samples(broken)
    assert {s.name for s in rows} == {"vllm:num_requests_waiting", "vllm:num_requests_running"}
    assert samples("<html>not metrics</html>") == []
