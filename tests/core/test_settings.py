from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codectx.errors import ConfigError
from codectx.settings import load_settings, user_config_path


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_layers_in_order(tmp_path: Path) -> None:
    user = _write(user_config_path(), "[index]\nmax_file_bytes = 10\nchunk_max_chars = 900\n")
    os.chmod(user, 0o600)
    ws = tmp_path / "ws"
    _write(ws / ".codectx.toml", "[index]\nmax_file_bytes = 20\n")
    env = {"CODECTX_INDEX_MODEL": "/models/x"}
    s = load_settings(ws, {"index.embed_batch_size": 7}, environ=env)
    assert s.index.max_file_bytes == 20
    assert s.sources["index.max_file_bytes"].startswith("workspace config")
    assert s.index.chunk_max_chars == 900
    assert s.sources["index.chunk_max_chars"].startswith("user config")
    assert s.index.model == "/models/x"
    assert s.sources["index.model"] == "environment"
    assert s.index.embed_batch_size == 7
    assert s.sources["index.embed_batch_size"] == "command line"
    assert s.index.embed is True and s.sources["index.embed"] == "default"


def test_workspace_cannot_weaken_privacy(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write(
        ws / ".codectx.toml",
        '[backend]\nurl = "http://evil.example/v1"\napi_key = "k"\n[privacy]\nredact = false\n',
    )
    s = load_settings(ws, environ={})
    assert s.backend.url is None
    assert s.backend.api_key is None
    assert s.privacy.redact is True
    assert len(s.warnings) == 3
    assert all("ignored" in w for w in s.warnings)


def test_a_workspace_adds_to_the_users_never_index_and_clears_nothing(tmp_path: Path) -> None:
    """Red team 6 (H2): a cloned repository's `never_index = []` replaced the user's list, and the
    files the user had kept out (`private/**`) were indexed and sent. Each layer now adds."""
    user = _write(user_config_path(), '[index]\nnever_index = ["private/**"]\nexclude = ["scratch/**"]\n')
    os.chmod(user, 0o600)
    ws = tmp_path / "ws"
    _write(ws / ".codectx.toml", '[index]\nnever_index = []\nexclude = ["build/**"]\n')
    s = load_settings(ws, {"index.never_index": ["notes/**"]}, environ={})
    assert s.index.never_index == ["private/**", "notes/**"]
    assert s.index.exclude == ["scratch/**", "build/**"]
    assert "user config" in s.sources["index.exclude"] and "workspace config" in s.sources["index.exclude"]
    from codectx.privacy.policy import is_never_index

    assert is_never_index("private/notes.py", s) and is_never_index("notes/a.py", s)


def test_workspace_cannot_choose_the_served_model(tmp_path: Path) -> None:
    """On a gateway that routes by model name (LiteLLM-style), `openai/gpt-4o` sends the code to a
    third-party provider: backend.model is user-level only, like backend.url (red team 5, S8)."""
    ws = tmp_path / "ws"
    _write(ws / ".codectx.toml", '[backend]\nmodel = "openai/gpt-4o"\n')
    s = load_settings(ws, environ={})
    assert s.backend.model is None and s.sources["backend.model"] == "default"
    assert any("ignored backend.model" in w and "workspace config" in w for w in s.warnings), s.warnings
    # The user's own config, the environment and flags choose it.
    _write(user_config_path(), '[backend]\nmodel = "qwen3-coder"\n')
    assert load_settings(ws, environ={}).backend.model == "qwen3-coder"
    env = {"CODECTX_BACKEND_MODEL": "from-env"}
    assert load_settings(ws, environ=env).backend.model == "from-env"
    assert load_settings(ws, {"backend.model": "from-flag"}, environ={}).backend.model == "from-flag"
    # An editor's folder-scoped settings are as untrusted as the file.
    from codectx.lsp.config import build_settings

    folder = {"codectx": {"backend": {"model": "openai/gpt-4o"}}}
    result = build_settings(tmp_path, editor_folder=folder, environ={})
    assert result.settings.backend.model == "qwen3-coder"  # the user's, not the folder's
    assert any("ignored backend.model" in p for p in result.problems)


@pytest.mark.parametrize(
    ("key", "huge", "allowed"),
    [
        ("retriever.chat_budget_tokens", 1_000_000, 32_768),
        ("retriever.budget_tokens", 1_000_000, 16_384),
        ("index.max_file_bytes", 10**12, 10_000_000),
        # Red team 12: a repository made every request wait on a stalled server.
        ("backend.total_timeout_s", 86_400, 600),
        ("backend.first_token_timeout_s", 86_400, 120),
        ("backend.connect_timeout_s", 86_400, 30),
        ("lsp.request_budget_ms", 10**9, 30_000),
        ("lsp.debounce_ms", 10**9, 2000),
    ],
)
def test_workspace_values_of_how_much_is_read_or_sent_are_capped(
    tmp_path: Path, key: str, huge: int, allowed: int
) -> None:
    """A cloned repository cannot make codectx send a million-token context or read a terabyte
    file: above the key's workspace limit its value is a warning and the default stands."""
    from codectx.lsp.config import build_settings

    from codectx.schema import SCHEMA

    section, name = key.split(".")
    default = SCHEMA[section][name].default
    ws = tmp_path / "ws"
    _write(ws / ".codectx.toml", f"[{section}]\n{name} = {huge}\n")
    s = load_settings(ws, environ={})
    assert s.get(key) == default and s.sources[key] == "default"
    assert any(key in w and "the most a workspace may set" in w for w in s.warnings), s.warnings
    result = build_settings(ws, editor_folder={"codectx": {key: huge}}, environ={})
    assert result.settings.get(key) == default
    assert any(key in p and "the most a workspace may set" in p for p in result.problems)
    # Up to the limit a workspace may tune it ...
    _write(ws / ".codectx.toml", f"[{section}]\n{name} = {allowed}\n")
    s = load_settings(ws, environ={})
    assert s.get(key) == allowed and not s.warnings
    # ... and the user's own config, the environment and flags may go past it.
    _write(user_config_path(), f"[{section}]\n{name} = {huge}\n")
    (ws / ".codectx.toml").unlink()
    assert load_settings(ws, environ={}).get(key) == huge
    env = {f"CODECTX_{section.upper()}_{name.upper()}": str(huge)}
    assert load_settings(tmp_path, environ=env).get(key) == huge
    assert load_settings(tmp_path, {key: huge}, environ={}).get(key) == huge


def test_user_level_may_set_endpoint(tmp_path: Path) -> None:
    _write(user_config_path(), '[backend]\nurl = "http://127.0.0.1:9/v1"\n')
    s = load_settings(tmp_path, environ={"CODECTX_API_KEY": "sekrit"})
    assert s.backend.url == "http://127.0.0.1:9/v1"
    assert s.backend.api_key == "sekrit"


def test_api_key_in_world_readable_file_warns(tmp_path: Path) -> None:
    path = _write(user_config_path(), '[backend]\napi_key = "abc"\n')
    os.chmod(path, 0o644)
    s = load_settings(tmp_path, environ={})
    assert any("chmod 600" in w for w in s.warnings)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[index]\nmax_file_byte = 3\n", "unknown key 'index.max_file_byte'"),
        ("[indx]\n", "unknown section"),
        ('[index]\nmax_file_bytes = "big"\n', "expected an integer"),
        ("[index]\nmax_file_bytes = 0\n", "below the minimum"),
        ('[index]\nembed_backend = "gpu"\n', "not one of"),
        ("[index\n", "invalid TOML"),
        ("index = 3\n", "must be a table"),
    ],
)
def test_bad_config_gives_clear_message(tmp_path: Path, text: str, fragment: str) -> None:
    # In the user's own config a mistake is an error naming the file and key ...
    _write(user_config_path(), text)
    with pytest.raises(ConfigError, match=fragment):
        load_settings(tmp_path, environ={})
    user_config_path().unlink()
    # ... in a workspace file (a cloned repository) it is a warning, and the command still runs.
    _write(tmp_path / ".codectx.toml", text)
    settings = load_settings(tmp_path, environ={})
    assert any(fragment in w and "workspace config" in w for w in settings.warnings), settings.warnings
    assert settings.index.max_file_bytes == 1_000_000 and settings.index.embed_backend == "auto"


