"""What code similar to the cursor's scope calls: likely next calls before their name is typed.

When the user is about to call something but has not typed its name, the
names in the scope say little. Code that resembles the enclosing function
(the hybrid search hits for it) often makes the same kind of calls: tests
of a CLI call `click.Command(...)`, request handlers call the same helpers.
So each call in the similar chunks is resolved to a definition through
*that chunk's own file's* imports (its local names, modules, `self`, locally
constructed objects), and a definition gets a vote from every similar chunk
that calls it, weighted by how similar the chunk is. Cost: a regex over a
dozen chunks and in-memory symbol lookups; no extra search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codectx.indexer.model import Chunk, Definition
from codectx.retriever.definitions import RESOLVED_LANGUAGES, DefinitionResolver, local_types, split_chain

_CALL = re.compile(r"(?<![\w$.])(@?[A-Za-z_$][\w$]*(?:\s*(?:\?\.|\.|::|->)\s*[A-Za-z_$][\w$]*)*)\s*\(")
_DEFINES = re.compile(r"\b(?:def|class|function|func|fn|sub|proc)\s+$")
# Indentation at a line's start is `[^\S\n]*`: `^\s*` crossed blank lines, so a run of them was
# read again from each of its lines (seconds at 20,000 blank lines).
_DECORATOR = re.compile(r"^[^\S\n]*@([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)", re.M)
# Calls that name no definition worth showing: keywords that take parentheses, and builtins.
_NOT_CALLS_TEXT = (
    "if elif while for return and or not in is with assert print len str int float bool list dict "
    "set tuple type isinstance issubclass super getattr setattr hasattr range enumerate zip map "
    "filter sorted reversed min max sum any all repr iter next open id hash callable vars format "
    "switch catch function typeof sizeof new await yield lambda except raise del"
)
_NOT_CALLS = frozenset(_NOT_CALLS_TEXT.split())
MAX_CALLS_PER_CHUNK = 40


@dataclass
class Vote:
    definition: Definition
    score: float
    name: str  # the call as written in the similar code
    sources: list[str]  # qualnames of the similar chunks that call it


def reachable_as_attribute(d: Definition) -> bool:
    """Can `x.name` refer to this definition? Not if it is a function nested in a function."""
    return not (d.kind == "function" and "." in d.qualname)


def calls_in(text: str) -> list[str]:
    """Callee chains in a chunk's text, first-use order (decorators included, keywords left out)."""
    found: dict[str, None] = {}
    for match in _CALL.finditer(text):
        if _DEFINES.search(text, max(0, match.start() - 16), match.start()):
            continue  # `def name(`: a definition, not a call
        chain = re.sub(r"\s+", "", match.group(1)).lstrip("@")
        if split_chain(chain)[-1] in _NOT_CALLS or chain in _NOT_CALLS:
            continue
        found.setdefault(chain, None)
    for match in _DECORATOR.finditer(text):
        found.setdefault(match.group(1), None)
    return list(found)[:MAX_CALLS_PER_CHUNK]


_PARSED: dict[str, tuple[list[str], dict[str, str]]] = {}
PARSED_CACHE = 20_000


def _parsed(chunk: Chunk) -> tuple[list[str], dict[str, str]]:
    """A chunk's calls and local types, cached by content: similar chunks recur across requests."""
    key = chunk.content_hash or chunk.text
    found = _PARSED.get(key)
    if found is None:
        if len(_PARSED) >= PARSED_CACHE:
            _PARSED.clear()
        found = _PARSED[key] = (calls_in(chunk.text), local_types(chunk.text))
    return found


def similar_code_callees(
    store: object,
    similar: Sequence[tuple[Chunk, float]],
    skip_names: Iterable[str],
    language: str,
) -> list[Vote]:
    """Definitions called by the similar chunks, most voted first.

    `similar` is (chunk, weight) best first; `skip_names` are names the cursor's
    scope already uses (their definitions come from the scope itself). A bare
    name that only matches some definition by name (not through an import or
    the chunk's own file) is skipped in languages whose imports resolve: that
    is mostly a local variable or a library call.
    """
    skip = set(skip_names)
    votes: dict[tuple[str, int], Vote] = {}
    resolvers: dict[str, DefinitionResolver] = {}
    imports_of = getattr(store, "file_imports", None)
    for chunk, weight in similar:
        if chunk.language != language or weight <= 0:
            continue
        resolver = resolvers.get(chunk.path)
        if resolver is None:
            imports = list(imports_of(chunk.path)) if imports_of is not None else []
            resolver = resolvers[chunk.path] = DefinitionResolver(store, chunk.path, chunk.language, imports)
        calls, types = _parsed(chunk)
        resolver.local_types = types
        voted: set[tuple[str, int]] = set()
        for chain in calls:
            parts = split_chain(chain)
            if parts[-1] in skip or chain in skip:
                continue
            bare = len(parts) == 1 and chunk.language in RESOLVED_LANGUAGES
            for res in resolver.resolve(chain, by_name=not bare)[:1]:
                d = res.definition
                if d.path == chunk.path and d.start_line <= chunk.end_line and d.end_line >= chunk.start_line:
                    continue  # defined in or around the similar chunk itself: local to that code
                if len(parts) > 1 and res.how == "name" and not reachable_as_attribute(d):
                    continue
                key = (d.path, d.start_line)
                if key in voted:
                    continue
                voted.add(key)
                vote = votes.get(key)
                if vote is None:
                    vote = votes[key] = Vote(d, 0.0, chain, [])
                vote.score += weight * res.confidence
                vote.sources.append(chunk.qualname or chunk.path)
    return sorted(
        votes.values(), key=lambda v: (-round(v.score, 9), v.definition.path, v.definition.start_line)
    )
