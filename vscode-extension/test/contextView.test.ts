import { describe, expect, it } from "vitest";

import { fenceFor, parseContextRecord, renderContext } from "../src/contextView";

const record = {
  id: "inline-3",
  kind: "inline",
  path: "app/main.py",
  status: "ok",
  items: [
    { path: "app/util.py", start_line: 10, end_line: 24, symbol: "parse_config", reason: "definition of a symbol in use", score: 0.91234, tokens: 120 },
    { path: "app/a|b.py", start_line: 3, end_line: 3, symbol: "", reason: "retrieved\nsimilar", score: 0.5, tokens: 40 },
  ],
  redactions: [{ rule: "aws-access-key", path: "app/settings.py", line: 4 }],
  payload: "<|fim_prefix|>def f():\n    ```not a fence```\n<|fim_suffix|><|fim_middle|>",
  endpoint: "http://127.0.0.1:8000/v1/completions",
  sha256: "ab".repeat(32),
};

describe("renderContext", () => {
  const md = renderContext(parseContextRecord(record));

  it("lists every item with its reason, lines and score", () => {
    expect(md).toContain("| app/util.py | 10-24 | parse_config | definition of a symbol in use | 0.912 | 120 |");
    // A pipe in a path and a newline in a reason must not break the table row.
    expect(md).toContain("| app/a\\|b.py | 3 |  | retrieved similar | 0.500 | 40 |");
    expect(md).toContain("## Context items (2)");
  });

  it("shows redactions and where the payload went", () => {
    expect(md).toContain("- aws-access-key (app/settings.py, line 4)");
    expect(md).toContain("**Sent to:** http://127.0.0.1:8000/v1/completions");
    expect(md).toContain(`**Payload SHA-256:** ${"ab".repeat(32)}`);
  });

  it("includes the payload verbatim inside a fence it cannot close", () => {
    const fence = fenceFor(record.payload);
    expect(fence).toBe("````");
    expect(md).toContain(`${fence}text\n${record.payload}\n${fence}`);
    expect(md).toContain(`## Exact payload (${Buffer.byteLength(record.payload)} bytes)`);
  });

  it("says so when nothing was sent", () => {
    const empty = renderContext(parseContextRecord({ items: [], redactions: [], payload: "", status: "error", error: "offline" }));
    expect(empty).toContain("_Nothing was sent for this request._");
    expect(empty).toContain("**Status:** error: offline");
    expect(empty).toContain("_None: no secrets were found in what was sent._");
  });
});

describe("parseContextRecord", () => {
  it("tolerates missing and mistyped fields", () => {
    const r = parseContextRecord({ items: [{ score: "high" }, 7, null], redactions: "none", payload: 5 });
    expect(r.items).toEqual([{ path: "?", start_line: undefined, end_line: undefined, symbol: undefined, reason: undefined, score: undefined, tokens: undefined }]);
    expect(r.redactions).toEqual([]);
    expect(r.payload).toBe("");
  });

  it("rejects a non-object answer with a clear message", () => {
    expect(() => parseContextRecord(null)).toThrow("no context record");
  });
});
