"""Helpers shared by every command's CLI module: settings from flags, output."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codectx.errors import UsageError
from codectx.settings import Settings, find_workspace_root, load_settings


def add_command(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg]
    name: str,
    *,
    help: str,
    description: str,
    examples: Sequence[str],
    see: str = "",
) -> argparse.ArgumentParser:
    """A subcommand whose --help shows `description` as written (its own line breaks) and ends with
    its `examples`, one command line each, then the line `see` (where to read more), if any."""
    epilog = "examples:\n" + "\n".join(f"  {example}" for example in examples)
    return sub.add_parser(  # type: ignore[no-any-return]
        name,
        help=help,
        description=description,
        epilog=f"{epilog}\n{see}" if see else epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


# The commands that take --json, by their full name (`codectx audit show`): an error before or while
# parsing is written as JSON only for them (`codectx lsp --json` must not get JSON on its LSP channel).
JSON_COMMANDS: set[str] = set()


def add_json(parser: argparse.ArgumentParser, help: str = "machine-readable output (JSON)") -> None:
    parser.add_argument("--json", action="store_true", help=help)
    JSON_COMMANDS.add(parser.prog)


def add_index_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index-dir", metavar="DIR", help="index folder (default: <workspace>/.codectx)")


def add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="the workspace the document belongs to (default: the repository above it, else the "
        "current folder); a document whose real path is outside it is refused",
    )


def named_file(name: str) -> Path:
    """A file named on the command line: relative to the current folder, else to the workspace
    around it, as `search` prints paths (run in a subfolder, what it printed still works)."""
    path = Path(name).expanduser()
    if path.exists() or path.is_absolute() or ".." in path.parts:
        return path
    top = find_workspace_root(Path.cwd())
    around = top / path
    # Only inside that workspace, its real path too (a link there may lead anywhere).
    inside = os.path.realpath(around).startswith(os.path.realpath(top) + os.sep)
    return around if inside and around.exists() else path


def workspace_root(path: str | None) -> Path:
    """The workspace for a PATH argument.

    No PATH: the workspace enclosing the current folder (`find_workspace_root`: the nearest
    folder up with .git, .codectx.toml or an index), so a command run in a subfolder acts on the
    whole workspace, as git's do. A folder given by name is the workspace itself (it may be a
    checkout's subfolder on purpose: vendored code, an unpacked package). A file: the workspace
    enclosing it.
    """
    if path is None:
        return find_workspace_root(Path.cwd())
    target = Path(path).expanduser()
    if not target.exists():
        raise UsageError(f"path does not exist: {target}")
    if target.is_dir():
        return target.resolve()
    return find_workspace_root(target.parent)


def settings_for(
    root: Path | None, args: argparse.Namespace, extra: Mapping[str, Any] | None = None
) -> Settings:
    """Resolve settings once for a command, flags taking precedence."""
    overrides: dict[str, Any] = {}
    if getattr(args, "index_dir", None):
        overrides["index.index_dir"] = str(Path(args.index_dir).expanduser().resolve())
    if extra:
        overrides.update({k: v for k, v in extra.items() if v is not None})
    settings = load_settings(root, overrides)
    for warning in settings.warnings:
        print(f"codectx: warning: {warning}", file=sys.stderr)
    return settings


def json_text(data: Any, indent: int | None = None) -> str:
    """`data` as JSON that is valid UTF-8: non-ASCII text as is, unless it holds a lone surrogate
    (a client's `\\ud800` echoed back, argv bytes that are not UTF-8), then all of it escaped."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=indent, ensure_ascii=True, default=str)
    return text


def print_json(data: Any) -> None:
    sys.stdout.write(json_text(data, indent=2) + "\n")


def print_jsonl(data: Any) -> None:
    sys.stdout.write(json_text(data) + "\n")
    sys.stdout.flush()


# Characters a terminal acts on rather than shows: C0 and C1 controls (ESC starts a sequence that
# moves the cursor or recolours, CR and LF rewrite what a line says) and the bidirectional
# overrides and isolates (they reorder what is shown).
_UNPRINTABLE = {
    **{c: f"\\x{c:02x}" for c in [*range(0x20), *range(0x7F, 0xA0)]},
    **{c: f"\\u{c:04x}" for c in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]},
}


def shown_name(name: str) -> str:
    """A name from the workspace (a file's path, a symbol) as text for a terminal: every control and
    bidirectional character written as an escape, so a file named `a\x1b[2K\rfiles: none` cannot
    rewrite what `audit show` or a list of sources says was sent."""
    return name.translate(_UNPRINTABLE)


def stderr(message: str) -> None:
    print(message, file=sys.stderr)
