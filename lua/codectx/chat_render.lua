-- Pure helpers of the Neovim chat (lua/codectx/chat.lua): how turns, notices and citations are drawn
-- as buffer lines, the quickfix items of citations, which code block a line is in, and the
-- @-mention syntax of docs/chat-protocol.md. No windows, no requests: easy to test.

local M = {}

M.KINDS = { "file", "symbol", "folder", "codebase", "diff", "problems" }
local VALUED = { file = true, symbol = true, folder = true, codebase = true }

local function lines_of(text)
  text = (text or ""):gsub("\n+$", "")
  return vim.split(text, "\n", { plain = true })
end

--- The lines that open a turn: the question, then the heading the answer streams under.
function M.turn_header(question, separate)
  local out = separate and { "" } or {}
  table.insert(out, "## You")
  vim.list_extend(out, lines_of(question))
  vim.list_extend(out, { "", "## codectx" })
  return out
end

function M.notice_line(kind, message)
  return ("> [%s] %s"):format(kind or "note", (message or ""):gsub("\n", " "))
end

local function present(v)
  return v ~= nil and v ~= vim.NIL and v ~= ""
end

function M.citation_label(c)
  local symbol = present(c.symbol) and (" " .. c.symbol) or ""
  return ("%s:%d-%d%s (%s)"):format(c.path, c.startLine + 1, c.endLine + 1, symbol, c.reason or "")
end

-- A turn's search sends up to a hundred hits, most cut to a few lines: the answer lists every other
-- citation and the first few search hits, then how many more there are (the quickfix list has all).
M.LISTED_SEARCH_HITS = 5

--- A finished answer: its text, [stopped] when cancelled, then the citations.
function M.answer_lines(text, cancelled, citations)
  local out = (text or "") == "" and {} or lines_of(text)
  if cancelled == true then
    table.insert(out, "> [stopped]")
  end
  if #citations > 0 then
    vim.list_extend(out, { "", "Citations:" })
    local searched, more = 0, 0
    for _, c in ipairs(citations) do
      searched = searched + (c.reason == "search" and 1 or 0)
      if c.reason == "search" and searched > M.LISTED_SEARCH_HITS then
        more = more + 1
      else
        table.insert(out, "- " .. M.citation_label(c))
      end
    end
    if more > 0 then
      local line = "- ... and %d more search hits (their matching lines; all in the quickfix list)"
      table.insert(out, line:format(more))
    end
  end
  if #out == 0 then
    out = { "(no answer)" }
  end
  return out
end

function M.quickfix_items(citations)
  local items = {}
  for _, c in ipairs(citations) do
    table.insert(items, {
      filename = vim.uri_to_fname(c.uri),
      lnum = c.startLine + 1,
      end_lnum = c.endLine + 1,
      col = 1,
      text = (present(c.symbol) and (c.symbol .. ": ") or "") .. (c.reason or ""),
    })
  end
  return items
end

--- The 0-based index of the fenced block that line `row` (0-based, of `lines`) is in, or nil.
function M.block_at(lines, row)
  local index, open, fence = -1, false, nil
  for i, line in ipairs(lines) do
    local marker = line:match("^%s*(```+)") or line:match("^%s*(~~~+)")
    local here = i - 1
    if not open and marker then
      open, fence, index = true, marker, index + 1
      if here == row then
        return index
      end
    elseif open then
      if here == row then
        return index
      end
      if marker and marker:sub(1, 1) == fence:sub(1, 1) and #marker >= #fence and line:match("^%s*[`~]+%s*$") then
        open = false
      end
    end
  end
  return nil
end

