"""Hybrid search: identifier and natural-language queries, partial indexes, filters, CLI and batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from codectx.indexer.model import Chunk
from codectx.retriever.errors import BadRequest
from codectx.retriever.search import HybridSearcher

from tests.support.indexes import build_index, copy_repo

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def codectx(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codectx", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, object]:
    """One fully indexed repository (vectors included) shared by this module's tests."""
    root = copy_repo("python", tmp_path_factory.mktemp("embedded"))
    settings, store = build_index(root, embed=True)
    return root, settings, store


def test_identifier_query_finds_the_definition_first(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root)
    searcher = HybridSearcher(store, settings)
    top = searcher.search("format_url", k=3).results[0]
    assert (top.path, top.symbol) in {("pkg/util/helpers.py", "format_url"), ("other/fake.py", "format_url")}
    dotted = searcher.search("Client.send", k=3).results
    assert dotted[0].symbol == "send" and dotted[0].kind == "method"
    assert {r.path for r in dotted[:2]} == {"pkg/client.py", "other/fake.py"}


def test_a_qualified_name_ranks_that_definition_over_other_methods_of_the_name(tmp_path: Path) -> None:
    """`Session.send` ranked a test's short `RedirectSession.send` (and then any `send` in path
    order) first: the symbol list ordered a name's definitions by path alone."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    body = "".join(f"        step_{i} = self.prepare(request, {i})\n" for i in range(30))
    (root / "src" / "adapters.py").write_text("class Adapter:\n    def send(self, request):\n" + body)
    (root / "src" / "sessions.py").write_text(
        "class Session:\n    def send(self, request, **kwargs):\n" + body + "        return step_0\n"
    )
    (root / "tests" / "test_s.py").write_text(
        "from src.sessions import Session\n\n\nclass RedirectSession(Session):\n"
        "    def send(self, *a, **k):\n        return Session.send(self, *a, **k)\n"
    )
    settings, store = build_index(root)
    searcher = HybridSearcher(store, settings)
    for query in ("Session.send", "sessions.Session.send", "Session::send"):
        top = searcher.search(query, k=3).results[0]
        assert (top.path, top.qualname) == ("src/sessions.py", "Session.send"), query
    top = searcher.search("Adapter.send", k=3).results[0]
    assert (top.path, top.qualname) == ("src/adapters.py", "Adapter.send")


def test_partial_index_answers_and_says_so(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root, embed=False)
    response = HybridSearcher(store, settings).search("read a port number from text", k=5)
    assert response.partial and not response.dense_used
    assert any("vectors" in note for note in response.notes)
    assert response.results and response.results[0].symbol == "parse_port"
    with pytest.raises(BadRequest):
        HybridSearcher(store, settings).search("   ")


def test_natural_language_query_uses_vectors(embedded: tuple) -> None:
    _root, settings, store = embedded
    searcher = HybridSearcher(store, settings, embedder_factory=_embedder(settings))
    response = searcher.search("release the connection", k=3)
    assert response.dense_used and not response.partial
    assert response.results[0].symbol == "close"
    assert "dense" in response.results[0].sources
    assert not any("names" in r.sources for r in response.results)  # the names list: lexical path only


def test_language_and_glob_filters(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    settings, store = build_index(root)
    searcher = HybridSearcher(store, settings)
    only_pkg = searcher.search("connect", k=10, glob="pkg/**").results
    assert only_pkg and all(r.path.startswith("pkg/") for r in only_pkg)
    assert searcher.search("connect", k=10, languages=["go"]).results == []


def test_glob_is_gitignore_style_and_lang_is_checked_on_the_command_line(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    build_index(root)

    def paths(*args: str) -> set[str]:
        done = codectx(
            "search", "format url port client", ".", "-k", "50", "--json", "--lexical", *args, cwd=root
        )
        assert done.returncode == 0, done.stderr
        return {r["path"] for r in json.loads(done.stdout)["results"]}

    everything = paths()
    assert {"pkg/client.py", "pkg/util/helpers.py"} <= everything
    assert paths("--glob", "pkg/*.py") == {
        p for p in everything if p.count("/") == 1 and p.startswith("pkg/")
    }
    assert "pkg/util/helpers.py" in paths("--glob", "pkg/**/*.py")
    assert paths("--glob", "!pkg/**") == {p for p in everything if not p.startswith("pkg/")} != set()
    assert paths("--glob", "helpers.py") == {"pkg/util/helpers.py"}
    typo = codectx("search", "client", ".", "--lexical", "--lang", "pyhton", cwd=root)
    assert typo.returncode == 2 and "unknown language" in typo.stderr and "python" in typo.stderr
    assert "Traceback" not in typo.stderr
    assert paths("--lang", "Python") == everything


def test_search_cli_json_fields_and_errors(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    build_index(root)
    done = codectx("search", "parse_port", ".", "-k", "2", "--json", "--show", "--lexical", cwd=root)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    first = data["results"][0]
    assert set(first) == {
        "path",
        "start_line",
        "end_line",
        "symbol",
        "qualname",
        "kind",
        "language",
        "score",
        "text",
    }
    assert first["path"] == "pkg/util/helpers.py" and first["start_line"] <= first["end_line"]
    assert "def parse_port" in first["text"]
    missing = codectx("search", "x", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert (
        missing.returncode == 2 and "codectx: error:" in missing.stderr and "Traceback" not in missing.stderr
    )


def test_search_on_missing_and_empty_index(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".git").mkdir(parents=True)
    done = codectx("search", "anything", "ws", cwd=tmp_path)
    assert done.returncode != 0 and "codectx index" in done.stderr and "Traceback" not in done.stderr
    from codectx.indexer.storage.store import IndexStore

    IndexStore.open(tmp_path / "ws" / ".codectx", create=True)
    empty = codectx("search", "anything", "ws", cwd=tmp_path)
    assert empty.returncode != 0 and "no chunks" in empty.stderr


def test_search_batch_mode(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    build_index(root)
    lines = [
        json.dumps({"id": "a", "query": "parse_port"}),
        json.dumps({"id": 7, "query": "format a url from host and port"}),
        json.dumps({"id": "bad", "query": 3}),
    ]
    done = codectx(
        "search", "--batch", "-", ".", "-k", "2", "--lexical", cwd=root, stdin="\n".join(lines) + "\n"
    )
    assert done.returncode == 0, done.stderr
    out = [json.loads(x) for x in done.stdout.splitlines()]
    assert [o["id"] for o in out] == ["a", 7, "bad"]
    assert out[0]["results"][0]["symbol"] == "parse_port"
    assert out[1]["results"][0]["symbol"] == "format_url"
    assert "error" in out[2]
    broken = codectx("search", "--batch", "-", ".", cwd=root, stdin="{not json\n")
    assert broken.returncode == 2 and "not valid JSON" in broken.stderr


def test_lone_surrogates_from_a_client_are_read_as_replacement_characters(tmp_path: Path) -> None:
    """A JSON escape such as \\ud800, or argv bytes that are not UTF-8, made the tokenizer raise:
    the whole batch stopped with a traceback. They are read as U+FFFD, as bad bytes in a file are."""
    root = copy_repo("python", tmp_path)
    build_index(root)
    records = [
        json.dumps(
            {"id": 1, "path": "app/main.py", "text": "def f\ud800():\n    fmt(", "line": 1, "character": 8}
        ),
        json.dumps({"id": 2, "path": "app/main.py", "line": 12, "character": 20}),
    ]
    done = codectx("context", "--batch", "-", ".", "--lexical", cwd=root, stdin="\n".join(records) + "\n")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    out = [json.loads(x) for x in done.stdout.splitlines()]
    assert [o["id"] for o in out] == [1, 2] and all("budget" in o for o in out)
    query = json.dumps({"id": "q", "query": "parse_port\ud800"})
    found = codectx("search", "--batch", "-", ".", cwd=root, stdin=query + "\n")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["symbol"] == "parse_port"
    argv = codectx("search", "--json", "parse_port\udced\udca0\udc80", ".", cwd=root)  # bytes ED A0 80
    assert argv.returncode == 0, argv.stderr
    assert json.loads(argv.stdout)["results"][0]["symbol"] == "parse_port"


def test_context_cli_explain_json_stdin_and_batch(tmp_path: Path) -> None:
    root = copy_repo("python", tmp_path)
    build_index(root)
    explain = codectx(
        "context", "app/main.py", "--line", "13", "--character", "21", "--explain", "--lexical", cwd=root
    )
    assert explain.returncode == 0, explain.stderr
    assert "why: definition of `fmt`" in explain.stdout and "budget" in explain.stdout
    tight = codectx(
        "context",
        "app/main.py",
        "--line",
        "13",
        "--character",
        "21",
        "--explain",
        "--lexical",
        "--budget",
        "160",
        cwd=root,
    )
    assert "left out for the budget" in tight.stdout
    edited = (root / "app/main.py").read_text() + "\ndef extra():\n    return load_settings(\n"
    n = len(edited.split("\n")) - 2
    as_json = codectx(
        "context",
        "app/main.py",
        "--line",
        str(n + 1),
        "--character",
        "26",
        "--stdin",
        "--json",
        "--lexical",
        cwd=root,
        stdin=edited,
    )
    data = json.loads(as_json.stdout)
    assert any(i["symbol"] == "load_settings" and i["reason"] == "definition" for i in data["items"])
    assert {"total", "prefix_used", "suffix_used", "context_used", "dropped"} <= set(data["budget"])
    batch = "\n".join(
        [
            json.dumps({"id": 1, "path": "app/main.py", "line": 12, "character": 20}),
            json.dumps({"id": 2, "path": "app/main.py", "text": "x = 1\n", "line": 9, "character": 0}),
            json.dumps({"id": 3, "path": "../outside.py", "text": "", "line": 0, "character": 0}),
        ]
    )
    done = codectx("context", "--batch", "-", ".", "--lexical", cwd=root, stdin=batch + "\n")
    out = [json.loads(x) for x in done.stdout.splitlines()]
    assert out[0]["id"] == 1 and out[0]["items"] and "budget" in out[0]
    assert set(out[0]["items"][0]) == {
        "path",
        "start_line",
        "end_line",
        "symbol",
        "reason",
        "score",
        "tokens",
    }
    assert "past the end" in out[1]["error"]
    assert "outside the workspace" in out[2]["error"]
    past = codectx("context", "app/main.py", "--line", "999", cwd=root)
    assert past.returncode == 2 and "past the end" in past.stderr and "Traceback" not in past.stderr
    unknown = codectx("context", "app/nope.py", "--line", "1", cwd=root)
    assert unknown.returncode == 2 and "no such file" in unknown.stderr


def test_the_names_list_joins_searches_with_vectors_only_when_weighted(embedded: tuple) -> None:
    from codectx.settings import load_settings

    root, settings, store = embedded
    query = "read a port number from text"  # `parse_port` is made of one of its words
    shipped = HybridSearcher(store, settings, embedder_factory=_embedder(settings))
    lists, _chunks, dense_used = shipped.ranked_lists(query, 10)
    assert dense_used and "dense" in lists and "names" not in lists
    tuned = load_settings(
        root, {"index.index_dir": str(settings.index_dir()), "retriever.name_words_dense_weight": 0.5}
    )
    searcher = HybridSearcher(store, tuned, embedder_factory=_embedder(tuned), preload=True)
    searcher.store.preload(wait=True)  # the name-word index is built from the loaded symbol table
    lists, _chunks, dense_used = searcher.ranked_lists(query, 10)
    assert dense_used and lists["names"]
    assert searcher.weights(query, dense=True)["names"] == 0.5
    assert searcher.weights(query)["names"] == tuned.retriever.name_words_weight
    assert any("names" in r.sources for r in searcher.search(query, k=10).results)


def _embedder(settings: object) -> object:
    from codectx.retriever.opening import embedder_factory

    return embedder_factory(settings)  # type: ignore[arg-type]


def test_prose_searches_rank_test_code_below_the_code_it_tests(tmp_path: Path) -> None:
    from codectx.settings import load_settings

    root = copy_repo("python", tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_ports.py").write_text(
        "from pkg.util.helpers import parse_port\n\n\n"
        "def test_read_a_port_number_from_text():\n"
        "    # read a port number from text: a port number, from text, read\n"
        '    text = "8080"  # the port number text\n'
        "    assert parse_port(text) == 8080  # a number read from text\n",
        encoding="utf-8",
    )
    settings, store = build_index(root)
    query = "read a port number from text"

    def ranked(test_weight: float, q: str = query) -> list[str]:
        tuned = load_settings(
            root, {"index.index_dir": str(settings.index_dir()), "retriever.test_weight": test_weight}
        )
        return [r.symbol for r in HybridSearcher(store, tuned).search(q, k=5).results]

    assert ranked(1.0).index("test_read_a_port_number_from_text") < ranked(1.0).index("parse_port")
    shipped = [r.symbol for r in HybridSearcher(store, settings).search(query, k=5).results]
    assert shipped.index("parse_port") < shipped.index("test_read_a_port_number_from_text")
    # Naming the test finds it first, whatever the weight.
    assert ranked(0.0, "test_read_a_port_number_from_text")[0] == "test_read_a_port_number_from_text"


def test_prose_searches_rank_documentation_below_the_code_it_describes(tmp_path: Path) -> None:
    from codectx.settings import load_settings

    root = copy_repo("python", tmp_path)
    (root / "docs").mkdir()
    (root / "docs" / "ports.md").write_text(
        "# Read a port number from text\n\n"
        + "To read a port number from text, read the text: a port number, from text, read.\n" * 3,
        encoding="utf-8",
    )
    settings, store = build_index(root)
    query = "read a port number from text"

    def ranked(doc_weight: float, q: str = query) -> list[str]:
        tuned = load_settings(
            root, {"index.index_dir": str(settings.index_dir()), "retriever.doc_weight": doc_weight}
        )
        return [
            r.path if not r.symbol else r.symbol for r in HybridSearcher(store, tuned).search(q, k=5).results
        ]

    # `format_url` matches the query's words less than the page does, `parse_port` more.
    assert ranked(1.0).index("docs/ports.md") < ranked(1.0).index("format_url")
    shipped = [
        r.path if not r.symbol else r.symbol
        for r in HybridSearcher(store, settings).search(query, k=6).results
    ]
    assert settings.retriever.doc_weight < 1
    assert shipped.index("format_url") < shipped.index("docs/ports.md")
    # A question about the documentation keeps it where it ranks.
    asked = ranked(settings.retriever.doc_weight, "where do the docs say to read a port number from text")
    assert asked.index("docs/ports.md") < asked.index("format_url")


def _chunk(path: str, language: str, kind: str, symbol: str = "") -> Chunk:
    return Chunk(path, language, kind, symbol, symbol, "", "", 0, 1, 0, 1, "x", path + symbol)


def test_fusion_weighs_module_heads_and_documentation_in_prose_searches_only(tmp_path: Path) -> None:
    chunks = {
        "guide": _chunk("docs/guide.rst", "rst", "text"),
        "head": _chunk("pkg/util.py", "python", "module"),
        "test": _chunk("tests/test_util.py", "python", "function", "test_parse"),
        "code": _chunk("pkg/util.py", "python", "function", "parse_port"),
    }
    lists = {"fts": ["guide", "head", "test", "code"]}  # the definition last in the only list
    settings, store = build_index(copy_repo("python", tmp_path))
    weighed = settings.with_overrides({"retriever.doc_weight": 0.5, "retriever.test_weight": 0.5})

    def order(query: str, tuned: object = weighed) -> list[str]:
        return [f.key for f in HybridSearcher(store, tuned).fuse(query, lists, chunks, 4)]  # type: ignore[arg-type]

    assert order("read a port number")[0] == "code"
    assert order("parse_port") == ["guide", "head", "test", "code"]  # an identifier: as ranked
    assert order("what do the docs say about ports")[:2] == ["guide", "head"]
    assert order("which test reads a port")[0] == "test"
    same = settings.with_overrides({"retriever.doc_weight": 1.0, "retriever.test_weight": 1.0})
    assert order("read a port number", same) == ["guide", "head", "test", "code"]


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_api.py", True),
        ("src/pkg/testing/helpers.py", True),
        ("pkg/client_test.py", True),
        ("src/__tests__/store.ts", True),
        ("src/store.spec.ts", True),
        ("lib/axios.test.js", True),
        ("src/pkg/client.py", False),
        ("src/contest.py", False),
        ("lib/attestation.js", False),
    ],
)
def test_is_test_path(path: str, test: bool) -> None:
    from codectx.retriever.search import is_test_path

    assert is_test_path(path) is test


def test_prose_searches_with_vectors_add_what_the_first_hits_call(tmp_path: Path) -> None:
    """The `calls` list (retriever/calledby.py): a test named after the behaviour asked about
    ranks high and votes for the function it calls, whose name and body share no word with the
    question; identifier queries, searches without vectors and searches reading the index by
    lookups leave the list out."""
    root = copy_repo("python", tmp_path)
    (root / "pkg" / "mailq.py").write_text(
        "def zq_flush(items, sink):\n"
        "    for item in items:\n"
        "        sink.append(item)\n"
        "    return len(items)\n",
        encoding="utf-8",
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_mail.py").write_text(
        "from pkg.mailq import zq_flush\n\n\n"
        "def test_queued_mail_messages_are_delivered_to_the_outbox():\n"
        "    outbox = []\n"
        '    assert zq_flush(["hello"], outbox) == 1\n',
        encoding="utf-8",
    )
    from codectx.indexer.storage.store import IndexStore

    settings, store = build_index(root, embed=True)
    query = "deliver the queued mail messages to the outbox"

    def results(
        calls_weight: float, q: str = query, dense: bool = True, loaded: bool = True, glob: str | None = None
    ) -> list:
        tuned = settings.with_overrides({"retriever.calls_weight": calls_weight})
        # A store of its own when not loaded: one store's snapshot is shared by its searchers.
        opened = store if loaded else IndexStore.open(settings.index_dir())
        searcher = HybridSearcher(opened, tuned, embedder_factory=_embedder(tuned), preload=loaded)
        return searcher.search(q, k=4, dense=dense, glob=glob).results

    def rank(found: list) -> int:
        return next((n for n, r in enumerate(found) if r.symbol == "zq_flush"), len(found))

    shipped, off = results(settings.retriever.calls_weight), results(0.0)
    assert settings.retriever.calls_weight > 0
    assert rank(shipped) < rank(off)
    assert "calls" in shipped[rank(shipped)].sources
    # The search's filters hold for the list too: tests call zq_flush, tests/ is asked for.
    in_tests = results(1.0, glob="tests/**")
    assert in_tests and all(r.path.startswith("tests/") for r in in_tests)
    assert not any("calls" in r.sources for r in results(1.0, "zq_flush"))  # an identifier
    assert not any("calls" in r.sources for r in results(1.0, dense=False))  # no vectors
    # Read by index lookups (a one-shot command), each call resolved would be an index read.
    assert not any("calls" in r.sources for r in results(1.0, loaded=False))
