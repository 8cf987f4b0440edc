import { describe, expect, it } from "vitest";

import { applyBlock, type ApplyPorts, fenceRefusal, targetFor } from "../src/chat/applyFlow";

const EDIT = { changes: { "file:///w/a.py": [{ range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } }, newText: "y\n" }] } };

function ports(over: Partial<ApplyPorts> & { answer?: boolean; versions?: number[] } = {}) {
  const calls: string[] = [];
  const versions = [...(over.versions ?? [1, 1])];
  const p: ApplyPorts = {
    request: over.request ?? (() => Promise.resolve({ edit: EDIT, newText: "y\n", warnings: ["w"] })),
    version: () => Promise.resolve(versions.shift()),
    showDiff: (uri, text) => {
      calls.push(`diff ${uri} ${JSON.stringify(text)}`);
      return Promise.resolve();
    },
    confirm: (_uri, warnings) => {
      calls.push(`confirm ${warnings.join(",")}`);
      return Promise.resolve(over.answer ?? true);
    },
    applyEdit: over.applyEdit ?? ((edit) => {
      calls.push(`apply ${JSON.stringify(edit) === JSON.stringify(EDIT)}`);
      return Promise.resolve(true);
    }),
    closeDiff: () => {
      calls.push("close");
      return Promise.resolve();
    },
  };
  return { p, calls };
}

const params = { conversationId: "c", turnId: "a1", blockIndex: 0, uri: "file:///w/a.py" };

describe("apply a code block", () => {
  it("shows the diff, asks, then applies the server's edit and closes the diff", async () => {
    const { p, calls } = ports();
    expect(await applyBlock(p, params)).toEqual({ kind: "applied", uri: params.uri });
    expect(calls).toEqual([`diff ${params.uri} "y\\n"`, "confirm w", "apply true", "close"]);
  });

  it("changes nothing when the user discards", async () => {
    const { p, calls } = ports({ answer: false });
    expect((await applyBlock(p, params)).kind).toBe("discarded");
    expect(calls).toEqual([`diff ${params.uri} "y\\n"`, "confirm w", "close"]);
  });

  it("refuses to apply when the document changed while the diff was open", async () => {
    const { p, calls } = ports({ versions: [1, 2] });
    expect((await applyBlock(p, params)).kind).toBe("stale");
    expect(calls.some((c) => c.startsWith("apply"))).toBe(false);
  });

  it("reports the server's refusal and shows no diff", async () => {
    const { p, calls } = ports({ request: () => Promise.reject(new Error("the result does not parse (line 2)")) });
    expect(await applyBlock(p, params)).toEqual({ kind: "failed", message: "the result does not parse (line 2)" });
    expect(calls).toEqual([]);
  });

  it("rejects a malformed answer and an edit VS Code cannot apply", async () => {
    expect((await applyBlock(ports({ request: () => Promise.resolve({ edit: {} }) }).p, params)).kind).toBe("failed");
    const { p } = ports({ applyEdit: () => Promise.resolve(false) });
    expect(await applyBlock(p, params)).toEqual({ kind: "failed", message: "VS Code could not apply the edit" });
  });
});

describe("which file a block goes to", () => {
  const folders = ["file:///w/proj", "file:///w/other/"];
  const exists = (uri: string) => ["file:///w/proj/calc/ops.py", "file:///w/other/my%20notes.md"].includes(uri);

  it("the workspace file the fence names", () => {
    expect(targetFor({ path: "calc/ops.py" }, folders, "file:///w/proj/x.py", exists)).toBe("file:///w/proj/calc/ops.py");
    expect(targetFor({ path: "my notes.md" }, folders, undefined, exists)).toBe("file:///w/other/my%20notes.md");
  });

  it("else the active file: never a path outside the workspace, whatever the answer says", () => {
    const everything = () => true;
    for (const path of ["../../etc/passwd", "/etc/passwd", "calc/../../x", "calc\\..\\..\\x", "file:///etc/passwd", undefined, ""]) {
      expect(targetFor({ path }, folders, "file:///w/proj/x.py", everything), String(path)).toBe("file:///w/proj/x.py");
    }
    expect(targetFor({ path: "missing.py" }, folders, "file:///w/proj/x.py", exists)).toBe("file:///w/proj/x.py");
    expect(targetFor({ path: "missing.py" }, folders, undefined, exists)).toBeUndefined();
  });

  it("never a file under .git/, which the answer may name to have git run a command: the block is refused", () => {
    const everything = () => true;
    for (const path of [
      ".git/config",
      "sub/.git/hooks/pre-commit",
      ".GIT/config",
      ".git./config",
      ".git\\config",
      ".git",
      "GIT~1/config",
      ".g\u200cit/hooks/x",
      ".git::$INDEX_ALLOCATION/config",
    ]) {
      expect(targetFor({ path }, folders, "file:///w/proj/x.py", everything), path).toBe("file:///w/proj/x.py");
      expect(fenceRefusal({ path }), path).toContain("never applies a block there");
    }
    expect(targetFor({ path: ".gitignore" }, folders, undefined, everything)).toBe("file:///w/proj/.gitignore");
    expect(fenceRefusal({ path: ".gitignore" })).toBeUndefined();
    expect(fenceRefusal({ path: "digit~1/x" })).toBeUndefined();
    expect(fenceRefusal({ path: ".github/ci.yml" })).toBeUndefined();
    expect(fenceRefusal({ path: "calc/ops.py" })).toBeUndefined();
    expect(fenceRefusal({ path: undefined })).toBeUndefined();
    expect(targetFor({ path: ".github/ci.yml" }, folders, undefined, everything)).toBe("file:///w/proj/.github/ci.yml");
  });
});
