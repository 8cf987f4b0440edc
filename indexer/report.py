"""What an index run reports, and the progress events it emits on the way.

Kept apart from the pipeline so that callers which only print or compare
reports (the CLI's quick no-op check) do not import LanceDB.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from codectx.indexer.walk.discovery import shown


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
    skipped_files: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"} of each
    errors: list[str] = field(default_factory=list)  # one line per file that could not be indexed
    warnings: list[str] = field(default_factory=list)  # indexed anyway, or skipped lines of ignore files
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

    def note_discovery(self, found: Any) -> None:
        """A walk's skips (counts, and paths fit to print) and warnings (a discovery.Discovery)."""
        self.skipped = found.skipped_by_reason()
        self.skipped_files = [{"path": shown(s.path), "reason": s.reason} for s in found.skipped]
        self.warnings.extend(found.warnings)

    def add_skipped(self, path: str, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.skipped_files.append({"path": path, "reason": reason})
