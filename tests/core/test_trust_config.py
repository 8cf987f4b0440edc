"""A cloned repository's configuration cannot choose where codectx writes, what it deletes or loads.

`index.index_dir`, a model folder and `backend.vllm_python` are read only from
the user's own config, the environment and flags (and an editor's user-level
settings); in `.codectx.toml` or editor folder settings they are warnings.
codectx deletes only in folders it created (the `.codectx-index` marker).
A mistake in a workspace file is a warning; in the user's config an error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from codectx.indexer.storage.owner import MARKER
from codectx.lsp.config import build_settings

from codectx.settings import load_settings, user_config_path

SOURCE = "def add(a, b):\n    return a + b\n"


def _run(
    args: list[str], cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["CODECTX_INDEX_EMBED"] = "false"  # lexical index: no model load, same paths
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "codectx", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _tree(root: Path, skip: Path) -> set[str]:
    """Every path under `root`, except the workspace itself and the test's XDG folders."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == skip or skip in here.parents or "_xdg" in here.parts:
            dirnames[:] = []
            continue
        # The XDG folders (conftest: tmp_path/_xdg) are the user's: the rule cache writes there.
        out.update(str(here / n) for n in dirnames + filenames if "_xdg" not in (here / n).parts)
    return out


@pytest.mark.parametrize("where", ["absolute", "relative"])
def test_workspace_index_dir_is_ignored_and_nothing_outside_is_written_or_deleted(
    tmp_path: Path, where: str
) -> None:
    ws = tmp_path / "clone" / "repo"
    ws.mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "app.py").write_text(SOURCE)
    victim = tmp_path / "victim"
    (victim / "db").mkdir(parents=True)
    (victim / "db" / "precious.txt").write_text("not codectx's")
    target = str(victim) if where == "absolute" else "../../victim"
    (ws / ".codectx.toml").write_text(f'[index]\nindex_dir = "{target}"\nmodel = "./evil-model"\n')
    before = _tree(tmp_path, ws)
    for command in (["index", str(ws)], ["status", str(ws)], ["search", "add", str(ws), "--lexical"]):
        done = _run(command, ws)
        assert done.returncode == 0, done.stderr
        assert "ignored index.index_dir" in done.stderr and "ignored index.model" in done.stderr
    assert (ws / ".codectx" / "meta.json").is_file() and (ws / ".codectx" / MARKER).is_file()
    assert (victim / "db" / "precious.txt").read_text() == "not codectx's"
    assert _tree(tmp_path, ws) == before  # 0 paths outside the workspace written or deleted


def test_a_user_chosen_index_dir_that_codectx_did_not_create_is_never_deleted(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "app.py").write_text(SOURCE)
    chosen = tmp_path / "existing"
    (chosen / "db").mkdir(parents=True)
    (chosen / "db" / "precious.txt").write_text("mine")
    done = _run(["index", str(ws), "--index-dir", str(chosen)], ws)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "was not created by codectx" in done.stderr and str(chosen) in done.stderr
    assert (chosen / "db" / "precious.txt").read_text() == "mine"
    assert sorted(p.name for p in chosen.iterdir()) == ["db"]  # not even a lock file
    # A new folder is created, marked, and rebuilt freely from then on.
    fresh = tmp_path / "fresh-index"
    assert _run(["index", str(ws), "--index-dir", str(fresh)], ws).returncode == 0
    assert (fresh / MARKER).is_file() and (fresh / "meta.json").is_file()


def test_index_from_before_markers_is_adopted(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "app.py").write_text(SOURCE)
    assert _run(["index", str(ws)], ws).returncode == 0
    (ws / ".codectx" / MARKER).unlink()  # as an older codectx left it
    (ws / "app.py").write_text(SOURCE + "\n\ndef sub(a, b):\n    return a - b\n")
    assert _run(["index", str(ws)], ws).returncode == 0
    assert (ws / ".codectx" / MARKER).is_file()


