/**
 * A proposed change from a chat code block, shown as a diff between the file and a read-only
 * virtual document, with Accept/Discard in the editor title and in a notification. The answer
 * (accept, discard, or the diff closed) resolves `confirm`; nothing is written before that.
 * These are the editor ports of applyFlow.ts.
 */
import * as vscode from "vscode";

import type { ApplyPorts } from "./applyFlow";
import type { ReadOnlyDocuments } from "../documents";

const CONTEXT_KEY = "codectx.proposalOpen";

export class Proposals implements vscode.Disposable {
  private pending: { uri: vscode.Uri; resolve: (accepted: boolean) => void } | undefined;
  private count = 0;
  private readonly tabWatch = vscode.window.tabGroups.onDidChangeTabs(() => {
    if (this.pending && !this.diffTabs(this.pending.uri).length) this.answer(false);
  });

  constructor(private readonly documents: ReadOnlyDocuments) {}

  /** Accept or discard the proposal on show (the editor-title buttons' commands). */
  answer(accepted: boolean): void {
    const pending = this.pending;
    this.pending = undefined;
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, false);
    pending?.resolve(accepted);
  }

  ports(request: ApplyPorts["request"], applyEdit: ApplyPorts["applyEdit"]): ApplyPorts {
    let proposal: vscode.Uri | undefined;
    return {
      request,
      applyEdit,
      version: async (uri) => (await vscode.workspace.openTextDocument(vscode.Uri.parse(uri))).version,
      showDiff: async (uri, newText) => {
        const target = vscode.Uri.parse(uri);
        const name = target.path.split("/").pop() ?? "file";
        proposal = this.documents.put(`proposals/${++this.count}/${name}`, newText);
        await vscode.commands.executeCommand("vscode.diff", target, proposal, `${name} ↔ codectx proposal`, { preview: false });
      },
      confirm: (uri, warnings) => {
        this.answer(false);
        const shown = proposal;
        if (!shown) return Promise.resolve(false);
        const name = vscode.Uri.parse(uri).path.split("/").pop();
        const answer = new Promise<boolean>((resolve) => (this.pending = { uri: shown, resolve }));
        void vscode.commands.executeCommand("setContext", CONTEXT_KEY, true);
        const note = warnings.length ? ` Warnings: ${warnings.join("; ")}` : "";
        void vscode.window.showInformationMessage(`codectx: apply the proposed change to ${name}?${note}`, "Apply", "Discard").then((choice) => {
          if (choice && this.pending?.uri === shown) this.answer(choice === "Apply");
        });
        return answer;
      },
      closeDiff: async () => {
        if (proposal) await vscode.window.tabGroups.close(this.diffTabs(proposal));
      },
    };
  }

  private diffTabs(uri: vscode.Uri): vscode.Tab[] {
    return vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === uri.toString());
  }

  dispose(): void {
    this.answer(false);
    this.tabWatch.dispose();
  }
}
