"""The completion service and `codectx complete`, end to end over loopback HTTP.

The server is our own loopback stand-in speaking the OpenAI/vLLM wire format
(the real engine is exercised by the test_vllm* tests); the privacy gate,
audit log, prompts and post-processing are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from codectx.backend.client import BackendClient

from codectx.app.cli import NoIndexSource
from codectx.app.session import WorkspaceSession
from codectx.cli import main
from codectx.privacy.errors import EgressBlocked
from codectx.settings import load_settings
from tests.support import faultserver as fs

DOC = "import os\n\n\ndef add(a, b):\n    \n\n\ndef other():\n    return 2\n"


@pytest.fixture
def server() -> Iterator[fs.FaultServer]:
    srv = fs.FaultServer().start()
    srv.routes["/v1/models"] = fs.models("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")
    srv.routes["/tokenize"] = fs.tokenize()
    yield srv
    srv.stop()


def make_settings(tmp_path: Path, url: str | None, **over: Any) -> Any:
    base: dict[str, Any] = {"backend.url": url}
    base.update(over)
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return load_settings(root, base, environ={}, user_config=tmp_path / "none.toml")


def session_for(settings: Any, client: BackendClient) -> WorkspaceSession:
    """A session without an index: the tests hand it their own context."""
    return WorkspaceSession(settings, index=NoIndexSource(), embedder=lambda: None, client=client)


def audit_entries(tmp_path: Path) -> list[dict[str, Any]]:
    from codectx.privacy.audit import AuditLog
    from codectx.settings import state_dir

    return AuditLog(state_dir() / "audit.jsonl").requests()  # request entries, outcomes folded in


def spans(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """An entry's sources without their real paths."""
    return [{k: v for k, v in s.items() if k != "real"} for s in entry["sources"]]


@dataclass
class Item:
    path: str
    start_line: int
    end_line: int
    text: str
    symbol: str = "helper"
    reason: str = "definition"
    tokens: int = 10


@dataclass
class Context:
    items: list[Item]
    prefix: str
    suffix: str
    prefix_start_line: int = 0
    suffix_end_line: int = 0
    notes: list[str] = field(default_factory=list)


