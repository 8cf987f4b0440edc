"""What the transport needs of the privacy gate (codectx.privacy.egress.EgressGate), typed.

The transport hands every request body to a gate and sends only the bytes it returns; the
gate also writes the audit entries. `Gate` is the part of `EgressGate` the transport calls,
so the send path can be tested with a recording gate (tests/support/faultserver.py) while
what flows through it keeps the egress gate's real types: `Prepared` is the gate's
`PreparedRequest`, `Finding` its `RedactionEvent`. Importing this module imports nothing of
the privacy package; `default_gate` does, when a transport is built without a gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from codectx.settings import Settings

if TYPE_CHECKING:
    from codectx.privacy.egress import PreparedRequest, RedactionEvent, SourceSpan

Prepared: TypeAlias = "PreparedRequest"  # a body as the gate let it out: its bytes are what is sent
Finding: TypeAlias = "RedactionEvent"  # one redaction the gate made in a request; never a value
Sources = Sequence["SourceSpan"]  # the file regions whose text is in a request (for the audit log)


class Gate(Protocol):
    """What codectx.privacy.egress.EgressGate provides: redaction of a body, the audit log, and
    the judgement of which files may be sent."""

    @property
    def offline(self) -> bool: ...

    def prepare(self, endpoint: str, body: dict[str, Any], sources: list[SourceSpan]) -> Prepared: ...

    def intend(self, prepared: Prepared) -> str: ...

    def bodyless(self, method: str, url: str) -> Prepared: ...

    def record(self, prepared: Prepared, sent: bool, status: str, intent: str | None = None) -> str: ...

    def refusal(self, path: str) -> str | None:
        """Why a workspace file may not contribute to any request (never-send, outside), or None."""
        ...


def default_gate(settings: Settings) -> Gate:
    """The privacy choke point for these settings: redaction, never-send rules, audit log."""
    from codectx.privacy.egress import EgressGate

    gate: Gate = EgressGate(settings)
    return gate
