/**
 * Keeps the backend-health part of the status bar current by asking the
 * server's `codectx.status` now and then (cheap: the server answers from
 * memory), so a recovered backend shows as such without waiting for a keystroke.
 */
import type * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";

import type { ServerManager } from "./server";
import { type BackendHealth, healthFromStatus } from "./status";

export class HealthMonitor implements vscode.Disposable {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly server: ServerManager,
    private readonly current: () => BackendHealth | undefined,
    private readonly model: () => string | undefined,
    private readonly update: (health: BackendHealth | undefined) => void,
    intervalMs = 20_000,
  ) {
    this.timer = setInterval(() => void this.poll(), intervalMs);
  }

  async poll(): Promise<void> {
    const client = this.server.current;
    if (!client) return;
    try {
      const raw: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: "codectx.status", arguments: [{}] });
      const next = healthFromStatus(raw, this.current(), this.model());
      if (next !== this.current()) this.update(next);
    } catch {
      // An older server without codectx.status: health then comes from messages and answers only.
    }
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}
