/**
 * Client-side control of AI suggestions: the pause toggle, the debounce before
 * each inline-completion request, anchoring suggestions on blank indented
 * lines, and keeping VS Code's suggest widget free of the server's AI items (it
 * serves them through textDocument/completion for editors without ghost text;
 * here they would double every model call).
 */
import type * as vscode from "vscode";
import type { Middleware } from "vscode-languageclient/node";

export interface CancellationLike {
  isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

/** Resolve true after `ms`, or false as soon as the token is cancelled. */
export function debounce(ms: number, token: CancellationLike): Promise<boolean> {
  if (token.isCancellationRequested) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const subscription = token.onCancellationRequested(() => {
      clearTimeout(timer);
      subscription.dispose();
      resolve(false);
    });
    const timer = setTimeout(() => {
      subscription.dispose();
      resolve(true);
    }, ms);
  });
}

/** The parts of vscode.Position / vscode.Range the anchoring needs (so it runs without VS Code). */
interface PositionLike {
  line: number;
  character: number;
  isEqual(other: PositionLike): boolean;
  with(line?: number, character?: number): PositionLike;
}

interface RangeLike {
  start: PositionLike;
  isEmpty: boolean;
  with(start?: PositionLike): RangeLike;
}

export interface InlineItemLike {
  insertText: unknown;
  range?: RangeLike;
}

/**
 * On a line holding only indentation, VS Code inserts that indentation itself
 * and removes it again when an edit is applied elsewhere on the line
 * (editor.trimAutoWhitespace), so an accepted suggestion would land at column 0.
 * Anchoring the item at the line start with the indentation included keeps it.
 */
export function anchorAtLineStart(item: InlineItemLike, position: PositionLike, linePrefix: string): void {
  if (typeof item.insertText !== "string" || !item.range) return;
  if (!item.range.isEmpty || !item.range.start.isEqual(position)) return;
  if (linePrefix === "" || linePrefix.trim() !== "") return;
  item.insertText = linePrefix + item.insertText;
  item.range = item.range.with(position.with(undefined, 0));
}

export interface CompletionControl {
  enabled(): boolean;
  paused(): boolean;
  debounceMs(): number;
  /** A request went through to the server: how many suggestions it gave, and where (for the log). */
  answered(count: number, where: string): void;
}

export function completionMiddleware(control: CompletionControl): Middleware {
  return {
    provideInlineCompletionItems: async (document, position, context, token, next) => {
      if (!control.enabled() || control.paused()) return null;
      if (!(await debounce(control.debounceMs(), token))) return null;
      const result = await next(document, position, context, token);
      if (token.isCancellationRequested) return result;
      const items = Array.isArray(result) ? result : (result?.items ?? []);
      const prefix = document.lineAt(position.line).text.slice(0, position.character);
      const where: string[] = [];
      for (const item of items) {
        anchorAtLineStart(item, position, prefix);
        const r = item.range;
        where.push(r ? `${r.start.line + 1}:${r.start.character + 1}-${r.end.line + 1}:${r.end.character + 1}` : "cursor");
      }
      control.answered(items.length, `cursor ${position.line + 1}:${position.character + 1}, item ranges ${where.join(" ") || "none"}`);
      return result;
    },
    provideCompletionItem: (): vscode.ProviderResult<vscode.CompletionItem[]> => null,
  };
}
