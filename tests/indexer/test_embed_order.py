"""Vectors near the open documents first (indexer/embedding/order.py): on a real store and model,
the neighbourhood's chunks are committed before the rest's, also when it changes mid-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from codectx.indexer import stages
from codectx.indexer.embedding.embedder import Embedder, name_model_id
from codectx.indexer.embedding.order import EmbedQueue, NearHashes
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage.store import IndexStore

from codectx.settings import load_settings
from tests.support.workspace import lexical_settings, write_workspace


def _module(i: int) -> str:
    return "".join(
        f"def task_{i}_{j}(value):\n    total = value * {i + 1} + {j}\n    return total - {i * j}\n\n\n"
        for j in range(3)
    )


FILES = {f"pkg/m{i}.py": _module(i) for i in range(10)}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(backend="torch", batch_size=4)


@pytest.fixture
def lexical_ws(tmp_path: Path) -> Path:
    root = write_workspace(tmp_path / "ws", FILES)
    index_workspace(root, lexical_settings(root))  # the lexical index exists, no vector yet
    return root


def _hashes(root: Path, *paths: str) -> set[str]:
    store = IndexStore.open(root / ".codectx")
    return {c.chunk.content_hash for c in store.chunks_of_files(list(paths))}


def _vectors(root: Path, model_id: str) -> set[str]:
    return IndexStore.open(root / ".codectx").vector_hashes(model_id)


def _embed_settings(root: Path) -> Any:
    return load_settings(root, environ={}, user_config=root.parent / "none.toml")


def test_the_neighbourhood_is_committed_before_the_rest(
    lexical_ws: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stages, "EMBED_COMMIT", 4)
    monkeypatch.setattr(stages, "EMBED_NEAR_COMMIT", 2)
    near = ["pkg/m7.py", "pkg/m3.py"]
    wanted = _hashes(lexical_ws, *near)
    assert len(wanted) >= 6
    seen: list[tuple[int, int, set[str], set[str]]] = []

    def progress(event: Any) -> None:
        if event.stage == "near":
            model = embedder.model_id
            seen.append(
                (
                    event.done,
                    event.total,
                    _vectors(lexical_ws, model),
                    _vectors(lexical_ws, name_model_id(model)),
                )
            )

    report = index_workspace(
        lexical_ws, _embed_settings(lexical_ws), progress, embedder=embedder, near=lambda: near
    )
    assert report.vectors_pending == 0
    assert [total for _, total, _, _ in seen] == [len(wanted)] * len(seen)
    assert seen[0][0] == 0 and seen[-1][0] == len(wanted)
    assert [done for done, _, _, _ in seen] == sorted(done for done, _, _, _ in seen)  # only forward
    _, _, bodies, names = seen[-1]
    assert bodies == wanted  # nothing else was committed before the neighbourhood was done
    assert names == wanted  # their name vectors came with them
    assert _vectors(lexical_ws, embedder.model_id) == _hashes(lexical_ws, *FILES)  # then the rest


def test_a_document_opened_mid_run_moves_to_the_front(
    lexical_ws: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stages, "EMBED_COMMIT", 4)
    asked = {"n": 0}

    def near() -> list[str]:
        asked["n"] += 1
        return [] if asked["n"] == 1 else ["pkg/m9.py"]  # opened after the first part

    finished: list[set[str]] = []

    def progress(event: Any) -> None:
        if event.stage == "near" and event.total and event.done == event.total:
            finished.append(_vectors(lexical_ws, embedder.model_id))

    index_workspace(lexical_ws, _embed_settings(lexical_ws), progress, embedder=embedder, near=near)
    wanted = _hashes(lexical_ws, "pkg/m9.py")
    assert len(finished) == 1
    assert wanted <= finished[0]
    assert len(finished[0] - wanted) <= 4  # at most the one part embedded before it opened
    assert asked["n"] > 2  # asked again before every part


def test_nothing_owed_near_is_reported_as_done(lexical_ws: Path, embedder: Embedder) -> None:
    settings = _embed_settings(lexical_ws)
    index_workspace(lexical_ws, settings, embedder=embedder)  # everything embedded, no neighbourhood
    (lexical_ws / "pkg/new.py").write_text(_module(42))
    events: list[tuple[int, int]] = []

    def progress(event: Any) -> None:
        if event.stage == "near":
            events.append((event.done, event.total))

    index_workspace(lexical_ws, settings, progress, embedder=embedder, near=lambda: ["pkg/m1.py"])
    assert events == [(0, 0)]  # its files had their vectors: the neighbourhood is done


def test_the_queue_hands_out_near_hashes_first_then_the_rest_in_order() -> None:
    queue = EmbedQueue(["a", "b", "c", "d", "e"], ["a", "d", "x"])
    body, names = queue.take_near(["d", "x", "c", "d"], 1)
    assert (body, names) == (["d"], ["d", "x"])  # a name whose body vector exists rides along
    assert queue.near_left(["d", "x", "c"]) == 1
    assert queue.take(2) == ["a", "b"]
    assert queue.take_near(["c"], 5) == (["c"], [])
    assert queue.take(9) == ["e"] and queue.body_left == 0
    assert queue.names_left() == ["a"] and queue.names_left() == []


def test_the_neighbourhood_is_files_nearest_first_within_a_chunk_budget() -> None:
    files = {
        "open.py": ["o1", "o2", "o3"],
        "big.py": ["b1", "b2", "b3", "b4"],
        "a.py": ["a1"],
        "b.py": ["c1", "c2"],
    }
    near = NearHashes(lambda: list(files), lambda paths: [files[p] for p in paths], max_chunks=5)
    assert near.current() == ["o1", "o2", "o3", "a1"]  # big.py does not fit, a.py does, b.py no longer
    assert near.files == 2
    huge = NearHashes(lambda: ["big.py", "a.py"], lambda paths: [files[p] for p in paths], max_chunks=2)
    assert huge.current() == ["b1", "b2", "b3", "b4"]  # the nearest file always counts whole
