/**
 * The codectx commands: thin handlers that ask the language server and show
 * the answer. Argument checks and answer parsing live in commandArgs.ts.
 */
import { execFile } from "node:child_process";

import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";

import {
  errorMessage,
  interpretRefactorResult,
  parseSearchResults,
  refactorArgs,
  type SearchHit,
  searchArgs,
  validateInstruction,
} from "./commandArgs";
import { type BackendHealth, checkSummary } from "./backendHealth";
import { parseContextRecord, renderContext } from "./contextView";
import type { ReadOnlyDocuments } from "./documents";
import type { ApiKeyStore } from "./secrets";
import type { ServerManager } from "./server";
import type { ExtensionSettings } from "./settings";

export interface CommandDeps {
  server: ServerManager;
  documents: ReadOnlyDocuments;
  apiKey: ApiKeyStore;
  log: vscode.LogOutputChannel;
  settings(): ExtensionSettings;
  /** Probe the backend now through the language server. */
  checkBackend(): Promise<{ health: BackendHealth | undefined; probeSupported: boolean }>;
  togglePaused(): boolean;
}

const SEARCH_DELAY_MS = 150;
const AUDIT_ENTRIES = 100;
const CLI_TIMEOUT_MS = 120_000;

function executeOnServer(client: LanguageClient, command: string, arg: unknown, token?: vscode.CancellationToken): Promise<unknown> {
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] }, token);
}

/** `codectx/search` gives symbols and snippets; plain `codectx.search` (locations) is the fallback. */
async function searchOnServer(client: LanguageClient, args: { query: string; k: number }, token: vscode.CancellationToken): Promise<unknown> {
  try {
    return await client.sendRequest("codectx/search", args, token);
  } catch (err) {
    if ((err as { code?: number }).code !== -32601) throw err; // anything but "method not found"
    return executeOnServer(client, "codectx.search", args, token);
  }
}

/** Run a handler; a failure becomes one error message instead of an unhandled rejection. */
function guarded<A extends unknown[]>(log: vscode.LogOutputChannel, name: string, fn: (...args: A) => Promise<unknown>) {
  return async (...args: A): Promise<void> => {
    try {
      await fn(...args);
    } catch (err) {
      const message = errorMessage(err);
      log.error(`${name}: ${message}`);
      void vscode.window.showErrorMessage(`codectx: ${message}`);
    }
  };
}

function folderUris(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
}

async function openLocation(hit: SearchHit, client: LanguageClient): Promise<void> {
  const range = client.protocol2CodeConverter.asRange(hit.location.range);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(hit.location.uri));
  const editor = await vscode.window.showTextDocument(doc);
  // The hit stays selected with the cursor on its first line, where the user starts reading
  // (showTextDocument's own `selection` would leave the cursor at the end).
  editor.selection = new vscode.Selection(range.end, range.start);
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

async function searchCodebase(deps: CommandDeps): Promise<void> {
  const client = deps.server.require();
  const pick = vscode.window.createQuickPick<vscode.QuickPickItem & { hit?: SearchHit }>();
  pick.title = "codectx: Search Codebase";
  pick.placeholder = "Describe what you are looking for, or type a name";
  pick.matchOnDescription = true;
  pick.matchOnDetail = true;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: vscode.CancellationTokenSource | undefined;
  const run = (value: string): void => {
    inFlight?.cancel();
    const args = searchArgs(value);
    if (!args) {
      pick.items = [];
      pick.busy = false;
      return;
    }
    const source = new vscode.CancellationTokenSource();
    inFlight = source;
    pick.busy = true;
    searchOnServer(client, args, source.token).then(
      (raw) => {
        if (source.token.isCancellationRequested) return;
        const hits = parseSearchResults(raw, folderUris());
        // Results are already ranked by meaning; keep them even when the words do not match.
        pick.items = hits.map((hit) => ({ label: hit.label, description: hit.description, detail: hit.detail, hit, alwaysShow: true }));
        pick.busy = false;
      },
      (err) => {
        if (source.token.isCancellationRequested) return;
        pick.busy = false;
        pick.items = [{ label: `$(error) ${errorMessage(err)}`, alwaysShow: true }];
      },
    );
  };
  pick.onDidChangeValue((value) => {
    clearTimeout(timer);
    timer = setTimeout(() => run(value), SEARCH_DELAY_MS);
  });
  const chosen = await new Promise<SearchHit | undefined>((resolve) => {
    pick.onDidAccept(() => resolve(pick.selectedItems[0]?.hit));
    pick.onDidHide(() => resolve(undefined));
    pick.show();
  });
  clearTimeout(timer);
  inFlight?.cancel();
  pick.dispose();
  if (chosen) await openLocation(chosen, client);
}

async function refactorSelection(deps: CommandDeps): Promise<void> {
  const client = deps.server.require();
  const editor = vscode.window.activeTextEditor;
  if (!editor) throw new Error("open a file and select the code to refactor first");
  const selection = editor.selection.isEmpty ? editor.document.lineAt(editor.selection.active.line).range : editor.selection;
  const instruction = await vscode.window.showInputBox({
    title: "codectx: Refactor Selection",
    prompt: "What should change? e.g. \"add type hints\", \"extract the loop into a function\"",
    ignoreFocusOut: true,
    validateInput: validateInstruction,
  });
  if (instruction === undefined) return;
  const doc = editor.document;
  const version = doc.version;
  const args = refactorArgs(doc.uri.toString(), client.code2ProtocolConverter.asRange(selection), instruction);
  const raw = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "codectx: refactoring…", cancellable: true },
    (_progress, token) => executeOnServer(client, "codectx.refactor", args, token),
  );
  const outcome = interpretRefactorResult(raw);
  if (outcome.kind === "refused") {
    deps.log.info(`refactor refused: ${outcome.message}`);
    void vscode.window.showWarningMessage(`codectx: no change made: ${outcome.message}`);
    return;
  }
  if (doc.version !== version) {
    throw new Error("the file changed while the refactor was being prepared; run it again");
  }
  const edit = await client.protocol2CodeConverter.asWorkspaceEdit(outcome.edit as never);
  // One applyEdit is one undo step per file.
  if (!edit || !(await vscode.workspace.applyEdit(edit))) throw new Error("VS Code could not apply the refactor");
  deps.log.info(`refactor applied to ${outcome.files} file(s)`);
}

