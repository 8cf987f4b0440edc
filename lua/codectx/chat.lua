-- codectx chat for Neovim: :CodectxChat opens a chat buffer (the answer streams in above, the question
-- is typed below), sends turns to the codectx server and shows its citations as a quickfix list.
--
-- The protocol is docs/chat-protocol.md: `codectx/chat/*` requests, `codectx/chat/delta` and
-- `codectx/chat/notice` notifications. Rendering (pure functions on lines) is in
-- lua/codectx/chat_render.lua; this module holds the state, the windows and the requests.

local render = require("codectx.chat_render")

local M = {}

local ANSWER_NAME = "codectx://chat"
local INPUT_NAME = "codectx://chat-input"
local PROPOSAL_PREFIX = "codectx://proposal/"

--- One chat per Neovim: the conversation shown, the turn streaming, where each turn is drawn.
local state = {
  conversation = nil, -- Conversation (see the protocol)
  running = nil, -- { request_id, client, question, answer_start, text, notices, turn_id }
  turns = {}, -- { turn_id, first, last, blocks, citations } per assistant turn, in buffer order
  answer_buf = nil,
  input_buf = nil,
  source_win = nil, -- the window the user came from: its file is the chat's implicit context
  proposal = nil, -- { buf, tab, target_buf, tick, edit, client }
}
M._state = state

local function notify(msg, level)
  vim.notify("codectx: " .. msg, level or vim.log.levels.INFO)
end

local function client_or_nil()
  return require("codectx").client(vim.api.nvim_get_current_buf())
end

--- Send a request; errors become one message (with a hint when the server has no chat at all).
local function request(client, method, params, on_result)
  local ok, id = client:request(method, params, function(err, result)
    if err then
      if err.code == -32601 then
        notify("this codectx server has no chat (" .. method .. " is unknown); update codectx", vim.log.levels.ERROR)
      else
        notify(err.message or tostring(err), vim.log.levels.ERROR)
      end
      if on_result then
        on_result(nil, err)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end)
  return ok and id or nil
end

-- ---- windows ------------------------------------------------------------------------------------

local function valid(buf)
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function scratch(name, filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = filetype
  vim.api.nvim_buf_set_name(buf, name)
  return buf
end

local function set_answer_lines(first, last, lines)
  local buf = state.answer_buf
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
end

local function follow_end()
  for _, win in ipairs(vim.fn.win_findbuf(state.answer_buf)) do
    vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(state.answer_buf), 0 })
  end
end

local function ensure_buffers()
  if not valid(state.answer_buf) then
    state.answer_buf = scratch(ANSWER_NAME, "markdown")
    vim.bo[state.answer_buf].modifiable = false
    local map = function(lhs, fn, desc)
      vim.keymap.set("n", lhs, fn, { buffer = state.answer_buf, desc = "codectx chat: " .. desc })
    end
    map("ga", M.apply_at_cursor, "apply the code block under the cursor (shows the diff first)")
    map("gs", M.context_at_cursor, "show the context sent for the turn under the cursor")
    map("<C-c>", M.stop, "stop the answer")
    map("i", M.focus_input, "type a question")
  end
  if not valid(state.input_buf) then
    state.input_buf = scratch(INPUT_NAME, "markdown")
    vim.bo[state.input_buf].omnifunc = "v:lua.require'codectx.chat'.omnifunc"
    vim.keymap.set("n", "<CR>", M.send_input, { buffer = state.input_buf, desc = "codectx chat: send" })
    vim.keymap.set("i", "<C-s>", M.send_input, { buffer = state.input_buf, desc = "codectx chat: send" })
    vim.keymap.set({ "n", "i" }, "<C-c>", M.stop, { buffer = state.input_buf, desc = "codectx chat: stop" })
  end
end

