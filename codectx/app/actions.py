"""The named refactors every surface offers: a title for menus and the instruction the model gets.

The language server lists them as code actions (codectx.lsp.actions); a chat or MCP surface can
offer the same ones by name. `fix` takes the diagnostic's message; `explain` edits nothing (it
goes to WorkspaceSession.explain, the others to WorkspaceSession.refactor_edit).
"""

from __future__ import annotations

from dataclasses import dataclass

KIND_REWRITE = "refactor.rewrite.codectx"
KIND_FIX = "quickfix.codectx"
KIND_EXPLAIN = "refactor.codectx.explain"


@dataclass(frozen=True)
class ActionSpec:
    title: str
    kind: str  # the LSP code-action kind it is listed under
    instruction: str


ACTIONS: dict[str, ActionSpec] = {
    "rewrite": ActionSpec(
        "codectx: Rewrite selection (clearer, same behaviour)",
        KIND_REWRITE,
        "Rewrite this code to be clearer and more idiomatic. Keep its behaviour and public names unchanged.",
    ),
    "docstring": ActionSpec(
        "codectx: Add docstring",
        KIND_REWRITE,
        "Add a concise docstring (or doc comment) to each function or class in this code. "
        "Change nothing else.",
    ),
    "types": ActionSpec(
        "codectx: Add type annotations",
        KIND_REWRITE,
        "Add type annotations to the parameters and return values in this code. Change nothing else.",
    ),
    "fix": ActionSpec("codectx: Fix “{message}”", KIND_FIX, "Fix this problem reported by a tool: {message}"),
    "explain": ActionSpec("codectx: Explain this code", KIND_EXPLAIN, "Explain what this code does."),
}
