"""The application layer: one typed session per workspace that every surface calls.

The shell (codectx/app/cli.py, codectx/app/complete_cli.py), the language server (codectx.lsp),
chat (chat*.py) and the MCP server (codectx.mcp) all go through `WorkspaceSession` (session.py):
completions, refactors, explanations, context and search. The pieces behind it:

- index.py: the one door to codectx.indexer and codectx.retriever, with typed Protocols for
  what they return;
- completion.py, refactor.py, explain.py: each request's prompt, call and post-processing;
- redaction.py, restore.py: secrets masked in each piece before a prompt is built, and put back
  locally in what the model answers;
- model.py: the served model, its prompt family, chat calls;
- results.py: what the methods return, and SentRequest, the record of what left the machine;
- embedders.py: loaded embedding models shared across sessions; actions.py: named refactors;
- keeper.py: one folder's index kept fresh for a long-running surface (the language server's
  folders, the MCP server's roots): the open store and coalesced background runs.

See docs/architecture.md for the layers and the path of a completion.
"""
