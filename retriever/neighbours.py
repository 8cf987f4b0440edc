"""What the code around the cursor's scope calls: the next call is often one its neighbours make.

A new test next to others calls what they call (`fields.Dict(`, `utils.isObject(`); a new
branch of a parser builds the node classes the branches around it build. The index cannot say
this: the file's indexed version may already hold the code being written, so the workspace's
counts leave the file out (`receivers`). The editor's text of the file can: every call outside
the enclosing scope, weighted by how close it is to the scope, is resolved through the file's
imports like the names the scope uses (`definitions`).

Only the document's lines near the scope are read, and the index only to resolve and fetch the
definitions; calls inside the scope are left to the `used` list. Inside a definition the
ranking depends only on the scope, not on the cursor (at module level, on the block of lines
the cursor is in).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from codectx.indexer.model import Chunk, Definition
from codectx.retriever.definitions import DefinitionResolver, split_chain

# A call: an identifier or attribute chain right before `(`, no space between: that leaves out
# `if (`, `for (` and docstrings' `token (str):`, which would take resolution slots.
_CALL = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)*)\(")
# What precedes a definition's name, not a call's (`def test_x(`, `function f(`, `class A(`).
_DECLARES = ("def", "class", "function", "func", "fn")
# A call's weight is DECAY / (DECAY + its distance in lines from the scope): the nearest
# functions say most (15 beat 6, 40 and 120 on the development set).
DECAY_LINES = 15.0
# Lines read on each side of the scope: further calls weigh under 5 % of a near one, and reading
# a 12,000-line file whole costs ~20 ms a request (3 ms per 3,000 lines).
REACH_LINES = 300
MAX_CALLS = 32  # distinct calls resolved, closest first
MAX_LINE = 400  # longer lines are data (minified code, tables), not calls worth reading


def nearby_calls(lines: Sequence[str], own: tuple[int, int], skip: set[str]) -> list[tuple[str, float]]:
    """Calls made outside the scope's lines `own` (inclusive), at most REACH_LINES from it, each
    scored by the sum over its occurrences of DECAY / (DECAY + distance in lines), best first;
    chains in `skip` and chains whose last name is in `skip` are left out (the scope already
    uses them)."""
    scores: dict[str, float] = {}
    before = range(max(0, own[0] - REACH_LINES), min(own[0], len(lines)))
    after = range(own[1] + 1, min(len(lines), own[1] + REACH_LINES + 1))
    for number in itertools.chain(before, after):
        row = lines[number]
        if len(row) > MAX_LINE or "(" not in row:
            continue
        distance = own[0] - number if number < own[0] else number - own[1]
        weight = DECAY_LINES / (DECAY_LINES + distance)
        for match in _CALL.finditer(row):
            chain = match.group(1).replace("?.", ".")
            if row[: match.start()].rstrip().endswith(_DECLARES):
                continue  # `def name(`: a definition, not a call
            if chain in skip or split_chain(chain)[-1] in skip:
                continue
            scores[chain] = scores.get(chain, 0.0) + weight
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


def neighbour_definitions(
    resolver: DefinitionResolver,
    lines: Sequence[str],
    scope: tuple[int, int],
    own: tuple[int, int],
    skip: set[str],
    chunk_of: Callable[[Definition], Chunk | None],
) -> list[tuple[Chunk, Definition, str]]:
    """The workspace definitions of the calls near the scope's lines `scope`, best first:
    (chunk, definition, the call as written); none inside the cursor's own region `own`. Bare
    names resolve only through imports and the file itself."""
    out: list[tuple[Chunk, Definition, str]] = []
    seen: set[tuple[str, int]] = set()
    for chain, _score in nearby_calls(lines, scope, skip)[:MAX_CALLS]:
        for res in resolver.resolve(chain, exclude=own, by_name=False)[:1]:
            if res.definition.path == resolver.path:
                continue  # the file's own definitions: the document holds them already
            chunk = chunk_of(res.definition)
            if chunk is None:
                continue
            key = (chunk.path, chunk.start_line)
            if key not in seen:
                seen.add(key)
                out.append((chunk, res.definition, chain))
    return out
