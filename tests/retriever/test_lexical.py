"""The in-memory full-text index: LanceDB-like analysis, BM25 ranking, updates, use by the snapshot."""

from __future__ import annotations

import time
from pathlib import Path

from codectx.indexer.pipeline import index_paths
from codectx.retriever.lexical import LexicalIndex, analyze
from codectx.retriever.search import HybridSearcher
from codectx.retriever.snapshot import snapshot_of

from tests.support.indexes import build_index, copy_repo


def test_analysis_splits_lowercases_stems_and_drops_stop_words() -> None:
    terms = analyze("The Parser is parsing parsed_files into HTTPRequests")
    assert "the" not in terms and "is" not in terms and "into" not in terms
    assert terms.count("pars") == 2 and "parser" in terms  # parsing/parsed stem alike
    assert "file" in terms and "httprequest" in terms
    assert analyze("x" * 41 + " ok") == ["ok"]


def test_bm25_prefers_rare_terms_and_shorter_documents() -> None:
    index = LexicalIndex(
        [
            ("a", "def send(request): return transport.send(request)"),
            ("b", "def retry(request): backoff and retry the request " + "filler words here " * 20),
            ("c", "def retry_short(request): retry"),
            ("d", "def unrelated(): pass"),
        ]
    )
    keys = [h.key for h in index.search("retry request", 10)]
    assert keys[:2] == ["c", "b"]  # both terms; the shorter document wins
    assert "d" not in keys
    assert index.search("nothing matches this", 5) == []
    assert [h.key for h in index.search("send", 1)] == ["a"]


def test_updates_remove_and_add_documents() -> None:
    index = LexicalIndex([("a", "alpha beta"), ("b", "beta gamma")])
    index.update(removed=["a"], added=[("c", "alpha alpha delta")])
    assert [h.key for h in index.search("alpha", 5)] == ["c"]
    index.update(removed=[], added=[("b", "omega")])  # re-added key replaces the old text
    assert [h.key for h in index.search("gamma", 5)] == []
    assert [h.key for h in index.search("omega", 5)] == ["b"]
    assert len(index) == 2


def test_rebuild_threshold() -> None:
    index = LexicalIndex([(str(i), f"word{i}") for i in range(100)])
    index.update([], [(f"n{i}", "new") for i in range(150)])
    assert not index.needs_rebuild()
    index.update([], [(f"m{i}", "more") for i in range(100)])
    assert index.needs_rebuild()


def test_snapshot_full_text_agrees_with_lancedb_and_follows_reindex(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root)
    snap = snapshot_of(store)
    queries = ["format url", "client send request", "parse config file", "helpers"]
    before = {q: [h.chunk.id for h in store.fts_search(q, 5)] for q in queries}
    snap.preload(wait=True)
    assert snap.lexical_ready
    for q in queries:
        ours = [h.chunk.id for h in snap.fts_search(q, 5)]
        if before[q]:
            assert ours and ours[0] in before[q][:2], q  # same best hit as LanceDB (ties aside)
            assert len(set(ours) & set(before[q])) >= min(len(ours), len(before[q])) - 1, q

    # An edit re-indexed by another component is seen by the in-memory index.
    target = root / "pkg" / "util" / "helpers.py"
    target.write_text(target.read_text() + "\n\ndef zebra_crossing_marker():\n    return 1\n")
    time.sleep(0.01)
    index_paths(root, [target], settings, embed=False)
    snap.refresh(force=False)
    snap._checked = 0.0  # skip the refresh interval
    hits = snap.fts_search("zebra crossing marker", 3)
    assert hits and hits[0].chunk.symbol == "zebra_crossing_marker"
    searcher = HybridSearcher(snap, settings)
    assert searcher.search("zebra_crossing_marker", k=1).results[0].path == "pkg/util/helpers.py"
