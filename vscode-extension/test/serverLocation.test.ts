import { describe, expect, it } from "vitest";

import { cliOf, isNotFound, type LocateProbes, locateServer } from "../src/serverLocation";
import { DEFAULTS } from "../src/settings";

function probes(over: Partial<LocateProbes> & { calls?: string[] } = {}): LocateProbes & { calls: string[] } {
  const calls = over.calls ?? [];
  return {
    calls,
    pythonInterpreter: over.pythonInterpreter ?? (() => (calls.push("python"), Promise.resolve(undefined))),
    interpreterHasCodectx: over.interpreterHasCodectx ?? ((p) => (calls.push(`has:${p}`), Promise.resolve(false))),
    codectxOnPath: over.codectxOnPath ?? (() => (calls.push("path"), Promise.resolve(false))),
  };
}

describe("locateServer", () => {
  it("uses a configured command as is, without running anything", async () => {
    const p = probes();
    const found = await locateServer({ ...DEFAULTS, serverCommand: ["/x/codectx", "lsp"], serverInterpreter: "/py" }, p);
    expect(found).toMatchObject({ command: "/x/codectx", args: ["lsp"], source: "command" });
    expect(p.calls).toEqual([]);
  });

  it("uses a configured interpreter before the Python extension's", async () => {
    const p = probes({ pythonInterpreter: () => Promise.resolve("/ext/python") });
    const found = await locateServer({ ...DEFAULTS, serverInterpreter: "/opt/py/bin/python" }, p);
    expect(found).toMatchObject({ command: "/opt/py/bin/python", args: ["-m", "codectx", "lsp"], source: "interpreter" });
  });

  it("takes the Python extension's interpreter when codectx is installed there", async () => {
    const p = probes({
      pythonInterpreter: () => Promise.resolve("/proj/.venv/bin/python"),
      interpreterHasCodectx: (py) => Promise.resolve(py === "/proj/.venv/bin/python"),
    });
    const found = await locateServer(DEFAULTS, p);
    expect(found).toMatchObject({ command: "/proj/.venv/bin/python", args: ["-m", "codectx", "lsp"], source: "python-extension" });
  });

  it("falls back to PATH when the selected interpreter lacks codectx", async () => {
    const p = probes({ pythonInterpreter: () => Promise.resolve("/usr/bin/python3"), codectxOnPath: () => Promise.resolve(true) });
    const found = await locateServer(DEFAULTS, p);
    expect(found).toMatchObject({ command: "codectx", args: ["lsp"], source: "path" });
  });

  it("says what it tried and how to install when nothing has codectx", async () => {
    const found = await locateServer(DEFAULTS, probes({ pythonInterpreter: () => Promise.resolve("/usr/bin/python3") }));
    expect(isNotFound(found)).toBe(true);
    if (!isNotFound(found)) return;
    expect(found.tried).toEqual(["the Python extension's interpreter /usr/bin/python3 (no codectx there)", "`codectx` on PATH (not found)"]);
    expect(found.message).toContain("pipx install ./codectx");
    expect(found.message).toContain("codectx.server.interpreter");
  });

  it("treats a missing Python extension, or one that throws, as no interpreter", async () => {
    const found = await locateServer(DEFAULTS, probes({ pythonInterpreter: () => Promise.reject(new Error("activation failed")) }));
    expect(isNotFound(found) && found.tried[0]).toBe("the Python extension (not installed, or no interpreter selected)");
  });
});

describe("cliOf", () => {
  it("drops the lsp argument and what follows it", () => {
    expect(cliOf({ command: "codectx", args: ["lsp"], display: "" })).toEqual({ command: "codectx", args: [] });
    expect(cliOf({ command: "/py", args: ["-m", "codectx", "lsp"], display: "" })).toEqual({ command: "/py", args: ["-m", "codectx"] });
    expect(cliOf({ command: "/x/codectx", args: ["lsp", "--stdio"], display: "" })).toEqual({ command: "/x/codectx", args: [] });
  });
});
