// Unit tests cover the pure modules (no `vscode` import); the real editor is exercised by e2e/.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    reporters: ["default"],
  },
});
