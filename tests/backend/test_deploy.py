"""The deploy kit (backend/deploy/) checked by real validators, and against the serving profiles.

- Helm values: JSON Schema (jsonschema) against our closed contract of the chart's keys,
  and against the chart's own values.schema.json when $VLLM_STACK_SCHEMA names it.
- Alert rules: `promtool check rules` and `promtool test rules` (Debian's Prometheus
  2.42 promtool; `make promtool` fetches it, $PROMTOOL points at it).
- Every PromQL expression (dashboard, alerts, KEDA trigger): parsed by promtool.
- Grafana dashboard: read by Grafana's generated models (grafana-foundation-sdk), which
  drop unknown keys, so any key they lose is a misspelling; plus layout checks.
- The metric names used exist in a real vLLM engine's /metrics (slow test).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml
from codectx.backend.metrics import Metrics
from codectx.backend.serve import VLLM_VERSION, build_plan, flag_value, load_profiles
from prometheus_client import generate_latest

from tests.support.paths import REPO_ROOT
from tests.support.vllm_engine import Engine, vllm_model, vllm_server  # noqa: F401

DEPLOY = REPO_ROOT / "backend" / "deploy"
VALUES = yaml.safe_load((DEPLOY / "production-stack-values.yaml").read_text())
RULES = yaml.safe_load((DEPLOY / "prometheus-rules.yaml").read_text())
DASHBOARD = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
MODEL = VALUES["servingEngineSpec"]["modelSpec"][0]
SCALER = next(o for o in VALUES["extraObjects"] if o["kind"] == "ScaledObject")


def promtool() -> str:
    local = REPO_ROOT / ".tools" / "promtool" / "usr" / "bin" / "promtool"
    found = os.environ.get("PROMTOOL") or shutil.which("promtool") or (str(local) if local.exists() else None)
    if not found or not Path(found).exists():
        pytest.skip("promtool not found: `make promtool` fetches it (Debian's prometheus package)")
    return found


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd)


def expressions() -> dict[str, str]:
    """Every PromQL expression of the kit, named by where it lives."""
    found = {f"alert {r['alert']}": r["expr"] for g in RULES["groups"] for r in g["rules"]}
    for panel in DASHBOARD["panels"]:
        for target in panel.get("targets", []):
            found[f"panel {panel['title']} {target['refId']}"] = target["expr"]
    for trigger in SCALER["spec"]["triggers"]:
        found["keda trigger"] = trigger["metadata"]["query"]
    return found


def as_prometheus(expr: str) -> str:
    """Grafana's variables replaced by what they expand to, so Prometheus can parse the query."""
    return expr.replace("$__rate_interval", "5m").replace('"$model_name"', '".*"')


# -- Helm values -------------------------------------------------------------------------------


def test_values_match_the_contract_schema() -> None:
    schema = json.loads((DEPLOY / "production-stack-values.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(VALUES)]
    assert errors == []
    # The contract is closed: a misspelled key or an unpinned image fails.
    broken = json.loads(json.dumps(VALUES))
    broken["servingEngineSpec"]["modelSpec"][0]["vllmConfig"]["maxModelLenn"] = 1
    broken["routerSpec"]["tag"] = "latest"
    messages = " ".join(e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(broken))
    assert "maxModelLenn" in messages and "latest" in messages


def test_values_against_the_charts_own_schema() -> None:
    path = os.environ.get("VLLM_STACK_SCHEMA")
    if not path:
        pytest.skip("set VLLM_STACK_SCHEMA to the vllm-stack chart's values.schema.json (helm pull --untar)")
    schema = json.loads(Path(path).read_text())
    assert [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(VALUES)] == []


def test_values_serve_what_the_h200_profile_serves() -> None:
    plan = build_plan(load_profiles()["h200"], python="/opt/vllm/bin/python")
    argv = plan.processes[0].argv
    config = MODEL["vllmConfig"]
    assert MODEL["repository"] == "vllm/vllm-openai" and MODEL["tag"] == f"v{VLLM_VERSION}"
    assert MODEL["modelURL"] == plan.model
    assert config["maxModelLen"] == int(flag_value(argv, "--max-model-len") or 0)
    assert config["maxNumSeqs"] == int(flag_value(argv, "--max-num-seqs") or 0)
    assert config["gpuMemoryUtilization"] == float(flag_value(argv, "--gpu-memory-utilization") or 0)
    assert config["enablePrefixCaching"] == ("--enable-prefix-caching" in argv)
    extra = config["extraArgs"]
    assert flag_value(extra, "--kv-cache-dtype") == flag_value(argv, "--kv-cache-dtype") == "fp8"
    assert flag_value(extra, "--served-model-name") == plan.served_model_name
    assert flag_value(extra, "--max-num-queued-reqs") == flag_value(argv, "--max-num-queued-reqs") == "192"
    assert VALUES["routerSpec"]["routingLogic"] == "prefixaware"
    assert VALUES["routerSpec"]["tag"] not in ("", "latest")


def test_autoscaling_on_queue_depth_and_scrape_targets() -> None:
    assert MODEL["keda"] == {"enabled": False}  # the chart's own trigger is broken; see the values
    spec = SCALER["spec"]
    # The chart names the engine Deployment <release>-<model name>-deployment-vllm.
    assert spec["scaleTargetRef"]["name"] == "{{ .Release.Name }}-" + MODEL["name"] + "-deployment-vllm"
    assert 1 <= spec["minReplicaCount"] < spec["maxReplicaCount"]
    (trigger,) = spec["triggers"]
    query = trigger["metadata"]["query"]
    served = flag_value(MODEL["vllmConfig"]["extraArgs"], "--served-model-name")
    # One series (KEDA rejects several), selected on the label vLLM really sets.
    assert query == f'sum(vllm:num_requests_waiting{{model_name="{served}"}})'
    assert trigger["type"] == "prometheus" and float(trigger["metadata"]["threshold"]) > 0
    engine, router = VALUES["servingEngineSpec"]["serviceMonitor"], VALUES["routerSpec"]["serviceMonitor"]
    assert engine["enabled"] and router["enabled"]
    (relabel,) = engine["metricRelabelings"]
    assert relabel == {"sourceLabels": ["model_name"], "targetLabel": "model", "action": "replace"}


# -- Prometheus rules and PromQL -------------------------------------------------------------


def test_alert_rules_pass_promtool_check_and_unit_tests() -> None:
    tool = promtool()
    checked = run(tool, "check", "rules", "prometheus-rules.yaml", cwd=DEPLOY)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = run(tool, "test", "rules", "prometheus-rules.test.yaml", cwd=DEPLOY)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    names = {r["alert"] for g in RULES["groups"] for r in g["rules"]}
    assert names == {"VLLMQueueGrowing", "VLLMKVCacheNearlyFull", "VLLMErrorRate", "VLLMTimeToFirstTokenHigh"}


def test_every_promql_expression_parses(tmp_path: Path) -> None:
    tool = promtool()
    exprs = expressions()
    rules = {
        "groups": [
            {
                "name": "parse-only",
                "rules": [
                    {"record": f"codectx:check:{i}", "expr": as_prometheus(e)}
                    for i, e in enumerate(exprs.values())
                ],
            }
        ]
    }
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = run(tool, "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in done.stdout
    # The check is real: a broken expression fails it.
    path.write_text(
        yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "a:b", "expr": "sum(rate(x[5m])"}]}]})
    )
    assert run(tool, "check", "rules", str(path)).returncode != 0


