"""A disk cache of the shipped secret rule set, so that a process starts without rebuilding it.

Building the default rules (`rules.default_rules`) costs 0.3-0.5 s of CPU on the 2-core
development machine: two TOML parses (our rules.toml and betterleaks' ~200 KB file), the
translation of betterleaks' filters, and RE2 compiles of ~520 rules' patterns (about half of
it). The language server pays this before its first completion can be redacted (issue 22).

`cached(own, corpus, build)` keys a `marshal` file by a digest of everything the rule set is
derived from: the bytes of both rule files, the source of the modules that translate them
(`rules.py`, `corpus.py`, this one) and the RE2 extension installed. On a hit the rules are
rebuilt from plain values, each pattern wrapped in a `LazyRegex` that compiles on first use: a
scan compiles only the rules its keywords select (5 rules have none). A miss builds the rules
the slow way, which compiles and so checks every pattern, and only then writes the file
(atomically): a pattern read back is known to compile with this RE2. A file that cannot be read
or does not hold what this module writes counts as a miss and is replaced.

The file lives in the user's cache folder (settings.cache_dir), as trusted as their `.pyc`
files (gencache.py keeps lsprotocol's generated code next to it): nothing from a workspace
reaches it, and the rule set's version string, which every audit entry records, is the one the
full build computed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import os
import tempfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import re2

from codectx.privacy.errors import RulesError
from codectx.privacy.rules import Rule, RuleSet, build

log = logging.getLogger(__name__)

FORMAT = b"codectx-rules-1"
MAX_FILE_BYTES = 16 * 2**20  # the shipped set is ~0.3 MB; a larger file is not ours
_ONE = ("regex", "context", "path")  # Rule fields holding one compiled pattern (or None)
_MANY = ("reject",)  # Rule fields holding a tuple of them


class LazyRegex:
    """An RE2 pattern compiled the first time it is used; answers what the compiled one does."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str | bytes) -> None:
        self.pattern = pattern
        self._compiled: Any = None

    def compiled(self) -> Any:
        regex = self._compiled
        if regex is None:  # two threads may both compile; either result is the same pattern
            try:
                regex = self._compiled = re2.compile(self.pattern)
            except re2.error as exc:  # only a changed RE2 could do this: the digest names the build
                raise RulesError(f"cached rule pattern no longer compiles: {exc}") from None
        return regex

    def search(self, *args: Any) -> Any:
        return self.compiled().search(*args)

    def finditer(self, *args: Any) -> Any:
        return self.compiled().finditer(*args)

    def match(self, *args: Any) -> Any:
        return self.compiled().match(*args)

    def fullmatch(self, *args: Any) -> Any:
        return self.compiled().fullmatch(*args)

    @property
    def groupindex(self) -> Any:
        return self.compiled().groupindex

    @property
    def groups(self) -> int:
        return int(self.compiled().groups)

    def __repr__(self) -> str:
        state = "compiled" if self._compiled is not None else "not compiled yet"
        return f"LazyRegex({self.pattern!r}, {state})"


def default_path(digest: str) -> Path:
    from codectx.settings import cache_dir

    return cache_dir() / f"rules-{digest}.marshal"


def digest(own: bytes, corpus: bytes | None) -> str:
    """What the rule set is derived from; any change gives another file name."""
    from codectx.privacy import corpus as corpus_module
    from codectx.privacy import rules as rules_module

    h = hashlib.sha256(FORMAT)
    for part in (own, corpus if corpus is not None else b"<no corpus>"):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    for module in (rules_module, corpus_module):
        h.update(Path(str(module.__file__)).read_bytes())
    h.update(Path(__file__).read_bytes())
    extension = getattr(re2, "_re2", None)
    where = getattr(extension, "__file__", None) or str(re2.__file__)
    with contextlib.suppress(OSError):
        stat = os.stat(where)
        h.update(f"{where}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def cached(
    own: bytes, corpus: bytes | None, build_rules: Callable[[], RuleSet], path: Path | None = None
) -> RuleSet:
    """The rule set `build_rules()` would return for these rule files, from the cache if it holds it."""
    if path is None:
        try:
            path = default_path(digest(own, corpus))
        except OSError as exc:  # a module's source unreadable: build, do not cache
            log.debug("rule cache off: %s", exc)
            return build_rules()
    rules = read(path)
    if rules is not None:
        return rules
    rules = build_rules()
    write(path, rules)
    return rules


def read(path: Path) -> RuleSet | None:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    try:
        if len(data) > MAX_FILE_BYTES:
            raise ValueError("too large")
        return restore(marshal.loads(data))
    except Exception as exc:  # damage or foreign content (any type marshal may raise): a miss
        log.info("rule cache %s ignored (%s: %s); rebuilding it", path, type(exc).__name__, exc)
        return None


def write(path: Path, rules: RuleSet) -> bool:
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rules-")
        with os.fdopen(fd, "wb") as fh:
            marshal.dump(dump(rules), fh)
        os.replace(tmp, path)
    except OSError as exc:  # a read-only cache folder costs the next start the full build, nothing else
        log.debug("rule cache not written to %s: %s", path, exc)
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    if path.name.startswith("rules-"):  # files for other rule files or code are never read again
        for stale in path.parent.glob("rules-*.marshal"):
            if stale != path:
                with contextlib.suppress(OSError):
                    stale.unlink()
    return True


def dump(rules: RuleSet) -> dict[str, Any]:
    """The rule set as plain values (marshal-able): every field of every rule, patterns as text."""
    out: list[dict[str, Any]] = []
    for rule in rules.rules:
        plain: dict[str, Any] = {}
        for f in fields(Rule):
            value = getattr(rule, f.name)
            if f.name in _ONE:
                value = None if value is None else value.pattern
            elif f.name in _MANY:
                value = tuple(r.pattern for r in value)
            plain[f.name] = value
        out.append(plain)
    return {
        "format": FORMAT,
        "version": rules.version,
        "allow": tuple(sorted(rules.allow_values)),
        "markers": tuple(rules.markers),
        "rules": out,
    }


def restore(doc: dict[str, Any]) -> RuleSet:
    """`dump`'s output back as a RuleSet whose patterns compile when first used."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a codectx rule cache")
    rules: list[Rule] = []
    for plain in doc["rules"]:
        values = dict(plain)
        for name in _ONE:
            values[name] = None if values[name] is None else LazyRegex(values[name])
        for name in _MANY:
            values[name] = tuple(LazyRegex(p) for p in values[name])
        rules.append(Rule(**values))
    if not rules:
        raise ValueError("no rules")
    return build(rules, str(doc["version"]), frozenset(doc["allow"]), tuple(doc["markers"]), "rule cache")
