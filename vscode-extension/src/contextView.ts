/**
 * Renders what was sent for a request (the server's `codectx.showContext`
 * answer) as a Markdown document: the context items with their reasons, the
 * redactions, and the exact payload. Pure; the read-only document that shows
 * it lives in contextDocument.ts.
 */

export interface ContextItem {
  path: string;
  start_line?: number;
  end_line?: number;
  symbol?: string;
  reason?: string;
  score?: number;
  tokens?: number;
}

export interface Redaction {
  rule?: string;
  kind?: string;
  path?: string;
  line?: number;
  count?: number;
  [key: string]: unknown;
}

export interface ContextRecord {
  id?: string;
  kind?: string;
  path?: string;
  status?: string;
  error?: string;
  items: ContextItem[];
  redactions: Redaction[];
  payload: string;
  endpoint?: string;
  sha256?: string;
  audit_id?: string;
}

function asArray(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => typeof v === "object" && v !== null) : [];
}

function optString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function optNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** Validate the server's answer; anything missing becomes empty rather than a crash. */
export function parseContextRecord(raw: unknown): ContextRecord {
  if (typeof raw !== "object" || raw === null) {
    throw new Error("the language server sent no context record");
  }
  const r = raw as Record<string, unknown>;
  return {
    id: optString(r.id),
    kind: optString(r.kind),
    path: optString(r.path),
    status: optString(r.status),
    error: optString(r.error),
    items: asArray(r.items).map((i) => ({
      path: optString(i.path) ?? "?",
      start_line: optNumber(i.start_line),
      end_line: optNumber(i.end_line),
      symbol: optString(i.symbol),
      reason: optString(i.reason),
      score: optNumber(i.score),
      tokens: optNumber(i.tokens),
    })),
    redactions: asArray(r.redactions),
    payload: typeof r.payload === "string" ? r.payload : "",
    endpoint: optString(r.endpoint),
    sha256: optString(r.sha256),
    audit_id: optString(r.audit_id),
  };
}

/** Table cells must not break the table. */
function cell(text: string | number | undefined): string {
  if (text === undefined) return "";
  return String(text).replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

/** A fence longer than any backtick run in the text, so the payload is shown verbatim. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) {
    longest = Math.max(longest, run.length);
  }
  return "`".repeat(Math.max(3, longest + 1));
}

function lines(item: ContextItem): string {
  if (item.start_line === undefined) return "";
  return item.end_line !== undefined && item.end_line !== item.start_line
    ? `${item.start_line}-${item.end_line}`
    : `${item.start_line}`;
}

function describeRedaction(r: Redaction): string {
  const what = optString(r.rule) ?? optString(r.kind) ?? "secret";
  const where = [optString(r.path), optNumber(r.line) !== undefined ? `line ${r.line}` : undefined]
    .filter(Boolean)
    .join(", ");
  const count = optNumber(r.count);
  return `- ${what}${where ? ` (${where})` : ""}${count !== undefined && count > 1 ? ` ×${count}` : ""}`;
}

export function renderContext(record: ContextRecord): string {
  const out: string[] = [];
  out.push(`# codectx: context sent${record.id ? ` for ${record.id}` : ""}`, "");
  const facts: [string, string | undefined][] = [
    ["Request", record.kind],
    ["File", record.path],
    ["Status", record.error ? `${record.status ?? "error"}: ${record.error}` : record.status],
    ["Sent to", record.endpoint],
    ["Payload SHA-256", record.sha256],
    ["Audit entry", record.audit_id],
  ];
  for (const [name, value] of facts) {
    if (value) out.push(`- **${name}:** ${value.replace(/\r?\n/g, " ")}`);
  }
  if (!record.payload) {
    out.push("", "_Nothing was sent for this request._");
  }
  out.push("", `## Context items (${record.items.length})`, "");
  if (record.items.length === 0) {
    out.push("_No retrieved snippets: only the code around the cursor._");
  } else {
    out.push("| File | Lines | Symbol | Reason | Score | Tokens |", "| --- | --- | --- | --- | --- | --- |");
    for (const item of record.items) {
      const score = item.score === undefined ? undefined : item.score.toFixed(3);
      out.push(
        `| ${cell(item.path)} | ${cell(lines(item))} | ${cell(item.symbol)} | ${cell(item.reason)} | ${cell(score)} | ${cell(item.tokens)} |`,
      );
    }
  }
  out.push("", `## Redactions (${record.redactions.length})`, "");
  out.push(record.redactions.length === 0 ? "_None: no secrets were found in what was sent._" : record.redactions.map(describeRedaction).join("\n"));
  out.push("", `## Exact payload (${Buffer.byteLength(record.payload, "utf8")} bytes)`, "");
  const fence = fenceFor(record.payload);
  out.push(`${fence}text`, record.payload, fence, "");
  return out.join("\n");
}
