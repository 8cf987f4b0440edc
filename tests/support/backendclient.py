"""Clients for the fault-injection tests (tests/backend/test_faults.py, test_shed.py).

`client_for` builds a real BackendClient whose privacy gate is the fault server's
`RecordingGate` (so a test sees each attempt's audit record), and `RetryWaits` records the
waits the transport asks for between attempts instead of sleeping them, so a test asserts
which wait was chosen (a Retry-After honoured, none when it would overrun the deadline)
without measuring time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from codectx.backend.client import BackendClient

from codectx.settings import load_settings
from tests.support import faultserver as fs


def make_settings(tmp_path: Path, url: str, **backend: Any) -> Any:
    overrides = {"backend.url": url, "backend.model": "m", "backend.retries": 2}
    overrides.update({f"backend.{k}": v for k, v in backend.items()})
    return load_settings(None, overrides, environ={}, user_config=tmp_path / "none.toml")


def client_for(tmp_path: Path, url: str, **backend: Any) -> tuple[BackendClient, fs.RecordingGate]:
    gate = fs.RecordingGate()
    return BackendClient(make_settings(tmp_path, url, **backend), gate=gate), gate


class RetryWaits:
    """Stands in for `asyncio` in codectx.backend.transport: `sleep` records its delay and yields
    once instead of waiting; everything else is asyncio's own."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.delays: list[float] = []
        monkeypatch.setattr("codectx.backend.transport.asyncio", self)

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)
