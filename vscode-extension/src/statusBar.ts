/** The codectx status-bar item: renders the state kept here with status.ts. */
import * as vscode from "vscode";

import type { BackendHealth, IndexHealth } from "./backendHealth";
import { applyProgress, renderStatus, type ServerState, type StatusState } from "./status";
import type { ProgressValue } from "./progress";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("codectx.status", vscode.StatusBarAlignment.Right, 100);
  private readonly indexing = new Map<string, NonNullable<StatusState["indexing"]>>();
  private state: StatusState;
  private readonly listeners = new Set<(state: Readonly<StatusState>) => void>();

  constructor(completionsEnabled: boolean, completionsPaused: boolean) {
    this.item.name = "codectx";
    this.item.command = "codectx.showMenu";
    this.state = { server: "starting", completionsEnabled, completionsPaused };
    this.render();
    this.item.show();
  }

  get current(): Readonly<StatusState> {
    return this.state;
  }

  /** Called with the new state after every change (and once now), e.g. by the language-status item. */
  onChange(listener: (state: Readonly<StatusState>) => void): vscode.Disposable {
    this.listeners.add(listener);
    listener(this.state);
    return { dispose: () => this.listeners.delete(listener) };
  }

  setServer(server: ServerState): void {
    if (server !== "running") this.indexing.clear();
    // A stopped or new server knows nothing yet about the backend or the index: drop the old answers.
    const fresh = server === "running" ? {} : { backend: undefined, index: undefined };
    this.update({ server, indexing: server === "running" ? this.state.indexing : undefined, ...fresh });
  }

  setBackend(backend: BackendHealth | undefined): void {
    this.update({ backend });
  }

  setIndex(index: IndexHealth | undefined): void {
    this.update({ index });
  }

  setCompletions(enabled: boolean, paused: boolean): void {
    this.update({ completionsEnabled: enabled, completionsPaused: paused });
  }

  progress(token: string, value: ProgressValue): void {
    const next = applyProgress(this.indexing.get(token), value);
    if (next) this.indexing.set(token, next);
    else this.indexing.delete(token);
    // Several folders may index at once: show the most recent one still running.
    this.update({ indexing: [...this.indexing.values()].at(-1) });
  }

  private update(patch: Partial<StatusState>): void {
    this.state = { ...this.state, ...patch };
    this.render();
    for (const listener of this.listeners) listener(this.state);
  }

  private render(): void {
    const view = renderStatus(this.state);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === "error"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : view.severity === "warning"
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
