"""A chat request repeats the conversation's history, and what makes a value in the new message a
secret may lie far back in that history: a product named there (corpus rules that run only when
their keyword occurs in the text), a `kind: Secret` manifest head 200 lines up, a PuTTY key file's
header. The gate that sent the history clean must still judge the new request as a whole: no part
of the final scan may be skipped because an earlier request had it (a windowed rescan of the new
part leaked all three; cases from an independent review of that change)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.egress import EgressGate
from codectx.privacy.errors import EgressBlocked
from codectx.settings import load_settings

ROW = "def total_{0}(values):\n    return sum(v * {0} for v in values)  # cafe\n"
LONG = (
    "# {0:05d} lorem ipsum dolor sit amet, consectetur adipiscing elit, "
    "sed do eiusmod tempor incididunt ut labore\n"
)


def _gate(tmp_path: Path) -> EgressGate:
    return EgressGate(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))


def _filler(chars: int, row: str = ROW) -> str:
    rows: list[str] = []
    while sum(map(len, rows)) < chars:
        rows.append(row.format(len(rows)))
    return "".join(rows)


def _turns(*contents: str) -> dict[str, Any]:
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]
    return {"model": "m", "messages": messages, "stream": True}


def _second_request(tmp_path: Path, history: str, *more: str) -> bytes:
    gate = _gate(tmp_path)
    first = gate.prepare("u", _turns(history), [])
    assert b"[REDACTED" not in first.content  # the history alone is clean
    return gate.prepare("u", _turns(history, *more), []).content


def test_a_token_whose_rule_needs_the_product_named_in_the_history_is_masked(tmp_path: Path) -> None:
    token = "re_w5LLpBTd_H91cyw3euEzdWBuxxrngZ3RD"  # a Resend key's shape: its rule wants "resend"
    history = "How do I send email with Resend from this module?\n" + _filler(40 * 1024)
    sent = _second_request(tmp_path, history, "Call its client with your key.", f"This fails:\n{token}\n")
    assert token.encode() not in sent and b"[REDACTED:bl-resend-api-key" in sent


def test_secret_data_under_a_manifest_head_far_up_in_the_history_is_masked(tmp_path: Path) -> None:
    value = "c2VjcmV0MTIzNDU2"  # base64 of a password, as a Secret's data is
    head = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\n"
    history = head + _filler(20 * 1024, LONG)  # 16 kB and 190 lines up: within the rule's 200 lines
    sent = _second_request(tmp_path, history, "What goes under data?", f"data:\n  session: {value}\n")
    assert value.encode() not in sent


def test_a_putty_keys_private_half_after_its_header_in_the_history_is_blocked(tmp_path: Path) -> None:
    head = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@ci\nPublic-Lines: 2\n"
        "AAAAC3NzaC1lZDI1NTE5AAAAIHk2Qk9vWm5pZ0xmR3FxV0tTb0t3c1dFZ2p6bHJG\nUkN0\n"
    )
    private = "Private-Lines: 1\nAAAAIFq3n8vTzK2pLr9XyW4cBd7mHe5gJa1uQo6sNf0kRtVx\n"
    mac = "Private-MAC: 5c2b8f1e9d3a7c604b1e8f2d9a6c3b7e0f4d1a8c5b2e9f6d3a0c7b4e1f8d5a2c\n"
    history = "My key file starts like this:\n" + head + _filler(40 * 1024)
    with pytest.raises(EgressBlocked, match="putty-private-key"):
        _second_request(tmp_path, history, "Paste the rest?", "the rest:\n" + private + mac)
