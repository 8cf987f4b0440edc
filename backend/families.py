"""Model families (Qwen coder, DeepSeek-Coder-V2, StarCoder2, CodeLlama) loaded from families.toml.

A family says how a model spells fill-in-the-middle, which strings stop it,
which special tokens must never reach the user, and whether it has a chat
template. The family is set in config (`backend.family`) or picked from the
served model's name; Qwen, the default served model's family, is the fallback.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from codectx.backend.errors import BackendError

DEFAULT_FAMILY = "qwen"


class FamilyError(BackendError):
    """families.toml is malformed or names an unknown family."""


@dataclass(frozen=True)
class Family:
    name: str
    match: tuple[str, ...]
    fim: str
    repo_header: str = ""
    repo_file: str = ""
    current_file: str = ""
    current_file_in_prefix: str = ""
    context_in_prefix: bool = False
    stop: tuple[str, ...] = ()
    special: tuple[str, ...] = ()
    chat: bool = False
    request: dict[str, Any] = field(default_factory=dict)

    @property
    def repo_level(self) -> bool:
        """True when the family has real repository tokens (retrieved files go before the FIM part)."""
        return bool(self.repo_header or self.repo_file) and not self.context_in_prefix

    def matches(self, model_name: str) -> bool:
        return any(re.search(p, model_name, re.IGNORECASE) for p in self.match)


_FIELDS = {
    "match": list,
    "fim": str,
    "repo_header": str,
    "repo_file": str,
    "current_file": str,
    "current_file_in_prefix": str,
    "context_in_prefix": bool,
    "stop": list,
    "special": list,
    "chat": bool,
    "request": dict,
}


def parse_families(data: dict[str, Any], source: str = "families.toml") -> dict[str, Family]:
    """Validate the TOML tables and build the Family objects (in file order)."""
    families: dict[str, Family] = {}
    for name, table in data.items():
        if not isinstance(table, dict):
            raise FamilyError(f"{source}: '{name}' must be a table")
        for key, value in table.items():
            expected = _FIELDS.get(key)
            if expected is None:
                raise FamilyError(f"{source}: [{name}] unknown key '{key}' (known: {', '.join(_FIELDS)})")
            if not isinstance(value, expected):
                raise FamilyError(f"{source}: [{name}] '{key}' must be a {expected.__name__}")
        fim = table.get("fim", "")
        if "{prefix}" not in fim or "{suffix}" not in fim:
            raise FamilyError(f"{source}: [{name}] 'fim' must contain {{prefix}} and {{suffix}}")
        families[name] = Family(
            name=name,
            match=tuple(table.get("match", ())),
            fim=fim,
            repo_header=table.get("repo_header", ""),
            repo_file=table.get("repo_file", ""),
            current_file=table.get("current_file", ""),
            current_file_in_prefix=table.get("current_file_in_prefix", ""),
            context_in_prefix=table.get("context_in_prefix", False),
            stop=tuple(table.get("stop", ())),
            special=tuple(table.get("special", ())),
            chat=table.get("chat", False),
            request=dict(table.get("request", {})),
        )
    return families


@cache
def builtin_families() -> dict[str, Family]:
    text = resources.files("codectx.backend").joinpath("families.toml").read_text("utf-8")
    return parse_families(tomllib.loads(text))


def get_family(name: str) -> Family:
    families = builtin_families()
    try:
        return families[name]
    except KeyError:
        raise FamilyError(f"unknown model family '{name}' (known: {', '.join(families)})") from None


def detect_family(model_name: str, configured: str = "auto") -> Family:
    """backend.family if set, else the first family whose pattern matches the model name."""
    if configured and configured != "auto":
        return get_family(configured)
    for family in builtin_families().values():
        if family.matches(model_name):
            return family
    return get_family(DEFAULT_FAMILY)
