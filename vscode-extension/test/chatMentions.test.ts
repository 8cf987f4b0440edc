import { describe, expect, it } from "vitest";

import { insertMention, kindsMatching, mentionAtCaret, mentionText, parseMentions } from "../src/chat/mentions";

describe("parseMentions", () => {
  it("finds every kind in the protocol's syntax", () => {
    expect(
      parseMentions("Compare @file:src/a.py with @symbol:parse_config in @folder:src/ and @diff, @problems\n@codebase:where are settings read\nthanks"),
    ).toEqual([
      { kind: "file", value: "src/a.py" },
      { kind: "symbol", value: "parse_config" },
      { kind: "folder", value: "src/" },
      { kind: "diff" },
      { kind: "problems" },
      { kind: "codebase", value: "where are settings read" },
    ]);
  });

  it("reads quoted values with spaces and counts each mention once", () => {
    expect(parseMentions('@file:"docs/my notes.md" and again @file:"docs/my notes.md" (@diff) @file:b.py')).toEqual([
      { kind: "file", value: "docs/my notes.md" },
      { kind: "diff" },
      { kind: "file", value: "b.py" },
    ]);
  });

  it("ignores e-mail addresses, unknown kinds, values missing and kinds glued to words", () => {
    expect(parseMentions("mail me@file:x.py, @files, @user, @file: alone, @diffs, @problems:x")).toEqual([]);
  });
});

describe("mentionAtCaret", () => {
  it("completes a kind right after @", () => {
    expect(mentionAtCaret("look at @fi", 11)).toEqual({ start: 8, query: "fi" });
    expect(mentionAtCaret("@", 1)).toEqual({ start: 0, query: "" });
  });

  it("completes a value after kind:", () => {
    expect(mentionAtCaret("see @file:src/ma", 16)).toEqual({ start: 4, kind: "file", query: "src/ma" });
    expect(mentionAtCaret("see @symbol:", 12)).toEqual({ start: 4, kind: "symbol", query: "" });
    expect(mentionAtCaret('(@file:"my no', 13)).toEqual({ start: 1, kind: "file", query: "my no" });
  });

  it("offers nothing inside words, after a space, or for free-text and valueless kinds", () => {
    expect(mentionAtCaret("me@fi", 5)).toBeUndefined();
    expect(mentionAtCaret("@file:a.py ", 11)).toBeUndefined();
    expect(mentionAtCaret("@codebase:where", 15)).toBeUndefined();
    expect(mentionAtCaret("@diff:", 6)).toBeUndefined();
  });
});

describe("writing a chosen mention", () => {
  it("replaces what was typed and moves the caret after it", () => {
    const at = mentionAtCaret("fix @file:ca please", 12);
    expect(at).toBeDefined();
    expect(insertMention("fix @file:ca please", 12, at!, "file", "calc/ops.py")).toEqual({ text: "fix @file:calc/ops.py  please", caret: 22 });
  });

  it("a kind that takes a value stops after the colon", () => {
    const at = mentionAtCaret("@fi", 3)!;
    expect(insertMention("@fi", 3, at, "file")).toEqual({ text: "@file:", caret: 6 });
    expect(insertMention("@pr", 3, mentionAtCaret("@pr", 3)!, "problems")).toEqual({ text: "@problems ", caret: 10 });
  });

  it("quotes values with spaces", () => {
    expect(mentionText("file", "docs/my notes.md")).toBe('@file:"docs/my notes.md"');
    expect(mentionText("codebase", "where is it")).toBe("@codebase:where is it");
    expect(mentionText("diff")).toBe("@diff");
  });

  it("lists the kinds that start with what was typed", () => {
    expect(kindsMatching("f")).toEqual(["file", "folder"]);
    expect(kindsMatching("")).toHaveLength(6);
  });
});
