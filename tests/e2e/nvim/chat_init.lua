-- Headless Neovim harness for :CodectxChat (lua/codectx/chat.lua), driven by tests/e2e/test_nvim_chat.py.
--
-- Loads the plugin from the repository root as a plugin manager would, points the server at the test's
-- command, opens a fixture file and plays the chat: a question whose answer streams in, the citations
-- in the quickfix list, @-mention completion, a refused @file .env, applying a code block (reject, then accept, after the
-- diff), stopping a long answer, a new conversation, resuming the first one through vim.ui.select,
-- export and the context sent. Everything observed goes into one JSON file.
-- Environment: CODECTX_NVIM_PLUGIN_ROOT, CODECTX_NVIM_CMD (JSON list), CODECTX_NVIM_INIT (JSON settings),
-- CODECTX_NVIM_FILE, CODECTX_NVIM_OUT, CODECTX_CHAT_QUESTIONS (JSON {question, long, refused, note}).
-- The scenario runs in a coroutine; `wait` yields to Neovim's loop until a condition holds.

local env = vim.env
vim.opt.runtimepath:prepend(env.CODECTX_NVIM_PLUGIN_ROOT)

local Q = vim.json.decode(env.CODECTX_CHAT_QUESTIONS)
local out = { notes = {}, deltas = 0 }
local events = {}

vim.notify = function(msg, level)
  table.insert(out.notes, { msg = msg, level = level or vim.log.levels.INFO })
end

local function finish(ok, reason)
  if out.done then
    return
  end
  out.done = true
  out.ok = ok
  out.reason = reason
  local f = assert(io.open(env.CODECTX_NVIM_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
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
  finish(false, "watchdog: the chat scenario did not finish in time")
end, tonumber(env.CODECTX_NVIM_TIMEOUT_MS or "150000"))

local function wait(cond, timeout_ms, what)
  local co = coroutine.running()
  local deadline = vim.uv.now() + timeout_ms
  local function tick()
    local ok, value = pcall(cond)
    if ok and value then
      coroutine.resume(co, value)
    elseif vim.uv.now() > deadline then
      finish(false, "timed out waiting for " .. what .. (ok and "" or (": " .. tostring(value))))
    else
      vim.defer_fn(tick, 20)
    end
  end
  vim.schedule(tick)
  return coroutine.yield()
end

for _, name in ipairs({ "CodectxChatAnswered", "CodectxChatProposal", "CodectxChatResumed" }) do
  events[name] = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = name,
    callback = function()
      events[name] = events[name] + 1
    end,
  })
end

local function after(name, n)
  return function()
    return events[name] > n
  end
end

local chat -- require("codectx.chat"), once the scenario starts
local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local function ask(question)
  local n = events.CodectxChatAnswered
  vim.cmd("CodectxChat " .. question)
  wait(after("CodectxChatAnswered", n), 60000, "the answer to " .. question)
end

local function find_line(buf, needle, from)
  for i, line in ipairs(lines(buf)) do
    if i > (from or 0) and line:find(needle, 1, true) then
      return i
    end
  end
end

