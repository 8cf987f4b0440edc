/**
 * Applying a code block from an answer: which file it goes to, then ask the server for the edit
 * (`codectx/chat/applyBlock`), show the diff, and apply the edit only if the user accepts and the
 * document has not changed meanwhile. The editor operations are ports, so the flow is unit-tested
 * without VS Code; chatView.ts supplies the real ones.
 */
import { type ApplyBlockParams, type CodeBlock, parseApplyResult } from "./protocol";

export interface ApplyPorts {
  request(params: ApplyBlockParams): Promise<unknown>;
  /** The document's version now (undefined: not open). */
  version(uri: string): Promise<number | undefined>;
  showDiff(uri: string, newText: string): Promise<void>;
  /** Ask the user; true to apply. */
  confirm(uri: string, warnings: string[]): Promise<boolean>;
  applyEdit(edit: unknown): Promise<boolean>;
  closeDiff(): Promise<void>;
}

export type ApplyOutcome =
  | { kind: "applied"; uri: string }
  | { kind: "discarded"; uri: string }
  | { kind: "stale"; uri: string }
  | { kind: "failed"; message: string };

/**
 * A path part that names the repository's `.git` folder on some file system, as the server's
 * `policy.is_dot_git` reads it: any letter case, trailing dots and spaces (Windows), an NTFS stream
 * (`.git::$INDEX_ALLOCATION`), code points HFS+ ignores (`.g\u200cit`), NTFS's short name (`GIT~1`).
 */
export function isGitPart(part: string): boolean {
  const bare = part.replace(/[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g, "").replace(/:.*$/, "");
  const name = (bare.replace(/[ .]+$/, "") || part).toLowerCase();
  return name === ".git" || /^git~\d+$/.test(name);
}

/**
 * Why a block is not applied at all: its fence names a file under `.git/` (or `.git` itself). Such
 * a fence is model output steering the edit at what git executes (`core.fsmonitor`, hooks), so the
 * block is refused rather than proposed for another file.
 */
export function fenceRefusal(block: Pick<CodeBlock, "path">): string | undefined {
  const path = block.path?.trim();
  if (path && path.split(/[\\/]/).some(isGitPart)) {
    return `the code block names ${path}, under .git/: codectx never applies a block there (git runs the commands its config and hooks name)`;
  }
  return undefined;
}

/**
 * The file a block goes to: the workspace file its fence names (a relative path inside a folder that
 * exists; never `..`, an absolute path or anything under `.git/`, which model output must not
 * choose), else the active file. The server refuses `.git/` and never-send files (`.env`, keys...)
 * whichever file is asked for, with a message that says why.
 */
export function targetFor(
  block: Pick<CodeBlock, "path">,
  folders: string[],
  active: string | undefined,
  exists: (uri: string) => boolean,
): string | undefined {
  const path = block.path?.trim();
  const parts = path?.split(/[\\/]/) ?? [];
  const refused = parts.some((part) => part === ".." || isGitPart(part));
  if (path && !path.startsWith("/") && !/^[a-z]+:/i.test(path) && !refused) {
    for (const folder of folders) {
      const uri = `${folder.replace(/\/+$/, "")}/${path.split(/[\\/]/).map(encodeURIComponent).join("/")}`;
      if (exists(uri)) return uri;
    }
  }
  return active;
}

export async function applyBlock(ports: ApplyPorts, params: ApplyBlockParams): Promise<ApplyOutcome> {
  const before = await ports.version(params.uri);
  let result;
  try {
    result = parseApplyResult(await ports.request(params));
  } catch (err) {
    return { kind: "failed", message: err instanceof Error ? err.message : String(err) };
  }
  await ports.showDiff(params.uri, result.newText);
  try {
    const accepted = await ports.confirm(params.uri, result.warnings);
    if (!accepted) return { kind: "discarded", uri: params.uri };
    // The edit was computed from the text the server had: a document edited since would be clobbered.
    if ((await ports.version(params.uri)) !== before) return { kind: "stale", uri: params.uri };
    if (!(await ports.applyEdit(result.edit))) return { kind: "failed", message: "VS Code could not apply the edit" };
    return { kind: "applied", uri: params.uri };
  } finally {
    await ports.closeDiff();
  }
}
