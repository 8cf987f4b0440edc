import { describe, expect, it } from "vitest";

import type { BackendHealth, IndexHealth } from "../src/backendHealth";
import { HealthProbe, type ProbeDeps } from "../src/healthProbe";

const METHOD_NOT_FOUND = Object.assign(new Error("Unhandled method codectx/health"), { code: -32601 });
const OK_ANSWER = {
  backend: { state: "ok", endpoint: "http://127.0.0.1:8000/v1", model: "served-model", latency_ms: 3, error: null, checked_at: 100 },
  index: { state: "ready", files: 2, chunks: 5, vectors_pending: 0 },
};

/** A status bar's worth of state, and a server whose answers the test chooses. */
function harness(answers: { health: () => Promise<unknown>; status?: () => Promise<unknown>; known?: () => Promise<unknown> }) {
  const state: { backend?: BackendHealth; index?: IndexHealth; healthCalls: number; statusCalls: number; knownCalls: number; logs: string[] } = {
    healthCalls: 0,
    statusCalls: 0,
    knownCalls: 0,
    logs: [],
  };
  const deps: ProbeDeps = {
    askHealth: () => {
      state.healthCalls++;
      return answers.health();
    },
    askStatus: () => {
      state.statusCalls++;
      return (answers.status ?? (() => Promise.reject(new Error("no codectx.status"))))();
    },
    askKnown: () => {
      state.knownCalls++;
      return (answers.known ?? (() => Promise.resolve(OK_ANSWER)))();
    },
    current: () => state.backend,
    model: () => "configured-model",
    update: (b) => (state.backend = b),
    updateIndex: (i) => (state.index = i),
    log: (level, message) => state.logs.push(`${level}: ${message}`),
  };
  return { state, probe: new HealthProbe(deps) };
}

describe("HealthProbe with a server that answers codectx/health", () => {
  it("shows the probed backend and index, and ignores guesses afterwards", async () => {
    const { state, probe } = harness({ health: () => Promise.resolve(OK_ANSWER) });
    const shown = await probe.probe();
    expect(shown).toMatchObject({ state: "ok", model: "served-model", probed: true });
    expect(state.index).toEqual({ state: "ready", files: 2, chunks: 5, vectorsPending: 0 });
    expect(probe.supported).toBe(true);
    // A message that sounds like trouble does not overwrite the measurement (the server notifies real changes).
    probe.inferred({ state: "unreachable", detail: "guess", probed: false });
    expect(state.backend?.state).toBe("ok");
    expect(state.healthCalls).toBe(1);
    expect(state.statusCalls).toBe(0);
  });

  it("applies healthChanged notifications, and drops malformed ones with a warning", () => {
    const { state, probe } = harness({ health: () => Promise.resolve(OK_ANSWER) });
    probe.notified({ state: "unreachable", endpoint: "http://h/v1", error: "connection refused", checked_at: 5 });
    expect(state.backend).toMatchObject({ state: "unreachable", detail: "connection refused", probed: true });
    expect(probe.supported).toBe(true);
    probe.notified({ nonsense: true });
    expect(state.backend?.state).toBe("unreachable");
    expect(state.logs.at(-1)).toMatch(/^warn: .*ignored/);
  });

  it("shares one request between concurrent probes", async () => {
    let release: (v: unknown) => void = () => undefined;
    const { state, probe } = harness({ health: () => new Promise((r) => (release = r)) });
    const a = probe.probe();
    const b = probe.probe();
    expect(probe.busy).toBe(true);
    release(OK_ANSWER);
    expect(await a).toBe(await b);
    expect(state.healthCalls).toBe(1);
    expect(probe.busy).toBe(false);
  });

  it("keeps the last state when a probe fails for another reason, and asks again next time", async () => {
    let fail = true;
    const { state, probe } = harness({ health: () => (fail ? Promise.reject(new Error("timed out")) : Promise.resolve(OK_ANSWER)) });
    state.backend = { state: "unreachable", probed: true };
    expect(await probe.probe()).toEqual({ state: "unreachable", probed: true });
    expect(state.logs.at(-1)).toBe("warn: codectx/health failed: timed out");
    expect(probe.supported).toBeUndefined();
    fail = false;
    expect((await probe.probe())?.state).toBe("ok");
    expect(state.statusCalls).toBe(0);
  });
});

describe("HealthProbe with an older server (MethodNotFound)", () => {
  it("falls back to codectx.status and stops asking codectx/health", async () => {
    const { state, probe } = harness({
      health: () => Promise.reject(METHOD_NOT_FOUND),
      status: () => Promise.resolve({ backend_problem: true }),
    });
    expect(await probe.probe()).toEqual({ state: "unreachable", probed: false });
    expect(probe.supported).toBe(false);
    expect(state.logs.some((l) => l.includes("inferred"))).toBe(true);
    await probe.probe();
    expect(state.healthCalls).toBe(1);
    expect(state.statusCalls).toBe(2);
  });

  it("takes inferred health from messages and answers", async () => {
    const { state, probe } = harness({ health: () => Promise.reject(METHOD_NOT_FOUND), status: () => Promise.resolve({ backend_problem: false }) });
    await probe.probe();
    probe.inferred({ state: "unreachable", detail: "cannot reach http://h/v1", probed: false });
    expect(state.backend).toEqual({ state: "unreachable", detail: "cannot reach http://h/v1", probed: false });
    // The next poll sees the problem cleared: recovery, with the configured model name.
    expect(await probe.probe()).toEqual({ state: "ok", model: "configured-model", probed: false });
  });

  it("survives a server with neither request", async () => {
    const { state, probe } = harness({ health: () => Promise.reject(METHOD_NOT_FOUND) });
    state.backend = { state: "ok", probed: false };
    expect(await probe.probe()).toEqual({ state: "ok", probed: false });
  });
});

describe("HealthProbe.refreshIndex", () => {
  const INDEXING = { ...OK_ANSWER, backend: { ...OK_ANSWER.backend, state: "unreachable" }, index: { state: "indexing", files: 9, chunks: 40, vectors_pending: 3 } };

  it("takes the index state from a no-probe answer and leaves the backend alone", async () => {
    const { state, probe } = harness({ health: () => Promise.resolve(OK_ANSWER), known: () => Promise.resolve(INDEXING) });
    await probe.probe();
    await probe.refreshIndex();
    expect(state.knownCalls).toBe(1);
    expect(state.index).toEqual({ state: "indexing", files: 9, chunks: 40, vectorsPending: 3 });
    expect(state.backend?.state).toBe("ok");
    expect(state.healthCalls).toBe(1);
  });

  it("asks nothing of a server without codectx/health", async () => {
    const { state, probe } = harness({ health: () => Promise.reject(METHOD_NOT_FOUND) });
    await probe.probe();
    await probe.refreshIndex();
    expect(state.knownCalls).toBe(0);
    expect(state.index).toBeUndefined();
  });
});
