/**
 * The I/O side of finding the server (serverLocation.ts has the order): the
 * Python extension's selected interpreter, through its public `environments`
 * API when `ms-python.python` is installed (an optional dependency), and the
 * small programs that check an interpreter or PATH for codectx.
 */
import { execFile } from "node:child_process";

import * as vscode from "vscode";

import { INTERPRETER_CHECK, type LocateProbes } from "./serverLocation";

const PYTHON_EXTENSION = "ms-python.python";
const CHECK_TIMEOUT_MS = 20_000;

/** The part of the Python extension's API used here (see @vscode/python-extension). */
interface EnvironmentPath {
  id: string;
  path: string;
}
interface PythonEnvironments {
  getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
  resolveEnvironment(env: EnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

async function environments(): Promise<PythonEnvironments | undefined> {
  const extension = vscode.extensions.getExtension<{ environments?: PythonEnvironments }>(PYTHON_EXTENSION);
  if (!extension) return undefined;
  const api = extension.isActive ? extension.exports : await extension.activate();
  return api?.environments;
}

function succeeds(command: string, args: string[], expect?: RegExp): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: CHECK_TIMEOUT_MS, windowsHide: true }, (err, stdout) => {
      resolve(!err && (expect === undefined || expect.test(String(stdout))));
    });
  });
}

export function locateProbes(log: vscode.LogOutputChannel): LocateProbes {
  return {
    async pythonInterpreter() {
      const envs = await environments();
      if (!envs) return undefined;
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const active = envs.getActiveEnvironmentPath(resource);
      const resolved = await envs.resolveEnvironment(active);
      const python = resolved?.executable.uri?.fsPath ?? active.path;
      log.info(`Python extension's selected interpreter: ${python}`);
      return python || undefined;
    },
    interpreterHasCodectx: (python) => succeeds(python, INTERPRETER_CHECK),
    codectxOnPath: () => succeeds("codectx", ["--version"], /^codectx /),
  };
}

/** Fires when the user selects another interpreter in the Python extension. */
export async function onInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const envs = await environments().catch(() => undefined);
  return envs?.onDidChangeActiveEnvironmentPath(() => listener());
}

export function pythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}
