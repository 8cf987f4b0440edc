"""The language server's own errors, each with a message meant for the editor's user."""

from __future__ import annotations

from codectx.errors import CodectxError


class LspError(CodectxError):
    """Something an editor asked the language server for cannot be done."""


class UriRefused(LspError):
    """The document is not a local file inside one of the workspace folders."""


class DocumentUnusable(LspError):
    """The document is binary, too large or otherwise not worth sending anywhere."""


class ServiceUnavailable(LspError):
    """A part the request needs (index, backend) is not available yet."""
