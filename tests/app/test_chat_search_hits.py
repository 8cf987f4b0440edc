"""A turn's search hits: the first `SEARCH_WHOLE` are sent whole (up to an item's share of the
budget), the rest down to rank `SEARCH_K` as heads (signature and first lines), so that more of
the ranked candidates fit the budget. Real indexer, LanceDB and retriever (lexical); no model
server (the gatherer sends nothing)."""

from __future__ import annotations

from pathlib import Path

from codectx.app import chat_context
from codectx.app.chat_context import Gatherer, TurnInput
from codectx.app.cli import CommandIndex
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings

FUNCTIONS = 30
BODY_LINES = 40  # one chunk each, about 450 tokens: longer than a head, shorter than a whole item
BUDGET = 8192  # a chat budget (the default, retriever.chat_budget_tokens, is 6144)


def _repo(root: Path) -> Path:
    root.mkdir(parents=True)
    for n in range(FUNCTIONS):
        body = "\n".join(f"    total_{i} = ledger_balance * {i} + {n}" for i in range(BODY_LINES))
        (root / f"ledger_{n:02d}.py").write_text(
            f"def reconcile_ledger_balance_{n}(ledger_balance):\n{body}\n    return total_0\n",
            encoding="utf-8",
        )
    return root


def test_later_search_hits_are_sent_as_heads_and_more_of_them_fit(tmp_path: Path) -> None:
    from codectx.cli import main

    root = _repo(tmp_path / "repo")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)
    gatherer = Gatherer(session, session.client.gate, session.redaction.pieces(), BUDGET, 3.5, set(), root)
    got = gatherer.gather(TurnInput("how is the ledger balance reconciled"))
    found = [p for p in got.pieces if p.reason == "search"]
    whole, heads = found[: chat_context.SEARCH_WHOLE], found[chat_context.SEARCH_WHOLE :]
    assert len(whole) == chat_context.SEARCH_WHOLE and heads
    # The first hits are sent whole: the function to its return.
    assert all(p.text.rstrip().endswith("return total_0") for p in whole)
    whole_cost = gatherer.cost(whole[0].text)
    assert whole_cost <= BUDGET // chat_context.ITEM_SHARE
    # The later ones as heads: the signature and the first lines, within their smaller share.
    head_cap = max(BUDGET // chat_context.SEARCH_SHARE, 96)
    assert all(gatherer.cost(p.text) <= head_cap < whole_cost for p in heads)
    assert all(p.text.startswith("def reconcile_ledger_balance_") for p in heads)
    assert all(p.end_line - p.start_line < BODY_LINES for p in heads)
    # So more of the ranked hits fit than whole ones would.
    assert len(found) > BUDGET // whole_cost
    assert got.tokens <= BUDGET


def test_a_hit_past_the_end_of_a_file_cut_short_since_indexing_is_skipped(tmp_path: Path) -> None:
    from codectx.cli import main

    root = _repo(tmp_path / "repo")
    for path in root.glob("ledger_*.py"):  # each function starts below a header
        head = "".join(f"RATE_{i} = {i}\n" for i in range(8)) + "\n\n"
        path.write_text(head + path.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    # Cut short after indexing: the index still has a function from line 9 of each of these.
    for n in range(0, FUNCTIONS, 2):
        (root / f"ledger_{n:02d}.py").write_text("x = 1\n", encoding="utf-8")
    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)
    gatherer = Gatherer(session, session.client.gate, session.redaction.pieces(), BUDGET, 3.5, set(), root)
    got = gatherer.gather(TurnInput("how is the ledger balance reconciled"))
    found = [p for p in got.pieces if p.reason == "search"]
    # The files still as indexed are sent; the hits past the end of the cut ones are not.
    assert any("def reconcile_ledger_balance_" in p.text for p in found)
    assert all(p.start_line <= p.end_line and p.text for p in found)
    cut = {f"ledger_{n:02d}.py" for n in range(0, FUNCTIONS, 2)}
    assert not any(p.path in cut and "reconcile" in p.text for p in found)
    assert all(p.end_line <= 1 for p in found if p.path in cut)  # "x = 1" and the empty last line


def test_a_recently_edited_row_is_redacted_with_its_file(tmp_path: Path) -> None:
    """Review of stop 53: a recent edit was redacted alone, so a CSV or dump row whose column name
    is only in the header far above went out in clear."""
    from codectx.app.index import recent_edit
    from codectx.cli import main

    root = _repo(tmp_path / "repo")
    rows = "".join(f"{i},user{i}@x.io,Pw{i:03d}xQ7rLm2v\n" for i in range(200))
    (root / "users.csv").write_text("id,email,password\n" + rows, encoding="utf-8")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)
    edited = "150,user150@x.io,Pw150xQ7rLm2v\n151,user151@x.io,Pw151xQ7rLm2v"
    turn = TurnInput("what changed in the users file", recent=[recent_edit("users.csv", 151, 152, edited)])
    gatherer = Gatherer(session, session.client.gate, session.redaction.pieces(), BUDGET, 3.5, set(), root)
    got = gatherer.gather(turn)
    recent = [p for p in got.pieces if p.reason == "recently edited"]
    assert recent and "user150@x.io" in recent[0].text
    assert "Pw150xQ7rLm2v" not in recent[0].text and "Pw151xQ7rLm2v" not in recent[0].text


