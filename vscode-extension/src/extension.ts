/** Entry point: wires settings, the language server, the status bar and the commands together. */
import * as vscode from "vscode";

import { registerCommands } from "./commands";
import { completionMiddleware } from "./completions";
import { ReadOnlyDocuments } from "./documents";
import { HealthMonitor } from "./health";
import { ApiKeyStore } from "./secrets";
import { ServerManager } from "./server";
import { type ExtensionSettings, type Inspect, needsRestart, readSettings } from "./settings";
import { healthFromMessage } from "./status";
import { StatusBar } from "./statusBar";

const PAUSED_KEY = "codectx.completionsPaused";

let running: ServerManager | undefined;

function inspectorFor(scope?: vscode.ConfigurationScope): Inspect {
  const config = vscode.workspace.getConfiguration("codectx", scope);
  return <T>(key: string) => config.inspect<T>(key);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel("codectx", { log: true });
  let settings: ExtensionSettings = readSettings(inspectorFor());
  let paused = context.globalState.get<boolean>(PAUSED_KEY, false);
  const status = new StatusBar(settings.completionEnabled, paused);
  const documents = new ReadOnlyDocuments();
  const apiKey = new ApiKeyStore(context.secrets);

  const server = new ServerManager(log, {
    settings: () => settings,
    apiKey: () => apiKey.get(),
    inspectFor: (scopeUri) => inspectorFor(scopeUri ? vscode.Uri.parse(scopeUri) : undefined),
    middleware: completionMiddleware({
      enabled: () => settings.completionEnabled,
      paused: () => paused,
      debounceMs: () => settings.debounceMs,
      answered: (count, where) => {
        if (count === 0) return;
        log.info(`inline suggestion: ${where}`);
        status.setBackend({ reachable: true, model: settings.backendModel || undefined });
      },
    }),
    onState: (state, detail) => {
      status.setServer(state);
      if (detail) log.info(`server ${state}: ${detail}`);
    },
    onProgress: (token, value) => {
      status.progress(token, value);
      if (value.kind !== "report") log.info(`progress ${token} ${value.kind}: ${value.kind === "begin" ? value.title : (value.message ?? "")}`);
    },
    onMessage: (type, message) => {
      const health = healthFromMessage(message);
      if (health) status.setBackend(health);
      log.info(`server message: ${message}`);
      const show =
        type === 1 ? vscode.window.showErrorMessage : type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
      void show(message);
    },
  });

  const health = new HealthMonitor(
    server,
    () => status.current.backend,
    () => settings.backendModel || undefined,
    (h) => status.setBackend(h),
  );
  running = server;
  context.subscriptions.push(
    log,
    status,
    documents,
    health,
    ...registerCommands({
      server,
      documents,
      apiKey,
      log,
      settings: () => settings,
      togglePaused: () => {
        paused = !paused;
        void context.globalState.update(PAUSED_KEY, paused);
        status.setCompletions(settings.completionEnabled, paused);
        return paused;
      },
    }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration("codectx")) return;
      const before = settings;
      settings = readSettings(inspectorFor());
      status.setCompletions(settings.completionEnabled, paused);
      if (needsRestart(before, settings)) await server.restart();
      else await server.pushSettings();
    }),
    apiKey.onDidChange(() => {
      log.info("API key changed: restarting the language server");
      void server.restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.start()),
  );
  const version = (context.extension.packageJSON as { version?: string }).version ?? "?";
  log.info(`codectx extension ${version} activated`);
  await server.start();
}

/** Stop the server cleanly (shutdown + exit) before VS Code disposes the rest. */
export async function deactivate(): Promise<void> {
  await running?.stop();
  running = undefined;
}
