/**
 * The language server's lifecycle: start `codectx lsp` through
 * vscode-languageclient, push settings, restart it with backoff when it
 * crashes (telling the user once per streak), and stop it cleanly.
 */
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  type ResponseError,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
  ShowMessageNotification,
  State,
} from "vscode-languageclient/node";

import { ProgressFeature, type ProgressValue } from "./progress";
import { RestartPolicy } from "./restartPolicy";
import { cliOf, describeSource, INSTALL_HINT, isNotFound, type LocatedServer, type ServerNotFound } from "./serverLocation";
import { type ExtensionSettings, type Inspect, resolveServerCommand, toFolderSettings, toServerSettings } from "./settings";
import type { ServerState } from "./status";
import { TraceChannel } from "./traceChannel";

export interface ServerHooks {
  settings(): ExtensionSettings;
  /** Where the server is (serverLocation.ts): settings, the Python extension, PATH. */
  locate(): Promise<LocatedServer | ServerNotFound>;
  apiKey(): Promise<string | undefined>;
  /** Settings as seen from a folder (for the server's workspace/configuration pull). */
  inspectFor(scopeUri: string | undefined): Inspect;
  middleware: Middleware;
  onState(state: ServerState, detail?: string): void;
  onProgress(token: string, value: ProgressValue): void;
  onMessage(type: number, message: string): void;
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private generation = 0;
  private stopping = false;
  /** The current generation reached the running state (a failed start is not a crash). */
  private running = false;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Shared by every client generation, so the trace reads as one log across restarts. */
  private readonly trace: TraceChannel;
  private readonly policy = new RestartPolicy();
  private readonly listeners = new Set<(client: LanguageClient | undefined) => void>();
  /** The server command of the last start (for one-off CLI commands such as `audit`). */
  private located: LocatedServer | undefined;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly hooks: ServerHooks,
  ) {
    this.trace = new TraceChannel("codectx trace", hooks.settings().trace, (name) => vscode.window.createOutputChannel(name));
  }

  /** The protocol-trace channel; follows `codectx.trace.server` without a restart. */
  get traceChannel(): TraceChannel {
    return this.trace;
  }

  /** The codectx CLI next to the running server: the last located command without `lsp`. */
  get cli(): { command: string; args: string[] } {
    return cliOf(this.located ?? resolveServerCommand(this.hooks.settings()));
  }

  /** Where the current server came from, if it was located. */
  get source(): LocatedServer["source"] | undefined {
    return this.located?.source;
  }

  get current(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  onClientChanged(listener: (client: LanguageClient | undefined) => void): vscode.Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** The running client, or a clear error for the command that needed it. */
  require(): LanguageClient {
    const client = this.current;
    if (!client) {
      throw new Error(
        vscode.workspace.isTrusted
          ? "the codectx language server is not running (see codectx: Show Output)"
          : "codectx is restricted in an untrusted workspace; trust the workspace first",
      );
    }
    return client;
  }

  async start(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      this.hooks.onState("restricted");
      this.log.info("workspace not trusted: the language server is not started");
      return;
    }
    if (this.client) return;
    this.stopping = false;
    this.running = false;
    const generation = ++this.generation;
    const settings = this.hooks.settings();
    this.hooks.onState("starting");
    const found = await this.hooks.locate();
    if (generation !== this.generation) return;
    if (isNotFound(found)) {
      this.log.error(found.message);
      this.hooks.onState("failed", "codectx not found");
      void this.tellNotFound(found);
      return;
    }
    const server = found;
    this.located = server;
    this.log.info(`server from ${describeSource(server)}`);
    const apiKey = await this.hooks.apiKey();
    if (generation !== this.generation) return;
    // The key travels in the environment, not in initializationOptions, so protocol traces never show it.
    // The server sends a key only to the URL of the layer that set it: the URL goes with it.
    const keyed = apiKey ? { CODECTX_API_KEY: apiKey, ...(settings.backendUrl ? { CODECTX_BACKEND_URL: settings.backendUrl } : {}) } : {};
    const env = { ...process.env, ...keyed };
    const serverOptions: ServerOptions = {
      run: { command: server.command, args: server.args, options: { env } },
      debug: { command: server.command, args: server.args, options: { env } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.log,
      // The client traces only while this channel's level is Trace; TraceChannel takes that level from codectx.trace.server.
      traceOutputChannel: this.trace,
      initializationOptions: toServerSettings(settings),
      middleware: {
        ...this.hooks.middleware,
        workspace: {
          configuration: async (params, token, next) => {
            const others: unknown = params.items.some((item) => item.section !== "codectx")
              ? await next(params, token)
              : [];
            if (!Array.isArray(others)) return others as ResponseError;
            return params.items.map((item, i): unknown =>
              item.section === "codectx" ? toFolderSettings(this.hooks.inspectFor(item.scopeUri)) : (others as unknown[])[i],
            );
          },
        },
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (!this.stopping && generation === this.generation && this.running) {
            this.crashed(generation);
          }
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      initializationFailedHandler: (error) => {
        this.log.error(`initialize failed: ${String(error)}`);
        return false;
      },
    };
    const client = new LanguageClient("codectx", "codectx", serverOptions, clientOptions);
    client.registerFeature(new ProgressFeature(client, (token, value) => this.hooks.onProgress(token, value)));
    this.client = client;
    this.hooks.onState("starting");
    this.log.info(`starting ${server.display}`);
    try {
      await client.start();
    } catch (err) {
      if (generation !== this.generation) return;
      const reason = err instanceof Error ? err.message : String(err);
      this.log.error(`could not start ${server.display}: ${reason}`);
      this.client = undefined;
      this.hooks.onState("failed", reason);
      void this.tellStartFailure(server.display, reason);
      await client.dispose().catch(() => undefined);
      this.emit();
      return;
    }
    if (generation !== this.generation) return;
    client.onNotification(ShowMessageNotification.type, ({ type, message }) => this.hooks.onMessage(type, message));
    this.running = true;
    this.policy.started(Date.now());
    this.hooks.onState("running");
    this.log.info("language server running");
    this.emit();
  }

  /** Push changed settings to the running server. */
  async pushSettings(): Promise<void> {
    const client = this.current;
    if (!client) return;
    await client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: toServerSettings(this.hooks.settings()),
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.generation++;
    clearTimeout(this.restartTimer);
    const client = this.client;
    this.client = undefined;
    this.emit();
    if (client) {
      try {
        if (client.state !== State.Stopped) await client.stop(3000);
      } catch (err) {
        this.log.warn(`stopping the language server: ${String(err)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.hooks.onState("stopped");
  }

  /** A user-requested restart: forget earlier crashes. */
  async restart(): Promise<void> {
    this.policy.reset();
    await this.stop();
    await this.start();
  }

  dispose(): void {
    void this.stop();
    this.trace.dispose();
  }

  private crashed(generation: number): void {
    const client = this.client;
    this.client = undefined;
    this.emit();
    void client?.dispose().catch(() => undefined);
    const decision = this.policy.crashed(Date.now());
    if (decision.delayMs === undefined) {
      this.log.error(`language server crashed ${decision.attempt} times in a row; not restarting`);
      this.hooks.onState("failed", "crashed repeatedly");
      void vscode.window
        .showErrorMessage(
          "codectx: the language server keeps crashing, so it was not restarted again.",
          "Restart",
          "Show Output",
        )
        .then((choice) => {
          if (choice === "Restart") void this.restart();
          if (choice === "Show Output") this.log.show();
        });
      return;
    }
    this.log.warn(`language server exited unexpectedly; restart ${decision.attempt} in ${decision.delayMs} ms`);
    this.hooks.onState("restarting");
    if (decision.notify) {
      void vscode.window
        .showWarningMessage("codectx: the language server stopped unexpectedly and is being restarted.", "Show Output")
        .then((choice) => choice && this.log.show());
    }
    this.restartTimer = setTimeout(() => {
      if (generation === this.generation && !this.stopping) void this.start();
    }, decision.delayMs);
  }

  private async tellNotFound(found: ServerNotFound): Promise<void> {
    const choice = await vscode.window.showErrorMessage(found.message, "Open Settings", "Show Output");
    if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "codectx.server");
    if (choice === "Show Output") this.log.show();
  }

  private async tellStartFailure(display: string, reason: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      `codectx: could not start the language server (${display}): ${reason}. ` +
        `Install codectx (${INSTALL_HINT}), or set codectx.server.command or codectx.server.interpreter.`,
      "Open Settings",
      "Show Output",
    );
    if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "codectx.server");
    if (choice === "Show Output") this.log.show();
  }

  private emit(): void {
    for (const listener of this.listeners) listener(this.current);
  }
}