def test_an_unsaved_edit_is_redacted_with_the_buffer_it_was_cut_from(tmp_path: Path) -> None:
    """Red team 11 (F8): a region the user just typed into an open buffer was judged against the file
    on disk, where its lines are not; judged alone, the new row of a dump lost its INSERT line."""
    from codectx.app.index import recent_edit
    from codectx.cli import main

    root = _repo(tmp_path / "repo")
    rows = ",\n".join(f"({i}, 'user{i}@x.io', 'Pw{i:03d}xQ7rLm2v')" for i in range(120))
    on_disk = f"INSERT INTO users (id, email, password) VALUES\n{rows};\n"
    (root / "seed.sql").write_text(on_disk, encoding="utf-8")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    lines = on_disk.split("\n")
    typed = "(900, 'new900@x.io', 'Pw900xQ7rLm2v'),"
    buffer = "\n".join([*lines[:61], typed, *lines[61:]])  # a row typed in, not saved
    settings = load_settings(root, {})
    opened = {"seed.sql": buffer}
    session = WorkspaceSession(
        settings, index=CommandIndex(settings), embedder=lambda: None, read_open=opened.get
    )
    turn = TurnInput(
        "what did I add to the seed",
        recent=[recent_edit("seed.sql", 60, 62, "\n".join(buffer.split("\n")[60:63]))],
    )
    gatherer = Gatherer(
        session,
        session.client.gate,
        session.redaction.pieces(),
        BUDGET,
        3.5,
        set(),
        root,
        read_open=session.redaction.read_open,
    )
    recent = [p for p in gatherer.gather(turn).pieces if p.reason == "recently edited"]
    assert recent and "new900@x.io" in recent[0].text
    assert "Pw900xQ7rLm2v" not in recent[0].text and "Pw060xQ7rLm2v" not in recent[0].text


def test_a_diff_is_judged_against_the_file_on_disk_not_an_open_buffer(tmp_path: Path) -> None:
    """Review of stop 57: with buffers preferred everywhere, @diff cut the disk diff's line ranges out
    of an unsaved buffer (lines added at its top), and the changed row went out in clear."""
    import subprocess

    from codectx.cli import main

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args],
            check=True,
            capture_output=True,
        )

    root = _repo(tmp_path / "repo")
    rows = ",\n".join(f"({i}, 'user{i}@x.io', 'Pw{i:03d}xQ7rLm2v')" for i in range(200))
    dump = f"INSERT INTO users (id, email, password) VALUES\n{rows};\n"
    (root / "seed.sql").write_text(dump, encoding="utf-8")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    changed = dump.replace("Pw150xQ7rLm2v", "Pw999xNEWSECRET")
    (root / "seed.sql").write_text(changed, encoding="utf-8")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    settings = load_settings(root, {})
    buffer = "".join(f"-- note {i}\n" for i in range(80)) + changed  # unsaved lines at the top
    session = WorkspaceSession(
        settings, index=CommandIndex(settings), embedder=lambda: None, read_open={"seed.sql": buffer}.get
    )
    pieces = session.redaction.pieces()
    gatherer = Gatherer(
        session, session.client.gate, pieces, BUDGET, 3.5, set(), root, read_open=session.redaction.read_open
    )
    gatherer.diff()
    sent = "\n".join(p.text for p in gatherer.out.pieces if p.reason == "@diff")
    assert "@@" in sent and "user150@x.io" in sent
    assert "Pw999xNEWSECRET" not in sent and "Pw150xQ7rLm2v" not in sent
