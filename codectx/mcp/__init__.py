"""codectx as a Model Context Protocol server (`codectx mcp`): search, definitions, references,
completion context and confined reads of the local index for any coding agent.

The server is a surface like the language server: it turns MCP tool calls into calls of each
root's `WorkspaceSession` (codectx.app) and hands back what the session's `Handout` released,
redacted and audited, byte for byte. `workspaces.py` keeps one session and one fresh index per
root, `tools.py` shapes each tool's answer, `server.py` registers the tools with the official
SDK (`mcp`) and serves stdio or Streamable HTTP on loopback, `cli.py` is the command.
"""
