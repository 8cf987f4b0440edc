"""@diff's reading of git (codectx/app/gitdiff.py) on real repositories.

A workspace's `.git/config` is untrusted: red team 3 had `core.fsmonitor`, a filter driver and a
diff driver's `textconv` run commands when @diff was used, and the textconv output (a file from
outside the workspace) was sent as part of the diff.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codectx.app import gitdiff


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 1\n")
    (root / "gone.txt").write_text("old line of a deleted file\n")
    (root / ".gitattributes").write_text("*.py filter=evil diff=conv\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def test_the_repositorys_commands_do_not_run(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE_MARKER from outside the workspace\n")
    marks = tmp_path / "marks"
    marks.mkdir()
    (repo / "a.py").write_text("x = 2\n")
    git(repo, "config", "core.fsmonitor", f"touch {marks}/fsmonitor; false #")
    git(repo, "config", "filter.evil.clean", f"touch {marks}/clean; cat")
    git(repo, "config", "filter.evil.process", f"touch {marks}/process; false")
    git(repo, "config", "diff.conv.textconv", f"touch {marks}/textconv; cat {outside}; cat")
    git(repo, "config", "diff.noprefix", "true")
    text = gitdiff.working_diff(repo)
    assert list(marks.iterdir()) == []
    assert "OUTSIDE_MARKER" not in text
    assert "+x = 2" in text
    assert [s.path for s in gitdiff.sections(text)] == ["a.py"]  # the prefixes are ours, not the config's


def test_renames_name_both_paths_and_deleted_files_show_no_lines(repo: Path) -> None:
    git(repo, "mv", "a.py", "moved.py")
    (repo / "moved.py").write_text("x = 1\nx = 2\n")
    git(repo, "rm", "-q", "gone.txt")
    found = {s.path: s for s in gitdiff.sections(gitdiff.working_diff(repo))}
    assert found["moved.py"].paths == {"a.py", "moved.py"}
    assert found["moved.py"].new_ranges == [(1, 2)] and found["moved.py"].old_ranges == [(1, 1)]
    assert "old line of a deleted file" not in found["gone.txt"].text


def test_a_workspace_inside_the_repository_gets_its_own_paths(repo: Path) -> None:
    (repo / "sub" / "b.py").write_text("y = 2\n")
    (repo / "a.py").write_text("x = 2\n")
    sections = gitdiff.sections(gitdiff.working_diff(repo / "sub"))
    assert [s.path for s in sections] == ["b.py"]
    assert gitdiff.head_texts(repo / "sub", ["b.py", "missing.py"]) == {"b.py": "y = 1\n"}


def test_a_work_tree_elsewhere_is_refused(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(repo, "config", "core.worktree", str(other))
    with pytest.raises(gitdiff.GitFailed, match="not this workspace"):
        gitdiff.working_diff(repo)


def test_no_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(gitdiff.GitFailed):
        gitdiff.working_diff(tmp_path)


def test_a_filter_named_with_an_equals_sign_does_not_run(repo: Path, tmp_path: Path) -> None:
    """Review: `-c filter.x=y.clean=` splits at the first `=`; the settings go by environment."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (repo / ".gitattributes").write_text("*.py filter=x=y\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attrs")
    git(repo, "config", "filter.x=y.clean", f"touch {marks}/clean; cat")
    (repo / "a.py").write_text("x = 3\n")
    assert "+x = 3" in gitdiff.working_diff(repo)
    assert list(marks.iterdir()) == []


def test_a_submodules_own_configuration_does_not_run(repo: Path, tmp_path: Path) -> None:
    """Review: git diff looks into a checked-out submodule with that submodule's configuration."""
    marks = tmp_path / "marks"
    marks.mkdir()
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "b.py").write_text("y = 1\n")
    git(inner, "init", "-q")
    git(inner, "add", "-A")
    git(inner, "commit", "-qm", "inner")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner), "sub2")
    git(repo, "commit", "-qm", "submodule")
    sub = repo / "sub2"
    git(sub, "config", "filter.evil.clean", f"touch {marks}/clean; cat")
    git(sub, "config", "core.fsmonitor", f"touch {marks}/fsmonitor; false #")
    (sub / ".gitattributes").write_text("*.py filter=evil\n")
    (sub / "b.py").write_text("y = 2\n")
    (repo / "a.py").write_text("x = 2\n")
    gitdiff.working_diff(repo)
    assert list(marks.iterdir()) == []


def test_a_dot_git_file_pointing_at_another_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    with pytest.raises(gitdiff.GitFailed, match="points elsewhere"):
        gitdiff.working_diff(workspace)


def test_a_removed_line_that_looks_like_a_header_is_no_path() -> None:
    text = (
        "diff --git a/.env.notes b/.env.notes\n--- a/.env.notes\n+++ b/.env.notes\n"
        "@@ -1,2 +1,2 @@\n-- a/README.md old\n++ b/README.md\n"
    )
    assert [s.paths for s in gitdiff.sections(text)] == [{".env.notes"}]


def test_a_long_diff_is_cut_at_a_line_end(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 11: the diff was cut at DIFF_BYTES whatever it cut through; a value cut short is no
    longer recognisable, and its first part went out."""
    rows = "".join(f"password_{i} = 'Kestrel{i:04d}BasinQ7'\n" for i in range(400))
    (repo / "a.py").write_text(rows)
    whole = gitdiff.working_diff(repo)
    limit = whole.index("Kestrel0200") + 5  # inside a value
    monkeypatch.setattr(gitdiff, "DIFF_BYTES", limit)
    cut = gitdiff.working_diff(repo)
    assert cut.endswith("\n") and len(cut) <= limit and whole.startswith(cut)
    assert "Kestrel0199" in cut and "Kestrel0200" not in cut and "Kestr\n" not in cut
