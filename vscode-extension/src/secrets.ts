/**
 * The model server's API key, kept in VS Code's SecretStorage (the OS
 * keychain), never in settings.json. The language server gets it through its
 * environment when it starts.
 */
import * as vscode from "vscode";

const SECRET_KEY = "codectx.backend.apiKey";

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  get(): Promise<string | undefined> {
    return Promise.resolve(this.secrets.get(SECRET_KEY));
  }

  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((e) => {
      if (e.key === SECRET_KEY) listener();
    });
  }

  /** Ask for the key; true when one was stored. */
  async prompt(): Promise<boolean> {
    const value = await vscode.window.showInputBox({
      title: "codectx: API key for the model server",
      prompt: "Stored in VS Code's secret storage, never in settings.json. Leave empty to cancel.",
      password: true,
      ignoreFocusOut: true,
      validateInput: (v) => (/\s/.test(v.trim()) ? "An API key has no spaces." : undefined),
    });
    if (!value?.trim()) return false;
    await this.secrets.store(SECRET_KEY, value.trim());
    return true;
  }

  async clear(): Promise<void> {
    await this.secrets.delete(SECRET_KEY);
  }
}
