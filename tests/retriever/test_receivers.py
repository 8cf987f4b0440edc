"""Receiver evidence for completion context: what the workspace calls on `ctx.`, `formatter.`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codectx.indexer.model import Definition
from codectx.indexer.storage.store import IndexStore
from codectx.retriever import vectorcache
from codectx.retriever.context import assemble_context
from codectx.retriever.receivers import ReceiverCalls, owner_of, pick, receivers_in
from codectx.retriever.snapshot import IndexSnapshot

from tests.support.indexes import build_index

LEXICAL = {"retriever.context_dense": False}


def _definition(name: str, qualname: str, path: str = "a.py", line: int = 0) -> Definition:
    return Definition(
        name=name,
        qualname=qualname,
        kind="method" if "." in qualname else "function",
        path=path,
        start_line=line,
        end_line=line + 2,
        language="python",
    )


def test_counts_leave_out_the_file_being_edited() -> None:
    calls = ReceiverCalls()
    calls.set_file("a.py", ["ctx.invoke", "ctx.invoke", "ctx.exit", "self.helper"])
    calls.set_file("b.py", ["ctx.exit", "ctx.fail", "x"])
    uses = {u.member: u.share for u in calls.members("ctx", exclude_path="b.py")}
    assert uses == {"invoke": pytest.approx(2 / 3), "exit": pytest.approx(1 / 3)}
    members = {u.member for u in calls.members("ctx", exclude_path="a.py")}
    assert members == {"exit", "fail"}
    assert calls.members("nobody", exclude_path="a.py") == []


def test_a_changed_file_replaces_its_counts() -> None:
    calls = ReceiverCalls()
    calls.set_file("a.py", ["ctx.invoke", "app.run"])
    calls.set_file("b.py", ["ctx.invoke"])
    calls.set_file("a.py", ["ctx.exit"])
    assert {u.member for u in calls.members("ctx", "z.py")} == {"invoke", "exit"}
    assert calls.members("app", "z.py") == []
    calls.drop_file("b.py")
    assert [u.member for u in calls.members("ctx", "z.py")] == ["exit"]
    calls.drop_file("a.py")
    assert calls.total == {}


def test_receivers_are_the_parts_before_a_member_and_plain_names() -> None:
    assert receivers_in(["self.app.run", "ctx", "formatter.write", "self"]) == ["app", "ctx", "formatter"]


def test_owner_is_the_class_defining_most_members() -> None:
    table = {
        "invoke": [_definition("invoke", "Context.invoke"), _definition("invoke", "Runner.invoke")],
        "exit": [_definition("exit", "Context.exit")],
        "get": [_definition("get", "Context.get"), _definition("get", "Cache.get")],
    }
    assert owner_of(["invoke", "exit", "get"], lambda n: table.get(n, [])) == "Context"
    assert owner_of(["invoke"], lambda n: table.get(n, [])) == ""  # one member proves nothing
    assert pick(table["get"], "Context") == table["get"][0]
    assert pick(table["get"], "") is None  # ambiguous without an owner
    assert pick(table["exit"], "") == table["exit"][0]


CORE = """class Context:
    def get_parameter_source(self, name):
        return self.sources.get(name)

    def lookup_default(self, name):
        return self.defaults.get(name)

    def fail(self, message):
        raise ValueError(message)


class Formatter:
    def write_usage(self, prog):
        return prog
"""

USERS = """def check_source(ctx):
    source = ctx.get_parameter_source("name")
    return ctx.lookup_default("name"), source


def report(ctx):
    if ctx.lookup_default("x") is None:
        ctx.fail("no default")
