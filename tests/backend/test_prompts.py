"""FIM prompt layouts per family, family detection, and the stable prefix across cursor moves."""

from __future__ import annotations

import itertools

import pytest
from codectx.backend.families import FamilyError, builtin_families, detect_family, get_family, parse_families
from codectx.backend.prompts import Snippet, build_fim_prompt, defuse, split_document

QWEN_STOP = [
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_suffix|>",
    "<|fim_middle|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<|im_start|>",
    "<|im_end|>",
]

SNIPPETS = [
    Snippet("pkg/util.py", 9, 11, "def helper(x):\n    return x * 2\n"),
    Snippet("pkg/models.py", 0, 2, "class User:\n    name: str\n"),
]


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "qwen"),
        ("Qwen/Qwen2.5-Coder-7B", "qwen"),
        ("deepseek-ai/DeepSeek-Coder-V2-Lite-Base", "deepseek"),
        ("bigcode/starcoder2-15b", "starcoder2"),
        ("codellama/CodeLlama-13b-hf", "codellama"),
        ("my-served-name", "qwen"),  # unknown names fall back to the default family
    ],
)
def test_family_from_model_name(model: str, family: str) -> None:
    assert detect_family(model).name == family


def test_configured_family_wins_and_unknown_is_an_error() -> None:
    assert detect_family("Qwen/Qwen3-Coder", "starcoder2").name == "starcoder2"
    with pytest.raises(FamilyError, match="unknown model family"):
        get_family("gpt")


def test_families_file_is_validated() -> None:
    with pytest.raises(FamilyError, match="must contain"):
        parse_families({"x": {"fim": "<pre>{prefix}"}})
    with pytest.raises(FamilyError, match="unknown key"):
        parse_families({"x": {"fim": "{prefix}{suffix}", "stops": []}})
    assert set(builtin_families()) == {"qwen", "deepseek", "starcoder2", "codellama"}


def test_qwen_file_level() -> None:
    p = build_fim_prompt(get_family("qwen"), prefix="def f(", suffix=")\n", path="a.py")
    assert p.text == "<|fim_prefix|>def f(<|fim_suffix|>)\n<|fim_middle|>"
    assert list(p.stop) == QWEN_STOP
    assert not p.repo_level


def test_qwen_repo_level_layout() -> None:
    p = build_fim_prompt(
        get_family("qwen"), prefix="x = ", suffix="\n", path="pkg/main.py", repo="proj", snippets=SNIPPETS
    )
    assert p.repo_level
    assert p.text == (
        "<|repo_name|>proj\n"
        "<|file_sep|>pkg/util.py#L10-L12\ndef helper(x):\n    return x * 2\n"
        "<|file_sep|>pkg/models.py#L1-L3\nclass User:\n    name: str\n"
        "<|file_sep|>pkg/main.py\n<|fim_prefix|>x = <|fim_suffix|>\n<|fim_middle|>"
    )


def test_deepseek_layout_puts_context_inside_the_prefix() -> None:
    p = build_fim_prompt(get_family("deepseek"), prefix="x = ", suffix="", path="m.py", snippets=SNIPPETS[:1])
    assert p.text.startswith("<｜fim▁begin｜># pkg/util.py#L10-L12\ndef helper(x):")
    assert p.text.endswith("# m.py\nx = <｜fim▁hole｜><｜fim▁end｜>")
    assert "<｜end▁of▁sentence｜>" in p.stop


def test_starcoder2_layout() -> None:
    p = build_fim_prompt(
        get_family("starcoder2"), prefix="x", suffix="y", path="m.py", repo="r", snippets=SNIPPETS[:1]
    )
    assert p.text == (
        "<repo_name>r<file_sep>pkg/util.py#L10-L12\ndef helper(x):\n    return x * 2\n"
        "<file_sep><fim_prefix>m.py\nx<fim_suffix>y<fim_middle>"
    )


