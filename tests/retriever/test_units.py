"""The retriever's pure parts: fusion, BM25, token counting, budget cuts, merging, doc hiding."""

from __future__ import annotations

from pathlib import Path

import pytest
from codectx.indexer.model import Chunk
from codectx.indexer.parsing.identifiers import split_identifier
from codectx.retriever.budget import cut_prefix, cut_suffix, cut_to_tokens
from codectx.retriever.candidates import Candidate, merge_overlaps
from codectx.retriever.cursor_info import fallback_cursor_info
from codectx.retriever.eval import IDENTIFIER_TERMS, ChunkBM25, first_sentence, strip_doc
from codectx.retriever.fusion import weighted_rrf
from codectx.retriever.lexical import LexicalIndex
from codectx.retriever.search import fts_terms, is_identifier_query, symbol_names
from codectx.retriever.terms import tokenize
from codectx.retriever.tokens import ApproxTokenCounter, LocalTokenCounter, default_counter


def _chunk(path: str, start: int, end: int, text: str, doc: str = "", symbol: str = "f") -> Chunk:
    return Chunk(
        path,
        "python",
        "function",
        symbol,
        symbol,
        f"def {symbol}():",
        doc,
        start,
        end,
        0,
        0,
        text,
        "h" + text,
    )


def test_weighted_rrf_weights_decide_between_lists() -> None:
    lists = {"dense": ["a", "b", "c"], "fts": ["c", "d", "a"]}
    equal = weighted_rrf(lists, {"dense": 1.0, "fts": 1.0})
    assert equal[0].key == "a" or equal[0].key == "c"
    dense_heavy = weighted_rrf(lists, {"dense": 1.0, "fts": 0.2})
    assert dense_heavy[0].key == "a"
    assert [f.key for f in weighted_rrf(lists, {"dense": 1.0, "fts": 0.0})] == ["a", "b", "c"]
    lexical_heavy = weighted_rrf(lists, {"dense": 0.2, "fts": 1.0})
    assert lexical_heavy[0].key == "c"
    assert lexical_heavy[0].ranks == {"dense": 3, "fts": 1}


def test_weighted_rrf_zero_weight_drops_a_list_and_is_deterministic() -> None:
    lists = {"dense": ["x", "y"], "fts": ["z"]}
    fused = weighted_rrf(lists, {"dense": 1.0, "fts": 0.0})
    assert [f.key for f in fused] == ["x", "y"]
    assert weighted_rrf(lists, {"dense": 1, "fts": 1}) == weighted_rrf(lists, {"dense": 1, "fts": 1})


def test_identifier_splitting_and_tokens() -> None:
    # The one splitter (the index's): digits stay with the word they end.
    assert split_identifier("sendHTTPRequest_v2") == ["send", "http", "request", "v2"]
    terms = tokenize("def parse_config(path): return loadFile(path)")
    assert "parse_config" in terms and "parse" in terms and "config" in terms
    assert "loadfile" in terms and "load" in terms and "file" in terms
    assert "return" not in terms


def test_bm25_ranks_the_matching_document_first_and_excludes() -> None:
    texts = ["open the database file", "send a request over http", "close the database"]
    bm25 = LexicalIndex([(str(n), t) for n, t in enumerate(texts)], IDENTIFIER_TERMS)
    hits = bm25.search("send http request", k=3)
    assert hits[0].key == "1"
    assert all(h.key != "1" for h in bm25.search("send http request", k=3, exclude={"1"}))
    assert bm25.score_text("database", "database database") > bm25.score_text("database", "nothing here")
    # A text scored as a document gets what the same text indexed gets.
    assert bm25.score_text("send http request", texts[1]) == pytest.approx(hits[0].score, rel=1e-5)


def test_chunk_bm25_matches_identifier_parts() -> None:
    chunks = [
        _chunk(
            "a.py", 0, 3, "def readConfigFile(path):\n    return open(path).read()", symbol="readConfigFile"
        ),
        _chunk("b.py", 0, 3, "def send(x):\n    return x", symbol="send"),
    ]
    hits = ChunkBM25(chunks).search("read the config file", 2)
    assert hits[0][0].path == "a.py"


def test_token_counters_agree_roughly_and_cache() -> None:
    text = "def assemble_context(store, settings, path):\n    return store.search(path, k=10)\n"
    local = LocalTokenCounter()
    approx = ApproxTokenCounter()
    n = local.count(text)
    assert n > 10
    assert 0.5 * n <= approx.count(text) <= 2 * n
    assert local.count(text) == n
    assert local.count_many([text, "", "x"]) == [n, 0, local.count("x")]
    assert default_counter().count("") == 0


