/**
 * Arguments for the server's workspace commands and the shapes of their
 * answers, checked and converted here so the command handlers stay thin.
 * Pure: LSP JSON in, plain data out.
 */

export interface LspPosition {
  line: number;
  character: number;
}

export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

export interface LspLocation {
  uri: string;
  range: LspRange;
}

export interface SearchHit {
  location: LspLocation;
  label: string;
  description: string;
  detail?: string;
}

export const MAX_QUERY_CHARS = 500;
export const MAX_INSTRUCTION_CHARS = 2000;

/** Arguments of `codectx.search`, or undefined when there is nothing worth asking. */
export function searchArgs(query: string, k = 20): { query: string; k: number } | undefined {
  const q = query.trim();
  if (q.length < 2) return undefined;
  return { query: q.slice(0, MAX_QUERY_CHARS), k };
}

/** Why an instruction cannot be used, or undefined if it can (for the input box's validation). */
export function validateInstruction(text: string): string | undefined {
  const t = text.trim();
  if (t === "") return "Say what to change, e.g. \"extract the loop body into a function\".";
  if (t.length > MAX_INSTRUCTION_CHARS) return `Keep the instruction under ${MAX_INSTRUCTION_CHARS} characters.`;
  return undefined;
}

export function refactorArgs(
  uri: string,
  range: LspRange,
  instruction: string,
): { uri: string; range: LspRange; instruction: string } {
  const problem = validateInstruction(instruction);
  if (problem) throw new Error(problem);
  return { uri, range, instruction: instruction.trim() };
}

function isPosition(v: unknown): v is LspPosition {
  const p = v as LspPosition;
  return typeof v === "object" && v !== null && Number.isInteger(p.line) && Number.isInteger(p.character);
}

function isRange(v: unknown): v is LspRange {
  const r = v as LspRange;
  return typeof v === "object" && v !== null && isPosition(r.start) && isPosition(r.end);
}

/** A Location, or a LocationLink, or a search hit carrying one. */
function toLocation(v: Record<string, unknown>): LspLocation | undefined {
  if (typeof v.uri === "string" && isRange(v.range)) return { uri: v.uri, range: v.range };
  if (typeof v.targetUri === "string" && isRange(v.targetSelectionRange ?? v.targetRange)) {
    return { uri: v.targetUri, range: (v.targetSelectionRange ?? v.targetRange) as LspRange };
  }
  if (typeof v.location === "object" && v.location !== null) return toLocation(v.location as Record<string, unknown>);
  // A `codectx/search` result: zero-based start_line/end_line of a whole-line chunk.
  if (typeof v.uri === "string" && Number.isInteger(v.start_line)) {
    const start = v.start_line as number;
    const end = Number.isInteger(v.end_line) ? Math.max(start, v.end_line as number) : start;
    return { uri: v.uri, range: { start: { line: start, character: 0 }, end: { line: end + 1, character: 0 } } };
  }
  return undefined;
}

/** The path of `uri` relative to the first workspace folder that holds it. */
export function relativePath(uri: string, folders: readonly string[]): string {
  for (const folder of folders) {
    const base = folder.endsWith("/") ? folder : `${folder}/`;
    if (uri.startsWith(base)) return decodeURIComponent(uri.slice(base.length));
  }
  return decodeURIComponent(uri.replace(/^file:\/\//, ""));
}

function firstCodeLine(text: unknown): string | undefined {
  if (typeof text !== "string") return undefined;
  return text.split("\n").map((l) => l.trim()).find((l) => l !== "" && !l.startsWith("@"));
}

/** The `codectx.search` answer (a list of locations, or {results|items|locations: [...]}) as quick-pick rows. */
export function parseSearchResults(raw: unknown, folders: readonly string[]): SearchHit[] {
  let list: unknown = raw;
  if (raw && typeof raw === "object" && !Array.isArray(raw)) {
    const r = raw as Record<string, unknown>;
    list = r.results ?? r.items ?? r.locations ?? [];
  }
  if (!Array.isArray(list)) return [];
  const hits: SearchHit[] = [];
  for (const entry of list) {
    if (typeof entry !== "object" || entry === null) continue;
    const e = entry as Record<string, unknown>;
    const location = toLocation(e);
    if (!location) continue;
    const rel = relativePath(location.uri, folders);
    const symbol = typeof e.symbol === "string" && e.symbol ? e.symbol : typeof e.name === "string" ? e.name : "";
    const line = location.range.start.line + 1;
    const score = typeof e.score === "number" && Number.isFinite(e.score) ? e.score.toFixed(3) : undefined;
    hits.push({
      location,
      label: symbol || `${rel}:${line}`,
      description: symbol ? `${rel}:${line}` : "",
      detail: [firstCodeLine(e.snippet ?? e.text), score && `score ${score}`]
        .filter(Boolean)
        .join("  ·  ") || undefined,
    });
  }
  return hits;
}

export type RefactorOutcome =
  | { kind: "edit"; edit: Record<string, unknown>; files: number }
  | { kind: "refused"; message: string };

/** The `codectx.refactor` answer: a WorkspaceEdit, or a refusal message ({error}/{message}/string). */
export function interpretRefactorResult(raw: unknown): RefactorOutcome {
  if (raw === null || raw === undefined) return { kind: "refused", message: "the server proposed no change" };
  if (typeof raw === "string") return { kind: "refused", message: raw };
  if (typeof raw !== "object") return { kind: "refused", message: "the server sent an answer codectx does not understand" };
  const r = raw as Record<string, unknown>;
  const edit = (typeof r.edit === "object" && r.edit !== null ? r.edit : r) as Record<string, unknown>;
  const changes = edit.changes && typeof edit.changes === "object" ? Object.keys(edit.changes) : [];
  const docChanges = Array.isArray(edit.documentChanges) ? edit.documentChanges : [];
  if (changes.length > 0 || docChanges.length > 0) {
    const files = new Set([
      ...changes,
      ...docChanges.map((c) => (c as { textDocument?: { uri?: string } }).textDocument?.uri ?? JSON.stringify(c)),
    ]);
    return { kind: "edit", edit, files: files.size };
  }
  const message = [r.error, r.message, r.reason].find((m): m is string => typeof m === "string" && m !== "");
  return { kind: "refused", message: message ?? "the server proposed no change" };
}

/** A JSON-RPC error's message, without the noise vscode-jsonrpc adds. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message.replace(/^Request \S+ failed with message: /, "");
  if (typeof err === "object" && err !== null && typeof (err as { message?: unknown }).message === "string") {
    return (err as { message: string }).message;
  }
  return String(err);
}
