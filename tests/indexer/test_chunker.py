"""Size-bounded chunking (split and merge), syntax errors, and the line-window chunker."""

from __future__ import annotations

import itertools
import re

import pytest
from codectx.indexer.parsing.parse import (
    UnsupportedLanguage,
    count_errors,
    has_syntax_errors,
    parse_file,
    parse_source,
)

from codectx.settings import load_settings

BUDGET = 200


def _settings(budget: int = BUDGET):  # type: ignore[no-untyped-def]
    return load_settings(None, {"index.chunk_max_chars": budget})


def _weight(text: str) -> int:
    return len(re.sub(r"\s", "", text))


def _big_function(n: int) -> str:
    body = "\n".join(f"    value_{i} = compute_something(value_{i - 1}, {i})" for i in range(1, n))
    return f"def big(first, second):\n    value_0 = first + second\n{body}\n    return value_{n - 1}\n"


def test_oversized_function_splits_with_signature_header() -> None:
    source = "import os\n\n\n" + _big_function(40) + "\n\ndef small():\n    return 1\n"
    parsed = parse_file("m.py", source, "python", _settings())
    pieces = [c for c in parsed.chunks if c.qualname == "big"]
    assert len(pieces) > 3
    lines = source.split("\n")
    for i, piece in enumerate(pieces):
        real = "\n".join(lines[piece.start_line : piece.end_line + 1])
        assert piece.kind == "function" and piece.signature == "def big(first, second):"
        if i == 0:
            assert piece.text == real and piece.text.startswith("def big")
        else:
            assert piece.text == "def big(first, second):\n" + real
        assert _weight(real) <= BUDGET
    # The pieces tile the function exactly, in order.
    assert pieces[0].start_line == 3
    for a, b in itertools.pairwise(pieces):
        assert b.start_line == a.end_line + 1
    assert pieces[-1].end_line == lines.index("    return value_39")
    # Splits fall on statement boundaries: no piece starts or ends mid-statement.
    assert all(lines[p.start_line].lstrip().startswith(("value_", "def", "return")) for p in pieces)
    small = [c for c in parsed.chunks if c.qualname == "small"]
    assert len(small) == 1 and small[0].text == "def small():\n    return 1"


def test_small_module_statements_merge_up_to_budget() -> None:
    statements = [f"SETTING_{i} = {i}" for i in range(60)]
    source = "\n".join(statements) + "\n"
    parsed = parse_file("settings.py", source, "python", _settings())
    assert all(c.kind == "module" for c in parsed.chunks)
    assert 1 < len(parsed.chunks) < 60  # merged, but bounded
    for chunk in parsed.chunks:
        assert _weight(chunk.text) <= BUDGET
    covered = sorted(line for c in parsed.chunks for line in range(c.start_line, c.end_line + 1))
    assert covered == list(range(60))


def test_whole_file_fits_in_one_module_chunk_when_small() -> None:
    parsed = parse_file("a.py", "import os\nX = 1\nprint(X)\n", "python", _settings())
    assert [(c.kind, c.start_line, c.end_line) for c in parsed.chunks] == [("module", 0, 2)]


def test_oversized_nested_statement_splits_recursively() -> None:
    inner = "\n".join(f"        total += item * {i}" for i in range(60))
    source = f"def loop(items):\n    total = 0\n    for item in items:\n{inner}\n    return total\n"
    parsed = parse_file("l.py", source, "python", _settings())
    pieces = [c for c in parsed.chunks if c.qualname == "loop"]
    assert len(pieces) > 2
    assert all(_weight(p.text.split("\n", 1)[1] if i else p.text) <= BUDGET for i, p in enumerate(pieces))


def test_huge_class_keeps_head_and_methods_apart() -> None:
    methods = "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(30))
    source = f'class Big:\n    """Doc."""\n\n    x = 1\n\n{methods}'
    parsed = parse_file("c.py", source, "python", _settings())
    head = [c for c in parsed.chunks if c.kind == "class"]
    assert len(head) == 1 and head[0].doc == "Doc." and head[0].end_line == 3
    assert [c.qualname for c in parsed.chunks if c.kind == "method"] == [f"Big.m{i}" for i in range(30)]


def test_single_huge_line_is_split_at_the_budget_not_lost() -> None:
    source = "DATA = [" + ", ".join(str(i) for i in range(2000)) + "]\n"
    settings = _settings()
    parsed = parse_file("d.py", source, "python", settings)
    budget = settings.index.chunk_max_chars
    assert len(parsed.chunks) > 1
    assert all(len(c.text) <= budget for c in parsed.chunks)
    assert "".join(c.text for c in parsed.chunks) == source.rstrip("\n")
    data = source.encode()
    assert all(data[c.start_byte : c.end_byte].decode() == c.text for c in parsed.chunks)