def test_codectx_metrics_pass_promtool_lint() -> None:
    tool = promtool()
    metrics = Metrics()
    metrics.started("completion")
    metrics.observe(
        "completion", "ok", {"context_ms": 12.0, "ttft_ms": 90.0}, redactions=[{"rule": "github-pat"}]
    )
    done = subprocess.run(
        [tool, "check", "metrics"], input=generate_latest(metrics.registry), capture_output=True, timeout=60
    )
    assert done.returncode == 0, (done.stdout + done.stderr).decode()


# -- Grafana dashboard -------------------------------------------------------------------------


def lost_keys(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Paths in `ours` that `theirs` lacks or changed."""
    if isinstance(ours, dict):
        if not isinstance(theirs, dict):
            return [path]
        return [
            p
            for k, v in ours.items()
            for p in ([f"{path}/{k}"] if k not in theirs else lost_keys(v, theirs[k], f"{path}/{k}"))
        ]
    if isinstance(ours, list):
        if not isinstance(theirs, list) or len(ours) != len(theirs):
            return [path]
        return [
            p
            for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
            for p in lost_keys(a, b, f"{path}[{i}]")
        ]
    return [] if ours == theirs else [f"{path}: {ours!r} -> {theirs!r}"]


def test_dashboard_is_read_whole_by_grafanas_models() -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()  # typed panel options and Prometheus queries: unknown keys are dropped
    read = json.loads(json.dumps(Dashboard.from_json(DASHBOARD), cls=JSONEncoder))
    assert lost_keys(DASHBOARD, read) == []
    misspelled = json.loads(json.dumps(DASHBOARD))
    misspelled["panels"][1]["fieldconfig"] = misspelled["panels"][1].pop("fieldConfig")
    misspelled["panels"][1]["targets"][0]["legendformat"] = "x"
    reread = json.loads(json.dumps(Dashboard.from_json(misspelled), cls=JSONEncoder))
    assert {"/panels[1]/fieldconfig", "/panels[1]/targets[0]/legendformat"} <= set(
        lost_keys(misspelled, reread)
    )


def test_dashboard_layout_variables_and_topics() -> None:
    panels = DASHBOARD["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"{p['title']} overlaps another panel"
        cells |= mine
    variables = {v["name"] for v in DASHBOARD["templating"]["list"]}
    for p in panels:
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}" and p["targets"], p["title"]
        for t in p["targets"]:
            assert t["refId"] and t["datasource"]["uid"] == "${datasource}"
            used = set(re.findall(r"\$(\w+)", t["expr"])) - {"__rate_interval"}
            assert used <= variables, (p["title"], used)
    text = " ".join(expressions().values())
    for metric in (
        "vllm:time_to_first_token_seconds_bucket",  # TTFT
        "vllm:inter_token_latency_seconds_bucket",  # ITL
        "vllm:kv_cache_usage_perc",
        "vllm:num_requests_waiting",  # queue depth
        "vllm:prefix_cache_hits_total",
        "vllm:request_success_total",  # request rate
        "DCGM_FI_DEV_FB_USED",  # GPU memory
    ):
        assert metric in text, metric


# -- against a real engine -------------------------------------------------------------------

NOT_VLLM = {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}  # dcgm-exporter's, not vLLM's


@pytest.mark.slow
@pytest.mark.vllm
def test_every_vllm_metric_used_exists_in_a_real_engine(vllm_server: Engine) -> None:  # noqa: F811
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(vllm_server.root + "/metrics", timeout=30, trust_env=False).text
    exposed = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    labels = {k for f in text_string_to_metric_families(text) for s in f.samples for k in s.labels}
    used = set()
    for expr in expressions().values():
        used |= set(re.findall(r"\b((?:vllm:|http_)[a-z_:]+|codectx_[a-z_]+|DCGM_[A-Z_]+)", expr))
    used = {u for u in used if not u.startswith("codectx_")} - NOT_VLLM
    assert used and used <= exposed, sorted(used - exposed)
    assert {"model_name", "finished_reason", "status"} <= labels
