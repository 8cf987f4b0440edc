-- Headless Neovim harness for codectx's language-server tests.
--
-- Driven by environment variables (set by tests/e2e/test_nvim*.py):
--   CODECTX_NVIM_CMD       JSON list: the command that starts `codectx lsp`
--   CODECTX_NVIM_ROOT      workspace folder
--   CODECTX_NVIM_FILE      file to open (inside the root)
--   CODECTX_NVIM_INIT      JSON object: initializationOptions (the user's settings)
--   CODECTX_NVIM_SCENARIO  completion | code_action | progress
--   CODECTX_NVIM_LINE / CODECTX_NVIM_COL   1-based line, 0-based byte column for the scenario
--   CODECTX_NVIM_OUT       where the JSON result is written
-- Every step is driven by timers so Neovim's main loop (and its LSP client) runs normally.

local env = vim.env
local out = { events = {}, progress = {}, messages = {} }

local function log(msg)
  table.insert(out.events, msg)
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
  -- Wait for the server to exit cleanly before quitting, or it sees a broken pipe.
  vim.wait(10000, function()
    for _, client in ipairs(clients) do
      if not client:is_stopped() then
        return false
      end
    end
    return true
  end, 50)
  if ok then
    vim.cmd("qa!")
  else
    vim.cmd("cquit 1")
  end
end

-- Watchdog: a stuck scenario fails the test instead of hanging it.
vim.defer_fn(function()
  out.timeout = true
  finish(false, "watchdog: scenario did not finish in time")
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

-- Record progress and messages the client receives.
local orig_progress = vim.lsp.handlers["$/progress"]
vim.lsp.handlers["$/progress"] = function(err, result, ctx, config)
  if result and result.value then
    table.insert(out.progress, result.value)
  end
  if orig_progress then
    return orig_progress(err, result, ctx, config)
  end
end
vim.lsp.handlers["window/showMessage"] = function(_, result)
  table.insert(out.messages, result.message)
end

-- As Neovim's docs recommend for LSP completion (and as lsp/EDITORS.md says): nothing is
-- inserted until an item is chosen with <C-n>/<C-p> and accepted with <C-y>.
vim.opt.completeopt = { "menuone", "noselect", "popup" }

vim.lsp.config("codectx", {
  cmd = vim.json.decode(env.CODECTX_NVIM_CMD),
  filetypes = { "python" },
  root_markers = { ".git" },
  init_options = vim.json.decode(env.CODECTX_NVIM_INIT or "{}"),
})
vim.lsp.enable("codectx")

local function client_for(buf)
  return vim.lsp.get_clients({ bufnr = buf, name = "codectx" })[1]
end

local function buffer_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

local scenarios = {}

-- Trigger completion with Neovim's own LSP completion, accept the codectx item, check the buffer.
function scenarios.completion(buf, client)
  vim.lsp.completion.enable(true, client.id, buf, { autotrigger = false })
  local line = tonumber(env.CODECTX_NVIM_LINE)
  out.before = buffer_text(buf)
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.cmd("startinsert!")
  poll(function() return vim.api.nvim_get_mode().mode == "i" end, 5000, function()
    vim.lsp.completion.get()
    -- A server still warming up (first request on a busy machine) may answer empty; ask again as a
    -- user would, instead of waiting on an answer that already came.
    local last_ask = vim.uv.now()
    poll(function()
      local info = vim.fn.complete_info({ "pum_visible", "items" })
      if info.items and #info.items > 0 then
        return info
      end
      if vim.uv.now() - last_ask > 3000 and vim.api.nvim_get_mode().mode == "i" then
        last_ask = vim.uv.now()
        vim.lsp.completion.get()
      end
      return false
    end, 90000, function(info)
      out.items = {}
      for _, item in ipairs(info.items) do
        table.insert(out.items, { word = item.word, abbr = item.abbr, menu = item.menu, kind = item.kind })
      end
      -- Select the first item and accept it, as a user would.
      vim.api.nvim_feedkeys(vim.keycode("<C-n><C-y>"), "n", false)
      poll(function() return vim.fn.pumvisible() == 0 end, 5000, function()
        vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "n", false)
        poll(function() return vim.api.nvim_get_mode().mode == "n" end, 5000, function()
          out.after = buffer_text(buf)
          out.line_after = vim.api.nvim_buf_get_lines(buf, line - 1, line, false)[1]
          finish(true)
        end, "normal mode")
      end, "the menu to close")
    end, "completion items")
  end, "insert mode")
end

-- Ask for code actions on a range, pick the codectx docstring action, let Neovim resolve and apply it.
function scenarios.code_action(buf, client)
  local line = tonumber(env.CODECTX_NVIM_LINE)
  local last = tonumber(env.CODECTX_NVIM_END_LINE or env.CODECTX_NVIM_LINE)
  out.before = buffer_text(buf)
  local wanted = env.CODECTX_NVIM_ACTION or "Add docstring"
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.lsp.buf.code_action({
    range = { start = { line, 0 }, ["end"] = { last, 0 } },
    filter = function(action)
      return action.title:find(wanted, 1, true) ~= nil
    end,
    apply = true,
  })
  poll(function() return buffer_text(buf) ~= out.before end, 30000, function()
    out.after = buffer_text(buf)
    finish(true)
  end, "the code action's edit")
end

-- Only wait for indexing progress to begin and end.
function scenarios.progress(buf, client)
  poll(function()
    for _, value in ipairs(out.progress) do
      if value.kind == "end" then
        return true
      end
    end
    return false
  end, 80000, function()
    finish(true)
  end, "indexing progress to end")
end

vim.api.nvim_create_autocmd("VimEnter", {
  nested = true,
  callback = function()
    vim.cmd.edit(vim.fn.fnameescape(env.CODECTX_NVIM_FILE))
    local buf = vim.api.nvim_get_current_buf()
    log("opened " .. vim.bo[buf].filetype)
    poll(function() return client_for(buf) and client_for(buf).initialized and client_for(buf) end, 30000,
      function(client)
        log("client attached")
        scenarios[env.CODECTX_NVIM_SCENARIO](buf, client)
      end, "the codectx client to attach")
  end,
})
