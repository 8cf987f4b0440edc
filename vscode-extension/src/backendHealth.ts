/**
 * Backend and index health as the extension knows it: parsed from the
 * server's `codectx/health` answers and `codectx/healthChanged` notifications,
 * or, with an older server that has no such request, inferred from its
 * messages and `codectx.status`. Also when to probe, and what "Check Backend"
 * says. Pure, so every state can be tested without VS Code.
 */

export type BackendState = "ok" | "unreachable" | "error" | "disabled" | "unknown";

export interface BackendHealth {
  state: BackendState;
  model?: string;
  endpoint?: string;
  latencyMs?: number;
  detail?: string;
  /** Seconds since the epoch, as the server reports it. */
  checkedAt?: number;
  /** Measured by the server's probe (true), or guessed from messages and answers (false). */
  probed: boolean;
}

export type IndexState = "indexing" | "ready" | "empty" | "error";

export interface IndexHealth {
  state: IndexState;
  files: number;
  chunks: number;
  vectorsPending: number;
  /** Vectors still owed to the open documents' neighbourhood (embedded first); undefined until the server reports it. */
  nearPending?: number;
}

export interface HealthReport {
  backend: BackendHealth;
  index?: IndexHealth;
}

/** The JSON-RPC "method not found" code: the server predates `codectx/health`. */
export const METHOD_NOT_FOUND = -32601;

const BACKEND_STATES: readonly BackendState[] = ["ok", "unreachable", "error", "disabled", "unknown"];
const INDEX_STATES: readonly IndexState[] = ["indexing", "ready", "empty", "error"];

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function count(value: unknown): number {
  const n = num(value);
  return n === undefined ? 0 : Math.max(0, Math.round(n));
}

/** The backend object of a health answer or notification; undefined when it is not one. */
export function parseBackendHealth(raw: unknown): BackendHealth | undefined {
  const obj = record(raw);
  const state = obj?.state;
  if (!obj || typeof state !== "string" || !BACKEND_STATES.includes(state as BackendState)) return undefined;
  return {
    state: state as BackendState,
    model: text(obj.model),
    endpoint: text(obj.endpoint),
    latencyMs: num(obj.latency_ms),
    detail: text(obj.error),
    // The server sends 0 for "never checked".
    checkedAt: (num(obj.checked_at) ?? 0) > 0 ? num(obj.checked_at) : undefined,
    probed: true,
  };
}

export function parseIndexHealth(raw: unknown): IndexHealth | undefined {
  const obj = record(raw);
  const state = obj?.state;
  if (!obj || typeof state !== "string" || !INDEX_STATES.includes(state as IndexState)) return undefined;
  const near = record(obj.near_open_files);
  return {
    state: state as IndexState,
    files: count(obj.files),
    chunks: count(obj.chunks),
    vectorsPending: count(obj.vectors_pending),
    nearPending: near ? Math.max(0, count(near.vectors_total) - count(near.vectors)) : undefined,
  };
}

/** A whole `codectx/health` answer; undefined when the answer has no usable backend part. */
export function parseHealthReport(raw: unknown): HealthReport | undefined {
  const obj = record(raw);
  const backend = parseBackendHealth(obj?.backend);
  return backend ? { backend, index: parseIndexHealth(obj?.index) } : undefined;
}

/** Did a request fail because the server does not know the method? */
export function isMethodNotFound(err: unknown): boolean {
  return record(err)?.code === METHOD_NOT_FOUND;
}

/** A server message about the model server, as inferred health; undefined when it is about something else. */
export function healthFromMessage(message: string): BackendHealth | undefined {
  const body = message.replace(/^codectx:\s*/, "");
  const m = /^no AI suggestions:\s*(.*)$/is.exec(body);
  if (m) return { state: "unreachable", detail: m[1]?.trim() || undefined, probed: false };
  if (/\b(backend|model server)\b.*\b(unreachable|refused|timed? ?out|failed|down)\b/i.test(body)) {
    return { state: "unreachable", detail: body, probed: false };
  }
  return undefined;
}

/**
 * Inferred health after an older server's `codectx.status` answer. It only
 * knows about a problem (`backend_problem`); a cleared problem means the
 * backend answered again.
 */