def test_unknown_keys_in_a_workspace_file_are_warnings_not_errors(tmp_path: Path) -> None:
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "app.py").write_text(SOURCE)
    (ws / ".codectx.toml").write_text(
        '[index]\nmax_file_byte = 3\n[nonsense]\nx = 1\n[retriever]\nk = "many"\n'
    )
    for command in (["config", "show", str(ws)], ["index", str(ws)], ["status", str(ws)]):
        done = _run(command, ws)
        assert done.returncode == 0, (command, done.stderr)
        assert "unknown key 'index.max_file_byte'" in done.stderr and "warning" in done.stderr
    # The same mistakes in the user's own config stay errors (exit 2), naming the file.
    user = tmp_path / "_xdg" / "user" / "codectx" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[index]\nmax_file_byte = 3\n")
    done = _run(["status", str(ws)], ws, {"XDG_CONFIG_HOME": str(tmp_path / "_xdg" / "user")})
    assert done.returncode == 2 and "unknown key 'index.max_file_byte'" in done.stderr


def test_trusted_only_keys_from_user_config_env_and_flags_are_honoured(tmp_path: Path) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[index]\nindex_dir = "{tmp_path / "idx"}"\n[backend]\nvllm_python = "/usr/bin/python3"\n'
    )
    (tmp_path / ".codectx.toml").write_text(
        '[index]\nindex_dir = "elsewhere"\n[backend]\nvllm_python = "./py"\n'
    )
    s = load_settings(tmp_path, environ={})
    assert s.index_dir() == tmp_path / "idx" and s.backend.vllm_python == "/usr/bin/python3"
    assert any("ignored backend.vllm_python" in w for w in s.warnings)
    s = load_settings(tmp_path, environ={"CODECTX_INDEX_INDEX_DIR": str(tmp_path / "env-idx")})
    assert s.index_dir() == tmp_path / "env-idx"
    s = load_settings(tmp_path, {"index.index_dir": str(tmp_path / "flag-idx")}, environ={})
    assert s.index_dir() == tmp_path / "flag-idx"
    # The bundled model's name is no path: a workspace may choose it.
    (tmp_path / ".codectx.toml").write_text('[index]\nmodel = "all-MiniLM-L6-v2"\n')
    path.unlink()
    assert not load_settings(tmp_path, environ={}).warnings


def test_editor_folder_settings_cannot_move_the_index_or_load_a_model(tmp_path: Path) -> None:
    folder = {
        "codectx": {"index": {"index_dir": "/tmp/x", "model": str(tmp_path / "m")}, "retriever": {"k": 3}}
    }
    result = build_settings(tmp_path, editor_user=None, editor_folder=folder, environ={})
    assert result.settings.index_dir() == tmp_path / ".codectx"
    assert result.settings.index.model == "all-MiniLM-L6-v2" and result.settings.retriever.k == 3
    assert any("ignored index.index_dir" in p for p in result.problems)
    assert any("ignored index.model" in p for p in result.problems)
    # The editor's user-level settings are the user's own: honoured.
    user = {"codectx": {"index": {"index_dir": str(tmp_path / "mine")}}}
    assert build_settings(tmp_path, editor_user=user, environ={}).settings.index_dir() == tmp_path / "mine"
    # And a workspace file read by the server is as untrusted as on the command line.
    (tmp_path / ".codectx.toml").write_text('[index]\nindex_dir = "/tmp/y"\nbogus = 1\n')
    result = build_settings(tmp_path, environ={})
    assert result.settings.index_dir() == tmp_path / ".codectx"
    assert any("ignored index.index_dir" in p for p in result.problems)


def test_the_language_servers_folder_settings_add_to_the_users_never_index(tmp_path: Path) -> None:
    """The server's layers (the editor's user and folder settings, a workspace file) add to
    `never_index` like the command line's: an empty list from the folder clears nothing (red team 6, H2)."""
    user = {"codectx": {"index": {"never_index": ["private/**"]}}}
    folder = {"codectx": {"index": {"never_index": []}}}
    (tmp_path / ".codectx.toml").write_text("[index]\nnever_index = []\n")
    result = build_settings(tmp_path, editor_user=user, editor_folder=folder, environ={})
    assert result.settings.index.never_index == ["private/**"]


