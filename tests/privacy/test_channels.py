"""End to end, every channel: no planted secret reaches the model server, whatever the cursor or selection.

The planted repository (tests/fixtures/planted, written by someone who never read our rules; its
labels.json lists every secret) is indexed for real (tree-sitter, LanceDB, no vectors). A loopback
capture server (tests/support/faultserver.py) stands in for the model server and keeps every request's
method, path, headers and body. Then every channel runs against it:

- `codectx complete` (the real command line, in this process) with the cursor at every 5th
  character of each line holding a secret: every such position inside the secret, a few outside;
- the real `codectx lsp` process: completion and inline completion at the same positions inside
  secrets (and one outside per line), every code action listed for each secret's line, resolved,
  explain among them, and `codectx.refactor` with selections that start, and that end, inside a
  secret;
- `/tokenize` and `/v1/models`, which the client calls on its own.

No 12-character window of any planted secret (a shorter piece of a split secret: the whole piece)
may appear in the captured bytes, raw or JSON-decoded. The model's chat answers echo the code they
were given, placeholders included, so the edits coming back must show none: they were put back
locally. Never-send files are refused before anything is sent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.support import faultserver as fs
from tests.support.paths import FIXTURES

PLANTED = FIXTURES / "planted"
WINDOW = 12
STEP = 5
OUTSIDE_PER_LINE = 3  # positions outside the secret kept per line (first, middle, last of every 5th)
COMMENT = {".py": "#", ".sh": "#", ".yaml": "#", ".yml": "#", ".ini": ";", ".toml": "#", "Dockerfile": "#"}


@dataclass(frozen=True)
class Planted:
    file: str
    line: int
    value: str
    never_send: bool


def planted() -> list[Planted]:
    labels = json.loads((PLANTED / "labels.json").read_text())
    return [Planted(x["file"], int(x["line"]), x["value"], bool(x.get("never_send_file"))) for x in labels]


def windows(value: str) -> Iterator[str]:
    if len(value) <= WINDOW:
        yield value
        return
    for i in range(len(value) - WINDOW + 1):
        yield value[i : i + WINDOW]


@dataclass(frozen=True)
class Position:
    file: str
    line: int
    character: int
    inside: bool


def positions(root: Path, secrets: list[Planted], outside: int = OUTSIDE_PER_LINE) -> list[Position]:
    """Every 5th character of each line holding a secret: all inside the secret, `outside` others."""
    out: list[Position] = []
    for s in secrets:
        lines = (root / s.file).read_text("utf-8").split("\n")
        text = "\n".join(lines)
        start = text.find(s.value, sum(len(r) + 1 for r in lines[: s.line]))
        assert start != -1, f"{s.file}: label not found"
        end = start + len(s.value)
        for row in range(s.line, s.line + s.value.count("\n") + 1):
            row_start = sum(len(r) + 1 for r in lines[:row])
            inside, others = [], []
            for col in range(0, len(lines[row]) + 1, STEP):
                (inside if start < row_start + col < end else others).append(col)
            if not inside:  # a secret shorter than the step still gets a cursor inside it
                inside = [max(0, start - row_start) + 1]
            picked = others if len(others) <= outside else [others[0], others[len(others) // 2], others[-1]]
            out += [Position(s.file, row, c, True) for c in inside]
            out += [Position(s.file, row, c, False) for c in picked[:outside]]
    return sorted(set(out), key=lambda p: (p.file, p.line, p.character))


# ---- the capture server ------------------------------------------------------------------------------


def _echo_code(body: dict[str, Any]) -> str:
    """The code the model was asked about, echoed (placeholders included) with one comment added."""
    text = body["messages"][-1]["content"]
    blocks = re.findall(r"(`{3,})[\w+#.-]*\n(.*?)\n\1", text, re.S)
    code = blocks[-1][1] if blocks else "pass"
    label = re.findall(r"\(([^()#]+)#L\d+", text)
    suffix = Path(label[-1]).suffix if label else ".py"
    marker = COMMENT.get(suffix, "//")
    return f"```\n{code}\n{marker} reviewed\n```"


def chat_echo() -> fs.Behaviour:
    async def run(conn: fs.Conn) -> None:
        body = conn.request.json()
        answer = _echo_code(body)
        if body.get("stream"):
            await fs.sse([answer], chat=True)(conn)
            return
        await fs.json_reply(
            {
                "id": "chat-1",
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 5},
            }
        )(conn)

    return run


@pytest.fixture
def capture() -> Iterator[fs.FaultServer]:
    server = fs.FaultServer(
        routes={
            "/v1/models": fs.models("m", max_model_len=8192),
            "/v1/completions": fs.sse(["    return", " 1\n"]),
            "/v1/chat/completions": chat_echo(),
            "/tokenize": fs.tokenize(),
        }
    ).start()
    try:
        yield server
    finally:
        server.stop()


def wire(request: fs.Request) -> tuple[str, str]:
    """(raw text of the request line, headers and body; every JSON string in the body, decoded)."""
    head = f"{request.method} {request.path}\n" + "\n".join(f"{k}: {v}" for k, v in request.headers.items())
    raw = head + "\n\n" + request.body.decode("utf-8", "replace")
    strings: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                strings.append(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    if request.body:
        walk(json.loads(request.body))
    return raw, "\n".join(strings)


def assert_no_secret(requests: list[fs.Request], secrets: list[Planted], channel: str) -> None:
    texts = [wire(r) for r in requests]
    for s in secrets:
        for w in windows(s.value):
            for raw, decoded in texts:
                assert w not in raw and w not in decoded, (
                    f"{channel}: {s.file}:{s.line}: {w!r} reached the server"
                )


# ---- the repository ---------------------------------------------------------------------------------


@pytest.fixture
def planted_repo(tmp_path: Path) -> Path:
    root = tmp_path / "planted"
    shutil.copytree(PLANTED, root)
    (root / "labels.json").unlink()  # the answer key is not part of the project
    (root / ".codectx.toml").write_text("[index]\nembed = false\n")
    return root


def _cli(args: list[str], cwd: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from codectx.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(args)
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_cli_complete_leaks_no_planted_secret_at_any_cursor(
    planted_repo: Path, capture: fs.FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    secrets = planted()
    code, _, err = _cli(["index", str(planted_repo), "--no-embed"], planted_repo, capsys)
    assert code == 0, err
    sent = 0
    sendable = [s for s in secrets if not s.never_send]
    # A never-send file is refused by its path, wherever the cursor is: a few positions each.
    refused = [p for p in positions(planted_repo, [s for s in secrets if s.never_send]) if p.inside][::40]
    for pos in positions(planted_repo, sendable, outside=1) + refused:
        before = len(capture.requests)
        args = ["complete", str(planted_repo / pos.file), "--line", str(pos.line + 1),
                "--character", str(pos.character + 1), "--backend-url", capture.url, "--model", "m",
                "--lexical"]  # fmt: skip
        code, _, err = _cli(args, planted_repo, capsys)
        posts = [r for r in capture.requests[before:] if r.method == "POST" and r.path == "/v1/completions"]
        never = any(s.never_send for s in secrets if s.file == pos.file)
        if never:
            assert code != 0 and "never-send" in err and not posts, (
                f"{pos}: a never-send file was not refused"
            )
            continue
        assert code == 0 and "Traceback" not in err, f"{pos}: {err}"
        assert len(posts) == 1, pos
        sent += 1
    assert_no_secret(capture.requests, secrets, "codectx complete")
    prompts = [json.loads(r.body)["prompt"] for r in capture.requests if r.path == "/v1/completions"]
    assert sent == len(prompts) > 100
    # The prompts carried the files, their redacted secrets and retrieved context, not empty text.
    assert sum("[REDACTED:" in p for p in prompts) > len(prompts) // 2
    assert any("<|file_sep|>" in p and "def " in p for p in prompts)


# ---- the language server ----------------------------------------------------------------------------


def _language(path: str) -> str:
    return {".py": "python", ".ts": "typescript", ".js": "javascript", ".go": "go"}.get(
        Path(path).suffix, "plaintext"
    )


def _range(text: str, a: int, b: int) -> types.Range:
    def pos(offset: int) -> types.Position:
        line = text.count("\n", 0, offset)
        return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))

    return types.Range(start=pos(a), end=pos(b))


@pytest.mark.slow
async def test_lsp_channels_leak_no_planted_secret(
    tmp_path: Path, planted_repo: Path, capture: fs.FaultServer
) -> None:
    from codectx.cli import main
    from tests.support.lsp_helpers import capabilities, lsp_session, open_doc

    assert main(["index", str(planted_repo), "--no-embed"]) == 0
    secrets = planted()
    sendable = [s for s in secrets if not s.never_send]
    options = {
        "codectx": {
            "backend": {"url": capture.url, "model": "m"},
            "index": {"embed": False},
            "lsp": {"index_on_open": False, "debounce_ms": 0, "request_budget_ms": 20000},
        }
    }
    caps = capabilities()
    assert caps.window is not None
    caps.window.show_document = None  # explain answers come back as messages
    counts = {"completion": 0, "inline": 0, "resolved": 0, "refactor": 0, "edits": 0}
    async with lsp_session(tmp_path, planted_repo, options, caps=caps) as lsp:
        opened: dict[str, str] = {}

        def uri_of(file: str) -> str:
            if file not in opened:
                opened[file] = open_doc(lsp, planted_repo / file, language=_language(file))
            return opened[file]

        # Completion and inline completion: every 5th character inside each secret, one outside.
        for pos in positions(planted_repo, sendable, outside=1):
            doc = types.TextDocumentIdentifier(uri=uri_of(pos.file))
            at = types.Position(line=pos.line, character=pos.character)
            await lsp.text_document_completion_async(types.CompletionParams(text_document=doc, position=at))
            counts["completion"] += 1
            if pos.inside:
                await lsp.text_document_inline_completion_async(
                    types.InlineCompletionParams(
                        text_document=doc,
                        position=at,
                        context=types.InlineCompletionContext(
                            trigger_kind=types.InlineCompletionTriggerKind.Invoked
                        ),
                    )
                )
                counts["inline"] += 1

        # Every code action on each secret's line (a diagnostic there adds "fix"), resolved.
        for s in sendable:
            text = (planted_repo / s.file).read_text("utf-8")
            uri = uri_of(s.file)
            start = text.find(s.value, sum(len(r) + 1 for r in text.split("\n")[: s.line]))
            line_end = text.find("\n", start + len(s.value))
            rng = _range(
                text,
                start - (start - (text.rfind("\n", 0, start) + 1)),
                line_end if line_end != -1 else len(text),
            )
            diagnostic = types.Diagnostic(
                range=rng, message="line too long", severity=types.DiagnosticSeverity.Warning
            )
            params = types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=rng,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
            for action in await lsp.text_document_code_action_async(params):
                try:
                    resolved = await lsp.code_action_resolve_async(action)
                except Exception:  # a refused edit (does not parse, no change) is still a sent request
                    continue
                counts["resolved"] += 1
                if resolved.edit is not None:
                    counts["edits"] += 1
                    assert "REDACTED" not in json.dumps(lsp.protocol._converter.unstructure(resolved.edit))

            # codectx.refactor with a selection starting inside the secret, and one ending inside it.
            middle = start + len(s.value) // 2
            line_start = text.rfind("\n", 0, start) + 1
            for a, b in (
                (middle, min(len(text), line_end + 1 if line_end != -1 else len(text))),
                (line_start, middle),
            ):
                args = {"uri": uri, "range": lsp.protocol._converter.unstructure(_range(text, a, b)),
                        "instruction": "tidy this up"}  # fmt: skip
                try:
                    edit = await lsp.workspace_execute_command_async(
                        types.ExecuteCommandParams(command="codectx.refactor", arguments=[args])
                    )
                except Exception:
                    edit = None
                counts["refactor"] += 1
                if edit is not None:
                    counts["edits"] += 1
                    assert "REDACTED" not in json.dumps(edit, default=str)

        # Never-send files: opened and asked, nothing goes out for them.
        before = len(capture.requests)
        for s in (s for s in secrets if s.never_send):
            doc = types.TextDocumentIdentifier(uri=uri_of(s.file))
            at = types.Position(line=s.line, character=2)
            await lsp.text_document_completion_async(types.CompletionParams(text_document=doc, position=at))
        assert [r for r in capture.requests[before:] if r.method == "POST"] == []

    assert_no_secret(capture.requests, secrets, "lsp")
    posts = [r for r in capture.requests if r.method == "POST"]
    completions = [r for r in posts if r.path == "/v1/completions"]
    chats = [r for r in posts if r.path == "/v1/chat/completions"]
    assert len(completions) >= counts["completion"] // 2 > 50, counts
    assert len(chats) >= len(sendable) * 3 and counts["resolved"] > 0 and counts["edits"] > 0, counts
    assert any(r.path == "/tokenize" for r in posts)
    decoded = "\n".join(wire(r)[1] for r in chats)
    assert "[REDACTED:" in decoded and "Explain" in decoded


# ---- a real engine behind the capture server -----------------------------------------------------------

from tests.support.vllm_engine import Engine, vllm_model, vllm_server  # noqa: E402

__all__ = ["vllm_model", "vllm_server"]  # fixtures, imported for pytest


def forward(target: str) -> fs.Behaviour:
    """Pass each captured request on to the real engine and relay its answer: a stream as it
    comes (waiting for the whole answer first would trip the client's first-byte timeout on a
    loaded machine), anything else whole."""

    async def run(conn: fs.Conn) -> None:
        import httpx

        req = conn.request
        keep = {k: v for k, v in req.headers.items() if k in ("content-type", "authorization", "accept")}
        async with (
            httpx.AsyncClient(timeout=300) as client,
            client.stream(req.method, target + req.path, content=req.body, headers=keep) as reply,
        ):
            kind = reply.headers.get("content-type", "application/json")
            if reply.status_code != 200 or "text/event-stream" not in kind:
                await conn.respond(reply.status_code, await reply.aread(), kind)
                return
            await conn.start_chunked(kind)
            try:
                async for part in reply.aiter_raw():
                    await conn.chunk(part)
                await conn.end_chunked()
            except (ConnectionError, OSError):
                return  # codectx hung up at the block's end; leaving closes the engine's stream too

    return run


@pytest.mark.slow
@pytest.mark.vllm
def test_real_engine_path_leaks_no_planted_secret(
    planted_repo: Path, vllm_server: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real vLLM engine (its context limit, its tokenizer) behind the capture server: completions
    with the cursor inside each secret, the prompt cut to the engine's 1,024-token context."""
    secrets = planted()
    proxy = fs.FaultServer(default=forward(vllm_server.root)).start()
    try:
        code, _, err = _cli(["index", str(planted_repo), "--no-embed"], planted_repo, capsys)
        assert code == 0, err
        inside = [
            p
            for p in positions(planted_repo, [s for s in secrets if not s.never_send], outside=0)
            if p.inside
        ]
        picked = {}
        for p in inside:
            picked.setdefault((p.file, p.line), p)  # one cursor inside each secret line
        for pos in picked.values():
            where = ["--line", str(pos.line + 1), "--character", str(pos.character + 1)]  # 1-based
            server = ["--backend-url", proxy.url, "--model", vllm_server.model_name, "--lexical"]
            args = ["complete", str(planted_repo / pos.file), *where, *server]
            code, _, err = _cli(args, planted_repo, capsys)
            assert code == 0 and "Traceback" not in err, f"{pos}: {err}"
        posts = [r for r in proxy.requests if r.method == "POST" and r.path == "/v1/completions"]
        # One request each, or two where the engine said the first was over its context length.
        assert len(picked) <= len(posts) <= 2 * len(picked)
        assert any(r.path == "/tokenize" for r in proxy.requests)  # the engine's own tokenizer was asked
        assert_no_secret(proxy.requests, secrets, "real engine")
    finally:
        proxy.stop()
