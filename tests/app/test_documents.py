"""Files' texts kept across chat turns (codectx/app/documents.py): read once while unchanged, read
again once saved (a new size, or the same size and a new modification time), the errors of
read_document for what cannot be read, and the kept texts' line offsets. A turn's gatherer with a
shared cache sends a file's new text after it was edited between turns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codectx.app import documents
from codectx.app.documents import DocumentCache, line_sums
from codectx.errors import CodectxError


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []
    real = documents.read_document

    def read(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(documents, "read_document", read)
    return seen


def test_a_file_is_read_once_while_unchanged_and_again_once_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = _reads(monkeypatch)
    cache = DocumentCache()
    f = tmp_path / "a.py"
    f.write_text("x = 1\n")
    assert cache.text(f) == "x = 1\n" and cache.text(f) == "x = 1\n"
    assert len(reads) == 1
    f.write_text("x = 22\n")  # a new size
    assert cache.text(f) == "x = 22\n" and len(reads) == 2
    stamp = f.stat().st_mtime_ns
    f.write_text("x = 33\n")  # the same size, written within the same clock tick maybe:
    os.utime(f, ns=(stamp + 1_000_000, stamp + 1_000_000))  # a later modification time
    assert cache.text(f) == "x = 33\n" and len(reads) == 3


def test_what_cannot_be_read_raises_as_read_document_does_and_the_cache_is_bounded(tmp_path: Path) -> None:
    cache = DocumentCache(limit=2)
    with pytest.raises(CodectxError):
        cache.text(tmp_path / "missing.py")
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    with pytest.raises(CodectxError, match="binary"):
        cache.text(tmp_path / "blob.bin")
    for n in range(3):
        (tmp_path / f"m{n}.py").write_text(f"m = {n}\n")
        cache.text(tmp_path / f"m{n}.py")
    assert len(cache._kept) == 2 and str(tmp_path / "m0.py") not in cache._kept


def test_line_offsets_are_kept_with_their_text(tmp_path: Path) -> None:
    cache = DocumentCache()
    f = tmp_path / "a.py"
    f.write_text("ab\n\ncdef\n")
    text = cache.text(f)
    sums = cache.sums(f, text)
    assert sums == line_sums(text) == [0, 2, 2, 6, 6]
    assert cache.sums(f, text) is sums  # counted once for the kept text
    other = "zz\n" + text[:0]  # not the kept text: counted, not kept
    assert cache.sums(f, other) == line_sums(other) and cache.sums(f, text) is sums


def test_a_gatherer_with_a_shared_cache_sends_a_files_text_as_edited_between_turns(tmp_path: Path) -> None:
    from codectx.app.chat_context import Gatherer, TurnInput
    from codectx.app.cli import CommandIndex
    from codectx.app.session import WorkspaceSession
    from codectx.cli import main
    from codectx.settings import load_settings

    root = tmp_path / "repo"
    root.mkdir()
    f = root / "ledger.py"
    f.write_text("def reconcile_ledger_balance(ledger):\n    return ledger.total_before\n")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)
    cache = DocumentCache()

    def turn() -> str:
        gatherer = Gatherer(
            session, session.client.gate, session.redaction.pieces(), 4096, 3.5, set(), root, documents=cache
        )
        got = gatherer.gather(TurnInput("how is the ledger balance reconciled"))
        return "\n".join(p.text for p in got.pieces if p.path == "ledger.py")

    assert "total_before" in turn()
    f.write_text("def reconcile_ledger_balance(ledger):\n    return ledger.total_after_the_edit\n")
    assert "total_after_the_edit" in turn()
