"""Vectors where the user is, first (issue 20, item 4): `codectx lsp` on Django with vectors on.

The case: Django is indexed (full text and symbols) but owes every vector, as after a first
lexical run or with a new embedding model. The bench copies the lexical index that
`bench/bench_lsp.py` builds (built here first if missing, not measured), starts the real server
over stdio with `index.embed = true`, opens one Django file right after `initialize`, asks one
completion there (as a user who types; the fixed-answer model server answers it), and polls
`codectx/health` once a second. It reports:
- the time from `initialize` to "vectors for the open file's neighbourhood"
  (`near_open_files.vectors == vectors_total`), and how many chunks that neighbourhood holds;
- with `--all`, the time to "all vectors" (`vectors_pending == 0`; tens of minutes on 2 cores);
- with `--save`, once the neighbourhood is embedded: a new file is saved in the workspace (a copy
  of the Django tree, so the shared one stays as downloaded) and the bench times `didSave` to
  "its function is found by `codectx.search`", with the vectors still owed at that moment (the
  saved file should not wait for the rest of the embedding).

The model server is a loopback fixed-answer server.
Target: neighbourhood vectors within 60 s of opening a Django file on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

_SANDBOX = Path(tempfile.mkdtemp(prefix="codectx-bench-near-"))
for _var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME"):
    os.environ[_var] = str(_SANDBOX / _var.lower())
os.environ.setdefault("HF_HUB_OFFLINE", "1")
BENCH_CACHE = HERE / "data" / "cache"  # the embedding model's ONNX export, reused between runs
os.environ["XDG_CACHE_HOME"] = str(BENCH_CACHE)

from common import DATA, fetch_sdist, machine, table, write_results  # noqa: E402
from lsprotocol import types  # noqa: E402

from tests.support.lsp_helpers import FixedBackend, lsp_session, plain  # noqa: E402

SDIST = ("django", "5.1.4")
OPEN = "django/db/models/query.py"
TARGET_NEAR_S = 60.0


def lexical_index(root: Path) -> Path:
    """bench_lsp's lexical Django index, built once (not measured)."""
    index_dir = DATA / "lsp-index" / "lexical"
    if not (index_dir / "meta.json").exists():
        print("building the lexical index first (not measured)...", flush=True)
        from codectx.indexer.pipeline import index_workspace

        from codectx.settings import load_settings

        index_workspace(root, load_settings(root, {"index.index_dir": str(index_dir), "index.embed": False}))
    return index_dir


async def measure(
    args: argparse.Namespace, root: Path, index_dir: Path, url: str, work: Path
) -> dict[str, Any]:
    opts = {
        "codectx": {
            "backend": {"url": url},
            "index": {"index_dir": str(index_dir), "embed": True},
            "lsp": {"debounce_ms": 0},
        }
    }
    out: dict[str, Any] = {"load_avg_at_start": os.getloadavg()}
    started = time.perf_counter()
    async with lsp_session(
        work, root, opts, env={"XDG_CACHE_HOME": str(BENCH_CACHE)}, wait_warm=False
    ) as lsp:
        path = root / OPEN
        lsp.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=1, text=path.read_text("utf-8")
                )
            )
        )
        # The user types: one completion, as in an editor. An indexed folder's first check waits
        # for a first answer (lsp/folders.py: FIRST_CHECK_WAIT_S), so that answer starts the run.
        text = path.read_text("utf-8").splitlines()
        line = next(i for i, t in enumerate(text) if t.startswith("class QuerySet"))
        await lsp.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                position=types.Position(line=line + 1, character=0),
            )
        )
        out["first_completion_s"] = round(time.perf_counter() - started, 1)
        deadline = started + args.limit_s
        while time.perf_counter() < deadline:
            index = plain(await lsp.protocol.send_request_async("codectx/health", {}))["index"]
            near = index.get("near_open_files") or {}
            now = round(time.perf_counter() - started, 1)
            if "near_begin_s" not in out and near.get("vectors_total"):
                out["near_begin_s"] = now  # the run reached the embedding, its neighbourhood first
            if "near_s" not in out and near.get("vectors_total") and near["vectors"] >= near["vectors_total"]:
                out["near_s"], out["near_chunks"] = now, near["vectors_total"]
                print(f"  neighbourhood embedded after {now} s ({near['vectors_total']} chunks)", flush=True)
                if args.save:
                    out["save"] = await saved_file_found(lsp, root, deadline)
                if not args.all:
                    break
            if "near_s" in out and index.get("state") == "ready" and not index.get("vectors_pending"):
                out["all_s"] = now
                break
            out["last_health"] = index
            await asyncio.sleep(1.0)
    return out


