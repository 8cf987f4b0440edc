"""Saved conversations: one JSON file each under the user's state folder, never the workspace.

`$XDG_STATE_HOME/codectx/chats/<id>.json` (default `~/.local/state/codectx/chats`), written to a
temporary file and renamed, so a crash never leaves half a conversation. The files hold what the
user saw and what was sent (redacted); they are readable by the user only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from pathlib import Path

from codectx.app.chat_model import UNTITLED, Conversation, now
from codectx.errors import CodectxError
from codectx.settings import state_dir

log = logging.getLogger(__name__)

_ID = re.compile(r"^[0-9a-f]{12}$")


class UnknownConversation(CodectxError):
    """No saved conversation has that id."""


def chats_dir() -> Path:
    return state_dir() / "chats"


class ChatStore:
    """Conversations by id, loaded on demand, saved after every change."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else chats_dir()
        self._cache: dict[str, Conversation] = {}

    def _path(self, conversation_id: str) -> Path:
        return self.folder / f"{conversation_id}.json"

    def create(self, title: str | None = None) -> Conversation:
        stamp = now()
        conv = Conversation(uuid.uuid4().hex[:12], (title or "").strip() or UNTITLED, stamp, stamp)
        self.save(conv)
        return conv

    def get(self, conversation_id: object) -> Conversation:
        cid = str(conversation_id)
        if cid in self._cache:
            return self._cache[cid]
        if not _ID.match(cid) or not self._path(cid).is_file():
            raise UnknownConversation(f"no conversation {cid!r} (it was deleted, or never existed)")
        try:
            conv = Conversation.from_json(json.loads(self._path(cid).read_text("utf-8")))
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise UnknownConversation(f"conversation {cid} cannot be read ({exc})") from None
        self._cache[cid] = conv
        return conv

    def save(self, conv: Conversation) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self._path(conv.conversation_id)
        tmp = target.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(conv.as_json(), out)
        os.replace(tmp, target)
        self._cache[conv.conversation_id] = conv

    def delete(self, conversation_id: object) -> bool:
        cid = str(conversation_id)
        self._cache.pop(cid, None)
        if not _ID.match(cid):
            return False
        try:
            self._path(cid).unlink()
        except FileNotFoundError:
            return False
        return True

    def all(self) -> list[Conversation]:
        """Every saved conversation, newest first (an unreadable file is skipped and logged)."""
        found: list[Conversation] = []
        if self.folder.is_dir():
            for path in self.folder.glob("*.json"):
                try:
                    found.append(self.get(path.stem))
                except UnknownConversation as exc:
                    log.warning("%s", exc)
        return sorted(found, key=lambda c: c.updated_at, reverse=True)