def test_long_line_pieces_have_their_own_bytes_in_non_ascii_text() -> None:
    line = "s = '" + "é" * 4000 + "'"
    source = "x = 1\n" + line + "\n"
    parsed = parse_file("u.py", source, "python", _settings())
    data = source.encode()
    pieces = [c for c in parsed.chunks if c.start_line == 1]
    assert len(pieces) > 1 and "".join(c.text for c in pieces) == line
    assert all(data[c.start_byte : c.end_byte].decode() == c.text for c in pieces)


def test_huge_line_in_a_text_file_is_split_too() -> None:
    source = "# Title\n\n" + "word " * 2000 + "\n"
    parsed = parse_file("r.md", source, "markdown", _settings())
    assert max(len(c.text) for c in parsed.chunks) <= _settings().index.chunk_max_chars + len("# Title\n")


def test_syntax_error_keeps_rest_of_file() -> None:
    source = (
        "def good():\n    return 1\n\n\ndef broken(:\n    pass\n\n\n"
        "class Fine:\n    def ok(self):\n        return 2\n"
    )
    parsed = parse_file("e.py", source, "python", _settings())
    assert parsed.syntax_errors >= 1
    quals = {c.qualname for c in parsed.chunks}
    assert {"good", "Fine", "Fine.ok"} <= quals
    assert {d.qualname for d in parsed.definitions} >= {"good", "Fine", "Fine.ok"}
    text = "\n".join(c.text for c in parsed.chunks)
    assert "def broken(:" in text  # the broken part is still indexed as text


def test_has_syntax_errors_and_counts() -> None:
    assert not has_syntax_errors("def f():\n    return 1\n", "python")
    assert has_syntax_errors("def f(:\n", "python")
    assert has_syntax_errors("function f( {", "javascript")
    assert not has_syntax_errors("fn main() {}", "rust")
    assert not has_syntax_errors("anything: [unbalanced", "yaml")  # no grammar used: never refuses
    assert count_errors(parse_source("int main( {", "c").root_node) >= 1
    assert count_errors(parse_source("int main() { return 0; }", "c").root_node) == 0


def test_invalid_utf8_replacement_text_still_chunks() -> None:
    text = b"def f():\n    return '\xff\xfe'\n".decode("utf-8", errors="replace")
    parsed = parse_file("u.py", text, "python", _settings())
    assert [c.qualname for c in parsed.chunks] == ["f"]
    assert parsed.chunks[0].end_byte - parsed.chunks[0].start_byte == len(parsed.chunks[0].text.encode())


def test_empty_file() -> None:
    assert parse_file("x.py", "", "python", _settings()).chunks == []
    assert parse_file("x.md", "", "markdown", _settings()).chunks == []


def test_text_chunker_windows() -> None:
    source = "\n".join(f"key_{i}: value number {i}" for i in range(100)) + "\n"
    parsed = parse_file("c.yaml", source, "yaml", _settings())
    assert len(parsed.chunks) > 5
    assert all(c.kind == "text" and c.language == "yaml" for c in parsed.chunks)
    assert all(_weight(c.text) <= BUDGET for c in parsed.chunks)
    assert parsed.chunks[0].start_line == 0 and parsed.chunks[-1].end_line == 99
    for a, b in zip(parsed.chunks, parsed.chunks[1:], strict=False):
        assert b.start_line == a.end_line + 1
    assert parsed.definitions == [] and parsed.syntax_errors == 0


def test_markdown_splits_at_headings_not_in_code() -> None:
    source = "# Title\n\nIntro.\n\n## Install\n\nRun it.\n\n```sh\n# not a heading\n```\n\n## Use\n\nMore.\n"
    parsed = parse_file("README.md", source, "markdown", _settings(2000))
    assert [(c.signature, c.start_line) for c in parsed.chunks] == [("Title", 0), ("Install", 4), ("Use", 12)]
    assert "# not a heading" in parsed.chunks[1].text


def test_crlf_line_endings_keep_spans_exact() -> None:
    unix = "import os\n\n\ndef f(a):\n    return a\n\n\nclass C:\n    def m(self):\n        pass\n"
    source = unix.replace("\n", "\r\n")
    parsed = parse_file("w.py", source, "python", _settings())
    data = source.encode()
    assert [c.qualname for c in parsed.chunks if c.qualname] == ["f", "C", "C.m"]
    for chunk in parsed.chunks:
        assert data[chunk.start_byte : chunk.end_byte].decode() == chunk.text
    assert parsed.chunks[1].signature == "def f(a):"


def test_parse_source_refuses_unknown_languages() -> None:
    with pytest.raises(UnsupportedLanguage, match="cobol"):
        parse_source("IDENTIFICATION DIVISION.", "cobol")
