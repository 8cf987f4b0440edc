// End-to-end test of the chat view in a real VS Code: code-server 4.139.1 in headless Chromium, the
// built .vsix in a fresh profile, and the chat server the caller names (tests/e2e/test_vscode_chat.py
// passes tests/support/chat_scenario.py's choice: `codectx lsp` by default). It opens the
// chat view, completes an @-mention, asks a question and watches the answer stream in, clicks a
// citation, discards and then applies a code block after seeing its diff, sees a refused @file .env,
// opens the context sent, stops a long answer, exports, starts a new conversation, resumes and
// deletes the first. Prints one JSON line: the checks and what was observed; exit 0 if all passed.
//
// Usage: node e2e/chat.mjs --vsix FILE --code-server BIN --server JSON --workspace DIR --expect JSON
//        [--backend-url URL] [--work DIR] [--artifacts DIR]
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

import * as ui from "./harness.mjs";
import { BROWSER_ARGS, findFiles, readAll, startCodeServer, waitFor } from "./harness.mjs";

const { values: opts } = parseArgs({
  options: {
    vsix: { type: "string" },
    "code-server": { type: "string" },
    chromium: { type: "string", default: "/usr/bin/chromium" },
    server: { type: "string" },
    workspace: { type: "string" },
    expect: { type: "string" },
    "backend-url": { type: "string", default: "" },
    work: { type: "string" },
    artifacts: { type: "string" },
  },
});

const T0 = Date.now();
const CHECKS = 11;
const say = (msg) => process.stderr.write(`[chat-e2e ${((Date.now() - T0) / 1000).toFixed(1)}s] ${msg}\n`);
const results = [];
const seen = {};
let page;

async function check(name, fn) {
  try {
    const detail = await fn();
    results.push({ name, ok: true, detail: detail ?? "" });
    say(`ok   ${name}${detail ? `: ${detail}` : ""}`);
  } catch (err) {
    results.push({ name, ok: false, detail: String(err?.message ?? err) });
    say(`FAIL ${name}: ${err?.stack ?? err}`);
    if (page && opts.artifacts) {
      mkdirSync(opts.artifacts, { recursive: true });
      await page.screenshot({ path: join(opts.artifacts, `chat-${name.replace(/\W+/g, "-")}.png`) }).catch(() => undefined);
    }
  }
}

/** The chat webview's inner frame (the one holding #transcript). */
async function chatFrame() {
  return waitFor(
    "the chat webview",
    async () => {
      for (const frame of page.frames()) {
        if (await frame.evaluate(() => !!document.getElementById("transcript")).catch(() => false)) return frame;
      }
      return undefined;
    },
    60_000,
    250,
  );
}

async function quickOpen(name) {
  await page.keyboard.press("Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row").filter({ hasText: name }).first().waitFor({ state: "visible", timeout: 15_000 });
  await page.keyboard.press("Enter");
  await page.locator(".tabs-container .tab.active").filter({ hasText: name }).waitFor({ state: "visible", timeout: 15_000 });
}

const assistantTurns = (frame) => frame.locator(".turn.assistant");

/** Ask in the chat and watch the answer: the body's length each time it changes while it streams. */
async function ask(frame, question, { stopAfter } = {}) {
  const before = await assistantTurns(frame).count();
  await frame.locator("#input").fill(question);
  await frame.locator("#input").press("Enter");
  const lengths = [];
  let stopped = false;
  const state = () =>
    frame.evaluate(() => {
      const turns = document.querySelectorAll(".turn.assistant");
      const last = turns[turns.length - 1];
      return { count: turns.length, cls: last?.className ?? "", len: last?.querySelector(".body")?.textContent?.length ?? 0 };
    });
  const final = await waitFor(
    `the answer to "${question}"`,
    async () => {
      const s = await state();
      if (s.count <= before) return undefined;
      if (/streaming/.test(s.cls)) {
        if (lengths.at(-1) !== s.len) lengths.push(s.len);
        if (stopAfter && !stopped && s.len >= stopAfter) {
          stopped = true;
          await frame.locator("#stop").click();
        }
        return undefined;
      }
      return s;
    },
    90_000,
    25,
  );
  return { lengths, final, turn: assistantTurns(frame).nth(before) };
}

/** The active editor's name: the active group's active tab, and the window title VS Code keeps in step with it. */
async function activeTab() {
  const tab = await page.locator(".editor-group-container.active .tabs-container .tab.active").first().innerText({ timeout: 5000 }).catch(() => "");
  return `${tab.trim()} | ${await page.title()}`;
}

async function cursorLine() {
  const text = await page.locator('[id="status.editor.selection"]').first().innerText({ timeout: 2000 });
  return Number(/Ln (\d+)/.exec(text)?.[1]);
}

