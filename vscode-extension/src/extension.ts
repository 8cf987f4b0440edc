/** Entry point: wires settings, the language server, the status bar, the commands and the chat together. */
import * as vscode from "vscode";

import { healthFromMessage } from "./backendHealth";
import { registerChat } from "./chat/register";
import { registerCommands } from "./commands";
import { completionMiddleware } from "./completions";
import { ReadOnlyDocuments } from "./documents";
import { HealthMonitor } from "./health";
import { LanguageStatus } from "./languageStatus";
import { locateProbes, onInterpreterChanged } from "./pythonEnvironment";
import { ApiKeyStore } from "./secrets";
import { ServerManager } from "./server";
import { locateServer } from "./serverLocation";
import { type ExtensionSettings, type Inspect, needsRestart, readSettings } from "./settings";
import { StatusBar } from "./statusBar";
import { markWalkthrough } from "./walkthrough";

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
  const languageStatus = new LanguageStatus([{ scheme: "file" }]);
  const probes = locateProbes(log);
  const documents = new ReadOnlyDocuments();
  const apiKey = new ApiKeyStore(context.secrets);
  const health = new HealthMonitor({
    current: () => status.current.backend,
    model: () => settings.backendModel || undefined,
    intervalSec: () => settings.healthIntervalSec,
    update: (backend) => status.setBackend(backend),
    updateIndex: (index) => status.setIndex(index),
    log,
  });

  const server = new ServerManager(log, {
    settings: () => settings,
    locate: () => locateServer(settings, probes),
    apiKey: () => apiKey.get(),
    inspectFor: (scopeUri) => inspectorFor(scopeUri ? vscode.Uri.parse(scopeUri) : undefined),
    middleware: completionMiddleware({
      enabled: () => settings.completionEnabled,
      paused: () => paused,
      debounceMs: () => settings.debounceMs,
      answered: (count, where) => {
        if (count === 0) return;
        log.info(`inline suggestion: ${where}`);
        markWalkthrough("suggestionShown");
        health.inferred({ state: "ok", model: settings.backendModel || undefined, probed: false });
      },
    }),
    onState: (state, detail) => {
      status.setServer(state);
      if (state === "running") markWalkthrough("serverRunning");
      if (detail) log.info(`server ${state}: ${detail}`);
    },
    onProgress: (token, value) => {
      status.progress(token, value);
      // The index state shown came from the last probe: ask again once a pass ends.
      if (value.kind === "end") void health.refreshIndex();
      if (value.kind !== "report") log.info(`progress ${token} ${value.kind}: ${value.kind === "begin" ? value.title : (value.message ?? "")}`);
    },
    onMessage: (type, message) => {
      const inferred = healthFromMessage(message);
      if (inferred) health.inferred(inferred);
      log.info(`server message: ${message}`);
      const show =
        type === 1 ? vscode.window.showErrorMessage : type === 2 ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
      void show(message);
    },
  });

  health.follow(server);
  running = server;
  context.subscriptions.push(
    log,
    status,
    languageStatus,
    status.onChange((state) => languageStatus.render(state)),
    documents,
    health,
    server.traceChannel,
    ...registerCommands({
      server,
      documents,
      apiKey,
      log,
      settings: () => settings,
      checkBackend: async () => ({ health: await health.probe(), probeSupported: health.probeSupported }),
      togglePaused: () => {
        paused = !paused;
        void context.globalState.update(PAUSED_KEY, paused);
        status.setCompletions(settings.completionEnabled, paused);
        return paused;
      },
    }),
    ...registerChat(context, { server, documents, log }),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration("codectx")) return;
      const before = settings;
      settings = readSettings(inspectorFor());
      status.setCompletions(settings.completionEnabled, paused);
      server.traceChannel.setSetting(settings.trace);
      if (before.healthIntervalSec !== settings.healthIntervalSec) health.reschedule();
      if (needsRestart(before, settings)) await server.restart();
      else await server.pushSettings();
    }),
    apiKey.onDidChange(() => {
      log.info("API key changed: restarting the language server");
      void server.restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.start()),
  );
  // A newly selected Python environment may be the one with codectx: look again, unless a setting decides.
  const interpreterWatch = await onInterpreterChanged(() => {
    if (server.source === "command" || server.source === "interpreter") return;
    log.info("the Python extension's interpreter changed: restarting the language server");
    void server.restart();
  });
  if (interpreterWatch) context.subscriptions.push(interpreterWatch);
  const version = (context.extension.packageJSON as { version?: string }).version ?? "?";
  log.info(`codectx extension ${version} activated`);
  await server.start();
}

/** Stop the server cleanly (shutdown + exit) before VS Code disposes the rest. */
export async function deactivate(): Promise<void> {
  await running?.stop();
  running = undefined;
}
