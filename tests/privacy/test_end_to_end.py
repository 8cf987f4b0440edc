"""End to end: planted secrets never reach the model server, and the audit log matches the wire.

A loopback HTTP server records the raw bytes of every request and stands in
for the model server. A fixture repository has secrets of every kind planted
in code, config and comments (some inside functions that context assembly
will pick as definitions), plus never-send files. Real commands run against
it: `codectx index` (tree-sitter + LanceDB, no vectors) and `codectx complete`
(context assembly, FIM prompt, the privacy gate, the backend transport).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codectx.privacy.audit import AuditLog
from tests.support.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))
import random

import secretgen


@dataclass
class Captured:
    requests: list[tuple[str, str, bytes]] = field(default_factory=list)  # method, path, raw body


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    captured: Captured

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _json(self, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self.captured.requests.append(("GET", self.path, b""))
        if self.path.endswith("/models"):
            self._json({"object": "list", "data": [{"id": "m", "object": "model", "max_model_len": 4096}]})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        body = self._body()
        self.captured.requests.append(("POST", self.path, body))
        if self.path.endswith("/tokenize"):
            self._json({"tokens": [1, 2, 3], "count": 3, "max_model_len": 4096})
            return
        if not self.path.endswith("/completions"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for text, finish in (("    return", None), (" 1\n", "stop")):
            chunk = {"id": "c1", "object": "text_completion", "created": 0, "model": "m",
                     "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]}  # fmt: skip  # noqa: E501
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@pytest.fixture
def server() -> Iterator[tuple[str, Captured]]:
    captured = Captured()
    handler = type("Handler", (_Handler,), {"captured": captured})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", captured
    finally:
        httpd.shutdown()
        httpd.server_close()


def _plant(root: Path) -> tuple[dict[str, str], list[str]]:
    """Write the fixture repository; returns {name: secret} and never-send markers."""
    rng = random.Random(4242)
    secrets = {kind: gen(rng) for kind, (_, gen) in secretgen.PROVIDERS.items()}
    secrets["password"] = "Hunter2!Orchid_" + str(rng.randint(1000, 9999))
    secrets["db-url-password"] = "Pw9-" + secretgen._mixed(rng, secretgen.ALNUM, 14)
    secrets["jwt"] = secretgen._jwt(rng)
    pem = secretgen._pem(rng, "RSA PRIVATE KEY")
    secrets["pem-body"] = pem.splitlines()[3]
    names = sorted(k for k in secrets if k not in ("password", "db-url-password", "jwt", "pem-body"))
    (root / ".codectx.toml").write_text("[index]\nembed = false\n")
    (root / "app").mkdir()
    half = len(names) // 2
    consts = "\n".join(f'{k.upper().replace("-", "_")} = "{secrets[k]}"' for k in names[:half])
    (root / "app" / "credentials.py").write_text(
        '"""Provider credentials (planted for the privacy end-to-end test)."""\n\n'
        f"{consts}\n\n"
        f'PRIVATE_KEY = """{pem}"""\n\n\n'
        "def provider_token(name):\n"
        f'    table = {{"jwt": "{secrets["jwt"]}", "db": "postgres://svc:{secrets["db-url-password"]}@db:5432/app"}}\n'
        "    return table[name]\n\n\n"
        "def database_password():\n"
        f"    # old one was {secrets['password']}\n"
        f'    password = "{secrets["password"]}"\n'
        "    return password\n"
    )
    comments = "\n".join(f"# {k}: {secrets[k]}" for k in names[half:])
    (root / "app" / "billing.py").write_text(
        "from app.credentials import database_password, provider_token\n\n"
        f"{comments}\n\n\n"
        "def connect():\n"
        "    token = provider_token('jwt')\n"
        "    password = database_password()\n"
        "    \n"
        "    return token, password\n"
    )
    (root / "config").mkdir()
    (root / "config" / "settings.yaml").write_text(
        "service:\n" + "".join(f"  {k.replace('-', '_')}_token: {secrets[k]}\n" for k in names[:10])
    )
    markers = ["NEVER_SEND_ENV_MARKER_93f1", "NEVER_SEND_KEY_MARKER_77ab"]
    (root / ".env").write_text(f"# {markers[0]}\nDB_PASSWORD={secrets['password']}\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "id_rsa").write_text(f"{pem}\n# {markers[1]}\n")
    return secrets, markers


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def _codectx(args: list[str], cwd: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    """The real command line, in this process (the module imports are paid once)."""
    from codectx.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(args)
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return Run(code, out, err)


@pytest.mark.slow
def test_no_planted_secret_reaches_the_server(
    tmp_path: Path, server: tuple[str, Captured], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("codectx.app.complete_cli")
    pytest.importorskip("codectx.retriever.context")
    url, captured = server
    root = tmp_path / "repo"
    root.mkdir()
    secrets, markers = _plant(root)
    indexed = _codectx(["index", str(root), "--no-embed"], root, capsys)
    assert indexed.returncode == 0, indexed.stderr

    billing = root / "app" / "billing.py"
    cursor_line = billing.read_text().splitlines().index("    ")
    runs = [
        (billing, cursor_line, 4),
        (root / "app" / "credentials.py", 3, 0),
        (root / "config" / "settings.yaml", 2, 2),
    ]
    for path, line, character in runs:
        done = _codectx(
            ["complete", str(path), "--line", str(line + 1), "--character", str(character + 1),
             "--backend-url", url, "--model", "m", "--lexical", "--json"],
            root,
            capsys,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    # A never-send file is refused outright, before anything is sent.
    before = len(captured.requests)
    refused = _codectx(
        ["complete", str(root / ".env"), "--line", "1", "--backend-url", url, "--model", "m"], root, capsys
    )
    assert refused.returncode != 0
    assert "never-send" in refused.stderr and "Traceback" not in refused.stderr
    assert [r for r in captured.requests[before:] if r[0] == "POST" and r[1].endswith("/completions")] == []

    posts = [
        body for method, path, body in captured.requests if method == "POST" and path.endswith("/completions")
    ]
    assert len(posts) == len(runs)
    wire = b"\n".join(body for _, _, body in captured.requests).decode("utf-8")
    decoded = "\n".join(json.loads(body)["prompt"] for body in posts)
    for name, secret in secrets.items():
        for i in range(len(secret) - 11):
            window = secret[i : i + 12]
            assert window not in wire and window not in decoded, f"{name}: {window!r} reached the server"
    for marker in markers:
        assert marker not in wire
    # The prompts really carried the files (and their redacted secrets), not an empty context.
    assert "[REDACTED:" in decoded and "def database_password" in decoded

    log = AuditLog(Path(os.environ["XDG_STATE_HOME"]) / "codectx" / "audit.jsonl")
    sent = [e for e in log.requests() if e.get("sent") and e["endpoint"].endswith("/completions")]
    import hashlib

    assert sorted(e["sha256"] for e in sent) == sorted(hashlib.sha256(b).hexdigest() for b in posts)
    assert sum(len(e["redactions"]) for e in sent) >= len(secrets) // 2
    assert all(e["bytes"] == len(b) for e, b in zip(sorted(sent, key=lambda e: e["sha256"]),
                                                     sorted(posts, key=lambda b: hashlib.sha256(b).hexdigest()),  # noqa: E501
                                                     strict=True))  # fmt: skip
    raw_log = log.path.read_text()
    for secret in secrets.values():
        assert secret[:12] not in raw_log

    ok = _codectx(["audit", "verify"], root, capsys)
    assert ok.returncode == 0, ok.stderr
    lines = log.path.read_text().splitlines()
    entry = json.loads(lines[0])
    entry["bytes"] = entry["bytes"] + 1
    lines[0] = json.dumps(entry)
    log.path.write_text("\n".join(lines) + "\n")
    broken = _codectx(["audit", "verify"], root, capsys)
    assert broken.returncode == 4
    assert "broken at line 1" in broken.stderr
