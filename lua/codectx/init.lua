-- codectx for Neovim: setup, what happens when the server attaches, and the :Codectx commands.
--
-- The server's defaults live in lsp/codectx.lua (Neovim's runtimepath convention); setup() only
-- layers the user's options on top and enables it. Requests go to the running codectx client of
-- the current buffer (or any codectx client), so every command works from any window.

local M = {}

local NAME = "codectx"

--- Options; setup() merges the user's over these.
M.options = {
  -- Command that starts the server (nil: lsp/codectx.lua's `codectx lsp`).
  cmd = nil,
  -- codectx settings as in `codectx config keys`, e.g. { backend = { url = "http://127.0.0.1:8000/v1" } }.
  settings = nil,
  -- "auto": ghost text on Neovim >= 0.12 (vim.lsp.inline_completion), a completion item on 0.11;
  -- "inline" or "menu" to force one; false to leave completion to the user's setup.
  completion = "auto",
  -- Buffer-local keymaps in buffers codectx attaches to (false: none).
  keymaps = {
    accept = "<Tab>", -- 0.12 ghost text: accept (falls back to a plain <Tab>)
    next = "<M-]>", -- 0.12 ghost text: next / previous candidate
    prev = "<M-[>",
    trigger = "<C-Space>", -- 0.11 completion item: ask for a suggestion
  },
}

--- Configure and enable the server. lazy.nvim calls this with `opts`; with vim.pack, call it
--- yourself, or just run `vim.lsp.enable("codectx")` to take the defaults.
function M.setup(opts)
  M.options = vim.tbl_deep_extend("force", M.options, opts or {})
  local config = {}
  if M.options.cmd then
    config.cmd = M.options.cmd
  end
  if M.options.settings then
    config.init_options = { codectx = M.options.settings }
  end
  if next(config) then
    vim.lsp.config(NAME, config)
  end
  vim.lsp.enable(NAME)
end

--- The completion style for a client: "inline", "menu" or nil (none).
function M.completion_mode(client)
  local want = M.options.completion
  if want == false then
    return nil
  end
  local inline = vim.lsp.inline_completion ~= nil
    and vim.lsp.inline_completion.enable ~= nil
    and client:supports_method("textDocument/inlineCompletion")
  if want == "inline" or (want == "auto" and inline) then
    return inline and "inline" or "menu"
  end
  return "menu"
end

local function map(buf, lhs, rhs, desc, opts)
  if lhs and lhs ~= "" then
    vim.keymap.set("i", lhs, rhs, vim.tbl_extend("force", { buffer = buf, desc = desc }, opts or {}))
  end
end

--- Called on LspAttach for codectx clients (plugin/codectx.lua).
function M.on_attach(client, buf)
  local mode = M.completion_mode(client)
  local keys = M.options.keymaps or {}
  vim.b[buf].codectx_completion = mode or "off"
  if mode == "inline" then
    vim.lsp.inline_completion.enable(true, { bufnr = buf, client_id = client.id })
    map(buf, keys.accept, function()
      if not vim.lsp.inline_completion.get() then
        return keys.accept
      end
    end, "codectx: accept the suggestion", { expr = true, replace_keycodes = true })
    map(buf, keys.next, function()
      vim.lsp.inline_completion.select({ count = 1 })
    end, "codectx: next suggestion")
    map(buf, keys.prev, function()
      vim.lsp.inline_completion.select({ count = -1 })
    end, "codectx: previous suggestion")
  elseif mode == "menu" then
    -- Neovim 0.11 has no ghost text: the suggestion is one completion item labelled codectx.
    -- Nothing is inserted until the item is chosen (<C-n>) and accepted (<C-y>).
    local completeopt = vim.opt.completeopt:get()
    for _, want in ipairs({ "menuone", "noselect" }) do
      if not vim.tbl_contains(completeopt, want) then
        vim.opt_local.completeopt:append(want)
      end
    end
    vim.lsp.completion.enable(true, client.id, buf, { autotrigger = false })
    map(buf, keys.trigger, vim.lsp.completion.get, "codectx: ask for a suggestion")
  end
end

-- ---- requests ---------------------------------------------------------------------------------

--- The codectx client for a buffer, or any running one; nil and a message when there is none.
function M.client(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local client = vim.lsp.get_clients({ bufnr = buf, name = NAME })[1] or vim.lsp.get_clients({ name = NAME })[1]
  if not client then
    vim.notify(
      'codectx: no codectx server is running; run vim.lsp.enable("codectx") and open a source file '
        .. "(:checkhealth codectx says more)",
      vim.log.levels.WARN
    )
  end
  return client
end

local function request(method, params, buf, on_result)
  local client = M.client(buf)
  if not client then
    return
  end
  client:request(method, params, function(err, result)
    if err then
      vim.notify("codectx: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
      return
    end
    on_result(result, client)
  end, buf)
end

local function command(name, args, buf, on_result)
  request("workspace/executeCommand", { command = name, arguments = { args or vim.empty_dict() } }, buf, on_result)
end

--- One line per workspace folder, then the backend: what `:Codectx status` prints.
function M.format_status(status, health)
  local lines = {}
  for _, f in ipairs((status or {}).folders or {}) do
    local line = ("%s: %s, %d files, %d chunks, %d vectors"):format(
      f.root,
      f.state,
      f.files or 0,
      f.chunks or 0,
      f.vectors or 0
    )
    if f.error and f.error ~= vim.NIL and f.error ~= "" then
      line = line .. " (" .. tostring(f.error) .. ")"
    end
    table.insert(lines, line)
  end
  if #lines == 0 then
    table.insert(lines, "no workspace folder")
  end
  local backend = (health or {}).backend
  if backend then
    local where = backend.endpoint ~= vim.NIL and backend.endpoint or "no URL"
    local line = ("backend %s: %s"):format(backend.state, where)
    if backend.model and backend.model ~= vim.NIL then
      line = line .. " (" .. backend.model .. ")"
    end
    if backend.error and backend.error ~= vim.NIL then
      line = line .. ": " .. backend.error
    end
    table.insert(lines, line)
  end
  return lines
end

local subcommands = {}

function subcommands.status(_, buf)
  command("codectx.status", nil, buf, function(status, client)
    client:request("codectx/health", vim.empty_dict(), function(_, health)
      vim.notify(table.concat(M.format_status(status, health), "\n"), vim.log.levels.INFO)
    end, buf)
  end)
end

function subcommands.reindex(_, buf)
  command("codectx.reindex", nil, buf, function(result)
    local n = #((result or {}).folders or {})
    vim.notify(("codectx: reindexing %d folder%s (progress: vim.lsp.status())"):format(n, n == 1 and "" or "s"))
  end)
end

function subcommands.search(args, buf)
  local query = table.concat(args, " ")
  if query == "" then
    vim.notify("codectx: :Codectx search needs words to look for", vim.log.levels.ERROR)
    return
  end
  command("codectx.search", { query = query }, buf, function(locations, client)
    local items = vim.lsp.util.locations_to_items(locations or {}, client.offset_encoding)
    vim.fn.setqflist({}, " ", { title = "codectx: " .. query, items = items })
    if #items == 0 then
      vim.notify("codectx: nothing found for " .. query)
    else
      vim.cmd.copen()
    end
  end)
end

--- The context a completion at the cursor would get, as markdown lines.
function M.format_context(result)
  local lines = {
    ("# codectx context for %s:%d:%d"):format(result.path, result.line + 1, result.character + 1),
    "",
  }
  for _, note in ipairs(result.notes or {}) do
    table.insert(lines, "> " .. note)
  end
  for _, item in ipairs(result.items or {}) do
    local symbol = (item.symbol and item.symbol ~= vim.NIL and item.symbol ~= "") and (" " .. item.symbol) or ""
    table.insert(
      lines,
      ("## %s:%d-%d%s (%s, %d tokens)"):format(
        item.path,
        item.start_line + 1,
        item.end_line + 1,
        symbol,
        item.reason,
        item.tokens or 0
      )
    )
    table.insert(lines, "```")
    vim.list_extend(lines, vim.split(item.text or "", "\n", { plain = true }))
    table.insert(lines, "```")
  end
  if #(result.items or {}) == 0 then
    table.insert(lines, "(no items from other files)")
  end
  return lines
end

function subcommands.context(_, buf)
  local win = vim.api.nvim_get_current_win()
  local client = M.client(buf)
  if not client then
    return
  end
  local pos = vim.lsp.util.make_position_params(win, client.offset_encoding)
  local params = { uri = pos.textDocument.uri, position = pos.position }
  request("codectx/context", params, buf, function(result)
    local out = vim.api.nvim_create_buf(false, true)
    vim.bo[out].bufhidden = "wipe"
    vim.bo[out].filetype = "markdown"
    vim.api.nvim_buf_set_lines(out, 0, -1, false, M.format_context(result))
    vim.bo[out].modifiable = false
    vim.api.nvim_buf_set_name(out, "codectx://context/" .. out)
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, out)
  end)
end

M.subcommands = subcommands

--- :Codectx {status|reindex|search|context} [args]
function M.command(opts)
  local name = opts.fargs[1]
  local run = name and subcommands[name]
  if not run then
    vim.notify("codectx: usage: :Codectx status|reindex|search WORDS|context", vim.log.levels.ERROR)
    return
  end
  run(vim.list_slice(opts.fargs, 2), vim.api.nvim_get_current_buf())
end

function M.complete(arg_lead, line)
  if line:match("^%s*%S+%s+%S+%s") then
    return {}
  end
  local names = vim.tbl_keys(subcommands)
  table.sort(names)
  return vim.tbl_filter(function(n)
    return n:find(arg_lead, 1, true) == 1
  end, names)
end

return M
