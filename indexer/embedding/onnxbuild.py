"""Building the fast int8 ONNX files the embedder runs, once per model, into the cache.

Two ways in, one recipe out (BERT fusions, then int8 dynamic quantization with
per-channel 7-bit weights):

- `requantize_int8`: the bundled model's packaged file (int8 weights that
  onnxruntime turns back into float matrix products, ~27% more CPU per chunk)
  becomes MatMulInteger kernels. onnxruntime and onnx only, no torch: a few
  seconds, on first use.
- `export_int8`: a sentence-transformers folder (`index.model = "/path"`) is
  exported from torch first; that needs the `[torch]` extra.

Both write into a temporary folder beside the target and rename it into place,
so a killed run leaves no half-written model and two processes racing to build
the same one both end up with a good one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codectx.indexer.errors import EmbedderError

from codectx.runtime import no_onnx_telemetry

MODEL_FILE = "model-int8.onnx"
TORCH_EXTRA = "pip install './codectx[torch]' (in codectx's environment, from its checkout)"


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporter, optimizer and quantizer warn about details that do not apply to these models."""
    root_logger = logging.getLogger()
    level = root_logger.level
    root_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root_logger.setLevel(level)


def _quantize(source: Path, target: Path) -> None:
    no_onnx_telemetry()  # before the import: ONNX Runtime writes its telemetry store when loaded
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        # Per-channel 7-bit weights: plain int8 loses accuracy (cosine ~0.89 to fp32 on code) on
        # CPUs without VNNI; this keeps it at ~0.99.
        per_channel=True,
        reduce_range=True,
        # Fused ops (from the optimizer) defeat shape inference; their tensors are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def _fuse_bert(source: Path, target: Path, num_heads: int, hidden_size: int, opt_level: int | None) -> None:
    no_onnx_telemetry()
    from onnxruntime.transformers.optimizer import optimize_model

    fused = optimize_model(
        str(source), model_type="bert", num_heads=num_heads, hidden_size=hidden_size, opt_level=opt_level
    )
    fused.save_model_to_file(str(target))


def _drop_stale_builds(parent: Path, older_than_s: float = 3600.0) -> None:
    """Scratch folders of builds that were killed (a fused fp32 copy is ~90 MB each)."""
    now = time.time()
    for stale in parent.glob("build-*"):
        try:
            if now - stale.stat().st_mtime > older_than_s:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass


def _build(folder: Path, info: dict[str, Any], steps: Callable[[Path], Path]) -> None:
    """Run `steps(work) -> int8 file` in a scratch folder, then move the result to `folder`."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    _drop_stale_builds(folder.parent)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=folder.parent))
    try:
        with _quiet():
            result = steps(work)
        final = work / "out"
        final.mkdir()
        os.replace(result, final / MODEL_FILE)
        (final / "info.json").write_text(json.dumps(info), encoding="utf-8")
        if folder.exists() and not (folder / MODEL_FILE).is_file():
            shutil.rmtree(folder)  # a broken leftover
        try:
            os.replace(final, folder)
        except OSError:
            pass  # another process finished the same build first; theirs is as good
    finally:
        shutil.rmtree(work, ignore_errors=True)


def requantize_int8(
    source: Path, folder: Path, info: dict[str, Any], num_heads: int, hidden_size: int
) -> Path:
    """`source` (an ONNX BERT encoder with weight-only int8) as a fused, dynamically quantized
    int8 model in `folder`; returns its path. Raises EmbedderError when onnx is missing."""
    no_onnx_telemetry()
    try:
        import onnx  # noqa: F401  (the quantizer needs it)
        import onnxruntime as ort
    except ImportError as exc:
        raise EmbedderError(f"cannot prepare the fast model ({exc}); pip install onnx") from None

    def steps(work: Path) -> Path:
        # onnxruntime's basic level folds the packaged weights back into float initializers (the
        # fusions and the quantizer need those); the session only writes the optimized graph.
        folded = work / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        fused = work / "fused.onnx"
        # opt_level 0: the Python fusions only (the onnxruntime pass they would run imports torch).
        _fuse_bert(folded, fused, num_heads, hidden_size, opt_level=0)
        _quantize(fused, work / MODEL_FILE)
        return work / MODEL_FILE

    _build(folder, info, steps)
    return folder / MODEL_FILE


def export_int8(path: Path, folder: Path, format_version: int) -> None:
    """Export a sentence-transformers folder's transformer to ONNX, fuse BERT ops, quantize to int8."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbedderError(
            f"model {path} is exported to ONNX once, which needs PyTorch ({exc}): {TORCH_EXTRA}; "
            "later runs use the cached export and need no torch"
        ) from None

    with _quiet():
        st = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    hf: Any = st[0].auto_model
    hf.eval()
    tokenizer = st.tokenizer
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tokenizer.model_input_names]

    class _Wrapper(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, args, strict=True))).last_hidden_state  # type: ignore[no-any-return]

    sample = tokenizer(
        ["def f(x):\n    return x", "a longer sample sentence for export"], padding=True, return_tensors="pt"
    )

    def steps(work: Path) -> Path:
        fp32 = work / "model.onnx"
        axes = {n: {0: "batch", 1: "seq"} for n in [*names, "last_hidden_state"]}
        torch.onnx.export(
            _Wrapper(hf),
            tuple(sample[n] for n in names),
            str(fp32),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
        source = fp32
        config = hf.config
        if getattr(config, "model_type", "") == "bert":
            source = work / "model-opt.onnx"
            _fuse_bert(fp32, source, int(config.num_attention_heads), int(config.hidden_size), opt_level=None)
        _quantize(source, work / MODEL_FILE)
        return work / MODEL_FILE

    getter = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    dims, max_len = int(getter() or 0), int(st.max_seq_length or 256)
    info = {"dims": dims, "max_seq_length": max_len, "format": format_version}
    _build(folder, info, steps)
