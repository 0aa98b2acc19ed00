-- A real-client test: headless Neovim (0.7.2 on Debian 12) with editors/nvim opens train.py in a
-- fixture workspace that holds a trace, waits for ttap's diagnostics, checks their lines and
-- codes, hovers, applies the preferred code action and checks the buffer. Run by CTest:
--   nvim --headless -u NONE -c "luafile tests/editors/nvim_client_test.lua" -- TTAP REPO WORKSPACE
-- Prints "N passed, M failed" and exits non-zero on failure.
local ttap, repo, workspace = unpack(vim.v.argv, #vim.v.argv - 2, #vim.v.argv)
vim.opt.runtimepath:append(repo .. "/editors/nvim")

local passed, failed = 0, 0
local function check(cond, what)
  if cond then
    passed = passed + 1
  else
    failed = failed + 1
    io.stderr:write("FAILED: " .. what .. "\n")
  end
end
local function finish()
  io.stdout:write(string.format("%d passed, %d failed\n", passed, failed))
  vim.cmd(failed == 0 and "qa!" or "cq!")
end

local attached_with
local caps = vim.lsp.protocol.make_client_capabilities()
caps.experimental = { ttap_test_marker = true }
require("ttap").setup({
  cmd = { ttap, "lsp", "--poll-ms=200" },
  on_attach = function(client, bufnr)
    attached_with = client.name
  end,
  capabilities = caps,
})
check(vim.fn.exists(":TtapRescan") == 2 and vim.fn.exists(":TtapSummary") == 2 and vim.fn.exists(":TtapRestart") == 2,
  "the :Ttap commands exist")

-- Root markers: the nearest directory holding any marker wins (not the first marker found
-- anywhere above).
vim.fn.mkdir(workspace .. "/sub/pkg/.git", "p")
vim.fn.writefile({ "[tool.ttap]" }, workspace .. "/pyproject.toml")
check(require("ttap").find_root(workspace .. "/sub/pkg/x.py", { "pyproject.toml", ".git" }) == workspace .. "/sub/pkg",
  "nearest root first")
check(require("ttap").find_root(workspace .. "/sub/y.py", { "pyproject.toml", ".git" }) == workspace,
  "a marker further up when none is nearer")
vim.fn.delete(workspace .. "/pyproject.toml")
vim.fn.delete(workspace .. "/sub", "rf")
vim.cmd("edit " .. workspace .. "/train.py")
vim.bo.filetype = "python"
local buf = vim.api.nvim_get_current_buf()

-- Diagnostics at the expected line with the expected code.
local ok = vim.wait(30000, function()
  return #vim.diagnostic.get(buf) > 0
end, 100)
check(ok, "diagnostics arrived")
local diags = vim.diagnostic.get(buf)
local found
for _, d in ipairs(diags) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
  if code == "TTA001" then found = d end
end
check(found ~= nil, "a TTA001 diagnostic")
if not found then return finish() end
check(found.lnum == 11, "TTA001 on line 12 (0-based 11), got " .. tostring(found.lnum))
check(found.source == "ttap", "source is ttap")

-- Hover text contains the numbers.
local clients = vim.lsp.buf_get_clients(buf)
local client
for _, c in pairs(clients) do if c.name == "ttap" then client = c end end
check(client ~= nil, "ttap client attached")
check(attached_with == "ttap", "the user's on_attach ran")
check(client.config.capabilities and client.config.capabilities.experimental
  and client.config.capabilities.experimental.ttap_test_marker == true, "the user's capabilities were passed on")

-- Code lenses: fetched when the analysis is ready, without an edit or a manual refresh (0.7
-- does not take the server's workspace/codeLens/refresh).
check(vim.wait(10000, function() return #(vim.lsp.codelens.get(buf) or {}) > 0 end, 100), "code lenses are shown")
local lens = (vim.lsp.codelens.get(buf) or {})[1]
check(lens and lens.command and lens.command.title:find("of the step lost here") ~= nil, "the lens says what the step loses")

-- :TtapSummary opens the summary.
local before = #vim.api.nvim_list_bufs()
vim.cmd("TtapSummary")
check(vim.wait(10000, function() return #vim.api.nvim_list_bufs() > before end, 50), ":TtapSummary opens a buffer")
local summary = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
check(summary:find("TTA001") ~= nil, ":TtapSummary lists the findings")
check(vim.bo.filetype == "markdown", "the summary is markdown")
vim.cmd("close")

-- :checkhealth ttap reports the binary and the client.
vim.cmd("checkhealth ttap")
local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
check(health:find("ttap") ~= nil and health:find("OK") ~= nil, ":checkhealth ttap reports")
check(health:find("client %d+") ~= nil, ":checkhealth ttap names the attached client")
vim.cmd("bwipeout!")
vim.api.nvim_set_current_buf(buf)
local hover = client.request_sync("textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  position = { line = found.lnum, character = found.col + 1 },
}, 10000, buf)
local text = hover and hover.result and hover.result.contents and hover.result.contents.value or ""
check(text:find("TTA001") ~= nil, "hover names the code")
check(text:find("ms") ~= nil and text:find("%%") ~= nil, "hover has the numbers")

-- The preferred code action changes the buffer to the expected text.
local actions = client.request_sync("textDocument/codeAction", {
  textDocument = { uri = vim.uri_from_bufnr(buf) },
  range = { start = { line = found.lnum, character = 0 }, ["end"] = { line = found.lnum, character = 1 } },
  context = { diagnostics = {} },
}, 10000, buf)
local chosen
for _, a in ipairs((actions and actions.result) or {}) do
  if a.isPreferred then chosen = a end
end
-- Neovim declares codeAction/resolve support for "edit": the server sends the edit lazily.
if chosen and not chosen.edit then
  local resolved = client.request_sync("codeAction/resolve", chosen, 10000, buf)
  chosen = resolved and resolved.result or chosen
end
check(chosen ~= nil and chosen.edit ~= nil, "a preferred quick fix with an edit")
if chosen and chosen.edit then
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding or "utf-16")
  local line5 = vim.api.nvim_buf_get_lines(buf, 4, 5, false)[1] or ""
  check(line5:find("num_workers=") ~= nil, "DataLoader gained num_workers: " .. line5)
  check(line5:find("pin_memory=True") ~= nil, "DataLoader gained pin_memory=True: " .. line5)
end

-- :TtapRestart: a new client, attached again, diagnostics again.
local old_id = client.id
vim.cmd("TtapRestart")
local restarted = vim.wait(20000, function()
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do
    if c.name == "ttap" and c.id ~= old_id then return true end
  end
  return false
end, 100)
check(restarted, ":TtapRestart attaches a new client")
finish()
