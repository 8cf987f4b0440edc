"""Every request id gets an answer: codectx's checks over pygls's JSON-RPC reading.

pygls 2.1 turns each message into lsprotocol types inside `json.loads` (the object hook
`structure_message`). When that fails (a negative or out-of-range position, `params` of
the wrong type) the exception escapes the read loop: the id is never answered, so an editor
waiting on it hangs, and the error goes to `report_server_error`, which shows a popup per
message. Messages it cannot classify (an id without a method, no `jsonrpc`, a batch array)
fail later in `handle_message` the same way, and a second `initialize` is handled as if it
were the first.

`CodectxProtocol` answers all of them the JSON-RPC way, and logs them (no popup):
- a request whose params do not fit its method: `InvalidParams` (-32602) naming the method;
- an id with no method (and neither result nor error), a method that is not a string, an id
  of the wrong type, a message without `"jsonrpc": "2.0"`, a batch: `InvalidRequest`
  (-32600), to the id when there is one, else to `null`;
- a second `initialize`, or a request after `shutdown`: `InvalidRequest`;
- a notification that does not fit its method: dropped, with a log line.
A body that is not JSON at all gets `ParseError` (-32700) to `null` from the server's error
report (`CodectxServer.report_server_error`).

What belongs upstream in pygls: answering the id when structuring fails, InvalidRequest
for unclassifiable messages, refusing a repeated initialize, and not showing deserialisation
errors as `window/showMessage` by default.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Refused:
    """A message answered with an error instead of being handled; `id` None answers null."""

    id: int | str | None
    code: int
    message: str
    notification: bool = False  # nothing to answer: only logged


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def classify(data: dict[str, Any]) -> Refused | None:
    """A refusal for a top-level message that is not a JSON-RPC 2.0 request, notification or
    response (before pygls structures it), or None."""
    has_id = "id" in data
    msg_id = data.get("id")
    if has_id and msg_id is not None and not _valid_id(msg_id):
        return Refused(None, INVALID_REQUEST, "the id must be a number or a string")
    if data.get("jsonrpc") != "2.0":
        return Refused(
            msg_id if _valid_id(msg_id) else None, INVALID_REQUEST, 'not JSON-RPC ("jsonrpc": "2.0")'
        )
    if "method" in data:
        if not isinstance(data["method"], str):
            return Refused(msg_id if has_id else None, INVALID_REQUEST, "the method must be a string")
        return None
    if has_id and "result" not in data and "error" not in data:
        return Refused(msg_id, INVALID_REQUEST, "a request needs a method")
    if not has_id:
        return Refused(None, INVALID_REQUEST, "a message needs a method or an id")
    return None


class CodectxProtocol(LanguageServerProtocol):
    """LanguageServerProtocol that answers every id (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            # Nested objects come here first (json.loads calls the hook bottom-up): leave them.
            # A top-level message without it is refused in handle_message.
            return data
        refused = classify(data)
        if refused is not None:
            return refused
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if "id" not in data:
                return Refused(None, exc.code, f"{method}: params do not fit", notification=True)
            if method is None:
                return Refused(data["id"], INVALID_REQUEST, "not a valid response or request")
            return Refused(data["id"], INVALID_PARAMS, f"invalid params for {method}: {_reason(exc)}")

    def handle_message(self, message: Any) -> None:
        if isinstance(message, Refused):
            self._refuse(message)
            return
        if isinstance(message, dict):
            raw_id = message.get("id")
            self._refuse(Refused(raw_id if _valid_id(raw_id) else None, INVALID_REQUEST, "not JSON-RPC 2.0"))
            return
        if not hasattr(message, "jsonrpc"):  # a batch (list) or a bare value
            self._refuse(Refused(None, INVALID_REQUEST, "batches and bare values are not LSP messages"))
            return
        if self._shutdown and getattr(message, "method", "") != types.EXIT and hasattr(message, "method"):
            if hasattr(message, "id"):  # pygls would drop it unanswered
                self._refuse(Refused(message.id, INVALID_REQUEST, "the server is shutting down"))
            return
        if getattr(message, "method", None) == types.INITIALIZE and hasattr(message, "id"):
            if self._initialize_seen:
                self._refuse(Refused(message.id, INVALID_REQUEST, "initialize was already received"))
                return
            self._initialize_seen = True
        super().handle_message(message)

    def _refuse(self, refused: Refused) -> None:
        log.info("refused a message: %s (id %r)", refused.message, refused.id)
        if refused.notification:
            return
        self.answer_error(refused.id, refused.code, refused.message)

    def answer_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """Send a JSON-RPC error response; `msg_id` None answers null (the id was unreadable)."""
        self._send_response(msg_id, None, types.ResponseError(code=code, message=message))  # type: ignore[arg-type]


def _reason(exc: JsonRpcException) -> str:
    """The validation error under pygls's generic InvalidParams, briefly."""
    cause = exc.__cause__
    exceptions = getattr(cause, "exceptions", None)
    parts = []
    for sub in exceptions or ([cause] if cause is not None else []):
        notes = getattr(sub, "__notes__", None) or []
        parts.append(f"{notes[0] if notes else ''} {sub}".strip())
    text = "; ".join(parts) or str(exc)
    return text[:300]
