"""The generated tiny Qwen3-MoE test model: architecture, special tokens, chat template, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codectx.backend.testmodel import SPECIAL_TOKENS, TestModelError, make_test_model

from codectx.cli import main


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_test_model(tmp_path_factory.mktemp("tm") / "model", seed=0).path


def test_config_is_the_tiny_qwen3_moe(model_dir: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3MoeForCausalLM"]
    assert config["model_type"] == "qwen3_moe"
    assert config["hidden_size"] == 128
    assert config["head_dim"] == 32  # fp8 KV on CPU needs a head size divisible by 32
    assert config["num_hidden_layers"] == 2
    assert config["num_attention_heads"] == 4
    assert config["num_key_value_heads"] == 2
    assert config.get("num_experts", config.get("num_local_experts")) == 8
    assert config["num_experts_per_tok"] == 2
    assert config["dtype"] == "bfloat16"
    size = sum(p.stat().st_size for p in model_dir.iterdir())
    assert size < 3_000_000


def test_special_tokens_are_single_tokens_and_round_trip(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    assert len(set(ids.values())) == len(SPECIAL_TOKENS)
    text = "<|fim_prefix|>def f(x):\n    return<|fim_suffix|>\n<|fim_middle|>"
    encoded = tok.encode(text, add_special_tokens=False)
    assert encoded[0] == ids["<|fim_prefix|>"]
    assert ids["<|fim_suffix|>"] in encoded and encoded[-1] == ids["<|fim_middle|>"]
    assert tok.decode(encoded) == text
    # Byte-level BPE: any text, even outside the training corpus, round-trips.
    odd = "naïve — 日本語 \t\x00 emoji 🙂"
    assert tok.decode(tok.encode(odd, add_special_tokens=False)) == odd
    assert tok.eos_token == "<|endoftext|>"


def test_chat_template_renders_qwen_layout(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    rendered = tok.apply_chat_template(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert (
        rendered == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    )


def test_generation_is_deterministic_per_seed(model_dir: Path, tmp_path: Path) -> None:
    again = make_test_model(tmp_path / "again", seed=0).path
    other = make_test_model(tmp_path / "other", seed=1).path
    weights = (model_dir / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (again / "tokenizer.json").read_bytes() == (model_dir / "tokenizer.json").read_bytes()
    assert (other / "model.safetensors").read_bytes() != weights


def test_refuses_a_folder_holding_something_else(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(TestModelError, match="not empty"):
        make_test_model(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(TestModelError, match="not a folder"):
        make_test_model(file)


def test_cli_make_test_model_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backend", "make-test-model", str(tmp_path / "m"), "--json", "--seed", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["seed"] == 3
    assert data["vocab_size"] == 1024
    assert Path(data["path"], "model.safetensors").exists()
    assert main(["backend", "make-test-model", str(tmp_path / "m" / "model.safetensors")]) == 1
    assert "not a folder" in capsys.readouterr().err
