/**
 * Shows the server's work-done progress (`$/progress`, e.g. indexing) in the
 * status bar. Replaces the client's built-in progress handling, which only
 * shows a spinner, so the codectx item can show the percentage.
 */
import * as vscode from "vscode";
import {
  type BaseLanguageClient,
  type ClientCapabilities,
  type FeatureState,
  type StaticFeature,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressBegin,
  type WorkDoneProgressReport,
  type WorkDoneProgressEnd,
} from "vscode-languageclient/node";

export type ProgressValue = WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd;

export class ProgressFeature implements StaticFeature {
  private readonly active = new Map<string, { dispose(): void; done(): void }>();

  constructor(
    private readonly client: BaseLanguageClient,
    private readonly onValue: (token: string, value: ProgressValue) => void,
  ) {}

  getState(): FeatureState {
    return { kind: "static" };
  }

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.window = { ...capabilities.window, workDoneProgress: true };
  }

  /** Runs after the built-in feature registered its handler, so ours replaces it. */
  initialize(): void {
    this.client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
      const key = String(token);
      let finish: () => void = () => undefined;
      let report: (value: ProgressValue) => void = () => undefined;
      void vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: "codectx" }, (progress) => {
        report = (value) => {
          if (value.kind !== "end") progress.report({ message: value.message });
        };
        return new Promise<void>((resolve) => (finish = resolve));
      });
      const subscription = this.client.onProgress(WorkDoneProgress.type, token, (value) => {
        report(value);
        this.onValue(key, value);
        if (value.kind === "end") {
          this.active.get(key)?.done();
        }
      });
      this.active.set(key, {
        dispose: () => {
          subscription.dispose();
        },
        done: () => {
          subscription.dispose();
          finish();
          this.active.delete(key);
        },
      });
    });
  }

  clear(): void {
    for (const [key, part] of [...this.active]) {
      part.done();
      this.onValue(key, { kind: "end" });
    }
  }
}
