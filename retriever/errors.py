"""The retriever's errors: bad requests (positions, files) and unusable indexes."""

from __future__ import annotations

from codectx.errors import CodectxError


class RetrieverError(CodectxError):
    """Something the retriever cannot answer, explained for the user."""


class BadPosition(RetrieverError):
    """A cursor line or character outside the document."""

    exit_code = 2


class UnknownFile(RetrieverError):
    """A path that does not exist, cannot be read or is outside the workspace."""

    exit_code = 2


class FileTooLarge(UnknownFile):
    """A file over the size a reader accepts (refused before it is read)."""


class BadRequest(RetrieverError):
    """A malformed query or batch line."""

    exit_code = 2


class EmptyIndex(RetrieverError):
    """The index holds no chunks, so there is nothing to search."""