--- Show the chat: a vertical split on the right, the answer above and a small question window below.
function M.open()
  local cur = vim.api.nvim_get_current_win()
  local cur_buf = vim.api.nvim_win_get_buf(cur)
  if cur_buf ~= state.answer_buf and cur_buf ~= state.input_buf then
    state.source_win = cur
  end
  ensure_buffers()
  if #vim.fn.win_findbuf(state.answer_buf) == 0 then
    vim.cmd("botright vsplit")
    vim.api.nvim_win_set_buf(0, state.answer_buf)
    vim.wo.wrap = true
    vim.wo.linebreak = true
    vim.wo.number = false
    vim.wo.winbar = "codectx chat  (ga apply block · gs context sent · <C-c> stop)"
  end
  if #vim.fn.win_findbuf(state.input_buf) == 0 then
    vim.api.nvim_set_current_win(vim.fn.win_findbuf(state.answer_buf)[1])
    vim.cmd("belowright 5split")
    vim.api.nvim_win_set_buf(0, state.input_buf)
    vim.wo.winbar = "question  (<CR> send · <C-s> in insert mode · @file: @symbol: @codebase: …)"
    vim.wo.winfixheight = true
  end
end

function M.focus_input()
  M.open()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(state.input_buf)[1])
end

--- The file the question is about: the source window's buffer, if it is a real file.
local function source_context(client)
  local win = state.source_win
  if not (win and vim.api.nvim_win_is_valid(win)) then
    return {}
  end
  local buf = vim.api.nvim_win_get_buf(win)
  if vim.bo[buf].buftype ~= "" or vim.api.nvim_buf_get_name(buf) == "" then
    return {}
  end
  local pos = vim.lsp.util.make_position_params(win, client.offset_encoding)
  local ctx = { uri = pos.textDocument.uri, position = pos.position, buf = buf }
  local sel = state.selection
  state.selection = nil
  if sel and sel.buf == buf then
    -- :'<,'>CodectxChat: the selected lines, whole.
    ctx.selection = { start = { line = sel.line1 - 1, character = 0 }, ["end"] = { line = sel.line2, character = 0 } }
  end
  return ctx
end

-- ---- turns --------------------------------------------------------------------------------------

local function line_count()
  return vim.api.nvim_buf_line_count(state.answer_buf)
end

local function buffer_is_empty()
  local lines = vim.api.nvim_buf_get_lines(state.answer_buf, 0, -1, false)
  return #lines == 1 and lines[1] == ""
end

--- Append lines at the end of the answer buffer (the first write replaces the empty line).
local function append(lines)
  if buffer_is_empty() then
    set_answer_lines(0, -1, lines)
  else
    set_answer_lines(line_count(), line_count(), lines)
  end
end

local function send_now(client, question)
  local ctx = source_context(client)
  local params = {
    conversationId = state.conversation.conversationId,
    message = question,
    uri = ctx.uri,
    position = ctx.position,
    selection = ctx.selection,
    mentions = render.parse_mentions(question),
  }
  if question:find("@problems") and ctx.buf then
    params.diagnostics = render.lsp_diagnostics(vim.diagnostic.get(ctx.buf))
  end
  append(render.turn_header(question, not buffer_is_empty()))
  local run = { client = client, question = question, answer_start = line_count(), text = "", notices = {} }
  append({ "" })
  state.running = run
  run.request_id = request(client, "codectx/chat/send", params, function(result)
    M._finish(run, result)
  end)
  if not run.request_id then
    state.running = nil
    notify("the codectx server did not take the request", vim.log.levels.ERROR)
  end
end

--- Ask `question` in the current conversation (starting one first if there is none).
function M.send(question)
  question = vim.trim(question or "")
  if question == "" then
    notify("type a question first", vim.log.levels.WARN)
    return
  end
  if state.running then
    notify("an answer is still streaming: :CodectxChatStop first", vim.log.levels.WARN)
    return
  end
  local client = client_or_nil()
  if not client then
    return
  end
  M.open()
  if state.conversation then
    send_now(client, question)
    return
  end
  request(client, "codectx/chat/start", { title = question:sub(1, 60) }, function(conversation)
    if conversation then
      state.conversation = conversation
      send_now(client, question)
    end
  end)
end