local function scenario(buf, client)
  chat = require("codectx.chat")
  out.client_root = client.root_dir
  -- Count the deltas as they arrive, and every state of the answer buffer while it streams.
  local on_delta = vim.lsp.handlers["codectx/chat/delta"]
  vim.lsp.handlers["codectx/chat/delta"] = function(err, params, ctx)
    out.deltas = out.deltas + 1
    on_delta(err, params, ctx)
  end

  -- 1. A question: the answer streams in, citations land in the quickfix list.
  local n = events.CodectxChatAnswered
  vim.cmd("CodectxChat " .. Q.question)
  local answer = chat._state.answer_buf
  out.snapshots = {}
  vim.api.nvim_buf_attach(answer, false, {
    on_lines = function(_, b)
      local all = vim.api.nvim_buf_get_lines(b, 0, -1, false)
      table.insert(out.snapshots, #table.concat(all, "\n"))
    end,
  })
  wait(after("CodectxChatAnswered", n), 60000, "the first answer")
  out.first_answer = lines(answer)
  local answer_win = vim.fn.win_findbuf(answer)[1]
  local input_win = vim.fn.win_findbuf(chat._state.input_buf)[1]
  out.layout = {
    answer_row = vim.api.nvim_win_get_position(answer_win)[1],
    input_row = vim.api.nvim_win_get_position(input_win)[1],
    same_col = vim.api.nvim_win_get_position(answer_win)[2] == vim.api.nvim_win_get_position(input_win)[2],
    answer_filetype = vim.bo[answer].filetype,
  }
  local qf = vim.fn.getqflist({ title = 1, items = 1 })
  out.qf_title = qf.title
  out.qf = {}
  for _, item in ipairs(qf.items) do
    table.insert(out.qf, { file = vim.api.nvim_buf_get_name(item.bufnr), lnum = item.lnum, end_lnum = item.end_lnum })
  end
  out.conversation = chat._state.conversation.conversationId

  -- 1b. @-mention completion in the question buffer (its omnifunc): the kinds, then the server's files.
  vim.api.nvim_set_current_win(input_win)
  out.omnifunc = vim.bo[chat._state.input_buf].omnifunc
  local function words(base)
    local found = {}
    for _, item in ipairs(chat.omnifunc(0, base)) do
      table.insert(found, item.word)
    end
    return found
  end
  out.mention_kinds = words("@")
  out.mention_files = words("@file:calc/o")

  -- 2. A never-send file mentioned with @file: refused, with a notice in the answer and a message.
  ask(Q.refused)
  out.refused_answer = lines(answer)

  -- 3. Apply the code block of the first answer: the diff first; reject leaves the file alone.
  local target_path = vim.fs.joinpath(client.root_dir, Q.block_path)
  local block_row = assert(find_line(answer, Q.note), "no code block line in the answer")
  vim.api.nvim_set_current_win(answer_win)
  vim.api.nvim_win_set_cursor(answer_win, { block_row, 0 })
  n = events.CodectxChatProposal
  vim.cmd("CodectxChat apply")
  wait(after("CodectxChatProposal", n), 30000, "the proposed change")
  local p = chat._state.proposal
  local diff_wins = 0
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(p.tab)) do
    if vim.wo[win].diff then
      diff_wins = diff_wins + 1
    end
  end
  local target = vim.fn.bufnr(target_path)
  out.proposal = { lines = lines(p.buf), diff_windows = diff_wins, target_before = lines(target) }
  vim.cmd("CodectxChat reject")
  out.after_reject = { lines = lines(target), modified = vim.bo[target].modified, tabs = #vim.api.nvim_list_tabpages() }
  -- ... and accept applies it to the buffer (not saved).
  vim.api.nvim_set_current_win(answer_win)
  vim.api.nvim_win_set_cursor(answer_win, { block_row, 0 })
  n = events.CodectxChatProposal
  vim.cmd("CodectxChat apply")
  wait(after("CodectxChatProposal", n), 30000, "the proposed change (again)")
  vim.cmd("CodectxChat accept")
  out.after_accept = { lines = lines(target), modified = vim.bo[target].modified, tabs = #vim.api.nvim_list_tabpages() }

  -- 4. Stop a long answer once some of it has arrived.
  local before = out.deltas
  n = events.CodectxChatAnswered
  vim.cmd("CodectxChat " .. Q.long)
  wait(function()
    return out.deltas >= before + 5
  end, 30000, "the long answer to stream")
  vim.cmd("CodectxChatStop")
  wait(after("CodectxChatAnswered", n), 30000, "the stopped answer")
  out.stopped_answer = lines(answer)

  -- 5. A new conversation, then resume the first through vim.ui.select.
  local first = out.conversation
  vim.cmd("CodectxChat new")
  wait(function()
    return chat._state.conversation.conversationId ~= first
  end, 10000, "a new conversation")
  out.new_conversation = { id = chat._state.conversation.conversationId, lines = lines(answer) }
  vim.ui.select = function(items, opts, on_choice)
    out.select = { prompt = opts.prompt, labels = {} }
    local pick
    for _, item in ipairs(items) do
      table.insert(out.select.labels, opts.format_item(item))
      if item.conversationId == first then
        pick = item
      end
    end
    on_choice(pick)
  end
  n = events.CodectxChatResumed
  vim.cmd("CodectxChat list")
  wait(after("CodectxChatResumed", n), 10000, "the resumed conversation")
  out.resumed = { id = chat._state.conversation.conversationId, lines = lines(answer) }

  -- 6. Export, and the context sent for the first answer.
  local tabs = #vim.api.nvim_list_tabpages()
  vim.cmd("CodectxChat export")
  wait(function()
    return #vim.api.nvim_list_tabpages() > tabs
  end, 10000, "the export")
  out.export = lines(0)
  vim.cmd.tabclose()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(answer)[1])
  vim.api.nvim_win_set_cursor(0, { assert(find_line(answer, Q.note)), 0 })
  tabs = #vim.api.nvim_list_tabpages()
  vim.cmd("CodectxChat context")
  wait(function()
    return #vim.api.nvim_list_tabpages() > tabs
  end, 10000, "the context sent")
  out.context = lines(0)
  out.events = events
  finish(true)
end

require("codectx").setup({
  cmd = vim.json.decode(env.CODECTX_NVIM_CMD),
  settings = vim.json.decode(env.CODECTX_NVIM_INIT or "{}"),
})

vim.api.nvim_create_autocmd("VimEnter", {
  nested = true,
  callback = function()
    vim.cmd.edit(vim.fn.fnameescape(env.CODECTX_NVIM_FILE))
    local buf = vim.api.nvim_get_current_buf()
    local co = coroutine.create(function()
      local ok, err = pcall(function()
        local client = wait(function()
          local c = vim.lsp.get_clients({ bufnr = buf, name = "codectx" })[1]
          return c and c.initialized and c
        end, 30000, "the codectx client to attach")
        scenario(buf, client)
      end)
      if not ok then
        finish(false, "scenario error: " .. tostring(err))
      end
    end)
    coroutine.resume(co)
  end,
})