SAVED = "django/codectx_bench_saved.py"
MARKER = "codectx_bench_saved_marker"


async def saved_file_found(lsp: Any, root: Path, deadline: float) -> dict[str, Any]:
    """Save a new file, then time didSave -> its function found by `codectx.search`."""
    path = root / SAVED
    path.write_text(f"def {MARKER}(value):\n    return value\n", encoding="utf-8")
    saved = time.perf_counter()
    lsp.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    while time.perf_counter() < deadline:
        found = await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="codectx.search", arguments=[{"query": MARKER, "k": 3}])
        )
        if any(str(loc.get("uri", "")).endswith(SAVED) for loc in found or []):
            index = plain(await lsp.protocol.send_request_async("codectx/health", {}))["index"]
            result = {
                "found_s": round(time.perf_counter() - saved, 1),
                "vectors_pending": index["vectors_pending"],
            }
            print(f"  saved file found by search {result['found_s']} s after didSave", flush=True)
            return result
        await asyncio.sleep(0.5)
    return {"found_s": None}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--all", action="store_true", help="also wait for every vector (tens of minutes)")
    parser.add_argument(
        "--save", action="store_true", help="then save a new file and time it until search finds it"
    )
    parser.add_argument("--limit-s", type=float, default=600.0, help="give up after this long (default 600)")
    args = parser.parse_args()
    root = fetch_sdist(*SDIST)
    lexical = lexical_index(root)
    from codectx.indexer.embedding.embedder import Embedder

    from codectx.settings import load_settings

    Embedder.from_settings(load_settings(root, {})).embed_query("warm the export cache")
    work = Path(tempfile.mkdtemp(prefix="codectx-bench-near-work-"))
    fixed = FixedBackend().start()
    try:
        index_dir = work / "index"
        shutil.copytree(lexical, index_dir)  # the shared lexical index stays without vectors
        if args.save:  # the saved file goes into a copy (same mtimes: the index stays current)
            root = Path(shutil.copytree(root, work / "tree", symlinks=True))
        result = asyncio.run(measure(args, root, index_dir, fixed.url, work / "session"))
    finally:
        fixed.stop()
        shutil.rmtree(work, ignore_errors=True)
    result |= {"workspace": f"{SDIST[0]}=={SDIST[1]}", "open_file": OPEN, "machine": machine()}
    near = f"{result['near_s']} s ({result['near_chunks']} chunks)" if "near_s" in result else "not reached"
    rows = [
        ("initialize -> open file's neighbourhood embedded", near, f"<= {TARGET_NEAR_S:.0f} s"),
        (
            "initialize -> all vectors",
            f"{result['all_s']} s" if "all_s" in result else "not measured (--all)",
            "",
        ),
        ("initialize -> first completion answered", f"{result.get('first_completion_s')} s", ""),
        (
            "initialize -> embedding begins (index check, model load)",
            f"{result['near_begin_s']} s" if "near_begin_s" in result else "not seen",
            "",
        ),
        ("load average at start", "/".join(f"{v:.1f}" for v in result["load_avg_at_start"]), ""),
    ]
    if args.save:
        save = result.get("save") or {}
        rows.append(
            (
                "didSave -> the saved file found by search",
                f"{save['found_s']} s ({save['vectors_pending']} vectors still owed)"
                if save.get("found_s") is not None
                else "not found",
                "",
            )
        )
    print(table(rows))
    print(f"written: {write_results('bench_near_vectors', result)}")
    return 0 if "near_s" in result else 1


if __name__ == "__main__":
    raise SystemExit(main())
