"""The gate's two shortcuts on every request's path give the answers of the slow ways they skip:
`resolve_below` equals `os.path.realpath` (links inside, out, chained, dangling; missing parts),
and a text the redactor remembers as clean is still redacted when a value known secret elsewhere
in the request appears in it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codectx.privacy.egress import resolve_below
from codectx.privacy.redact import Redactor

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # a GitHub token shape, split for scanners


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    (root / "src/pkg").mkdir(parents=True)
    outside.mkdir()
    (root / "src/pkg/mod.py").write_text("x = 1\n")
    (outside / "secret.env").write_text("A=1\n")
    (root / "src/out").symlink_to(outside)  # a folder link leaving the workspace
    (root / "src/pkg/alias.py").symlink_to(root / "src/pkg/mod.py")  # a file link inside
    (root / "src/chain").symlink_to(root / "src/out")  # a link to a link
    (root / "src/dangling").symlink_to(tmp_path / "nowhere")
    (root / "src/loop").symlink_to(root / "src/loop")
    return root


@pytest.mark.parametrize(
    "rel",
    [
        "src/pkg/mod.py",
        "src/pkg/alias.py",
        "src/out/secret.env",
        "src/chain/secret.env",
        "src/dangling",
        "src/dangling/deeper.py",
        "src/missing/file.py",
        "src/pkg/mod.py/below",
        "src/loop",
        "src/./pkg/mod.py",
        "src/pkg/../out/secret.env",
        "src//pkg/mod.py",
    ],
)
def test_resolve_below_equals_realpath(tree: Path, rel: str) -> None:
    base = os.path.realpath(tree)
    assert resolve_below(base, rel) == os.path.realpath(os.path.join(base, rel))


def test_a_remembered_clean_text_is_redacted_when_it_holds_a_known_secret() -> None:
    redactor = Redactor(key=b"k" * 32)
    text = f"see {TOKEN}"
    plain = "value = " + TOKEN[4:]  # no prefix: no rule finds it on its own
    assert redactor.redact(plain).findings == []
    assert redactor.redact(plain).findings == []  # remembered clean
    known = [(TOKEN[4:], "github-token")]
    assert [f.rule for f in redactor.redact(plain, known=known).findings] == ["github-token"]
    assert redactor.redact(text).findings  # a secret is never remembered as clean
    assert redactor.redact(text).findings


def test_the_gate_resolves_a_relinked_root_again(tmp_path: Path) -> None:
    from codectx.privacy.egress import EgressGate
    from codectx.settings import load_settings

    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        (folder / "src").mkdir(parents=True)
    (first / "src/a.py").write_text("a = 1\n")
    (second / "src/a.py").symlink_to(tmp_path / "outside.py")  # in the second tree, a link out
    (tmp_path / "outside.py").write_text("b = 2\n")
    link = tmp_path / "ws"
    link.symlink_to(first)
    gate = EgressGate(load_settings(link, {}, environ={}, user_config=tmp_path / "none.toml"))
    assert gate.root_real() == os.path.realpath(first)
    assert gate.refusal("src/a.py") is None
    link.unlink()
    link.symlink_to(second)
    assert gate.root_real() == os.path.realpath(second)
    refusal = gate.refusal("src/a.py")
    assert refusal is not None and "outside the workspace" in refusal
