import { describe, expect, it } from "vitest";

import { parseViewMessage } from "../src/chat/messages";
import { chatErrorMessage, parseApplyResult, parseDelta, parseGet, parseList, parseMentionItems, parseNotice, parseTurnResult } from "../src/chat/protocol";

describe("reading the server's chat answers", () => {
  it("keeps what is well-formed and drops what is not", () => {
    const r = parseTurnResult({
      conversationId: "c",
      turnId: "a1",
      text: "t",
      citations: [{ path: "a.py", uri: "file:///a.py", startLine: 4, endLine: 2, reason: "r" }, { path: "no-uri.py" }, null, 3],
      blocks: [{ index: 0, language: "py", text: "x", path: "" }],
      notices: ["n", 5],
      auditId: "",
      cancelled: "yes",
    });
    // endLine never before startLine; no uri: no citation; an empty path is no path.
    expect(r.citations).toEqual([{ path: "a.py", uri: "file:///a.py", startLine: 4, endLine: 4, symbol: undefined, reason: "r" }]);
    expect(r.blocks).toEqual([{ index: 0, language: "py", text: "x", path: undefined }]);
    expect(r.notices).toEqual(["n"]);
    expect(r.auditId).toBeNull();
    expect(r.cancelled).toBe(false);
    expect(() => parseTurnResult(null)).toThrow(/no answer/);
  });

  it("lists conversations even when one entry is broken", () => {
    expect(parseList({ conversations: [{ conversationId: "a", title: "A", turns: 2 }, { title: "no id" }] }).map((c) => c.conversationId)).toEqual(["a"]);
    const got = parseGet({ conversation: { conversationId: "a" }, turns: [{ turnId: "u1", role: "user", text: "q" }, { role: "bogus" }] });
    expect(got.turns.map((t) => t.role)).toEqual(["user", "assistant"]);
  });

  it("mention items: known kinds only, at most 50", () => {
    const items = parseMentionItems({ items: [{ kind: "file", value: "a.py", label: "a.py" }, { kind: "evil", value: "x" }, ...Array.from({ length: 60 }, () => ({ kind: "symbol", value: "s" }))] });
    expect(items[0]).toEqual({ kind: "file", value: "a.py", label: "a.py", detail: undefined });
    expect(items).toHaveLength(50);
    expect(items.some((i) => (i.kind as string) === "evil")).toBe(false);
  });

  it("an applyBlock answer needs an edit and the new text", () => {
    expect(parseApplyResult({ edit: { changes: {} }, newText: "x" }).warnings).toEqual([]);
    expect(() => parseApplyResult({ edit: { changes: {} } })).toThrow(/no new text/);
    expect(() => parseApplyResult({ newText: "x" })).toThrow(/workspace edit/);
  });

  it("notifications with missing fields are ignored", () => {
    expect(parseDelta({ conversationId: "c", turnId: "a", text: "x" })).toEqual({ conversationId: "c", turnId: "a", text: "x" });
    expect(parseDelta({ conversationId: "c", text: "x" })).toBeUndefined();
    expect(parseNotice({ conversationId: "c", kind: "refused", message: "m" })?.turnId).toBeUndefined();
    expect(parseNotice({ kind: "refused" })).toBeUndefined();
  });

  it("a server without chat is named as such", () => {
    expect(chatErrorMessage({ code: -32601, message: "Unhandled method codectx/chat/send" })).toMatch(/has no chat/);
    expect(chatErrorMessage({ code: -32803, message: "a turn is still running" })).toBe("a turn is still running");
  });
});

describe("messages from the webview", () => {
  it("accepts the known shapes and nothing else", () => {
    expect(parseViewMessage({ type: "send", text: "hi" })).toEqual({ type: "send", text: "hi" });
    expect(parseViewMessage({ type: "apply", key: 3, block: 0 })).toEqual({ type: "apply", key: 3, block: 0 });
    expect(parseViewMessage({ type: "apply", key: -1, block: 0 })).toBeUndefined();
    expect(parseViewMessage({ type: "openCitation", key: 1, index: 1.5 })).toBeUndefined();
    expect(parseViewMessage({ type: "send" })).toBeUndefined();
    expect(parseViewMessage({ type: "runCommand", command: "rm" })).toBeUndefined();
    expect(parseViewMessage("stop")).toBeUndefined();
    expect(parseViewMessage({ type: "stop" })).toEqual({ type: "stop" });
  });
});
