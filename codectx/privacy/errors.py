"""The privacy package's exceptions, all CodectxError so the CLI prints a message, not a traceback."""

from __future__ import annotations

from codectx.errors import CodectxError


class PrivacyError(CodectxError):
    """Something in redaction, egress policy or the audit log went wrong."""


class RulesError(PrivacyError):
    """The secret rule file is malformed (a packaging bug, never user input)."""


class InstallKeyError(PrivacyError):
    """The per-install HMAC key cannot be created or read."""


class ScanTimeout(PrivacyError):
    """A redaction scan ran past its deadline."""


class EgressBlocked(PrivacyError):
    """A request was refused before it left the machine (fail closed)."""

    exit_code = 3


class AuditError(PrivacyError):
    """The audit log cannot be read or written, or an entry does not exist."""


class AuditChainBroken(AuditError):
    """`audit verify` found an entry whose hash or link does not match."""

    exit_code = 4
