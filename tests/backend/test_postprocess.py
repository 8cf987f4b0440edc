"""Post-processing of raw completions: line and block modes, suffix duplicates, special tokens."""

from __future__ import annotations

import pytest
from codectx.backend.families import get_family
from codectx.backend.postprocess import block_ended, choose_mode, postprocess, strip_special

QWEN = get_family("qwen").special


def pp(raw: str, prefix: str, suffix: str = "", mode: str = "auto") -> str:
    return postprocess(raw, prefix=prefix, suffix=suffix, mode=mode, special=QWEN)


@pytest.mark.parametrize(
    ("prefix", "suffix", "mode"),
    [
        ("x = foo(", ")\n", "line"),  # code after the cursor
        ("    total = a +", "\n", "line"),  # half-written statement
        ("def f():\n    ", "\n", "block"),  # blank line in a body
        ("def f():", "\n", "block"),  # after a block opener
        ("function f() {", "\n}", "block"),
    ],
)
def test_choose_mode(prefix: str, suffix: str, mode: str) -> None:
    assert choose_mode(prefix, suffix) == mode


def test_line_mode_stops_at_end_of_line() -> None:
    assert pp(" b * 2\n    return total\n", "    total = a +", "\n") == " b * 2"


def test_line_mode_model_wanting_a_new_line_gives_nothing() -> None:
    assert pp("\n    return 1", "    total = a + b", "\n", mode="line") == ""


def test_block_mode_stops_at_dedent() -> None:
    raw = "total = a + b\n    return total\n\ndef g():\n    pass\n"
    assert pp(raw, "def f(a, b):\n    ", "\n") == "total = a + b\n    return total"


def test_block_after_opener_keeps_body_only() -> None:
    raw = "\n    return 1\n\n\nclass X:\n    pass"
    assert pp(raw, "def f():", "\n") == "\n    return 1"


def test_block_paragraph_break_ends_top_level_block() -> None:
    raw = "import os\nimport sys\n\n\nprint(os.sep)\n"
    assert pp(raw, "", "") == "import os\nimport sys"


def test_closing_brace_added_only_when_missing() -> None:
    raw = "  return 1;\n}\n\nfunction g() {\n"
    assert pp(raw, "function f() {\n", "") == "  return 1;\n}"
    assert pp(raw, "function f() {\n", "}\n") == "  return 1;"


def test_duplicate_of_the_rest_of_the_line_is_dropped() -> None:
    assert pp("a, b)", "x = f(", ")\n") == "a, b"
    assert pp("a, b)", "x = f(", ")  # call\n") == "a, b"
    assert pp("foo()", "x = bar(", ")\n") == "foo()"  # its own parens are kept
    assert pp('name = "a"', "x.", '"\n') == 'name = "a'


def test_block_retyping_the_next_line_is_cut() -> None:
    raw = "y = 2\n    return y\n"
    assert pp(raw, "def f():\n    x = 1\n    ", "\n    return y\n") == "y = 2"


def test_special_tokens_never_survive() -> None:
    assert pp("print(x)<|file_sep|>other.py\nmore", "    ", "") == "print(x)"
    assert pp("<|endoftext|>", "x = ", "") == ""
    assert strip_special("a<|im_end|>b<|endoftext|>", QWEN) == "a"


def test_trailing_whitespace_trimmed() -> None:
    assert pp("x = 1   \n    y = 2  \n\n\n", "def f():\n    ", "") == "x = 1\n    y = 2"
    assert pp("   \n  ", "x = ", "") == ""


def test_block_ended_while_streaming() -> None:
    prefix, suffix = "def f(a, b):\n    ", "\n"
    assert not block_ended("total = a", prefix=prefix, suffix=suffix, mode="block", special=QWEN)
    assert not block_ended("total = a\n    ret", prefix=prefix, suffix=suffix, mode="block", special=QWEN)
    assert block_ended(
        "total = a\n    return total\ndef g", prefix=prefix, suffix=suffix, mode="block", special=QWEN
    )
    assert block_ended("x<|endoftext|>", prefix=prefix, suffix=suffix, mode="block", special=QWEN)
    assert block_ended("b)\n", prefix="f(a, ", suffix=")", mode="line", special=QWEN)
    assert not block_ended("b", prefix="f(a, ", suffix=")", mode="line", special=QWEN)
