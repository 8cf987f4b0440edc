/**
 * Keeps the backend-health part of the status bar current: probes each new
 * language-server connection once it runs, then every
 * `codectx.health.intervalSeconds` while the window is focused (and at once
 * when focus returns after a due probe was skipped), on "Check Backend", and
 * on the server's `codectx/healthChanged`. The per-connection logic, with the
 * fallback for older servers, is in healthProbe.ts.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";

import { type BackendHealth, type IndexHealth, probeDue, tickMs } from "./backendHealth";
import { HealthProbe } from "./healthProbe";
import type { ServerManager } from "./server";

export const HEALTH_REQUEST = "codectx/health";
export const HEALTH_CHANGED = "codectx/healthChanged";
/** The server has its own backend timeouts; this only keeps a wedged server from holding a probe forever. */
const PROBE_TIMEOUT_MS = 30_000;

export interface HealthHooks {
  current(): BackendHealth | undefined;
  model(): string | undefined;
  intervalSec(): number;
  update(backend: BackendHealth | undefined): void;
  updateIndex(index: IndexHealth | undefined): void;
  log: vscode.LogOutputChannel;
}

async function askHealth(client: LanguageClient, probe = true): Promise<unknown> {
  const source = new vscode.CancellationTokenSource();
  const timeout = setTimeout(() => source.cancel(), PROBE_TIMEOUT_MS);
  try {
    return await client.sendRequest(HEALTH_REQUEST, probe ? { probe: true } : {}, source.token);
  } finally {
    clearTimeout(timeout);
    source.dispose();
  }
}

export class HealthMonitor implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private connection: HealthProbe | undefined;
  private notifications: vscode.Disposable | undefined;
  private lastProbeMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly hooks: HealthHooks) {
    this.subscriptions = [
      vscode.window.onDidChangeWindowState((state) => {
        if (state.focused) this.tick();
      }),
    ];
    this.reschedule();
  }

  /** Follow the server manager's clients (each start, restart and stop). */
  follow(server: ServerManager): void {
    this.subscriptions.push(server.onClientChanged((client) => this.attach(client)));
  }

  /** Whether the running server answers `codectx/health` (false: older server, or not asked yet). */
  get probeSupported(): boolean {
    return this.connection?.supported === true;
  }

  /** Follow a changed `codectx.health.intervalSeconds`. */
  reschedule(): void {
    clearInterval(this.timer);
    const every = tickMs(this.hooks.intervalSec() * 1000);
    this.timer = every > 0 ? setInterval(() => this.tick(), every) : undefined;
  }

  /** Probe now (Check Backend); undefined when no server is running. */
  async probe(): Promise<BackendHealth | undefined> {
    if (!this.connection) return undefined;
    this.lastProbeMs = Date.now();
    return this.connection.probe();
  }

  /** Refresh the index state (no backend probe), e.g. when an indexing pass ends. */
  refreshIndex(): Promise<void> {
    return this.connection?.refreshIndex() ?? Promise.resolve();
  }

  /** Health guessed from a server message or an answered completion (counts only with an older server). */
  inferred(backend: BackendHealth): void {
    if (this.connection) this.connection.inferred(backend);
    else this.hooks.update(backend);
  }

  /** A new, restarted or stopped server. */
  private attach(client: LanguageClient | undefined): void {
    if (client === this.client) return;
    this.client = client;
    this.notifications?.dispose();
    this.notifications = undefined;
    this.connection = undefined;
    this.lastProbeMs = undefined;
    if (!client) return;
    const { hooks } = this;
    const connection: HealthProbe = new HealthProbe({
      askHealth: () => askHealth(client),
      askKnown: () => askHealth(client, false),
      askStatus: () => client.sendRequest(ExecuteCommandRequest.type, { command: "codectx.status", arguments: [{}] }),
      current: () => hooks.current(),
      model: () => hooks.model(),
      // A late answer from a replaced server must not overwrite the new one's state.
      update: (backend) => this.connection === connection && hooks.update(backend),
      updateIndex: (index) => this.connection === connection && hooks.updateIndex(index),
      log: (level, message) => hooks.log[level](message),
    });
    this.connection = connection;
    this.notifications = client.onNotification(HEALTH_CHANGED, (raw: unknown) => connection.notified(raw));
    void this.probe();
  }

  private tick(): void {
    if (!this.connection || this.connection.busy) return;
    const due = probeDue(Date.now(), this.lastProbeMs, this.hooks.intervalSec() * 1000, vscode.window.state.focused, this.hooks.current()?.state);
    if (due) void this.probe();
  }

  dispose(): void {
    clearInterval(this.timer);
    this.notifications?.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}
