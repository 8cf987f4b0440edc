"""Fill-in-the-middle prompts, file-level and repo-level, built from a family's layout.

Retrieved snippets go first, as files of the repository, each labelled with
its origin (`path#Lstart-Lend`) so the model reads repository text as data,
then the current file with the FIM markers. Snippets keep the retriever's
stable order, so consecutive requests in one file share a long prompt prefix
and vLLM's prefix cache serves it. Special-token spellings that occur in the
code itself are defused, so a file cannot inject FIM markers into the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from codectx.backend.families import Family

# Not a zero-width character: the privacy gate strips those, which would rebuild the token.
DEFUSE = " "


class SnippetLike(Protocol):
    path: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class Snippet:
    """Repository text for the prompt; lines 0-based and inclusive."""

    path: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class FimPrompt:
    text: str
    stop: tuple[str, ...]
    family: str
    repo_level: bool
    snippets: tuple[Snippet, ...] = field(default=())


def origin_label(path: str, start_line: int, end_line: int) -> str:
    """Where a snippet came from: `path#L10-L24`. Takes 0-based inclusive lines (as the index
    stores them) and shows them 1-based, as editors do; negative lines mean "whole file"."""
    if start_line < 0 or end_line < 0:
        return path
    return f"{path}#L{start_line + 1}-L{end_line + 1}"


def defuse(text: str, tokens: Sequence[str]) -> str:
    """Break up special-token spellings found in user text (a space after the first char)."""
    for token in tokens:
        if token and token in text:
            text = text.replace(token, token[0] + DEFUSE + token[1:])
    return text


def _fill(template: str, **values: str) -> str:
    # One pass over the template only: values are never re-scanned, so code containing
    # "{path}" or "{prefix}" stays as it is.
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _as_snippet(item: Any) -> Snippet:
    return Snippet(str(item.path), int(item.start_line), int(item.end_line), str(item.text))


def build_fim_prompt(
    family: Family,
    *,
    prefix: str,
    suffix: str,
    path: str,
    repo: str = "",
    snippets: Sequence[Any] = (),
) -> FimPrompt:
    """The raw /v1/completions prompt for a cursor between `prefix` and `suffix` in `path`."""
    special = family.special
    items = tuple(_as_snippet(s) for s in snippets)
    files = "".join(
        _fill(
            family.repo_file,
            path=defuse(origin_label(s.path, s.start_line, s.end_line), special),
            content=defuse(s.text.rstrip("\n"), special),
        )
        for s in items
    )
    safe_path = defuse(path, special)
    safe_prefix = defuse(prefix, special)
    safe_suffix = defuse(suffix, special)
    if family.context_in_prefix:
        head = files + (_fill(family.current_file, path=safe_path) if items else "")
        text = _fill(family.fim, prefix=head + safe_prefix, suffix=safe_suffix)
        return FimPrompt(text, family.stop, family.name, False, items)
    if not items or not family.repo_file:
        return FimPrompt(
            _fill(family.fim, prefix=safe_prefix, suffix=safe_suffix), family.stop, family.name, False
        )
    header = _fill(family.repo_header, repo=defuse(repo or "repo", special))
    current = _fill(family.current_file, path=safe_path)
    in_prefix = _fill(family.current_file_in_prefix, path=safe_path)
    fim = _fill(family.fim, prefix=in_prefix + safe_prefix, suffix=safe_suffix)
    return FimPrompt(header + files + current + fim, family.stop, family.name, True, items)


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def document_lines(text: str) -> list[str]:
    """Lines with their endings, split like LSP does (only \\n, \\r\\n and \\r end a line)."""
    return _LINE.findall(text)


def split_document(
    text: str, line: int, character: int, *, prefix_chars: int, suffix_chars: int, block_lines: int = 32
) -> tuple[str, str, int, int]:
    """Cut prefix and suffix around a cursor (0-based line/character) when no retriever is present.

    Returns (prefix, suffix, first_line, last_line), lines 0-based. The prefix starts
    at a line that only moves in steps of `block_lines`, so cursor moves within a
    block keep the start of the prompt (and vLLM's prefix cache) unchanged.
    """
    lines = document_lines(text)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")  # the empty last line is a line the cursor can be on
    line = max(0, min(line, len(lines) - 1))
    current = lines[line]
    character = max(0, min(character, len(current.rstrip("\r\n"))))
    budget = prefix_chars - character
    start = line
    while start > 0 and len(lines[start - 1]) <= budget:
        budget -= len(lines[start - 1])
        start -= 1
    if start > 0:
        # Round up to a block boundary: fewer chars, and the same start for nearby cursors.
        # Blocks are at most half of what fits, so at least half the budget stays in use.
        block = max(1, min(block_lines, (line - start) // 2))
        start = min(line, -(-start // block) * block)
    prefix = "".join(lines[start:line]) + current[:character]
    suffix = current[character:][:suffix_chars]
    end = line
    for later in lines[line + 1 :]:
        if len(suffix) + len(later) > suffix_chars:
            break
        suffix += later
        end += 1
    return prefix, suffix, start, end


def stable_prefix(text: str, prefix: str, first: int, line: int, block_lines: int = 32) -> tuple[str, int]:
    """Start a budget-cut prefix at a line that moves in blocks, not with every cursor move.

    A prefix cut back from the cursor starts one line later each time the cursor
    moves down a line, so the prompt differs right after the retrieved snippets
    and vLLM's prefix cache misses the whole file part. Dropping the first few
    lines (up to a block boundary; at most half of the prefix) keeps the start
    fixed while the cursor moves within a block.
    """
    if first <= 0 or line <= first:
        return prefix, first
    block = max(1, min(block_lines, (line - first) // 2))
    start = min(line, -(-first // block) * block)
    rows = text.split("\n")
    dropped = "".join(row + "\n" for row in rows[first:start])
    if not prefix.startswith(dropped):
        return prefix, first  # not a whole-line cut of this text: leave it alone
    return prefix[len(dropped) :], start


def fit_prompt(
    prefix: str,
    suffix: str,
    snippets: Sequence[Snippet],
    max_chars: int,
    overhead: int = 64,
    placeholder_chars: float = 0.0,
) -> tuple[str, str, list[Snippet], int]:
    """Shrink a prompt's parts to about `max_chars` (the server's context length, in characters).

    Retrieved snippets go first (the last, lowest ranked, first), then the suffix
    down to a quarter of the room, then whole lines from the start of the prefix.
    `placeholder_chars`: what one redaction placeholder costs in the budget (it tokenizes more
    densely than code); each counts that much instead of its length.
    Returns (prefix, suffix, snippets, lines dropped from the prefix's start).
    """
    kept = list(snippets)

    def weight(text: str) -> int:
        if not placeholder_chars or "[REDACTED:" not in text:
            return len(text)
        tokens = _REDACTED.findall(text)
        return len(text) + int(sum(max(0.0, placeholder_chars - len(t)) for t in tokens))

    def size() -> int:
        return (
            weight(prefix) + weight(suffix) + sum(weight(s.text) + len(s.path) + 24 for s in kept) + overhead
        )

    while kept and size() > max_chars:
        kept.pop()
    if size() > max_chars:
        room = max(0, max_chars - overhead)
        suffix = suffix[: _token_safe(suffix, max(room // 4, room - weight(prefix)), back=True)]
        cut = suffix.rfind("\n")
        if len(suffix) > 0 and cut > 0:
            suffix = suffix[:cut]
    dropped = 0
    while size() > max_chars and "\n" in prefix:
        prefix = prefix.split("\n", 1)[1]
        dropped += 1
    if size() > max_chars:
        start = len(prefix) - max(0, max_chars - overhead - weight(suffix))
        prefix = prefix[_token_safe(prefix, start, back=False) :]
        while prefix and size() > max_chars:  # placeholders left in the kept part weigh more
            prefix = prefix[_token_safe(prefix, max(1, len(prefix) // 8), back=False) :]
        while suffix and size() > max_chars:
            suffix = suffix[: _token_safe(suffix, len(suffix) * 7 // 8, back=True)]
    return prefix, suffix, kept, dropped


_REDACTED = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\]")


def _token_safe(text: str, cut: int, back: bool) -> int:
    """A cut offset moved out of any redaction token it falls in (before it, or after it)."""
    if "[REDACTED:" not in text:
        return cut
    for m in _REDACTED.finditer(text):
        if m.start() < cut < m.end():
            return m.start() if back else m.end()
    return cut
