"""Messages to the user that must not repeat on every keystroke.

A dead backend fails every completion request; the user needs to hear it
once, and again only after it recovered and failed anew.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lsprotocol import types

log = logging.getLogger(__name__)

Sender = Callable[[types.ShowMessageParams], None]


class Notices:
    def __init__(self, send: Sender) -> None:
        self._send = send
        self._active: dict[str, str] = {}
        self._said: set[str] = set()

    def once(self, topic: str, message: str, kind: types.MessageType = types.MessageType.Warning) -> bool:
        """Show `message` unless this topic is already reported; True when shown."""
        if topic in self._active:
            return False
        self._active[topic] = message
        self._show(message, kind)
        return True

    def once_ever(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> bool:
        """Show a message at most once per server lifetime (e.g. an invalid setting)."""
        if message in self._said:
            return False
        self._said.add(message)
        self._show(message, kind)
        return True

    def resolved(self, topic: str) -> None:
        """The problem went away: the next failure is news again."""
        self._active.pop(topic, None)

    def active(self, topic: str) -> bool:
        return topic in self._active

    def _show(self, message: str, kind: types.MessageType) -> None:
        log.info("showMessage: %s", message)
        try:
            self._send(types.ShowMessageParams(type=kind, message=f"codectx: {message}"))
        except Exception:  # the client went away; nothing to tell
            log.debug("could not send showMessage", exc_info=True)
