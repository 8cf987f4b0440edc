-- codectx language server, for Neovim >= 0.11's `vim.lsp.config` / `vim.lsp.enable("codectx")`.
--
-- Neovim reads `lsp/<name>.lua` from every 'runtimepath' folder, so installing this repository as a
-- plugin (lazy.nvim, vim.pack) is enough for `vim.lsp.enable("codectx")`. Override any field with
-- `vim.lsp.config("codectx", {...})`, or call `require("codectx").setup({...})` (see README).
-- This folder is also the Python package `codectx.lsp`; Python ignores this file.
return {
  cmd = { "codectx", "lsp" },
  filetypes = {
    "python",
    "javascript",
    "javascriptreact",
    "typescript",
    "typescriptreact",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "cs",
    "ruby",
    "php",
    "kotlin",
    "sh",
    "bash",
    "lua",
  },
  -- The nearest of these wins (one priority level), as codectx's own workspace lookup does.
  root_markers = { { ".codectx", ".codectx.toml", ".git", ".hg" } },
  -- The user's codectx settings, in the shape of `codectx config keys`:
  -- { codectx = { backend = { url = "http://127.0.0.1:8000/v1" } } }
  init_options = { codectx = vim.empty_dict() },
}
