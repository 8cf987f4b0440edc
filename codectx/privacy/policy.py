"""The never-index / never-send policy: the files whose content codectx never indexes nor sends.

One policy for both: the indexer's discovery skips these files ("secret-file"), and the egress
gate refuses a request that carries any of them, so a file the index should not hold can never
reach the model server by another way (an open editor buffer, a path given on the command line).
The patterns, in gitignore syntax (a pattern without "/" matches a file name at any depth):

- `SECRET_FILES`: files that hold credentials (.env, *.pem, id_rsa, credentials*.json, ...);
- the user's `index.never_index` (may come from the workspace's .codectx.toml: it can only add)
  and `privacy.never_send` (user level only).

Both lists can only add: a negated pattern (`!x`) refuses nothing less (it is left out), so no
setting or ignore file can make a listed file indexable or sendable. Patterns that do not compile
are left out too (discovery warns about those in `index.never_index`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pathspec

if TYPE_CHECKING:
    from codectx.settings import Settings

# Files that hold credentials. Add to it rather than remove: it is the floor of both lists.
SECRET_FILES: tuple[str, ...] = (
    ".env", ".env.*", ".env-*", ".env_*", "*.env", ".envrc", "**/.envs/**", "*.pem", "*.key", "*.p12",
    "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".npmrc", ".pypirc", ".netrc", "_netrc", ".pgpass",
    "pgpass.conf",
    ".git-credentials", ".htpasswd", "*.tfstate", "*.tfstate.*", "*.tfvars", "*.tfvars.json", "*.kdbx",
    "kubeconfig", "*.kubeconfig", "**/.kube/config", "credentials*.json", "**/.aws/credentials",
    "**/.docker/config.json", "service-account*.json", "*service-account*.json", "*service_account*.json",
    "*.ovpn", "secrets.yml", "secrets.yaml", "secrets.json", "secrets.toml", ".vault-token", ".my.cnf",
    ".s3cfg", ".boto", ".dockercfg", ".dev.vars", "local.settings.json", "**/.ssh/*", ".git/",
    "cookies.txt", "cookies.sqlite*", "*.cookiejar", "cookiejar.txt", "cookiejar.json",
    "**/.bundle/config", "**/.gem/credentials", "**/.cargo/credentials", "**/.cargo/credentials.toml",
    "*.credentials", "application_default_credentials.json", "**/gcloud/credentials.db",
    "**/gcloud/access_tokens.db", "**/gcloud/legacy_credentials/", "/auth.json", "**/.composer/auth.json",
    "**/composer/auth.json", ".terraformrc", "terraform.rc",
)  # fmt: skip


def policy_patterns(settings: Settings | None) -> tuple[str, ...]:
    """Every pattern in force: the built-in list, then `index.never_index`, then `privacy.never_send`."""
    patterns = list(SECRET_FILES)
    if settings is not None:
        patterns += list(settings.index.never_index) + list(settings.privacy.never_send)
    return tuple(dict.fromkeys(patterns))


@dataclass(frozen=True)
class SecretFilePolicy:
    """The compiled policy: `refuses` for the walk's hot path, `pattern_for` to say why."""

    patterns: tuple[str, ...]  # the positive, valid patterns, in order
    any_of: pathspec.GitIgnoreSpec  # all of them in one spec
    each: tuple[tuple[str, pathspec.GitIgnoreSpec], ...]

    def refuses(self, path: str) -> bool:
        """True if a workspace-relative path is never indexed or sent."""
        return any(self.any_of.match_file(form) for form in _forms(path))

    def pattern_for(self, path: str) -> str | None:
        """The first pattern a workspace-relative path matches, or None if it may be indexed and sent.
        Matched as written, in lower case (`.ENV` is `.env` to a case-insensitive file system, macOS's
        and Windows' defaults) and with each name's trailing spaces and dots dropped (`.env ` is
        `.env` to Windows, and a credential file by any spelling)."""
        for form in _forms(path):
            if self.any_of.match_file(form):
                return next((p for p, spec in self.each if spec.match_file(form)), self.patterns[0])
        return None


