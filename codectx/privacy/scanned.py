"""What the gate's final scan already read: request texts found clean, by checkpoints of their prefix.

A conversation resends its history byte for byte, so each turn's request body starts with most
of the previous one (a 5-turn chat on Django: 19 kB, then 33, 48, 63, 78 kB). The final scan
(EgressGate._rescan) reads the whole serialised body as one text; reading the part the previous
request already had again finds nothing new, and it was most of that scan's time by the fifth turn.

So a text the final scan found clean is remembered by digests of its prefixes at every STEP
characters (one running hash: the digest at k * STEP covers text[:k * STEP] and the rules'
version). A later text whose prefix has a remembered digest at the same length is identical
there, and is scanned from a window starting before that prefix's end: back by MARGIN_LINES
lines and at least MARGIN_CHARS characters, and back to a private key's BEGIN line within
reach (`pieces.scan_region`, the locality the piece redaction already relies on: a rule looks
at most a few lines around a value). A secret whose start lies in the known prefix and that
the old continuation did not complete is therefore still read whole. Only clean results are
remembered (a text with findings is changed, and scanned whole next time). Bounded; thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from codectx.privacy.pieces import scan_region

STEP = 4096  # characters between checkpoints
MARGIN_CHARS = 16 * 1024  # the window starts at least this far before the known prefix's end
LIMIT = 8192  # checkpoints remembered (about 30 MB of requests' text)


class ScannedPrefixes:
    """Checkpoint digests of texts the final scan found clean; see the module docstring."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def checkpoints(text: str, salt: str) -> list[bytes]:
        """The digest of text[:k * STEP] for k = 1, 2, ... (whole steps only), salted with the
        rules' version: a digest names a prefix's length and content together."""
        running = hashlib.blake2b(salt.encode("utf-8"), digest_size=20)
        marks = []
        for k in range(1, len(text) // STEP + 1):
            running.update(text[(k - 1) * STEP : k * STEP].encode("utf-8", "surrogatepass"))
            marks.append(running.copy().digest() + k.to_bytes(4, "big"))
        return marks

    def known(self, marks: list[bytes]) -> int:
        """How many characters at the start of the text a clean scan has already read (0: none)."""
        with self._lock:
            for k in range(len(marks), 0, -1):
                if marks[k - 1] in self._seen:
                    self._seen.move_to_end(marks[k - 1])
                    return k * STEP
        return 0

    def remember(self, marks: list[bytes]) -> None:
        """The text these checkpoints came from was scanned clean (window and known prefix)."""
        with self._lock:
            for mark in marks:
                self._seen[mark] = None
                self._seen.move_to_end(mark)
            while len(self._seen) > self.limit:
                self._seen.popitem(last=False)


def window_start(view: str, known: int) -> int:
    """Where to start scanning `view` when its first `known` characters were read clean before."""
    if known <= MARGIN_CHARS:
        return 0
    lo, _hi = scan_region(view, known - MARGIN_CHARS, len(view))
    return lo
