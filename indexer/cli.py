"""The `codectx index` and `codectx status` commands."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codectx.clikit import add_index_dir, add_json, print_json, settings_for, stderr, workspace_root
from codectx.tuning import import_frozen
from codectx.workspace import too_broad

# The indexer's modules import LanceDB (seconds): only when one of these commands runs.
if TYPE_CHECKING:
    from codectx.indexer.report import IndexReport, ProgressEvent


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    index = sub.add_parser(
        "index",
        help="build or update the local index of a workspace",
        description="Index a workspace: discover source files (honouring .gitignore, .ignore, "
        ".codectxignore, .git/info/exclude and your global git excludes; never secret files), chunk "
        "them with tree-sitter, commit the full-text and symbol index, then compute embeddings. "
        "Re-running only touches what changed; an interrupted run is completed by the next one.",
    )
    index.add_argument("path", nargs="?", help="workspace folder (default: the one around .)")
    add_index_dir(index)
    index.add_argument("--model", metavar="M", help="embedding model: all-MiniLM-L6-v2 or a folder path")
    index.add_argument(
        "--no-embed", action="store_true", help="only the full-text and symbol index; no vectors"
    )
    add_json(index)
    index.set_defaults(func=_index)

    status = sub.add_parser(
        "status",
        help="show what is indexed and how fresh it is",
        description="Show the index of a workspace: files and chunks per language, vectors done and "
        "pending, when it was last indexed and how many files changed since.",
    )
    status.add_argument("path", nargs="?", help="workspace folder (default: the one around .)")
    add_index_dir(status)
    add_json(status)
    status.set_defaults(func=_status)


class _PlainProgress:
    """One line per stage change and at most one every few seconds: for logs and pipes."""

    def __init__(self) -> None:
        self.stage = ""
        self.last = 0.0
        # Each stage's first event (time, done): embedding alternates with commits, so the rate is
        # measured from the stage's start, not from its return after each commit (which read
        # 260 chunks in no time: 260000000/s).
        self.first: dict[str, tuple[float, int]] = {}

    def __call__(self, ev: ProgressEvent) -> None:
        now = time.monotonic()
        since, done_then = self.first.setdefault(ev.stage, (now, ev.done))
        if ev.stage == self.stage and now - self.last < 3 and ev.done != ev.total and ev.stage != "commit":
            return
        self.stage, self.last = ev.stage, now
        if ev.stage == "embed" and ev.done:
            rate = (ev.done - done_then) / (now - since) if now - since >= 1 else 0.0
            eta = f"ETA {(ev.total - ev.done) / rate:.0f}s" if rate > 0 else "ETA unknown"
            shown = f"{rate:.0f}/s" if rate > 0 else "measuring"
            stderr(f"embed: {ev.done}/{ev.total} chunks ({shown}, {eta})")
        elif ev.stage in ("parse", "embed"):
            stderr(f"{ev.stage}: {ev.done}/{ev.total} {'files' if ev.stage == 'parse' else 'chunks'}")
        elif ev.stage == "names":
            stderr(f"names: {ev.done}/{ev.total} name vectors")
        elif ev.stage == "commit":
            stderr(f"commit: {ev.done}/{ev.total} files searchable")
        elif ev.stage == "model":
            stderr(f"{ev.message} (the first run prepares a faster ONNX copy; this can take a minute)")
        elif ev.stage == "discover" and ev.total:
            stderr(f"discover: {ev.total} files")


class _RichProgress:
    """A live display on a terminal: files parsed, chunks embedded, rate and ETA."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            transient=False,
            console=None,
        )
        self.tasks: dict[str, Any] = {}
        self.started: dict[str, float] = {}
        self.done_then: dict[str, int] = {}

    def __enter__(self) -> _RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, ev: ProgressEvent) -> None:
        if ev.stage == "done":
            return
        if ev.stage == "model":
            self.progress.console.print(ev.message + " …")
            return
        if ev.stage == "commit":
            return
        label = ev.stage
        if label not in self.tasks:
            self.tasks[label] = self.progress.add_task(label, total=ev.total or None, rate="")
            self.started[label] = time.monotonic()
            self.done_then[label] = ev.done  # a resumed run's vectors already done are not this run's rate
        rate = ""
        elapsed = time.monotonic() - self.started[label]
        if ev.done and elapsed > 0.5:
            unit = "files" if label == "parse" else "chunks"
            rate = f"{(ev.done - self.done_then[label]) / elapsed:.0f} {unit}/s"
        self.progress.update(self.tasks[label], completed=ev.done, total=ev.total or None, rate=rate)


