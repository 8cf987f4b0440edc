import { describe, expect, it } from "vitest";

import { parseTurnResult } from "../src/chat/protocol";
import { ChatSession } from "../src/chat/session";

const conversation = { conversationId: "c1", title: "t", createdAt: "", updatedAt: "", turns: 0 };
const result = (over: Record<string, unknown> = {}) =>
  parseTurnResult({ conversationId: "c1", turnId: "a1", text: "Hello world", citations: [], blocks: [], notices: [], cancelled: false, ...over });

function started(): ChatSession {
  const s = new ChatSession();
  s.reset(conversation);
  s.begin("hi?");
  return s;
}

describe("assembling a streamed answer", () => {
  it("appends deltas in order and learns the turn id from the first", () => {
    const s = started();
    for (const text of ["Hel", "lo ", "world"]) expect(s.delta({ conversationId: "c1", turnId: "a1", text })).toBeDefined();
    expect(s.current?.text).toBe("Hello world");
    expect(s.current?.turnId).toBe("a1");
    expect(s.turns.map((t) => [t.role, t.status])).toEqual([
      ["user", "done"],
      ["assistant", "streaming"],
    ]);
  });

  it("ignores deltas of another conversation, another turn, or when nothing runs", () => {
    const s = started();
    s.delta({ conversationId: "c1", turnId: "a1", text: "A" });
    expect(s.delta({ conversationId: "other", turnId: "a1", text: "X" })).toBeUndefined();
    expect(s.delta({ conversationId: "c1", turnId: "a0", text: "X" })).toBeUndefined();
    expect(s.current?.text).toBe("A");
    s.finish(result({ text: "A" }));
    expect(s.delta({ conversationId: "c1", turnId: "a1", text: "late" })).toBeUndefined();
    expect(s.turns[1]?.text).toBe("A");
  });

  it("takes the result's text over the deltas, with citations, blocks and notices", () => {
    const s = started();
    s.delta({ conversationId: "c1", turnId: "a1", text: "Hel" });
    s.notice({ conversationId: "c1", kind: "refused", message: "@file .env refused: never-send file" });
    const turn = s.finish(
      result({
        text: "Hello world",
        citations: [{ path: "a.py", uri: "file:///w/a.py", startLine: 1, endLine: 3, reason: "named" }],
        blocks: [{ index: 0, language: "python", text: "x = 1" }],
        notices: ["@file .env refused: never-send file", "older turns were summarised"],
      }),
    );
    expect(turn?.text).toBe("Hello world");
    expect(turn?.status).toBe("done");
    expect(turn?.citations[0]?.path).toBe("a.py");
    expect(turn?.blocks[0]?.text).toBe("x = 1");
    // The notice that came as a notification is not repeated by the result's list.
    expect(turn?.notices).toEqual([
      { kind: "refused", message: "@file .env refused: never-send file" },
      { kind: "notice", message: "older turns were summarised" },
    ]);
    expect(s.running).toBe(false);
    expect(s.conversation?.turns).toBe(1);
  });

  it("marks a stopped turn and keeps its partial text", () => {
    const s = started();
    s.delta({ conversationId: "c1", turnId: "a1", text: "Part 0" });
    expect(s.finish(result({ text: "Part 0", cancelled: true }))?.status).toBe("cancelled");
  });

  it("a failure keeps what arrived and says why; one turn at a time", () => {
    const s = started();
    expect(() => s.begin("again")).toThrow(/still streaming/);
    s.delta({ conversationId: "c1", turnId: "a1", text: "Hal" });
    const turn = s.fail("the model server is unreachable");
    expect(turn?.status).toBe("error");
    expect(turn?.text).toBe("Hal");
    expect(turn?.error).toContain("unreachable");
    expect(() => s.begin("again")).not.toThrow();
  });

  it("loads a saved conversation, and late deltas of its turns are ignored", () => {
    const s = new ChatSession();
    s.load(conversation, [
      { turnId: "u1", role: "user", text: "q", citations: [], blocks: [], createdAt: "", notices: [], cancelled: false },
      { turnId: "a1", role: "assistant", text: "a", citations: [], blocks: [], createdAt: "", notices: ["n"], cancelled: true },
    ]);
    expect(s.turns.map((t) => t.status)).toEqual(["done", "cancelled"]);
    expect(s.assistant("a1")?.notices).toEqual([{ kind: "notice", message: "n" }]);
    expect(s.delta({ conversationId: "c1", turnId: "a1", text: "x" })).toBeUndefined();
  });
});
