/**
 * Where the codectx language server comes from, in the order ruff-vscode uses:
 * `codectx.server.command`, then `codectx.server.interpreter`, then the
 * interpreter selected in the Python extension (when codectx is installed
 * there), then `codectx` on PATH. When none has codectx, the answer says what
 * was tried and how to install it.
 *
 * Pure: the checks that run programs are passed in, so every order can be tested.
 */
import { type ExtensionSettings, resolveServerCommand, type ServerCommand } from "./settings";

export const INSTALL_HINT =
  "pipx install ./codectx from a checkout of codectx (or: uv tool install ./codectx); it is not on PyPI yet";

export type ServerSource = "command" | "interpreter" | "python-extension" | "path";

export interface LocatedServer extends ServerCommand {
  source: ServerSource;
}

export interface ServerNotFound {
  missing: true;
  /** What was looked at, for the message and the log. */
  tried: string[];
  message: string;
}

export interface LocateProbes {
  /** The Python extension's selected interpreter; undefined without the extension or a selection. */
  pythonInterpreter(): Promise<string | undefined>;
  /** Does this interpreter have codectx's language server (`import codectx.lsp`)? */
  interpreterHasCodectx(python: string): Promise<boolean>;
  /** Does `codectx --version` on PATH run and name codectx? */
  codectxOnPath(): Promise<boolean>;
}

/**
 * Ask a Python whether it has this codectx (the `codectx.lsp` package): an unrelated PyPI
 * project also called codectx has no such subpackage. Exit status 0: yes.
 */
export const INTERPRETER_CHECK = [
  "-c",
  "import importlib.util as u, sys; sys.exit(0 if u.find_spec('codectx') and u.find_spec('codectx.lsp') else 3)",
];

export function isNotFound(found: LocatedServer | ServerNotFound): found is ServerNotFound {
  return (found as ServerNotFound).missing === true;
}

export function notFoundMessage(tried: string[]): string {
  return (
    `codectx: the codectx language server was not found (looked at ${tried.join("; ")}). ` +
    `Install it with ${INSTALL_HINT}, or into the selected Python environment with ` +
    "pip install ./codectx; or set codectx.server.interpreter or codectx.server.command."
  );
}

export async function locateServer(settings: ExtensionSettings, probes: LocateProbes): Promise<LocatedServer | ServerNotFound> {
  // What the user configured is used as is: a wrong path fails at start with its own message.
  if (settings.serverCommand.length > 0) return { ...resolveServerCommand(settings), source: "command" };
  if (settings.serverInterpreter) return { ...resolveServerCommand(settings), source: "interpreter" };
  const tried: string[] = [];
  const python = await probes.pythonInterpreter().catch(() => undefined);
  if (python) {
    if (await probes.interpreterHasCodectx(python).catch(() => false)) {
      const server = resolveServerCommand({ ...settings, serverInterpreter: python });
      return { ...server, source: "python-extension" };
    }
    tried.push(`the Python extension's interpreter ${python} (no codectx there)`);
  } else {
    tried.push("the Python extension (not installed, or no interpreter selected)");
  }
  if (await probes.codectxOnPath().catch(() => false)) return { ...resolveServerCommand(settings), source: "path" };
  tried.push("`codectx` on PATH (not found)");
  return { missing: true, tried, message: notFoundMessage(tried) };
}

/**
 * The codectx command line for one-off CLI commands (e.g. `audit`): the server
 * command without its `lsp` argument and what follows it.
 */
export function cliOf(server: ServerCommand): { command: string; args: string[] } {
  const lspAt = server.args.lastIndexOf("lsp");
  return { command: server.command, args: lspAt >= 0 ? server.args.slice(0, lspAt) : server.args };
}

/** How the log names where the server came from. */
export function describeSource(server: LocatedServer): string {
  switch (server.source) {
    case "command":
      return "codectx.server.command";
    case "interpreter":
      return "codectx.server.interpreter";
    case "python-extension":
      return "the Python extension's selected interpreter";
    case "path":
      return "PATH";
  }
}
