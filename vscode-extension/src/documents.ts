/**
 * Read-only virtual documents for what codectx shows the user: the context
 * sent for a request, the audit log, and a chat answer's proposed change. Virtual documents cannot be edited
 * or saved by accident, and reopening one refreshes it.
 */
import * as vscode from "vscode";

export const SCHEME = "codectx";

export class ReadOnlyDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.path) ?? "";
  }

  /** Set the content of the document named `name` without showing it; its URI. */
  put(name: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name}` });
    this.contents.set(uri.path, text);
    this.changed.fire(uri);
    return uri;
  }

  /** Show `text` as the document named `name` (e.g. "context-sent.md"), replacing its earlier content. */
  async show(name: string, text: string, language: string): Promise<vscode.TextEditor> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name}` });
    this.contents.set(uri.path, text);
    this.changed.fire(uri);
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== language) doc = await vscode.languages.setTextDocumentLanguage(doc, language);
    return vscode.window.showTextDocument(doc, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
