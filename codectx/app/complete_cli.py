"""`codectx complete`: one completion from the shell, through the same session an editor request takes.

WorkspaceSession.context (when the workspace is indexed), then WorkspaceSession.completer.complete: the
family's FIM prompt, redaction and audit in the privacy gate, the send, post-processing. With
`--dry-run` the exact request body is printed and nothing is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from codectx.app.cli import CommandIndex, NoIndexSource
from codectx.app.completion import CompletionAsk
from codectx.app.index import (
    QueryEmbedder,
    document_root,
    load_embedder,
    read_document,
    read_stdin_document,
    relative_path,
)
from codectx.app.session import IndexSource, WorkspaceSession
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendNotConfigured, BackendOffline, BackendTimeout
from codectx.clikit import (
    add_command,
    add_index_dir,
    add_json,
    add_root,
    named_file,
    print_json,
    settings_for,
    stderr,
)
from codectx.errors import UsageError
from codectx.positions import add_position_args, cursor_from_args, to_zero_based, zero_based_json
from codectx.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "complete",
        help="complete code at a cursor position with the model server",
        description="Complete FILE at a 1-based line and column (--line, --character, or FILE:LINE:COL, "
        "as `codectx context` and `codectx search` count them; search's FILE:FIRST-LAST is line "
        "FIRST): assemble context from the index, build the fill-in-the-middle prompt, redact it, log "
        "it in the audit log, send it to backend.url and print the completion. --dry-run prints the "
        "exact request body instead and sends nothing. --json counts from 0, like LSP.",
        examples=[
            "codectx complete src/app.py --line 42 --character 9",
            "codectx complete src/app.py:42:9",
            "cat buffer.py | codectx complete src/app.py --line 4 --character 5 --stdin --json",
            "codectx complete src/app.py --line 11 --dry-run",
            "codectx complete src/app.py:11 --backend-url http://127.0.0.1:8000/v1",
        ],
    )
    p.add_argument(
        "file",
        help="the document to complete in: FILE or FILE:LINE[:COL] (FILE:FIRST-LAST, as search prints "
        "it: line FIRST)",
    )
    add_position_args(p)
    p.add_argument("--stdin", action="store_true", help="read the document text from stdin (unsaved edits)")
    p.add_argument(
        "--mode",
        choices=("auto", "line", "block"),
        default="auto",
        help="complete the line, or a block of lines (default: auto, from the cursor's surroundings)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact request body and send no code (the server is only asked for its model "
        "name and stop-token ids, when one is configured)",
    )
    p.add_argument("--backend-url", metavar="URL", help="model server, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", help="served model name (default: backend.model, else the server's first)")
    p.add_argument("--lexical", action="store_true", help="context without vector search (no model load)")
    p.add_argument("--no-context", action="store_true", help="send only the code around the cursor")
    add_root(p)
    add_json(p)
    add_index_dir(p)
    p.set_defaults(func=_complete)


def _complete(args: argparse.Namespace) -> int:
    cursor = cursor_from_args(args.file, args.line, args.character)
    target = named_file(cursor.file)
    if not args.stdin and not target.exists():
        raise UsageError(f"no such file: {cursor.file}")
    # The document's real path must be inside the workspace (never /etc/passwd through a symlink).
    root = document_root(target, args.root)
    extra: dict[str, object] = {"backend.url": args.backend_url, "backend.model": args.model}
    if args.lexical:
        extra["retriever.context_dense"] = False
    settings = settings_for(root, args, extra)
    if not settings.backend.url and not args.dry_run:
        raise BackendNotConfigured()
    rel = relative_path(root, target)
    text = read_stdin_document(f"{rel} on stdin") if args.stdin else read_document(root / rel)
    args.line, args.character = to_zero_based(cursor, text, rel)  # the session counts from 0
    index: IndexSource = NoIndexSource()
    if not args.no_context:
        index = CommandIndex(settings, on_missing=_no_index_note)
        index.open_store()  # the note, if any, comes first
    embedder = NotedEmbedder(settings, enabled=not args.lexical)
    return asyncio.run(_run(args, settings, rel, text, index, embedder))


def _no_index_note(exc: Exception) -> None:
    stderr(f"codectx: note: no index context ({exc}); using only the code around the cursor")


class NotedEmbedder:
    """The query embedder, loaded at first need; a model that cannot load is noted once and the
    context is lexical (full text and symbol names still help)."""

    def __init__(self, settings: Settings, enabled: bool) -> None:
        self.settings = settings
        self.enabled = enabled
        self._loaded: QueryEmbedder | None = None
        self._tried = False

    def __call__(self) -> QueryEmbedder | None:
        if self.enabled and not self._tried:
            self._tried = True
            try:
                self._loaded = load_embedder(self.settings)
            except Exception as exc:  # no model: lexical context still helps
                stderr(f"codectx: note: embedder unavailable ({exc}); lexical context only")
        return self._loaded


SLOW_AFTER_S = 1.0  # a stream still going this long after its first token is shown as it arrives


class _SlowEcho:
    """Shows a slow stream's raw text on stderr as it arrives, once it has run SLOW_AFTER_S past
    its first token (the finished, post-processed completion still goes to stdout)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.first_at: float | None = None
        self.text = ""
        self.showing = False

    def __call__(self, delta: str) -> None:
        now = time.monotonic()
        self.first_at = self.first_at if self.first_at is not None else now
        self.text += delta
        if not self.enabled:
            return
        if self.showing:
            sys.stderr.write(delta)
        elif now - self.first_at >= SLOW_AFTER_S:
            self.showing = True
            sys.stderr.write(
                "codectx: the model server is slow; the text so far, as it arrives:\n" + self.text
            )
        sys.stderr.flush()

    def end(self) -> None:
        if self.showing:
            sys.stderr.write("\n")


