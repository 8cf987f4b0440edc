"""A copy of a source tree with chosen functions' docstrings removed, the file still valid code.

The chat benchmarks ask for a function by the first sentence of its docstring; the function must
then be found without that docstring, so the copy that is indexed has it taken out. The doc is
located in the file itself: in Python by the parser (`ast`: the first statement of the
definition, a string; when it is the whole body, `pass` takes its place), elsewhere as the
whole comment block that holds the doc's first line (`/** ... */` or a run of `//` lines).
Removing lines from a chunk's text instead (as `codectx eval` does for the gold alone) left the
rest of a long docstring unquoted whenever the doc ran past the chunk, and a file that no
longer parses is chunked as plain text: every definition in it was harder to find, not just
the gold (stop 35: 2-6 files per repository, click's core.py and flask's app.py among them).
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Span = tuple[str, int, int]  # (path, first line, last line), 0-based inclusive


@dataclass(frozen=True)
class Cut:
    """Lines first..last (0-based, inclusive) removed; `pass_indent` >= 0 puts a `pass` there."""

    first: int
    last: int
    pass_indent: int = -1


def python_doc_cut(source: str, start_line: int) -> Cut | None:
    """The docstring of the definition that starts (decorators included) at `start_line`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        if start_line not in (first, node.lineno - 1):
            continue
        body = node.body
        doc = body[0] if body else None
        if not (
            isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            return None
        assert doc.end_lineno is not None
        if doc.lineno == node.lineno:  # `def f(): "doc"` on one line: nothing to cut cleanly
            return None
        return Cut(doc.lineno - 1, doc.end_lineno - 1, doc.col_offset if len(body) == 1 else -1)
    return None


def comment_doc_cut(rows: Sequence[str], doc: str, start: int, end: int) -> Cut | None:
    """The comment block (`/** */`, `/* */` or `//` lines) within start..end that holds `doc`'s
    first line."""
    lines = [r.strip() for r in doc.split("\n") if r.strip()]
    if not lines:
        return None
    at = next((i for i in range(max(0, start - 40), min(len(rows), end + 1)) if lines[0] in rows[i]), None)
    if at is None:
        return None
    if rows[at].strip().startswith("//"):
        first = last = at
        while first > 0 and rows[first - 1].strip().startswith("//"):
            first -= 1
        while last + 1 < len(rows) and rows[last + 1].strip().startswith("//"):
            last += 1
        return Cut(first, last)
    first = at
    while first >= 0 and "/*" not in rows[first]:
        if first < at and not rows[first].strip().startswith("*"):
            return None
        first -= 1
    last = at
    while last < len(rows) and "*/" not in rows[last]:
        last += 1
    if first < 0 or last >= len(rows):
        return None
    if rows[first].strip()[:2] != "/*" or not rows[last].rstrip().endswith("*/"):
        return None  # code shares a line with the comment: leave it
    return Cut(first, last)


def apply_cuts(rows: list[str], cuts: Sequence[Cut]) -> tuple[list[str], list[int]]:
    """The rows without the cuts, and for each old row its new index (a removed row maps to where
    the next kept row lands)."""
    removed: dict[int, Cut] = {}
    for cut in cuts:
        for i in range(cut.first, cut.last + 1):
            removed[i] = cut
    out: list[str] = []
    where: list[int] = []
    for i, row in enumerate(rows):
        cut = removed.get(i)
        if cut is None:
            where.append(len(out))
            out.append(row)
            continue
        where.append(len(out))
        if i == cut.last and cut.pass_indent >= 0:
            out.append(" " * cut.pass_indent + "pass")
    return out, where


def hidden_copy(src: Path, golds: Sequence[Any], dst: Path) -> tuple[Path, dict[int, Span]]:
    """A copy of `src` at `dst` with each gold's docstring removed (`golds`: chunks with `path`,
    `start_line`, `end_line`, `doc`, `language`); gold number -> its span in the copy. A gold
    whose doc cannot be located is left out of the answer (and its file unchanged by it)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    by_file: dict[str, list[tuple[int, Any]]] = {}
    for n, gold in enumerate(golds):
        by_file.setdefault(gold.path, []).append((n, gold))
    spans: dict[int, Span] = {}
    for path, found in by_file.items():
        text = (dst / path).read_text("utf-8", errors="replace")
        rows = text.split("\n")
        cuts: dict[int, Cut] = {}
        for n, gold in found:
            if path.endswith((".py", ".pyi")):
                cut = python_doc_cut(text, gold.start_line)
            else:
                cut = comment_doc_cut(rows, gold.doc, gold.start_line, gold.end_line)
            if cut is not None:
                cuts[n] = cut
        new_rows, where = apply_cuts(rows, list(cuts.values()))
        if path.endswith((".py", ".pyi")):
            try:
                ast.parse("\n".join(new_rows))
            except SyntaxError as exc:
                raise RuntimeError(f"{path}: the copy without docstrings does not parse: {exc}") from exc
        for n, gold in found:
            if n not in cuts:
                continue
            first = where[gold.start_line]
            last = where[min(gold.end_line, len(rows) - 1)]
            spans[n] = (path, first, max(first, last))
        (dst / path).write_text("\n".join(new_rows), encoding="utf-8")
    return dst, spans
