"""The transport's audit entries, written off the event loop, one at a time, in order.

Each request's entry is made durable (`intend`, fsynced) before its first byte is sent, and
each attempt's outcome appended after (`record`). The writes run on one worker thread, so the
log's hash chain stays in order and the first token is never delayed by an fsync; a write that
was queued is finished even when the task awaiting it is cancelled (a newer keystroke), so a
request that may have left is always logged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging

from codectx.backend.gate import Gate, Prepared

log = logging.getLogger("codectx.backend")


class AuditRecorder:
    """The audit writes of one transport, through its gate."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codectx-audit")

    def submit(
        self, prepared: Prepared, sent: bool, status: str, intent: str | None = None
    ) -> concurrent.futures.Future[str]:
        """Queue an audit entry; it is written even if the awaiting task is cancelled."""
        return self._pool.submit(self.gate.record, prepared, sent, status, intent)

    def record_now(self, prepared: Prepared, sent: bool, status: str) -> str:
        """The one entry of a request that is not sent (dry run), written before returning."""
        return self.submit(prepared, sent, status).result()

    async def record(self, prepared: Prepared, sent: bool, status: str, intent: str | None = None) -> str:
        return await settled(self.submit(prepared, sent, status, intent))

    async def intend(self, prepared: Prepared) -> str:
        """Write the request's audit entry (fsynced) before its first byte leaves; AuditError stops it."""
        future = self._pool.submit(self.gate.intend, prepared)
        try:
            return await settled(future)
        except asyncio.CancelledError:
            # Cancelled while the entry was being written: nothing was sent; say so in the log.
            def unsent(done: concurrent.futures.Future[str]) -> None:
                if not done.cancelled() and done.exception() is None:
                    self.submit(prepared, False, "cancelled before sending", done.result())

            future.add_done_callback(unsent)
            raise

    def note(self, prepared: Prepared | None, intent: str | None, sent: bool, status: str) -> None:
        """The outcome of a request whose awaiting is over (queued; never blocks); a failure to
        write it is logged. Nothing to do for a request without an entry (`prepared` None)."""
        if prepared is not None and intent is not None:
            self.submit(prepared, sent, status, intent).add_done_callback(log_record_failure)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


async def settled(future: concurrent.futures.Future[str]) -> str:
    """Await an audit write; cancelling the waiter never cancels the write itself."""
    return await asyncio.shield(asyncio.wrap_future(future))


def log_record_failure(future: concurrent.futures.Future[str]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("codectx: could not write the audit entry of a cancelled request: %s", future.exception())
