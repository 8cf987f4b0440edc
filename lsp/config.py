"""Editor settings → one validated Settings object per workspace folder.

Layers, lowest first: defaults, the user's config.toml, the folder's
`.codectx.toml` (untrusted), `CODECTX_*` environment variables, the editor's
user-level settings (`initializationOptions` and the payload of
`workspace/didChangeConfiguration`: trusted, they are the user's own), then
folder-scoped settings the server pulls with `workspace/configuration`
(untrusted: a repository can ship them, so privacy-weakening keys and keys
that choose where codectx writes or which model it loads are
dropped with a warning).

A bad value never stops the server: it is dropped, reported once, and the
lower layers (ultimately the defaults) apply.

Accepted shapes of editor settings: `{"codectx": {"backend": {"url": ...}}}`,
`{"backend": {"url": ...}}` or flat `{"backend.url": ...}`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codectx.errors import ConfigError
from codectx.schema import SCHEMA, user_level_only, why_user_level
from codectx.settings import (
    WORKSPACE_FILE,
    Layer,
    Settings,
    env_layer,
    read_toml,
    resolve,
    user_config_path,
)

SectionData = dict[str, dict[str, Any]]
_UNSET = object()


@dataclass
class ConfigResult:
    settings: Settings
    problems: list[str] = field(default_factory=list)


def normalize(raw: Any, source: str) -> tuple[SectionData, list[str]]:
    """Turn any accepted shape into {section: {key: value}}, dropping what is not a setting."""
    problems: list[str] = []
    if raw is None:
        return {}, problems
    if not isinstance(raw, Mapping):
        return {}, [f"{source}: settings must be an object, got {type(raw).__name__}"]
    if "codectx" in raw and isinstance(raw["codectx"], Mapping):
        raw = raw["codectx"]
    out: SectionData = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            continue
        if "." in name:
            section, key = name.split(".", 1)
            out.setdefault(section, {})[key] = value
        elif isinstance(value, Mapping):
            out.setdefault(name, {}).update(value)
        else:
            problems.append(f"{source}: '{name}' is not a setting (expected section.key)")
    return out, problems


def validate(data: SectionData, source: str, trusted: bool) -> tuple[SectionData, list[str]]:
    """Keep only known, well-typed keys; untrusted layers lose privacy-weakening keys."""
    from codectx.settings import coerce

    clean: SectionData = {}
    problems: list[str] = []
    for section, body in data.items():
        if section not in SCHEMA:
            problems.append(f"{source}: unknown section '{section}' (known: {', '.join(sorted(SCHEMA))})")
            continue
        for key, raw in body.items():
            if key not in SCHEMA[section]:
                problems.append(f"{source}: unknown key '{section}.{key}'")
                continue
            if raw is None and SCHEMA[section][key].type != "optional_str":
                continue  # editors send null for "unset"; keep the lower layer
            try:
                value = coerce(section, key, raw, source, trusted)
            except ConfigError as exc:
                problems.append(f"{exc}; using the default")
                continue
            spec = SCHEMA[section][key]
            if not trusted and user_level_only(spec, value):
                problems.append(
                    f"{source}: ignored {section}.{key}: {why_user_level(spec)} are only accepted "
                    "from your user-level settings"
                )
                continue
            clean.setdefault(section, {})[key] = value
    return clean, problems


def _file_layer(
    path: Path, name: str, trusted: bool, problems: list[str], within: Path | None = None
) -> Layer | None:
    try:
        data = read_toml(path, name, within)
    except ConfigError as exc:
        problems.append(str(exc))
        return None
    if not data:
        return None
    clean, issues = validate(data, f"{name} ({path})", trusted)
    problems.extend(issues)
    return Layer(f"{name} ({path})", clean, trusted=True)


def build_settings(
    root: Path | None,
    editor_user: Any = None,
    editor_folder: Any = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
) -> ConfigResult:
    """Resolve settings for one folder; never raises for bad values, reports them instead."""
    problems: list[str] = []
    layers: list[Layer] = []
    user_layer = _file_layer(user_config or user_config_path(), "user config", True, problems)
    if user_layer:
        layers.append(user_layer)
    if root is not None:
        ws_layer = _file_layer(root / WORKSPACE_FILE, "workspace config", False, problems, root)
        if ws_layer:
            layers.append(ws_layer)
    try:
        layers.append(env_layer(os.environ if environ is None else environ))
    except ConfigError as exc:
        problems.append(str(exc))
    user_data: SectionData = {}
    for raw, source, trusted in (
        (editor_user, "editor settings", True),
        (editor_folder, "editor folder settings", False),
    ):
        data, issues = normalize(raw, source)
        problems.extend(issues)
        if trusted:
            user_data = data
        else:
            # Editors answer folder-scoped queries with user values merged in; a privacy key that
            # merely repeats the user's own value is no attempt to override it.
            data = {
                section: {k: v for k, v in body.items() if user_data.get(section, {}).get(k, _UNSET) != v}
                for section, body in data.items()
            }
        clean, issues = validate(data, source, trusted)
        problems.extend(issues)
        if clean:
            layers.append(Layer(source, clean))
    try:
        settings = resolve(root, layers)
    except ConfigError as exc:  # pragma: no cover - layers are pre-validated
        problems.append(str(exc))
        settings = resolve(root, [])
    problems.extend(w for w in settings.warnings if w not in problems)
    return ConfigResult(settings, problems)