async def test_complete_document_only(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.sse(["return a", " + b\n", "\n"])
    settings = make_settings(tmp_path, server.url)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        result = await service.completer.complete("calc.py", DOC, 4, 4, context=None)
    assert result.text == "return a + b"
    assert result.mode == "block" and result.model == "m"
    assert set(result.timings) == {"context_ms", "ttft_ms", "total_ms"}
    sent = server.requests[-1]
    body = sent.json()
    assert body["prompt"].startswith("<|fim_prefix|>import os") and body["prompt"].endswith("<|fim_middle|>")
    assert body["stream"] is True and "stop" not in body
    # the nine Qwen stop tokens go as ids: vLLM never matches special tokens as stop strings
    assert body["stop_token_ids"] == list(range(1000, 1009))
    assert service.last is not None and service.last.body == sent.body
    assert result.sent is service.last
    entry = audit_entries(tmp_path)[-1]
    assert entry["id"] == result.request_id and entry["sent"] is True
    assert spans(entry) == [{"path": "calc.py", "start_line": 0, "end_line": 9}]


async def test_stream_is_closed_when_the_block_ends(tmp_path: Path, server: fs.FaultServer) -> None:
    # A model that goes on and on after the body: the service must stop reading and hang up.
    server.default = fs.sse(["return a + b\n", "\n", "def junk():\n"] + ["    pass\n"] * 500, delay_s=0.01)
    settings = make_settings(tmp_path, server.url)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        result = await service.completer.complete("calc.py", DOC, 4, 4, context=None)
        assert result.text == "return a + b"
        # Before the client closes its pool: the completion's connection is already gone.
        assert server.wait_idle(10.0) == 0


async def test_complete_with_retrieved_context(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.sse(["helper(a)"])
    settings = make_settings(tmp_path, server.url)
    # The item's file is read to judge it with its surroundings (a chunk whose file is gone is withheld).
    (tmp_path / "ws" / "util.py").write_text(
        "import os\n\n\ndef helper(x):\n    return x\n", encoding="utf-8"
    )
    item = Item("util.py", 3, 4, "def helper(x):\n    return x\n")
    ctx = Context(
        [item], prefix="def add(a, b):\n    return ", suffix="\n", prefix_start_line=3, suffix_end_line=5
    )
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        result = await service.completer.complete("calc.py", DOC, 4, 11, context=ctx)
    assert result.text == "helper(a)"
    prompt = server.requests[-1].json()["prompt"]
    assert prompt.startswith("<|repo_name|>ws\n<|file_sep|>util.py#L4-L5\ndef helper(x):")
    assert "<|file_sep|>calc.py\n<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>" in prompt
    assert service.last is not None and service.last.items[0]["symbol"] == "helper"
    entry = audit_entries(tmp_path)[-1]
    assert {"path": "util.py", "start_line": 3, "end_line": 4} in spans(entry)


async def test_never_send_file_is_refused_before_any_byte(tmp_path: Path, server: fs.FaultServer) -> None:
    server.default = fs.sse(["x"])
    settings = make_settings(tmp_path, server.url)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        with pytest.raises(EgressBlocked):
            await service.completer.complete(".env", "API_KEY=abc\n", 0, 8, context=None)
    assert "/v1/completions" not in [r.path for r in server.requests]


async def test_refactor_round_trip(tmp_path: Path, server: fs.FaultServer) -> None:
    answer = {
        "id": "x",
        "model": "m",
        "choices": [
            {"message": {"content": "Here:\n```python\nreturn sum((a, b))\n```"}, "finish_reason": "stop"}
        ],
    }
    server.routes["/v1/chat/completions"] = fs.json_reply(answer)
    settings = make_settings(tmp_path, server.url)
    doc = "def add(a, b):\n    return a + b\n"
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        new = (await service.refactor_edit("calc.py", doc, (1, 0, 2, 0), "use sum")).code
    assert new == "    return sum((a, b))\n"
    messages = server.requests[-1].json()["messages"]
    assert "use sum" in messages[-1]["content"] and "calc.py#L2-L2" in messages[-1]["content"]
    assert service.last is not None and service.last.kind == "refactor"


# -- the command line -------------------------------------------------------------------


def write_doc(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)
    path = root / "calc.py"
    path.write_text(DOC)
    return path


def test_cli_complete_json(
    tmp_path: Path, server: fs.FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.default = fs.sse(["return a + b\n"])
    path = write_doc(tmp_path)
    rc = main(
        ["complete", str(path), "--line", "5", "--character", "5", "--backend-url", server.url, "--json"]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    data = json.loads(out.out)
    assert data["text"] == "return a + b" and data["request_id"]
    assert "no index context" in out.err  # the workspace was never indexed: document-only, said so


def test_cli_complete_plain_text(
    tmp_path: Path, server: fs.FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.default = fs.sse(["return a", " * b"])
    path = write_doc(tmp_path)
    assert main(["complete", str(path), "--line", "5", "--character", "5", "--backend-url", server.url]) == 0
    assert capsys.readouterr().out == "return a * b\n"


def test_cli_dry_run_sends_nothing(
    tmp_path: Path, server: fs.FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_doc(tmp_path)
    argv = [
        "complete",
        str(path),
        "--line",
        "5",
        "--character",
        "5",
        "--dry-run",
        "--backend-url",
        server.url,
    ]
    assert main([*argv, "--model", "m"]) == 0
    out = capsys.readouterr()
    body = json.loads(out.out)
    assert body["prompt"].startswith("<|fim_prefix|>") and body["model"] == "m"
    assert "nothing was sent" in out.err
    assert "/v1/completions" not in [r.path for r in server.requests]  # no code left
    assert body["stop_token_ids"] == list(range(1000, 1009))
    entry = audit_entries(tmp_path)[-1]
    assert entry["sent"] is False and entry["status"] == "dry-run"
    assert entry["bytes"] == len(out.out.rstrip("\n").encode())


def test_cli_dry_run_without_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_doc(tmp_path)
    assert main(["complete", str(path), "--line", "5", "--character", "5", "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sent"] is False and data["body"]["prompt"].endswith("<|fim_middle|>")


def test_cli_dry_run_with_the_server_down_still_shows_the_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configured server that does not answer failed the dry run (exit 3): it asks the server
    for its model and window only to make the body exact."""
    path = write_doc(tmp_path)
    argv = [
        "complete",
        str(path),
        "--line",
        "5",
        "--dry-run",
        "--json",
        "--backend-url",
        "http://127.0.0.1:9/v1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["sent"] is False and data["body"]["prompt"].endswith("<|fim_middle|>")
    assert "codectx: note: the model server did not answer" in out.err


def test_cli_without_server_says_how_to_configure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_doc(tmp_path)
    assert main(["complete", str(path), "--line", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("codectx: error: no model server configured")
    assert "CODECTX_BACKEND_URL" in err and "codectx backend serve" in err


def test_cli_dead_server_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_doc(tmp_path)
    url = f"http://127.0.0.1:{fs.free_port()}/v1"
    assert main(["complete", str(path), "--line", "5", "--backend-url", url, "--model", "m"]) == 3
    err = capsys.readouterr().err
    assert "cannot connect to the model server" in err and "Traceback" not in err


def test_cli_offline_mode(
    tmp_path: Path,
    server: fs.FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CODECTX_PRIVACY_OFFLINE", "true")
    path = write_doc(tmp_path)
    argv = [
        "complete",
        str(path),
        "--line",
        "5",
        "--character",
        "5",
        "--backend-url",
        server.url,
    ]
    assert main(argv) == 0  # no --model: offline must not even ask the server for its model list
    out = capsys.readouterr()
    body = json.loads(out.out)
    assert body["prompt"].endswith("<|fim_middle|>") and "offline mode" in out.err
    assert audit_entries(tmp_path)[-1]["status"] == "offline"
    assert server.requests == []


def test_cli_bad_position_and_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_doc(tmp_path)
    assert main(["complete", str(path), "--line", "-1", "--dry-run"]) == 2
    assert main(["complete", str(tmp_path / "nope.py"), "--line", "1", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "lines are 1-based" in err and "no such file" in err


async def test_explain_and_selection_errors(tmp_path: Path, server: fs.FaultServer) -> None:
    from codectx.errors import UsageError

    answer = {"id": "x", "model": "m", "choices": [{"message": {"content": "  Adds **a** and b.\n"}}]}
    server.routes["/v1/chat/completions"] = fs.json_reply(answer)
    settings = make_settings(tmp_path, server.url)
    doc = "def add(a, b):\n    return a + b\n"
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        explained = await service.explain("calc.py", doc, 0, 1)
        assert (
            explained.text == "Adds **a** and b."
            and explained.model == "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8"
        )
        user = server.requests[-1].json()["messages"][-1]["content"]
        assert user.startswith("Explain this code from calc.py (lines 1-2):") and doc.rstrip("\n") in user
        assert service.last is explained.sent and service.last.kind == "explain"
        with pytest.raises(UsageError, match="select some code"):
            await service.refactor_edit("calc.py", doc, (1, 0, 1, 0), "x")
        with pytest.raises(UsageError, match="outside the document"):
            await service.explain("calc.py", doc, 9, 9)


async def test_server_without_tokenize_gets_stop_strings(tmp_path: Path, server: fs.FaultServer) -> None:
    server.routes["/tokenize"] = fs.status(404, "Not Found")
    server.default = fs.sse(["return 1"])
    settings = make_settings(tmp_path, server.url)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        assert (await service.completer.complete("calc.py", DOC, 4, 4, context=None)).text == "return 1"
        await service.completer.complete("calc.py", DOC, 4, 4, context=None)
    bodies = [r.json() for r in server.requests if r.path == "/v1/completions"]
    assert "<|file_sep|>" in bodies[0]["stop"] and bodies[0]["skip_special_tokens"] is False
    assert "stop_token_ids" not in bodies[0]
    assert [r.path for r in server.requests].count("/tokenize") == 1  # the answer is remembered


def test_retriever_prefix_start_is_made_stable() -> None:
    from codectx.backend.prompts import stable_prefix

    text = "".join(f"line {i}\n" for i in range(300))
    rows = text.split("\n")
    starts = []
    for line in range(200, 220):
        first = line - 50  # a budget cut that slides with the cursor, as the retriever's does
        prefix = "".join(r + "\n" for r in rows[first:line])
        cut, start = stable_prefix(text, prefix, first, line)
        assert prefix.endswith(cut) and len(cut) >= len(prefix) // 2
        assert cut == "".join(r + "\n" for r in rows[start:line])
        starts.append(start)
    assert len(set(starts)) <= 2  # twenty cursor positions, at most two prompt starts
    assert stable_prefix(text, "x", 0, 5) == ("x", 0)  # a prefix from the file's start is kept whole


def test_cli_reads_unsaved_text_from_stdin(
    tmp_path: Path,
    server: fs.FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    server.default = fs.sse(["b * 2"])
    path = write_doc(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("def unsaved(b):\n    return \n"))
    argv = ["complete", str(path), "--line", "2", "--character", "12", "--stdin", "--backend-url", server.url]
    assert main(argv) == 0
    assert capsys.readouterr().out == "b * 2\n"
    prompt = server.requests[-1].json()["prompt"]
    assert "def unsaved(b):\n    return <|fim_suffix|>" in prompt and "def add" not in prompt


async def test_prompt_is_fitted_to_a_small_server(tmp_path: Path, server: fs.FaultServer) -> None:
    """cpu-dev serves 1024 tokens: the prompt must fit rather than be rejected."""
    server.routes["/v1/models"] = fs.models("qwen-small", max_model_len=512)
    server.default = fs.sse(["1"])
    settings = make_settings(tmp_path, server.url, **{"backend.max_tokens": 64})
    big = "".join(f"v{i} = {i}\n" for i in range(2000))
    items = [Item(f"lib{i}.py", 0, 99, "z = 1\n" * 100) for i in range(3)]
    ctx = Context(items, prefix=big, suffix=big, prefix_start_line=0, suffix_end_line=4000)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        await service.completer.complete("big.py", big + big, 2000, 0, context=ctx)
        ratio = await client.chars_per_token()  # measured on a built-in sample via /tokenize
    prompt = [r.json()["prompt"] for r in server.requests if r.path == "/v1/completions"][-1]
    assert len(prompt) <= (512 - 64 - 32) * ratio * 0.85 + 200
    tokenized = [r.json()["prompt"] for r in server.requests if r.path == "/tokenize"]
    assert not any("v1999" in t for t in tokenized)  # no user code was sent to be counted
    assert "v1999 = 1999\n<|fim_suffix|>" in prompt  # the code right at the cursor survives
    assert service.last is not None and service.last.items == []


async def test_a_prompt_that_fills_the_window_is_cut_and_sent_again(
    tmp_path: Path, server: fs.FaultServer
) -> None:
    """vLLM clamps max_tokens to the room the prompt leaves; a prompt that takes the whole window is
    refused with "max_tokens must be at least 1, got 0" (not the context-length message). The
    service cuts the prompt and tries once more instead of failing the completion."""
    server.routes["/v1/models"] = fs.models("qwen-small", max_model_len=1024)
    server.script = [fs.status(400, "max_tokens must be at least 1, got 0.")]
    server.default = fs.sse(["1"])
    settings = make_settings(tmp_path, server.url, **{"backend.max_tokens": 64})
    big = "".join(f"v{i} = {i}\n" for i in range(2000))
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        result = await service.completer.complete("big.py", big + big, 2000, 0, context=None)
    assert result.text == "1"
    first, second = [r.json()["prompt"] for r in server.requests if r.path == "/v1/completions"]
    assert len(second) < len(first) * 0.95
    assert "v1999 = 1999\n<|fim_suffix|>" in second  # the code at the cursor survives the cut


async def test_other_rejections_are_not_retried(tmp_path: Path, server: fs.FaultServer) -> None:
    from codectx.backend.errors import BackendRejected

    server.script = [fs.status(400, "temperature must be non-negative")]
    settings = make_settings(tmp_path, server.url)
    async with BackendClient(settings) as client:
        service = session_for(settings, client)
        with pytest.raises(BackendRejected, match="temperature"):
            await service.completer.complete("calc.py", DOC, 4, 4, context=None)
    assert len([r for r in server.requests if r.path == "/v1/completions"]) == 1


def test_every_context_overflow_wording_gives_a_cut() -> None:
    """The wordings vLLM uses for a prompt over the window, each read as "cut by this much"."""
    from codectx.backend.errors import BackendRejected

    from codectx.app.completion import _overflow_shrink

    def shrink(message: str, limit: int | None = 1024) -> float | None:
        exc = BackendRejected("rejected", status=400, server_message=message)
        return _overflow_shrink(exc, 64, limit)

    stated = shrink(
        "This model's maximum context length is 1024 tokens. However, your prompt contains 2000 input tokens"
    )
    assert stated is not None and stated < 0.5  # half the prompt and more must go
    assert shrink("Input length (2000) exceeds model's maximum context length (1024).") == stated
    no_room = shrink("max_tokens must be at least 1, got 0.")
    assert no_room is not None and 0.5 < no_room < 0.95
    assert shrink("max_tokens must be at least 1, got 0.", limit=None) is None  # no window known
    assert shrink("temperature must be non-negative") is None
