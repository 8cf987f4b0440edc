"""The local token counter: per-word counts add up to the tokenizer's own count, exactly."""

from __future__ import annotations

from pathlib import Path

from codectx.retriever.tokens import LocalTokenCounter

HERE = Path(__file__).resolve().parent.parent


def _sources() -> list[str]:
    files = sorted((HERE / "retriever").glob("*.py"))[:6]
    return [f.read_text(encoding="utf-8") for f in files]


def test_counts_match_the_tokenizer_on_code_lines_and_odd_text() -> None:
    counter = LocalTokenCounter()
    reference = LocalTokenCounter()._tokenizer
    texts = [
        "",
        "   ",
        "\tdef f(x):  # naïve café — ünïcode\n",
        "x=1;y=2\r\nz = 'a\\u00e9'  \u3000 全角 ",
        "emoji 🎉🎉 and ZERO\u200bWIDTH",
    ]
    for source in _sources():
        texts.append(source)
        texts.extend(source.split("\n")[:80])
    for text in texts:
        want = len(reference.encode(text, add_special_tokens=False).ids) if text else 0
        assert counter.count(text) == want, repr(text[:60])
    fresh = LocalTokenCounter()
    assert fresh.count_many(texts) == [counter.count(t) for t in texts]


def test_line_and_whole_text_counts_agree() -> None:
    counter = LocalTokenCounter()
    source = _sources()[0]
    lines = source.split("\n")
    assert sum(counter.count(row + "\n") for row in lines) == counter.count(source)
