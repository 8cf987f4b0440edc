"""The backend's exception tree: every network failure is translated once, here.

Callers (the language server, the CLI) catch these and show the message; no
httpx exception ever escapes codectx.backend.transport.
"""

from __future__ import annotations

from codectx.errors import CodectxError


class BackendError(CodectxError):
    """Talking to the model server failed."""

    exit_code = 3

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class BackendNotConfigured(BackendError):
    """No model server URL is set anywhere."""

    exit_code = 2

    def __init__(self, message: str | None = None) -> None:
        from codectx.settings import user_config_path  # the real path (XDG_CONFIG_HOME honoured)

        super().__init__(
            message
            or 'no model server configured. Set one of: `url = "http://127.0.0.1:8000/v1"` under '
            f"[backend] in {user_config_path()}, the environment variable "
            "CODECTX_BACKEND_URL=http://127.0.0.1:8000/v1, or the flag --backend-url URL. "
            "To start a local server: codectx backend serve --profile cpu-dev"
        )


class BackendUnavailable(BackendError):
    """The server cannot be reached, refused the connection, or answered 5xx."""


class BackendCircuitOpen(BackendUnavailable):
    """A recent failure opened the circuit breaker: failing fast until the next probe."""

    def __init__(self, message: str, *, retry_in_s: float) -> None:
        super().__init__(message)
        self.retry_in_s = retry_in_s


class BackendTimeout(BackendError):
    """The connect, first-token or total timeout expired."""

    def __init__(self, message: str, *, phase: str, slow: bool = False) -> None:
        super().__init__(message)
        self.phase = phase  # "connect", "first_byte", "first_token" or "total"
        self.slow = slow  # the stream was live (tokens kept arriving) when the total timeout ended it
        self.partial = ""  # the text that arrived before the timeout (set by the client's streams)


class BackendRejected(BackendError):
    """The server answered 4xx (bad request, auth, rate limit); `server_message` says why."""

    def __init__(self, message: str, *, status: int, server_message: str = "") -> None:
        super().__init__(message, status=status)
        self.server_message = server_message


class BackendProtocolError(BackendError):
    """The server's answer was not the JSON or SSE stream the OpenAI API promises."""


class BackendOffline(BackendError):
    """Offline mode (privacy.offline or --dry-run): the request was built and logged, not sent."""

    exit_code = 0

    def __init__(self, message: str, *, audit_id: str | None = None, body: bytes = b"") -> None:
        super().__init__(message)
        self.audit_id = audit_id
        self.body = body