function M.send_input()
  if not valid(state.input_buf) then
    return
  end
  local text = table.concat(vim.api.nvim_buf_get_lines(state.input_buf, 0, -1, false), "\n")
  if vim.trim(text) == "" then
    return
  end
  vim.api.nvim_buf_set_lines(state.input_buf, 0, -1, false, {})
  vim.cmd.stopinsert()
  M.send(text)
end

--- codectx/chat/delta: append the text to the streaming turn.
function M._on_delta(params)
  local run = state.running
  if not (run and state.conversation and params.conversationId == state.conversation.conversationId) then
    return
  end
  if run.turn_id and params.turnId ~= run.turn_id then
    return -- a finished turn's late delta
  end
  run.turn_id = params.turnId
  run.text = run.text .. (params.text or "")
  -- Only the last line changes: rewrite it and add what the delta's newlines start.
  local pieces = vim.split(params.text or "", "\n", { plain = true })
  local last = line_count() - 1
  local tail = vim.api.nvim_buf_get_lines(state.answer_buf, last, last + 1, false)[1] or ""
  pieces[1] = tail .. pieces[1]
  set_answer_lines(last, last + 1, pieces)
  follow_end()
end

--- codectx/chat/notice: a line above the streaming answer (and a message for refusals).
function M._on_notice(params)
  if not (state.conversation and params.conversationId == state.conversation.conversationId) then
    return
  end
  local line = render.notice_line(params.kind, params.message)
  local run = state.running
  if run then
    table.insert(run.notices, params.message)
    set_answer_lines(run.answer_start, run.answer_start, { line })
    run.answer_start = run.answer_start + 1
  else
    append({ line })
  end
  local level = (params.kind == "refused" or params.kind == "error") and vim.log.levels.WARN or vim.log.levels.INFO
  notify(params.message, level)
end

local function set_citations(question, citations)
  local items = render.quickfix_items(citations)
  vim.fn.setqflist({}, " ", { title = "codectx chat: " .. question, items = items })
end

--- The send's result: the authoritative text, [stopped], the citations (also to the quickfix list).
function M._finish(run, result)
  if state.running == run then
    state.running = nil
  end
  if not valid(state.answer_buf) then
    return
  end
  if not result then
    set_answer_lines(run.answer_start, -1, { "> [error] no answer (see :messages)" })
    return
  end
  local lines = render.answer_lines(result.text or run.text, result.cancelled, result.citations or {})
  set_answer_lines(run.answer_start, -1, lines)
  table.insert(state.turns, {
    turn_id = result.turnId,
    first = run.answer_start,
    last = line_count() - 1,
    blocks = result.blocks or {},
    citations = result.citations or {},
  })
  follow_end()
  local n = #(result.citations or {})
  local done = result.cancelled and "stopped" or "answered"
  if n > 0 then
    -- The quickfix list holds the last turn that cited something; a turn without citations keeps it.
    set_citations(run.question, result.citations)
    notify(("%s: %d citation%s in the quickfix list (:copen)"):format(done, n, n == 1 and "" or "s"))
  else
    notify(done .. ": no citations")
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "CodectxChatAnswered", modeline = false })
end

--- Stop the streaming answer: the server closes the model stream and answers with what came so far.
function M.stop()
  local run = state.running
  if not run then
    notify("nothing is streaming")
    return
  end
  request(run.client, "codectx/chat/cancel", { conversationId = state.conversation.conversationId })
end

-- ---- conversations ------------------------------------------------------------------------------

local function reset_view()
  state.turns = {}
  if valid(state.answer_buf) then
    set_answer_lines(0, -1, {})
  end
end

function M.new()
  if state.running then
    M.stop()
  end
  local client = client_or_nil()
  if not client then
    return
  end
  request(client, "codectx/chat/start", vim.empty_dict(), function(conversation)
    if conversation then
      state.conversation = conversation
      M.open()
      reset_view()
      notify("new conversation")
    end
  end)
end

