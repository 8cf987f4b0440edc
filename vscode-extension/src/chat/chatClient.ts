/**
 * The chat requests of docs/chat-protocol.md over the running language client, typed and checked,
 * and the server's delta/notice notifications as events. Follows server restarts (the handlers are
 * registered on every new client). Errors become plain Error messages for the user; a server
 * without chat (MethodNotFound) says so.
 */
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";

import {
  type ApplyBlockParams,
  chatErrorMessage,
  type Conversation,
  type Delta,
  type MentionItem,
  type MentionKind,
  METHODS,
  type Notice,
  parseConversation,
  parseDelta,
  parseGet,
  parseList,
  parseMentionItems,
  parseNotice,
  parseTurnResult,
  type SendParams,
  type Turn,
  type TurnResult,
} from "./protocol";
import type { ServerManager } from "../server";

export function chatError(err: unknown): Error {
  return err instanceof vscode.CancellationError ? err : new Error(chatErrorMessage(err));
}

export class ChatClient implements vscode.Disposable {
  private readonly deltas = new vscode.EventEmitter<Delta>();
  private readonly notices = new vscode.EventEmitter<Notice>();
  readonly onDelta = this.deltas.event;
  readonly onNotice = this.notices.event;
  private handlers: vscode.Disposable[] = [];
  private readonly watch: vscode.Disposable;
  private client: LanguageClient | undefined;

  constructor(private readonly server: ServerManager) {
    this.watch = server.onClientChanged((client) => this.attach(client));
    this.attach(server.current);
  }

  private attach(client: LanguageClient | undefined): void {
    if (client === this.client) return;
    for (const h of this.handlers) h.dispose();
    this.handlers = [];
    this.client = client;
    if (!client) return;
    this.handlers.push(
      client.onNotification(METHODS.delta, (raw: unknown) => {
        const d = parseDelta(raw);
        if (d) this.deltas.fire(d);
      }),
      client.onNotification(METHODS.notice, (raw: unknown) => {
        const n = parseNotice(raw);
        if (n) this.notices.fire(n);
      }),
    );
  }

  /** For the protocol converters (Range, WorkspaceEdit, Diagnostic). */
  get languageClient(): LanguageClient {
    return this.server.require();
  }

  private async call(method: string, params: unknown, token?: vscode.CancellationToken): Promise<unknown> {
    const client = this.server.require();
    try {
      // Never pass an undefined token: vscode-jsonrpc would then send [params, null] as positional params.
      return await (token ? client.sendRequest(method, params, token) : client.sendRequest(method, params));
    } catch (err) {
      throw chatError(err);
    }
  }

  async start(title?: string): Promise<Conversation> {
    return parseConversation(await this.call(METHODS.start, title ? { title } : {}));
  }

  async send(params: SendParams, token: vscode.CancellationToken): Promise<TurnResult> {
    return parseTurnResult(await this.call(METHODS.send, params, token));
  }

  async list(): Promise<Conversation[]> {
    return parseList(await this.call(METHODS.list, {}));
  }

  async get(conversationId: string): Promise<{ conversation: Conversation; turns: Turn[] }> {
    return parseGet(await this.call(METHODS.get, { conversationId }));
  }

  async delete(conversationId: string): Promise<boolean> {
    const raw = (await this.call(METHODS.delete, { conversationId })) as { deleted?: unknown } | null;
    return raw?.deleted === true;
  }

  async export(conversationId: string): Promise<string> {
    const raw = (await this.call(METHODS.export, { conversationId })) as { markdown?: unknown } | null;
    if (typeof raw?.markdown !== "string") throw new Error("the codectx server sent no Markdown");
    return raw.markdown;
  }

  async mentions(query: string, kind: MentionKind | undefined, uri: string | undefined): Promise<MentionItem[]> {
    return parseMentionItems(await this.call(METHODS.mentions, { query, ...(kind ? { kind } : {}), ...(uri ? { uri } : {}) }));
  }

  applyBlock(params: ApplyBlockParams): Promise<unknown> {
    return this.call(METHODS.applyBlock, params);
  }

  context(conversationId: string, turnId: string): Promise<unknown> {
    return this.call(METHODS.context, { conversationId, turnId });
  }

  dispose(): void {
    this.watch.dispose();
    for (const h of this.handlers) h.dispose();
    this.deltas.dispose();
    this.notices.dispose();
  }
}
