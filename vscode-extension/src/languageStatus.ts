/** The codectx language-status item: index state and model-server state for the active editor's language. */
import * as vscode from "vscode";

import { renderLanguageStatus, type StatusState } from "./status";

export class LanguageStatus implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;

  constructor(selector: vscode.DocumentSelector) {
    this.item = vscode.languages.createLanguageStatusItem("codectx.health", selector);
    this.item.name = "codectx";
    this.item.command = { title: "Check Backend", command: "codectx.checkBackend" };
  }

  render(state: Readonly<StatusState>): void {
    const view = renderLanguageStatus(state);
    this.item.text = view.text;
    this.item.detail = view.detail;
    this.item.busy = view.busy;
    this.item.severity =
      view.severity === "error"
        ? vscode.LanguageStatusSeverity.Error
        : view.severity === "warning"
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
  }

  dispose(): void {
    this.item.dispose();
  }
}
