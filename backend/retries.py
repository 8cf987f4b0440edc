"""When a request to the model server is tried again, and how long to wait first.

Retries happen only where they are safe: a connection that was never made, or a 429/503
before any token (honouring Retry-After: codectx.backend.wire.retry_after). The transport
retries on the status line, codectx.backend.textstream on an error event that sheds a
stream before its first token; both use this backoff and `backend.retries` as their budget.
"""

from __future__ import annotations

import random

RETRY_STATUSES = (429, 503)  # the server shed the request: nothing was generated


def backoff(attempt: int) -> float:
    """Seconds before retry number `attempt` + 1: exponential from 0.1 s, at most 2 s, with 20%
    jitter so that clients shed together do not come back together."""
    return min(2.0, 0.1 * 2**attempt) * (1 + random.random() * 0.2)