--- Show a saved conversation and continue it.
function M.resume(conversation_id)
  local client = client_or_nil()
  if not client then
    return
  end
  request(client, "codectx/chat/get", { conversationId = conversation_id }, function(result)
    if not result then
      return
    end
    state.conversation = result.conversation
    M.open()
    reset_view()
    for _, turn in ipairs(result.turns or {}) do
      if turn.role == "user" then
        append(render.turn_header(turn.text, not buffer_is_empty()))
      else
        local first = line_count()
        local notes = {}
        for _, message in ipairs(turn.notices or {}) do
          table.insert(notes, render.notice_line("note", message))
        end
        local lines = vim.list_extend(notes, render.answer_lines(turn.text, turn.cancelled, turn.citations or {}))
        append(lines)
        table.insert(state.turns, {
          turn_id = turn.turnId,
          first = first,
          last = line_count() - 1,
          blocks = turn.blocks or {},
          citations = turn.citations or {},
        })
      end
    end
    follow_end()
    vim.api.nvim_exec_autocmds("User", { pattern = "CodectxChatResumed", modeline = false })
  end)
end

--- Pick a saved conversation (vim.ui.select) and `then_fn(conversation)` it.
local function pick(prompt, then_fn)
  local client = client_or_nil()
  if not client then
    return
  end
  request(client, "codectx/chat/list", vim.empty_dict(), function(result)
    local conversations = (result or {}).conversations or {}
    if #conversations == 0 then
      notify("no saved conversations")
      return
    end
    vim.ui.select(conversations, { prompt = prompt, format_item = render.conversation_label }, function(choice)
      if choice then
        then_fn(choice)
      end
    end)
  end)
end

function M.list()
  pick("codectx: resume a conversation", function(c)
    M.resume(c.conversationId)
  end)
end

function M.delete()
  pick("codectx: delete a conversation", function(c)
    local client = client_or_nil()
    if not client then
      return
    end
    request(client, "codectx/chat/delete", { conversationId = c.conversationId }, function(result)
      if result and result.deleted then
        notify("deleted " .. c.title)
        if state.conversation and state.conversation.conversationId == c.conversationId then
          state.conversation = nil
          reset_view()
        end
      end
    end)
  end)
end

local function show_markdown(name, lines)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].filetype = "markdown"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_name(buf, name .. "/" .. buf)
  vim.cmd("tab split")
  vim.api.nvim_win_set_buf(0, buf)
end

function M.export()
  local client = client_or_nil()
  if not (client and state.conversation) then
    notify("no conversation to export", vim.log.levels.WARN)
    return
  end
  request(client, "codectx/chat/export", { conversationId = state.conversation.conversationId }, function(result)
    if result then
      show_markdown("codectx://chat-export", vim.split(result.markdown or "", "\n", { plain = true }))
    end
  end)
end

--- The assistant turn drawn at buffer line `row` (0-based).
local function turn_at(row)
  for _, turn in ipairs(state.turns) do
    if row >= turn.first and row <= turn.last then
      return turn
    end
  end
end

local function cursor_turn()
  if vim.api.nvim_get_current_buf() ~= state.answer_buf then
    notify("put the cursor in the chat's answer first", vim.log.levels.WARN)
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local turn = turn_at(row)
  if not turn then
    notify("the cursor is not in an answer", vim.log.levels.WARN)
  end
  return turn, row
end

function M.context_at_cursor()
  local turn = cursor_turn()
  local client = client_or_nil()
  if not (turn and client) then
    return
  end
  request(
    client,
    "codectx/chat/context",
    { conversationId = state.conversation.conversationId, turnId = turn.turn_id },
    function(record)
      if record then
        show_markdown("codectx://chat-context", render.context_lines(record))
      end
    end
  )
end

-- ---- apply a code block ------------------------------------------------------------------------