async function main() {
  for (const [what, path] of [["vsix", opts.vsix], ["code-server", opts["code-server"]], ["chromium", opts.chromium], ["workspace", opts.workspace], ["expect", opts.expect]]) {
    if (!path || !existsSync(path)) throw new Error(`${what} not found at ${path}`);
  }
  const expect = JSON.parse(readFileSync(opts.expect, "utf8"));
  const server = JSON.parse(opts.server);
  const work = opts.work ?? mkdtempSync(join(tmpdir(), "codectx-chat-e2e-"));
  const ws = opts.workspace;
  const userData = join(work, "user-data");
  const xdg = join(work, "xdg");
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(xdg, "config"),
    XDG_DATA_HOME: join(xdg, "data"),
    XDG_STATE_HOME: join(xdg, "state"),
    XDG_CACHE_HOME: process.env.XDG_CACHE_HOME ?? join(xdg, "cache"),
    HF_HUB_OFFLINE: "1",
    TRANSFORMERS_OFFLINE: "1",
    CODECTX_API_KEY: "",
  };
  const settings = {
    "explorer.autoReveal": false,
    "codectx.server.command": server,
    "codectx.completion.enabled": false,
    "codectx.health.intervalSeconds": 0,
    ...(opts["backend-url"] ? { "codectx.backend.url": opts["backend-url"] } : {}),
  };
  say(`server ${server.join(" ")}; work dir ${work}`);
  const cs = await startCodeServer({ codeServer: opts["code-server"], vsix: opts.vsix, userData, extensions: join(work, "extensions"), workspace: ws, settings, env });
  const browser = await chromium.launch({ executablePath: opts.chromium, args: BROWSER_ARGS });
  const logsDir = join(userData, "logs");
  const extLogs = () => readAll(findFiles(logsDir, (p) => /codectx/i.test(p) && p.endsWith(".log")));
  const opsPath = join(ws, expect.blockPath);
  const opsBefore = readFileSync(opsPath, "utf8");
  try {
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    page.setDefaultTimeout(60_000);
    await page.goto(`http://127.0.0.1:${cs.port}/?folder=${encodeURIComponent(ws)}`, { timeout: 180_000 });
    await page.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
    await waitFor("'language server running' in the codectx output log", () => /language server running/.test(extLogs()), 120_000);
    await quickOpen("report.py");
    let frame;

    await check("the chat view opens from the command palette", async () => {
      await ui.runCommand(page, "codectx: Open Chat");
      frame = await chatFrame();
      await frame.locator("#input").waitFor({ state: "visible", timeout: 20_000 });
      // The page's CSP, as the webview got it: no inline script, only our nonce'd bundle.
      seen.csp = await frame.evaluate(() => document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.getAttribute("content") ?? "");
      if (!/script-src 'nonce-/.test(seen.csp) || /unsafe-inline|unsafe-eval/.test(seen.csp)) throw new Error(`weak CSP: ${seen.csp}`);
      return "webview with a nonce-only script CSP";
    });

    await check("@-mention completion offers kinds and workspace files", async () => {
      const input = frame.locator("#input");
      await input.click();
      await input.pressSequentially("@", { delay: 30 });
      await frame.locator("#mention-list .mention").filter({ hasText: "@file:" }).first().waitFor({ state: "visible", timeout: 10_000 });
      seen.kinds = await frame.locator("#mention-list .mention").allInnerTexts();
      await input.pressSequentially("file:calc/o", { delay: 30 });
      const row = frame.locator("#mention-list .mention").filter({ hasText: expect.blockPath }).first();
      await row.waitFor({ state: "visible", timeout: 15_000 });
      seen.fileItems = await frame.locator("#mention-list .mention").allInnerTexts();
      // Arrow to the file and take it with Enter (Enter does not send while the list is open).
      const index = seen.fileItems.findIndex((t) => t.includes(expect.blockPath));
      for (let i = 0; i < index; i++) await input.press("ArrowDown");
      await input.press("Enter");
      seen.mentionInput = await input.inputValue();
      if (seen.mentionInput !== `@file:${expect.blockPath} `) throw new Error(`the input holds "${seen.mentionInput}"`);
      await input.fill("");
      return `kinds ${seen.kinds.length}, then "${seen.mentionInput.trim()}"`;
    });

    let first;
    await check("a question's answer streams in, with citations", async () => {
      first = await ask(frame, expect.question);
      seen.streamLengths = first.lengths;
      seen.firstClass = first.final.cls;
      seen.firstBody = await first.turn.locator(".body").innerText();
      seen.citations = await first.turn.locator("button.citation").allInnerTexts();
      seen.applyButtons = await first.turn.locator("button.code-apply").count();
      if (first.lengths.length < 3) throw new Error(`the answer did not stream (lengths seen: ${first.lengths})`);
      if (!/\bdone\b/.test(first.final.cls)) throw new Error(`the turn ended as "${first.final.cls}"`);
      if (!seen.citations.length) throw new Error("no citations");
      return `${first.lengths.length} partial states; ${seen.citations.length} citation(s): ${seen.citations[0]}`;
    });

    await check("clicking a citation opens the file at its lines", async () => {
      const button = first.turn.locator("button.citation").filter({ hasText: expect.blockPath }).first();
      const label = await button.innerText();
      const line = Number(/:(\d+)/.exec(label)?.[1]);
      await button.click();
      const name = expect.blockPath.split("/").pop();
      await waitFor(`${name} active`, async () => (await activeTab()).includes(name), 15_000);
      await waitFor(`the cursor on line ${line}`, async () => (await cursorLine()) === line, 10_000);
      seen.citationOpened = { tab: await activeTab(), line };
      return `${seen.citationOpened.tab} at line ${line}`;
    });

    const proposalTab = page.locator(".tabs-container .tab").filter({ hasText: "codectx proposal" });
    await check("Apply shows the diff; Discard leaves the file unchanged", async () => {
      await first.turn.locator("button.code-apply").first().click();
      await proposalTab.first().waitFor({ state: "visible", timeout: 30_000 });
      const modified = page.locator(".monaco-diff-editor .editor.modified .view-lines").first();
      seen.diffModified = await waitFor("the note in the diff's new side", async () => {
        const t = (await modified.innerText()).replace(/\u00a0/g, " ");
        return t.includes(expect.note) && t;
      }, 15_000);
      const original = (await page.locator(".monaco-diff-editor .editor.original .view-lines").first().innerText()).replace(/\u00a0/g, " ");
      if (original.includes(expect.note)) throw new Error("the original side already has the change");
      const toast = page.locator(".notifications-toasts .notification-list-item").filter({ hasText: "apply the proposed change" }).first();
      await toast.waitFor({ state: "visible", timeout: 10_000 });
      // A click while the toast is still sliding in can be lost (seen once in headless
      // Chromium): click again while the toast and the proposal are both still there.
      for (let attempt = 1; ; attempt++) {
        await toast.locator(".monaco-button").filter({ hasText: /^Discard$/ }).click({ timeout: 10_000 });
        const closed = await proposalTab.first().waitFor({ state: "detached", timeout: 10_000 }).then(() => true, () => false);
        if (closed) break;
        if (attempt === 3 || !(await toast.isVisible())) throw new Error("Discard did not close the proposal");
      }
      if (readFileSync(opsPath, "utf8") !== opsBefore) throw new Error("the file changed on disk");
      const dirty = await page.locator(".tabs-container .tab.dirty").count();
      seen.afterDiscard = { dirtyTabs: dirty };
      if (dirty) throw new Error("an editor became dirty");
      return "diff shown with the note on the new side; discarded, nothing changed";
    });

    await check("Apply again and Accept changes the file", async () => {
      await first.turn.locator("button.code-apply").first().click();
      await proposalTab.first().waitFor({ state: "visible", timeout: 30_000 });
      await page.locator(".monaco-diff-editor .editor.modified .view-lines").first().click({ position: { x: 100, y: 5 } });
      const accept = page.locator('.editor-group-container.active .editor-actions a[aria-label^="Accept the Proposed Change"]').first();
      await accept.waitFor({ state: "visible", timeout: 10_000 });
      await accept.click();
      await proposalTab.first().waitFor({ state: "detached", timeout: 10_000 });
      const name = expect.blockPath.split("/").pop();
      await waitFor(`${name} active`, async () => (await activeTab()).includes(name), 10_000);
      await ui.focusEditor(page);
      await waitFor("the note in the editor", async () => (await ui.editorText(page)).includes(expect.note), 10_000);
      await page.keyboard.press("Control+S");
      seen.afterAccept = await waitFor("the saved change", () => {
        const t = readFileSync(opsPath, "utf8");
        return t.includes(expect.note) && t;
      }, 10_000);
      return "accepted from the diff's title bar; saved";
    });

    await check("a never-send @file is refused with a notice", async () => {
      const refused = await ask(frame, expect.refused);
      seen.refusedNotices = await refused.turn.locator(".notice").allInnerTexts();
      seen.refusedBody = await refused.turn.locator(".body").innerText();
      if (!seen.refusedNotices.some((n) => n.includes(".env") && /refused/.test(n))) throw new Error(`notices: ${seen.refusedNotices}`);
      return seen.refusedNotices.join("; ");
    });

    await check("Show Context Sent opens the first turn's context", async () => {
      await first.turn.locator("button.show-context").click();
      const tab = page.locator(".tabs-container .tab").filter({ hasText: /chat-context-.*\.md/ }).first();
      await tab.waitFor({ state: "visible", timeout: 20_000 });
      await ui.focusEditor(page);
      seen.context = await waitFor("the context document", async () => {
        const t = await ui.editorText(page);
        return /Context items/.test(t) && t;
      }, 10_000);
      return (await tab.innerText()).trim();
    });

    await check("Stop ends a long answer early", async () => {
      const long = await ask(frame, expect.long, { stopAfter: 60 });
      seen.stopClass = long.final.cls;
      seen.stopState = await long.turn.locator(".who .state").innerText().catch(() => "");
      const length = (await long.turn.locator(".body").innerText()).length;
      await new Promise((r) => setTimeout(r, 1500));
      seen.stoppedLength = (await long.turn.locator(".body").innerText()).length;
      if (!/cancelled/.test(long.final.cls)) throw new Error(`the turn ended as "${long.final.cls}"`);
      if (seen.stoppedLength !== length) throw new Error("the answer kept growing after Stop");
      if (await frame.locator("#stop").isVisible()) throw new Error("the Stop button is still shown");
      return `stopped at ${seen.stoppedLength} characters ("${seen.stopState}")`;
    });

    await check("Export Chat as Markdown opens the conversation", async () => {
      await ui.runCommand(page, "codectx: Export Chat as Markdown");
      await waitFor("an Untitled tab", async () => /Untitled/.test(await activeTab()), 15_000);
      await ui.focusEditor(page);
      seen.export = await waitFor("the export", async () => {
        const t = await ui.editorText(page);
        return t.includes("## You") && t;
      }, 10_000);
      return `${seen.export.split("\n").length} lines visible`;
    });

    await check("new conversation, then resume and delete the first from the history", async () => {
      await ui.runCommand(page, "codectx: New Chat Conversation");
      frame = await chatFrame();
      await waitFor("an empty chat", async () => (await frame.locator(".turn").count()) === 0 && (await frame.locator("#empty").isVisible()), 10_000);
      await ui.runCommand(page, "codectx: Chat History...");
      const rows = page.locator(".quick-input-list .monaco-list-row");
      const row = rows.filter({ hasText: expect.question }).first();
      await row.waitFor({ state: "visible", timeout: 15_000 });
      seen.history = await rows.allInnerTexts();
      await row.click();
      await waitFor("the resumed turns", async () => (await frame.locator(".turn").count()) >= 6, 15_000);
      seen.resumed = await frame.locator(".turn.user .text").allInnerTexts();
      if (seen.resumed[0] !== expect.question) throw new Error(`resumed: ${seen.resumed}`);
      await ui.runCommand(page, "codectx: Chat History...");
      await row.waitFor({ state: "visible", timeout: 15_000 });
      await row.hover();
      await row.locator(".codicon-trash").first().click();
      // The picker stays open and reloads its list (a hidden picker keeps its rows in the DOM: count visible ones).
      await waitFor("the conversation gone from the list", async () => (await rows.filter({ hasText: expect.question, visible: true }).count()) === 0 && (await page.locator(".quick-input-widget").isVisible()), 15_000);
      await page.keyboard.press("Escape");
      await waitFor("the deleted conversation's view cleared", async () => (await frame.locator(".turn").count()) === 0, 10_000);
      return `history had ${seen.history.length} entr${seen.history.length === 1 ? "y" : "ies"}; resumed ${seen.resumed.length} questions; deleted`;
    });
  } finally {
    const failed = results.some((r) => !r.ok) || results.length < CHECKS;
    if (failed && opts.artifacts) {
      mkdirSync(opts.artifacts, { recursive: true });
      if (page) {
        await page.screenshot({ path: join(opts.artifacts, "chat-final.png") }).catch(() => undefined);
        writeFileSync(join(opts.artifacts, "chat-page.html"), await page.content().catch(() => ""));
      }
      writeFileSync(join(opts.artifacts, "chat-code-server.log"), cs.log);
      for (const f of findFiles(logsDir, (p) => p.endsWith(".log"))) {
        cpSync(f, join(opts.artifacts, "chat-logs", f.slice(logsDir.length + 1)), { recursive: true });
      }
    }
    await browser.close().catch(() => undefined);
    await cs.stop();
    if (!opts.work) rmSync(work, { recursive: true, force: true });
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
process.stdout.write(`${JSON.stringify({ ok: exitCode === 0, seconds: (Date.now() - T0) / 1000, results, seen })}\n`);
process.exit(exitCode);
