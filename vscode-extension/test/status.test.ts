import { describe, expect, it } from "vitest";

import { applyProgress, renderLanguageStatus, renderStatus, type StatusState } from "../src/status";

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

  it("reports an unreachable backend as a warning item, with the error in the tooltip", () => {
    const view = renderStatus({
      ...base,
      backend: { state: "unreachable", endpoint: "http://127.0.0.1:9/v1", detail: "connection refused", probed: true },
    });
    expect(view.text).toBe("$(warning) codectx offline");
    expect(view.severity).toBe("warning");
    expect(view.tooltip).toContain("Model server unreachable at http://127.0.0.1:9/v1: connection refused");
  });

  it("reports a backend error apart from unreachable", () => {
    const view = renderStatus({ ...base, backend: { state: "error", detail: "HTTP 401: bad key", probed: true } });
    expect(view.text).toBe("$(warning) codectx backend error");
    expect(view.severity).toBe("warning");
    expect(view.tooltip).toContain("answered with an error: HTTP 401: bad key");
  });

  it("names the model in the item when the backend is ok", () => {
    const view = renderStatus({
      ...base,
      backend: { state: "ok", model: "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", endpoint: "http://gpu:8000/v1", latencyMs: 12.4, probed: true },
    });
    expect(view.text).toBe("$(sparkle) codectx Qwen3-Coder-30B-A3B-Instruct-FP8");
    expect(view.severity).toBe("normal");
    expect(view.tooltip).toContain("Model server OK: Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8 at http://gpu:8000/v1 (12 ms");
  });

  it("lets indexing, pause and server trouble take the text before the model name", () => {
    const ok = { state: "ok" as const, model: "m1", probed: true };
    expect(renderStatus({ ...base, backend: ok, indexing: { title: "t", percentage: 10 } }).text).toBe("$(sync~spin) codectx indexing 10%");
    expect(renderStatus({ ...base, backend: ok, completionsPaused: true }).text).toBe("$(debug-pause) codectx paused");
    expect(renderStatus({ ...base, backend: ok, server: "failed" }).text).toBe("$(error) codectx");
    // Unreachable while indexing: the progress stays in the text, the warning in the colour.
    const both = renderStatus({ ...base, backend: { state: "unreachable", probed: true }, indexing: { title: "t", percentage: 50 } });
    expect(both.text).toBe("$(sync~spin) codectx indexing 50%");
    expect(both.severity).toBe("warning");
  });

  it("keeps disabled and unknown backends plain", () => {
    const disabled = renderStatus({ ...base, backend: { state: "disabled", detail: "privacy.offline is on", probed: true } });
    expect(disabled.text).toBe("$(sparkle) codectx");
    expect(disabled.severity).toBe("normal");
    expect(disabled.tooltip).toContain("Model server disabled: nothing is sent: privacy.offline is on");
    const unknown = renderStatus({ ...base, backend: { state: "unknown", probed: true } });
    expect(unknown.text).toBe("$(sparkle) codectx");
    expect(unknown.tooltip).toContain("not checked yet");
  });

  it("adds the index state to the tooltip only while the server runs", () => {
    const index = { state: "ready" as const, files: 42, chunks: 120, vectorsPending: 3 };
    expect(renderStatus({ ...base, index }).tooltip).toContain("Index: ready (42 files, 120 chunks, 3 vectors pending)");
    expect(renderStatus({ ...base, server: "stopped", index }).tooltip).not.toContain("Index:");
  });

  it("says how far the open files' neighbourhood has got while vectors are pending", () => {
    const index = { state: "indexing" as const, files: 9, chunks: 400, vectorsPending: 300 };
    expect(renderStatus({ ...base, index: { ...index, nearPending: 40 } }).tooltip).toContain("300 vectors pending (40 near the open files)");
    expect(renderStatus({ ...base, index: { ...index, nearPending: 0 } }).tooltip).toContain("300 vectors pending (the open files' neighbourhood is done)");
    expect(renderStatus({ ...base, index }).tooltip).toContain("300 vectors pending so far");
    expect(renderStatus({ ...base, index: { ...index, vectorsPending: 0, nearPending: 0 } }).tooltip).not.toContain("neighbourhood");
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

describe("renderLanguageStatus", () => {
  const ready = { state: "ready" as const, files: 12, chunks: 80, vectorsPending: 0 };

  it("names the index state and the model server", () => {
    const view = renderLanguageStatus({ ...base, index: ready, backend: { state: "ok", model: "qwen", endpoint: "http://h:8000/v1", probed: true } });
    expect(view.text).toBe("codectx: index ready");
    expect(view.detail).toBe("Index: ready (12 files, 80 chunks) · Model server OK: qwen at http://h:8000/v1");
    expect(view.severity).toBe("info");
    expect(view.busy).toBe(false);
  });

  it("is busy while indexing and shows the percentage", () => {
    const view = renderLanguageStatus({ ...base, indexing: { title: "t", percentage: 41.6 } });
    expect(view.text).toBe("codectx: indexing 42%");
    expect(view.busy).toBe(true);
    expect(view.detail).toBe("Model server not checked yet");
  });

  it("warns when the model server is down and errs when the index failed", () => {
    const down = renderLanguageStatus({ ...base, index: ready, backend: { state: "unreachable", detail: "refused", probed: true } });
    expect(down.severity).toBe("warning");
    expect(down.detail).toContain("Model server unreachable: refused");
    const failed = renderLanguageStatus({ ...base, index: { ...ready, state: "error" }, backend: { state: "unreachable", probed: true } });
    expect(failed.text).toBe("codectx: index failed");
    expect(failed.severity).toBe("error");
  });

  it("reports the server instead while it is not running", () => {
    expect(renderLanguageStatus({ ...base, server: "failed", index: ready })).toMatchObject({ text: "codectx: server failed", severity: "error" });
    expect(renderLanguageStatus({ ...base, server: "starting" })).toMatchObject({ text: "codectx: server starting", busy: true });
    expect(renderLanguageStatus({ ...base, server: "restricted" }).text).toBe("codectx: restricted");
  });
});