def test_codellama_layout() -> None:
    p = build_fim_prompt(get_family("codellama"), prefix="a", suffix="b", path="m.py")
    assert p.text == "<PRE> a <SUF>b <MID>"
    assert "<EOT>" in p.stop


def test_special_tokens_in_code_are_defused() -> None:
    code = 'FIM = "<|fim_middle|>"  # {prefix} {path}\n'
    p = build_fim_prompt(
        get_family("qwen"), prefix=code, suffix="", path="t.py", snippets=[Snippet("s.py", 0, 0, code)]
    )
    assert p.text.count("<|fim_middle|>") == 1  # only our own marker, at the end
    assert p.text.endswith("<|fim_middle|>")
    assert "{prefix} {path}" in p.text  # braces in code are left alone
    assert defuse("a<|file_sep|>b", QWEN_STOP) != "a<|file_sep|>b"


def shared_chars(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _python_file(n: int) -> str:
    out = []
    for i in range(n):
        out.append(f"def func_{i}(a, b):\n    total = a + b * {i}\n    return total\n\n")
    return "".join(out)


def test_repo_prompt_shares_a_long_prefix_across_cursor_moves() -> None:
    """Consecutive requests in one file (cursor moving down) keep the snippets and file start."""
    text = _python_file(60)
    family = get_family("qwen")
    prompts = []
    for line in range(120, 140):
        prefix, suffix, _, _ = split_document(text, line, 4, prefix_chars=2000, suffix_chars=400)
        prompts.append(
            build_fim_prompt(
                family, prefix=prefix, suffix=suffix, path="m.py", repo="r", snippets=SNIPPETS
            ).text
        )
    shared = [shared_chars(a, b) / len(b) for a, b in itertools.pairwise(prompts)]
    # Most consecutive pairs share nearly the whole prompt (the window start moves in blocks).
    assert sorted(shared)[len(shared) // 2] > 0.8
    # The repo header and the snippets are always shared, whole.
    head = prompts[0].index("<|file_sep|>m.py")
    assert min(shared_chars(a, b) for a, b in itertools.pairwise(prompts)) >= head


def test_split_document_positions() -> None:
    text = "a = 1\nb = 2\nc = 3\n"
    prefix, suffix, first, last = split_document(text, 1, 2, prefix_chars=100, suffix_chars=100)
    assert prefix == "a = 1\nb " and suffix == "= 2\nc = 3\n" and (first, last) == (0, 3)
    # past the end and past the line's length are clamped, never an error
    prefix, suffix, _, _ = split_document(text, 99, 99, prefix_chars=100, suffix_chars=100)
    assert prefix == text and suffix == ""
    prefix, _, first, _ = split_document("x\n" * 1000, 500, 0, prefix_chars=50, suffix_chars=10)
    assert len(prefix) <= 50 and first > 400


def test_fit_prompt_drops_snippets_then_suffix_then_prefix_lines() -> None:
    from codectx.backend.prompts import fit_prompt

    prefix = "".join(f"p{i} = {i}\n" for i in range(100)) + "x = "
    suffix = "".join(f"s{i} = {i}\n" for i in range(100))
    snips = [Snippet(f"f{i}.py", 0, 1, "y" * 200) for i in range(5)]
    same = fit_prompt(prefix, suffix, snips, 100_000)
    assert same == (prefix, suffix, snips, 0)
    p, s, kept, dropped = fit_prompt(prefix, suffix, snips, len(prefix) + len(suffix) + 600)
    assert kept == snips[:2] and (p, s, dropped) == (prefix, suffix, 0)  # lowest ranked go first
    p, s, kept, dropped = fit_prompt(prefix, suffix, snips, 800)
    assert kept == [] and p.endswith("p99 = 99\nx = ") and prefix.endswith(p)
    assert dropped == prefix[: len(prefix) - len(p)].count("\n")
    assert suffix.startswith(s) and len(p) + len(s) + 64 <= 800
