"""The shipped rule set read back from the user's cache folder scans exactly as the full build does.

The cache (codectx/privacy/rulecache.py) takes the rule build off a process's start; a cache that
dropped a rule, a filter or a capture group would silently weaken redaction, so these tests
compare the rebuilt set with a fresh build field by field and finding by finding.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from codectx.privacy import rulecache
from codectx.privacy.corpus import betterleaks_toml
from codectx.privacy.redact import Redactor
from codectx.privacy.rulecache import LazyRegex
from codectx.privacy.rules import RuleSet, _build_default

KEY = b"rule-cache-test-key-rule-cache-k"
PLANTED = Path(__file__).resolve().parents[1] / "fixtures" / "planted"


def own_bytes() -> bytes:
    return resources.files("codectx.privacy").joinpath("rules.toml").read_bytes()


@pytest.fixture(scope="module")
def sources() -> tuple[bytes, bytes]:
    return own_bytes(), betterleaks_toml()


@pytest.fixture(scope="module")
def fresh(sources: tuple[bytes, bytes]) -> RuleSet:
    return _build_default(*sources)


def patterns(rules: RuleSet) -> list[tuple[object, ...]]:
    """Every compiled field's pattern text, rule by rule (Rule's equality leaves them out)."""
    out = []
    for rule in rules.rules:
        out.append(
            (
                rule.regex.pattern,
                None if rule.context is None else rule.context.pattern,
                None if rule.path is None else rule.path.pattern,
                tuple(r.pattern for r in rule.reject),
            )
        )
    return out


def test_a_cached_rule_set_equals_the_full_build(
    tmp_path: Path, sources: tuple[bytes, bytes], fresh: RuleSet
) -> None:
    path = tmp_path / "rules.marshal"
    built = []

    def build() -> RuleSet:
        built.append(1)
        return _build_default(*sources)

    first = rulecache.cached(*sources, build, path=path)
    again = rulecache.cached(*sources, build, path=path)
    assert built == [1], "the second load must come from the file, not a build"
    assert all(isinstance(rule.regex, LazyRegex) for rule in again.rules)
    assert not isinstance(first.rules[0].regex, LazyRegex)
    assert again.rules == fresh.rules  # every plain field: groups, keywords, filters, checks
    assert patterns(again) == patterns(fresh)
    assert (again.version, again.allow_values, again.markers) == (
        fresh.version,
        fresh.allow_values,
        fresh.markers,
    )
    assert again.keyword_ids == fresh.keyword_ids


def test_a_cached_rule_set_finds_what_the_full_build_finds_and_compiles_only_what_it_needs(
    tmp_path: Path, sources: tuple[bytes, bytes], fresh: RuleSet
) -> None:
    path = tmp_path / "rules.marshal"
    rulecache.cached(*sources, lambda: _build_default(*sources), path=path)
    cached = rulecache.read(path)
    assert cached is not None
    texts = [
        (str(p.relative_to(PLANTED)), p.read_text("utf-8")) for p in sorted(PLANTED.rglob("*")) if p.is_file()
    ]
    lazy, full = Redactor(key=KEY, rules=cached), Redactor(key=KEY, rules=fresh)
    found = 0
    for origin, text in texts:
        got = [(f.start, f.end, f.rule) for f in lazy.redact(text, origin).findings]
        assert got == [(f.start, f.end, f.rule) for f in full.redact(text, origin).findings], origin
        found += len(got)
    assert found >= 10  # the planted repository's secrets were there to find
    compiled = sum(1 for rule in cached.rules if rule.regex._compiled is not None)
    assert 0 < compiled < len(cached.rules) // 2


@pytest.mark.parametrize("content", [b"", b"not marshal at all", b"\xff" * 100])
def test_a_damaged_cache_file_is_rebuilt(
    tmp_path: Path, sources: tuple[bytes, bytes], content: bytes
) -> None:
    path = tmp_path / "rules.marshal"
    path.write_bytes(content)
    rules = rulecache.cached(*sources, lambda: _build_default(*sources), path=path)
    assert len(rules.rules) > 400
    assert rulecache.read(path) is not None  # replaced by a good one


def test_a_foreign_marshal_file_is_not_taken_for_rules(tmp_path: Path) -> None:
    import marshal

    path = tmp_path / "rules.marshal"
    path.write_bytes(marshal.dumps({"format": b"something-else", "rules": []}))
    assert rulecache.read(path) is None


def test_the_file_name_changes_with_the_rule_files(sources: tuple[bytes, bytes]) -> None:
    own, corpus = sources
    names = {
        rulecache.digest(own, corpus),
        rulecache.digest(own + b"\n# edited\n", corpus),
        rulecache.digest(own, corpus + b" "),
        rulecache.digest(own, None),
    }
    assert len(names) == 4


def test_an_unwritable_cache_folder_still_gives_the_rules(
    tmp_path: Path, sources: tuple[bytes, bytes]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    rules = rulecache.cached(*sources, lambda: _build_default(*sources), path=blocker / "rules.marshal")
    assert len(rules.rules) > 400


def test_a_new_cache_file_replaces_those_of_older_rules(tmp_path: Path, sources: tuple[bytes, bytes]) -> None:
    old = tmp_path / "rules-0123456789ab.marshal"
    old.write_bytes(b"left by an older codectx")
    unrelated = tmp_path / "generated-code-cpython-311.marshal"
    unrelated.write_bytes(b"not ours to remove")
    path = tmp_path / f"rules-{rulecache.digest(*sources)}.marshal"
    rulecache.cached(*sources, lambda: _build_default(*sources), path=path)
    assert path.exists() and not old.exists() and unrelated.exists()
