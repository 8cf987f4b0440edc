"""Name vectors: a second, short vector per chunk (symbol words + signature) mixed into dense search."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from codectx.indexer.embedding.embedder import Embedder, name_model_id, name_text
from codectx.indexer.model import Chunk
from codectx.indexer.pipeline import ProgressEvent, index_workspace
from codectx.indexer.storage.store import IndexStore, vectors_table_name
from codectx.retriever import search as search_module
from codectx.retriever.search import HybridSearcher

from codectx.settings import Settings, load_settings
from tests.support.workspace import write_workspace

FILES = {
    "app/phone.py": '''"""Contact helpers."""


def normalize_phone_number(raw):
    digits = [c for c in raw if c.isdigit()]
    return "+" + "".join(digits[-11:])


def merge_records(left, right):
    out = dict(left)
    out.update({k: v for k, v in right.items() if v is not None})
    return out
''',
    "app/cache.py": '''class LruCache:
    """Keeps the most recently used entries."""

    def evict_oldest(self):
        self.entries.pop(next(iter(self.entries)))
''',
    "README.md": "# Contacts\n\nTools for phone books.\n",
}
QUERY = "normalize a phone number"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(backend="torch", batch_size=8)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "ws", FILES)


def settings_for(root: Path, **values: object) -> Settings:
    return load_settings(root, {"index.index_dir": str(root / ".codectx"), **values}, environ={})


def chunk_named(store: IndexStore, symbol: str) -> Chunk:
    return next(c for c in store.all_chunks() if c.symbol == symbol)


def matrix(store: IndexStore, model_id: str) -> dict[str, np.ndarray]:
    found = store.vector_matrix(model_id)
    assert found is not None
    hashes, rows = found
    return dict(zip(hashes, rows, strict=True))


def test_name_text_is_the_symbol_as_words_and_the_signature() -> None:
    chunk = Chunk(
        "a/b.py", "python", "method", "sendHTTPRequest_now", "Client.sendHTTPRequest_now",
        "def sendHTTPRequest_now(self, url):", "Send it.", 3, 9, 0, 10, "body", "h" * 64,
    )  # fmt: skip
    assert name_text(chunk) == "send http request now\ndef sendHTTPRequest_now(self, url):"
    assert "Send it" not in name_text(chunk) and "Client" not in name_text(chunk)
    assert name_text(replace(chunk, symbol="", qualname="")) == ""


def test_indexing_stores_name_vectors_once_per_content(ws: Path, embedder: Embedder) -> None:
    settings = settings_for(ws)
    events: list[ProgressEvent] = []
    index_workspace(ws, settings, events.append, embedder=embedder)
    store = IndexStore.open(ws / ".codectx")
    names = matrix(store, name_model_id(embedder.model_id))
    assert [(e.done, e.total) for e in events if e.stage == "names"][-1] == (len(names), len(names))
    chunks = {c.content_hash: c for c in store.all_chunks()}
    assert set(names) == set(chunks)
    named = [h for h, c in chunks.items() if c.symbol]
    unnamed = [h for h, c in chunks.items() if not c.symbol]
    assert named and unnamed and embedder.name_calls == len(named)
    assert all(not names[h].any() for h in unnamed)  # "no name": a zero vector
    expected = embedder.embed_names([chunks[h] for h in named])
    for h, vec in zip(named, expected, strict=True):
        assert float(names[h] @ vec) > 0.99

    # A real run with nothing changed embeds no name again.
    calls, name_calls = embedder.calls, embedder.name_calls
    index_workspace(ws, settings, embedder=embedder, check_manifest=False)
    assert (embedder.calls, embedder.name_calls) == (calls, name_calls)

    # One new function: only its content gets a name vector.
    path = ws / "app/phone.py"
    path.write_text(path.read_text() + "\n\ndef format_country_code(code):\n    return '+' + code\n")
    index_workspace(ws, settings, embedder=embedder)
    assert embedder.name_calls - name_calls == 1
    assert chunk_named(store, "format_country_code").content_hash in matrix(
        store, name_model_id(embedder.model_id)
    )


def test_index_without_name_vectors_searches_by_body_then_gets_them(ws: Path, embedder: Embedder) -> None:
    settings = settings_for(ws)
    index_workspace(ws, settings, embedder=embedder)
    shutil.rmtree(ws / ".codectx" / "db" / f"{vectors_table_name(name_model_id(embedder.model_id))}.lance")
    store = IndexStore.open(ws / ".codectx")
    vec = embedder.embed_query(QUERY)
    body = [(h.chunk.id, round(h.score, 5)) for h in store.vector_search(vec, 5, embedder.model_id)]
    hits = HybridSearcher(store, settings, embedder=embedder).dense_hits(vec, 5, embedder.model_id)
    assert [(h.chunk.id, round(h.score, 5)) for h in hits] == body

    calls = embedder.calls
    index_workspace(ws, settings, embedder=embedder, check_manifest=False)
    assert embedder.calls == calls and embedder.name_calls > 0  # bodies reused, names filled
    store = IndexStore.open(ws / ".codectx")
    assert set(matrix(store, name_model_id(embedder.model_id))) == store.chunk_hashes()


def test_dense_score_mixes_body_and_name_cosines(ws: Path, embedder: Embedder) -> None:
    index_workspace(ws, settings_for(ws), embedder=embedder)
    store = IndexStore.open(ws / ".codectx")
    body = matrix(store, embedder.model_id)
    names = matrix(store, name_model_id(embedder.model_id))
    vec = embedder.embed_query(QUERY)
    total = len(store.chunk_hashes())

    for weight in (0.0, 0.5, 1.0):
        searcher = HybridSearcher(store, settings_for(ws, **{"retriever.name_weight": weight}), embedder)
        hits = searcher.dense_hits(vec, total, embedder.model_id)
        assert len({h.chunk.content_hash for h in hits}) == total
        for hit in hits:
            h = hit.chunk.content_hash
            want = (1 - weight) * float(body[h] @ vec) + weight * float(names[h] @ vec)
            assert hit.score == pytest.approx(want, abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        if weight == 1.0:  # by name alone, the function called what the query says comes first
            assert hits[0].chunk.symbol == "normalize_phone_number"
            assert all(h.score == 0 for h in hits if not h.chunk.symbol)

    # The same mix reaches search(): the dense list's first entry.
    searcher = HybridSearcher(store, settings_for(ws, **{"retriever.name_weight": 1.0}), embedder)
    top = [r for r in searcher.search(QUERY, k=10).results if r.sources.get("dense") == 1]
    assert [r.symbol for r in top] == ["normalize_phone_number"]


def test_rerank_by_hash_reads_only_the_chunks_it_keeps(
    ws: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nearest hashes are re-ranked before any chunk is read, so a one-shot search reads k
    rows, not the re-ranked pool; the answer is the one the pool of chunks gives."""
    index_workspace(ws, settings_for(ws), embedder=embedder)
    store = IndexStore.open(ws / ".codectx")
    searcher = HybridSearcher(store, settings_for(ws, **{"retriever.name_weight": 0.5}), embedder)
    vec = embedder.embed_query(QUERY)
    monkeypatch.setattr(search_module, "SPARE_ROWS", 0)  # the pool here is 4 of 6 chunks: read 1
    read: list[int] = []
    hits_for = searcher.store.hits_for
    monkeypatch.setattr(
        searcher.store, "hits_for", lambda scored: read.append(len(scored)) or hits_for(scored)
    )
    by_hash = searcher.dense_hits(vec, 1, embedder.model_id)
    assert read == [1]
    monkeypatch.setattr(searcher.store, "nearest_hashes", lambda *_a: None)  # the pool of chunks
    by_chunk = searcher.dense_hits(vec, 1, embedder.model_id)
    assert [(h.chunk.id, round(h.score, 5)) for h in by_hash] == [
        (h.chunk.id, round(h.score, 5)) for h in by_chunk
    ]


