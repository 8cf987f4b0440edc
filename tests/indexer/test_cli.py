"""End to end: `codectx index` and `codectx status` on a small real tree of several languages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codectx.cli import main

TREE = {
    "src/server.py": "import os\n\n\ndef start_server(port: int) -> None:\n"
    '    """Start listening."""\n    print(os.getpid(), port)\n',
    "src/models.py": "class User:\n    def full_name(self) -> str:\n        return 'x'\n",
    "web/api.ts": "export async function loadUsers(): Promise<string[]> {\n  return [];\n}\n",
    "lib/math.rs": "pub fn gcd(a: u64, b: u64) -> u64 {\n    if b == 0 { a } else { gcd(b, a % b) }\n}\n",
    "cmd/main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hi")\n}\n',
    "docs/guide.md": "# Guide\n\nHow to run the server.\n",
    ".env": "API_KEY=sk-live-should-never-be-indexed\n",
    "src/packed.py": "\x00\x01\x02 binary",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("def generated():\n    pass\n")
    return root


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_index_then_status_json(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODECTX_INDEX_EMBED_BACKEND", "torch")
    report = cli_json(capsys, "index", str(tree), "--json")
    assert report["files"] == 6 and report["added"] == 6 and report["errors"] == []
    assert set(report["chunks_per_language"]) == {"python", "typescript", "rust", "go", "markdown"}
    assert report["skipped"].get("secret-file") == 1 and report["skipped"].get("binary") == 1
    assert report["vectors_pending"] == 0 and report["vectors_embedded"] > 0
    assert (tree / ".codectx" / ".gitignore").read_text().strip() == "*"

    status = cli_json(capsys, "status", str(tree), "--json")
    assert status["files"] == 6 and status["vectors_pending"] == 0
    assert status["vectors_done"] == report["vectors_embedded"]
    assert status["since_last_index"] == {"changed": 0, "new": 0, "deleted": 0, "up_to_date": True}

    (tree / "src/server.py").write_text(TREE["src/server.py"] + "\n\ndef stop_server() -> None:\n    pass\n")
    (tree / "web/extra.ts").write_text("export const x = 1;\n")
    (tree / "cmd/main.go").unlink()
    stale = cli_json(capsys, "status", str(tree), "--json")["since_last_index"]
    assert stale == {"changed": 1, "new": 1, "deleted": 1, "up_to_date": False}

    again = cli_json(capsys, "index", str(tree), "--json", "--no-embed")
    assert (again["added"], again["updated"], again["removed"]) == (1, 1, 1)
    status = cli_json(capsys, "status", str(tree), "--json")
    assert status["vectors_pending"] >= 1 and status["since_last_index"]["up_to_date"]


def test_index_dir_flag_and_human_output(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index_dir = tmp_path / "elsewhere"
    assert main(["index", str(tree), "--no-embed", "--index-dir", str(index_dir)]) == 0
    out = capsys.readouterr()
    assert "files: 6 (6 added" in out.out and "secret-file" in out.out
    assert "parse: 6/6 files" in out.err  # plain progress lines when not a terminal
    assert (index_dir / "meta.json").is_file() and not (tree / ".codectx").exists()
    assert main(["status", str(tree), "--index-dir", str(index_dir)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_clear_errors_without_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": ""}
    missing = subprocess.run(
        [sys.executable, "-m", "codectx", "index", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert missing.returncode == 2
    assert "codectx: error: path does not exist" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "empty").mkdir()
    status = subprocess.run(
        [sys.executable, "-m", "codectx", "status", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert status.returncode == 1
    assert (
        "no index" in status.stderr and "codectx index" in status.stderr and "Traceback" not in status.stderr
    )


def test_only_the_command_process_freezes_the_imported_objects(tree: Path) -> None:
    """`codectx index` moves what the LanceDB import leaves to the collector's permanent generation
    (a faster run and exit); a program that calls `main` itself (these tests) keeps its collector."""
    import gc

    from codectx.indexer import cli

    frozen = gc.get_freeze_count()
    cli._import_pipeline()
    assert gc.get_freeze_count() == frozen and gc.isenabled()
    assert not cli.is_command_process()
    probe = (
        "import gc, runpy, sys\n"
        f"sys.argv = ['codectx', 'index', {str(tree)!r}, '--no-embed', '--json']\n"
        # The process would end by hand after the command (codectx/shutdown.py): end it the
        # ordinary way here, so that the probe can look at it afterwards.
        "import codectx.cli\ncodectx.cli.exit_process = sys.exit\n"
        "try:\n    runpy.run_module('codectx', run_name='__main__', alter_sys=True)\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "print('FROZEN' if gc.get_freeze_count() > 0 else 'NOT-FROZEN', gc.isenabled(), code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.rstrip().splitlines()
    assert lines[-1] == "FROZEN True 0", out.stdout[-500:]
    assert json.loads("\n".join(lines[:-1]))["files"] == 6


def test_a_command_imports_only_the_cli_modules_up_to_its_own(tmp_path: Path) -> None:
    """`codectx index` need not load the privacy patterns or the backend client; `--help` and an
    unknown command still see every command."""
    probe = (
        "import sys\n"
        "from codectx.cli import main\n"
        f"code = main(['status', {str(tmp_path)!r}])\n"
        "print(sorted(m for m in sys.modules if m.endswith('.cli') and m.startswith('codectx.')), code)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "['codectx.cli', 'codectx.indexer.cli'] 1", out.stdout + out.stderr
    every = subprocess.run([sys.executable, "-m", "codectx", "--help"], capture_output=True, text=True)
    assert every.returncode == 0 and all(c in every.stdout for c in ("index", "redact", "lsp", "config"))
    wrong = subprocess.run([sys.executable, "-m", "codectx", "nosuch"], capture_output=True, text=True)
    assert wrong.returncode == 2 and "'audit'" in wrong.stderr and "'config'" in wrong.stderr
    keys = [sys.executable, "-m", "codectx", "config", "keys"]
    config = subprocess.run(keys, capture_output=True, text=True)
    assert config.returncode == 0 and "[privacy]" in config.stdout


def test_plain_progress_rate_counts_the_whole_embed_stage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Embedding alternates with commits; the rate was measured from the stage's return after each
    commit (`260/796 chunks (260000000/s, ETA 0s)`), and counted a resumed run's earlier vectors."""
    from codectx.indexer import cli as index_cli
    from codectx.indexer.report import ProgressEvent

    clock = [100.0]
    monkeypatch.setattr(index_cli.time, "monotonic", lambda: clock[0])
    progress = index_cli._PlainProgress()
    for at, stage, done in [
        (0, "embed", 100),  # 100 vectors from an earlier, interrupted run
        (10, "embed", 360),
        (10, "commit", 1),
        (10.01, "embed", 360),
        (20, "embed", 620),
    ]:
        clock[0] = 100.0 + at
        progress(ProgressEvent(stage, done, 896))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("embed:")]
    assert lines == [
        "embed: 100/896 chunks (measuring, ETA unknown)",
        "embed: 360/896 chunks (26/s, ETA 21s)",
        "embed: 360/896 chunks (26/s, ETA 21s)",
        "embed: 620/896 chunks (26/s, ETA 11s)",
    ]


