// Shared pieces of the end-to-end tests in code-server (run.mjs, chat.mjs): ports, waiting, logs,
// the code-server process with a fresh profile, and the few UI moves both use (the command
// palette, the Explorer, the focused editor's text).
import { spawn, execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

export const BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

/** User settings that keep the UI predictable (see /work/shared/FACTS.md), plus the test's own. */
export const BASE_SETTINGS = {
  "chat.disableAIFeatures": true,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "files.autoSave": "off",
};

export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

export async function waitFor(what, fn, timeoutMs, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? ` (last error: ${last.message})` : ""}`);
}

export function findFiles(dir, predicate, out = []) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findFiles(path, predicate, out);
    else if (predicate(path)) out.push(path);
  }
  return out;
}

export const readAll = (files) => files.map((f) => readFileSync(f, "utf8")).join("\n");

/** Install the .vsix into a fresh profile and start code-server on a free port; `stop()` ends its process group. */
export async function startCodeServer({ codeServer, vsix, userData, extensions, workspace, settings, env }) {
  mkdirSync(join(userData, "User"), { recursive: true });
  writeFileSync(join(userData, "User", "settings.json"), JSON.stringify({ ...BASE_SETTINGS, ...settings }, null, 2));
  const base = ["--user-data-dir", userData, "--extensions-dir", extensions];
  await promisify(execFile)(codeServer, [...base, "--install-extension", vsix], { env, timeout: 120_000 });
  const port = await freePort();
  const child = spawn(
    codeServer,
    ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", ...base, workspace],
    { env, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  const server = { port, child, log: "" };
  child.stdout.on("data", (d) => (server.log += d));
  child.stderr.on("data", (d) => (server.log += d));
  server.stop = async () => {
    // code-server spawns children (extension host, our language server): stop the whole group.
    for (const signal of ["SIGTERM", "SIGKILL"]) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        /* already gone */
      }
      if (signal === "SIGTERM") await new Promise((r) => setTimeout(r, 1500));
    }
  };
  try {
    await waitFor("code-server to answer", async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 60_000, 500);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

/**
 * Run a command from the palette. The palette can close under the test before the title is typed
 * (a loaded machine: focus moving into a webview or a new editor, a notification's dialog), so an
 * attempt that cannot type or find the row is retried from a fresh palette; a dialog in the way is
 * named in the error.
 */
export async function runCommand(page, title, attempts = 3) {
  const input = page.locator(".quick-input-widget input");
  let last;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      if (attempt > 1) {
        await page.keyboard.press("Escape");
        await new Promise((r) => setTimeout(r, 500));
      }
      await page.keyboard.press("Control+Shift+P");
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill(`>${title}`, { timeout: 10_000 });
      const row = page.locator(".quick-input-list .monaco-list-row").filter({ hasText: title }).first();
      await row.waitFor({ state: "visible", timeout: 10_000 });
      await page.keyboard.press("Enter");
      return;
    } catch (err) {
      const dialog = await page.locator(".monaco-dialog-box").first().innerText({ timeout: 1000 }).catch(() => "");
      last = new Error(`${err.message}${dialog ? `\n(a dialog was open: ${dialog})` : ""}`);
      console.error(`[harness] running "${title}", attempt ${attempt} failed: ${String(last.message).split("\n")[0]}`);
    }
  }
  throw last;
}

export const FOCUSED_LINES = ".monaco-editor.focused .view-lines";

/** Put the keyboard focus in the active editor (VS Code may use EditContext rather than a textarea). */
export async function focusEditor(page) {
  const focused = page.locator(FOCUSED_LINES).first();
  if (await focused.waitFor({ state: "visible", timeout: 3000 }).then(() => true, () => false)) return;
  const lines = page.locator(".editor-group-container.active .editor-instance .monaco-editor .view-lines").filter({ visible: true }).first();
  // Forced: editor overlays (lightbulb, hover) must not make the click wait; it is a plain click in the text.
  await lines.click({ position: { x: 200, y: 8 }, force: true, timeout: 15_000 });
  await focused.waitFor({ state: "visible", timeout: 15_000 });
}

export async function openFromExplorer(page, name) {
  const row = page.locator(".explorer-folders-view .monaco-list-row").filter({ hasText: name }).first();
  await row.waitFor({ state: "visible", timeout: 30_000 });
  // A double click opens a pinned editor and moves the focus into it.
  await row.dblclick();
  const tab = page.locator(".tabs-container .tab").filter({ hasText: name }).first();
  await tab.waitFor({ state: "visible", timeout: 15_000 });
  await focusEditor(page);
}

/** The visible text of the active editor (Monaco renders spaces as non-breaking). */
export async function editorText(page) {
  const text = await page.locator(FOCUSED_LINES).first().innerText({ timeout: 5000 });
  return text.replace(/\u00a0/g, " ");
}
