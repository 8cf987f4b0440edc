"""`codectx search` and `codectx context`: the session's search and context on the command line.

Both open the workspace the way every surface does, through a WorkspaceSession (codectx.app.session):
the index, the query embedder (loaded only when a query needs it) and settings from the usual
layers. `codectx complete` is codectx.app.complete_cli; `codectx eval` stays with the retriever.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from codectx.app.index import (
    AssembledContext,
    BadRequest,
    QueryEmbedder,
    Store,
    document_root,
    load_embedder,
    open_index,
    read_document,
    read_stdin_document,
    relative_path,
    search_filters,
)
from codectx.app.session import WorkspaceSession
from codectx.clikit import (
    add_command,
    add_index_dir,
    add_json,
    add_root,
    named_file,
    print_json,
    print_jsonl,
    settings_for,
    shown_name,
    stderr,
    workspace_root,
)
from codectx.errors import CodectxError, UsageError
from codectx.positions import add_position_args, cursor_from_args, to_zero_based, zero_based_json
from codectx.settings import Settings


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _register_search(sub)
    _register_context(sub)


class CommandIndex:
    """A shell command's index: opened once, at first need.

    Without `on_missing`, a missing or empty index is the command's error (IndexNotFound and
    EmptyIndex name the command that builds it); with it, the problem is passed there and the
    command goes on without the index.
    """

    def __init__(self, settings: Settings, on_missing: Callable[[Exception], None] | None = None) -> None:
        self.settings = settings
        self.on_missing = on_missing
        self._store: Store | None = None
        self._tried = False

    def open_store(self) -> Store | None:
        if not self._tried:
            try:
                self._store = open_index(self.settings)
            except (CodectxError, ImportError) as exc:
                if self.on_missing is None:
                    raise
                self.on_missing(exc)
            self._tried = True
        return self._store

    def context_source(self) -> Store | None:
        return self.open_store()


class NoIndexSource:
    """For `--no-context`: the session never looks at the index."""

    def open_store(self) -> Store | None:
        return None

    def context_source(self) -> Store | None:
        return None


# ---- search -------------------------------------------------------------------------------------


def _register_search(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "search",
        help="hybrid search of the index (vectors + full text + symbol names)",
        description="Search the workspace index. Natural language and identifiers both work: "
        "vector, full-text and symbol-name results are fused. Lines are 1-based (FILE:FIRST-LAST, "
        'inclusive); --json gives them 0-based, saying so in "positions": "0-based".',
        examples=[
            'codectx search "parse the config file"',
            "codectx search Session.send -k 3 --show",
            "codectx search --batch queries.jsonl . > results.jsonl",
        ],
    )
    p.add_argument("query", nargs="?", help="what to look for (omit with --batch)")
    p.add_argument("path", nargs="?", help="workspace folder (default: the one enclosing the current folder)")
    p.add_argument("-k", type=int, metavar="N", help="number of results (default: retriever.k = 10)")
    p.add_argument("--lang", action="append", metavar="L", help="only this language (repeatable)")
    p.add_argument(
        "--glob",
        metavar="G",
        help="only paths matching this gitignore-style glob: 'src/*.py' (one folder), 'src/**/*.py', "
        "'*.go' (any depth), '!tests/**' (everything but tests)",
    )
    p.add_argument("--show", action="store_true", help="include each result's text")
    p.add_argument("--lexical", action="store_true", help="skip the vector search (no model load)")
    p.add_argument(
        "--batch",
        metavar="FILE",
        help='JSONL of {"id", "query"} ("-" = stdin); writes {"id", "results"} lines',
    )
    add_json(p)
    add_index_dir(p)
    p.set_defaults(func=_search)


def _search(args: argparse.Namespace) -> int:
    query, path = args.query, args.path
    if args.batch and query and not path:
        query, path = None, query  # `codectx search --batch q.jsonl DIR`
    if not args.batch and not query:
        raise UsageError("give a QUERY (or --batch FILE)")
    if args.k is not None and args.k < 1:
        raise UsageError("-k must be at least 1")
    root = workspace_root(path)
    settings = settings_for(root, args)
    index = CommandIndex(settings)
    index.open_store()  # a missing index is the error, before any query is read
    session = WorkspaceSession(
        settings, index=index, embedder=lambda: load_embedder(settings), preload_search=bool(args.batch)
    )
    # A misspelt language or a malformed glob is a usage error before anything is searched.
    languages, _ = search_filters([x for item in (args.lang or []) for x in item.split(",")], args.glob)
    dense = not args.lexical
    if args.batch:
        for number, record in _jsonl(args.batch):
            qid = record.get("id", number)
            q = record.get("query")
            try:
                if not isinstance(q, str):
                    raise BadRequest(f"line {number}: 'query' must be a string")
                response = session.search(
                    q, args.k or record.get("k"), languages=languages, glob=args.glob, dense=dense
                )
                results = [r.as_dict(args.show) for r in response.results]
                print_jsonl(zero_based_json({"id": qid, "results": results}))
            except CodectxError as exc:
                print_jsonl({"id": qid, "error": str(exc)})
        return 0
    response = session.search(query, args.k, languages=languages, glob=args.glob, dense=dense)
    for note in response.notes:
        stderr(f"codectx: note: {note}")
    if args.json:
        print_json(
            zero_based_json(
                {
                    "query": query,
                    "partial": response.partial,
                    "vectors_pending": response.vectors_pending,
                    "notes": response.notes,
                    "results": [r.as_dict(args.show) for r in response.results],
                }
            )
        )
        return 0
    if not response.results:
        print("no results")
    for i, r in enumerate(response.results, 1):
        name = f"  {shown_name(r.qualname or r.symbol)}" if (r.qualname or r.symbol) else ""
        where = f"{shown_name(r.path)}:{r.start_line + 1}-{r.end_line + 1}"
        print(f"{i:2}. {where}{name}  [{r.kind}, {r.score:.4f}]")
        if args.show:
            print("\n".join("      " + row for row in r.text.split("\n")))
    return 0


def _jsonl(source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of a JSONL file or stdin; a malformed line is an error naming its number."""
    handle: TextIO
    if source == "-":
        handle = sys.stdin
    else:
        try:
            handle = open(source, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UsageError(f"cannot read batch file {source}: {exc.strerror}") from None
    try:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise BadRequest(f"{source}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise BadRequest(f"{source}:{number}: each line must be a JSON object")
            yield number, record
    finally:
        if handle is not sys.stdin:
            handle.close()


# ---- context ------------------------------------------------------------------------------------


def _register_context(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "context",
        help="the completion context codectx would send for a cursor position",
        description="Assemble completion context for FILE at a 1-based line and column (--line, "
        "--character, or FILE:LINE:COL; FILE:FIRST-LAST, as `codectx search` prints it, is line "
        "FIRST): definitions of symbols used near the cursor, scope siblings, retrieved snippets, "
        "within the token budget. --json and --batch count from 0, like LSP.",
        examples=[
            "codectx context src/app.py --line 42 --character 9 --explain",
            "codectx context src/app.py:42:9 --explain",
            "cat buffer.py | codectx context src/app.py --line 4 --stdin --json",
            "codectx context --batch requests.jsonl . > contexts.jsonl",
        ],
    )
    p.add_argument(
        "file",
        nargs="?",
        help="the document, FILE or FILE:LINE[:COL] (FILE:FIRST-LAST, as search prints it: line FIRST; "
        "with --batch: the workspace folder)",
    )
    add_position_args(p)
    p.add_argument("--stdin", action="store_true", help="read the document text from stdin (unsaved edits)")
    p.add_argument("--explain", action="store_true", help="say why each item is there and what was dropped")
    p.add_argument("--show", action="store_true", help="print each item's text")
    p.add_argument(
        "--budget", type=int, metavar="TOKENS", help="token budget (default: retriever.budget_tokens)"
    )
    p.add_argument("--lexical", action="store_true", help="no vector search (no model load)")
    p.add_argument(
        "--batch",
        metavar="FILE",
        help='JSONL of {"id","path","text","line","character"} (0-based, like LSP; "-" = stdin); writes '
        '{"id","items","budget"}',
    )
    add_root(p)
    add_json(p)
    add_index_dir(p)
    p.set_defaults(func=_context)


def _context(args: argparse.Namespace) -> int:
    if not args.batch and not args.file:
        raise UsageError("give a FILE and --line (or --batch FILE)")
    cursor = None
    if args.batch:
        root = workspace_root(args.file)
    else:
        cursor = cursor_from_args(args.file, args.line, args.character)
        target = named_file(cursor.file)
        if not args.stdin and not target.exists():
            raise UsageError(f"no such file: {cursor.file}")
        root = document_root(target, args.root)
    extra: dict[str, Any] = {"retriever.budget_tokens": args.budget}
    if args.lexical:
        extra["retriever.context_dense"] = False
    settings = settings_for(root, args, extra)
    index = CommandIndex(settings)
    index.open_store()
    embedder = None if args.lexical else _LazyEmbedder(lambda: load_embedder(settings))
    session = WorkspaceSession(settings, index=index, embedder=lambda: embedder)
    if args.batch:
        for number, record in _jsonl(args.batch):
            rid = record.get("id", number)
            try:
                rel, text = _batch_document(root, record, number)
                result = _assembled(
                    session.context(
                        rel, text, _int(record, "line", number), _int(record, "character", number)
                    )
                )
                print_jsonl(
                    zero_based_json(
                        {
                            "id": rid,
                            "items": [i.as_dict(args.show) for i in result.items],
                            "budget": result.budget.as_dict(),
                        }
                    )
                )
            except CodectxError as exc:
                print_jsonl({"id": rid, "error": str(exc)})
        return 0
    assert cursor is not None
    rel = relative_path(root, target)
    text = read_stdin_document(f"{rel} on stdin") if args.stdin else read_document(root / rel)
    line, character = to_zero_based(cursor, text, rel)
    result = _assembled(session.context(rel, text, line, character))
    if args.json:
        data = zero_based_json(result.as_dict(text=args.show))
        if args.explain:
            data["explain"] = [
                {"path": i.path, "start_line": i.start_line, "why": i.why} for i in result.items
            ]
        print_json(data)
        return 0
    _print_context(result, args.explain, args.show)
    return 0


def _assembled(context: AssembledContext | None) -> AssembledContext:
    if context is None:  # pragma: no cover - CommandIndex raises when there is no index
        raise CodectxError("no index")
    return context


class _LazyEmbedder:
    """Loads the model only when a query actually needs embedding."""

    def __init__(self, make: Callable[[], QueryEmbedder]) -> None:
        self._make = make
        self._impl: QueryEmbedder | None = None

    def _get(self) -> QueryEmbedder:
        if self._impl is None:
            self._impl = self._make()
        return self._impl

    @property
    def model_id(self) -> str:
        return str(self._get().model_id)

    def embed_query(self, text: str) -> Any:
        return self._get().embed_query(text)


def _int(record: dict[str, Any], key: str, number: int) -> int:
    value = record.get(key, 0 if key == "character" else None)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"line {number}: '{key}' must be an integer")
    return value


def _batch_document(root: Path, record: dict[str, Any], number: int) -> tuple[str, str]:
    path = record.get("path")
    if not isinstance(path, str) or not path:
        raise BadRequest(f"line {number}: 'path' must be a non-empty string")
    candidate = Path(path)
    rel = relative_path(root, candidate if candidate.is_absolute() else root / candidate)
    text = record.get("text")
    if text is None:
        text = read_document(root / rel)
    elif not isinstance(text, str):
        raise BadRequest(f"line {number}: 'text' must be a string")
    return rel, text


def _print_context(result: Any, explain: bool, show: bool) -> None:  # a ContextResult, all of it
    """For people: lines and columns 1-based (the result's are 0-based)."""
    b = result.budget
    print(
        f"{result.path}:{result.line + 1}:{result.character + 1}  budget {b.total} tokens: "
        f"prefix {b.prefix_used}/{b.prefix_available}, suffix {b.suffix_used}/{b.suffix_available}, "
        f"context {b.context_used}/{b.context_available}"
    )
    for note in result.notes:
        print(f"  note: {note}")
    if not result.items:
        print("  (no context items)")
    for n, item in enumerate(result.items, 1):
        print(
            f"{n:2}. {item.reason:10} {shown_name(item.path)}:{item.start_line + 1}-{item.end_line + 1}  "
            f"{shown_name(item.symbol)}  "
            f"[{item.tokens} tok, score {item.score:.3f}]"
        )
        if explain:
            print(f"      why: {item.why}")
        if show:
            print("\n".join("      | " + row for row in item.text.split("\n")))
    if explain:
        if b.dropped:
            print(f"left out for the budget ({len(b.dropped)}):")
            for d in b.dropped:
                where = f"{shown_name(d.path)}:{d.start_line + 1}-{d.end_line + 1}  {shown_name(d.symbol)}"
                print(f"    {d.reason:10} {where}  {d.why}")
        else:
            print("nothing was left out for the budget")