def test_paths_search_prints_work_from_a_subfolder(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`search` prints workspace-relative paths; run in a subfolder, `context` took them relative
    to the current folder (`no such file: src/server.py`)."""
    (tree / ".git").mkdir()
    assert main(["index", str(tree), "--no-embed"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(tree / "src")
    hit = cli_json(capsys, "search", "start_server", "--lexical", "--json")["results"][0]
    assert hit["path"] == "src/server.py"
    method = cli_json(capsys, "search", "full_name", "--lexical", "--json")["results"][0]
    assert (method["symbol"], method["qualname"]) == ("full_name", "User.full_name")  # as text shows it
    context = cli_json(capsys, "context", f"{hit['path']}:5", "--lexical", "--json")
    assert context["path"] == "src/server.py"
    assert main(["context", "server.py:5", "--lexical", "--json"]) == 0  # relative to here, as before
    assert json.loads(capsys.readouterr().out)["path"] == "src/server.py"
    # Never a file outside the workspace: `../x.py` is not looked for from its root (from an
    # inner project's subfolder it read the enclosing project's x.py).
    outer = tree.parent / "outer"
    (outer / ".git").mkdir(parents=True)
    (outer / "x.py").write_text("def outside():\n    return 1\n")
    (outer / "proj" / ".git").mkdir(parents=True)
    (outer / "proj" / "sub").mkdir()
    assert main(["index", str(outer), "--no-embed"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(outer / "proj" / "sub")
    assert main(["context", "../x.py:1", "--lexical", "--json"]) != 0
    assert "no such file: ../x.py" in capsys.readouterr().err


def test_index_without_a_path_in_the_home_folder_asks_for_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`codectx index` in ~ indexed the whole home, an index no project below it would use."""
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / "project" / "a.py").write_text("def a():\n    return 1\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    assert main(["index", "--no-embed"]) == 2
    assert "is your home folder, not a project" in capsys.readouterr().err
    assert not (home / ".codectx").exists()
    assert main(["index", ".", "--no-embed"]) == 0  # named: the user means it
    assert (home / ".codectx").is_dir()


def test_json_commands_answer_errors_in_json_on_stdout(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script piping `--json` into jq got nothing on stdout when the command failed: the message
    was only on stderr. Now stdout carries {"error", "exit_code"} too, for the command's own errors
    and for argparse's usage errors; without --json stdout stays empty."""
    monkeypatch.chdir(tree)
    assert main(["status", "--json"]) == 1  # no index yet
    out = capsys.readouterr()
    answer = json.loads(out.out)
    assert answer["exit_code"] == 1 and "no index" in answer["error"] and "no index" in out.err
    assert main(["search", "x"]) == 1
    assert capsys.readouterr().out == ""
    assert main(["index", str(tree), "--no-embed"]) == 0
    capsys.readouterr()
    assert main(["context", "src/nope.py:1", "--json"]) == 2
    assert "no such file" in json.loads(capsys.readouterr().out)["error"]
    with pytest.raises(SystemExit) as usage:
        main(["search", "--json", "--limit", "x", "q"])
    assert usage.value.code == 2
    assert json.loads(capsys.readouterr().out) == {"error": "unrecognized arguments: --limit", "exit_code": 2}
    with pytest.raises(SystemExit):
        main(["search", "--limit", "x", "q"])
    assert capsys.readouterr().out == ""
    # A subcommand's own --json (`audit show`), whatever its position.
    with pytest.raises(SystemExit):
        main(["audit", "show", "--bogus", "--json"])
    assert json.loads(capsys.readouterr().out)["exit_code"] == 2
    # A command without --json keeps stdout clean: `lsp`'s stdout is the editor's LSP channel.
    with pytest.raises(SystemExit):
        main(["lsp", "--json"])
    assert capsys.readouterr().out == ""
    with pytest.raises(SystemExit):
        main(["audit", "--json"])  # the group takes none; its subcommands do
    assert capsys.readouterr().out == ""


def test_status_of_a_first_run_stopped_before_its_end_says_so(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first `codectx index` stopped by Ctrl-C left files and chunks but no `last_indexed`;
    status printed "last indexed: never" next to "up to date"."""
    assert main(["index", str(tree), "--no-embed"]) == 0
    capsys.readouterr()
    assert cli_json(capsys, "status", str(tree), "--json")["finished"] is True
    meta_path = tree / ".codectx" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["last_indexed"]  # as a run stopped before `_finish` leaves it
    meta_path.write_text(json.dumps(meta))
    assert cli_json(capsys, "status", str(tree), "--json")["finished"] is False
    assert main(["status", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "never finished" in out and "`codectx index` goes on" in out
    assert "still lack vectors" in out and "\nup to date" not in out
