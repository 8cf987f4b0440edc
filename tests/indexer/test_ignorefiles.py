"""Global git excludes, `.ignore` files and `.git/info/exclude`: what they name is never indexed.

Precedence is ripgrep's (a `.ignore` anywhere beats any `.gitignore`); the global excludes come
from the user's git config only, never the workspace's `.git/config`; editing any of them changes
what the next `codectx index` holds. HOME and XDG_* are the sandbox's (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from codectx.indexer.walk.discovery import discover, discover_files
from codectx.indexer.walk.gitexcludes import excludes_setting, global_excludes

from codectx.cli import main
from codectx.settings import load_settings


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own HOME (conftest sandboxes one per session): its ~/.gitconfig is its own."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)


def _w(root: Path, rel: str, text: str | bytes = "def f():\n    return 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _found(root: Path) -> set[str]:
    return {f.path for f in discover(root, load_settings(root)).files}


def _xdg_config() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    _w(root, ".git/HEAD", "ref: refs/heads/main\n")
    _w(root, "app/main.py")
    _w(root, "app/scratch_notes.py", "def scratch_only_marker():\n    return 2\n")
    _w(root, "app/private.local.py")
    _w(root, "gen/generated.py")
    _w(root, "gen/other.py")
    return root


def test_global_excludes_default_path_is_honoured(repo: Path) -> None:
    _w(_xdg_config(), "git/ignore", "scratch_*.py\n")
    assert _found(repo) == {"app/main.py", "app/private.local.py", "gen/generated.py", "gen/other.py"}
    # The single-file check (a save in an editor) says the same.
    verdict = discover_files(repo, load_settings(repo), ["app/scratch_notes.py"])
    assert [(s.path, s.reason) for s in verdict.skipped] == [("app/scratch_notes.py", "ignored")]


def test_core_excludesfile_from_user_config_with_tilde(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = Path(os.environ["HOME"])
    _w(home, "my-excludes", "*.local.py\n")
    _w(home, ".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = "~/my-excludes"  # mine\n')
    _w(_xdg_config(), "git/ignore", "scratch_*.py\n")  # not the default any more: the config wins
    assert "app/private.local.py" not in _found(repo)
    assert "app/scratch_notes.py" in _found(repo)
    # $GIT_CONFIG_GLOBAL replaces the user's config files, as in git.
    _w(home, "other.gitconfig", "[CORE] EXCLUDESFILE = " + str(home / "none") + "\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "other.gitconfig"))
    found = global_excludes(repo)
    assert found.path == home / "none" and found.patterns == ()
    assert any("none: missing" in w for w in found.warnings)


def test_repository_config_cannot_name_an_excludes_file(repo: Path, tmp_path: Path) -> None:
    """A cloned repository is untrusted: its .git/config is never read for core.excludesFile."""
    outside = _w(tmp_path, "elsewhere/patterns", "*.py\n")
    _w(repo, ".git/config", f"[core]\n\texcludesFile = {outside}\n")
    assert global_excludes(repo).path == _xdg_config() / "git" / "ignore"
    assert "app/main.py" in _found(repo)


def test_git_info_exclude_is_honoured(repo: Path) -> None:
    _w(repo, ".git/info/exclude", "gen/\n")
    assert _found(repo) == {"app/main.py", "app/scratch_notes.py", "app/private.local.py"}


def test_dot_ignore_outside_git_and_at_any_depth(tmp_path: Path) -> None:
    root = tmp_path / "plain"  # no .git: .ignore applies anyway (ripgrep, fd)
    _w(root, "a.py")
    _w(root, "sub/b.py")
    _w(root, "sub/deep/c.py")
    _w(root, "sub/.ignore", "deep/\n/b.py\n")
    _w(root, ".ignore", "a.py\n")
    assert _found(root) == set()
    _w(root, "sub/.ignore", "deep/\n")
    assert _found(root) == {"sub/b.py"}


def test_dot_ignore_negation_beats_any_gitignore(repo: Path) -> None:
    """ripgrep: `!generated.py` in a root .ignore re-includes what a deeper .gitignore excludes,
    and a .codectxignore beats both."""
    _w(repo, "gen/.gitignore", "generated.py\nother.py\n")
    _w(repo, ".ignore", "!generated.py\n")
    assert {"gen/generated.py"} == {p for p in _found(repo) if p.startswith("gen/")}
    _w(repo, "gen/.codectxignore", "generated.py\n")
    assert not {p for p in _found(repo) if p.startswith("gen/")}


def test_the_repositorys_ignore_files_do_not_re_include_what_the_user_excludes(repo: Path) -> None:
    """Red team 9 (W01): a cloned repository's `!pattern` brought back files the user keeps out.
    What .git/info/exclude, the global excludes or the settings exclude stays out, whatever a
    .gitignore, .ignore or .codectxignore of the repository says; the user's own tiers still
    re-include among themselves."""
    _w(repo, ".git/info/exclude", "app/main.py\nnotes/\n")
    _w(_xdg_config(), "git/ignore", "scratch_*.py\n")
    _w(repo, "notes/todo.py", "x = 1\n")
    _w(repo, "app/.ignore", "!main.py\n!scratch_notes.py\n")
    _w(repo, ".codectxignore", "!notes/\n!notes/todo.py\n")
    _w(repo, ".gitignore", "!app/main.py\n")
    found = _found(repo)
    assert not {"app/main.py", "app/scratch_notes.py", "notes/todo.py"} & found
    assert "app/private.local.py" in found  # what nobody excludes is still read
    # The user's own tiers: .git/info/exclude re-includes what the global excludes leave out.
    _w(repo, ".git/info/exclude", "!app/scratch_notes.py\n")
    assert "app/scratch_notes.py" in _found(repo)


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"scratch_*.py\n\x00\x01\x02", "binary"),
        (b"*.py\n" * (1 << 20), "larger than"),
        (None, "is a folder"),
    ],
)
def test_bad_excludes_file_warns_and_changes_nothing(repo: Path, content: bytes | None, expect: str) -> None:
    target = _xdg_config() / "git" / "ignore"
    if content is None:
        target.mkdir(parents=True)
    else:
        _w(_xdg_config(), "git/ignore", content)
    found = discover(repo, load_settings(repo))
    assert "app/scratch_notes.py" in {f.path for f in found.files}
    assert any(expect in w and str(target) in w for w in found.warnings), found.warnings


def test_unreadable_excludes_file_warns(repo: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can read any file")
    home = Path(os.environ["HOME"])
    excludes = _w(home, "ex", "scratch_*.py\n")
    _w(home, ".gitconfig", f"[core]\nexcludesfile={excludes}\n")
    excludes.chmod(0)
    try:
        found = discover(repo, load_settings(repo))
    finally:
        excludes.chmod(0o644)
    assert "app/scratch_notes.py" in {f.path for f in found.files}
    assert any("cannot be read" in w for w in found.warnings), found.warnings


def test_binary_user_config_warns(repo: Path) -> None:
    _w(Path(os.environ["HOME"]), ".gitconfig", b"[core]\n\x00excludesfile = x\n")
    found = discover(repo, load_settings(repo))
    assert any("git config" in w and "binary" in w for w in found.warnings), found.warnings
    assert len(found.files) == 5


def test_config_parsing() -> None:
    assert excludes_setting("[core]\n\texcludesfile = /a/b\n") == "/a/b"
    assert excludes_setting('[Core]\n  ExcludesFile = "/with space/x" ; note\n') == "/with space/x"
    assert excludes_setting("[core] excludesFile = /one/line\n") == "/one/line"
    assert excludes_setting("[user]\nexcludesfile = /not/core\n") is None
    assert excludes_setting('[core]\nexcludesfile = /first\n[remote "o"]\nexcludesfile = /x\n') == "/first"
    assert excludes_setting("[core]\nexcludesfile = /a\nexcludesfile = /b\n") == "/b"
    assert excludes_setting("# [core]\n; excludesfile = /c\n") is None
    assert excludes_setting('[core "sub"]\nexcludesfile = /sub\n') is None
    # Spaces inside a value are kept, trailing ones are not (the value is read in one pass: the
    # lazy value before `\s*$` re-read a run of spaces followed by more text, 2.6 s at 20,000).
    assert excludes_setting("[core]\nexcludesfile = /a" + " " * 3000 + "b   \n") == "/a" + " " * 3000 + "b"
    assert excludes_setting("[core]\nexcludesfile = /a b" + " " * 3000 + "\n") == "/a b"
    assert excludes_setting("[core]\nexcludesfile" + " " * 3000 + "x = /c\n") is None


def _indexed_paths(root: Path, capsys: pytest.CaptureFixture[str]) -> set[str]:
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    capsys.readouterr()
    assert main(["search", "scratch_only_marker", str(root), "--lexical", "--json", "-k", "20"]) in (0, 1)
    return {r["path"] for r in json.loads(capsys.readouterr().out)["results"]}


def test_editing_ignore_files_changes_the_next_index(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Indexed, then `.ignore` names it: the next `codectx index` drops it (the walk record and
    the no-op check see the edit), and search cannot find it; then the global excludes."""
    assert "app/scratch_notes.py" in _indexed_paths(repo, capsys)
    _w(repo, "app/.ignore", "scratch_*.py\n")
    assert "app/scratch_notes.py" not in _indexed_paths(repo, capsys)
    (repo / "app" / ".ignore").unlink()
    assert "app/scratch_notes.py" in _indexed_paths(repo, capsys)
    _w(_xdg_config(), "git/ignore", "scratch_*.py\n")
    assert "app/scratch_notes.py" not in _indexed_paths(repo, capsys)
    _w(_xdg_config(), "git/ignore", "# nothing\n")
    assert "app/scratch_notes.py" in _indexed_paths(repo, capsys)


