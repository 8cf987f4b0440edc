// Bundles the extension into dist/extension.js (one CommonJS file; `vscode` is provided by the editor),
// and the chat view's page script into dist/chat.js (a browser script, run inside the webview).
import { build } from "esbuild";

const minify = process.argv.includes("--minify");

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: true,
  minify,
  logLevel: "warning",
});

await build({
  entryPoints: ["src/chat/webview/main.ts"],
  bundle: true,
  outfile: "dist/chat.js",
  platform: "browser",
  format: "iife",
  target: "es2022",
  sourcemap: false,
  minify,
  logLevel: "warning",
});
