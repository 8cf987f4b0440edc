"""The LanceDB store: round trips, full-text and vector search, filters, recovery, schema checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from codectx.indexer.errors import IndexNotFound, IndexSchemaMismatch
from codectx.indexer.model import Chunk, Definition, Import, Reference
from codectx.indexer.parsing.identifiers import split_identifier
from codectx.indexer.storage.store import JOURNAL_FILE, FileData, FileRecord, IndexStore, filter_sql


def chunk(path: str, text: str, symbol: str = "", language: str = "python", start: int = 0) -> Chunk:
    return Chunk(
        path=path,
        language=language,
        kind="function" if symbol else "module",
        symbol=symbol,
        qualname=symbol,
        signature=text.splitlines()[0] if symbol else "",
        doc="",
        start_line=start,
        end_line=start + text.count("\n"),
        start_byte=0,
        end_byte=len(text.encode()),
        text=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def file_data(path: str, chunks: list[Chunk], language: str = "python", **extra: object) -> FileData:
    record = FileRecord(path, 100, 1, hashlib.sha256(path.encode()).hexdigest(), language, len(chunks))
    return FileData(record, chunks, **extra)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    s = IndexStore.open(tmp_path / "idx", create=True)
    s.write_files(
        [
            file_data(
                "src/users.py",
                [
                    chunk("src/users.py", "def getUserName(uid):\n    return lookup(uid)", "getUserName"),
                    chunk(
                        "src/users.py", "def delete_account(uid):\n    purge(uid)", "delete_account", start=3
                    ),
                ],
                definitions=[
                    Definition("getUserName", "getUserName", "function", "src/users.py", "python", 0, 1),
                    Definition(
                        "delete_account", "delete_account", "function", "src/users.py", "python", 3, 4
                    ),
                ],
                imports=[Import("..db", (("lookup", "lookup"),), resolved="db.py", line=0)],
                references=[Reference("lookup", 1, 11, "lookup")],
            ),
            file_data(
                "web/mail.go",
                [chunk("web/mail.go", "func SendMail(to string) error {\n  return nil\n}", "SendMail", "go")],
                language="go",
                definitions=[Definition("SendMail", "SendMail", "function", "web/mail.go", "go", 0, 2)],
            ),
        ]
    )
    return s


def test_missing_index_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFound, match="codectx index"):
        IndexStore.open(tmp_path / "nothing")


def test_create_writes_self_ignoring_gitignore(tmp_path: Path) -> None:
    IndexStore.open(tmp_path / "idx", create=True)
    assert (tmp_path / "idx" / ".gitignore").read_text().strip() == "*"


def test_old_schema_is_refused_with_rebuild_hint(store: IndexStore) -> None:
    meta = json.loads((store.index_dir / "meta.json").read_text())
    meta["schema_version"] = 0
    (store.index_dir / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(IndexSchemaMismatch, match="rebuild"):
        IndexStore.open(store.index_dir)


def test_fts_finds_camel_case_identifiers_by_words(store: IndexStore) -> None:
    hits = store.fts_search("user name", 5)
    assert hits and hits[0].chunk.symbol == "getUserName"
    assert store.fts_search("getUserName", 5)[0].chunk.symbol == "getUserName"
    assert store.fts_search("send mail", 5)[0].chunk.symbol == "SendMail"
    assert store.fts_search("delete_account", 5)[0].chunk.symbol == "delete_account"


def test_fts_filters_by_language_and_glob(store: IndexStore) -> None:
    assert store.fts_search("uid", 5, languages=["go"]) == []
    assert {h.chunk.path for h in store.fts_search("uid", 5, languages=["python"])} == {"src/users.py"}
    assert store.fts_search("mail", 5, path_glob="src/**") == []
    assert [h.chunk.path for h in store.fts_search("mail", 5, path_glob="web/*.go")] == ["web/mail.go"]
    assert store.fts_search("mail", 5, languages=["python"]) == []


def test_fts_after_index_build_sees_later_writes(store: IndexStore) -> None:
    store._table("chunks").create_index("search", config=__import__("lancedb").index.FTS(), replace=True)
    store.write_files([file_data("late.py", [chunk("late.py", "def frobnicate():\n    pass", "frobnicate")])])
    assert [h.chunk.path for h in store.fts_search("frobnicate", 3)] == ["late.py"]


def test_glob_translation_escapes_sql_wildcards() -> None:
    sql = filter_sql(path_glob="a_b/*.py")
    assert sql is not None and "a\\_b/%.py%" in sql
    assert filter_sql() is None


def test_symbols_imports_references_round_trip(store: IndexStore) -> None:
    assert [d.path for d in store.symbols_named("SendMail")] == ["web/mail.go"]
    assert [d.name for d in store.symbols_in_file("src/users.py")] == ["getUserName", "delete_account"]
    (imp,) = store.file_imports("src/users.py")
    assert imp.module == "..db" and imp.names == (("lookup", "lookup"),) and imp.resolved == "db.py"
    assert store.file_references("src/users.py") == [Reference("lookup", 1, 11, "lookup")]
    assert [c.symbol for c in store.chunks_for_file("src/users.py")] == ["getUserName", "delete_account"]
    assert sorted(c.path for c in store.all_chunks()) == ["src/users.py", "src/users.py", "web/mail.go"]


def test_several_names_in_one_lookup_equal_one_lookup_each(store: IndexStore) -> None:
    store.write_files(
        [
            file_data(
                "src/mailer.py",
                [chunk("src/mailer.py", "class Mailer:\n    def SendMail(self):\n        pass", "Mailer")],
                definitions=[
                    Definition("Mailer", "Mailer", "class", "src/mailer.py", "python", 0, 2),
                    Definition("SendMail", "Mailer.SendMail", "method", "src/mailer.py", "python", 1, 2),
                ],
            )
        ]
    )
    names = ["SendMail", "Mailer.SendMail", "getUserName", "nothing_here", "SendMail", ""]
    many = store.symbols_named_any(names)
    assert set(many) == {"SendMail", "Mailer.SendMail", "getUserName"}  # no entry for a name not defined
    for name in many:
        assert many[name] == store.symbols_named(name)
    assert [d.path for d in many["SendMail"]] == ["src/mailer.py", "web/mail.go"]
    assert store.symbols_named_any([]) == {}


def test_vector_search_partial_index_and_filters(store: IndexStore) -> None:
    chunks = {c.symbol: c for c in store.all_chunks()}
    # Only two of three chunks have vectors: a partial index.
    store.add_vectors(
        "m",
        [chunks["getUserName"].content_hash, chunks["SendMail"].content_hash],
        np.eye(3, dtype=np.float32)[:2],
    )
    stats = store.stats("m")
    assert (stats.vectors_done, stats.vectors_pending) == (2, 1)
    hits = store.vector_search(np.array([0.1, 1.0, 0.0]), 5, "m")
    assert [h.chunk.symbol for h in hits] == ["SendMail", "getUserName"]
    assert hits[0].score > hits[1].score
    assert [
        h.chunk.symbol for h in store.vector_search(np.array([0.1, 1.0, 0.0]), 5, "m", languages=["python"])
    ] == ["getUserName"]
    assert store.vector_search(np.ones(3), 5, "other-model") == []


def test_unfiltered_vector_search_reads_past_stale_vectors(store: IndexStore) -> None:
    """An unfiltered search reads only k nearest vectors first; when their chunks are gone (a
    vector whose content no chunk has any more), it reads deeper instead of answering short."""
    chunks = {c.symbol: c for c in store.all_chunks()}
    store.add_vectors(
        "m",
        ["0" * 64, "1" * 64, chunks["SendMail"].content_hash, chunks["getUserName"].content_hash],
        np.array([[1, 0, 0], [0.9, 0.1, 0], [0.5, 0.5, 0], [0, 0, 1]], dtype=np.float32),
    )
    query = np.array([1.0, 0.0, 0.0])
    assert [h.chunk.symbol for h in store.vector_search(query, 1, "m")] == ["SendMail"]
    assert [h.chunk.symbol for h in store.vector_search(query, 2, "m")] == ["SendMail", "getUserName"]


def test_reader_sees_writers_commits(store: IndexStore) -> None:
    reader = IndexStore.open(store.index_dir)
    assert reader.stats().files == 2
    store.write_files([], removed=["web/mail.go"], known=["web/mail.go"])
    stats = reader.stats()
    assert stats.files == 1 and stats.chunks_per_language == {"python": 2}
    assert reader.symbols_named("SendMail") == []


def test_recover_drops_rows_of_an_interrupted_write(store: IndexStore) -> None:
    # A writer died after writing chunk rows of a file but before its record.
    (store.index_dir / JOURNAL_FILE).write_text(json.dumps(["half.py", "src/users.py"]))
    store._table("chunks").add(
        [
            {**{k: getattr(c, k) for k in c.__dataclass_fields__}, "id": c.id, "search": c.text}
            for c in [chunk("half.py", "def half():\n    pass", "half")]
        ]
    )
    reopened = IndexStore.open(store.index_dir)
    assert sorted(reopened.recover()) == ["half.py", "src/users.py"]
    assert {c.path for c in reopened.all_chunks()} == {"web/mail.go"}
    assert set(reopened.file_records()) == {"web/mail.go"}
    assert not (store.index_dir / JOURNAL_FILE).exists()


def test_split_identifier() -> None:
    assert split_identifier("parseHTTPHeader_v2") == ["parse", "http", "header", "v2"]
    assert split_identifier("snake_case_name") == ["snake", "case", "name"]


def test_orphan_vectors_kept_as_cache_then_pruned(store: IndexStore) -> None:
    live = sorted(store.chunk_hashes())
    store.add_vectors("m", live, np.ones((len(live), 4), dtype=np.float32))
    store.add_vectors("m", [f"gone{i}" for i in range(10)], np.ones((10, 4), dtype=np.float32))
    assert store.prune_vectors("m") == 0  # a few orphans stay: a reverted file is free to re-index
    many = [f"old{i}" for i in range(1200)]
    store.add_vectors("m", many, np.ones((len(many), 4), dtype=np.float32))
    assert store.prune_vectors("m") >= 1200
    assert store.vector_hashes("m") == set(live)
    assert store.chunk_count() == len(list(store.all_chunks())) == 3


def test_lookup_columns_are_indexed_and_rows_written_later_are_still_found(tmp_path: Path) -> None:
    from codectx.indexer.storage.store import LOOKUP_COLUMNS

    from tests.support.indexes import build_index

    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("def alpha():\n    return 1\n")
    settings, store = build_index(root)
    indexed = {(n, tuple(i.columns)) for n in LOOKUP_COLUMNS for i in store._table(n).list_indices()}
    assert {(n, (c,)) for n, cols in LOOKUP_COLUMNS.items() for c in cols} <= indexed
    assert store.ensure_lookup_indexes() == []  # nothing missing: nothing rebuilt
    # A second run adds rows after the indexes were built: lookups still see them.
    (root / "pkg" / "b.py").write_text("def beta():\n    return alpha()\n")
    (root / "pkg" / "a.py").write_text("def alpha2():\n    return 2\n")
    from codectx.indexer.pipeline import index_workspace

    index_workspace(root, settings)
    store = IndexStore.open(settings.index_dir())
    found = store.symbols_named_any(["alpha", "alpha2", "beta"])
    assert sorted(found) == ["alpha2", "beta"]
    hashes = [c.content_hash for c in store.chunks_for_file("pkg/b.py")]
    assert hashes and set(store.chunks_with_hashes(hashes)) == set(hashes)
