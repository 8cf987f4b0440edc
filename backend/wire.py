"""The pure parts of talking to an OpenAI-compatible server: URLs, replies, error translation.

No I/O here (codectx.backend.transport does the sending); these are kept apart
so they can be read and tested on their own.
"""

from __future__ import annotations

import email.utils
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from codectx.backend.errors import (
    BackendError,
    BackendNotConfigured,
    BackendProtocolError,
    BackendRejected,
    BackendUnavailable,
)

if TYPE_CHECKING:
    from codectx.backend.gate import Prepared


@dataclass(frozen=True)
class ServerURLs:
    """The OpenAI API base (…/v1) and the server root (/tokenize, /metrics live there in vLLM)."""

    api_base: str
    root: str
    # `user:password@` of the configured URL, sent as HTTP Basic auth: kept out of the URLs, so no
    # audit entry, log line or message quotes the password.
    userinfo: tuple[str, str] | None = None

    @classmethod
    def parse(cls, url: str | None) -> ServerURLs:
        if not url:
            raise BackendNotConfigured()
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            shown = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
            raise BackendNotConfigured(
                f"backend.url '{shown}' is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1"
            )
        userinfo = None
        if "@" in parts.netloc:
            userinfo = (unquote(parts.username or ""), unquote(parts.password or ""))
        origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
        path = parts.path.rstrip("/")
        if path == "":
            return cls(api_base=origin + "/v1", root=origin, userinfo=userinfo)
        if path.endswith("/v1"):
            return cls(api_base=origin + path, root=origin + path[: -len("/v1")], userinfo=userinfo)
        return cls(api_base=origin + path, root=origin, userinfo=userinfo)

    def url(self, endpoint: str) -> str:
        """'/v1/completions' -> API base; '/tokenize', '/metrics' -> server root."""
        if endpoint.startswith("/v1/"):
            return self.api_base + endpoint[len("/v1") :]
        return self.root + endpoint


@dataclass(frozen=True)
class Timeouts:
    connect_s: float
    first_token_s: float
    total_s: float
    first_byte_s: float = 3.0  # a connected server sends its status line and headers

    @classmethod
    def from_settings(cls, settings: Any) -> Timeouts:
        b = settings.backend
        return cls(
            float(b.connect_timeout_s),
            float(b.first_token_timeout_s),
            float(b.total_timeout_s),
            float(b.first_byte_timeout_s),
        )

    def message(self, phase: str, url: str) -> str:
        """What a timeout of `phase` means, naming the setting whose budget ran out."""
        if phase == "first_byte":
            return (
                f"the model server at {url} accepted the connection but sent nothing within "
                f"{self.first_byte_s:g} s (backend.first_byte_timeout_s): is it overloaded or hung?"
            )
        if phase == "first_token":
            return (
                f"the model server at {url} stalled: no first token within "
                f"{self.first_token_s:g} s (backend.first_token_timeout_s)"
            )
        return f"the model server at {url} did not finish within {self.total_s:g} s (backend.total_timeout_s)"


@dataclass
class Reply:
    """A finished JSON or text reply."""

    status: int
    text: str
    audit_id: str | None = None
    prepared: Prepared | None = None  # the exact request the gate let out
    elapsed_s: float = 0.0
    url: str = ""  # where it came from, for errors

    def json(self) -> Any:
        try:
            return json.loads(self.text)
        except ValueError:
            where = f" from {self.url}" if self.url else ""
            raise BackendProtocolError(
                f"the server's answer{where} is not JSON: {self.text[:200]!r}; is backend.url an "
                "OpenAI-compatible server (such as vLLM)?"
            ) from None


def retry_after(value: str | None, now: float) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


def server_message(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or data.get("detail")
            if msg:
                return str(msg)[:500]
        if isinstance(err, str):
            return err[:500]
        if "detail" in data:
            return str(data["detail"])[:500]
    return text.strip()[:500]


def status_error(status: int, text: str, url: str) -> BackendError:
    """The exception for an HTTP error status (translated here, once)."""
    msg = server_message(text)
    if status in (401, 403):
        return BackendRejected(
            f"the model server refused the credentials ({status}: {msg}); "
            "check backend.api_key or CODECTX_API_KEY",
            status=status,
            server_message=msg,
        )
    if 400 <= status < 500:
        return BackendRejected(
            f"the model server rejected the request ({status}): {msg}", status=status, server_message=msg
        )
    return BackendUnavailable(f"the model server failed ({status}) at {url}: {msg}", status=status)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @classmethod
    def parse(cls, data: Any) -> Usage | None:
        if not isinstance(data, dict):
            return None
        return cls(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0))
