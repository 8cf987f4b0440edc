"""The `codectx` command line: builds the parser from each package's CLI module.

Every package keeps its commands in its own `cli.py` with a `register(sub)`
function; this module only wires them and turns CodectxError into a message
and an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import NoReturn

from codectx import __version__
from codectx.clikit import (
    JSON_COMMANDS,
    add_command,
    add_json,
    print_json,
    print_jsonl,
    settings_for,
    workspace_root,
)
from codectx.errors import CodectxError
from codectx.platforms import unsupported_platform
from codectx.positions import CONVENTION
from codectx.runtime import quiet_dependencies
from codectx.schema import SCHEMA
from codectx.shutdown import exit_process, status_of
from codectx.tuning import light_lancedb_import, serve_queries, skip_httpx_cli

# Commands whose process answers queries from the index (codectx/tuning.py: `serve_queries`).
QUERY_COMMANDS = frozenset({"search", "context", "eval", "complete", "ask", "chat", "lsp", "mcp"})
# Order is the order of `codectx --help`.
COMMAND_MODULES = (
    "codectx.indexer.cli",
    "codectx.app.cli",  # search, context
    "codectx.retriever.cli",  # eval
    "codectx.privacy.cli",
    "codectx.backend.cli",
    "codectx.app.complete_cli",
    "codectx.app.chat_cli",  # ask, chat
    "codectx.lsp.cli",
    "codectx.mcp.cli",
)


def _register_config(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    config = sub.add_parser("config", help="show the resolved configuration")
    config_sub = config.add_subparsers(dest="config_command", metavar="COMMAND")
    config_sub.required = True
    show = config_sub.add_parser(
        "show",
        help="print every setting and where its value came from",
        description="Print every setting, its value and its source: default, user config, "
        "workspace config (.codectx.toml), environment (CODECTX_*), or command line.",
    )
    show.add_argument("path", nargs="?", help="workspace (default: the one enclosing the current folder)")
    add_json(show, "machine-readable output")
    show.set_defaults(func=_config_show)
    keys = config_sub.add_parser("keys", help="list every known setting with its help")
    keys.set_defaults(func=_config_keys)


def _register_completion(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    completion = add_command(
        sub,
        "completion",
        help="print a shell completion script (bash, zsh, tcsh)",
        description="Print a completion script for every codectx command and option.",
        examples=[
            "codectx completion bash > ~/.local/share/bash-completion/completions/codectx",
            "codectx completion zsh > ~/.zfunc/_codectx   # with fpath+=(~/.zfunc) before compinit",
        ],
    )
    completion.add_argument("shell", choices=["bash", "zsh", "tcsh"])
    completion.set_defaults(func=_completion)


def _completion(args: argparse.Namespace) -> int:
    import shtab  # generates the script from the parser itself, so it never drifts from --help

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return 0


def _config_show(args: argparse.Namespace) -> int:
    root = workspace_root(args.path)
    settings = settings_for(root, args)
    if args.json:
        print_json(
            {
                "root": str(root),
                "settings": {
                    f"{section}.{key}": {
                        "value": "***" if key == "api_key" and value else value,
                        "source": settings.sources[f"{section}.{key}"],
                    }
                    for section, values in settings.as_dict().items()
                    for key, value in values.items()
                },
                "warnings": list(settings.warnings),
            }
        )
        return 0
    # TOML, so a block can be pasted into a config file; each line says where its value came from.
    for index, (section, values) in enumerate(settings.as_dict().items()):
        print(f"{'' if index == 0 else chr(10)}[{section}]")
        for key, value in values.items():
            source = settings.sources[f"{section}.{key}"]
            if value is None:  # TOML has no null: an unset key is shown commented out
                print(f"# {key} = (unset)  # {source}")
                continue
            shown = toml_value("***" if key == "api_key" and value else value)
            print(f"{key} = {shown}  # {source}")
    return 0


def toml_value(value: object) -> str:
    """One setting's value as a TOML literal (settings hold strings, numbers, booleans and lists)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # JSON's string escapes are valid TOML basic-string escapes; ensure_ascii keeps it one line.
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def _config_keys(args: argparse.Namespace) -> int:
    for section, keys in SCHEMA.items():
        print(f"[{section}]")
        for key, spec in keys.items():
            tag = " (user level only)" if spec.privacy or spec.trusted else ""
            print(f"  {key} ({spec.type}, default {spec.default!r}){tag}\n      {spec.help}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse's parser, keeping its last usage error so that `main` can also say it as JSON
    (every subcommand's parser is of this class: argparse makes them of their parent's)."""

    last_error = ""

    def error(self, message: str) -> NoReturn:
        _Parser.last_error = message
        super().error(message)


def _json_error(message: str, code: int) -> None:
    """A failed `--json` command's answer on stdout, so that a script reading it (`| jq`) gets
    JSON whatever happened; the message is on stderr as well, for whoever watches."""
    print_jsonl({"error": message, "exit_code": code})


def _takes_json(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """`--json` is on the command line (before any `--`) and the command named there takes it:
    `codectx lsp --json` must not get JSON on stdout, which is its LSP channel."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    if "--json" not in words:
        return False
    command = parser.prog
    for word in words:  # down the subcommands named (`audit show`), past options and their values
        deeper = f"{command} {word}"
        if any(name == deeper or name.startswith(deeper + " ") for name in JSON_COMMANDS):
            command = deeper
    return command in JSON_COMMANDS


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with `command`, only the package modules up to the one that registers it.

    Importing every package's CLI costs each run ~0.15 s (the privacy patterns, asyncio), which
    is a tenth of a one-file `codectx index`. An unknown command still gets every module, so its
    error lists every command.
    """
    parser = _Parser(
        prog="codectx",
        description="A coding assistant that keeps your code on your machine: index, search, "
        "assemble context, redact secrets, and audit every byte sent to the model server.",
        epilog=CONVENTION,
    )
    parser.add_argument("-V", "--version", action="version", version=f"codectx {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if command not in {"config", "completion"} else ():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
        if command is not None and command in sub.choices:
            break
    _register_config(sub)
    _register_completion(sub)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named on the command line, if it comes first (top-level flags do not)."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    # First, before any command imports a model library: no telemetry, no downloads.
    quiet_dependencies()
    light_lancedb_import()  # the quick LanceDB import, if the command opens the index
    skip_httpx_cli()  # httpx without its own command-line client's imports
    argv = sys.argv[1:] if argv is None else argv
    problem = unsupported_platform()
    if problem:
        print(f"codectx: error: {problem}", file=sys.stderr)
        return 2
    parser = build_parser(_command_of(argv))
    wants_json = _takes_json(parser, argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if wants_json and exc.code == 2:
            _json_error(_Parser.last_error or "usage error", 2)
        raise
    wants_json = bool(getattr(args, "json", False))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.command in QUERY_COMMANDS:
        serve_queries()
    try:
        return int(args.func(args) or 0)
    except CodectxError as exc:
        print(f"codectx: error: {exc}", file=sys.stderr)
        if wants_json:
            _json_error(str(exc), exc.exit_code)
        return exc.exit_code
    except KeyboardInterrupt:
        print("codectx: interrupted", file=sys.stderr)
        if wants_json:
            _json_error("interrupted", 130)
        return 130
    except BrokenPipeError:
        return 0


INTERNAL_ERROR = 70  # sysexits.h EX_SOFTWARE: scripts tell a crash from "no index" (1)


def entry() -> None:
    """The console script: `main`, then the process ends through `exit_process`, also when
    something raised SystemExit (argparse's usage errors and `--help`, a library's `sys.exit`) or
    an exception escaped `main`."""
    try:
        code = main()
    except SystemExit as exc:
        code = status_of(exc.code)
    except Exception:  # a bug: its traceback, and a status of its own (EX_SOFTWARE), not 1 = "no index"
        sys.excepthook(*sys.exc_info())
        print(
            f"codectx: internal error (a bug in codectx {__version__}; the traceback above says where)",
            file=sys.stderr,
        )
        code = INTERNAL_ERROR
    exit_process(code)


if __name__ == "__main__":
    entry()
