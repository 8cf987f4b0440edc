"""Indexing progress → LSP work-done progress (`$/progress` begin/report/end).

The token must be created with the client (`window/workDoneProgress/create`)
before it is used, while progress events arrive synchronously from the
indexer; a small queue per run keeps them in order behind the creation.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from codectx.lsp.folders import Folder, IndexProgress
    from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)
_ids = itertools.count(1)


class ProgressReporter:
    """Forwards each folder's indexing events as work-done progress, if the client wants them."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._queues: dict[str, asyncio.Queue[tuple[str, str, int | None] | None]] = {}

    def supported(self) -> bool:
        caps = self._server.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def __call__(self, folder: Folder, progress: IndexProgress, event: str) -> None:
        if not self.supported():
            return
        key = str(folder.root)
        if event == "begin":
            queue: asyncio.Queue[tuple[str, str, int | None] | None] = asyncio.Queue()
            self._queues[key] = queue
            token = f"codectx/index/{next(_ids)}"
            asyncio.get_running_loop().create_task(self._pump(token, folder.root.name, queue))
        queue_or_none = self._queues.get(key)
        if queue_or_none is None:
            return
        queue_or_none.put_nowait((event, progress.message(), progress.percentage()))
        if event == "end":
            queue_or_none.put_nowait(None)
            self._queues.pop(key, None)

    async def _pump(
        self, token: str, name: str, queue: asyncio.Queue[tuple[str, str, int | None] | None]
    ) -> None:
        try:
            await self._server.work_done_progress.create_async(token)
        except Exception:
            log.info("client refused progress token %s", token, exc_info=True)
            return
        progress = self._server.work_done_progress
        while (item := await queue.get()) is not None:
            event, message, pct = item
            if event == "begin":
                progress.begin(
                    token,
                    types.WorkDoneProgressBegin(
                        title=f"codectx: indexing {name}", message=message, percentage=0, cancellable=False
                    ),
                )
            elif event == "report":
                progress.report(token, types.WorkDoneProgressReport(message=message, percentage=pct))
            else:
                progress.end(token, types.WorkDoneProgressEnd(message=message))