export function healthFromStatus(raw: unknown, current: BackendHealth | undefined, model?: string): BackendHealth | undefined {
  const problem = record(raw)?.backend_problem;
  const bad = current !== undefined && (current.state === "unreachable" || current.state === "error");
  if (problem === true) return bad ? current : { state: "unreachable", probed: false };
  if (problem === false && bad) return { state: "ok", model, probed: false };
  return current;
}

/** A guess is ignored once the server has measured the backend itself: only probes and notifications count then. */
export function acceptInferred(probeSupported: boolean | undefined): boolean {
  return probeSupported !== true;
}

/** While the backend is down, probe at least this often, so a recovery (or a false alarm from a busy start) shows soon. */
export const RETRY_MS = 15_000;

/**
 * Probe when the window is focused and the last probe is at least one
 * interval old (interval 0: never); sooner while the backend is down.
 */
export function probeDue(
  nowMs: number,
  lastProbeMs: number | undefined,
  intervalMs: number,
  focused: boolean,
  current?: BackendState,
): boolean {
  if (intervalMs <= 0 || !focused) return false;
  const wait = current === "unreachable" || current === "error" ? Math.min(intervalMs, RETRY_MS) : intervalMs;
  return lastProbeMs === undefined || nowMs - lastProbeMs >= wait;
}

/** How often the timer wakes to see whether a probe is due: often enough that a refocused window is not left waiting long. */
export function tickMs(intervalMs: number): number {
  return intervalMs <= 0 ? 0 : Math.min(intervalMs, RETRY_MS);
}

/** The model name short enough for the status bar: the last path part, cut at 32 characters. */
export function shortModel(model: string): string {
  const last = model.split("/").filter(Boolean).at(-1) ?? model;
  return last.length > 32 ? `${last.slice(0, 31)}…` : last;
}

function when(checkedAt: number | undefined): string {
  return checkedAt === undefined ? "" : `, checked ${new Date(checkedAt * 1000).toLocaleTimeString()}`;
}

/** The tooltip line for the backend. */
export function backendLine(h: BackendHealth): string {
  const at = h.endpoint ? ` at ${h.endpoint}` : "";
  const because = h.detail ? `: ${h.detail}` : "";
  switch (h.state) {
    case "ok": {
      const latency = h.latencyMs === undefined ? "" : `${Math.round(h.latencyMs)} ms`;
      const extra = [latency, when(h.checkedAt).replace(/^, /, "")].filter(Boolean).join(", ");
      return `Model server OK${h.model ? `: ${h.model}` : ""}${at}${extra ? ` (${extra})` : ""}`;
    }
    case "unreachable":
      return `Model server unreachable${at}${because}`;
    case "error":
      return `Model server answered with an error${at}${because}`;
    case "disabled":
      return `Model server disabled: nothing is sent${because}`;
    case "unknown":
      return "Model server not checked yet";
  }
}

/** While vectors are pending: how far the open files' neighbourhood, embedded first, has got. */
function nearLine(i: IndexHealth): string {
  if (i.nearPending === undefined) return "";
  return i.nearPending > 0 ? ` (${i.nearPending} near the open files)` : " (the open files' neighbourhood is done)";
}

export function indexLine(i: IndexHealth): string {
  const sizes = `${i.files} files, ${i.chunks} chunks${i.vectorsPending > 0 ? `, ${i.vectorsPending} vectors pending${nearLine(i)}` : ""}`;
  switch (i.state) {
    case "indexing":
      return `Index: indexing (${sizes} so far)`;
    case "ready":
      return `Index: ready (${sizes})`;
    case "empty":
      return "Index: empty";
    case "error":
      return "Index: failed (see codectx: Show Output)";
  }
}

export interface CheckSummary {
  severity: "info" | "warning";
  message: string;
}

/** What "codectx: Check Backend" tells the user. */
export function checkSummary(h: BackendHealth | undefined, probeSupported: boolean): CheckSummary {
  if (!probeSupported) {
    const known = h && h.state !== "unknown" ? ` Last known: ${backendLine(h)}.` : "";
    return {
      severity: "warning",
      message: `codectx: this codectx language server cannot check the model server on request (update codectx).${known}`,
    };
  }
  if (!h) return { severity: "warning", message: "codectx: the language server gave no health answer." };
  return { severity: h.state === "ok" || h.state === "disabled" ? "info" : "warning", message: `codectx: ${backendLine(h)}.` };
}