@functools.lru_cache(maxsize=32)
def compiled(patterns: tuple[str, ...]) -> SecretFilePolicy:
    each: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for pattern in patterns:
        if pattern.lstrip().startswith("!"):
            continue  # a negation would allow what an earlier pattern refuses
        try:
            each.append((pattern, pathspec.GitIgnoreSpec.from_lines([pattern])))
        except Exception:  # not a valid pattern (`\`, `[z-a]`): it matches nothing
            continue
    kept = tuple(p for p, _spec in each)
    return SecretFilePolicy(kept, pathspec.GitIgnoreSpec.from_lines(kept), tuple(each))


def policy_for(settings: Settings | None) -> SecretFilePolicy:
    return compiled(policy_patterns(settings))


def is_never_index(path: str, settings: Settings | None = None) -> bool:
    """True if a workspace-relative path is a file whose content is never indexed or sent."""
    return policy_for(settings).refuses(path)


def never_send_match(path: str, settings: Settings | None) -> str | None:
    """The policy pattern a workspace-relative path matches, or None if it may be sent."""
    return policy_for(settings).pattern_for(path)


# Code points HFS+ ignores in names (`.g\u200cit` is `.git` there), as git itself lists them.
_HFS_CHARS = "[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]"
_HFS_IGNORED = re.compile(_HFS_CHARS)
# An NTFS alternate data stream after a name: `.env:stream`, `.git::$INDEX_ALLOCATION`.
_STREAM = re.compile(r":[^/]*$")
# What file_system_name would change (most paths have none of it: one search, no rewrite).
_ODD = re.compile(r"[ .](?:/|$)|:|" + _HFS_CHARS)


def file_system_name(part: str) -> str:
    """One path part as a case-insensitive file system reads it: without the code points HFS+
    ignores, an NTFS stream suffix, or trailing dots and spaces (Windows drops them)."""
    bare = _STREAM.sub("", _HFS_IGNORED.sub("", part)).rstrip(" .")
    return bare or part


def is_dot_git(part: str) -> bool:
    """`part` names the repository's `.git` folder on some file system: `.git`, `.GIT.`, `.g\u200cit`
    (HFS+), `GIT~1` (NTFS's short name)."""
    name = file_system_name(part).lower()
    return name == ".git" or bool(re.fullmatch(r"git~\d+", name))


# A backup copy's suffixes (editors', patch's, people's): the copy is judged as the file it copies.
_BACKUP = re.compile(r"(?:~|\.(?:orig|bak|old|save|backup))+$", re.IGNORECASE)
# How file managers, editors and downloads name a copy: Finder's `.env copy`, `secrets copy 2.json`,
# Explorer's `.env - Copy`, `x - Copy (2).json`, a download's `credentials (1).json`, Drive's `Copy of
# x`, Emacs' auto-save `#.env#` and lock `.#.env`. Each is judged as the file it copies.
_COPY_MARK = re.compile(r"(?i)(?: copy(?: \d+)?| - copy(?: \(\d+\))?| \(\d+\))(?=(?:\.[^./ ]*)?$)")
_COPY_WRAP = re.compile(r"(?i)^(?:copy of |#|\.#)(.+?)#?$")


def _copied(name: str) -> str:
    """The name a copy's name copies (itself when it is no copy)."""
    wrapped = _COPY_WRAP.match(name)
    if wrapped is not None:
        name = wrapped.group(1)
    return _COPY_MARK.sub("", name)


def _forms(path: str) -> tuple[str, ...]:
    """The spellings a path is matched in (see pattern_for); most paths have one."""
    norm = _norm(path)
    if not norm:
        return ()
    forms = [norm, norm.lower()]
    if _ODD.search(norm):
        trimmed = "/".join(file_system_name(part) for part in norm.split("/"))
        forms += [trimmed, trimmed.lower()]
    original = _BACKUP.sub("", norm)
    head, _, name = original.rpartition("/")
    copied = _copied(name)
    if copied and copied != name:
        original = f"{head}/{copied}" if head else copied
    if original != norm and original.rsplit("/", 1)[-1]:
        forms += _forms(original)  # a copy holds what the file held: `auth.json.bak`, `.env~`, `.env copy`
    return tuple(dict.fromkeys(forms))


def _norm(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")
