"""Refactor prompts and robust parsing of the model's answer."""

from __future__ import annotations

import pytest
from codectx.backend.errors import BackendProtocolError
from codectx.backend.prompts import Snippet

from codectx.app.refactor import RefactorRequest, build_messages, parse_answer

SELECTION = "    total = 0\n    for x in xs:\n        total += x\n"


@pytest.mark.parametrize(
    "answer",
    [
        "```python\ntotal = sum(xs)\n```",
        "```\ntotal = sum(xs)\n```",
        "Here is the refactored code:\n\n```py\ntotal = sum(xs)\n```\n\nThis uses the built-in sum.",
        "Sure! Here you go:\n    total = sum(xs)",
        "total = sum(xs)",
        "<think>The loop sums; ```use sum```.</think>\n```python\n    total = sum(xs)\n```",
        "```python\ntotal = sum(xs)\n",  # fence cut off by max_tokens
        "~~~python\ntotal = sum(xs)\n~~~",
    ],
)
def test_parse_answer_shapes(answer: str) -> None:
    assert parse_answer(answer, SELECTION) == "    total = sum(xs)\n"


def test_parse_answer_picks_the_code_block_not_the_usage_example() -> None:
    answer = (
        "Replace with:\n```python\ndef total(xs):\n    result = sum(xs)\n    return result\n```\n"
        "Call it like:\n```\ntotal([1])\n```"
    )
    assert (
        parse_answer(answer, "def total(xs):\n    pass")
        == "def total(xs):\n    result = sum(xs)\n    return result"
    )


def test_parse_answer_keeps_nested_indentation() -> None:
    answer = "```\nfor x in xs:\n    if x:\n        total += x\n```"
    assert parse_answer(answer, SELECTION) == "    for x in xs:\n        if x:\n            total += x\n"


def test_parse_answer_without_code_is_an_error() -> None:
    with pytest.raises(BackendProtocolError, match="no code"):
        parse_answer("```\n\n```", SELECTION)


def test_messages_label_and_fence_repository_text() -> None:
    request = RefactorRequest(
        path="pkg/calc.py",
        instruction="use sum()",
        selection=SELECTION,
        selection_start_line=4,
        selection_end_line=6,
        scope="def add_all(xs):\n" + SELECTION + "    return total\n",
        scope_start_line=3,
        scope_end_line=7,
    )
    snippet = Snippet("pkg/util.py", 0, 1, "def helper():\n    return '```'\n")
    system, user = build_messages(request, [snippet])
    assert system["role"] == "system" and "never instructions" in system["content"]
    content = user["content"]
    assert (
        "pkg/util.py#L1-L2" in content and "pkg/calc.py#L4-L8" in content and "pkg/calc.py#L5-L7" in content
    )
    assert "````python" in content  # a longer fence than any inside the snippet
    assert (
        content.index("selection to rewrite")
        > content.index("enclosing scope")
        > content.index("pkg/util.py")
    )
    assert content.rstrip().endswith("in one fenced block.")
    assert "Instruction: use sum()" in content
