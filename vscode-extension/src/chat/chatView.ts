/**
 * The chat view: a webview view of our own (the editor's chat API needs a sign-in that code-server
 * and `chat.disableAIFeatures` rule out). The host side keeps the conversation (session.ts), talks
 * to the server (chatClient.ts) and does what the webview asks: send, stop, @-mention completion,
 * open a citation, apply or copy a code block, show the context sent; new conversation, history
 * (resume, delete) and export are view-title commands.
 */
import { existsSync } from "node:fs";
import { randomBytes } from "node:crypto";

import * as vscode from "vscode";

import { applyBlock, fenceRefusal, targetFor } from "./applyFlow";
import { type ChatClient, chatError } from "./chatClient";
import { parseMentions } from "./mentions";
import type { HostMessage } from "./messages";
import { parseViewMessage, type ViewMessage } from "./messages";
import type { Proposals } from "./proposals";
import type { MentionItem, MentionKind, SendParams, TurnResult } from "./protocol";
import { ChatSession, type ViewTurn } from "./session";
import { parseContextRecord, renderContext } from "../contextView";
import type { ReadOnlyDocuments } from "../documents";

export const VIEW_ID = "codectx.chat";

export interface ChatViewDeps {
  extensionUri: vscode.Uri;
  chat: ChatClient;
  documents: ReadOnlyDocuments;
  proposals: Proposals;
  log: vscode.LogOutputChannel;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly session = new ChatSession();
  private sending: vscode.CancellationTokenSource | undefined;
  /** The last file editor: when the chat has the focus, VS Code may report no active editor. */
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly subscriptions: vscode.Disposable[];

