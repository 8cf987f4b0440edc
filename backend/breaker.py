"""A circuit breaker: a dead model server costs one fast failure per interval.

Without it every keystroke in the editor would wait out a connect or
first-token timeout. After a failure the circuit opens; requests fail at once
until `interval_s` has passed, then exactly one request probes the server. A
success closes the circuit, a failure opens it for another interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from codectx.backend.errors import BackendCircuitOpen


@dataclass
class CircuitBreaker:
    interval_s: float
    clock: Callable[[], float] = time.monotonic
    state: str = "closed"  # "closed", "open" or "half-open"
    last_error: str = ""
    _opened_at: float = field(default=0.0, repr=False)

    def before_request(self) -> None:
        """Raise BackendCircuitOpen unless this request may go out."""
        if self.interval_s <= 0 or self.state == "closed":
            return
        now = self.clock()
        waited = now - self._opened_at
        if self.state == "open" and waited >= self.interval_s:
            self.state = "half-open"  # this caller is the probe; others keep failing fast
            return
        retry_in = max(0.0, self.interval_s - waited)
        reason = f" (last error: {self.last_error})" if self.last_error else ""
        raise BackendCircuitOpen(
            f"model server unavailable{reason}; not retrying for {retry_in:.1f}s "
            f"(backend.breaker_interval_s)",
            retry_in_s=retry_in,
        )

    def success(self) -> None:
        self.state = "closed"
        self.last_error = ""

    def failure(self, message: str) -> None:
        if self.interval_s <= 0:
            return
        self.state = "open"
        self.last_error = message
        self._opened_at = self.clock()

    def release_probe(self) -> None:
        """A probe that ended without a verdict (cancelled, rejected) lets the next caller probe."""
        if self.state == "half-open":
            self.state = "open"
            self._opened_at = self.clock() - self.interval_s
