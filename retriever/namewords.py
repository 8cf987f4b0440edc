"""Definitions whose names are made of the question's words: a prose query rewritten into identifiers.

"Return a dictionary from a cookie jar" names `dict_from_cookiejar` more than it describes its body:
full text over the whole chunk dilutes the name among the body's words, and an identifier query
looks names up only when it is one. This list scores every definition by the words of its name
(split as the index splits identifiers) that the query holds:

- a name word matches a query word equal to it, a plural or inflection of it (`cookies`,
  `parsed`, `parsing`), or a word it abbreviates (`dict` in `dictionary`, `env` in `environment`;
  a name word of at least 3 letters that starts the query word);
- an abbreviation counts half a match (`mod` may be `model` or `module`);
- a name word the query spells in pieces matches too: two of its words run together
  (`weekday` for "the day of the week", `utcoffset`, `fromtimestamp`), or, half, the initials of
  three or four words in a row (`dst` for "daylight savings time");
- a word's weight is its inverse frequency among the definitions' names (a definition counted
  once per name word), so `get` and `init` say little and `cookiejar` says much;
- the score is the matched words' weight times the share of the name's words matched, so a name
  the query spells out entirely ranks over a long name that shares one word.

Built once per symbol table (the snapshot keeps it with the table it was built from) and queried
through an inverted index from name word to names; a query looks at the names that share a word.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codectx.indexer.model import Definition
from codectx.indexer.parsing.identifiers import split_identifier

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
MIN_ABBREVIATION = 3  # a shorter name word (`is`, `to`) matches only itself
ABBREVIATION = 0.5  # how much a name word that abbreviates a query word counts
# An abbreviation is at most this share of the word (`num` of `number`, `dict` of `dictionary`);
# a longer prefix is more often a different word of the same root (`connect` of `connection`).
ABBREVIATION_SHARE = 0.6
COMPOUND_WORDS = 40  # a long question's first words only: the pairs grow with the square
INITIALISM_WORDS = (3, 4)  # `dst` for "daylight savings time"; two letters are too often chance
MAX_POSTINGS = 1500  # a name word held by more names only adds to names a rarer word found
MAX_CANDIDATES = 2000  # names scored per query at most (found by its rarest words first)
# Prose words that name no code: the grammar of a sentence.
_GRAMMAR = (
    "a an and are as at be by for from has have if in into is it its of on or that the this to "
    "was were will with which when whether"
)
STOPWORDS = frozenset(_GRAMMAR.split(" "))
SUFFIXES = ("ies", "es", "s", "ed", "ing", "er")


def _stems(word: str) -> list[str]:
    """The word and the forms a name may use for it: `cookies` -> cookie, `parsed` -> parse, pars."""
    out = [word]
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            out.append(base + "y" if suffix == "ies" else base)
            if suffix in ("ed", "ing", "er", "es"):
                out.append(base + "e")
    return out


def query_words(query: str) -> list[str]:
    """The query's distinct lowercased words (identifiers split), without the stopwords."""
    seen: dict[str, None] = {}
    for token in _WORD.findall(query):
        for word in split_identifier(token):
            if len(word) >= 2 and word not in STOPWORDS:
                seen.setdefault(word, None)
    return list(seen)


@dataclass(frozen=True)
class NameHit:
    name: str
    score: float


class NameWords:
    """Name word -> the names holding it, with each word's weight (one symbol table's)."""

    def __init__(self, by_name: Mapping[str, Sequence[Definition]]) -> None:
        self.parts: dict[str, tuple[str, ...]] = {}
        self.postings: dict[str, list[str]] = {}
        frequency: Counter[str] = Counter()
        split: dict[str, tuple[str, ...]] = {}  # a qualname's parts repeat (`Class.method`)
        for name, defs in by_name.items():
            if not defs:
                continue
            words: dict[str, None] = {}
            for part in name.split("."):
                found = split.get(part)
                if found is None:
                    found = split[part] = tuple(split_identifier(part))
                words.update(dict.fromkeys(found))
            if not words:
                continue
            self.parts[name] = tuple(words)
            for word in words:
                self.postings.setdefault(word, []).append(name)
                frequency[word] += len(defs)
        total = max(1, sum(len(d) for d in by_name.values()))
        self.weight = {w: math.log(1 + total / n) for w, n in frequency.items()}

    def _matches(self, word: str) -> dict[str, float]:
        """The name words a query word stands for, with how surely: its stems fully, name words
        that abbreviate it by half (`mod` may be `model`, or `module`)."""
        found = dict.fromkeys((s for s in _stems(word) if s in self.postings), 1.0)
        for end in range(MIN_ABBREVIATION, int(len(word) * ABBREVIATION_SHARE) + 1):
            if word[:end] in self.postings:
                found.setdefault(word[:end], ABBREVIATION)
        return found

    def _compounds(self, query: str) -> dict[str, float]:
        """Name words the query spells in pieces: two of its words run together (`weekday` for
        "the day of the week", `utcoffset`, `fromtimestamp`; the first may be a grammar word),
        fully sure; the initials of three or four words in a row (`dst` for "daylight savings
        time"), half sure."""
        words = [w for token in _WORD.findall(query) for w in split_identifier(token) if len(w) >= 2]
        words = words[:COMPOUND_WORDS]
        content = [w for w in words if w not in STOPWORDS]
        found: dict[str, float] = {}
        for first in dict.fromkeys(words):
            for second in dict.fromkeys(content):
                if first == second:
                    continue
                for stem in _stems(second):
                    if first + stem in self.postings:
                        found[first + stem] = 1.0
        for size in INITIALISM_WORDS:
            for i in range(len(content) - size + 1):
                initials = "".join(w[0] for w in content[i : i + size])
                if initials in self.postings:
                    found.setdefault(initials, ABBREVIATION)
        return found

    def search(self, query: str, limit: int) -> list[NameHit]:
        """The best `limit` names for the query, by matched words' weight times the share matched."""
        sure: dict[str, float] = {}
        for word in query_words(query):
            for part, how in self._matches(word).items():
                sure[part] = max(sure.get(part, 0.0), how)
        for part, how in self._compounds(query).items():
            sure[part] = max(sure.get(part, 0.0), how)
        # Per name: the matched words' sureness and their weight times it (each word comes once).
        matched: dict[str, list[float]] = {}
        # Rare words first; a word held by very many names only adds to names a rarer word found
        # (it cannot lift a name on its own above one that shares a rarer word), and so does every
        # word once MAX_CANDIDATES names are in (a long question names many words).
        for part in sorted(sure, key=lambda p: len(self.postings[p])):
            postings, how = self.postings[part], sure[part]
            weighted = self.weight[part] * how
            if matched and (len(postings) > MAX_POSTINGS or len(matched) >= MAX_CANDIDATES):
                names = (
                    [n for n in matched if part in self.parts[n]]
                    if len(matched) < len(postings)
                    else [n for n in postings if n in matched]
                )
            else:
                names = postings
            for name in names:
                acc = matched.get(name)
                if acc is None:
                    matched[name] = [how, weighted]
                else:
                    acc[0] += how
                    acc[1] += weighted
        parts = self.parts
        best = heapq.nsmallest(
            limit,
            matched.items(),
            key=lambda item: (-item[1][1] * item[1][0] / len(parts[item[0]]), len(parts[item[0]]), item[0]),
        )
        return [NameHit(name, acc[1] * acc[0] / len(parts[name])) for name, acc in best]