  constructor(private readonly deps: ChatViewDeps) {
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor((e) => {
        if (e && e.document.uri.scheme === "file") this.lastEditor = e;
      }),
      deps.chat.onDelta((d) => {
        const turn = this.session.delta(d);
        if (turn) this.post({ type: "delta", key: turn.key, text: d.text });
      }),
      deps.chat.onNotice((n) => {
        const turn = this.session.notice(n);
        if (turn) this.postTurn(turn);
        deps.log.info(`chat notice (${n.kind}): ${n.message}`);
      }),
    ];
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.deps.extensionUri, "dist");
    const media = vscode.Uri.joinPath(this.deps.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
    view.webview.html = this.html(view.webview, dist, media);
    view.webview.onDidReceiveMessage((raw) => {
      const message = parseViewMessage(raw);
      if (message) void this.handle(message);
    });
    view.onDidDispose(() => (this.view = undefined));
  }

  private html(webview: vscode.Webview, dist: vscode.Uri, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "chat.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css"));
    // Nothing from the model can run: only our nonce'd script, our stylesheet, no inline anything.
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
      "img-src 'none'",
      "connect-src 'none'",
      "form-action 'none'",
      "base-uri 'none'",
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${style.toString()}">
<title>codectx chat</title></head>
<body>
<div id="banner" role="alert" hidden></div>
<div id="transcript" role="log" aria-live="polite"></div>
<div id="empty">Ask about your codebase. The current file and the code you name are sent as context (redacted).
Mention more with @file: @symbol: @folder: @codebase: @diff @problems.</div>
<form id="composer">
<div id="mention-list" role="listbox" hidden></div>
<textarea id="input" rows="3" aria-label="Question" placeholder="Ask codectx… (@ to mention; Enter sends, Shift+Enter adds a line)"></textarea>
<div class="composer-bar"><span id="status"></span><button id="stop" type="button" hidden>Stop</button><button id="send" type="submit">Send</button></div>
</form>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body></html>`;
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  private postTurn(turn: ViewTurn): void {
    this.post({ type: "turn", turn, running: this.session.running });
  }

  private postState(): void {
    this.post({ type: "state", title: this.session.conversation?.title, turns: this.session.turns, running: this.session.running });
  }

  private async handle(message: ViewMessage): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
          return this.postState();
        case "send":
          return await this.send(message.text);
        case "stop":
          return this.stop();
        case "mentions":
          return await this.mentions(message.requestId, message.query, message.kind);
        case "openCitation":
          return await this.openCitation(message.key, message.index);
        case "apply":
          return await this.apply(message.key, message.block);
        case "copy":
          await vscode.env.clipboard.writeText(message.text);
          vscode.window.setStatusBarMessage("codectx: code block copied", 3000);
          return;
        case "showContext":
          return await this.showContext(message.key);
      }
    } catch (err) {
      const text = chatError(err).message;
      this.deps.log.error(`chat ${message.type}: ${text}`);
      this.post({ type: "banner", message: text });
    }
  }

  /** Focus the view (and its input). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  private async send(text: string): Promise<void> {
    const question = text.trim();
    if (!question || this.session.running) return;
    if (!this.session.conversation) {
      this.session.reset(await this.deps.chat.start(question.slice(0, 60)));
    }
    const conversation = this.session.conversation;
    if (!conversation) return;
    const params = await this.sendParams(conversation.conversationId, question);
    const turn = this.session.begin(question);
    this.postState();
    const source = new vscode.CancellationTokenSource();
    this.sending = source;
    try {
      this.session.finish(await this.deps.chat.send(params, source.token));
    } catch (err) {
      if (source.token.isCancellationRequested) {
        // A server that answers the cancel with an error instead of a result: keep what streamed.
        this.session.finish(cancelledResult(conversation.conversationId, turn));
      } else {
        const reason = chatError(err).message;
        this.deps.log.error(`chat send: ${reason}`);
        this.session.fail(reason);
      }
    } finally {
      source.dispose();
      if (this.sending === source) this.sending = undefined;
    }
    this.postTurn(turn);
  }

  private async sendParams(conversationId: string, message: string): Promise<SendParams> {
    const params: SendParams = { conversationId, message };
    const mentions = parseMentions(message);
    if (mentions.length) params.mentions = mentions;
    const editor = this.lastEditor;
    if (!editor || editor.document.isClosed) return params;
    const convert = this.deps.chat.languageClient.code2ProtocolConverter;
    params.uri = editor.document.uri.toString();
    params.position = convert.asPosition(editor.selection.active);
    if (!editor.selection.isEmpty) params.selection = convert.asRange(editor.selection);
    if (mentions.some((m) => m.kind === "problems")) {
      params.diagnostics = await convert.asDiagnostics(vscode.languages.getDiagnostics(editor.document.uri));
    }
    return params;
  }

  /** Stop the answer: cancelling the send request sends `$/cancelRequest`; the server closes the stream. */
  stop(): void {
    this.sending?.cancel();
  }

  newConversation(): void {
    this.clear();
    void this.reveal();
  }

  /** An empty conversation, without moving the focus (the history picker stays open after a delete). */
  private clear(): void {
    this.stop();
    // The server saves a conversation when its first question is sent, so an unused one leaves nothing behind.
    this.session.reset();
    this.postState();
  }

  async history(): Promise<void> {
    type Item = vscode.QuickPickItem & { id: string };
    const trash: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("trash"), tooltip: "Delete this conversation" };
    const pick = vscode.window.createQuickPick<Item>();
    pick.title = "codectx: chat history";
    pick.placeholder = "Pick a conversation to continue";
    const load = async (): Promise<void> => {
      pick.busy = true;
      const conversations = await this.deps.chat.list();
      pick.items = conversations.map((c) => ({
        id: c.conversationId,
        label: c.title,
        description: `${c.turns} question${c.turns === 1 ? "" : "s"}`,
        detail: c.updatedAt.replace("T", " ").slice(0, 16),
        buttons: [trash],
      }));
      pick.busy = false;
      if (!conversations.length) pick.placeholder = "No saved conversations";
    };
    pick.onDidTriggerItemButton(async ({ item }) => {
      try {
        await this.deps.chat.delete(item.id);
        if (this.session.conversation?.conversationId === item.id) this.clear();
        await load();
      } catch (err) {
        void vscode.window.showErrorMessage(`codectx: ${chatError(err).message}`);
      }
    });
    const chosen = new Promise<Item | undefined>((resolve) => {
      pick.onDidAccept(() => resolve(pick.selectedItems[0]));
      pick.onDidHide(() => resolve(undefined));
    });
    pick.show();
    await load();
    const item = await chosen;
    pick.dispose();
    if (!item) return;
    this.stop();
    const { conversation, turns } = await this.deps.chat.get(item.id);
    this.session.load(conversation, turns);
    this.postState();
    await this.reveal();
  }

  async export(): Promise<void> {
    const conversation = this.session.conversation;
    if (!conversation) throw new Error("there is no conversation to export yet; ask something first");
    const markdown = await this.deps.chat.export(conversation.conversationId);
    const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: markdown });
    await vscode.window.showTextDocument(doc, { preview: false });
  }

  private turnOf(key: number): ViewTurn {
    const turn = this.session.turns.find((t) => t.key === key);
    if (!turn || turn.role !== "assistant") throw new Error("that answer is no longer shown");
    return turn;
  }

  private async openCitation(key: number, index: number): Promise<void> {
    const citation = this.turnOf(key).citations[index];
    if (!citation) return;
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(citation.uri));
    const last = Math.min(citation.endLine, doc.lineCount - 1);
    const range = new vscode.Range(citation.startLine, 0, last, doc.lineAt(Math.max(0, last)).text.length);
    const editor = await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.One });
    editor.selection = new vscode.Selection(range.end, range.start);
    editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  private async apply(key: number, index: number): Promise<void> {
    const turn = this.turnOf(key);
    const block = turn.blocks.find((b) => b.index === index);
    const conversation = this.session.conversation;
    if (!block || !turn.turnId || !conversation) throw new Error("this code block cannot be applied until its answer is complete");
    const refused = fenceRefusal(block);
    if (refused) throw new Error(refused);
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
    const active = this.lastEditor && !this.lastEditor.document.isClosed ? this.lastEditor.document.uri.toString() : undefined;
    const uri = targetFor(block, folders, active, (u) => existsSync(vscode.Uri.parse(u).fsPath));
    if (!uri) throw new Error("open the file the code block should go to, then press Apply again");
    const editor = this.lastEditor?.document.uri.toString() === uri ? this.lastEditor : undefined;
    const client = this.deps.chat.languageClient;
    const range = editor && !editor.selection.isEmpty ? client.code2ProtocolConverter.asRange(editor.selection) : undefined;
    const ports = this.deps.proposals.ports(
      (params) => this.deps.chat.applyBlock(params),
      async (edit) => {
        const converted = await client.protocol2CodeConverter.asWorkspaceEdit(edit as never);
        return converted !== undefined && (await vscode.workspace.applyEdit(converted));
      },
    );
    const outcome = await applyBlock(ports, { conversationId: conversation.conversationId, turnId: turn.turnId, blockIndex: index, uri, ...(range ? { range } : {}) });
    const name = vscode.Uri.parse(uri).path.split("/").pop();
    this.deps.log.info(`chat apply block ${index} of ${turn.turnId} to ${uri}: ${outcome.kind}`);
    if (outcome.kind === "applied") {
      await vscode.window.showTextDocument(vscode.Uri.parse(uri), { preview: false, viewColumn: vscode.ViewColumn.One });
      vscode.window.setStatusBarMessage(`codectx: change applied to ${name} (Undo reverts it)`, 5000);
    } else if (outcome.kind === "stale") {
      void vscode.window.showWarningMessage(`codectx: ${name} changed while the diff was open; nothing applied. Press Apply again.`);
    } else if (outcome.kind === "failed") {
      throw new Error(outcome.message);
    }
  }

  private async showContext(key: number): Promise<void> {
    const turn = this.turnOf(key);
    const conversation = this.session.conversation;
    if (!turn.turnId || !conversation) throw new Error("nothing was sent for this answer yet");
    const raw = await this.deps.chat.context(conversation.conversationId, turn.turnId);
    await this.deps.documents.show(`chat-context-${turn.turnId}.md`, renderContext(parseContextRecord(raw)), "markdown");
  }

  private async mentions(requestId: number, query: string, kind: MentionKind | undefined): Promise<void> {
    let items: MentionItem[] = [];
    try {
      items = await this.deps.chat.mentions(query, kind, this.lastEditor?.document.uri.toString());
    } catch (err) {
      this.deps.log.warn(`chat mentions: ${chatError(err).message}`);
    }
    this.post({ type: "mentions", requestId, items });
  }

  dispose(): void {
    this.stop();
    for (const s of this.subscriptions) s.dispose();
  }
}

function cancelledResult(conversationId: string, turn: ViewTurn): TurnResult {
  return {
    conversationId,
    turnId: turn.turnId ?? "",
    text: turn.text,
    citations: turn.citations,
    blocks: [],
    notices: [],
    auditId: null,
    cancelled: true,
    contextTokens: 0,
    budgetTokens: 0,
  };
}
