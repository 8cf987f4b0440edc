/**
 * The chat protocol's types (docs/chat-protocol.md, the single source) and the checks that turn the
 * server's JSON into them: anything missing or of the wrong type becomes empty or a clear error,
 * never a crash in the view. Pure: no `vscode` import.
 */

export const METHODS = {
  start: "codectx/chat/start",
  send: "codectx/chat/send",
  cancel: "codectx/chat/cancel",
  list: "codectx/chat/list",
  get: "codectx/chat/get",
  delete: "codectx/chat/delete",
  export: "codectx/chat/export",
  mentions: "codectx/chat/mentions",
  applyBlock: "codectx/chat/applyBlock",
  context: "codectx/chat/context",
  delta: "codectx/chat/delta",
  notice: "codectx/chat/notice",
} as const;

export const MENTION_KINDS = ["file", "symbol", "folder", "codebase", "diff", "problems"] as const;
export type MentionKind = (typeof MENTION_KINDS)[number];

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

export interface Conversation {
  conversationId: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  turns: number;
}

export interface Mention {
  kind: MentionKind;
  value?: string;
}

export interface MentionItem {
  kind: MentionKind;
  value: string;
  label: string;
  detail?: string;
}

export interface Citation {
  path: string;
  uri: string;
  startLine: number;
  endLine: number;
  symbol?: string;
  reason: string;
}

export interface CodeBlock {
  index: number;
  language: string;
  text: string;
  path?: string;
}

export interface TurnResult {
  conversationId: string;
  turnId: string;
  text: string;
  citations: Citation[];
  blocks: CodeBlock[];
  notices: string[];
  auditId: string | null;
  cancelled: boolean;
  contextTokens: number;
  budgetTokens: number;
}

export interface Turn {
  turnId: string;
  role: "user" | "assistant";
  text: string;
  citations: Citation[];
  blocks: CodeBlock[];
  createdAt: string;
  notices: string[];
  cancelled: boolean;
}

export interface Delta {
  conversationId: string;
  turnId: string;
  text: string;
}

export interface Notice {
  conversationId: string;
  turnId?: string;
  /** "compacted" | "dropped" | "refused" | "budget" | "error"; a newer server may add kinds. */
  kind: string;
  message: string;
}

export interface SendParams {
  conversationId: string;
  message: string;
  uri?: string;
  position?: Position;
  selection?: Range;
  mentions?: Mention[];
  diagnostics?: unknown[];
}

export interface ApplyBlockParams {
  conversationId: string;
  turnId: string;
  blockIndex: number;
  uri: string;
  range?: Range;
}

export interface ApplyBlockResult {
  edit: unknown;
  newText: string;
  warnings: string[];
}

export const NO_CHAT = "this codectx server has no chat (it is older than this extension); update codectx";

/** The message to show for a failed chat request: the server's own, or what MethodNotFound means here. */
export function chatErrorMessage(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === -32601) return NO_CHAT;
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === "string" && message ? message : String(err);
}

type Obj = Record<string, unknown>;

function obj(value: unknown, what: string): Obj {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`the codectx server sent no ${what}`);
  }
  return value as Obj;
}

const str = (v: unknown, fallback = ""): string => (typeof v === "string" ? v : fallback);
const optStr = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const int = (v: unknown, fallback = 0): number => (typeof v === "number" && Number.isInteger(v) ? v : fallback);
const records = (v: unknown): Obj[] =>
  Array.isArray(v) ? v.filter((x): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x)) : [];
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

export function isMentionKind(v: unknown): v is MentionKind {
  return typeof v === "string" && (MENTION_KINDS as readonly string[]).includes(v);
}

export function parseConversation(raw: unknown): Conversation {
  const r = obj(raw, "conversation");
  const conversationId = str(r.conversationId);
  if (!conversationId) throw new Error("the codectx server sent a conversation without an id");
  return {
    conversationId,
    title: str(r.title, "Conversation"),
    createdAt: str(r.createdAt),
    updatedAt: str(r.updatedAt),
    turns: int(r.turns),
  };
}

export function parseCitation(r: Obj): Citation | undefined {
  const path = str(r.path);
  const uri = str(r.uri);
  if (!path || !uri) return undefined;
  const startLine = Math.max(0, int(r.startLine));
  return {
    path,
    uri,
    startLine,
    endLine: Math.max(startLine, int(r.endLine, startLine)),
    symbol: optStr(r.symbol),
    reason: str(r.reason),
  };
}

export function parseBlock(r: Obj): CodeBlock {
  return { index: int(r.index), language: str(r.language), text: str(r.text), path: optStr(r.path) };
}

const citations = (v: unknown): Citation[] => records(v).map(parseCitation).filter((c): c is Citation => c !== undefined);
const blocks = (v: unknown): CodeBlock[] => records(v).map(parseBlock);

export function parseTurnResult(raw: unknown): TurnResult {
  const r = obj(raw, "answer");
  return {
    conversationId: str(r.conversationId),
    turnId: str(r.turnId),
    text: str(r.text),
    citations: citations(r.citations),
    blocks: blocks(r.blocks),
    notices: strings(r.notices),
    auditId: optStr(r.auditId) ?? null,
    cancelled: r.cancelled === true,
    contextTokens: int(r.contextTokens),
    budgetTokens: int(r.budgetTokens),
  };
}

export function parseTurn(r: Obj): Turn {
  return {
    turnId: str(r.turnId),
    role: r.role === "user" ? "user" : "assistant",
    text: str(r.text),
    citations: citations(r.citations),
    blocks: blocks(r.blocks),
    createdAt: str(r.createdAt),
    notices: strings(r.notices),
    cancelled: r.cancelled === true,
  };
}

export function parseGet(raw: unknown): { conversation: Conversation; turns: Turn[] } {
  const r = obj(raw, "conversation");
  return { conversation: parseConversation(r.conversation), turns: records(r.turns).map(parseTurn) };
}

export function parseList(raw: unknown): Conversation[] {
  const r = obj(raw, "conversation list");
  const out: Conversation[] = [];
  for (const c of records(r.conversations)) {
    try {
      out.push(parseConversation(c));
    } catch {
      // one malformed entry must not hide the others
    }
  }
  return out;
}

export function parseMentionItems(raw: unknown): MentionItem[] {
  const r = obj(raw, "mention list");
  return records(r.items)
    .filter((i) => isMentionKind(i.kind) && typeof i.value === "string")
    .slice(0, 50)
    .map((i) => ({ kind: i.kind as MentionKind, value: str(i.value), label: str(i.label, str(i.value)), detail: optStr(i.detail) }));
}

export function parseApplyResult(raw: unknown): ApplyBlockResult {
  const r = obj(raw, "edit");
  if (typeof r.newText !== "string") throw new Error("the codectx server's edit has no new text");
  obj(r.edit, "workspace edit");
  return { edit: r.edit, newText: r.newText, warnings: strings(r.warnings) };
}

export function parseDelta(raw: unknown): Delta | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Obj;
  if (typeof r.conversationId !== "string" || typeof r.turnId !== "string" || typeof r.text !== "string") return undefined;
  return { conversationId: r.conversationId, turnId: r.turnId, text: r.text };
}

export function parseNotice(raw: unknown): Notice | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Obj;
  if (typeof r.conversationId !== "string" || typeof r.message !== "string") return undefined;
  return { conversationId: r.conversationId, turnId: optStr(r.turnId), kind: str(r.kind, "notice"), message: r.message };
}
