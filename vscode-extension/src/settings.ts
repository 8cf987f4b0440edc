/**
 * The extension's settings: read from VS Code's configuration into one plain
 * object, and translated into the language server's settings shape
 * ({"codectx": {section: {key: value}}}, mirroring codectx/schema.py).
 *
 * Pure: VS Code is reached only through the `Inspect` function passed in, so
 * the scope rules can be unit-tested.
 */

/** What `WorkspaceConfiguration.inspect` returns, reduced to what we use. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

export type Inspect = <T>(key: string) => Inspected<T> | undefined;

export interface ExtensionSettings {
  serverCommand: string[];
  serverInterpreter: string;
  backendUrl: string;
  backendModel: string;
  completionEnabled: boolean;
  debounceMs: number;
  neverSend: string[];
  redact: boolean;
  trace: "off" | "messages" | "verbose";
  /** Seconds between backend probes while the window is focused; 0: only on start and on request. */
  healthIntervalSec: number;
}

export const DEFAULTS: ExtensionSettings = {
  serverCommand: [],
  serverInterpreter: "",
  backendUrl: "",
  backendModel: "",
  completionEnabled: true,
  debounceMs: 75,
  neverSend: [],
  redact: true,
  trace: "off",
  healthIntervalSec: 60,
};

/** Keys that could send code elsewhere, weaken privacy or run a program: user level only. */
export const USER_LEVEL_ONLY = [
  "server.command",
  "server.interpreter",
  "backend.url",
  "backend.model", // a gateway routes by model name: it can send the code to another provider
  "privacy.neverSend",
  "privacy.redact",
] as const;

function userLevel<T>(inspect: Inspect, key: string): T | undefined {
  const info = inspect<T>(key);
  return info?.globalValue ?? info?.defaultValue;
}

function anyLevel<T>(inspect: Inspect, key: string): T | undefined {
  const info = inspect<T>(key);
  return info?.workspaceFolderValue ?? info?.workspaceValue ?? info?.globalValue ?? info?.defaultValue;
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string" && v.trim() !== "") : [];
}

function str(value: unknown, fallback: string): string {
  return typeof value === "string" ? value.trim() : fallback;
}

function clampInt(value: unknown, fallback: number, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return fallback;
  }
  return Math.min(max, Math.max(min, Math.round(value)));
}

/**
 * Resolve the settings. Privacy-weakening keys and the server command are taken
 * from user settings only, even if a workspace file sets them: VS Code already
 * ignores workspace values of `application`/`machine` settings, this makes it
 * hold for any editor that does not.
 */
export function readSettings(inspect: Inspect): ExtensionSettings {
  // User-level only: the verbose trace copies whole documents (secrets and all) into VS Code's logs,
  // so a cloned repository's .vscode/settings.json must not switch it on.
  const trace = userLevel<string>(inspect, "trace.server");
  return {
    serverCommand: stringList(userLevel(inspect, "server.command")),
    serverInterpreter: str(userLevel(inspect, "server.interpreter"), ""),
    backendUrl: str(userLevel(inspect, "backend.url"), ""),
    backendModel: str(userLevel(inspect, "backend.model"), ""),
    completionEnabled: anyLevel<boolean>(inspect, "completion.enabled") !== false,
    debounceMs: clampInt(anyLevel(inspect, "completion.debounceMs"), DEFAULTS.debounceMs, 0, 5000),
    neverSend: stringList(userLevel(inspect, "privacy.neverSend")),
    redact: userLevel<boolean>(inspect, "privacy.redact") !== false,
    trace: trace === "messages" || trace === "verbose" ? trace : "off",
    healthIntervalSec: clampInt(anyLevel(inspect, "health.intervalSeconds"), DEFAULTS.healthIntervalSec, 0, 86_400),
  };
}

export type ServerSections = Record<string, Record<string, unknown>>;

/**
 * The user-level settings in the server's shape. Unset values are left out so
 * the server's own layers (config.toml, environment) still apply.
 */
export function toServerSettings(s: ExtensionSettings, apiKey?: string): { codectx: ServerSections } {
  const backend: Record<string, unknown> = {};
  if (s.backendUrl) backend.url = s.backendUrl;
  if (s.backendModel) backend.model = s.backendModel;
  if (apiKey) backend.api_key = apiKey;
  const privacy: Record<string, unknown> = {};
  if (s.neverSend.length > 0) privacy.never_send = s.neverSend;
  if (!s.redact) privacy.redact = false;
  const sections: ServerSections = {
    // The extension debounces keystrokes itself (codectx.completion.debounceMs); a second wait in the server would only add latency.
    lsp: { completion: s.completionEnabled, debounce_ms: 0 },
  };
  if (Object.keys(backend).length > 0) sections.backend = backend;
  if (Object.keys(privacy).length > 0) sections.privacy = privacy;
  return { codectx: sections };
}

/**
 * Folder-level settings for the server's `workspace/configuration` pull: only
 * what a workspace may set. The server drops privacy keys from this layer too.
 */
export function toFolderSettings(inspect: Inspect): { codectx: ServerSections } {
  const sections: ServerSections = {};
  const enabled = inspect<boolean>("completion.enabled");
  const folderEnabled = enabled?.workspaceFolderValue ?? enabled?.workspaceValue;
  if (typeof folderEnabled === "boolean") {
    sections.lsp = { completion: folderEnabled };
  }
  return { codectx: sections };
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** How the user would recognise it in a message. */
  display: string;
}

/** The command line that starts `codectx lsp`: configured command, interpreter, or PATH. */
export function resolveServerCommand(s: ExtensionSettings): ServerCommand {
  let command: string;
  let args: string[];
  if (s.serverCommand.length > 0) {
    [command, ...args] = s.serverCommand as [string, ...string[]];
  } else if (s.serverInterpreter) {
    command = s.serverInterpreter;
    args = ["-m", "codectx", "lsp"];
  } else {
    command = "codectx";
    args = ["lsp"];
  }
  return { command, args, display: [command, ...args].join(" ") };
}

/** Does a configuration change need a server restart (not just a settings push)? */
export function needsRestart(before: ExtensionSettings, after: ExtensionSettings): boolean {
  return (
    JSON.stringify(before.serverCommand) !== JSON.stringify(after.serverCommand) ||
    before.serverInterpreter !== after.serverInterpreter
  );
}
