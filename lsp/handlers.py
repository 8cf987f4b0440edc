"""What every feature handler uses: `guarded` (errors become answers) and `in_worker` (blocking work
off the event loop).

A handler is `async`: it awaits the model server (cancellable) and hands CPU or disk work to a
worker thread with `in_worker`, so the loop keeps answering keystrokes. Handlers register in
their own module's `register(server)`; codectx.lsp.registry calls them all. This module imports
no handler and no server, so no import goes round in a circle.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from codectx.lsp.requests import INVALID_PARAMS
from pygls.exceptions import JsonRpcException

from codectx.errors import CodectxError, UsageError

log = logging.getLogger(__name__)

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed
T = TypeVar("T")
P = ParamSpec("P")


async def in_worker(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`fn(*args, **kwargs)` in the default thread pool, awaited (the loop goes on meanwhile)."""
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))


def guarded(
    default: Callable[[], Any] | None = None,
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Turn user errors into JSON-RPC errors, and crashes into a logged, survivable failure.

    With `default`, any failure answers `default()` instead of an error (for
    requests fired on every keystroke, where an error popup would be noise).
    """

    def wrap(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        @functools.wraps(fn)
        async def handler(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except JsonRpcException:
                raise
            except CodectxError as exc:
                log.info("%s: %s", fn.__name__, exc)
                if default is not None:
                    return default()
                code = INVALID_PARAMS if isinstance(exc, UsageError) else REQUEST_FAILED
                raise JsonRpcException(message=str(exc), code=code) from None
            except Exception as exc:
                log.exception("handler %s crashed", fn.__name__)
                if default is not None:
                    return default()
                raise JsonRpcException(
                    message=f"codectx internal error in {fn.__name__}: {type(exc).__name__}: {exc}",
                    code=REQUEST_FAILED,
                ) from None

        return handler

    return wrap
