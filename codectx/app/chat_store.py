"""Saved conversations: one JSON file each under the user's state folder, never the workspace.

`$XDG_STATE_HOME/codectx/chats/<id>.json` (default `~/.local/state/codectx/chats`), written to a
temporary file and renamed, so a crash never leaves half a conversation. The files hold what the
user saw and what was sent (redacted); they are readable by the user only.

A conversation is saved after every turn, on the language server's event loop, and each turn's
record holds the exact payload it sent (~100 kB), so a finished turn's JSON text is kept and reused:
a save encodes only the turns it has not seen, not the whole conversation again (a sixth turn's
save went 14.8 -> 3.0 ms, bench/bench_chat_store.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import uuid
from dataclasses import fields, is_dataclass
from pathlib import Path

from codectx.app.chat_model import UNTITLED, Conversation, Turn, now
from codectx.errors import CodectxError
from codectx.settings import state_dir

log = logging.getLogger(__name__)

_ID = re.compile(r"^[0-9a-f]{12}$")


def _shallow(value: object) -> dict[str, object]:
    """A dataclass as the dict `asdict` makes, without its deep copy (json walks the rest)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class UnknownConversation(CodectxError):
    """No saved conversation has that id."""


def chats_dir() -> Path:
    return state_dir() / "chats"


class ChatStore:
    """Conversations by id, loaded on demand, saved after every change."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else chats_dir()
        self._cache: dict[str, Conversation] = {}
        # (conversation id, turn id) -> (the turn object encoded, its JSON text). A turn is not
        # changed once it is part of a saved conversation; a different object under the same id
        # (a reloaded conversation) is encoded again.
        self._encoded: dict[tuple[str, str], tuple[Turn, str]] = {}

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
            out.write(self._encode(conv))
        os.replace(tmp, target)
        self._cache[conv.conversation_id] = conv

    def _encode(self, conv: Conversation) -> str:
        """`json.dumps(conv.as_json())` (keys in another order), each turn encoded once."""
        cid = conv.conversation_id
        turns = []
        for turn in conv.turns:
            hit = self._encoded.get((cid, turn.turn_id))
            if hit is None or hit[0] is not turn:
                hit = self._encoded[(cid, turn.turn_id)] = (turn, json.dumps(turn, default=_shallow))
            turns.append(hit[1])
        head = {f.name: getattr(conv, f.name) for f in fields(conv) if f.name != "turns"}
        return json.dumps(head)[:-1] + ', "turns": [' + ", ".join(turns) + "]}"

    def delete(self, conversation_id: object) -> bool:
        cid = str(conversation_id)
        self._cache.pop(cid, None)
        for key in [k for k in self._encoded if k[0] == cid]:
            del self._encoded[key]
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