--- A path part that names the repository's `.git` folder on some file system, as the server's
--- `policy.is_dot_git` reads it: any letter case, trailing dots and spaces (Windows), an NTFS stream
--- (`.git::$INDEX_ALLOCATION`), code points HFS+ ignores (`.g<U+200C>it`), NTFS's short name (`GIT~1`).
local function is_git_part(part)
  local bare = part
    :gsub("\226\128[\140-\143]", "") -- U+200C..U+200F
    :gsub("\226\128[\170-\174]", "") -- U+202A..U+202E
    :gsub("\226\129[\170-\175]", "") -- U+206A..U+206F
    :gsub("\239\187\191", "") -- U+FEFF
    :gsub(":.*$", "")
  local name = bare:gsub("[ .]+$", "")
  name = (name ~= "" and name or part):lower()
  return name == ".git" or name:match("^git~%d+$") ~= nil
end

--- True when a path the answer names has a `.git` part (`.git/config`, `sub/.GIT/hooks/x`): model
--- output must never choose one (git runs the commands its config and hooks name). The server
--- refuses those and never-send files (`.env`, keys...) anyway, with a message that says why.
local function names_git(path)
  for part in path:gmatch("[^/\\]+") do
    if is_git_part(part) then
      return true
    end
  end
  return false
end

--- Where a block goes: the file it names (inside the workspace, not under .git/), else the file the
--- chat is about.
local function target_for(block, client)
  if block.path and block.path ~= vim.NIL and block.path ~= "" and client.root_dir and not names_git(block.path) then
    local path = vim.fs.normalize(vim.fs.joinpath(client.root_dir, block.path))
    if vim.startswith(path, vim.fs.normalize(client.root_dir) .. "/") and vim.uv.fs_stat(path) then
      return path
    end
  end
  local win = state.source_win
  if win and vim.api.nvim_win_is_valid(win) then
    local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
    if name ~= "" and vim.uv.fs_stat(name) then
      return name
    end
  end
end

--- Why a block is not applied at all: its fence names a file under `.git/`. That is model output
--- steering the edit at what git executes, so it is refused rather than proposed for another file.
local function fence_refusal(block)
  if type(block.path) == "string" and names_git(block.path) then
    return ("the code block names %s, under .git/: codectx never applies a block there (git runs the commands its config and hooks name)"):format(
      block.path
    )
  end
end

M._target_for = target_for -- for the tests
M._fence_refusal = fence_refusal

--- Apply the code block under the cursor: ask the server for the edit, show it as a diff, and change
--- the file only on :CodectxChat accept (ga in the proposal), never before.
function M.apply_at_cursor()
  local turn, row = cursor_turn()
  if not turn then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(state.answer_buf, turn.first, turn.last + 1, false)
  local index = render.block_at(lines, row - turn.first)
  local block = index and turn.blocks[index + 1]
  if not block then
    notify("the cursor is not in a code block", vim.log.levels.WARN)
    return
  end
  local client = client_or_nil()
  if not client then
    return
  end
  local refused = fence_refusal(block)
  if refused then
    notify(refused, vim.log.levels.ERROR)
    return
  end
  local path = target_for(block, client)
  if not path then
    notify("which file? open it in a window, then run :CodectxChat apply from the answer", vim.log.levels.WARN)
    return
  end
  local target = vim.fn.bufadd(path)
  vim.fn.bufload(target)
  local tick = vim.b[target].changedtick
  local params = {
    conversationId = state.conversation.conversationId,
    turnId = turn.turn_id,
    blockIndex = block.index,
    uri = vim.uri_from_fname(path),
  }
  request(client, "codectx/chat/applyBlock", params, function(result)
    if result then
      M._show_proposal(client, target, tick, result)
    end
  end)
end

function M._show_proposal(client, target, tick, result)
  M.reject(true)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split((result.newText or ""):gsub("\n$", ""), "\n", { plain = true }))
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = vim.bo[target].filetype
  vim.api.nvim_buf_set_name(buf, PROPOSAL_PREFIX .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(target), ":t"))
  vim.cmd("tab sbuffer " .. target)
  vim.cmd("diffthis")
  vim.cmd("vertical rightbelow sbuffer " .. buf)
  vim.cmd("diffthis")
  vim.wo.winbar = "codectx proposal  (ga accept · q reject)"
  vim.keymap.set("n", "ga", M.accept, { buffer = buf, desc = "codectx: apply this change" })
  vim.keymap.set("n", "q", M.reject, { buffer = buf, desc = "codectx: discard this change" })
  state.proposal = {
    buf = buf,
    tab = vim.api.nvim_get_current_tabpage(),
    target = target,
    tick = tick,
    edit = result.edit,
    client = client,
  }
  for _, warning in ipairs(result.warnings or {}) do
    notify(warning, vim.log.levels.WARN)
  end
  vim.api.nvim_exec_autocmds("User", { pattern = "CodectxChatProposal", modeline = false })
