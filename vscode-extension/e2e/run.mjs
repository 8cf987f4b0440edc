// End-to-end test in a real VS Code: code-server 4.139.1 driven through headless Chromium.
// Installs the built .vsix into a fresh profile, opens a fixture workspace and checks, through
// the UI and the logs, that the extension activates and starts the real `codectx lsp`, that
// indexing progress shows in the status bar, that the backend health probe names the model the
// loopback server lists on /v1/models, that "Search Codebase" finds a fixture function and opens
// it at its line, that "Reindex Workspace" runs an indexing pass, that an inline suggestion
// appears and Tab accepts it, that "Refactor Selection..." changes the file in one undo step,
// that "Show Context Sent" shows what was sent, that "Show Audit Log" lists it, that
// codectx.trace.server = verbose fills the trace channel, and, with the backend stopped, that
// "Check Backend" turns the status bar into an offline warning. Prints one JSON line of results;
// exit 0 only if every check passed. Screenshots and logs land in the artifacts folder on failure.
//
// Usage: node e2e/run.mjs --vsix FILE --codectx CMD --code-server BIN [--work DIR] [--artifacts DIR]
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

import { COMPLETION, MODEL, startBackend } from "./backend.mjs";
import * as ui from "./harness.mjs";
import { BROWSER_ARGS, findFiles, readAll, startCodeServer, waitFor } from "./harness.mjs";

const SEARCH_FOR = 17; // the generated pkg/module_17.py defines helper_17

const HERE = dirname(fileURLToPath(import.meta.url));
const EXT_DIR = resolve(HERE, "..");
const REPO = resolve(EXT_DIR, "..");

const { values: opts } = parseArgs({
  options: {
    vsix: { type: "string", default: join(EXT_DIR, "codectx.vsix") },
    codectx: { type: "string", default: join(REPO, ".venv", "bin", "codectx") },
    "code-server": { type: "string", default: join(REPO, ".tools", "code-server", "node_modules", ".bin", "code-server") },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    work: { type: "string" },
    artifacts: { type: "string", default: join(REPO, "test-artifacts", "vscode-e2e") },
    keep: { type: "boolean", default: false },
  },
});

const T0 = Date.now();
const CHECKS = 14;
const say = (msg) => process.stderr.write(`[e2e ${((Date.now() - T0) / 1000).toFixed(1)}s] ${msg}\n`);
const results = [];
let page;

async function check(name, fn) {
  const started = Date.now();
  try {
    const detail = await fn();
    results.push({ name, ok: true, seconds: (Date.now() - started) / 1000, detail: detail ?? "" });
    say(`ok   ${name}${detail ? `: ${detail}` : ""}`);
    return true;
  } catch (err) {
    results.push({ name, ok: false, seconds: (Date.now() - started) / 1000, detail: String(err?.message ?? err) });
    say(`FAIL ${name}: ${err?.stack ?? err}`);
    if (page) {
      mkdirSync(opts.artifacts, { recursive: true });
      await page.screenshot({ path: join(opts.artifacts, `${name.replace(/\W+/g, "-")}.png`) }).catch(() => undefined);
    }
    return false;
  }
}

async function statusText() {
  return page.locator(".statusbar-item").filter({ hasText: "codectx" }).first().innerText({ timeout: 2000 });
}

const runCommand = (title) => ui.runCommand(page, title);
const openFromExplorer = (name) => ui.openFromExplorer(page, name);
const focusEditor = () => ui.focusEditor(page);
const editorText = () => ui.editorText(page);

