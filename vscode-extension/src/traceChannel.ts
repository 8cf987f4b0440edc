/**
 * The output channel that shows the language-server protocol trace when
 * `codectx.trace.server` is "messages" or "verbose".
 *
 * vscode-languageclient writes its trace with `LogOutputChannel.trace()` and
 * only turns tracing on while that channel's log level is Trace. A log channel
 * starts at Info (only "Developer: Set Log Level..." changes it), so the
 * setting alone showed nothing. This channel reports its level from the
 * setting instead, and writes every line to a plain output channel, which has
 * no level filter. Pure (VS Code's channel comes from the factory), so it can
 * be tested.
 */
import type * as vscode from "vscode";

/** vscode.LogLevel's values (a stable part of the API), so this module need not import `vscode` at run time. */
export const LOG_LEVEL = { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 } as const;

export type TraceSetting = "off" | "messages" | "verbose";

/** The plain channel's part that this one uses. */
export interface PlainChannel {
  append(value: string): void;
  appendLine(value: string): void;
  replace(value: string): void;
  clear(): void;
  show(preserveFocus?: boolean): void;
  hide(): void;
  dispose(): void;
}

/** The log level the client should see: Trace while tracing is wanted, else Off (it then traces nothing). */
export function traceLogLevel(setting: TraceSetting): vscode.LogLevel {
  return setting === "off" ? LOG_LEVEL.Off : LOG_LEVEL.Trace;
}

type Listener = (level: vscode.LogLevel) => unknown;

export class TraceChannel implements vscode.LogOutputChannel {
  readonly name: string;
  private plain: PlainChannel | undefined;
  private setting: TraceSetting;
  private readonly listeners = new Set<Listener>();

  /** `create` makes the plain channel; it is called on the first line, so no empty channel appears while tracing is off. */
  constructor(
    name: string,
    setting: TraceSetting,
    private readonly create: (name: string) => PlainChannel,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.name = name;
    this.setting = setting;
  }

  get logLevel(): vscode.LogLevel {
    return traceLogLevel(this.setting);
  }

  /** Follow a changed setting; the client re-reads the level and turns its tracing on or off. */
  setSetting(setting: TraceSetting): void {
    const before = this.logLevel;
    this.setting = setting;
    const after = this.logLevel;
    if (after !== before) for (const listener of [...this.listeners]) listener(after);
  }

  readonly onDidChangeLogLevel: vscode.Event<vscode.LogLevel> = (listener, thisArgs?: unknown, disposables?: vscode.Disposable[]) => {
    const bound: Listener = (level) => listener.call(thisArgs, level);
    this.listeners.add(bound);
    const subscription = { dispose: () => void this.listeners.delete(bound) };
    disposables?.push(subscription);
    return subscription;
  };

  private channel(): PlainChannel {
    return (this.plain ??= this.create(this.name));
  }

  private line(level: string, message: string, args: unknown[]): void {
    if (this.setting === "off") return;
    const extra = args.length > 0 ? ` ${args.map((a) => (a instanceof Error ? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}` : "";
    this.channel().appendLine(`${this.now().toISOString()} [${level}] ${message}${extra}`);
  }

  trace(message: string, ...args: unknown[]): void {
    this.line("trace", message, args);
  }

  debug(message: string, ...args: unknown[]): void {
    this.line("debug", message, args);
  }

  info(message: string, ...args: unknown[]): void {
    this.line("info", message, args);
  }

  warn(message: string, ...args: unknown[]): void {
    this.line("warning", message, args);
  }

  error(error: string | Error, ...args: unknown[]): void {
    this.line("error", error instanceof Error ? error.message : error, args);
  }

  append(value: string): void {
    this.channel().append(value);
  }

  appendLine(value: string): void {
    this.channel().appendLine(value);
  }

  replace(value: string): void {
    this.channel().replace(value);
  }

  clear(): void {
    this.plain?.clear();
  }

  show(columnOrPreserveFocus?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
    this.channel().show(typeof columnOrPreserveFocus === "boolean" ? columnOrPreserveFocus : preserveFocus);
  }

  hide(): void {
    this.plain?.hide();
  }

  dispose(): void {
    this.listeners.clear();
    this.plain?.dispose();
    this.plain = undefined;
  }
}
