"""Token counting for budgets: a protocol, a local tokenizer and a fast fallback.

The prompt budget must be counted in the model's tokens. The model server is
remote, so by default we count locally with the bundled MiniLM WordPiece
tokenizer (it splits code more finely than a code model's BPE, so budgets err
on the safe side). The backend can pass any object with the same `count`
method, e.g. one that asks the server's /tokenize endpoint.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text as the model would see it."""

    def count(self, text: str) -> int: ...


WORD_CACHE = 500_000
_PIECE = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


class ApproxTokenCounter:
    """A dependency-free estimate: words, digit runs and punctuation, long words split.

    Within about 15% of BPE code tokenizers on source code; used when no
    tokenizer file is available.
    """

    def count(self, text: str) -> int:
        pieces = _PIECE.findall(text)
        return len(pieces) + sum((len(p) - 1) // 6 for p in pieces if len(p) > 6)


class LocalTokenCounter:
    """The MiniLM tokenizer of the bundled embedding model, with a small cache.

    Context assembly counts the same chunks on every keystroke; the cache makes
    repeated counts free.
    """

    def __init__(self, tokenizer_file: Path | None = None, cache_size: int = 200_000) -> None:
        from tokenizers import Tokenizer, pre_tokenizers

        path = tokenizer_file or _bundled_tokenizer()
        self._tokenizer = Tokenizer.from_file(str(path))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        # WordPiece behind BERT's pre-tokenizer never puts a token across whitespace, so a text's
        # count is the sum of its words' counts: words repeat across lines and files, and a dict
        # lookup per word is ~50x cheaper than one tokenizer call per line (the budget cuts
        # count the prefix and suffix line by line).
        self._additive = isinstance(self._tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        self._words: dict[str, int] = {}

    def count(self, text: str) -> int:
        if not text:
            return 0
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        value = self._count_words([text])[0] if self._additive else len(self._encode([text])[0].ids)
        self._cache[text] = value
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return value

    def _encode(self, texts: list[str]) -> list[Any]:
        try:
            encoded: list[Any] = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        except TypeError:  # a lone surrogate (from a client's JSON or argv): counted as U+FFFD
            from codectx.indexer.walk.content import well_formed

            encoded = self._tokenizer.encode_batch([well_formed(t) for t in texts], add_special_tokens=False)
        return encoded

    def _count_words(self, texts: list[str]) -> list[int]:
        words = self._words
        split = [t.split() for t in texts]
        missing = list({w for ws in split for w in ws if w not in words})
        if missing:
            if len(words) > WORD_CACHE:
                words.clear()
            for word, enc in zip(missing, self._encode(missing), strict=True):
                words[word] = len(enc.ids)
        return [sum(words[w] for w in ws) for ws in split]

    def count_many(self, texts: list[str]) -> list[int]:
        missing = [t for t in dict.fromkeys(texts) if t and t not in self._cache]
        if missing:
            if self._additive:
                counts = self._count_words(missing)
            else:
                encoded = self._encode(missing)
                counts = [len(enc.ids) for enc in encoded]
            for text, value in zip(missing, counts, strict=True):
                self._cache[text] = value
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return [self.count(t) for t in texts]


def _bundled_tokenizer() -> Path:
    """The bundled embedding model's tokenizer, which ships with codectx (no torch extra needed)."""
    from codectx.indexer.embedding.bundled import BUNDLED_DIR

    return BUNDLED_DIR / "tokenizer.json"


_DEFAULT: TokenCounter | None = None


def default_counter() -> TokenCounter:
    """The process-wide local counter (loaded once); the approximation if the tokenizer is missing."""
    global _DEFAULT
    if _DEFAULT is None:
        try:
            _DEFAULT = LocalTokenCounter()
        except (ImportError, OSError, ValueError, Exception):  # a broken tokenizer must not stop completion
            _DEFAULT = ApproxTokenCounter()
    return _DEFAULT


def count_many(counter: TokenCounter, texts: list[str]) -> list[int]:
    """Counts for several texts, batched when the counter supports it."""
    batch = getattr(counter, "count_many", None)
    if callable(batch):
        return list(batch(texts))
    return [counter.count(t) for t in texts]
