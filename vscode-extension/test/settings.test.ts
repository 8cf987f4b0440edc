import { describe, expect, it } from "vitest";

import {
  DEFAULTS,
  type Inspected,
  type Inspect,
  needsRestart,
  readSettings,
  resolveServerCommand,
  toFolderSettings,
  toServerSettings,
} from "../src/settings";

/** An Inspect over explicit layers, like WorkspaceConfiguration.inspect. */
function layers(values: Record<string, Inspected<unknown>>): Inspect {
  return <T>(key: string) => values[key] as Inspected<T> | undefined;
}

describe("readSettings", () => {
  it("uses defaults when nothing is set", () => {
    expect(readSettings(layers({}))).toEqual(DEFAULTS);
  });

  it("ignores workspace values of privacy-weakening and command keys", () => {
    const s = readSettings(
      layers({
        "backend.url": { defaultValue: "", workspaceValue: "http://evil.example/v1", workspaceFolderValue: "http://evil2" },
        "privacy.neverSend": { defaultValue: [], globalValue: ["secrets/**"], workspaceValue: [] },
        "privacy.redact": { defaultValue: true, workspaceValue: false },
        "server.command": { defaultValue: [], workspaceValue: ["/tmp/evil", "lsp"] },
        "server.interpreter": { defaultValue: "", workspaceFolderValue: "/tmp/python" },
      }),
    );
    expect(s.backendUrl).toBe("");
    expect(s.neverSend).toEqual(["secrets/**"]);
    expect(s.redact).toBe(true);
    expect(s.serverCommand).toEqual([]);
    expect(s.serverInterpreter).toBe("");
  });

  it("takes user values of privacy keys", () => {
    const s = readSettings(
      layers({
        "backend.url": { defaultValue: "", globalValue: " http://127.0.0.1:8000/v1 " },
        "privacy.redact": { defaultValue: true, globalValue: false },
      }),
    );
    expect(s.backendUrl).toBe("http://127.0.0.1:8000/v1");
    expect(s.redact).toBe(false);
  });

  it("takes the served model from user settings only (a gateway routes by it)", () => {
    const s = readSettings(
      layers({
        "backend.model": { defaultValue: "", globalValue: "a", workspaceValue: "b", workspaceFolderValue: "c" },
      }),
    );
    expect(s.backendModel).toBe("a");
  });

  it("lets the most specific level win for ordinary keys", () => {
    const s = readSettings(
      layers({
        "completion.enabled": { defaultValue: true, globalValue: true, workspaceValue: false },
        "completion.debounceMs": { defaultValue: 75, globalValue: 200 },
      }),
    );
    expect(s.completionEnabled).toBe(false);
    expect(s.debounceMs).toBe(200);
  });

  it("clamps and repairs bad values instead of failing", () => {
    const s = readSettings(
      layers({
        "completion.debounceMs": { globalValue: -5 },
        "privacy.neverSend": { globalValue: ["ok/**", 3, "", "  "] as unknown[] },
        "trace.server": { globalValue: "loud" },
      }),
    );
    expect(s.debounceMs).toBe(0);
    expect(s.neverSend).toEqual(["ok/**"]);
    expect(s.trace).toBe("off");
    expect(readSettings(layers({ "completion.debounceMs": { globalValue: 99999 } })).debounceMs).toBe(5000);
    expect(readSettings(layers({ "completion.debounceMs": { globalValue: Number.NaN } })).debounceMs).toBe(75);
  });

  it("takes the protocol trace from user settings only: it copies documents into VS Code's logs", () => {
    expect(readSettings(layers({ "trace.server": { workspaceValue: "verbose" } })).trace).toBe("off");
    expect(readSettings(layers({ "trace.server": { workspaceFolderValue: "messages" } })).trace).toBe("off");
    expect(readSettings(layers({ "trace.server": { globalValue: "verbose", workspaceValue: "off" } })).trace).toBe("verbose");
  });

  it("reads the health-check interval, 0 meaning off, clamped to a day", () => {
    expect(readSettings(layers({})).healthIntervalSec).toBe(60);
    expect(readSettings(layers({ "health.intervalSeconds": { globalValue: 0 } })).healthIntervalSec).toBe(0);
    expect(readSettings(layers({ "health.intervalSeconds": { workspaceValue: 15.4 } })).healthIntervalSec).toBe(15);
    expect(readSettings(layers({ "health.intervalSeconds": { globalValue: -3 } })).healthIntervalSec).toBe(0);
    expect(readSettings(layers({ "health.intervalSeconds": { globalValue: 1e9 } })).healthIntervalSec).toBe(86_400);
    expect(readSettings(layers({ "health.intervalSeconds": { globalValue: "often" } })).healthIntervalSec).toBe(60);
  });
});

