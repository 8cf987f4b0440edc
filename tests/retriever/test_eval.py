"""`codectx eval`: tasks built from the repository itself, metrics for codectx and BM25."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from codectx.retriever.eval import code_tasks, run_eval, text_tasks

from tests.support.indexes import build_index, copy_repo


def test_tasks_come_from_cross_file_calls_and_docstrings(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    _settings, store = build_index(root)
    tasks = code_tasks(store, root, limit=50, seed=0)
    kinds = {t.kind for t in tasks}
    assert kinds == {"cross_file_typed", "cross_file_untyped"}
    for task in tasks:
        assert task.gold.path != task.path
        row = task.text.split("\n")[task.line]
        if task.kind == "cross_file_typed":
            assert row[: task.character].endswith("(")
        else:
            assert task.character == len(row) and task.callee not in row[task.character - 1 :]
    callees = {t.callee for t in tasks}
    assert "parse_port" not in callees  # never called anywhere
    assert "load_settings" not in callees
    nl = text_tasks(list(store.all_chunks()), limit=50, seed=0)
    assert any(t.query == "Join a host and a port into a URL." for t in nl)


def test_run_eval_reports_both_systems(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, **{"retriever.context_dense": False})
    report = run_eval(store, settings, root, embedder=None, limit=50)
    typed = report["results"]["cross_file_typed"]
    assert typed["codectx"]["tasks"] == typed["bm25"]["tasks"] > 0
    assert typed["codectx"]["recall@5"] == 1.0  # every callee is imported: the resolver must find it
    for systems in report["results"].values():
        for m in systems.values():
            if m["tasks"]:
                assert 0 <= m["recall@1"] <= m["recall@5"] <= m["recall@10"] <= 1
                assert m["p50_ms"] <= m["p95_ms"]


def test_eval_cli_json(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    build_index(root)
    done = subprocess.run(
        [sys.executable, "-m", "codectx", "eval", ".", "--json", "--lexical", "--limit", "20"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data["results"]) == {"cross_file_typed", "cross_file_untyped", "natural_language"}
    bad = subprocess.run(
        [sys.executable, "-m", "codectx", "eval", ".", "--limit", "0"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--limit" in bad.stderr
    # Without --lexical on an index with no vectors: measured (and reported) as the lexical path;
    # it said "vectors on" and loaded the model for nothing.
    plain = subprocess.run(
        [sys.executable, "-m", "codectx", "eval", ".", "--json", "--limit", "5"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["dense"] is False and "no vectors yet" in plain.stderr


def test_untyped_tasks_hide_the_rest_of_the_function_being_written(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    (root / "app" / "twice.py").write_text(
        "import json\n\nfrom app.urls import join_url\n\n\n"
        "def build(host):\n"
        "    first = join_url(host, 1)\n"
        "    second = join_url(host, 2)\n"
        "    return [first, second]\n\n\n"
        "def dump(data):\n"
        "    data.parse_blob(1)\n"
        "    return json.loads(data)\n"
    )
    (root / "app" / "other.py").write_text(
        "def loads(text):\n    return text\n\n\n"
        "def wrapper():\n    def parse_blob(x):\n        return x\n\n    return parse_blob\n"
    )
    (root / "app" / "urls.py").write_text("def join_url(host, n):\n    return host * n\n")
    _settings, store = build_index(root)
    tasks = [t for t in code_tasks(store, root, limit=50, seed=0) if t.path == "app/twice.py"]
    by_kind = {t.kind: t for t in tasks}
    typed, untyped = by_kind["cross_file_typed"], by_kind["cross_file_untyped"]
    assert untyped.callee == "join_url" and untyped.line == 6
    rows, original = untyped.text.split("\n"), typed.text.split("\n")
    assert len(rows) == len(original)  # blanked, not deleted: line numbers match the index
    assert rows[6] == "    first = " and rows[7] == rows[8] == ""  # the rest of build() is hidden
    assert "join_url" not in "\n".join(rows[untyped.line + 1 :])
    assert rows[11:] == original[11:]  # later functions are untouched
    assert typed.text == (root / "app" / "twice.py").read_text()
    # `json.loads(` calls the library, not app/other.py's loads, though the names match.
    assert all(t.callee != "loads" for t in tasks)
    # `data.parse_blob(` cannot reach a function nested in wrapper(): no task with a guessed gold.
    assert all(t.callee != "parse_blob" for t in tasks)


def test_every_kind_searches_the_in_memory_full_text_index(tmp_path: Path) -> None:
    # A kind run alone used to meet LanceDB's full-text search while the same kind after the
    # cross-file ones met the in-memory index: figures depended on which kinds ran first.
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, **{"retriever.context_dense": False})
    asked: list[str] = []
    original = store.fts_search

    def spy(query: str, k: int, *args: object, **kwargs: object) -> object:
        asked.append(query)
        return original(query, k, *args, **kwargs)

    store.fts_search = spy  # type: ignore[method-assign]
    alone = run_eval(store, settings, root, embedder=None, limit=50, kinds=["natural_language"])
    assert alone["results"]["natural_language"]["codectx"]["tasks"] > 0
    assert asked == []
    again = copy_repo("python", tmp_path / "again")
    settings2, store2 = build_index(again, **{"retriever.context_dense": False})
    every = run_eval(store2, settings2, again, embedder=None, limit=50)
    ranks = ("tasks", "recall@1", "recall@5", "recall@10", "mrr@10")
    first, after = (r["results"]["natural_language"]["codectx"] for r in (alone, every))
    assert {k: first.get(k) for k in ranks} == {k: after.get(k) for k in ranks}


def test_the_hidden_doc_gold_sits_where_the_full_text_index_would_rank_it(tmp_path: Path) -> None:
    # The gold (docstring removed) is re-placed in the full-text list; the list must stay in the
    # order of the scores its own index gives, the gold's counted without its doc.
    from codectx.retriever.eval import ChunkBM25, hidden_doc_lists, strip_doc
    from codectx.retriever.search import HybridSearcher, fts_terms

    root = copy_repo("python", tmp_path)
    settings, store = build_index(root)
    chunks = list(store.all_chunks())
    searcher = HybridSearcher(store, settings)
    searcher.store.preload(wait=True)
    bm25, placed = ChunkBM25(chunks), 0
    for task in text_tasks(chunks, limit=50, seed=0):
        found = hidden_doc_lists(searcher, bm25, None, task, 50)
        shown = [strip_doc(task.gold) if i == task.gold.id else found.chunks[i] for i in found.lists["fts"]]
        scores = searcher.store.text_scores(fts_terms(task.query), shown)
        assert scores is not None
        assert scores == sorted(scores, reverse=True), task.query
        placed += task.gold.id in found.lists["fts"]
    assert placed  # some golds still match without their docstring


def test_a_hidden_doc_gold_below_the_lists_cut_is_left_out(tmp_path: Path) -> None:
    # With its docstring the gold leads the full-text list; without it, `depth` other chunks
    # outscore it, so the search's list (cut at `depth`) would not hold it. It used to be
    # judged against depth - 1 others (its own entry removed) and placed last, in view.
    from codectx.retriever.eval import ChunkBM25, TextTask, hidden_doc_lists
    from codectx.retriever.search import HybridSearcher

    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    others = "".join(
        f"def reader_{i}(stream):\n    tokens = stream.tokens()\n"
        "    return [t for t in tokens if t.tokens]\n\n\n"
        for i in range(6)
    )
    gold_text = (
        "def fold(items):\n"
        '    """Merge the tokens of a stream into one list of tokens."""\n'
        "    out = []\n    for item in items:\n        out.extend(item.tokens)\n    return out\n"
    )
    (root / "mod.py").write_text(others + gold_text)
    settings, store = build_index(root, **{"retriever.context_dense": False})
    chunks = list(store.all_chunks())
    gold = next(c for c in chunks if c.symbol == "fold")
    searcher = HybridSearcher(store, settings)
    searcher.store.preload(wait=True)
    task = TextTask("Merge the tokens of a stream into one list of tokens.", gold)
    bm25 = ChunkBM25(chunks)
    assert gold.id not in hidden_doc_lists(searcher, bm25, None, task, 3).lists["fts"]
    # Deep enough for it to outscore the last of `depth` others, it is placed.
    deep = hidden_doc_lists(searcher, bm25, None, task, 10).lists["fts"]
    assert gold.id in deep and len(deep) <= 10
