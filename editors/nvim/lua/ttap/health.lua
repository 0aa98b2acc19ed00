-- :checkhealth ttap: the Neovim version, the ttap binary (runs `ttap --version` and `ttap doctor`),
-- whether setup() ran, and the attached clients with their status. Neovim 0.8+ reports through
-- vim.health, 0.7 through require("health").
local M = {}

local function reporter()
  if vim.health and vim.health.start then
    return vim.health.start, vim.health.ok, vim.health.warn, vim.health.error
  end
  local h = require("health")
  return h.report_start, h.report_ok, h.report_warn, h.report_error
end

function M.check()
  local start, ok, warn, error = reporter()
  start("ttap")
  local v = vim.version()
  if v.major > 0 or v.minor >= 7 then
    ok(string.format("Neovim %d.%d.%d", v.major, v.minor, v.patch))
  else
    error("Neovim 0.7 or newer is needed")
  end
  local ttap = require("ttap")
  local opts = ttap.options()
  local exe = opts.cmd and opts.cmd[1] or "ttap"
  if vim.fn.executable(exe) ~= 1 then
    error(exe .. " is not executable: build it (scripts/build.sh) and pass cmd = { '/path/to/ttap', 'lsp' } to setup()")
  else
    local version = vim.fn.system({ exe, "--version" })
    if vim.v.shell_error == 0 then
      ok(exe .. ": " .. vim.trim(version))
    else
      error(exe .. " --version failed: " .. vim.trim(version))
    end
    local doctor = vim.fn.system({ exe, "doctor" })
    for _, line in ipairs(vim.split(vim.trim(doctor), "\n", { plain = true })) do
      if line ~= "" then
        if vim.v.shell_error == 0 then ok("doctor: " .. line) else warn("doctor: " .. line) end
      end
    end
  end
  if vim.fn.exists(":TtapRescan") == 2 then
    ok("setup() ran: :TtapRescan, :TtapSummary, :TtapRestart")
  else
    warn("require('ttap').setup{} has not run")
  end
  local attached = 0
  for _, c in pairs(ttap.clients()) do
    do
      attached = attached + 1
      ok(string.format("client %d, root %s, status %s", c.id, c.config.root_dir or "?", vim.g.ttap_status or "?"))
    end
  end
  if attached == 0 then
    warn("no ttap client is running (open a Python file)")
  end
end

return M
