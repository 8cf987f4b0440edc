"""What the code around the cursor's scope calls: the next call is often one its neighbours make.

A new test next to others calls what they call (`fields.Dict(`, `utils.isObject(`); a new
branch of a parser builds the node classes the branches around it build. The index cannot say
this: the file's indexed version may already hold the code being written, so the workspace's
counts leave the file out (`receivers`). The editor's text of the file can: every call outside
the enclosing scope, weighted by how close it is to the scope, is resolved through the file's
imports like the names the scope uses (`definitions`).

Only the document's text is read (no index access beyond resolution); calls inside the scope
are left to the `used` list, and the ranking depends only on the scope, not on the cursor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from codectx.indexer.model import Chunk, Definition
from codectx.retriever.definitions import DefinitionResolver, split_chain

# A call: an identifier or attribute chain right before `(`. Keywords that take parentheses
# (`if (`, `for (`, `while (`) are names of no definition, so they resolve to nothing.
_CALL = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)*)\s*\(")
# A call this many lines from the scope counts half one next to it: the nearest functions say
# most (15 beat 6, 40 and 120 on the development set).
DECAY_LINES = 15.0
MAX_CALLS = 32  # distinct calls resolved, closest first
MAX_LINE = 400  # longer lines are data (minified code, tables), not calls worth reading


def nearby_calls(lines: Sequence[str], own: tuple[int, int], skip: set[str]) -> list[tuple[str, float]]:
    """Calls made outside the scope's lines `own` (inclusive), each scored by the sum over its
    occurrences of DECAY / (DECAY + distance in lines), best first; chains in `skip` and chains
    whose last name is in `skip` are left out (the scope already uses them)."""
    scores: dict[str, float] = {}
    for number, row in enumerate(lines):
        if own[0] <= number <= own[1] or len(row) > MAX_LINE or "(" not in row:
            continue
        distance = own[0] - number if number < own[0] else number - own[1]
        weight = DECAY_LINES / (DECAY_LINES + distance)
        for match in _CALL.finditer(row):
            chain = match.group(1).replace("?.", ".")
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
