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
    # No prefix, and part of a dotted name (a bare random word is a token on its own): no rule
    # finds it.
    plain = "value = cfg." + TOKEN[4:]
    assert redactor.redact(plain).findings == []
    assert redactor.redact(plain).findings == []  # remembered clean
    known = [(TOKEN[4:], "github-token")]
    assert [f.rule for f in redactor.redact(plain, known=known).findings] == ["github-token"]
    assert redactor.redact(text).findings  # a secret is never remembered as clean
    assert redactor.redact(text).findings


def test_a_long_region_found_clean_is_not_scanned_again_but_its_neighbours_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redactor = Redactor(key=b"k" * 32)
    scans: list[int] = []
    real = redactor._hits

    def hits(text: str, *args: object) -> object:
        scans.append(len(text))
        return real(text, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(redactor, "_hits", hits)
    region = "def total(xs):\n    return sum(xs)\n" * 40  # a file's region, sent again next turn
    assert redactor.redact(region, "src/a.py").findings == []
    first = len(scans)
    assert redactor.redact(region, "src/a.py").findings == []
    assert len(scans) == first  # remembered clean: not scanned again
    redactor.redact(region, "src/b.py")  # another origin (a rule may hold for one kind of file)
    redactor.redact(region + "x", "src/a.py")  # one character more
    assert len(scans) > first + 1
    # A value known secret elsewhere in the request is still found in a remembered region.
    known = [(TOKEN[4:], "github-token")]
    holding = region + "value = " + TOKEN[4:] + "\n"
    assert redactor.redact(holding, "src/a.py").findings == []
    assert [f.rule for f in redactor.redact(holding, "src/a.py", known=known).findings] == ["github-token"]
    # A long region holding a secret is never remembered.
    secret = region + f"token = '{TOKEN}'\n"
    assert redactor.redact(secret, "src/a.py").findings
    assert redactor.redact(secret, "src/a.py").findings


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


def _gate(tmp_path: Path) -> object:
    from codectx.privacy.egress import EgressGate
    from codectx.settings import load_settings

    return EgressGate(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))


def _counting(gate: object, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    redactor = gate.redactor  # type: ignore[attr-defined]
    real = redactor.redact

    def redact(text: str, *args: object, **kwargs: object) -> object:
        seen.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(redactor, "redact", redact)
    return seen


def test_a_long_string_walked_clean_is_not_walked_again_and_the_bytes_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _gate(tmp_path)
    seen = _counting(gate, monkeypatch)
    history = "def total(xs):\n    return sum(xs)  # café\n" * 40  # a turn already sent, resent
    first = gate.prepare("u", {"messages": [{"role": "user", "content": history}]}, [])  # type: ignore[attr-defined]
    assert seen.count(history) == 1
    body = {"messages": [{"role": "user", "content": history}, {"role": "user", "content": "next " * 200}]}
    second = gate.prepare("u", body, [])  # type: ignore[attr-defined]
    assert seen.count(history) == 1  # not walked again: remembered clean
    assert ("next " * 200) in seen  # the new string is walked
    assert second.content.startswith(first.content[: first.content.index(b"]")])
    # The final scan still reads every byte of the body.
    assert any(history.split("\n")[0] in text and "next" in text for text in seen)


def test_a_long_string_holding_a_secret_or_a_placeholder_is_walked_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _gate(tmp_path)
    seen = _counting(gate, monkeypatch)
    secret = ("x = 1\n" * 100) + f"token = '{TOKEN}'\n"
    placed = ("y = 2\n" * 100) + "key = '[REDACTED:github-token:0123abcd]'\n"
    for _ in range(2):
        prepared = gate.prepare("u", {"a": secret, "b": placed}, [])  # type: ignore[attr-defined]
        assert TOKEN.encode() not in prepared.content
        assert [f.rule for f in prepared.findings if f.stage != "piece"] == ["github-token"]
        assert [f.stage for f in prepared.findings].count("piece") == 1
    assert seen.count(secret) == 2 and seen.count(placed) == 2


def test_clean_memory_is_per_aliases(tmp_path: Path) -> None:
    from codectx.privacy.bodywalk import CleanMemo
    from codectx.privacy.redact import Redactor

    memo, redactor = CleanMemo(limit=2), Redactor(key=b"k" * 32)
    text = "z" * 600
    plain, aliased = memo.key(text, redactor, {}), memo.key(text, redactor, {"src/a.py": "f1"})
    assert plain != aliased
    memo.add(plain)
    assert memo.seen(plain) and not memo.seen(aliased)
    memo.add(memo.key("a" * 600, redactor, {}))
    memo.add(memo.key("b" * 600, redactor, {}))
    assert not memo.seen(plain)  # bounded: the oldest goes first


def test_character_offsets_of_matches_in_non_ascii_text_equal_the_slow_count() -> None:
    import random

    from codectx.privacy import views

    rng = random.Random(7)
    words = ["naïve_identifier_name_here", "€", "dGhpcyBpcyBhIHNlY3JldCB2YWx1ZQ==", "ü", "\n", "plain"]
    text = " ".join(rng.choice(words) for _ in range(3000))
    data = text.encode("utf-8", "surrogatepass")
    slow = [
        (len(data[: m.start(1)].decode("utf-8")), len(data[: m.end(1)].decode("utf-8")))
        for m in views._B64_RUN.finditer(data)
    ]
    assert slow and list(views._spans(views._B64_RUN, text)) == slow
    assert all(text[a:b].strip("=").isascii() for a, b in slow)


def test_a_value_found_secret_later_is_redacted_inside_a_remembered_string(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    value = "hunter2-Correct-Horse"  # prose on its own: no rule finds it
    history = ("x = 1\n" * 100) + f"note: {value} is here\n"
    first = gate.prepare("u", {"messages": [history]}, [])  # type: ignore[attr-defined]
    assert value.encode() in first.content  # clean on its own: remembered
    # The next request assigns it to a password in a new field: the value is a secret now, and it
    # is masked in the remembered history string too (the propagation pass is never skipped).
    body = {"messages": [history, f'password = "{value}"']}
    second = gate.prepare("u", body, [])  # type: ignore[attr-defined]
    assert value.encode() not in second.content
    assert sum(1 for f in second.findings if f.rule == "keyword-assignment") == 2


def test_invisible_characters_are_stripped_from_a_long_string_every_time(tmp_path: Path) -> None:
    gate = _gate(tmp_path)
    text = ("def f():\n    return 1\n" * 40) + "x = 'a\u200bb'\n"
    for _ in range(2):
        prepared = gate.prepare("u", {"messages": [text]}, [])  # type: ignore[attr-defined]
        assert "\u200b".encode() not in prepared.content and prepared.stripped_chars == 1
