"""`codectx redact` and `codectx audit`: the redaction engine and the audit log on the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codectx.clikit import add_command, add_json, print_json, print_jsonl, settings_for, shown_name
from codectx.errors import UsageError
from codectx.positions import POSITIONS_FIELD, ZERO_BASED
from codectx.privacy.audit import AuditLog
from codectx.privacy.audithead import head_path
from codectx.privacy.errors import AuditChainBroken
from codectx.privacy.redact import Redactor
from codectx.privacy.sanitize import sanitize

MAX_REDACT_BYTES = 64 * 1024 * 1024

Arguments = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    _register_redact(sub)
    _register_audit(sub)


# ---- redact -------------------------------------------------------------------------------------


def _register_redact(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = add_command(
        sub,
        "redact",
        help="print a file with its secrets replaced (the engine used on every request)",
        description="Print FILE (or standard input) with each secret replaced by "
        "[REDACTED:<rule>:<tag>]. The tag is an HMAC keyed per install: one secret always gets the "
        "same tag here, and the mapping never leaves this machine. Only the secret's characters "
        "change; line structure is kept. Invisible and direction-changing Unicode is stripped.",
        examples=[
            "codectx redact config/settings.py",
            "git diff | codectx redact -",
            "codectx redact --json .github/workflows/deploy.yml   # findings only, never values",
            "codectx redact --check notes.md   # exit 1 if anything would be redacted",
        ],
    )
    p.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="file to redact, '-' for stdin (default)"
    )
    p.add_argument(
        "--strict", action="store_true", help="also redact high-entropy literals (more false positives)"
    )
    p.add_argument(
        "--check", action="store_true", help="print nothing but a summary; exit 1 if secrets were found"
    )
    add_json(p)
    p.set_defaults(func=_redact)


def _read_input(name: str) -> tuple[str, str]:
    """(text, origin) from a file or stdin; bytes that are not UTF-8 survive via surrogateescape."""
    if name == "-":
        data = sys.stdin.buffer.read(MAX_REDACT_BYTES + 1)
        origin = ""
    else:
        path = Path(name).expanduser()
        if path.is_dir():
            raise UsageError(f"{name} is a folder; give a file or '-' for standard input")
        try:
            with path.open("rb") as fh:
                data = fh.read(MAX_REDACT_BYTES + 1)
        except FileNotFoundError:
            raise UsageError(f"no such file: {name}") from None
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror}") from None
        origin = path.name
    if len(data) > MAX_REDACT_BYTES:
        raise UsageError(f"{name or 'stdin'} is larger than {MAX_REDACT_BYTES // (1024 * 1024)} MiB")
    if b"\0" in data[:8192]:
        raise UsageError(
            f"{name if name != '-' else 'standard input'} looks binary (NUL bytes); not redacting"
        )
    return data.decode("utf-8", "surrogateescape"), origin


def _redact(args: argparse.Namespace) -> int:
    settings = settings_for(None, args)
    text, origin = _read_input(args.file)
    cleaned, stripped = sanitize(text)
    redactor = Redactor(settings, strict=True if args.strict else None)
    result = redactor.redact(cleaned, origin)
    if args.json:
        print_json(
            {
                POSITIONS_FIELD: ZERO_BASED,  # each finding's line
                "file": args.file,
                "ruleset": redactor.version,
                "strict": redactor.strict,
                "stripped_chars": stripped,
                "findings": [f.as_dict() for f in result.findings],
            }
        )
    elif args.check:
        for f in result.findings:
            print(f"{args.file}:{f.line + 1}: {f.rule} ({f.length} chars, tag {f.hmac8})")
        print(f"{len(result.findings)} secret(s), {stripped} invisible character(s)", file=sys.stderr)
    else:
        sys.stdout.buffer.write(result.text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
        if result.findings or stripped:
            print(
                f"codectx: redacted {len(result.findings)} secret(s), stripped {stripped} invisible "
                "character(s)",
                file=sys.stderr,
            )
    return 1 if args.check and result.findings else 0


# ---- audit --------------------------------------------------------------------------------------


def _register_audit(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "audit",
        help="what left this machine: show, verify and replay the audit log",
        description="Every request to a model server is logged before it is sent (method, endpoint, "
        "byte count, sha256 of the exact bytes, workspace root, files with their real paths and line "
        "ranges, redactions, never values) and its outcome after. Entries are hash-chained and the "
        "chain is anchored by a MACed head record (audit.head), so edits, deletions and rewrites show.",
    )
    audit_sub = p.add_subparsers(dest="audit_command", metavar="COMMAND")
    audit_sub.required = True

    # (name, one-line help, description, its own arguments, takes --json (or its help), handler);
    # all take --log
    commands: list[tuple[str, str, str | None, Arguments, bool | str, Handler]] = [
        (
            "show",
            "list recent requests",
            None,
            _show_arguments,
            "machine-readable output: one JSON object per entry, a line each (JSON Lines; `jq -s` "
            "makes it one array)",
            _audit_show,
        ),
        (
            "verify",
            "check the chain, its head record, payloads and rotated files; exit 4 and say what changed",
            None,
            _no_arguments,
            True,
            _audit_verify,
        ),
        (
            "rotate",
            "start a new log file, chained to the old one (done on its own past 64 MiB)",
            "Rename the log to audit.<first>-<last>.jsonl and start a new one whose first entry "
            "holds the old file's sha256, so `verify` still checks the whole chain. --restart REASON starts "
            "a new chain without checking the old log (kept aside as audit.broken-<time>.jsonl): the way "
            "to resume after `verify` found a problem, which otherwise stops every request.",
            _rotate_arguments,
            False,
            _audit_rotate,
        ),
        (
            "payload",
            "print the exact bytes sent for one entry",
            None,
            _payload_arguments,
            False,
            _audit_payload,
        ),
    ]
    for name, help_text, description, add_arguments, json_out, handler in commands:
        parser = audit_sub.add_parser(name, help=help_text, description=description)
        add_arguments(parser)
        if isinstance(json_out, str):
            add_json(parser, json_out)
        elif json_out:
            add_json(parser)
        _add_log(parser)
        parser.set_defaults(func=handler)


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--last", type=int, default=20, metavar="N", help="how many entries (default 20)")


def _rotate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--restart", metavar="REASON", help="start a new chain; REASON is recorded in it")


def _payload_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="the entry id (from `codectx audit show`)")


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def _add_log(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log", metavar="FILE", help="audit log (default: <state dir>/codectx/audit.jsonl)")


def _log(args: argparse.Namespace, named_must_exist: bool = False) -> AuditLog:
    """The audit log the command reads. A `--log` that names nothing is a usage error when
    `named_must_exist`: read as an empty log, a typo looked like "no requests logged yet" or a
    clean chain. The default log not existing yet is a fresh install; a log gone beside its head
    record is for verify to report as a break."""
    log = AuditLog(Path(args.log).expanduser() if args.log else None)
    if named_must_exist and args.log and not log.path.exists() and not head_path(log.path).exists():
        raise UsageError(f"--log {args.log}: no such audit log ({log.path} does not exist)")
    return log


def _audit_show(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError("--last must be at least 1")
    log = _log(args, named_must_exist=True)
    entries = log.last(args.last)
    if args.json:
        for entry in entries:
            print_jsonl(entry)
        return 0
    if not entries:
        print(f"no requests logged yet ({log.path})")
        return 0
    for entry in entries:
        print(_summary(entry))
    return 0


def _summary(entry: dict[str, Any]) -> str:
    state = "sent" if entry.get("sent") else ("offline" if entry.get("offline") else "not sent")
    if entry.get("state") and not entry.get("outcomes"):
        state = "in flight"
        entry = {**entry, "status": "no outcome recorded: the process ended before an answer"}
    files = ", ".join(
        f"{shown_name(str(s.get('path')))}:{int(s.get('start_line', 0)) + 1}-{int(s.get('end_line', 0)) + 1}"
        for s in entry.get("sources", [])
    )
    rules: dict[str, int] = {}
    for event in entry.get("redactions", []):
        rules[str(event.get("rule"))] = rules.get(str(event.get("rule")), 0) + 1
    redacted = ", ".join(f"{rule} x{n}" for rule, n in sorted(rules.items())) or "none"
    return (
        f"{entry.get('id')}  {entry.get('time')}  {state} ({entry.get('status')})  "
        f"{entry.get('method', 'POST')} {entry.get('endpoint')}\n"
        f"    {entry.get('bytes')} bytes  sha256 {str(entry.get('sha256'))[:16]}...  redacted: {redacted}\n"
        f"    files: {files or 'none'}"
        + (f"  (workspace {shown_name(str(entry['root']))})" if entry.get("root") else "")
    )


def _audit_verify(args: argparse.Namespace) -> int:
    log = _log(args, named_must_exist=True)
    verdict = log.verify()
    if args.json:
        print_json(verdict.as_dict())
        return 0 if verdict.ok else AuditChainBroken.exit_code
    if not verdict.ok:
        raise AuditChainBroken(verdict.message())
    print(verdict.message())
    return 0


def _audit_rotate(args: argparse.Namespace) -> int:
    log = _log(args)
    kept = log.rotate(restart_reason=args.restart)
    if kept is None:
        print(
            f"nothing to rotate ({log.path} is empty)"
            if not args.restart
            else f"new chain started in {log.path}"
        )
    elif args.restart:
        print(f"the old log is kept as {kept}; a new chain starts in {log.path}")
    else:
        print(f"rotated: earlier entries are in {kept}; {log.path} continues the chain")
    return 0


def _audit_payload(args: argparse.Namespace) -> int:
    data = _log(args, named_must_exist=True).payload(args.id)
    sys.stdout.buffer.write(data + (b"" if data.endswith(b"\n") else b"\n"))
    sys.stdout.flush()
    return 0
