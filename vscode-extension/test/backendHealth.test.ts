import { describe, expect, it } from "vitest";

import {
  acceptInferred,
  checkSummary,
  healthFromMessage,
  healthFromStatus,
  isMethodNotFound,
  parseBackendHealth,
  parseHealthReport,
  probeDue,
  shortModel,
  tickMs,
} from "../src/backendHealth";

const OK = {
  backend: { state: "ok", endpoint: "http://127.0.0.1:8000/v1", model: "qwen-coder", latency_ms: 4.2, error: null, checked_at: 1764470000.5 },
  index: { state: "ready", files: 12, chunks: 80, vectors_pending: 0 },
};

describe("parseHealthReport", () => {
  it("reads the server's answer into the extension's shape", () => {
    expect(parseHealthReport(OK)).toEqual({
      backend: { state: "ok", endpoint: "http://127.0.0.1:8000/v1", model: "qwen-coder", latencyMs: 4.2, detail: undefined, checkedAt: 1764470000.5, probed: true },
      index: { state: "ready", files: 12, chunks: 80, vectorsPending: 0 },
    });
  });

  it("keeps the error of an unreachable backend and tolerates nulls", () => {
    const report = parseHealthReport({
      backend: { state: "unreachable", endpoint: "http://h:1/v1", model: null, latency_ms: null, error: "connection refused", checked_at: 1 },
      index: { state: "indexing", files: 3, chunks: 9, vectors_pending: 9 },
    });
    expect(report?.backend).toMatchObject({ state: "unreachable", detail: "connection refused", model: undefined, latencyMs: undefined });
    expect(report?.index?.vectorsPending).toBe(9);
    expect(report?.index?.nearPending).toBeUndefined();
  });

  it("reads what the open files' neighbourhood is still owed", () => {
    const index = { state: "indexing", files: 3, chunks: 900, vectors_pending: 800, near_open_files: { vectors: 64, vectors_total: 200 } };
    expect(parseHealthReport({ backend: OK.backend, index })?.index?.nearPending).toBe(136);
    const none = { ...index, near_open_files: null };
    expect(parseHealthReport({ backend: OK.backend, index: none })?.index?.nearPending).toBeUndefined();
  });

  it("rejects answers without a known backend state, and drops a malformed index part", () => {
    expect(parseHealthReport(null)).toBeUndefined();
    expect(parseHealthReport({ backend: { state: "splendid" } })).toBeUndefined();
    expect(parseHealthReport({ index: OK.index })).toBeUndefined();
    expect(parseHealthReport({ backend: OK.backend, index: { state: "??" } })?.index).toBeUndefined();
    // Counts are whole and never negative, whatever arrives.
    expect(parseHealthReport({ backend: OK.backend, index: { state: "ready", files: -2, chunks: 3.6, vectors_pending: "x" } })?.index).toEqual({
      state: "ready",
      files: 0,
      chunks: 4,
      vectorsPending: 0,
    });
  });

  it("reads a healthChanged notification's backend object on its own", () => {
    expect(parseBackendHealth({ state: "error", error: "HTTP 500" })).toMatchObject({ state: "error", detail: "HTTP 500", probed: true });
    expect(parseBackendHealth("ok")).toBeUndefined();
    // Never checked: the server sends checked_at 0 and an empty endpoint when none is configured.
    expect(parseBackendHealth({ state: "unknown", endpoint: "", checked_at: 0 })).toEqual({
      state: "unknown",
      endpoint: undefined,
      model: undefined,
      latencyMs: undefined,
      detail: undefined,
      checkedAt: undefined,
      probed: true,
    });
  });
});

