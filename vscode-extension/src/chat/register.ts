/** Wires the chat: the view, its commands, and the proposal (diff) commands. Called from extension.ts. */
import * as vscode from "vscode";

import { ChatClient } from "./chatClient";
import { ChatViewProvider, VIEW_ID } from "./chatView";
import { Proposals } from "./proposals";
import type { ReadOnlyDocuments } from "../documents";
import type { ServerManager } from "../server";

export function registerChat(
  context: vscode.ExtensionContext,
  deps: { server: ServerManager; documents: ReadOnlyDocuments; log: vscode.LogOutputChannel },
): vscode.Disposable[] {
  const chat = new ChatClient(deps.server);
  const proposals = new Proposals(deps.documents);
  const view = new ChatViewProvider({ extensionUri: context.extensionUri, chat, documents: deps.documents, proposals, log: deps.log });
  const reg = (id: string, fn: () => unknown): vscode.Disposable =>
    vscode.commands.registerCommand(id, async () => {
      try {
        await fn();
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        deps.log.error(`${id}: ${message}`);
        void vscode.window.showErrorMessage(`codectx: ${message}`);
      }
    });
  return [
    chat,
    proposals,
    view,
    // Kept alive when hidden, so a streaming answer keeps arriving while another view is shown.
    vscode.window.registerWebviewViewProvider(VIEW_ID, view, { webviewOptions: { retainContextWhenHidden: true } }),
    reg("codectx.chat.open", () => view.reveal()),
    reg("codectx.chat.new", () => view.newConversation()),
    reg("codectx.chat.history", () => view.history()),
    reg("codectx.chat.export", () => view.export()),
    reg("codectx.chat.stop", () => view.stop()),
    reg("codectx.chat.acceptProposal", () => proposals.answer(true)),
    reg("codectx.chat.discardProposal", () => proposals.answer(false)),
  ];
}
