"""Egress policy: which files may never contribute to a request.

The never-send list is the indexer's never-index list (secret-bearing files
such as .env, *.pem, id_rsa, credentials*.json, plus `index.never_index`)
and the user's `privacy.never_send` globs, all in gitignore syntax.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pathspec

if TYPE_CHECKING:
    from codectx.settings import Settings

try:
    from codectx.indexer.discovery import NEVER_INDEX as _INDEXER_NEVER_INDEX
except ImportError:  # the indexer is optional for the privacy package; keep the send path safe without it
    _INDEXER_NEVER_INDEX = ()

# Our own copy: the floor, whatever the indexer's list holds.
BUILTIN_NEVER_SEND: tuple[str, ...] = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".npmrc", ".pypirc", ".netrc", "_netrc", ".pgpass",
    ".git-credentials", ".htpasswd", "*.tfstate", "*.tfstate.*", "*.tfvars", "*.tfvars.json", "*.kdbx",
    "kubeconfig", "*.kubeconfig", "**/.kube/config", "credentials*.json", "**/.aws/credentials",
    "**/.docker/config.json", "service-account*.json", "*service-account*.json", "*service_account*.json",
    "*.ovpn", "secrets.yml", "secrets.yaml",
)  # fmt: skip


def never_send_patterns(settings: Settings | None) -> tuple[str, ...]:
    patterns = list(dict.fromkeys((*BUILTIN_NEVER_SEND, *_INDEXER_NEVER_INDEX)))
    if settings is not None:
        patterns += list(settings.index.never_index) + list(settings.privacy.never_send)
    return tuple(patterns)


@functools.lru_cache(maxsize=32)
def _specs(patterns: tuple[str, ...]) -> tuple[tuple[str, pathspec.GitIgnoreSpec], ...]:
    return tuple((p, pathspec.GitIgnoreSpec.from_lines([p])) for p in patterns)


@functools.lru_cache(maxsize=32)
def _any_of(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    """One spec of every pattern but negations: it matches a path exactly when one of the patterns
    does on its own (a lone `!pattern` matches nothing, so leaving negations out changes nothing)."""
    return pathspec.GitIgnoreSpec.from_lines([p for p in patterns if not p.startswith("!")])


def _norm(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def never_send_match(path: str, settings: Settings | None) -> str | None:
    """The never-send glob a workspace-relative path matches, or None if it may be sent."""
    norm = _norm(path)
    if not norm:
        return None
    patterns = never_send_patterns(settings)
    if not _any_of(patterns).match_file(norm):
        return None  # the common case in one match instead of one per pattern (~50)
    for pattern, spec in _specs(patterns):
        if spec.match_file(norm):
            return pattern
    return None
