"""The gate's final scan reads a conversation's resent history once (codectx/privacy/scanned.py):
the bytes sent are those a whole scan gives, a secret in the new part is masked wherever it occurs,
and the scan window reaches back over the lines and key blocks a rule could need."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.bodywalk import scan_view
from codectx.privacy.egress import EgressGate
from codectx.privacy.scanned import MARGIN_CHARS, window_start
from codectx.settings import load_settings

ROW = "def total_{0}(values):\n    return sum(v * {0} for v in values)  # café\n"


def _gate(tmp_path: Path) -> EgressGate:
    return EgressGate(load_settings(None, {}, environ={}, user_config=tmp_path / "none.toml"))


def _history(chars: int) -> str:
    rows, n = [], 0
    while sum(map(len, rows)) < chars:
        rows.append(ROW.format(n))
        n += 1
    return "".join(rows)


def _final_scans(gate: EgressGate, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts of the gate's final scans (the walker never sees JSON structure such as `"role":`)."""
    seen: list[str] = []
    real = gate.redactor.redact

    def redact(text: str, *args: Any, **kwargs: Any) -> Any:
        if '"role":' in text:
            seen.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(gate.redactor, "redact", redact)
    return seen


def _turns(history: str, *more: dict[str, str]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": history}, *more], "stream": True}


def test_a_resent_history_is_scanned_once_and_the_bytes_are_a_whole_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = _gate(tmp_path)
    scans = _final_scans(gate, monkeypatch)
    history = _history(64 * 1024)
    first = gate.prepare("u", _turns(history), [])
    assert len(scans) == 1 and len(scans[0]) == len(first.content.decode())  # all of it, the first time
    body = _turns(history, {"role": "assistant", "content": "It sums."}, {"role": "user", "content": "And?"})
    second = gate.prepare("u", body, [])
    # The second request starts with the first's history: its final scan reads the new part and
    # a window before it, not the 64 kB again.
    assert len(scans) == 2 and len(scans[1]) < len(second.content.decode()) / 2
    assert scans[1].endswith(scan_view(second.content.decode())[-200:])  # the view of the bytes' end
    assert len(scans[1]) >= MARGIN_CHARS
    assert second.content == _gate(tmp_path).prepare("u", body, []).content  # a fresh gate's bytes


def test_a_secret_in_the_new_part_is_masked_there_and_where_the_history_had_it_as_prose(
    tmp_path: Path,
) -> None:
    gate = _gate(tmp_path)
    value = "hunter2-Correct-Horse"  # prose on its own: no rule finds it
    history = _history(40 * 1024) + f"# note: {value} is here\n"
    first = gate.prepare("u", _turns(history), [])
    assert value.encode() in first.content
    # Key and value in separate strings: only the final scan sees `"password":"..."`, in the new
    # part; the history's copy of the value is masked too (a whole scan, once a secret is found).
    second = gate.prepare("u", {**_turns(history), "metadata": {"password": value}}, [])
    assert value.encode() not in second.content
    assert [e.field for e in second.findings] == ["<body>", "<body>"]


def test_the_window_starts_on_a_line_far_enough_back_and_at_a_key_block_reaching_into_it() -> None:
    text = _history(80 * 1024)
    known = 60 * 1024
    start = window_start(text, known)
    assert 0 < start <= known - MARGIN_CHARS and text[start - 1] == "\n"
    assert window_start(text, MARGIN_CHARS) == 0  # a short known prefix: the whole text
    # A private key opened before the window, not closed before it: the window starts at its BEGIN.
    begin = 20 * 1024
    keyed = text[:begin] + "-----BEGIN RSA PRIVATE KEY-----\n" + text[begin:]
    start = window_start(keyed, known)
    assert start <= begin and keyed[start:].startswith(keyed[start : begin + 10].split("\n")[0])
    assert "-----BEGIN RSA PRIVATE KEY-----" in keyed[start:]
