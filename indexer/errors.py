"""The indexer's exception tree: every error here carries a message for the user."""

from __future__ import annotations

from codectx.errors import CodectxError


class IndexerError(CodectxError):
    """Root of the indexer's errors."""


class IndexNotFound(IndexerError):
    """There is no index where one was expected; the message names the command to build it."""


class IndexSchemaMismatch(IndexerError):
    """The index was written by another version of codectx and must be rebuilt."""


class IndexLocked(IndexerError):
    """Another process is indexing the same workspace."""


class IndexCorrupt(IndexerError):
    """The index folder exists but cannot be read; rebuilding it fixes this."""


class EmbedderError(IndexerError):
    """The embedding model cannot be found or loaded."""
