"""Applying an answer's code block to a file: the whole new text, syntax-checked like refactors.

The block (its secrets already put back: it comes from the answer the user saw) replaces the
editor's selection when there is one; else the top-level definition of the file with the same
name as the block's first definition (found with tree-sitter); else it is appended. The result
must parse when the file did (codectx.app.refactor.check_parses); the surface shows the diff and
writes nothing until the user accepts.

Some files are never a target, whatever the answer's fence or the editor names (`target_refusal`):
anything under a `.git` folder (the repository's configuration and hooks: git runs the commands a
`core.fsmonitor` or hook names) and every file of the never-send/never-index policy (`.env`, keys,
the user's `privacy.never_send` and `index.never_index`), by its own name and by the real path a
link resolves to. codectx neither reads those out nor writes model output into them.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from codectx.app.chat_model import CodeBlock
from codectx.app.index import enclosing_definition, language_for
from codectx.app.redaction import cursor_offset
from codectx.app.refactor import check_parses
from codectx.privacy.policy import is_dot_git, never_send_match

if TYPE_CHECKING:
    from pathlib import Path

    from codectx.settings import Settings

_DEFINITION = re.compile(
    r"^(?:export\s+)?(?:pub\s+)?(?:async\s+)?(?:def|class|function|func|fn|struct|interface|type|enum)\s+"
    r"([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)


def target_refusal(rel: str, settings: Settings | None, root: Path | None = None) -> str | None:
    """Why a code block may not be applied to the workspace-relative file `rel`, or None.

    Refused: a path with a `.git` part (any spelling a file system reads as it: policy.is_dot_git) and a
    never-send file (`settings`: the folder's; None judges by the built-in list only). With `root`,
    the real path a link resolves to is judged too."""
    names = [rel]
    if root is not None:
        real, base = os.path.realpath(os.path.join(root, rel)), os.path.realpath(root)
        if real != base and real.startswith(base.rstrip(os.sep) + os.sep):
            names.append(os.path.relpath(real, base).replace(os.sep, "/"))
    for name in dict.fromkeys(names):
        via = "" if name == rel else f" (a link to {name})"
        if any(is_dot_git(part) for part in _parts(name)):
            return (
                f"refused to apply the code block to {rel}{via}: files under .git/ are the "
                "repository's own configuration and hooks (git runs the commands they name)"
            )
        pattern = never_send_match(name, settings)
        if pattern:
            return (
                f"refused to apply the code block to {rel}{via}: it matches the never-send pattern "
                f"'{pattern}' (a file codectx never reads out, sends or edits)"
            )
    return None


def _parts(path: str) -> list[str]:
    return [part for part in path.replace("\\", "/").split("/") if part]


def apply_block(
    block: CodeBlock, path: str, text: str, selection: tuple[int, int, int, int] | None
) -> tuple[str, list[str]]:
    """(the whole file after the edit, warnings)."""
    warnings: list[str] = []
    if block.path and block.path != path:
        never = (
            " (a file codectx never edits: under .git/ or never-send)"
            if target_refusal(block.path, None)
            else ""
        )
        warnings.append(f"the answer names {block.path} for this block{never}; it is applied to {path}")
    code = block.text
    if selection is not None and selection[:2] != selection[2:]:
        a = cursor_offset(text, selection[0], selection[1])
        b = cursor_offset(text, selection[2], selection[3])
        new = text[:a] + code + text[b:]
    else:
        new = _replace_definition(code, text, language_for(path)) or _append(code, text)
    check_parses(text, new, language_for(path))
    return new, warnings


def _replace_definition(code: str, text: str, language: str | None) -> str | None:
    head = _DEFINITION.search(code.lstrip())
    if head is None:
        return None
    lines = text.split("\n")
    for match in _DEFINITION.finditer(text):
        if match.group(1) != head.group(1) or match.start() != text.rfind("\n", 0, match.start()) + 1:
            continue
        line = text.count("\n", 0, match.start())
        scope = enclosing_definition(text, language, line, match.start(1) - match.start())
        first, last = scope if scope is not None and scope[0] == line else (line, _block_end(lines, line))
        body = code.rstrip("\n").split("\n")
        return "\n".join(lines[:first] + body + lines[last + 1 :])
    return None


def _block_end(lines: list[str], first: int) -> int:
    """The last non-blank line of an indented block starting at `first` (no parser at hand)."""
    end = first
    for j in range(first + 1, len(lines)):
        if lines[j].strip() and not lines[j][0].isspace():
            break
        if lines[j].strip():
            end = j
    return end


def _append(code: str, text: str) -> str:
    return text.rstrip("\n") + "\n\n\n" + code.rstrip("\n") + "\n"
