// Bundles the extension into dist/extension.js (one CommonJS file; `vscode` is provided by the editor).
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  external: ["vscode"],
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: true,
  minify: process.argv.includes("--minify"),
  logLevel: "warning",
});