def test_rerank_by_hash_reads_past_stale_vectors(
    ws: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors whose content no chunk has any more (an edited function leaves one, next to its
    new vector) are skipped by reading on: the answer still has k hits."""
    index_workspace(ws, settings_for(ws), embedder=embedder)
    store = IndexStore.open(ws / ".codectx")
    vec = embedder.embed_query(QUERY)
    stale = [f"{i:064x}" for i in range(6)]  # nearer than any chunk; the pool for k=3 is 12
    store.add_vectors(embedder.model_id, stale, np.tile(np.asarray(vec, dtype=np.float32), (6, 1)))
    monkeypatch.setattr(search_module, "SPARE_ROWS", 0)  # the first read is all stale
    searcher = HybridSearcher(store, settings_for(ws, **{"retriever.name_weight": 0.5}), embedder)
    total = len(store.chunk_hashes())
    hits = searcher.dense_hits(vec, 3, embedder.model_id)
    assert len(hits) == 3 < total
    assert all(h.chunk.content_hash not in stale for h in hits)


def test_mixed_score_of_a_chunk_without_a_name_vector_is_its_body_score(ws: Path, embedder: Embedder) -> None:
    index_workspace(ws, settings_for(ws), embedder=embedder)
    store = IndexStore.open(ws / ".codectx")
    searcher = HybridSearcher(store, settings_for(ws, **{"retriever.name_weight": 0.5}), embedder)
    vec = embedder.embed_query(QUERY)
    chunk = chunk_named(store, "normalize_phone_number")
    name_cos = float(matrix(store, name_model_id(embedder.model_id))[chunk.content_hash] @ vec)
    assert searcher.mixed_score(vec, chunk, 0.2, embedder.model_id) == pytest.approx(0.1 + 0.5 * name_cos)
    pending = replace(chunk, content_hash="0" * 64)  # as if its name vector were not embedded yet
    assert searcher.mixed_score(vec, pending, 0.2, embedder.model_id) == 0.2


def test_a_long_lived_searcher_sees_vectors_added_after_its_first_answer(
    ws: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codectx.retriever.snapshot as snapshot

    monkeypatch.setattr(snapshot, "CHECK_INTERVAL_S", 0.0)
    settings = settings_for(ws)
    index_workspace(ws, settings, embed=False)
    store = IndexStore.open(ws / ".codectx")
    searcher = HybridSearcher(store, settings, embedder=embedder, preload=True)
    first = searcher.search(QUERY, k=5)
    assert not any(r.sources.get("dense") for r in first.results)

    # Vectors fill in later (another process, or the server's own embedding stage): the chunks
    # table does not move, only the vectors tables do.
    index_workspace(ws, settings, embedder=embedder, check_manifest=False)
    later = searcher.search(QUERY, k=5)
    dense = [r for r in later.results if r.sources.get("dense") == 1]
    assert [r.symbol for r in dense] == ["normalize_phone_number"]
