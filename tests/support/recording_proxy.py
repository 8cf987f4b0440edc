"""A loopback recorder in front of a real model server: forwards every request, keeps its bytes.

Tests that run against the real vLLM CPU engine put this between codectx and the engine to see
exactly what left (`requests`: method, path, raw body). Responses stream through as they come
(close-delimited), and a client that goes away closes the upstream connection too, so the engine
sees the cancel as it would without the recorder.

`rewrite`, where given, changes each request body on its way up (benchmarks use it to add
sampling fields codectx does not send); `requests` keeps the bytes codectx sent.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RecordingProxy:
    upstream: str  # e.g. http://127.0.0.1:8000 (the server root)
    requests: list[Recorded] = field(default_factory=list)
    rewrite: Callable[[str, bytes], bytes] | None = None  # (path, body) -> the body sent upstream
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def chats(self) -> list[dict[str, Any]]:
        return [r.json() for r in list(self.requests) if r.path.endswith("/chat/completions")]

    def start(self) -> RecordingProxy:
        proxy = self
        target = urlsplit(self.upstream)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                proxy.requests.append(Recorded(self.command, self.path, body))
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=600)
                dropped = ("host", "connection", "content-length")  # http.client sets the length
                headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
                if body and proxy.rewrite is not None:
                    body = proxy.rewrite(self.path, body)
                try:
                    upstream.request(self.command, self.path, body=body or None, headers=headers)
                    reply = upstream.getresponse()
                    self.send_response(reply.status)
                    for key, value in reply.getheaders():
                        if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                            self.send_header(key, value)
                    self.end_headers()
                    while True:
                        piece = reply.read1(65536)
                        if not piece:
                            break
                        self.wfile.write(piece)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away: closing upstream below aborts the request there
                finally:
                    upstream.close()

            do_GET = _forward
            do_POST = _forward

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