def test_a_workspace_index_folder_that_is_a_link_is_refused_and_the_other_index_is_intact(
    tmp_path: Path,
) -> None:
    """A cloned repository's `.codectx` linking to another project's index: writing through it
    replaced that project's index with the clone's files."""
    mine, clone = tmp_path / "mine", tmp_path / "clone"
    for ws, name in ((mine, "debounce"), (clone, "other")):
        (ws / ".git").mkdir(parents=True)
        (ws / "app.py").write_text(f"def {name}():\n    return 1\n")
    assert _run(["index", str(mine)], mine).returncode == 0
    (clone / ".codectx").symlink_to(mine / ".codectx")
    before = _tree(mine / ".codectx", clone)
    for command in (["index", str(clone)], ["search", "other", str(clone), "--lexical"]):
        done = _run(command, clone)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert ".codectx is a link" in done.stderr and "index.index_dir" in done.stderr
    assert _tree(mine / ".codectx", clone) == before
    found = _run(["search", "debounce", str(mine), "--lexical"], mine)
    assert "app.py" in found.stdout and "other" not in found.stdout


@pytest.mark.parametrize("planted", ["db", "lock", ".gitignore", "db/chunks.lance/_transactions"])
def test_an_index_folder_holding_links_is_not_written_through(tmp_path: Path, planted: str) -> None:
    """A `.codectx` folder shipped with its marker and a link inside: the lock file's link had
    an outside file truncated to a pid, a dangling `.gitignore` link created one, and links in
    LanceDB's folders had transactions written elsewhere."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("theirs")
    ws = tmp_path / "repo"
    (ws / ".codectx").mkdir(parents=True)
    (ws / ".codectx" / MARKER).write_text("x")
    link = ws / ".codectx" / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    target = {"lock": victim / "precious.txt", ".gitignore": victim / "created"}.get(planted, victim)
    link.symlink_to(target)
    (ws / "app.py").write_text(SOURCE)
    done = _run(["index", str(ws)], ws)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"holds links ({planted})" in done.stderr
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert (victim / "precious.txt").read_text() == "theirs"


@pytest.mark.parametrize("shape", ["dev-zero", "fifo", "not-utf8", "outside"])
def test_a_workspace_config_that_is_not_a_settings_file_is_a_warning(tmp_path: Path, shape: str) -> None:
    """Each of these read without end, blocked, or raised a traceback (not UTF-8) on every command."""
    ws = tmp_path / "repo"
    (ws / ".git").mkdir(parents=True)
    (ws / "app.py").write_text(SOURCE)
    config = ws / ".codectx.toml"
    if shape == "dev-zero":
        config.symlink_to("/dev/zero")
    elif shape == "fifo":
        os.mkfifo(config)
    elif shape == "not-utf8":
        config.write_bytes(b'\xff\xfe[index]\nexclude = ["x"]\n')
    else:
        (tmp_path / "elsewhere.toml").write_text("[retriever]\nsecret_section_name = 1\n")
        config.symlink_to(tmp_path / "elsewhere.toml")
    indexed = _run(["index", str(ws)], ws)
    done = _run(["search", "add", str(ws), "--lexical"], ws)
    assert indexed.returncode == done.returncode == 0, indexed.stderr + done.stderr
    assert "app.py" in done.stdout
    why = {
        "dev-zero": "not a regular file",
        "fifo": "not a regular file",
        "not-utf8": "not UTF-8 text",
        "outside": "leads outside the workspace",
    }[shape]
    for out in (indexed, done):
        warning = next(line for line in out.stderr.splitlines() if f"workspace config ({config})" in line)
        assert why in warning and warning.endswith("the file is ignored")
    assert "secret_section_name" not in done.stderr  # the outside file's keys are not echoed
    # The editor's settings report it the same way (never raise).
    assert any(why in p for p in build_settings(ws, user_config=tmp_path / "none.toml").problems)


def test_a_user_config_that_is_not_utf8_is_one_error_line(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_bytes(b"\xff\xfe")
    with pytest.raises(Exception, match=r"not UTF-8 text") as caught:
        load_settings(None, user_config=user)
    assert type(caught.value).__name__ == "ConfigError"
