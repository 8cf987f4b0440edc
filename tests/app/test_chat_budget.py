"""A turn's context budget counts the snippets an earlier turn still in the window sent: they are
not sent again, and a follow-up about the same code adds only what is new. Real indexer, LanceDB
and retriever (lexical), no model server (the gatherer sends nothing)."""

from __future__ import annotations

from pathlib import Path

from codectx.app.chat_context import Gatherer, TurnInput
from codectx.app.cli import CommandIndex
from codectx.app.session import WorkspaceSession
from codectx.settings import load_settings
from tests.support.lsp_helpers import make_repo

QUESTION = "How does scale work with the helpers?"
BUDGET = 400


def test_pieces_already_in_the_conversation_count_against_the_turns_budget(tmp_path: Path) -> None:
    from codectx.cli import main

    root = make_repo(tmp_path / "repo")
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    settings = load_settings(root, {})
    session = WorkspaceSession(settings, index=CommandIndex(settings), embedder=lambda: None)

    def gather(already: set[tuple[str, int, int]]) -> Gatherer:
        redactor = session.redaction.pieces()
        gatherer = Gatherer(session, session.client.gate, redactor, BUDGET, 3.5, already, root)
        gatherer.gather(TurnInput(QUESTION))
        return gatherer

    first = gather(set()).out
    assert first.pieces and first.in_history == 0
    sent = {p.span for p in first.pieces}
    again = gather(sent)
    second = again.out
    assert not any(p.span in sent for p in second.pieces)  # nothing sent twice
    assert second.in_history >= 1
    # What is new this turn fits in what the earlier snippets leave of the budget.
    new_cost = sum(again.cost(p.text) for p in second.pieces)
    assert second.tokens - new_cost > 0  # the snippets in the conversation were counted
    assert second.tokens <= BUDGET
    # Without the earlier turn in the window (compacted), the same snippets are sent again.
    assert {p.span for p in gather(set()).out.pieces} == sent