describe("fallback for older servers", () => {
  it("recognises MethodNotFound and nothing else", () => {
    expect(isMethodNotFound({ code: -32601, message: "Unhandled method codectx/health" })).toBe(true);
    expect(isMethodNotFound({ code: -32603 })).toBe(false);
    expect(isMethodNotFound(new Error("connection closed"))).toBe(false);
    expect(isMethodNotFound(undefined)).toBe(false);
  });

  it("takes guesses only until the server is known to answer probes", () => {
    expect(acceptInferred(undefined)).toBe(true);
    expect(acceptInferred(false)).toBe(true);
    expect(acceptInferred(true)).toBe(false);
  });

  it("infers unreachable from the server's backend failure notice", () => {
    expect(healthFromMessage("codectx: no AI suggestions: cannot reach http://127.0.0.1:9/v1")).toEqual({
      state: "unreachable",
      detail: "cannot reach http://127.0.0.1:9/v1",
      probed: false,
    });
    expect(healthFromMessage("codectx: model server unreachable at http://x")?.state).toBe("unreachable");
    expect(healthFromMessage("codectx: setting ignored: unknown key 'lsp.x'")).toBeUndefined();
  });

  it("infers from codectx.status: a problem is unreachable, a cleared one is recovery", () => {
    expect(healthFromStatus({ backend_problem: true }, undefined)).toEqual({ state: "unreachable", probed: false });
    const known = { state: "unreachable" as const, detail: "connection refused", probed: false };
    expect(healthFromStatus({ backend_problem: true }, known)).toBe(known);
    expect(healthFromStatus({ backend_problem: false }, known, "m")).toEqual({ state: "ok", model: "m", probed: false });
    const fine = { state: "ok" as const, model: "m", probed: false };
    expect(healthFromStatus({ backend_problem: false }, fine)).toBe(fine);
    expect(healthFromStatus({ backend_problem: false }, undefined)).toBeUndefined();
    expect(healthFromStatus(null, fine)).toBe(fine);
  });
});

describe("probe schedule", () => {
  it("probes when focused and due, never with interval 0", () => {
    expect(probeDue(1000, undefined, 60_000, true)).toBe(true);
    expect(probeDue(61_000, 1000, 60_000, true)).toBe(true);
    expect(probeDue(60_999, 1000, 60_000, true)).toBe(false);
    expect(probeDue(999_999, 1000, 60_000, false)).toBe(false);
    expect(probeDue(999_999, undefined, 0, true)).toBe(false);
  });

  it("retries sooner while the backend is down, never more often than the interval", () => {
    expect(probeDue(16_000, 0, 60_000, true, "unreachable")).toBe(true);
    expect(probeDue(16_000, 0, 60_000, true, "error")).toBe(true);
    expect(probeDue(16_000, 0, 60_000, true, "ok")).toBe(false);
    expect(probeDue(6_000, 0, 10_000, true, "unreachable")).toBe(false);
    expect(probeDue(16_000, 0, 0, true, "unreachable")).toBe(false);
  });

  it("wakes often enough to catch a refocused window, and not at all when off", () => {
    expect(tickMs(60_000)).toBe(15_000);
    expect(tickMs(5_000)).toBe(5_000);
    expect(tickMs(0)).toBe(0);
  });
});

describe("text for the user", () => {
  it("shortens model names for the status bar", () => {
    expect(shortModel("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")).toBe("Qwen3-Coder-30B-A3B-Instruct-FP8");
    expect(shortModel("x".repeat(40))).toHaveLength(32);
    expect(shortModel("plain")).toBe("plain");
  });

  it("summarises Check Backend by state, and says when the server cannot probe", () => {
    const ok = parseBackendHealth(OK.backend);
    expect(checkSummary(ok, true)).toMatchObject({ severity: "info" });
    expect(checkSummary(ok, true).message).toContain("Model server OK: qwen-coder at http://127.0.0.1:8000/v1 (4 ms");
    const down = parseBackendHealth({ state: "unreachable", endpoint: "http://h/v1", error: "refused" });
    expect(checkSummary(down, true)).toEqual({ severity: "warning", message: "codectx: Model server unreachable at http://h/v1: refused." });
    const old = checkSummary({ state: "unreachable", detail: "refused", probed: false }, false);
    expect(old.severity).toBe("warning");
    expect(old.message).toContain("cannot check the model server on request");
    expect(old.message).toContain("Last known: Model server unreachable: refused");
    expect(checkSummary(undefined, false).message).not.toContain("Last known");
  });
});
