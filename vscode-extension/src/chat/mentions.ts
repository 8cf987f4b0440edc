/**
 * The @-mention syntax of docs/chat-protocol.md: finding the mentions a message names (sent as the
 * structured `mentions` too), finding the one being typed at the caret (for completion), and writing
 * a chosen item back. Pure; shared by the extension host and the webview.
 */
import { isMentionKind, MENTION_KINDS, type Mention, type MentionKind } from "./protocol";

/** Kinds that take a value after `:`; `@diff` and `@problems` stand alone. */
const VALUED: ReadonlySet<MentionKind> = new Set(["file", "symbol", "folder", "codebase"]);

export function takesValue(kind: MentionKind): boolean {
  return VALUED.has(kind);
}

const startsMention = (text: string, at: number): boolean => at === 0 || /[\s(]/.test(text[at - 1] ?? "");

/** Every mention written in `text`, in order, each once. */
export function parseMentions(text: string): Mention[] {
  const found: Mention[] = [];
  const seen = new Set<string>();
  const re = /@([a-z]+)(:?)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const kind = m[1];
    if (!startsMention(text, m.index) || !isMentionKind(kind)) continue;
    const after = m.index + m[0].length;
    let mention: Mention | undefined;
    if (m[2] === ":" && takesValue(kind)) {
      const rest = text.slice(after);
      let value: string;
      if (kind === "codebase") value = (rest.split("\n", 1)[0] ?? "").trim();
      else if (rest.startsWith('"')) {
        const close = rest.indexOf('"', 1);
        value = close < 0 ? rest.slice(1) : rest.slice(1, close);
      } else value = /^\S*/.exec(rest)?.[0] ?? "";
      if (value) mention = { kind, value };
    } else if (m[2] === "" && /^(?![\w:])/.test(text.slice(after))) {
      mention = { kind };
    }
    if (!mention) continue;
    const key = `${mention.kind}\u0000${mention.value ?? ""}`;
    if (!seen.has(key)) {
      seen.add(key);
      found.push(mention);
    }
  }
  return found;
}

export interface MentionQuery {
  /** Offset of the `@`. */
  start: number;
  /** The kind typed before `:`, if any. */
  kind?: MentionKind;
  /** What to complete: the value after `kind:`, or the word after `@`. */
  query: string;
}

/** The mention the caret is in (for completion), or undefined. `@codebase:` values are free text: none. */
export function mentionAtCaret(text: string, caret: number): MentionQuery | undefined {
  const before = text.slice(0, caret);
  const m = /@([a-z]*)(?::(?:"([^"]*)|([^\s"]*)))?$/.exec(before);
  if (!m || !startsMention(before, m.index)) return undefined;
  const word = m[1] ?? "";
  const value = m[2] ?? m[3];
  if (value === undefined && !before.endsWith(":")) return { start: m.index, query: word };
  if (!isMentionKind(word) || !takesValue(word) || word === "codebase") return undefined;
  return { start: m.index, kind: word, query: value ?? "" };
}

/** How a mention is written in a message. */
export function mentionText(kind: MentionKind, value?: string): string {
  if (!takesValue(kind) || value === undefined) return `@${kind}`;
  if (kind !== "codebase" && /[\s"]/.test(value)) return `@${kind}:"${value.replace(/"/g, "")}"`;
  return `@${kind}:${value}`;
}

/**
 * Replace the mention being typed (from `at.start` to the caret) with the chosen one. A kind alone
 * that takes a value (`@file:`) leaves the caret after the colon so completion can go on.
 */
export function insertMention(text: string, caret: number, at: MentionQuery, kind: MentionKind, value?: string): { text: string; caret: number } {
  const written = value === undefined && takesValue(kind) ? `@${kind}:` : `${mentionText(kind, value)} `;
  const next = text.slice(0, at.start) + written + text.slice(caret).replace(/^\S*/, "");
  return { text: next, caret: at.start + written.length };
}

/** The kinds whose names start with `query`, for completion right after `@`. */
export function kindsMatching(query: string): MentionKind[] {
  const q = query.toLowerCase();
  return MENTION_KINDS.filter((k) => k.startsWith(q));
}
