/**
 * Client-side control of AI suggestions: the pause toggle, the debounce before
 * each inline-completion request, and keeping VS Code's suggest widget free of
 * the server's AI items (it serves them through textDocument/completion for
 * editors without ghost text; here they would double every model call).
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

export interface CompletionControl {
  enabled(): boolean;
  paused(): boolean;
  debounceMs(): number;
  /** A request went through to the server: how many suggestions it gave. */
  answered(count: number): void;
}

function countItems(result: unknown): number {
  if (Array.isArray(result)) return result.length;
  const items = (result as { items?: unknown[] } | null | undefined)?.items;
  return Array.isArray(items) ? items.length : 0;
}

export function completionMiddleware(control: CompletionControl): Middleware {
  return {
    provideInlineCompletionItems: async (document, position, context, token, next) => {
      if (!control.enabled() || control.paused()) return null;
      if (!(await debounce(control.debounceMs(), token))) return null;
      const result = await next(document, position, context, token);
      if (!token.isCancellationRequested) control.answered(countItems(result));
      return result;
    },
    provideCompletionItem: (): vscode.ProviderResult<vscode.CompletionItem[]> => null,
  };
}
