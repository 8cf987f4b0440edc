"""Finding nodes by type with tree-sitter queries: the query engine walks the tree in C.

A Python walk over every node of a large file costs far more than the parse;
these helpers return only the nodes asked for, in source order.
"""

from __future__ import annotations

import functools
from typing import Any

Node = Any  # tree_sitter.Node


def _compile(lang: Any, groups: tuple[tuple[str, frozenset[str]], ...]) -> Any:
    """One query with an alternation per capture group; kinds the grammar lacks are left out."""
    from tree_sitter import Query, QueryError

    def source(check_each: bool) -> str:
        parts = []
        for capture, types in groups:
            kinds = [t for t in sorted(types) if lang.id_for_node_kind(t, True)]
            if check_each:
                kinds = [t for t in kinds if _queryable(lang, t)]
            if kinds:
                parts.append("[" + " ".join(f"({t})" for t in kinds) + "] @" + capture)
        return "\n".join(parts)

    text = source(check_each=False)
    if not text:
        return None
    try:
        return Query(lang, text)
    except QueryError:  # a kind the grammar names but cannot query (aliases): check one by one
        text = source(check_each=True)
        return Query(lang, text) if text else None


def _queryable(lang: Any, kind: str) -> bool:
    from tree_sitter import Query, QueryError

    try:
        Query(lang, f"({kind}) @n")
    except QueryError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _query(language: str, types: frozenset[str]) -> Any:
    """A compiled query capturing every node of `types` as @n."""
    from codectx.indexer.parsing.languages import get_language

    return _compile(get_language(language), (("n", types),))


# Past this many nodes in one error subtree, tree-sitter's query engine slows to seconds (a line
# of 30,000 unclosed `(`: 0.9 s, 100,000: 20 s; 80 lines of 950-link decorator chains, one error
# of 230,000 nodes: 18 s, and captures past 65,535 are dropped); a walk in Python is linear.
ERROR_NODES_MAX = 20_000


def _large_error(root: Node) -> bool:
    """Whether an error subtree under `root` holds more than ERROR_NODES_MAX nodes (only the
    subtrees flagged with errors are visited)."""
    stack = [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.is_error:
            if node.descendant_count > ERROR_NODES_MAX:
                return True
            continue
        stack.extend(c for c in node.children if c.has_error)
    return False


def _walk(root: Node, types: frozenset[str]) -> list[Node]:
    """`find_all` by walking every node, in source order: linear, for the trees the query engine
    is slow on (a tree cursor: a third of the time of reading each node's children)."""
    found = []
    cursor = root.walk()
    while True:
        node = cursor.node
        if node.is_named and node.type in types:
            found.append(node)
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return found


def find_all(root: Node, language: str, types: frozenset[str]) -> list[Node]:
    """Every node of the given types under `root`, in source order (a tree-sitter query: fast;
    a walk where a large error subtree would make the query slow)."""
    from tree_sitter import QueryCursor

    query = _query(language, types)
    if query is None:
        return []
    if _large_error(root):
        return _walk(root, types)
    nodes: list[Node] = QueryCursor(query).captures(root).get("n", [])
    nodes.sort(key=lambda n: n.start_byte)
    return nodes


@functools.lru_cache(maxsize=64)
def _pattern(language: str, pattern: str) -> Any:
    from codectx.indexer.parsing.languages import get_language
    from tree_sitter import Query

    return Query(get_language(language), pattern)


def find_matching(root: Node, language: str, pattern: str) -> list[Node]:
    """Nodes captured as `@n` by a tree-sitter query pattern, in source order."""
    from tree_sitter import QueryCursor

    nodes: list[Node] = QueryCursor(_pattern(language, pattern)).captures(root).get("n", [])
    nodes.sort(key=lambda n: n.start_byte)
    return nodes


@functools.lru_cache(maxsize=64)
def _multi_query(language: str, groups: tuple[tuple[str, frozenset[str]], ...]) -> Any:
    from codectx.indexer.parsing.languages import get_language

    return _compile(get_language(language), groups)


def find_groups(
    root: Node, language: str, groups: tuple[tuple[str, frozenset[str]], ...]
) -> dict[str, list[Node]]:
    """Nodes of several type groups in one query pass: {capture name: nodes in source order}."""
    from tree_sitter import QueryCursor

    query = _multi_query(language, groups)
    if query is None:
        return {}
    found: dict[str, list[Node]] = QueryCursor(query).captures(root)
    for nodes in found.values():
        nodes.sort(key=lambda n: n.start_byte)
    return found