--- Mentions written in `text` (the protocol's syntax), for the structured `mentions` field.
function M.parse_mentions(text)
  local found = {}
  local i = 1
  while true do
    local s, e, kind = text:find("@(%a+)", i)
    if not s then
      break
    end
    local before = s == 1 and "" or text:sub(s - 1, s - 1)
    i = e + 1
    if (before == "" or before:match("[%s(]")) and vim.tbl_contains(M.KINDS, kind) then
      if text:sub(e + 1, e + 1) == ":" and VALUED[kind] then
        local rest = text:sub(e + 2)
        local value
        if kind == "codebase" then
          value = vim.trim(rest:match("^[^\n]*"))
        elseif rest:sub(1, 1) == '"' then
          value = rest:match('^"([^"]*)"') or rest:sub(2)
        else
          value = rest:match("^%S*")
        end
        table.insert(found, { kind = kind, value = value })
      elseif not text:sub(e + 1, e + 1):match("[%w_:]") then
        table.insert(found, { kind = kind })
      end
    end
  end
  return found
end

--- Neovim diagnostics in the LSP shape the protocol sends with @problems.
function M.lsp_diagnostics(diagnostics)
  local out = {}
  for _, d in ipairs(diagnostics) do
    table.insert(out, {
      range = {
        start = { line = d.lnum, character = d.col },
        ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
      },
      severity = d.severity,
      message = d.message,
      source = d.source,
    })
  end
  return out
end

function M.conversation_label(c)
  local when = (c.updatedAt or ""):gsub("T", " "):sub(1, 16)
  return ("%s  (%d question%s, %s)"):format(c.title, c.turns or 0, c.turns == 1 and "" or "s", when)
end

--- The context sent for a turn (the codectx.showContext record) as markdown lines.
function M.context_lines(record)
  local out = { "# codectx: context sent for " .. (record.id or "this turn"), "" }
  if present(record.endpoint) then
    table.insert(out, "- Sent to: " .. record.endpoint)
  end
  if present(record.sha256) then
    table.insert(out, "- Payload SHA-256: " .. record.sha256)
  end
  table.insert(out, "")
  table.insert(out, ("## Context items (%d)"):format(#(record.items or {})))
  for _, item in ipairs(record.items or {}) do
    local symbol = present(item.symbol) and (" " .. item.symbol) or ""
    table.insert(out, ("- %s:%d-%d%s (%s)"):format(item.path, item.start_line + 1, item.end_line + 1, symbol, item.reason or ""))
  end
  vim.list_extend(out, { "", "## Exact payload", "", "````" })
  vim.list_extend(out, vim.split(record.payload or "", "\n", { plain = true }))
  table.insert(out, "````")
  return out
end

--- Omni completion's start: the 0-based column of the `@` of the mention the cursor is in, or nil.
function M.mention_start(line, col)
  local before = line:sub(1, col)
  local s = before:find('@[%w_]*:?"?[^%s"]*$')
  if not s then
    return nil
  end
  if s > 1 and not before:sub(s - 1, s - 1):match("[%s(]") then
    return nil
  end
  return s - 1
end

--- "@file:ca" -> "file", "ca"; "@ca" -> nil, "ca".
function M.split_mention(base)
  local kind, query = base:match("^@(%a+):\"?(.*)$")
  if kind and vim.tbl_contains(M.KINDS, kind) then
    return kind, query
  end
  return nil, (base:gsub("^@", ""))
end

local function mention_word(kind, value)
  if not VALUED[kind] then
    return "@" .. kind
  end
  if value:find("%s") and kind ~= "codebase" then
    return ("@%s:\"%s\""):format(kind, value)
  end
  return ("@%s:%s"):format(kind, value)
end
M.mention_word = mention_word

--- complete-items for the server's MentionItems; with no kind typed yet, the kinds come first.
function M.completion_items(items, kind)
  local out = {}
  if not kind then
    for _, k in ipairs(M.KINDS) do
      table.insert(out, { word = VALUED[k] and ("@" .. k .. ":") or ("@" .. k), abbr = "@" .. k, menu = "kind" })
    end
  end
  for _, item in ipairs(items) do
    table.insert(out, {
      word = mention_word(item.kind, item.value),
      abbr = item.label,
      menu = present(item.detail) and item.detail or item.kind,
    })
  end
  return out
end

return M
