/** The messages between the chat view's host (chatView.ts) and its webview (webview/main.ts). */
import type { MentionItem, MentionKind } from "./protocol";
import type { ViewTurn } from "./session";

export type HostMessage =
  | { type: "state"; title?: string; turns: ViewTurn[]; running: boolean }
  | { type: "turn"; turn: ViewTurn; running: boolean }
  | { type: "delta"; key: number; text: string }
  | { type: "mentions"; requestId: number; items: MentionItem[] }
  | { type: "banner"; message: string };

export type ViewMessage =
  | { type: "ready" }
  | { type: "send"; text: string }
  | { type: "stop" }
  | { type: "mentions"; requestId: number; query: string; kind?: MentionKind }
  | { type: "openCitation"; key: number; index: number }
  | { type: "apply"; key: number; block: number }
  | { type: "copy"; text: string }
  | { type: "showContext"; key: number };

const TYPES = new Set(["ready", "send", "stop", "mentions", "openCitation", "apply", "copy", "showContext"]);

/** The webview is a separate page: check what it sends before acting on it. */
export function parseViewMessage(raw: unknown): ViewMessage | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const m = raw as Record<string, unknown>;
  if (typeof m.type !== "string" || !TYPES.has(m.type)) return undefined;
  const num = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
  switch (m.type) {
    case "send":
      return typeof m.text === "string" ? { type: "send", text: m.text } : undefined;
    case "copy":
      return typeof m.text === "string" ? { type: "copy", text: m.text } : undefined;
    case "mentions":
      return num(m.requestId) && typeof m.query === "string"
        ? { type: "mentions", requestId: m.requestId, query: m.query, kind: typeof m.kind === "string" ? (m.kind as MentionKind) : undefined }
        : undefined;
    case "openCitation":
      return num(m.key) && num(m.index) ? { type: "openCitation", key: m.key, index: m.index } : undefined;
    case "apply":
      return num(m.key) && num(m.block) ? { type: "apply", key: m.key, block: m.block } : undefined;
    case "showContext":
      return num(m.key) ? { type: "showContext", key: m.key } : undefined;
    default:
      return { type: m.type as "ready" | "stop" };
  }
}
