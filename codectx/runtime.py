"""The process-wide switches every entry point throws first: no telemetry, no downloads, no stray files.

`quiet_dependencies()` is called by the CLI's `main` (so by `codectx lsp` too)
before anything imports a model library. What it switches off, and why each:

- ONNX Runtime 1.32 creates a telemetry store at import time
  (`$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/deviceid` and
  `onnxruntime.db`, queued events with OS, CPU, Python path, model file name;
  the library holds an upload endpoint). `disable_telemetry_events()` comes
  too late for that: the store is already written. `ORT_DISABLE_TELEMETRY=1`
  in the environment before the import stops it: tried in a sandboxed HOME and
  XDG folders, no file is written (tests/privacy/test_telemetry.py checks it).
- Hugging Face hub and transformers: `HF_HUB_DISABLE_TELEMETRY`, offline mode
  (codectx never downloads a model), no implicit token, and `HF_HOME` inside
  codectx's cache folder so whatever they keep lands there.
- vLLM (started by `codectx backend serve`): usage statistics off
  (`VLLM_NO_USAGE_STATS`, `DO_NOT_TRACK`); the child keeps downloads
  allowed and the user's own Hugging Face cache (`child_environ`): a server
  may need to fetch its model.
- tokenizers, LanceDB, torch: tokenizers and torch have no telemetry (only
  the fork warning, silenced); LanceDB 0.40 reports metrics only to an
  OpenTelemetry provider the application installs, which codectx does not.
- The MCP SDK (`codectx mcp`) wraps every message in an OpenTelemetry span
  through `opentelemetry-api`; without an SDK installed that API is a no-op
  and exports nothing, and `OTEL_SDK_DISABLED=true` keeps it so if a user has
  an OpenTelemetry SDK in the same environment (tests/mcp/test_mcp_http.py runs
  the server under strace: no connection at all).

An explicit call, not an import side effect: importing codectx changes nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# name -> value; forced (telemetry must not be switched back on by chance)
TELEMETRY_OFF: Mapping[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_DO_NOT_TRACK": "1",
    "OTEL_SDK_DISABLED": "true",
}
# name -> value; only where the user set nothing (a user's own choice stands)
OFFLINE: Mapping[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
_added: dict[str, str] = {}


def quiet_dependencies(environ: dict[str, str] | None = None) -> None:
    """Switch off every dependency's telemetry and downloads for this process (idempotent)."""
    env = os.environ if environ is None else environ
    for name, value in TELEMETRY_OFF.items():
        env[name] = value
    for name, value in OFFLINE.items():
        if name not in env:
            env[name] = value
            _added[name] = value
    if "HF_HOME" not in env:
        from codectx.settings import cache_dir

        env["HF_HOME"] = str(cache_dir() / "huggingface")
        _added["HF_HOME"] = env["HF_HOME"]
    if "onnxruntime" in sys.modules:  # imported before us (an embedding host): at least stop events
        no_onnx_telemetry()


def no_onnx_telemetry() -> None:
    """Just before ONNX Runtime is imported (the embedder calls it): its telemetry off even when
    codectx runs as a library in a host that never called `quiet_dependencies`."""
    if "onnxruntime" not in sys.modules:
        os.environ["ORT_DISABLE_TELEMETRY"] = "1"
        return
    try:
        sys.modules["onnxruntime"].disable_telemetry_events()
    except Exception:
        pass


def child_environ() -> dict[str, str]:
    """The environment for a model server codectx starts: telemetry off, downloads as the user has them."""
    env = dict(os.environ)
    for name, value in _added.items():  # offline mode and our HF_HOME: the server uses the user's cache
        if env.get(name) == value:
            del env[name]
    env.update(TELEMETRY_OFF)
    return env