def _index(args: argparse.Namespace) -> int:
    root = workspace_root(args.path)
    if not root.is_dir():
        from codectx.errors import UsageError

        raise UsageError(f"not a folder: {args.path} (give the workspace folder)")
    broad = too_broad(root) if args.path is None and not (root / ".codectx").is_dir() else None
    if broad is not None:
        from codectx.errors import UsageError

        # Commands in a project below never use an index of the whole home (the workspace search
        # stops below it), and indexing it reads every project and download there.
        raise UsageError(
            f"{root} is {broad}, not a project: run `codectx index` in the project's folder, or "
            "name this one (`codectx index .`) to index all of it"
        )
    if args.path is None and root != Path.cwd().resolve():
        # Run from a subfolder: say which workspace is indexed, so nobody wonders where it went.
        print(f"codectx: indexing the workspace at {root}", file=sys.stderr)
    elif args.path is not None and not Path(args.path).expanduser().is_dir():
        print(f"codectx: {args.path} is a file: indexing the workspace around it, {root}", file=sys.stderr)
    extra: dict[str, Any] = {"index.model": args.model}
    if args.no_embed:
        extra["index.embed"] = False
    settings = settings_for(root, args, extra)
    # Most re-runs change nothing: answer from the manifest before loading LanceDB (~2 s).
    from codectx.indexer.walk.manifest import check_workspace

    checked = check_workspace(root, settings, embed=bool(settings.index.embed))
    quick = checked.report
    if quick is not None:
        if args.json:
            print_json(quick.as_dict())
        else:
            _print_report(quick)
        return 0
    _import_pipeline()
    from codectx.indexer.pipeline import index_workspace

    if args.json:
        report = index_workspace(root, settings, None, check_manifest=False, checked=checked)
        print_json(report.as_dict())
        return 0
    if sys.stderr.isatty():
        with _RichProgress() as live:
            report = index_workspace(root, settings, live, check_manifest=False, checked=checked)
    else:
        report = index_workspace(root, settings, _PlainProgress(), check_manifest=False, checked=checked)
    _print_report(report)
    return 0


def is_command_process() -> bool:
    """Whether this process is the `codectx` command itself, so it exits once the command returns."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name == "codectx.__main__":
        return True
    return Path(sys.argv[0]).name == "codectx" if sys.argv and sys.argv[0] else False


def _import_pipeline() -> None:
    """Import the indexer proper (LanceDB, pyarrow, numpy); in the `codectx` process itself, with
    its long-lived objects frozen (codectx/tuning.py: `import_frozen`). Inside another program (the
    language server, tests calling `main`) nothing changes."""
    if is_command_process():
        import_frozen("codectx.indexer.pipeline")


def _print_report(r: IndexReport) -> None:
    if r.quick:
        print(f"up to date: {r.root} -> {r.index_dir}")
        langs = ", ".join(f"{k} {n}" for k, n in sorted(r.chunks_per_language.items(), key=lambda x: -x[1]))
        print(
            f"files: {r.files} (none changed since the last run); chunks: {r.chunks}"
            + (f": {langs}" if langs else "")
        )
        if r.model_id:
            print(f"vectors ({r.model_id}): complete")
        _warn(r)
        return
    if r.rebuilt:
        print(f"rebuilt the index: {r.rebuilt}")
    if r.recovered:
        print(f"recovered from an interrupted run ({r.recovered} files re-indexed)")
    print(f"indexed {r.root} -> {r.index_dir}")
    print(
        f"files: {r.files} ({r.added} added, {r.updated} updated, {r.removed} removed, "
        f"{r.unchanged} unchanged)"
    )
    langs = ", ".join(f"{lang} {n}" for lang, n in sorted(r.chunks_per_language.items(), key=lambda x: -x[1]))
    print(f"chunks: {r.chunks} ({r.chunks_written} written this run){': ' + langs if langs else ''}")
    if r.skipped:
        print("skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(r.skipped.items())))
    if r.syntax_error_files:
        print(
            f"syntax errors (rest of the file still indexed): {len(r.syntax_error_files)} files, e.g. "
            + ", ".join(r.syntax_error_files[:3])
        )
    if r.model_id:
        print(
            f"vectors ({r.model_id}{', ' + r.embed_backend if r.embed_backend else ''}): "
            f"{r.vectors_embedded} embedded, {r.vectors_pending} pending"
        )
    else:
        print("vectors: not computed (--no-embed)")
    print("time: " + ", ".join(f"{stage} {secs:.1f}s" for stage, secs in r.timings.items()))
    _warn(r)


def _warn(r: IndexReport, limit: int = 20) -> None:
    """The run's warnings on stderr, the first `limit` of them (all of them are in --json)."""
    lines = [*r.warnings, *r.errors]
    for line in lines[:limit]:
        stderr(f"codectx: warning: {line}")
    if len(lines) > limit:
        stderr(f"codectx: warning: ... and {len(lines) - limit} more (`codectx index --json` lists them all)")