end

local function close_proposal()
  local p = state.proposal
  state.proposal = nil
  if p and vim.api.nvim_tabpage_is_valid(p.tab) then
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(p.tab)) do
      vim.api.nvim_win_call(win, function()
        vim.cmd("diffoff")
      end)
    end
    if #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd.tabclose(vim.api.nvim_tabpage_get_number(p.tab))
    end
  end
  if p and valid(p.buf) then
    vim.api.nvim_buf_delete(p.buf, { force = true })
  end
end

--- Apply the proposal shown (one undo step), unless the file changed since the diff was made.
function M.accept()
  local p = state.proposal
  if not p then
    notify("no proposed change to apply", vim.log.levels.WARN)
    return
  end
  if vim.b[p.target].changedtick ~= p.tick then
    close_proposal()
    notify("the file changed since the diff was made; nothing applied (apply the block again)", vim.log.levels.WARN)
    return
  end
  vim.lsp.util.apply_workspace_edit(p.edit, p.client.offset_encoding)
  close_proposal()
  notify("change applied (u undoes it; :w saves it)")
end

function M.reject(quiet)
  if state.proposal then
    close_proposal()
    if quiet ~= true then
      notify("change discarded")
    end
  end
end

-- ---- @-mention completion (omnifunc of the question buffer) ------------------------------------

function M.omnifunc(findstart, base)
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local at = render.mention_start(line, col)
    return at and at or -3
  end
  local kind, query = render.split_mention(base)
  local client = client_or_nil()
  if not client then
    return {}
  end
  local params = { query = query, kind = kind }
  -- The file the question is about, so the server can rank its neighbours first.
  local win = state.source_win
  if win and vim.api.nvim_win_is_valid(win) then
    local name = vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win))
    if name ~= "" and vim.bo[vim.api.nvim_win_get_buf(win)].buftype == "" then
      params.uri = vim.uri_from_fname(name)
    end
  end
  local reply = client:request_sync("codectx/chat/mentions", params, 2000)
  local items = ((reply or {}).result or {}).items or {}
  return render.completion_items(items, kind)
end

-- ---- :CodectxChat ------------------------------------------------------------------------------

local words = {
  new = M.new,
  list = M.list,
  delete = M.delete,
  export = M.export,
  stop = M.stop,
  apply = M.apply_at_cursor,
  accept = M.accept,
  reject = M.reject,
  context = M.context_at_cursor,
}
M.words = words

--- [range]:CodectxChat [question | new | list | delete | export | stop | apply | accept | reject | context]
function M.command(opts)
  local args = opts.args or ""
  local buf = vim.api.nvim_get_current_buf()
  if (opts.range or 0) > 0 and buf ~= state.answer_buf and buf ~= state.input_buf then
    state.selection = { buf = buf, line1 = opts.line1, line2 = opts.line2 }
  end
  if args == "" then
    M.focus_input()
    return
  end
  local word = words[vim.trim(args)]
  if word then
    word()
  else
    M.send(args)
  end
end

function M.complete(arg_lead, line)
  if line:match("^%s*%S+%s+%S+%s") then
    return {}
  end
  local names = vim.tbl_keys(words)
  table.sort(names)
  return vim.tbl_filter(function(n)
    return n:find(arg_lead, 1, true) == 1
  end, names)
end

vim.lsp.handlers["codectx/chat/delta"] = function(_, params)
  M._on_delta(params)
end
vim.lsp.handlers["codectx/chat/notice"] = function(_, params)
  M._on_notice(params)
end

return M