async function main() {
  for (const [what, path] of [["vsix", opts.vsix], ["codectx", opts.codectx], ["code-server", opts["code-server"]], ["chromium", opts.chromium]]) {
    if (!existsSync(path)) throw new Error(`${what} not found at ${path}`);
  }
  const work = opts.work ?? mkdtempSync(join(tmpdir(), "codectx-e2e-"));
  const ws = join(work, "workspace");
  const userData = join(work, "user-data");
  const extensions = join(work, "extensions");
  const xdg = join(work, "xdg");
  rmSync(ws, { recursive: true, force: true });
  cpSync(join(HERE, "fixture"), ws, { recursive: true });
  // Enough modules that indexing takes a moment and its progress is visible.
  mkdirSync(join(ws, "pkg"));
  for (let i = 0; i < 40; i++) {
    writeFileSync(
      join(ws, "pkg", `module_${String(i).padStart(2, "0")}.py`),
      `"""Generated module ${i}."""\n\n\ndef helper_${i}(value):\n    """Return value plus ${i}."""\n    return value + ${i}\n\n\nclass Thing${i}:\n    def size(self):\n        return ${i}\n`,
    );
  }
  const backend = await startBackend();
  say(`backend at ${backend.url}; work dir ${work}`);
  const settings = {
    "editor.quickSuggestions": { other: false, comments: false, strings: false },
    "editor.suggestOnTriggerCharacters": false,
    "editor.wordBasedSuggestions": "off",
    "editor.autoClosingBrackets": "never",
    "editor.autoClosingQuotes": "never",
    // Auto-indent depends on when the Python language configuration loads; type the indentation instead.
    "editor.autoIndent": "none",
    "editor.inlineSuggest.enabled": true,
    "files.autoSave": "off",
    // Opening a search hit in pkg/ must not expand pkg/ in the Explorer and push the fixture files out of view.
    "explorer.autoReveal": false,
    "codectx.server.command": [opts.codectx, "lsp", "--log-level", "INFO"],
    "codectx.backend.url": backend.url,
    // No codectx.backend.model: the name in the status bar must come from the backend's /v1/models.
    // Probe often, so the run also sees the timer at work (the default is 60 s).
    "codectx.health.intervalSeconds": 10,
    "codectx.completion.debounceMs": 50,
    "codectx.trace.server": "verbose",
    "[markdown]": { "editor.wordWrap": "off" },
  };
  // The default embedder: the bundled int8 ONNX model, no torch and no export on first use.
  mkdirSync(join(xdg, "config", "codectx"), { recursive: true });
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(xdg, "config"),
    XDG_DATA_HOME: join(xdg, "data"),
    XDG_STATE_HOME: join(xdg, "state"),
    XDG_CACHE_HOME: join(xdg, "cache"),
    HF_HUB_OFFLINE: "1",
    TRANSFORMERS_OFFLINE: "1",
    TOKENIZERS_PARALLELISM: "false",
    CODECTX_API_KEY: "",
  };
  say("installing the extension and starting code-server");
  const server = await startCodeServer({ codeServer: opts["code-server"], vsix: opts.vsix, userData, extensions, workspace: ws, settings, env });
  const port = server.port;
  const browser = await chromium.launch({
    executablePath: opts.chromium,
    args: BROWSER_ARGS,
  });
  const logsDir = join(userData, "logs");
  const extLogs = () => readAll(findFiles(logsDir, (p) => /codectx/i.test(p) && p.endsWith(".log")));
  try {
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    // Catch the indexing text even if it only shows briefly: record every status-bar text from the start.
    await page.addInitScript(() => {
      window.__codectxStatus = [];
      new MutationObserver(() => {
        for (const el of document.querySelectorAll(".statusbar-item")) {
          const t = el.textContent ?? "";
          if (t.includes("codectx") && window.__codectxStatus.at(-1) !== t) window.__codectxStatus.push(t);
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    page.setDefaultTimeout(60_000);
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`, { timeout: 180_000 });
    await page.locator(".monaco-workbench").waitFor({ timeout: 120_000 });

    await check("extension activates and starts the server", async () => {
      await waitFor("the codectx status-bar item", () => statusText(), 60_000);
      const exthost = await waitFor(
        "activation in the extension host log",
        () => {
          const log = readAll(findFiles(logsDir, (p) => /exthost/.test(p) && p.endsWith(".log")));
          return /codectx\.codectx/.test(log) && log;
        },
        60_000,
      );
      const own = await waitFor("'language server running' in the codectx output log", () => /language server running/.test(extLogs()) && extLogs(), 90_000);
      if (!/activated/.test(own)) throw new Error("no activation line in the codectx output log");
      return `exthost log mentions codectx.codectx (${exthost.length} bytes); server running`;
    });

    await check("indexing progress shows in the status bar", async () => {
      const seen = await waitFor(
        "an 'indexing' status text",
        async () => (await page.evaluate(() => window.__codectxStatus)).find((t) => /indexing/.test(t)),
        120_000,
      );
      await waitFor("indexing to finish", async () => !/indexing/.test(await statusText()), 180_000, 500);
      return `saw "${seen.trim()}"`;
    });

    await check("the backend health probe names the model from /v1/models", async () => {
      const text = await waitFor(`"${MODEL}" in the status bar`, async () => {
        const t = await statusText();
        return t.includes(MODEL) && t;
      }, 60_000, 500);
      if (backend.gets.length === 0) throw new Error("the backend received no GET /v1/models");
      // codectx.health.intervalSeconds = 10 and the page has focus: the timer probes again.
      const first = backend.gets.length;
      await waitFor("a timed probe (another GET /v1/models)", () => backend.gets.length > first, 30_000, 500);
      const log = await waitFor("the health change in the codectx output log", () => /backend health changed: ok/.test(extLogs()) && extLogs(), 20_000);
      if (/has no codectx\/health/.test(log)) throw new Error("the extension fell back to inferred health");
      return `status bar "${text.trim()}"; ${backend.gets.length} GET(s) of ${[...new Set(backend.gets)].join(", ")}`;
    });

    await check("Search Codebase finds a function and opens it at its line", async () => {
      await runCommand("codectx: Search Codebase");
      await page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "Search Codebase" }).waitFor({ state: "visible", timeout: 10_000 });
      await page.locator(".quick-input-widget input").fill(`helper_${SEARCH_FOR}`);
      const file = `module_${SEARCH_FOR}.py`;
      // The first search loads the embedding model in the server: slow once on a busy machine.
      const row = page.locator(".quick-input-list .monaco-list-row").filter({ hasText: file }).first();
      await row.waitFor({ state: "visible", timeout: 90_000 });
      const rowText = (await row.innerText()).replace(/\s+/g, " ");
      const line = Number(new RegExp(`${file.replace(".", "\\.")}:(\\d+)`).exec(rowText)?.[1]);
      if (!Number.isInteger(line)) throw new Error(`the result names no line: "${rowText}"`);
      await row.click();
      await page.locator(".tabs-container .tab.active").filter({ hasText: file }).waitFor({ state: "visible", timeout: 15_000 });
      // The editor opens first and takes the hit's selection a moment later: wait for the cursor to land.
      let cursor = "";
      await waitFor(`the cursor on line ${line}`, async () => {
        cursor = await page.locator('[id="status.editor.selection"]').first().innerText({ timeout: 2000 });
        return Number(/Ln (\d+)/.exec(cursor)?.[1]) === line;
      }, 10_000).catch(() => {
        throw new Error(`the editor is at "${cursor}", the result said line ${line}`);
      });
      const lines = readFileSync(join(ws, "pkg", file), "utf8").split("\n");
      const shown = lines.slice(line - 1, line + 4).join("\n");
      if (!shown.includes(`helper_${SEARCH_FOR}`)) throw new Error(`line ${line} of ${file} is not the function: ${shown}`);
      return `"${rowText.trim()}" opened at ${cursor.trim()}`;
    });

    await check("Reindex Workspace runs an indexing pass", async () => {
      const ends = () => (extLogs().match(/progress \S+ end/g) ?? []).length;
      const endsBefore = ends();
      const mark = await page.evaluate(() => window.__codectxStatus.length);
      await runCommand("codectx: Reindex Workspace");
      await waitFor("'reindex requested' in the codectx output log", () => /reindex requested/.test(extLogs()), 30_000);
      await waitFor("a finished indexing pass in the codectx output log", () => ends() > endsBefore, 120_000, 500);
      const seen = (await page.evaluate((from) => window.__codectxStatus.slice(from), mark)).find((t) => /indexing/.test(t));
      await waitFor("the status bar to leave indexing", async () => !/indexing/.test(await statusText()), 60_000, 500);
      return seen ? `status bar showed "${seen.trim()}", then the pass ended` : "the pass began and ended (too quick for the status bar)";
    });

    await check("typing shows a codectx inline suggestion and Tab accepts it", async () => {
      await openFromExplorer("calc.py");
      await page.keyboard.press("Control+End");
      await page.keyboard.press("Enter");
      await page.keyboard.press("Enter");
      await page.keyboard.press("Enter");
      await page.keyboard.type("def greet(name):", { delay: 20 });
      await page.keyboard.press("Enter");
      await page.keyboard.type("    ", { delay: 20 });
      // Ghost text is rendered in elements whose class names contain "ghost-text" (the exact names vary by release).
      const ghostText = () =>
        page.evaluate(() =>
          [...document.querySelectorAll('.monaco-editor [class*="ghost-text"]')]
            .filter((el) => el.getClientRects().length > 0)
            .map((el) => el.textContent ?? "")
            .join(" "),
        );
      let asked = Date.now();
      let shown = "";
      await waitFor(
        "ghost text",
        async () => {
          shown = (await ghostText()).replace(/\u00a0/g, " ");
          if (/hello/.test(shown)) return true;
          // The first requests may run out of their budget while the server warms up (it loads
          // the embedding model); type on now and then, as a user would, so VS Code asks again.
          if (Date.now() - asked > 6000) {
            asked = Date.now();
            await page.keyboard.type("x");
            await page.keyboard.press("Backspace");
          }
          return false;
        },
        120_000,
        500,
      );
      await page.keyboard.press("Tab");
      await waitFor("the suggestion in the document", async () => (await editorText()).includes(COMPLETION), 10_000);
      await page.keyboard.press("Control+S");
      const file = join(ws, "calc.py");
      await waitFor("the saved file to hold the suggestion", () => readFileSync(file, "utf8").includes(`    ${COMPLETION}`), 10_000);
      const completions = backend.requests.filter((r) => !r.path.endsWith("/chat/completions"));
      if (completions.length === 0) throw new Error("the backend received no completion request");
      return `ghost text "${shown.trim()}" accepted; ${completions.length} completion request(s) reached the backend`;
    });

    await check("the language status item shows the index and the model server", async () => {
      await focusEditor();
      // VS Code groups language status items under the `{}` entry next to the language name.
      let text = "";
      await waitFor(
        "'codectx: index ready' in the language status",
        async () => {
          await page.locator('[id="status.languageStatus"]').first().click({ timeout: 15_000 });
          const entry = page.locator(".hover-language-status").filter({ hasText: "codectx: index" }).first();
          await entry.waitFor({ state: "visible", timeout: 10_000 });
          text = (await entry.innerText()).replace(/\s+/g, " ").trim();
          if (/codectx: index ready/.test(text)) return true;
          await page.keyboard.press("Escape");
          return false;
        },
        30_000,
        1000,
      ).catch(() => {
        throw new Error(`the item says "${text}"`);
      });
      if (!text.includes("Model server OK") || !text.includes(MODEL)) throw new Error(`no healthy model server in "${text}"`);
      await page.keyboard.press("Escape");
      return `"${text}"`;
    });

    await check("Ctrl+Alt+F opens Search Codebase", async () => {
      await focusEditor();
      await page.keyboard.press("Control+Alt+F");
      const title = page.locator(".quick-input-widget .quick-input-title").filter({ hasText: "Search Codebase" });
      await title.waitFor({ state: "visible", timeout: 10_000 });
      await page.keyboard.press("Escape");
      return "the search box opened from the default keybinding";
    });

    await check("the getting-started walkthrough is offered", async () => {
      await runCommand("Welcome: Open Walkthrough...");
      const row = page.locator(".quick-input-list .monaco-list-row").filter({ hasText: "Get started with codectx" }).first();
      await row.waitFor({ state: "visible", timeout: 15_000 });
      await row.click();
      const steps = page.locator(".gettingStartedContainer").filter({ hasText: "Install the codectx server" }).first();
      await steps.waitFor({ state: "visible", timeout: 15_000 });
      const text = (await steps.innerText()).replace(/\s+/g, " ");
      for (const step of ["Point codectx at your model server", "Take your first suggestion"]) {
        if (!text.includes(step)) throw new Error(`the walkthrough lacks "${step}"`);
      }
      // The command palette opened over the walkthrough is sometimes inert for a moment in
      // headless Chromium (its input never takes the text): give the tab the focus, and try again.
      const tab = page.locator(".tabs-container .tab").filter({ hasText: "Welcome" }).first();
      for (let attempt = 1; ; attempt++) {
        try {
          await tab.click({ timeout: 5_000 });
          await runCommand("View: Close Editor");
          break;
        } catch (err) {
          if (attempt === 3) throw err;
          await page.keyboard.press("Escape");
        }
      }
      await tab.waitFor({ state: "detached", timeout: 10_000 });
      return "3 steps listed";
    });

    await check("Refactor Selection changes the file in one undo step", async () => {
      await openFromExplorer("refactor_me.py");
      const before = readFileSync(join(ws, "refactor_me.py"), "utf8");
      await page.keyboard.press("Control+A");
      await runCommand("codectx: Refactor Selection...");
      const input = page.locator(".quick-input-widget input");
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill("use the builtin sum and add a docstring");
      await page.keyboard.press("Enter");
      await waitFor("the refactored code in the editor", async () => (await editorText()).includes("return sum(values)"), 60_000, 500);
      const chats = backend.requests.filter((r) => r.path.endsWith("/chat/completions"));
      if (chats.length === 0) throw new Error("the backend received no chat request for the refactor");
      // One undo step restores the original text.
      await focusEditor();
      await page.keyboard.press("Control+Z");
      await waitFor("undo to restore the original", async () => (await editorText()).includes("result = result + v"), 10_000);
      await page.keyboard.press("Control+Shift+Z");
      await waitFor("redo", async () => (await editorText()).includes("return sum(values)"), 10_000);
      await page.keyboard.press("Control+S");
      const after = await waitFor("the saved refactor", () => {
        const text = readFileSync(join(ws, "refactor_me.py"), "utf8");
        return text !== before && text.includes("return sum(values)") && text;
      }, 10_000);
      return `file now ${after.split("\n").length - 1} lines; one Ctrl+Z restored the original`;
    });

    await check("Show Context Sent opens with the payload", async () => {
      await runCommand("codectx: Show Context Sent");
      const tab = page.locator(".tabs-container .tab").filter({ hasText: "context-sent.md" }).first();
      await tab.waitFor({ state: "visible", timeout: 20_000 });
      const text = await waitFor("the context document", async () => {
        const t = await editorText();
        return /context sent/.test(t) && t;
      }, 20_000);
      writeFileSync(join(work, "context-sent.txt"), text);
      const sent = /Sent to:\*\* (\S+)/.exec(text)?.[1];
      if (!sent?.startsWith(backend.url)) throw new Error(`document does not name the backend: ${text.slice(0, 400)}`);
      const sha = /Payload SHA-256:\*\* ([0-9a-f]{64})/.exec(text)?.[1];
      const known = new Set(backend.requests.map((r) => r.sha256));
      // The editor's view is virtualised: go to the end to see the payload's closing lines.
      await focusEditor();
      await page.keyboard.press("Control+End");
      const tail = await editorText();
      if (!/Exact payload|```/.test(text + tail)) throw new Error("no payload section in the document");
      return `names ${sent}; sha256 ${sha ? (known.has(sha) ? "matches a body the backend received" : "present") : "absent"}`;
    });

    await check("Show Audit Log lists the requests and verifies the chain", async () => {
      await runCommand("codectx: Show Audit Log");
      const tab = page.locator(".tabs-container .tab").filter({ hasText: "audit-log.txt" }).first();
      // Two runs of the codectx CLI (show, verify): slow to start on a busy machine.
      await tab.waitFor({ state: "visible", timeout: 240_000 });
      const text = await waitFor("the audit log document", async () => {
        const t = await editorText();
        return /codectx audit log/.test(t) && t;
      }, 20_000);
      if (/VERIFICATION FAILED/.test(text)) throw new Error(`audit chain not verified: ${text.slice(0, 300)}`);
      if (!text.includes(`${backend.url}/chat/completions`)) throw new Error(`the refactor request is not listed: ${text.slice(0, 600)}`);
      return text.split("\n")[1];
    });

    await check("codectx.trace.server verbose shows the protocol trace", async () => {
      const trace = await waitFor("the codectx trace channel's log", () => {
        const text = readAll(findFiles(logsDir, (p) => /codectx trace/.test(p) && p.endsWith(".log")));
        return /Sending request 'initialize/.test(text) && text;
      }, 20_000);
      // Verbose: the messages' contents, not just their names; and the custom requests are there too.
      if (!/Params: \{/.test(trace)) throw new Error("the trace has no message contents (verbose)");
      if (!/codectx\/health/.test(trace)) throw new Error("the trace does not show the codectx/health request");
      return `${trace.split("\n").length} lines, initialize and codectx/health with their params`;
    });

    await check("with the backend stopped, Check Backend shows an offline warning", async () => {
      const probes = backend.gets.length;
      await backend.close();
      await runCommand("codectx: Check Backend");
      const text = await waitFor("'offline' in the status bar", async () => {
        const t = await statusText();
        return /offline/.test(t) && t;
      }, 30_000, 500);
      const toast = page.locator(".notifications-toasts .notification-list-item-message").filter({ hasText: "unreachable" }).first();
      await toast.waitFor({ state: "visible", timeout: 10_000 });
      return `status bar "${text.trim()}" after ${probes} GET /v1/models while it ran; notification "${(await toast.innerText()).trim()}"`;
    });
  } finally {
    const failed = results.some((r) => !r.ok) || results.length < CHECKS;
    if (failed) {
      mkdirSync(opts.artifacts, { recursive: true });
      if (page) {
        await page.screenshot({ path: join(opts.artifacts, "final.png") }).catch(() => undefined);
        writeFileSync(join(opts.artifacts, "page.html"), await page.content().catch(() => ""));
      }
      writeFileSync(join(opts.artifacts, "code-server.log"), server.log);
      for (const f of findFiles(logsDir, (p) => p.endsWith(".log"))) {
        cpSync(f, join(opts.artifacts, "logs", f.slice(logsDir.length + 1)), { recursive: true });
      }
      writeFileSync(join(opts.artifacts, "backend-requests.json"), JSON.stringify(backend.requests.map((r) => ({ path: r.path, sha256: r.sha256 })), null, 2));
    }
    await browser.close().catch(() => undefined);
    await server.stop();
    await backend.close();
    if (!opts.keep && !opts.work) rmSync(work, { recursive: true, force: true });
  }
}


let exitCode = 1;
try {
  await main();
  exitCode = results.length >= CHECKS && results.every((r) => r.ok) ? 0 : 1;
} catch (err) {
  results.push({ name: "setup", ok: false, detail: String(err?.stack ?? err) });
  say(`setup failed: ${err?.stack ?? err}`);
}
process.stdout.write(`${JSON.stringify({ ok: exitCode === 0, seconds: (Date.now() - T0) / 1000, results })}\n`);
process.exit(exitCode);
