"""What a search's best hits call: relevance that travels along calls (the `calls` list).

A prose question often matches the code around its answer better than the answer itself. A
test named after the behaviour (`test_generated_schemas_are_not_registered`) or a caller whose
names say what it asks of the callee ranks high, while the function asked about, whose body
shares no word with the question, does not (`pre_dump` is `return set_hook(fn, PRE_DUMP, ...)`
for "register a method to invoke before serializing an object"). So the calls in the first
`CALLS_POOL` fused hits (fused before search's test and documentation factors: a test is the
best witness) are resolved to definitions as completion context resolves the calls of similar
code (`callees.similar_code_callees`: through the hit's own file's imports, by name where those
do not resolve, as for Markdown examples), and each definition gets a vote from every hit that
calls it: the hit's fused score times the resolution's confidence. A hit does not vote for
definitions overlapping its own span (its own nested helpers, the class around a method). The
definitions, most voted first, are one more list for the fusion (`search.HybridSearcher.fuse`).

Measured with bench/devset_sweep.py --natural-language (development set, docstrings hidden,
vectors): recall@10 0.739 -> 0.751 pooled at weight 0.35 with the first 10 hits voting, no
repository lower; on the 180 queries written independently from the packages' documentation
(bench/bench_nl_queries.py) 0.794 -> 0.811; a chat turn's context recall on the development set,
the index in memory, 0.933 -> 0.939. Searches without vectors leave the list out: their first
hits are noisier, and the list lowered three repositories by 0.01-0.07 there. So do searches
while the snapshot's chunks are not in memory (one-shot `codectx search` and `codectx ask`, a
language server whose background load is not in yet): each call resolved there is an index
read, 70-250 ms per search on Django, against about 5 ms in memory. In memory without a
background load (MCP, `--batch`, `codectx eval`), the first such search also reads the symbol
table whole (about 0.5 s on Django), as the first completion there does, and again after the
index changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codectx.indexer.model import Chunk, Definition
from codectx.retriever.callees import similar_code_callees

CALLS_POOL = 10  # fused hits whose calls vote (5: 0.745, 15: 0.751 on the development set)


def called_by_hits(
    store: object, hits: Sequence[tuple[Chunk, float]], locate: Callable[[Definition], Chunk | None]
) -> list[Chunk]:
    """The chunks (`locate`d) of the definitions that `hits` ((chunk, fused score), best first)
    call, most voted first; a hit votes only for definitions outside its own span."""
    by_language: dict[str, list[tuple[Chunk, float]]] = {}
    for chunk, score in hits:
        by_language.setdefault(chunk.language, []).append((chunk, score))
    votes = [v for lang, group in by_language.items() for v in similar_code_callees(store, group, (), lang)]
    votes.sort(key=lambda v: -v.score)  # stable: equal votes keep each language's order
    found: dict[str, Chunk] = {}
    for vote in votes:
        chunk = locate(vote.definition)
        if chunk is not None:
            found.setdefault(chunk.id, chunk)
    return list(found.values())
