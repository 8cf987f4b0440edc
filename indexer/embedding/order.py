"""The order in which pending chunks get their vectors: the open documents' neighbourhood first.

Embedding a large repository takes tens of minutes on a laptop (Django: ~30k chunks on 2 cores).
Search and completions near what the user has open need those files' vectors, not the rest's,
so a run that is told the neighbourhood (`Near`: workspace-relative paths, nearest first; the
language server passes the open documents, what they import and their folders) embeds those
files' pending chunks first, in small commits so that they become searchable as they land, then
the rest in content-hash order. The neighbourhood is asked again before every part: a document
opened during a long run moves its chunks to the front.

This module only orders hashes; the embedding and the commits are `indexer.stages.embed_pending`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

Near = Callable[[], Sequence[str]]  # workspace-relative paths near the open documents, nearest first
HashesOf = Callable[[Sequence[str]], list[list[str]]]  # each file's chunk content hashes, files in order
# The neighbourhood's size in chunks: ~40 s of body and name vectors on 2 cores (~25 chunks/s),
# so that it has its vectors within a minute of opening (Django's query.py: 40 files, 1,678 chunks).
NEAR_MAX_CHUNKS = 1000


class EmbedQueue:
    """Pending body and name vectors, handed out in parts: near hashes first, then the rest."""

    def __init__(self, body: Iterable[str], names: Iterable[str]) -> None:
        self._body = dict.fromkeys(body)  # insertion order is the default order
        self._names = dict.fromkeys(names)

    @property
    def body_left(self) -> int:
        return len(self._body)

    def near_left(self, near: Sequence[str]) -> int:
        """How many of these hashes still lack a body vector."""
        return sum(1 for h in dict.fromkeys(near) if h in self._body)

    def take_near(self, near: Sequence[str], limit: int) -> tuple[list[str], list[str]]:
        """Up to `limit` near hashes still owed a body vector, and the near hashes owed a name
        vector among those plus any whose body vector already exists (names are cheap)."""
        body: list[str] = []
        names: list[str] = []
        for h in dict.fromkeys(near):
            if h in self._body:
                if len(body) >= limit:
                    break
                body.append(h)
                del self._body[h]
            if h in self._names:
                names.append(h)
                del self._names[h]
        return body, names

    def take(self, limit: int) -> list[str]:
        """The next `limit` hashes owed a body vector, in the default order."""
        part: list[str] = []
        for h in self._body:
            if len(part) >= limit:
                break
            part.append(h)
        for h in part:
            del self._body[h]
        return part

    def remaining(self) -> list[str]:
        """Every hash still owed a body or a name vector."""
        return list(dict.fromkeys([*self._body, *self._names]))

    def names_left(self) -> list[str]:
        """Every hash still owed a name vector (the queue forgets them)."""
        names, self._names = list(self._names), {}
        return names


class NearHashes:
    """The chunk hashes of the neighbourhood's files, read again only when the paths change.

    Files are taken nearest first while they fit in `max_chunks`; the first file always does, and
    a file too large for what is left is passed over for the smaller ones after it."""

    def __init__(self, near: Near | None, hashes_of: HashesOf, max_chunks: int = NEAR_MAX_CHUNKS) -> None:
        self._near = near
        self._max = max_chunks
        self._hashes_of = hashes_of
        self._paths: tuple[str, ...] = ()
        self._hashes: list[str] = []
        self.files = 0  # how many files the current neighbourhood has

    def current(self) -> list[str]:
        if self._near is None:
            return []
        paths = tuple(self._near())
        if paths != self._paths:
            self._paths = paths
            self._hashes, self.files = [], 0
            for file_hashes in self._hashes_of(paths) if paths else []:
                if self.files and len(self._hashes) + len(file_hashes) > self._max:
                    continue
                self._hashes += file_hashes
                self.files += 1
        return self._hashes