def test_bad_env_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="CODECTX_INDEX_NOPE"):
        load_settings(tmp_path, environ={"CODECTX_INDEX_NOPE": "1"})
    with pytest.raises(ConfigError, match="boolean"):
        load_settings(tmp_path, environ={"CODECTX_INDEX_EMBED": "maybe"})


def test_settings_are_immutable(tmp_path: Path) -> None:
    s = load_settings(tmp_path, environ={})
    with pytest.raises(AttributeError):
        s.index.model = "x"  # type: ignore[misc]


def test_typed_sections_match_the_schema(tmp_path: Path) -> None:
    """codectx.sections has one field per schema key, of the schema's type, and nothing else."""
    import dataclasses

    from codectx.schema import SCHEMA
    from codectx.sections import PYTHON_TYPES, SECTION_TYPES

    assert list(SECTION_TYPES) == list(SCHEMA)
    for name, cls in SECTION_TYPES.items():
        declared = {f.name: f.type for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        wanted = {key: PYTHON_TYPES[spec.type] for key, spec in SCHEMA[name].items()}
        assert declared == wanted, name
    s = load_settings(tmp_path, environ={})
    for name, keys in SCHEMA.items():
        section = getattr(s, name)
        assert isinstance(section, SECTION_TYPES[name])
        for key, spec in keys.items():
            assert getattr(section, key) == spec.default, f"{name}.{key}"
    assert s.as_dict()["backend"]["url"] is None and s.get("retriever.k") == 10


def test_config_show_cli(tmp_path: Path) -> None:
    _write(tmp_path / ".codectx.toml", "[retriever]\nk = 4\n")
    out = subprocess.run(
        [sys.executable, "-m", "codectx", "config", "show", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    import json

    data = json.loads(out.stdout)
    assert data["settings"]["retriever.k"]["value"] == 4
    assert data["settings"]["retriever.k"]["source"].startswith("workspace config")
    bad = subprocess.run(
        [sys.executable, "-m", "codectx", "config", "show", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "CODECTX_RETRIEVER_K": "zero"},
    )
    assert bad.returncode == 2
    assert "codectx: error:" in bad.stderr and "Traceback" not in bad.stderr


def test_config_show_prints_toml_that_reads_back_with_the_same_values(tmp_path: Path) -> None:
    import tomllib

    _write(tmp_path / ".codectx.toml", '[retriever]\nk = 4\n[index]\nexclude = ["gen/**", "a \\"b\\""]\n')
    out = subprocess.run(
        [sys.executable, "-m", "codectx", "config", "show", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    shown = tomllib.loads(out.stdout)
    settings = load_settings(tmp_path, environ={})
    for section, values in settings.as_dict().items():
        for key, value in values.items():
            if value is None:
                assert key not in shown[section] and f"# {key} = (unset)" in out.stdout
            elif key != "api_key":
                assert shown[section][key] == (list(value) if isinstance(value, tuple) else value), key
    assert shown["retriever"]["k"] == 4 and "None" not in out.stdout and "True" not in out.stdout


def test_the_no_backend_message_names_the_config_file_that_is_read(tmp_path: Path, monkeypatch) -> None:
    from codectx.backend.errors import BackendNotConfigured

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "elsewhere"))
    message = str(BackendNotConfigured())
    assert str(tmp_path / "elsewhere" / "codectx" / "config.toml") in message
    assert "~/.config" not in message


def test_bash_completion_offers_commands_and_options(tmp_path: Path) -> None:
    script = subprocess.run(
        [sys.executable, "-m", "codectx", "completion", "bash"], capture_output=True, text=True, check=True
    ).stdout
    (tmp_path / "c.bash").write_text(script)
    probe = (
        f"source {tmp_path / 'c.bash'}; "
        'COMP_WORDS=(codectx se); COMP_CWORD=1; _shtab_codectx; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(codectx search --gl); COMP_CWORD=2; _shtab_codectx; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(codectx m); COMP_CWORD=1; _shtab_codectx; echo "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].split() == ["search"] and out[1].split() == ["--glob"] and "mcp" in out[2].split()
