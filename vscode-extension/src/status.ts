/**
 * What the status-bar item says: server state, indexing progress, backend
 * health and whether completions are paused, reduced to one text, tooltip and
 * severity. Pure, so every combination can be tested.
 */
import { type BackendHealth, backendLine, type IndexHealth, indexLine, shortModel } from "./backendHealth";

export type ServerState = "starting" | "running" | "restarting" | "stopped" | "failed" | "restricted";

export interface IndexingState {
  title: string;
  message?: string;
  percentage?: number;
}

export interface StatusState {
  server: ServerState;
  indexing?: IndexingState;
  backend?: BackendHealth;
  /** The server's own view of the index (from `codectx/health`); progress drives the text, this the tooltip. */
  index?: IndexHealth;
  completionsEnabled: boolean;
  completionsPaused: boolean;
}

export interface StatusView {
  text: string;
  tooltip: string;
  severity: "normal" | "warning" | "error";
}

const SERVER_LINES: Record<ServerState, string> = {
  starting: "Language server starting",
  running: "Language server running",
  restarting: "Language server crashed; restarting",
  stopped: "Language server stopped",
  failed: "Language server failed; click to restart",
  restricted: "Restricted mode: trust this workspace to index it and get suggestions",
};

function clampPct(pct: number | undefined): number | undefined {
  return pct === undefined || !Number.isFinite(pct) ? undefined : Math.max(0, Math.min(100, Math.round(pct)));
}

export function renderStatus(state: StatusState): StatusView {
  const lines = [SERVER_LINES[state.server]];
  let icon = "$(sparkle)";
  let severity: StatusView["severity"] = "normal";
  let suffix = "";

  if (state.server === "starting" || state.server === "restarting") {
    icon = "$(loading~spin)";
    severity = state.server === "restarting" ? "warning" : "normal";
  } else if (state.server === "stopped" || state.server === "failed") {
    icon = "$(error)";
    severity = "error";
  } else if (state.server === "restricted") {
    icon = "$(shield)";
    suffix = " restricted";
  }

  if (state.server === "running" && state.indexing) {
    const pct = clampPct(state.indexing.percentage);
    icon = "$(sync~spin)";
    suffix = pct === undefined ? " indexing" : ` indexing ${pct}%`;
    lines.push(`${state.indexing.title}${state.indexing.message ? `: ${state.indexing.message}` : ""}`);
  }

  const backend = state.backend;
  if (backend) {
    lines.push(backendLine(backend));
    const bad = backend.state === "unreachable" || backend.state === "error";
    if (bad && state.server === "running") {
      severity = "warning";
      if (!state.indexing) {
        icon = "$(warning)";
        suffix = backend.state === "unreachable" ? " offline" : " backend error";
      }
    }
  }
  if (state.index && state.server === "running") lines.push(indexLine(state.index));

  if (!state.completionsEnabled) {
    lines.push("Inline completions off (setting codectx.completion.enabled)");
  } else if (state.completionsPaused) {
    lines.push("Inline completions paused");
    if (state.server === "running" && !state.indexing && suffix === "") {
      icon = "$(debug-pause)";
      suffix = " paused";
    }
  } else {
    lines.push("Inline completions on");
  }
  // A healthy backend names its model, so the user sees at a glance what answers.
  if (state.server === "running" && suffix === "" && backend?.state === "ok" && backend.model) {
    suffix = ` ${shortModel(backend.model)}`;
  }
  lines.push("Click for codectx actions");
  return { text: `${icon} codectx${suffix}`, tooltip: lines.join("\n"), severity };
}

/** A `$/progress` value applied to the indexing state (begin/report/end). */
export function applyProgress(
  current: IndexingState | undefined,
  value: { kind: "begin" | "report" | "end"; title?: string; message?: string; percentage?: number },
): IndexingState | undefined {
  if (value.kind === "end") {
    return undefined;
  }
  if (value.kind === "begin") {
    return { title: value.title ?? "codectx: indexing", message: value.message, percentage: value.percentage };
  }
  const base = current ?? { title: "codectx: indexing" };
  return {
    title: base.title,
    message: value.message ?? base.message,
    percentage: value.percentage ?? base.percentage,
  };
}

export interface LanguageStatusView {
  /** The index state, short: "codectx: index ready". */
  text: string;
  /** The backend state (and the index size), shown under the text. */
  detail: string;
  severity: "info" | "warning" | "error";
  busy: boolean;
}

/** The language-status item (the `{}` in the status bar next to the language): index and backend state. */
export function renderLanguageStatus(state: StatusState): LanguageStatusView {
  if (state.server !== "running") {
    const failed = state.server === "failed" || state.server === "stopped";
    return {
      text: state.server === "restricted" ? "codectx: restricted" : `codectx: server ${state.server}`,
      detail: SERVER_LINES[state.server],
      severity: failed ? "error" : "info",
      busy: state.server === "starting" || state.server === "restarting",
    };
  }
  let text: string;
  let severity: LanguageStatusView["severity"] = "info";
  if (state.indexing) {
    const pct = clampPct(state.indexing.percentage);
    text = pct === undefined ? "codectx: indexing" : `codectx: indexing ${pct}%`;
  } else if (state.index) {
    text = `codectx: index ${state.index.state === "error" ? "failed" : state.index.state}`;
    if (state.index.state === "error") severity = "error";
  } else {
    text = "codectx: index not reported yet";
  }
  const parts: string[] = [];
  if (state.index) parts.push(indexLine(state.index));
  const backend = state.backend;
  parts.push(backend ? backendLine(backend) : "Model server not checked yet");
  if (backend && (backend.state === "unreachable" || backend.state === "error") && severity === "info") severity = "warning";
  return { text, detail: parts.join(" · "), severity, busy: state.indexing !== undefined };
}