def _ago(ts: float | None) -> str:
    if not ts:
        return "never"
    secs = max(0.0, time.time() - ts)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if secs >= size:
            return f"{secs / size:.0f} {unit} ago"
    return f"{secs:.0f} s ago"


def _status(args: argparse.Namespace) -> int:
    from codectx.indexer.embedding.embedder import resolve_model
    from codectx.indexer.storage.store import IndexStore
    from codectx.indexer.walk.discovery import discover

    root = workspace_root(args.path)
    settings = settings_for(root, args)
    store = IndexStore.open(settings.index_dir())
    try:
        model_id = resolve_model(settings.index.model)[1]
    except Exception:
        model_id = store.model_id
    stats = store.stats(model_id)
    records = store.file_records()
    found = discover(root, settings) if root.is_dir() else None
    changed = new = 0
    deleted = len(records)
    if found is not None:
        seen = {sf.path: sf for sf in found.files}
        deleted = sum(1 for p in records if p not in seen)
        for path, sf in seen.items():
            rec = records.get(path)
            if rec is None:
                new += 1
            elif rec.size != sf.size or rec.mtime_ns != sf.mtime_ns:
                changed += 1
    fresh = {
        "changed": changed,
        "new": new,
        "deleted": deleted,
        "up_to_date": not (changed or new or deleted),
    }
    # A first run stopped before its end (Ctrl-C, a crash) left files and chunks but no time:
    # "last indexed: never" next to "up to date" read as a contradiction.
    finished = stats.last_indexed is not None
    if args.json:
        print_json({"root": str(root), **stats.as_dict(), "finished": finished, "since_last_index": fresh})
        return 0
    print(f"index: {stats.index_dir} (schema {stats.schema_version})")
    print(f"workspace: {root}")
    if finished:
        print(f"last indexed: {_ago(stats.last_indexed)}")
    else:
        print(
            "last indexed: never finished (a run stopped before its end; `codectx index` goes on from there)"
        )
    print(f"files: {stats.files}, chunks: {stats.chunks}, symbols: {stats.symbols}")
    for lang, n in sorted(stats.chunks_per_language.items(), key=lambda x: -x[1]):
        print(f"  {lang:<12} {stats.files_per_language.get(lang, 0):>6} files {n:>7} chunks")
    total = stats.vectors_done + stats.vectors_pending
    print(
        f"vectors ({stats.model_id or 'none'}): {stats.vectors_done}/{total} done, "
        f"{stats.vectors_pending} pending"
    )
    if fresh["up_to_date"] and stats.vectors_pending and stats.model_id:
        print(
            f"files up to date; {stats.vectors_pending} chunk(s) still lack vectors: "
            "`codectx index` embeds them"
        )
    elif fresh["up_to_date"]:
        print("up to date")
    else:
        print(f"since then: {changed} changed, {new} new, {deleted} deleted; run `codectx index` to update")
    return 0