describe("toServerSettings", () => {
  it("mirrors the server's sections and leaves unset values out", () => {
    expect(toServerSettings(DEFAULTS)).toEqual({ codectx: { lsp: { completion: true, debounce_ms: 0 } } });
  });

  it("maps every extension setting onto its server key", () => {
    const out = toServerSettings(
      { ...DEFAULTS, backendUrl: "http://h/v1", backendModel: "m", neverSend: ["*.pem"], redact: false, completionEnabled: false },
      "k3y",
    );
    expect(out).toEqual({
      codectx: {
        lsp: { completion: false, debounce_ms: 0 },
        backend: { url: "http://h/v1", model: "m", api_key: "k3y" },
        privacy: { never_send: ["*.pem"], redact: false },
      },
    });
  });
});

describe("toFolderSettings", () => {
  it("only passes folder-level values a workspace may set", () => {
    const out = toFolderSettings(
      layers({
        "backend.model": { globalValue: "user-model", workspaceFolderValue: "folder-model" },
        "completion.enabled": { globalValue: true, workspaceValue: false },
        "backend.url": { workspaceValue: "http://evil" },
      }),
    );
    expect(out).toEqual({ codectx: { lsp: { completion: false } } });
  });

  it("is empty when nothing is set at folder level", () => {
    expect(toFolderSettings(layers({ "backend.model": { globalValue: "x" } }))).toEqual({ codectx: {} });
  });
});

describe("server command", () => {
  it("defaults to codectx lsp on PATH", () => {
    expect(resolveServerCommand(DEFAULTS)).toEqual({ command: "codectx", args: ["lsp"], display: "codectx lsp" });
  });

  it("prefers a configured command, then an interpreter", () => {
    const interp = { ...DEFAULTS, serverInterpreter: "/opt/py/bin/python" };
    expect(resolveServerCommand(interp)).toMatchObject({ command: "/opt/py/bin/python", args: ["-m", "codectx", "lsp"] });
    const cmd = { ...interp, serverCommand: ["/x/codectx", "lsp", "--log-level", "DEBUG"] };
    expect(resolveServerCommand(cmd)).toMatchObject({ command: "/x/codectx", args: ["lsp", "--log-level", "DEBUG"] });
  });

  it("restarts only for changes the running server cannot take", () => {
    expect(needsRestart(DEFAULTS, { ...DEFAULTS, backendUrl: "http://h" })).toBe(false);
    expect(needsRestart(DEFAULTS, { ...DEFAULTS, completionEnabled: false })).toBe(false);
    expect(needsRestart(DEFAULTS, { ...DEFAULTS, serverCommand: ["/x", "lsp"] })).toBe(true);
    expect(needsRestart(DEFAULTS, { ...DEFAULTS, serverInterpreter: "/py" })).toBe(true);
    // The trace channel follows codectx.trace.server by itself; no restart needed.
    expect(needsRestart(DEFAULTS, { ...DEFAULTS, trace: "verbose" })).toBe(false);
  });
});
