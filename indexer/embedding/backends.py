"""The ways an embedding model runs: ONNX Runtime (int8, the default) or sentence-transformers on
torch (the `[torch]` extra). indexer/embedding/embedder.py picks one per model and settings;
each encodes a batch of texts into normalized float32 vectors, mean-pooled like
sentence-transformers does, so either backend gives the same model's vectors.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
from codectx.indexer.embedding.onnxbuild import MODEL_FILE, TORCH_EXTRA, export_int8
from codectx.indexer.errors import EmbedderError

ONNX_FORMAT = 3  # bump when the export recipe changes, so cached exports are redone
BULK_BATCH = 4  # ONNX bulk batch: small batches waste little padding (measured best of 4-32)


def quiet_transformers() -> None:
    """No download/loading progress bars from transformers inside our own progress display."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        pass


class Backend:
    name = ""
    dims = 0
    workers = 1  # threads that encode batches side by side
    bulk_batch = 0  # batch size for bulk encoding (0: the embedder's)

    def encode(self, texts: list[str], max_tokens: int | None = None, bulk: bool = False) -> np.ndarray:
        """`bulk`: one of many batches (the backend may use its single-thread session)."""
        raise NotImplementedError


class TorchBackend(Backend):
    name = "torch"

    def __init__(self, path: Path, threads: int) -> None:
        quiet_transformers()
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(
                f"the torch embedding backend needs PyTorch and sentence-transformers ({exc}): {TORCH_EXTRA}"
            ) from None

        torch.set_num_threads(threads)
        try:
            self.model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except Exception as exc:  # any load failure is a user-facing configuration problem
            raise EmbedderError(f"cannot load embedding model {path}: {exc}") from exc
        self.dims = embedding_dims(self.model)

    def encode(self, texts: list[str], max_tokens: int | None = None, bulk: bool = False) -> np.ndarray:
        full = self.model.max_seq_length
        if max_tokens:
            self.model.max_seq_length = min(int(full or max_tokens), max_tokens)
        try:
            vectors = self.model.encode(
                texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True
            )
        finally:
            self.model.max_seq_length = full
        return np.asarray(vectors, dtype=np.float32)


def exported_backend(path: Path, folder: Path, threads: int) -> OnnxBackend:
    """A folder model's cached int8 export, made once (with torch) if missing."""
    model_file = folder / MODEL_FILE
    if not model_file.is_file():
        export_int8(path, folder, ONNX_FORMAT)
    info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
    tokenizer_json = tokenizer_json_of(path)
    return OnnxBackend(
        model_file,
        int(info["dims"]),
        int(info["max_seq_length"]),
        tokenizer_json,
        None if tokenizer_json else path,
        threads,
    )


class OnnxBackend(Backend):
    name = "onnx-int8"

    def __init__(
        self,
        model_file: Path,
        dims: int,
        max_len: int,
        tokenizer_json: str,
        tokenizer_folder: Path | None,
        threads: int,
    ) -> None:
        """`tokenizer_json`: a fast-tokenizer file's text; without one, transformers' tokenizer of
        `tokenizer_folder` (a folder model without tokenizer.json; needs the torch extra)."""
        self.dims = dims
        self.max_len = max_len
        self._tokenizer_json = tokenizer_json
        self._tokenizers: dict[int, Any] = {}
        self._tokenizers_lock = threading.Lock()
        self.tokenizer = None
        if not tokenizer_json:
            if tokenizer_folder is None:
                raise EmbedderError("the ONNX model has no tokenizer")
            self.tokenizer = auto_tokenizer(tokenizer_folder)
        self._model_file = model_file
        # A query is one short text: all cores work on it. Bulk batches run one per thread on a
        # single-thread session (made on first use); the fast tokenizer encodes thread-safely.
        self.session = self._session(threads)
        self._bulk: Any = None
        self._bulk_lock = threading.Lock()
        if threads > 1 and self.tokenizer is None:
            self.workers = threads
            self.bulk_batch = BULK_BATCH
        self.inputs = {i.name for i in self.session.get_inputs()}

    def _session(self, threads: int) -> Any:
        from codectx.runtime import no_onnx_telemetry

        no_onnx_telemetry()  # before the import: ONNX Runtime writes its telemetry store when loaded
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle pool threads would spin after each run, taking the core that the caller's next
        # step needs (context p95 on Django 68.6 -> 51.5 ms with this alone).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self._model_file), options, providers=["CPUExecutionProvider"])

    def _bulk_session(self) -> Any:
        with self._bulk_lock:
            if self._bulk is None:
                self._bulk = self._session(1)
            return self._bulk

    def _tokenize(self, texts: list[str], limit: int) -> dict[str, np.ndarray]:
        """Input ids, attention mask and token types, padded to the longest text, cut at `limit`."""
        if self.tokenizer is not None:
            enc = self.tokenizer(texts, padding=True, truncation=True, max_length=limit, return_tensors="np")
            return {k: np.asarray(v) for k, v in enc.items()}
        tok = self._tokenizers.get(limit)
        if tok is None:
            from tokenizers import Tokenizer

            # One configured instance per length: configuring is not thread-safe, encoding is.
            tok = Tokenizer.from_str(self._tokenizer_json)
            tok.enable_truncation(max_length=limit)
            pad_id = tok.token_to_id("[PAD]")
            tok.enable_padding(pad_id=pad_id if pad_id is not None else 0, pad_token="[PAD]")
            with self._tokenizers_lock:
                tok = self._tokenizers.setdefault(limit, tok)
        batch = tok.encode_batch(texts)
        return {
            "input_ids": np.array([e.ids for e in batch], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in batch], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in batch], dtype=np.int64),
        }

    def encode(self, texts: list[str], max_tokens: int | None = None, bulk: bool = False) -> np.ndarray:
        limit = min(self.max_len, max_tokens) if max_tokens else self.max_len
        enc = self._tokenize(texts, limit)
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in self.inputs}
        session = self._bulk_session() if bulk and self.workers > 1 else self.session
        (hidden,) = session.run(["last_hidden_state"], feed)
        mask = enc["attention_mask"].astype(np.float32)[:, :, None]
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def tokenizer_json_of(path: Path) -> str:
    """The model's fast-tokenizer file, if it has one: loading it directly spares importing
    transformers (and torch with it), seconds at every start."""
    try:
        return (path / "tokenizer.json").read_text(encoding="utf-8")
    except OSError:
        return ""


def auto_tokenizer(path: Path) -> Any:
    quiet_transformers()
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise EmbedderError(
            f"model {path} has no tokenizer.json; its tokenizer needs transformers: {TORCH_EXTRA}"
        ) from None

    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def embedding_dims(st: Any) -> int:
    getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return int(getter() or 0)
