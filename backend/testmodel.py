"""A tiny Qwen3-MoE model and tokenizer, generated locally for tests and `cpu-dev`.

The weights are random, so the text it writes is noise, but it is the same
architecture family as Qwen3-Coder-30B-A3B and it carries the real FIM and
chat special tokens: vLLM serves it with real protocol, streaming, stop
handling, token counts and metrics, without downloading anything.

Generation is deterministic for a given seed and Python version: the
tokenizer is trained on a fixed set of standard-library sources.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from codectx.errors import CodectxError

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_suffix|>",
    "<|fim_middle|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<|im_start|>",
    "<|im_end|>",
)

# Qwen's chat layout, so `/v1/chat/completions` renders the way it does for the real model.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Fixed training text: these modules exist in every CPython 3.11+ and do not change within a version.
CORPUS_MODULES = ("textwrap", "json.decoder", "json.encoder", "difflib", "argparse", "dataclasses")

DEFAULT_VOCAB_SIZE = 1024
DEFAULT_SERVED_NAME = "codectx-tiny-qwen3-moe"


class TestModelError(CodectxError):
    """The test model could not be generated."""

    __test__ = False  # not a pytest test class, despite the name


@dataclass(frozen=True)
class TestModelInfo:
    __test__ = False

    path: Path
    vocab_size: int
    parameters: int
    size_bytes: int
    seed: int


def corpus_text() -> str:
    """The fixed local text the tokenizer is trained on."""
    import importlib

    parts = []
    for name in CORPUS_MODULES:
        module = importlib.import_module(name)
        source = getattr(module, "__file__", None)
        if source:
            parts.append(Path(source).read_text(encoding="utf-8"))
    return "\n".join(parts)


def _build_tokenizer(vocab_size: int):  # type: ignore[no-untyped-def]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    text = corpus_text()
    # Lines, not one huge string: the trainer counts words per item.
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        pad_token="<|fim_pad|>",
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in ("<|endoftext|>", "<|fim_pad|>")],
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def generate(dest: Path, *, seed: int = 0, vocab_size: int = DEFAULT_VOCAB_SIZE) -> TestModelInfo:
    """Write the tokenizer and a random-weight Qwen3-MoE model into `dest` (in this interpreter)."""
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    dest.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer(vocab_size)
    tokenizer.save_pretrained(str(dest))
    eos_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen3MoeConfig(  # type: ignore[call-arg]  # head_dim is accepted through **kwargs
        hidden_size=128,
        head_dim=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        intermediate_size=128,
        vocab_size=len(tokenizer),
        max_position_embeddings=4096,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=tokenizer.convert_tokens_to_ids("<|fim_pad|>"),
    )
    torch.manual_seed(seed)
    model = Qwen3MoeForCausalLM(config).to(torch.bfloat16)  # type: ignore[arg-type]
    model.save_pretrained(str(dest))
    params = sum(p.numel() for p in model.parameters())
    (dest / "codectx-test-model.json").write_text(
        json.dumps({"seed": seed, "vocab_size": len(tokenizer), "parameters": params}) + "\n"
    )
    return TestModelInfo(dest, len(tokenizer), params, _dir_size(dest), seed)


def make_test_model(dest: Path, *, seed: int = 0) -> TestModelInfo:
    """Generate the model into `dest` (an empty or new folder, or a previous test model)."""
    dest = dest.expanduser().resolve()
    if dest.exists() and not dest.is_dir():
        raise TestModelError(f"{dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()) and not (dest / "codectx-test-model.json").exists():
        raise TestModelError(f"{dest} is not empty and holds no codectx test model; pick an empty folder")
    try:
        from transformers import Qwen3MoeForCausalLM  # noqa: F401
    except ImportError as exc:
        raise TestModelError(f"this Python's transformers cannot build Qwen3-MoE: {exc}") from exc
    try:
        return generate(dest, seed=seed)
    except OSError as exc:
        raise TestModelError(f"cannot write the model to {dest}: {exc}") from exc