async function showContextSent(deps: CommandDeps): Promise<void> {
  const client = deps.server.require();
  const raw = await executeOnServer(client, "codectx.showContext", {});
  await deps.documents.show("context-sent.md", renderContext(parseContextRecord(raw)), "markdown");
}

function runCli(command: string, args: string[], cwd: string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, timeout: CLI_TIMEOUT_MS, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const detail = err.killed
          ? `no answer within ${CLI_TIMEOUT_MS / 1000} s`
          : stderr.trim().split("\n").at(-1) || err.message;
        reject(new Error(`${[command, ...args].join(" ")} failed: ${detail}`));
      } else {
        resolve(stdout);
      }
    });
  });
}

async function showAuditLog(deps: CommandDeps): Promise<void> {
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: "codectx: reading the audit log" }, () =>
    readAuditLog(deps),
  );
}

async function readAuditLog(deps: CommandDeps): Promise<void> {
  const cli = deps.server.cli;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const shown = await runCli(cli.command, [...cli.args, "audit", "show", "--last", String(AUDIT_ENTRIES)], folder);
  let verdict: string;
  try {
    verdict = (await runCli(cli.command, [...cli.args, "audit", "verify"], folder)).trim() || "hash chain verified";
  } catch (err) {
    verdict = `VERIFICATION FAILED: ${errorMessage(err)}`;
  }
  const body = shown.trim() ? shown : "The audit log is empty: nothing has been sent.\n";
  await deps.documents.show("audit-log.txt", `codectx audit log (last ${AUDIT_ENTRIES} requests)\n${verdict}\n\n${body}`, "plaintext");
}

async function checkBackend(deps: CommandDeps): Promise<void> {
  deps.server.require();
  const { health, probeSupported } = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: "codectx: checking the model server" },
    () => deps.checkBackend(),
  );
  const summary = checkSummary(health, probeSupported);
  deps.log.info(summary.message);
  if (summary.severity === "info") {
    void vscode.window.showInformationMessage(summary.message);
    return;
  }
  const choice = await vscode.window.showWarningMessage(summary.message, "Open Settings", "Show Output");
  if (choice === "Open Settings") await vscode.commands.executeCommand("workbench.action.openSettings", "codectx.backend");
  if (choice === "Show Output") deps.log.show();
}

async function showMenu(deps: CommandDeps): Promise<void> {
  const paused = deps.settings().completionEnabled ? "" : " (off in settings)";
  const entries: [string, string][] = [
    ["$(debug-pause) Pause/Resume Inline Completions" + paused, "codectx.toggleCompletions"],
    ["$(search) Search Codebase", "codectx.searchCodebase"],
    ["$(refresh) Reindex Workspace", "codectx.reindexWorkspace"],
    ["$(pulse) Check Backend", "codectx.checkBackend"],
    ["$(eye) Show Context Sent", "codectx.showContextSent"],
    ["$(book) Show Audit Log", "codectx.showAuditLog"],
    ["$(key) Set API Key", "codectx.setApiKey"],
    ["$(debug-restart) Restart Language Server", "codectx.restartServer"],
    ["$(output) Show Output", "codectx.showOutput"],
    ["$(gear) Open Settings", "workbench.action.openSettings"],
  ];
  const choice = await vscode.window.showQuickPick(
    entries.map(([label, command]) => ({ label, command })),
    { title: "codectx" },
  );
  if (!choice) return;
  if (choice.command === "workbench.action.openSettings") {
    await vscode.commands.executeCommand(choice.command, "@ext:codectx.codectx");
  } else {
    await vscode.commands.executeCommand(choice.command);
  }
}

export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const { log } = deps;
  const reg = (id: string, fn: () => Promise<unknown>): vscode.Disposable =>
    vscode.commands.registerCommand(id, guarded(log, id, fn));
  return [
    reg("codectx.searchCodebase", () => searchCodebase(deps)),
    reg("codectx.refactorSelection", () => refactorSelection(deps)),
    reg("codectx.reindexWorkspace", async () => {
      await executeOnServer(deps.server.require(), "codectx.reindex", {});
      log.info("reindex requested");
    }),
    reg("codectx.showContextSent", () => showContextSent(deps)),
    reg("codectx.showAuditLog", () => showAuditLog(deps)),
    reg("codectx.setApiKey", async () => {
      if (await deps.apiKey.prompt()) void vscode.window.showInformationMessage("codectx: API key stored in VS Code's secret storage.");
    }),
    reg("codectx.clearApiKey", async () => {
      await deps.apiKey.clear();
      void vscode.window.showInformationMessage("codectx: API key removed.");
    }),
    reg("codectx.toggleCompletions", () => {
      const paused = deps.togglePaused();
      vscode.window.setStatusBarMessage(`codectx: inline completions ${paused ? "paused" : "resumed"}`, 3000);
      return Promise.resolve();
    }),
    reg("codectx.checkBackend", () => checkBackend(deps)),
    reg("codectx.restartServer", () => deps.server.restart()),
    reg("codectx.showOutput", () => Promise.resolve(log.show())),
    reg("codectx.showMenu", () => showMenu(deps)),
  ];
}
