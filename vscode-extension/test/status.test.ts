import { describe, expect, it } from "vitest";

import { applyProgress, healthFromMessage, healthFromStatus, renderStatus, type StatusState } from "../src/status";

const base: StatusState = { server: "running", completionsEnabled: true, completionsPaused: false };

describe("renderStatus", () => {
  it("shows a plain item when all is well", () => {
    const view = renderStatus(base);
    expect(view.text).toBe("$(sparkle) codectx");
    expect(view.severity).toBe("normal");
    expect(view.tooltip).toContain("Inline completions on");
  });

  it("shows indexing progress with a clamped, rounded percentage", () => {
    const view = renderStatus({ ...base, indexing: { title: "codectx: indexing demo", message: "12/40 files", percentage: 30.4 } });
    expect(view.text).toBe("$(sync~spin) codectx indexing 30%");
    expect(view.tooltip).toContain("codectx: indexing demo: 12/40 files");
    expect(renderStatus({ ...base, indexing: { title: "t", percentage: 140 } }).text).toContain("indexing 100%");
    expect(renderStatus({ ...base, indexing: { title: "t" } }).text).toBe("$(sync~spin) codectx indexing");
  });

  it("reports an unreachable backend as a warning", () => {
    const view = renderStatus({ ...base, backend: { reachable: false, detail: "connection refused" } });
    expect(view.text).toBe("$(warning) codectx offline");
    expect(view.severity).toBe("warning");
    expect(view.tooltip).toContain("Model server unreachable: connection refused");
  });

  it("names the model when the backend is reachable", () => {
    const view = renderStatus({ ...base, backend: { reachable: true, model: "qwen-coder" } });
    expect(view.tooltip).toContain("Model server reachable: qwen-coder");
    expect(view.severity).toBe("normal");
  });

  it("distinguishes paused from switched off", () => {
    expect(renderStatus({ ...base, completionsPaused: true }).text).toBe("$(debug-pause) codectx paused");
    const off = renderStatus({ ...base, completionsEnabled: false, completionsPaused: true });
    expect(off.tooltip).toContain("off (setting codectx.completion.enabled)");
  });

  it("marks server failures as errors and restricted mode plainly", () => {
    expect(renderStatus({ ...base, server: "failed" }).severity).toBe("error");
    expect(renderStatus({ ...base, server: "restarting" }).severity).toBe("warning");
    const restricted = renderStatus({ ...base, server: "restricted" });
    expect(restricted.text).toBe("$(shield) codectx restricted");
    expect(restricted.tooltip).toContain("trust this workspace");
    // Progress from a previous run is not shown while the server is not running.
    expect(renderStatus({ ...base, server: "starting", indexing: { title: "x", percentage: 5 } }).text).not.toContain("5%");
  });
});

describe("applyProgress", () => {
  it("follows begin, report and end", () => {
    let s = applyProgress(undefined, { kind: "begin", title: "codectx: indexing demo", percentage: 0 });
    expect(s).toEqual({ title: "codectx: indexing demo", message: undefined, percentage: 0 });
    s = applyProgress(s, { kind: "report", message: "5/10 files", percentage: 50 });
    expect(s).toEqual({ title: "codectx: indexing demo", message: "5/10 files", percentage: 50 });
    s = applyProgress(s, { kind: "report", message: "6/10 files" });
    expect(s?.percentage).toBe(50);
    expect(applyProgress(s, { kind: "end" })).toBeUndefined();
  });
});

describe("healthFromMessage", () => {
  it("recognises the server's backend failure notice", () => {
    expect(healthFromMessage("codectx: no AI suggestions: cannot reach http://127.0.0.1:9/v1")).toEqual({
      reachable: false,
      detail: "cannot reach http://127.0.0.1:9/v1",
    });
    expect(healthFromMessage("codectx: model server unreachable at http://x")?.reachable).toBe(false);
  });

  it("ignores messages about other things", () => {
    expect(healthFromMessage("codectx: setting ignored: unknown key 'lsp.x'")).toBeUndefined();
  });
});

describe("healthFromStatus", () => {
  it("marks a reported backend problem as unreachable, keeping the known detail", () => {
    expect(healthFromStatus({ backend_problem: true }, undefined)).toEqual({ reachable: false });
    const known = { reachable: false, detail: "connection refused" };
    expect(healthFromStatus({ backend_problem: true }, known)).toBe(known);
  });

  it("shows recovery once the problem is cleared, and leaves other states alone", () => {
    expect(healthFromStatus({ backend_problem: false }, { reachable: false }, "m")).toEqual({ reachable: true, model: "m" });
    const fine = { reachable: true, model: "m" };
    expect(healthFromStatus({ backend_problem: false }, fine)).toBe(fine);
    expect(healthFromStatus({ backend_problem: false }, undefined)).toBeUndefined();
    expect(healthFromStatus(null, fine)).toBe(fine);
  });
});