"""

EDITED = "def new_command(ctx, value):\n    if value is None:\n        \n    return value\n"


@pytest.fixture
def receiver_repo(tmp_path: Path) -> tuple[Path, object, object]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "core.py").write_text(CORE)
    (root / "users.py").write_text(USERS)
    (root / "edited.py").write_text(EDITED)
    settings, store = build_index(root, **LEXICAL)
    return root, settings, store


def test_what_other_files_call_on_a_receiver_is_a_candidate(receiver_repo: tuple) -> None:
    _root, settings, store = receiver_repo
    result = assemble_context(store, settings, "edited.py", EDITED, 2, 8)
    found = {c.symbol: c for c in result.ranked if c.reason == "definition"}
    for name in ("Context.get_parameter_source", "Context.lookup_default", "Context.fail"):
        assert name in found, sorted(found)
        assert found[name].path == "core.py"
    assert "as the rest of the workspace uses `ctx`" in found["Context.lookup_default"].why
    assert "Formatter.write_usage" not in found  # nothing calls it on `ctx`
    weightless = settings.with_overrides({"retriever.receiver_weight": 0.0})
    plain = assemble_context(store, weightless, "edited.py", EDITED, 2, 8)
    assert not any("workspace uses" in c.why for c in plain.ranked)


def test_the_edited_file_is_not_its_own_evidence(receiver_repo: tuple) -> None:
    _root, settings, store = receiver_repo
    # users.py is the file being edited here: the only uses of `ctx.` are its own.
    text = "def other(ctx):\n    \n    return ctx\n"
    result = assemble_context(store, settings, "users.py", text, 1, 4)
    assert not any("workspace uses" in c.why for c in result.ranked)


def test_receiver_counts_follow_a_reindexed_file(receiver_repo: tuple) -> None:
    root, _settings, store = receiver_repo
    snap = IndexSnapshot(store)
    snap.preload()
    before = snap.receiver_calls()
    assert before is not None
    assert {u.member for u in before.members("ctx", "edited.py")} >= {"lookup_default", "fail"}
    (root / "users.py").write_text("def report(ctx):\n    ctx.abort()\n")
    build_index(root, **LEXICAL)
    snap.refresh(force=False)
    snap._checked = 0.0  # past the check interval
    after = snap.receiver_calls()
    assert after is not None
    assert [u.member for u in after.members("ctx", "edited.py")] == ["abort"]


def test_approximate_vector_search_agrees_with_the_exact_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    for i in range(40):
        (root / f"m{i}.py").write_text(
            f"def f_{i}(x):\n    return x + {i}\n\n\ndef g_{i}(y):\n    return y * {i}\n"
        )
    _settings, store = build_index(root, **LEXICAL)
    assert isinstance(store, IndexStore)
    hashes = sorted(store.chunk_hashes())
    rng = np.random.default_rng(0)
    # Vectors with a low-rank structure, as real embeddings have, plus noise.
    vectors = rng.standard_normal((len(hashes), 8)) @ rng.standard_normal((8, 64))
    vectors += 0.05 * rng.standard_normal(vectors.shape)
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    store.add_vectors("test-model", hashes, vectors)
    monkeypatch.setattr(vectorcache, "APPROX_MIN_ROWS", 1)
    monkeypatch.setattr(vectorcache, "APPROX_DIMS", 16)
    monkeypatch.setattr(vectorcache, "APPROX_POOL", 20)
    snap = IndexSnapshot(store)
    for row in (0, 7, 31):
        exact = snap.vector_search(vectors[row], 5, "test-model")
        approx = snap.approx_vector_search(vectors[row], 5, "test-model")
        assert [h.chunk.id for h in approx] == [h.chunk.id for h in exact]
        assert approx[0].score == pytest.approx(1.0, abs=1e-5)
        assert [h.score for h in approx] == sorted((h.score for h in approx), reverse=True)


def test_preload_keeps_the_collector_out_of_later_requests(receiver_repo: tuple) -> None:
    """What a long-lived process loads is frozen, and full collections become rare."""
    import gc

    from codectx import tuning

    _root, _settings, store = receiver_repo
    tuning.serve_queries()  # what the entry points of long-lived processes call
    frozen = gc.get_freeze_count()
    IndexSnapshot(store).preload(wait=True)
    assert gc.get_freeze_count() > frozen
    assert gc.get_threshold()[2] >= tuning.FULL_EVERY