_WALK = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))  # a file without end fails fast
from codectx.indexer.walk.discovery import discover
from codectx.settings import load_settings
root = Path(sys.argv[1])
found = discover(root, load_settings(root))
print(sorted(f.path for f in found.files))
print(*found.warnings, sep="\\n")
"""


def test_ignore_files_that_are_not_files_are_warned_about_not_read(tmp_path: Path) -> None:
    """A `.codectxignore` linking to /dev/zero was read without end (14 GB in 15 s), a FIFO
    `.gitignore` blocked the walk, and a `.ignore` linking outside the workspace was applied
    (its invalid lines echoed in warnings). Run in a child process with bounded memory and time."""
    import subprocess
    import sys

    root = tmp_path / "ws"
    _w(root, "a.py")
    _w(root, "keep/b.py")
    _w(root, "pipe/c.py")
    _w(root, "other/d.py")
    _w(tmp_path, "elsewhere", "secret-looking\\\n*.py\n")
    (root / ".codectxignore").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe" / ".gitignore")
    (root / "other" / ".ignore").symlink_to(tmp_path / "elsewhere")
    _w(root, "keep/.gitignore", "b.py\n")  # a real ignore file still applies
    done = subprocess.run(
        [sys.executable, "-c", _WALK, str(root)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    files, *warnings = done.stdout.splitlines()
    assert files == str(["a.py", "other/d.py", "pipe/c.py"])
    assert ".codectxignore: not a regular file; its patterns are not applied" in warnings
    assert "pipe/.gitignore: not a regular file; its patterns are not applied" in warnings
    assert "other/.ignore: a link that leads outside the workspace; its patterns are not applied" in warnings
    assert "secret-looking" not in done.stdout


def test_a_worktrees_git_file_gives_no_warning_and_a_relative_excludes_file_is_checked(
    tmp_path: Path,
) -> None:
    """In a git worktree `.git` is a file: `.git/info/exclude` read as "cannot be read (Not a
    directory)" on every run. A relative `core.excludesFile` is read in the workspace: a FIFO
    there blocked the walk, a link out of it was read."""
    import subprocess
    import sys

    root = tmp_path / "wt"
    _w(root, ".git", "gitdir: /elsewhere/.git/worktrees/wt\n")
    _w(root, "a.py")
    home = tmp_path / "home"
    _w(home, ".gitconfig", "[core]\n\texcludesFile = .localignore\n")
    os.mkfifo(root / ".localignore")
    env = {**os.environ, "HOME": str(home)}
    env.pop("GIT_CONFIG_GLOBAL", None)
    done = subprocess.run(
        [sys.executable, "-c", _WALK, str(root)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    files, *warnings = done.stdout.splitlines()
    assert files == str(["a.py"])
    assert [w for w in warnings if w] == [
        f"global git excludes {root / '.localignore'}: not a regular file; not applied"
    ]
    (root / ".localignore").unlink()
    _w(tmp_path, "outside-patterns", "*.py\n")
    (root / ".localignore").symlink_to(tmp_path / "outside-patterns")
    found = global_excludes(root, env)
    assert found.patterns == () and "leads outside the workspace" in found.warnings[0]
