-- codectx plugin entry: the :Codectx and :CodectxChat commands and what happens when the codectx server attaches.
-- Loading is cheap: lua/codectx is required only when a command runs or the server attaches.
-- The server itself starts only once the user enables it: vim.lsp.enable("codectx") or
-- require("codectx").setup({...}).
if vim.g.loaded_codectx then
  return
end
vim.g.loaded_codectx = true

if vim.fn.has("nvim-0.11") == 0 then
  vim.notify("codectx: needs Neovim 0.11 or newer", vim.log.levels.WARN)
  return
end

vim.api.nvim_create_user_command("Codectx", function(opts)
  require("codectx").command(opts)
end, {
  nargs = "+",
  desc = "codectx: status | reindex | search WORDS | context",
  complete = function(arg_lead, line)
    return require("codectx").complete(arg_lead, line)
  end,
})

vim.api.nvim_create_user_command("CodectxChat", function(opts)
  require("codectx.chat").command(opts)
end, {
  nargs = "*",
  range = true,
  desc = "codectx chat: open it, or ask QUESTION; new | list | delete | export | stop | apply | accept | reject | context",
  complete = function(arg_lead, line)
    return require("codectx.chat").complete(arg_lead, line)
  end,
})

vim.api.nvim_create_user_command("CodectxChatStop", function()
  require("codectx.chat").stop()
end, { desc = "codectx chat: stop the answer that is streaming" })

vim.api.nvim_create_autocmd("LspAttach", {
  group = vim.api.nvim_create_augroup("codectx", { clear = true }),
  callback = function(args)
    local client = vim.lsp.get_client_by_id(args.data.client_id)
    if client and client.name == "codectx" then
      require("codectx").on_attach(client, args.buf)
    end
  end,
})

-- Loaded late (a lazy-loading plugin manager)? Set up the buffers a codectx server already serves.
for _, client in ipairs(vim.lsp.get_clients({ name = "codectx" })) do
  for buf in pairs(client.attached_buffers) do
    require("codectx").on_attach(client, buf)
  end
end