def test_prefix_and_suffix_cuts_respect_budgets_and_keep_whole_lines() -> None:
    counter = ApproxTokenCounter()
    lines = [f"value_{i} = compute(value_{i - 1}, {i})" for i in range(200)]
    cut = cut_prefix(lines, 150, 10, 60, counter)
    assert cut.tokens <= 60 + counter.count(lines[150][:10])
    assert cut.text.endswith(lines[150][:10])
    assert cut.first_line > 100 and cut.last_line == 150
    assert counter.count(cut.text) <= cut.tokens + 2
    tail = cut_suffix(lines, 150, 10, 40, counter)
    assert tail.text.startswith(lines[150][10:])
    assert tail.last_line < 160 and tail.tokens <= 40 + counter.count(lines[150][10:])
    assert cut_prefix(lines, 0, 0, 100, counter).text == ""


def test_cut_to_tokens_adds_marker_only_when_cut() -> None:
    counter = ApproxTokenCounter()
    body = "\n".join(f"line_{i} = {i}" for i in range(50))
    short, n = cut_to_tokens(body, 30, counter, "    ...")
    assert short.endswith("    ...") and n <= 30
    whole, _ = cut_to_tokens("x = 1", 30, counter, "    ...")
    assert whole == "x = 1"


def test_merge_overlaps_keeps_best_and_unions_spans() -> None:
    a = Candidate("m.py", 10, 20, "f", "definition", 1.0, "\n".join(f"a{i}" for i in range(10, 21)), "")
    b = Candidate("m.py", 15, 30, "g", "retrieved", 0.3, "\n".join(f"a{i}" for i in range(15, 31)), "")
    c = Candidate("m.py", 12, 14, "h", "retrieved", 0.9, "x", "")
    d = Candidate("n.py", 1, 2, "k", "scope", 0.5, "n", "")
    merged = merge_overlaps([b, c, a, d])
    assert [(m.path, m.start_line, m.end_line) for m in merged] == [("m.py", 10, 30), ("n.py", 1, 2)]
    assert merged[0].reason == "definition"
    assert merged[0].text.split("\n") == [f"a{i}" for i in range(10, 31)]


def test_query_shapes() -> None:
    assert is_identifier_query("Session.send")
    assert is_identifier_query("parse_config()")
    assert not is_identifier_query("where are settings resolved")
    assert symbol_names("Client.send") == ["send", "Client"]
    assert symbol_names("how does load_settings work") == ["load_settings"]
    assert fts_terms("x = foo.barBaz(1) + 'it''s'") == "foo barbaz bar baz it"


def test_fallback_cursor_reads_the_call_being_typed() -> None:
    text = "def f(a):\n    result = self.session.send(a, \n    return result\n"
    info = fallback_cursor_info(text, 1, len("    result = self.session.send(a, "))
    assert info.callee == "self.session.send"
    assert "session" in info.names and "send" in info.names
    assert "self.session.send" in info.chains


def test_fallback_cursor_reads_the_call_on_a_long_line() -> None:
    # The callee is read from the text just before the `(`: a search of the whole line
    # backtracked from each of its starts (1 s on 5,000 links of `a.a.a...` then ` (`).
    line = "see " + "a." * 20_000 + " (x) + obj.method("
    assert fallback_cursor_info(line + "\n", 0, len(line)).callee == "obj.method"
    line = "see " + "a." * 20_000 + " ("
    assert fallback_cursor_info(line + "\n", 0, len(line)).callee == ""


def test_strip_doc_and_first_sentence() -> None:
    text = (
        'def area(r):\n    """Compute the area of a circle.\n\n    Uses pi.\n    """\n    return 3.14 * r * r'
    )
    chunk = _chunk("g.py", 0, 5, text, doc="Compute the area of a circle.\n\nUses pi.", symbol="area")
    stripped = strip_doc(chunk)
    assert "Compute" not in stripped.text and "return 3.14" in stripped.text and stripped.doc == ""
    assert first_sentence("Compute the area. Uses pi.") == "Compute the area."
    assert first_sentence("No period here") == "No period here"


def test_a_nul_character_in_a_path_is_an_unknown_file_not_a_value_error(tmp_path: Path) -> None:
    """`context --batch` with {"path": "a\\u0000b.py"} ended in a ValueError traceback (realpath)."""
    from codectx.retriever.errors import UnknownFile
    from codectx.retriever.opening import read_regular, relative_path

    with pytest.raises(UnknownFile, match="NUL"):
        relative_path(tmp_path, "pkg/a\0b.py")
    with pytest.raises(UnknownFile, match="NUL"):
        read_regular(tmp_path / "a\0b.py", 100)
