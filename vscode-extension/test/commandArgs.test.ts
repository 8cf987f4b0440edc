import { describe, expect, it } from "vitest";

import {
  errorMessage,
  interpretRefactorResult,
  MAX_INSTRUCTION_CHARS,
  parseSearchResults,
  refactorArgs,
  relativePath,
  searchArgs,
  validateInstruction,
} from "../src/commandArgs";

const range = { start: { line: 4, character: 0 }, end: { line: 9, character: 3 } };

describe("search arguments", () => {
  it("trims the query and skips ones too short to mean anything", () => {
    expect(searchArgs("  parse config  ")).toEqual({ query: "parse config", k: 20 });
    expect(searchArgs(" a ")).toBeUndefined();
    expect(searchArgs("x".repeat(900))?.query.length).toBe(500);
  });
});

describe("search results", () => {
  const folders = ["file:///work/proj"];

  it("turns locations into picks relative to the workspace", () => {
    const hits = parseSearchResults(
      [
        { uri: "file:///work/proj/pkg/util.py", range, symbol: "parse_config", score: 0.87654, snippet: "def parse_config(path):\n  ..." },
        { uri: "file:///work/proj/a%20b.py", range },
      ],
      folders,
    );
    expect(hits).toHaveLength(2);
    expect(hits[0]).toMatchObject({ label: "parse_config", description: "pkg/util.py:5", detail: "def parse_config(path):  ·  score 0.877" });
    expect(hits[1]).toMatchObject({ label: "a b.py:5", description: "" });
  });

  it("accepts wrapped lists and LocationLinks, and drops junk", () => {
    const hits = parseSearchResults(
      { results: [{ targetUri: "file:///work/proj/x.py", targetRange: range }, { uri: 3 }, "nope", { location: { uri: "file:///work/proj/y.py", range } }] },
      folders,
    );
    expect(hits.map((h) => h.location.uri)).toEqual(["file:///work/proj/x.py", "file:///work/proj/y.py"]);
    expect(parseSearchResults(null, folders)).toEqual([]);
  });

  it("falls back to the absolute path outside every folder", () => {
    expect(relativePath("file:///elsewhere/z.py", folders)).toBe("/elsewhere/z.py");
    expect(relativePath("file:///work/project2/z.py", folders)).toBe("/work/project2/z.py");
  });
});

describe("refactor arguments", () => {
  it("requires a real instruction", () => {
    expect(validateInstruction("   ")).toMatch(/Say what to change/);
    expect(validateInstruction("x".repeat(MAX_INSTRUCTION_CHARS + 1))).toMatch(/under/);
    expect(validateInstruction("add type hints")).toBeUndefined();
    expect(() => refactorArgs("file:///a.py", range, "")).toThrow(/Say what to change/);
  });

  it("builds the server's argument object", () => {
    expect(refactorArgs("file:///a.py", range, "  rename x to count ")).toEqual({ uri: "file:///a.py", range, instruction: "rename x to count" });
  });
});

describe("refactor answers", () => {
  it("recognises a WorkspaceEdit in either form", () => {
    const edit = { changes: { "file:///a.py": [{ range, newText: "x" }] } };
    expect(interpretRefactorResult(edit)).toEqual({ kind: "edit", edit, files: 1 });
    const docEdit = { documentChanges: [{ textDocument: { uri: "file:///a.py", version: 3 }, edits: [] }, { textDocument: { uri: "file:///b.py", version: 1 }, edits: [] }] };
    expect(interpretRefactorResult({ edit: docEdit })).toMatchObject({ kind: "edit", files: 2 });
  });

  it("turns refusals and empty answers into a message", () => {
    expect(interpretRefactorResult({ error: "the result does not parse" })).toEqual({ kind: "refused", message: "the result does not parse" });
    expect(interpretRefactorResult("model unreachable")).toEqual({ kind: "refused", message: "model unreachable" });
    expect(interpretRefactorResult(null)).toEqual({ kind: "refused", message: "the server proposed no change" });
    expect(interpretRefactorResult({ changes: {} })).toEqual({ kind: "refused", message: "the server proposed no change" });
  });

  it("strips the JSON-RPC prefix from error messages", () => {
    expect(errorMessage(new Error("Request workspace/executeCommand failed with message: backend down"))).toBe("backend down");
    expect(errorMessage({ message: "m" })).toBe("m");
    expect(errorMessage(42)).toBe("42");
  });
});

describe("codectx/search results", () => {
  it("turns zero-based chunk lines into a whole-line range and shows the first code line", () => {
    const [hit] = parseSearchResults(
      { query: "q", results: [{ uri: "file:///work/proj/m.py", path: "m.py", start_line: 3, end_line: 7, symbol: "Thing.size", score: 0.5, text: "@decorator\n\n  def size(self):\n    return 1" }] },
      ["file:///work/proj"],
    );
    expect(hit?.location.range).toEqual({ start: { line: 3, character: 0 }, end: { line: 8, character: 0 } });
    expect(hit).toMatchObject({ label: "Thing.size", description: "m.py:4", detail: "def size(self):  ·  score 0.500" });
  });
});
