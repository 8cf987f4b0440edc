"""One immutable Settings object, resolved once and passed in.

Each section is a typed dataclass (codectx.sections): `settings.backend.url`
is `str | None` to mypy as at run time.

Layers, lowest first: built-in defaults, the user's config file
(`$XDG_CONFIG_HOME/codectx/config.toml`), the workspace's `.codectx.toml`,
`CODECTX_*` environment variables, then command-line flags (or an editor's
settings). The workspace layer is untrusted: keys marked `privacy` or
`trusted` in the schema are ignored there, with a warning, so a cloned
repository cannot redirect code to its own server, turn redaction off, put
the index elsewhere or have its own model loaded; its unknown keys and bad
values are warnings too (the user's own config keeps them errors).

The API key is bound to the server it was configured for: the backend.url in
effect in the layer that set the key (that layer's own url, else the one
below it). A url from a higher layer with another origin gets no key
(`Settings.api_key_for`), and a warning says so.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codectx.errors import ConfigError
from codectx.schema import SCHEMA, Key, user_level_only, why_user_level
from codectx.sections import (
    SECTION_TYPES,
    BackendSettings,
    IndexSettings,
    LspSettings,
    PrivacySettings,
    RetrieverSettings,
)

WORKSPACE_FILE = ".codectx.toml"


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def user_config_path() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "codectx" / "config.toml"


def state_dir() -> Path:
    """Where the audit log and the install secret live."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "codectx"


def cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache") / "codectx"


@dataclass(frozen=True)
class Layer:
    """One source of values: `data` is {section: {key: value}}."""

    name: str
    data: Mapping[str, Mapping[str, Any]]
    trusted: bool = True


@dataclass(frozen=True)
class Settings:
    """Every section's resolved values (typed: codectx.sections), where each came from, and warnings."""

    root: Path | None
    index: IndexSettings
    retriever: RetrieverSettings
    privacy: PrivacySettings
    backend: BackendSettings
    lsp: LspSettings
    sources: Mapping[str, str]
    warnings: tuple[str, ...] = field(default=())
    key_url: str | None = None  # the backend.url the API key was configured for

    def api_key_for(self, url: str | None) -> str | None:
        """The API key, if `url` has the origin it was configured for; else None."""
        key = self.backend.api_key
        if not key or not url or origin(url) != origin(self.key_url):
            return None
        return str(key)

    def key_withheld(self) -> str | None:
        """Why the configured API key will not be sent to backend.url, or None."""
        url = self.backend.url
        if not self.backend.api_key or not url or self.api_key_for(url) is not None:
            return None
        where = self.sources.get("backend.api_key", "?")
        bound = f"for {origin(self.key_url)}" if self.key_url else "with no backend.url beside it"
        return (
            f"the API key from {where} was configured {bound}, not for {origin(url)} (backend.url from "
            f"{self.sources.get('backend.url', '?')}); it is not sent there. Set the key in the same "
            "place as the url (or CODECTX_API_KEY with CODECTX_BACKEND_URL)"
        )

    def section(self, name: str) -> Any:
        """One section by its schema name (`settings.section("backend")` is `settings.backend`)."""
        if name not in SECTION_TYPES:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, dotted: str) -> Any:
        section, key = dotted.split(".", 1)
        return getattr(self.section(section), key)

    def index_dir(self) -> Path:
        """The index folder for this workspace."""
        configured = self.index.index_dir
        if configured:
            path = Path(os.path.expanduser(configured))
            if not path.is_absolute() and self.root is not None:
                path = self.root / path
            return path
        if self.root is None:
            raise ConfigError("no workspace root and no index.index_dir configured")
        default = self.root / ".codectx"
        if os.path.islink(default):
            # A cloned repository may ship the link: codectx would write its index into another
            # project's index (overwriting it) or read that project's code as this one's.
            raise ConfigError(
                f"{default} is a link (to {os.readlink(default)}); a workspace cannot choose where "
                "codectx reads or writes its index. Remove the link, or set index.index_dir in your "
                "user config"
            )
        return default

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {name: self.section(name).as_dict() for name in SECTION_TYPES}

    def with_overrides(self, overrides: Mapping[str, Any], source: str = "override") -> Settings:
        """A copy with some dotted keys replaced (validated like any layer)."""
        values = self.as_dict()
        sources = dict(self.sources)
        for dotted, raw in overrides.items():
            section, key = _split_key(dotted, source)
            value = coerce(section, key, raw, source)
            if SCHEMA[section][key].accumulates:  # added to, as by any layer (schema.Key.accumulates)
                value = list(dict.fromkeys([*values[section][key], *value]))
            values[section][key] = value
            sources[dotted] = source
        key_url = values["backend"]["url"] if "backend.api_key" in overrides else self.key_url
        return _build(self.root, values, sources, self.warnings, key_url)


