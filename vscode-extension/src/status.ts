/**
 * What the status-bar item says: server state, indexing progress, backend
 * health and whether completions are paused, reduced to one text, tooltip and
 * severity. Pure, so every combination can be tested.
 */

export type ServerState = "starting" | "running" | "restarting" | "stopped" | "failed" | "restricted";

export interface IndexingState {
  title: string;
  message?: string;
  percentage?: number;
}

export interface BackendHealth {
  reachable: boolean;
  model?: string;
  detail?: string;
}

export interface StatusState {
  server: ServerState;
  indexing?: IndexingState;
  backend?: BackendHealth;
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

  if (state.backend) {
    if (state.backend.reachable) {
      lines.push(`Model server reachable${state.backend.model ? `: ${state.backend.model}` : ""}`);
    } else {
      lines.push(`Model server unreachable${state.backend.detail ? `: ${state.backend.detail}` : ""}`);
      if (state.server === "running") {
        severity = "warning";
        if (!state.indexing) {
          icon = "$(warning)";
          suffix = " offline";
        }
      }
    }
  }

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

/** A server message about the model server, as backend health; undefined when it is about something else. */
export function healthFromMessage(message: string): BackendHealth | undefined {
  const text = message.replace(/^codectx:\s*/, "");
  const m = /^no AI suggestions:\s*(.*)$/is.exec(text);
  if (m) return { reachable: false, detail: m[1]?.trim() || undefined };
  if (/\b(backend|model server)\b.*\b(unreachable|refused|timed? ?out|failed|down)\b/i.test(text)) {
    return { reachable: false, detail: text };
  }
  return undefined;
}

/**
 * Backend health after a `codectx.status` answer. The server only knows about a
 * problem (`backend_problem`); a cleared problem means the backend answered again.
 */
export function healthFromStatus(raw: unknown, current: BackendHealth | undefined, model?: string): BackendHealth | undefined {
  const problem = (raw as { backend_problem?: unknown } | null)?.backend_problem;
  if (problem === true) return current && !current.reachable ? current : { reachable: false };
  if (problem === false && current && !current.reachable) return { reachable: true, model };
  return current;
}
