// Lint rules: typescript-eslint's recommended type-aware set, plus a few that catch real bugs.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "*.vsix"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: "error",
    },
  },
  {
    files: ["**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Node scripts; the e2e's page callbacks run in the browser.
    files: ["**/*.mjs"],
    languageOptions: {
      globals: Object.fromEntries(
        ["process", "Buffer", "setTimeout", "clearTimeout", "fetch", "console", "URL"]
          .concat(["window", "document", "MutationObserver"])
          .map((name) => [name, "readonly"]),
      ),
    },
  },
);
