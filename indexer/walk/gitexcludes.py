"""The user's global git excludes file (`core.excludesFile`): where it is, and its patterns.

git reads it for every repository of the user, so files it names (editor swap files, a personal
`scratch/`, `*.local.py`) are private to that user and must not be indexed either. Where it is:

- `core.excludesFile` from the user's own git config only: `$GIT_CONFIG_GLOBAL` when set, else
  `$XDG_CONFIG_HOME/git/config` (default `~/.config/git/config`) then `~/.gitconfig`, the later
  one winning as in git;
- else git's default, `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`).

Never the workspace's `.git/config`: a cloned repository is untrusted, and a repository-local
`excludesFile` could point anywhere on the machine (it would make us read, and report lines of,
any file it names). The config files are parsed here (an INI-ish `[core] excludesFile = ...`),
so git need not be installed and no git process runs per walk; `include.path` is not followed.

Like `.gitignore` files in this walk, the global excludes apply inside a git repository or not
(git and ripgrep apply them only inside one; a workspace without `.git` is still the user's).

A configured file that is missing, unreadable, binary or huge gives one warning and no rules;
the default file missing is the usual case and says nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from codectx.indexer.walk.ignorefiles import read_limited

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(\s+"[^"]*")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*+([A-Za-z][A-Za-z0-9-]*+)\s*+(?:=\s*+(.*))?$")
CONFIG_MAX_BYTES = 1 << 20  # a git config past this is not one: skipped with a warning


@dataclass(frozen=True)
class GlobalExcludes:
    """The excludes file in effect (None: none) and its pattern lines, with what went wrong."""

    path: Path | None
    patterns: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def user_config_files(env: Mapping[str, str]) -> list[Path]:
    """The user's git config files, lowest precedence first (never a repository's own)."""
    explicit = env.get("GIT_CONFIG_GLOBAL")
    if explicit:
        return [Path(explicit).expanduser()]
    home = Path(env.get("HOME") or Path.home())
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return [xdg / "git" / "config", home / ".gitconfig"]


def _value(raw: str) -> str:
    """A git config value: quotes removed, a trailing `#`/`;` comment outside quotes dropped."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append({"n": "\n", "t": "\t"}.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def excludes_setting(text: str) -> str | None:
    """The last `core.excludesFile` of one config file's text (section and key are case-blind)."""
    section = ""
    found: str | None = None
    for line in text.splitlines():
        head = _SECTION.match(line)
        if head:
            # `[core "x"]` is another section; `[core] excludesFile = x` on one line is valid git config.
            section = head.group(1).lower() + ("." if head.group(2) else "")
            line = head.group(3)
            if not line.strip():
                continue
        if section != "core":
            continue
        key = _KEY.match(line)
        if key and key.group(1).lower() == "excludesfile" and key.group(2) is not None:
            found = _value(key.group(2).rstrip())
    return found


def locate(env: Mapping[str, str], root: Path) -> tuple[Path | None, bool, list[str]]:
    """(the excludes file, whether a config named it, warnings about the config files)."""
    warnings: list[str] = []
    setting: str | None = None
    for config in user_config_files(env):
        data, problem = read_limited(config, CONFIG_MAX_BYTES)
        if problem and problem != "missing":
            warnings.append(f"git config {config}: {problem}; its core.excludesFile is not used")
            continue
        value = excludes_setting(data) if data is not None else None
        if value is not None:
            setting = value
    if setting == "":
        return None, True, warnings  # `excludesFile =` switches the global excludes off
    if setting is not None:
        path = Path(setting).expanduser()
        # git reads a relative excludesFile from the top of the work tree it runs in.
        return (path if path.is_absolute() else root / path), True, warnings
    home = Path(env.get("HOME") or Path.home())
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return xdg / "git" / "ignore", False, warnings


def global_excludes(root: Path, env: Mapping[str, str] | None = None) -> GlobalExcludes:
    """The global excludes in effect for a walk of `root` (env: os.environ)."""
    path, configured, warnings = locate(os.environ if env is None else env, root)
    if path is None:
        return GlobalExcludes(None, (), tuple(warnings))
    text, problem = read_limited(path)
    real, top = os.path.realpath(path), os.path.realpath(root)
    if text is not None and str(path).startswith(str(root)) and not real.startswith(top + os.sep):
        # A relative excludesFile is read in the work tree: a link there may not lead out of it.
        text, problem = None, "a link that leads outside the workspace"
    if text is None:
        if problem and (configured or problem != "missing"):
            warnings.append(f"global git excludes {path}: {problem}; not applied")
        return GlobalExcludes(path, (), tuple(warnings))
    return GlobalExcludes(path, tuple(text.splitlines()), tuple(warnings))