def origin(url: str | None) -> str | None:
    """scheme://host:port of a URL (default ports filled in), None when there is none."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:
        return url
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def _split_key(dotted: str, source: str) -> tuple[str, str]:
    if "." not in dotted:
        raise ConfigError(f"{source}: '{dotted}' is not a setting (expected section.key)")
    section, key = dotted.split(".", 1)
    if section not in SCHEMA:
        raise ConfigError(f"{source}: unknown section '{section}' (known: {', '.join(sorted(SCHEMA))})")
    if key not in SCHEMA[section]:
        known = ", ".join(sorted(SCHEMA[section]))
        raise ConfigError(f"{source}: unknown key '{section}.{key}' (known in [{section}]: {known})")
    return section, key


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"'{raw}' is not a boolean (use true or false)")


def coerce(section: str, key: str, raw: Any, source: str, trusted: bool = True) -> Any:
    """Check and convert one value; strings (env vars, flags) are parsed.

    `trusted` False (a workspace's or an editor folder's settings): a number above the key's
    `workspace_max` is out of range too."""
    spec: Key = SCHEMA[section][key]
    where = f"{source}: {section}.{key}"
    try:
        value = _convert(spec, raw)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if spec.choices and value not in spec.choices:
        raise ConfigError(f"{where}: '{value}' is not one of {', '.join(spec.choices)}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if spec.min is not None and value < spec.min:
            raise ConfigError(f"{where}: {value} is below the minimum {spec.min:g}")
        if spec.max is not None and value > spec.max:
            raise ConfigError(f"{where}: {value} is above the maximum {spec.max:g}")
        if not trusted and spec.workspace_max is not None and value > spec.workspace_max:
            cap = int(spec.workspace_max) if float(spec.workspace_max).is_integer() else spec.workspace_max
            raise ConfigError(
                f"{where}: {value} is above {cap}, the most a workspace may set (a larger value only "
                "from your user config, environment or flags)"
            )
    return value


def _convert(spec: Key, raw: Any) -> Any:
    kind = spec.type
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str):
            return _parse_bool(raw)
        raise TypeError(f"expected true or false, got {raw!r}")
    if kind == "int":
        if isinstance(raw, bool):
            raise TypeError(f"expected an integer, got {raw!r}")
        if isinstance(raw, int):
            return raw
        if isinstance(raw, str):
            try:
                return int(raw.strip().replace("_", ""))
            except ValueError:
                raise ValueError(f"expected an integer, got '{raw}'") from None
        raise TypeError(f"expected an integer, got {raw!r}")
    if kind == "float":
        if isinstance(raw, bool):
            raise TypeError(f"expected a number, got {raw!r}")
        if isinstance(raw, (int, float)):
            return float(raw)
        if isinstance(raw, str):
            try:
                return float(raw.strip())
            except ValueError:
                raise ValueError(f"expected a number, got '{raw}'") from None
        raise TypeError(f"expected a number, got {raw!r}")
    if kind == "list":
        if isinstance(raw, str):
            return [part.strip() for part in raw.split(",") if part.strip()]
        if isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw):
            return list(raw)
        raise TypeError(f"expected a list of strings, got {raw!r}")
    if kind in {"str", "optional_str", "path"}:
        if raw is None and kind == "optional_str":
            return None
        if isinstance(raw, str):
            if kind == "optional_str" and raw == "":
                return None
            return raw
        raise TypeError(f"expected a string, got {raw!r}")
    raise TypeError(f"unknown setting type {kind}")


MAX_CONFIG_BYTES = 1 << 20  # a settings file is a few lines; more is not one


def read_toml(path: Path, name: str, within: Path | None = None) -> dict[str, Any]:
    """A settings file's tables; {} when it does not exist. ConfigError when it cannot be one:
    not a regular file (a FIFO would block, a link to /dev/zero never ends), over
    MAX_CONFIG_BYTES, not UTF-8, invalid TOML, or (`within`: the workspace's file) a link that
    leads out of that folder."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{name} ({path}): cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{name} ({path}): not a regular file")
    if within is not None:
        real, folder = os.path.realpath(path), os.path.realpath(within)
        if os.path.commonpath([real, folder]) != folder:
            raise ConfigError(f"{name} ({path}): a link that leads outside the workspace")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{name} ({path}): over {MAX_CONFIG_BYTES // 1024} KiB, not a settings file")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        data = tomllib.loads(raw[:MAX_CONFIG_BYTES].decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{name} ({path}): not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name} ({path}): invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{name} ({path}): cannot read: {exc.strerror}") from None
    for section, body in data.items():
        if not isinstance(body, dict):
            raise ConfigError(
                f"{name} ({path}): '{section}' must be a table like [{section}], not a plain value"
            )
    return data


def env_layer(environ: Mapping[str, str]) -> Layer:
    data: dict[str, dict[str, Any]] = {}
    for name, value in environ.items():
        if not name.startswith("CODECTX_"):
            continue
        rest = name[len("CODECTX_") :].lower()
        if rest == "api_key":
            data.setdefault("backend", {})["api_key"] = value
            continue
        for section in SCHEMA:
            if rest.startswith(section + "_"):
                key = rest[len(section) + 1 :]
                if key not in SCHEMA[section]:
                    raise ConfigError(f"environment variable {name}: unknown key '{section}.{key}'")
                data.setdefault(section, {})[key] = value
                break
    return Layer("environment", data)


def find_workspace_root(start: Path) -> Path:
    """The nearest folder from `start` up holding .git, .codectx.toml or an index (.codectx/),
    else `start`: commands run in a subfolder act on its workspace, as git's do.

    The walk stops below the home folder: a home kept under git (dotfiles) must not turn every
    project without its own .git into one workspace holding the whole home.
    """
    start = start.resolve()
    home = Path(os.path.expanduser("~")).resolve()
    for folder in [start, *start.parents]:
        if folder != start and (folder == home or folder in home.parents):
            break
        if (folder / ".git").exists() or (folder / WORKSPACE_FILE).exists() or (folder / ".codectx").is_dir():
            return folder
    return start


def resolve(root: Path | None, layers: list[Layer]) -> Settings:
    values: dict[str, dict[str, Any]] = {
        section: {key: spec.default for key, spec in keys.items()} for section, keys in SCHEMA.items()
    }
    sources: dict[str, str] = {
        f"{section}.{key}": "default" for section, keys in SCHEMA.items() for key in keys
    }
    warnings: list[str] = []
    key_url: str | None = None
    for layer in layers:
        for section, body in layer.data.items():
            if section not in SCHEMA:
                problem = f"{layer.name}: unknown section [{section}] (known: {', '.join(sorted(SCHEMA))})"
                if layer.trusted:
                    raise ConfigError(problem)
                warnings.append(problem + "; ignored")
                continue
            for key, raw in body.items():
                try:
                    _split_key(f"{section}.{key}", layer.name)
                    value = coerce(section, key, raw, layer.name, layer.trusted)
                except ConfigError as exc:
                    if layer.trusted:
                        raise
                    # A cloned repository's config must not stop every command: warn and skip.
                    warnings.append(f"{exc}; ignored")
                    continue
                spec = SCHEMA[section][key]
                if not layer.trusted and user_level_only(spec, value):
                    warnings.append(
                        f"{layer.name}: ignored {section}.{key}: {why_user_level(spec)} are only read "
                        "from your user config, environment or flags"
                    )
                    continue
                dotted = f"{section}.{key}"
                if spec.accumulates and sources[dotted] != "default":
                    value = list(dict.fromkeys([*values[section][key], *value]))
                    sources[dotted] = f"{sources[dotted]} + {layer.name}"
                else:
                    sources[dotted] = layer.name
                values[section][key] = value
        if "api_key" in layer.data.get("backend", {}) and layer.trusted:
            key_url = values["backend"]["url"]
    settings = _build(root, values, sources, tuple(warnings), key_url)
    withheld = settings.key_withheld()
    if withheld:
        settings = replace(settings, warnings=(*warnings, withheld))
    return settings


def _build(
    root: Path | None,
    values: Mapping[str, Mapping[str, Any]],
    sources: Mapping[str, str],
    warnings: tuple[str, ...],
    key_url: str | None,
) -> Settings:
    """Settings from resolved {section: {key: value}}; every schema section and key must be there."""
    return Settings(
        root=root,
        index=IndexSettings(**values["index"]),
        retriever=RetrieverSettings(**values["retriever"]),
        privacy=PrivacySettings(**values["privacy"]),
        backend=BackendSettings(**values["backend"]),
        lsp=LspSettings(**values["lsp"]),
        sources=sources,
        warnings=warnings,
        key_url=key_url,
    )


def load_settings(
    root: Path | None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_config: Path | None = None,
) -> Settings:
    """Resolve settings for a workspace (or none) from every layer."""
    environ = os.environ if environ is None else environ
    user_path = user_config or user_config_path()
    layers: list[Layer] = []
    user_data = read_toml(user_path, "user config")
    warnings: list[str] = []
    if user_data:
        layers.append(Layer(f"user config ({user_path})", user_data))
        if user_data.get("backend", {}).get("api_key") and _readable_by_others(user_path):
            warnings.append(
                f"{user_path} holds an API key and is readable by other users; run: chmod 600 {user_path}"
            )
    if root is not None:
        ws_path = root / WORKSPACE_FILE
        try:
            ws_data = read_toml(ws_path, "workspace config", within=root)
        except ConfigError as exc:
            warnings.append(f"{exc}; the file is ignored")
            ws_data = {}
        if ws_data:
            layers.append(Layer(f"workspace config ({ws_path})", ws_data, trusted=False))
    layers.append(env_layer(environ))
    if overrides:
        flag_data: dict[str, dict[str, Any]] = {}
        for dotted, raw in overrides.items():
            if raw is None:
                continue
            section, key = _split_key(dotted, "command line")
            flag_data.setdefault(section, {})[key] = raw
        layers.append(Layer("command line", flag_data))
    settings = resolve(root, layers)
    if warnings:
        every = (*warnings, *settings.warnings)
        settings = replace(settings, warnings=every)
    return settings


def _readable_by_others(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IRGRP | stat.S_IROTH))
