"""The model server as a session's requests see it: the served model, its prompt family, chat calls.

Completions (codectx.app.completion) stream raw fill-in-the-middle prompts; refactors and
explanations (codectx.app.refactor, codectx.app.explain) are one chat request each, made here
and recorded as a SentRequest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from codectx.app.results import SentRequest
from codectx.backend.client import BackendClient
from codectx.backend.errors import BackendError
from codectx.backend.families import Family, detect_family
from codectx.privacy.egress import SourceSpan
from codectx.settings import Settings


def source_span(path: str, start_line: int, end_line: int) -> SourceSpan:
    """Where a piece of a request comes from, for the audit log (0-based, inclusive lines)."""
    return SourceSpan(path, start_line, end_line)


class ServedModel:
    """One session's view of the model server (its client holds the connection pool and the gate)."""

    def __init__(self, settings: Settings, client: BackendClient) -> None:
        self.settings = settings
        self.client = client

    async def family(self) -> tuple[str, Family]:
        """(served model name, its prompt family): backend.model, else the server's first model."""
        model = await self.client.model()
        return model, detect_family(model, self.settings.backend.family)

    async def chat_model(self, what: str) -> str:
        """The served model, which must have a chat template for `what` ("refactoring", ...)."""
        model, family = await self.family()
        if not family.chat:
            raise BackendError(
                f"{what} needs a chat (instruct) model; the {family.name} family served as "
                f"'{model}' has no chat template"
            )
        return model

    async def chat(
        self,
        kind: str,
        path: str,
        messages: list[dict[str, str]],
        sources: Sequence[SourceSpan],
        items: list[dict[str, Any]],
        model: str,
    ) -> tuple[str, SentRequest]:
        """(the answer's text, what was sent) of one chat request through the privacy gate."""
        result = await self.client.chat(messages, sources=list(sources), model=model)
        sent = SentRequest.of(kind, path, result.prepared, items, result.audit_id)
        return result.text, sent
