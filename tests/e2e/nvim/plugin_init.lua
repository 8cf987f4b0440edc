-- Headless Neovim harness for the codectx Neovim plugin (plugin/, lua/codectx/, lsp/codectx.lua).
--
-- The plugin is loaded the way a plugin manager does it: the repository root goes on the
-- runtimepath, Neovim sources plugin/codectx.lua and finds lsp/codectx.lua itself. Then
-- require("codectx").setup() points the server at the test's command and settings and enables it.
-- Environment (set by tests/e2e/test_nvim_plugin.py):
--   CODECTX_NVIM_PLUGIN_ROOT  the repository root (the plugin root)
--   CODECTX_NVIM_CMD          JSON list: the command that starts `codectx lsp`
--   CODECTX_NVIM_FILE         file to open
--   CODECTX_NVIM_INIT         JSON object: the codectx settings
--   CODECTX_NVIM_QUERY        words for :Codectx search
--   CODECTX_NVIM_LINE / COL   1-based line and 0-based column for :Codectx context
--   CODECTX_NVIM_OUT          where the JSON result is written
-- Steps are driven by timers so Neovim's main loop (and its LSP client) runs normally.

local env = vim.env
vim.opt.runtimepath:prepend(env.CODECTX_NVIM_PLUGIN_ROOT)

local out = { notes = {}, events = {} }

-- What the plugin tells the user goes through vim.notify: keep it.
vim.notify = function(msg, level)
  table.insert(out.notes, { msg = msg, level = level or vim.log.levels.INFO })
end

local function write_out()
  local f = assert(io.open(env.CODECTX_NVIM_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
end

local function finish(ok, reason)
  out.ok = ok
  out.reason = reason
  write_out()
  local clients = vim.lsp.get_clients({ name = "codectx" })
  for _, client in ipairs(clients) do
    client:stop()
  end
  vim.wait(10000, function()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return false
      end
    end
    return true
  end, 50)
  vim.cmd(ok and "qa!" or "cquit 1")
end

vim.defer_fn(function()
  finish(false, "watchdog: the plugin scenario did not finish in time")
end, tonumber(env.CODECTX_NVIM_TIMEOUT_MS or "150000"))

local function poll(cond, timeout_ms, on_ok, what)
  local deadline = vim.uv.now() + timeout_ms
  local function tick()
    local ok, value = pcall(cond)
    if ok and value then
      on_ok(value)
    elseif vim.uv.now() > deadline then
      finish(false, "timed out waiting for " .. what .. (ok and "" or (": " .. tostring(value))))
    else
      vim.defer_fn(tick, 50)
    end
  end
  tick()
end

local function notes_since(n, pattern)
  for i = n + 1, #out.notes do
    if out.notes[i].msg:find(pattern) then
      return out.notes[i]
    end
  end
end

local function buffer_lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- Before any server runs: what the plugin registered and what Neovim found on the runtimepath.
local function record_setup()
  out.loaded = vim.g.loaded_codectx == true
  out.has_command = vim.fn.exists(":Codectx") == 2
  out.completions = vim.fn.getcompletion("Codectx ", "cmdline")
  local config = vim.lsp.config.codectx
  out.config = { filetypes = config.filetypes, root_markers = config.root_markers, cmd = config.cmd }
end

local function steps(buf, client)
  out.completion_mode = vim.b[buf].codectx_completion
  out.client_root = client.root_dir
  out.server_info = client.server_info

  -- :Codectx status answers at once, whatever the index is doing.
  local n = #out.notes
  vim.cmd("Codectx status")
  poll(function() return notes_since(n, "backend ") end, 30000, function(note)
    out.status = note.msg
    -- Wait for the background index, then search, show context, check health, reindex.
    poll(function()
      local reply = client:request_sync("codectx/health", vim.empty_dict(), 5000)
      return reply and reply.result and reply.result.index.state == "ready" and reply.result
    end, 90000, function()
      vim.cmd("Codectx search " .. env.CODECTX_NVIM_QUERY)
      poll(function() return #vim.fn.getqflist() > 0 and vim.fn.getqflist({ title = 1, items = 1 }) end, 30000,
        function(qf)
          out.qf_title = qf.title
          out.qf = {}
          for _, item in ipairs(qf.items) do
            table.insert(out.qf, { file = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, text = item.text })
          end
          vim.cmd.cclose()
          local src_win = vim.fn.bufwinid(buf)
          vim.api.nvim_set_current_win(src_win)
          vim.api.nvim_win_set_cursor(src_win, { tonumber(env.CODECTX_NVIM_LINE), tonumber(env.CODECTX_NVIM_COL) })
          local wins = #vim.api.nvim_list_wins()
          vim.cmd("Codectx context")
          poll(function() return #vim.api.nvim_list_wins() > wins end, 30000, function()
            local ctx_buf = vim.api.nvim_get_current_buf()
            out.context = buffer_lines(ctx_buf)
            out.context_name = vim.api.nvim_buf_get_name(ctx_buf)
            out.context_filetype = vim.bo[ctx_buf].filetype
            vim.cmd.close()
            vim.cmd("checkhealth codectx")
            out.health = buffer_lines(vim.api.nvim_get_current_buf())
            local before = #out.notes
            vim.cmd("Codectx reindex")
            poll(function() return notes_since(before, "reindexing") end, 30000, function(note)
              out.reindex = note.msg
              local bad = #out.notes
              vim.cmd("Codectx frobnicate")
              out.bad_subcommand = notes_since(bad, "usage")
              finish(true)
            end, ":Codectx reindex's message")
          end, "the context window")
        end, "search results in the quickfix list")
    end, "the index to be ready")
  end, ":Codectx status's message")
end

require("codectx").setup({
  cmd = vim.json.decode(env.CODECTX_NVIM_CMD),
  settings = vim.json.decode(env.CODECTX_NVIM_INIT or "{}"),
})

vim.api.nvim_create_autocmd("VimEnter", {
  nested = true,
  callback = function()
    record_setup()
    vim.cmd.edit(vim.fn.fnameescape(env.CODECTX_NVIM_FILE))
    local buf = vim.api.nvim_get_current_buf()
    poll(function()
      local client = vim.lsp.get_clients({ bufnr = buf, name = "codectx" })[1]
      return client and client.initialized and vim.b[buf].codectx_completion and client
    end, 30000, function(client)
      steps(buf, client)
    end, "the codectx client to attach")
  end,
})