async def _run(
    args: argparse.Namespace,
    settings: Settings,
    rel: str,
    text: str,
    index: IndexSource,
    embedder: NotedEmbedder,
) -> int:
    session = WorkspaceSession(settings, index=index, embedder=embedder, client=BackendClient(settings))
    async with session:
        started = time.perf_counter()
        context = session.context(rel, text, args.line, args.character)
        context_ms = (time.perf_counter() - started) * 1000
        if args.dry_run:
            dry = await session.completer.dry_run(
                CompletionAsk(rel, text, args.line, args.character, context)
            )
            if dry.note:
                stderr(f"codectx: note: {dry.note}")
            _print_unsent(args, dry.body, dry.endpoint, dry.audit_id, "dry run")
            return 0
        echo = _SlowEcho(enabled=not args.json)
        try:
            result = await session.completer.complete(
                rel,
                text,
                args.line,
                args.character,
                context=context,
                mode=args.mode,
                on_delta=echo,
                context_ms=context_ms,
            )
        except BackendOffline as exc:
            _print_unsent(args, exc.body, "/v1/completions", exc.audit_id, "offline mode (privacy.offline)")
            return 0
        except BackendTimeout as exc:
            echo.end()
            if not exc.slow:
                raise
            return _print_partial(args, exc)
        echo.end()
    if args.json:
        data = zero_based_json(result.as_dict())
        data["context"] = session.last.items if session.last else []
        print_json(data)
    else:
        sys.stdout.write(result.text + ("\n" if not result.text.endswith("\n") else ""))
        if not result.text:
            stderr("codectx: the model returned no usable completion")
    return 0


def _print_partial(args: argparse.Namespace, exc: BackendTimeout) -> int:
    """A live stream cut by the total timeout: what arrived is printed, not thrown away."""
    if args.json:
        print_json({"text": exc.partial, "partial": True, "error": str(exc), "phase": exc.phase})
    else:
        sys.stdout.write(exc.partial + ("\n" if exc.partial and not exc.partial.endswith("\n") else ""))
    stderr(f"codectx: warning: {exc}")
    return int(exc.exit_code)


def _print_unsent(
    args: argparse.Namespace, body: bytes, endpoint: str, audit_id: str | None, why: str
) -> None:
    if args.json:
        print_json(
            {
                "sent": False,
                "reason": why,
                "endpoint": endpoint,
                "bytes": len(body),
                "audit_id": audit_id,
                "body": json.loads(body),
            }
        )
    else:
        sys.stdout.write(body.decode("utf-8") + "\n")
    stderr(f"codectx: {why}: nothing was sent ({len(body)} bytes for {endpoint}; audit id {audit_id})")
