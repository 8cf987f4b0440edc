"""What was sent for recent requests: context items, redactions and the exact payload.

`codectx.showContext` and `codectx/context` read it, so the user can see
precisely what left the machine for a given suggestion or refactor.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

from codectx.lsp.errors import LspError

from codectx.app.index import AssembledContext
from codectx.app.results import SentRequest

KEEP = 50


@dataclass
class RequestRecord:
    id: str
    kind: str  # completion | inline | refactor | explain
    uri: str
    path: str
    line: int
    character: int
    time: float = field(default_factory=time.time)
    status: str = "pending"  # pending | ok | empty | cancelled | superseded | timeout | error
    error: str = ""
    items: list[dict[str, Any]] = field(default_factory=list)
    budget: dict[str, Any] = field(default_factory=dict)
    redactions: list[dict[str, Any]] = field(default_factory=list)
    payload: str = ""
    endpoint: str = ""
    sha256: str = ""
    audit_id: str = ""
    text: str = ""
    model: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def used(self, context: AssembledContext, budget: bool = False) -> None:
        """The context items that went into the request (and, for completions, the budget)."""
        self.items = [item.as_dict(text=False) for item in context.items]
        if budget:
            self.budget = context.budget.as_dict()

    def remember(self, sent: SentRequest) -> None:
        """What the request sent: the exact payload, its hash, the audit id and the redactions."""
        self.payload = sent.body.decode("utf-8", errors="replace")
        self.endpoint = sent.endpoint
        self.audit_id = sent.audit_id or ""
        if sent.body:
            self.sha256 = hashlib.sha256(sent.body).hexdigest()
        # A redaction without the secret: the rule, where, and the token that replaced it.
        self.redactions = [{"rule": f.rule, "line": f.line, "hmac8": f.hmac8} for f in sent.findings]
        if not self.items:
            self.items = list(sent.items)


class History:
    def __init__(self, keep: int = KEEP) -> None:
        self._records: OrderedDict[str, RequestRecord] = OrderedDict()
        self._keep = keep
        self._ids = itertools.count(1)

    def start(self, kind: str, uri: str, path: str, line: int, character: int) -> RequestRecord:
        record = RequestRecord(f"{kind}-{next(self._ids)}", kind, uri, path, line, character)
        self._records[record.id] = record
        while len(self._records) > self._keep:
            self._records.popitem(last=False)
        return record

    def get(self, request_id: str | None = None, with_payload: bool = False) -> RequestRecord:
        """A given request, or the last one that sent something (else the last one at all)."""
        if request_id:
            try:
                return self._records[request_id]
            except KeyError:
                raise LspError(f"no request '{request_id}' in the last {self._keep} requests") from None
        if not self._records:
            raise LspError("no completion or refactor request has been made yet")
        if with_payload:
            for record in reversed(self._records.values()):
                if record.payload:
                    return record
        return next(reversed(self._records.values()))

    def recent(self) -> list[RequestRecord]:
        return list(self._records.values())
