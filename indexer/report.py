"""What an index run reports, and the progress events it emits on the way.

Kept apart from the pipeline so that callers which only print or compare
reports (the CLI's quick no-op check) do not import LanceDB.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProgressEvent:
    stage: str  # discover, parse, commit (files searchable so far), model (loading the embedder), embed, done
    done: int
    total: int
    message: str = ""


ProgressFn = Callable[[ProgressEvent], None]


@dataclass
class IndexReport:
    root: str
    index_dir: str
    files: int = 0  # indexed files after the run
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0  # chunks in the index after the run
    chunks_written: int = 0
    chunks_per_language: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    errors: list[str] = field(default_factory=list)  # one line per file that could not be indexed
    syntax_error_files: list[str] = field(default_factory=list)
    model_id: str | None = None
    embed_backend: str | None = None
    vectors_embedded: int = 0
    vectors_pending: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    rebuilt: str | None = None  # why the index was rebuilt from scratch, if it was
    recovered: int = 0  # paths whose interrupted write was rolled back
    quick: bool = False  # answered from the manifest: nothing changed, the index was not opened

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
