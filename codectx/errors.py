"""The root of codectx's exception tree.

Each package derives its own errors from CodectxError; the CLI and the
language server translate them into messages once, at the edge.
"""

from __future__ import annotations


class CodectxError(Exception):
    """An error with a message meant for the user (no traceback needed)."""

    exit_code = 1


class ConfigError(CodectxError):
    """A setting is unknown, malformed or out of range."""

    exit_code = 2


class UsageError(CodectxError):
    """The command line or request asks for something impossible."""

    exit_code = 2
