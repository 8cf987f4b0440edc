/**
 * The "Get started with codectx" walkthrough (package.json `walkthroughs`): its
 * steps complete on context keys set here when the server first runs and when
 * the first suggestion arrives; the backend step completes on the setting.
 */
import * as vscode from "vscode";

export type WalkthroughMark = "serverRunning" | "suggestionShown";

const done = new Set<WalkthroughMark>();

export function markWalkthrough(mark: WalkthroughMark): void {
  if (done.has(mark)) return;
  done.add(mark);
  void vscode.commands.executeCommand("setContext", `codectx.walkthrough.${mark}`, true);
}
