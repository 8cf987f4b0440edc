-- :checkhealth codectx: the server command, its version, and what the running server reports
-- through its `codectx/health` request (index state, model server reachable).

local M = {}

local health = vim.health

--- The configured server command (lsp/codectx.lua merged with the user's vim.lsp.config).
local function server_cmd()
  local config = vim.lsp.config.codectx
  return config and config.cmd
end

--- The server command up to its `lsp` argument: the codectx CLI, for `--version`.
local function cli_of(cmd)
  local last = #cmd + 1
  for i, arg in ipairs(cmd) do
    if arg == "lsp" then
      last = i
    end
  end
  return vim.list_slice(cmd, 1, last - 1)
end

local function check_command()
  local cmd = server_cmd()
  if type(cmd) ~= "table" or not cmd[1] then
    health.error("no command for the codectx server", {
      'Install this plugin so that lsp/codectx.lua is on the runtimepath, or set vim.lsp.config("codectx", { cmd = {...} })',
    })
    return
  end
  local exe = vim.fn.exepath(cmd[1])
  if exe == "" then
    health.error(("server command not found: %s"):format(cmd[1]), {
      "Install codectx from a checkout (it is not on PyPI yet): pipx install ./codectx (or uv tool install ./codectx)",
      'Or point the plugin at it: require("codectx").setup({ cmd = { "/path/to/codectx", "lsp" } })',
    })
    return
  end
  health.ok(("server command: %s (%s)"):format(table.concat(cmd, " "), exe))
  local cli = cli_of(cmd)
  table.insert(cli, "--version")
  local ok, proc = pcall(vim.system, cli, { text = true })
  local res = ok and proc:wait(20000) or nil
  local version = res and res.code == 0 and vim.trim(res.stdout or "") or ""
  if version:match("^codectx ") then
    health.ok("version: " .. version)
  else
    health.error(
      ("`%s` did not report a codectx version"):format(table.concat(cli, " ")),
      { "Is another program called codectx first on PATH? `codectx` on PyPI is an unrelated project; install this one from a checkout." }
    )
  end
end

local function backend_line(b)
  local where = (b.endpoint and b.endpoint ~= vim.NIL) and b.endpoint or "no URL configured"
  local model = (b.model and b.model ~= vim.NIL) and (", model " .. b.model) or ""
  local latency = (b.latency_ms and b.latency_ms ~= vim.NIL) and (", %d ms"):format(b.latency_ms) or ""
  return ("model server %s (%s%s%s)"):format(b.state, where, model, latency)
end

local function check_client(client)
  health.info(("client %d, root %s"):format(client.id, client.root_dir or "(none)"))
  local info = client.server_info or {}
  if info.version then
    health.ok(("server %s %s is running"):format(info.name or "codectx", info.version))
  end
  local reply, err = client:request_sync("codectx/health", { probe = true }, 20000)
  if not reply then
    health.error("no answer to codectx/health: " .. tostring(err))
    return
  end
  if reply.err then
    health.error("codectx/health failed: " .. (reply.err.message or vim.inspect(reply.err)))
    return
  end
  local index, backend = reply.result.index or {}, reply.result.backend or {}
  local index_line = ("index %s: %d files, %d chunks, %d vectors pending"):format(
    index.state or "?",
    index.files or 0,
    index.chunks or 0,
    index.vectors_pending or 0
  )
  local near = index.near_open_files
  if type(near) == "table" and (index.vectors_pending or 0) > 0 then
    local owed = math.max(0, (near.vectors_total or 0) - (near.vectors or 0))
    index_line = index_line
      .. (owed > 0 and (" (%d near the open files)"):format(owed) or " (the open files' neighbourhood is done)")
  end
  if index.state == "ready" or index.state == "indexing" then
    health.ok(index_line)
  elseif index.state == "error" then
    health.error(index_line, { ":Codectx status says which folder failed; :Codectx reindex tries again" })
  else
    health.warn(index_line, { ":Codectx reindex builds it" })
  end
  if backend.state == "ok" then
    health.ok(backend_line(backend))
  elseif backend.state == "disabled" or backend.state == "unknown" then
    health.warn(backend_line(backend), {
      'Set the model server: require("codectx").setup({ settings = { backend = { url = "http://HOST:8000/v1" } } })',
    })
  else
    local line = backend_line(backend)
    if backend.error and backend.error ~= vim.NIL then
      line = line .. ": " .. backend.error
    end
    health.error(line, { "Is the model server running? `codectx backend check` asks it from the shell" })
  end
end

function M.check()
  health.start("codectx")
  if vim.fn.has("nvim-0.11") == 0 then
    health.error("Neovim 0.11 or newer is needed")
    return
  end
  if vim.lsp.inline_completion and vim.lsp.inline_completion.enable then
    health.ok("suggestions: ghost text (vim.lsp.inline_completion)")
  else
    health.ok("suggestions: a completion item labelled codectx (this Neovim has no inline completion)")
  end
  check_command()
  local clients = vim.lsp.get_clients({ name = "codectx" })
  if #clients == 0 then
    health.warn("no codectx server is running in this session", {
      'Enable it with vim.lsp.enable("codectx") (or require("codectx").setup()), then open a source file',
    })
    return
  end
  for _, client in ipairs(clients) do
    check_client(client)
  end
end

return M
