-- TorchTraceAP for Neovim: starts `ttap lsp` for Python buffers and attaches it, with commands
-- (:TtapRescan, :TtapSummary, :TtapRestart), code lenses kept fresh, and :checkhealth ttap
-- (lua/ttap/health.lua). Works on Neovim 0.7.2 (vim.lsp.start_client + buf_attach_client) and
-- newer (vim.lsp.start, 0.8+).
--   require("ttap").setup{ cmd = { "ttap", "lsp" }, settings = { windows = 100 },
--                          on_attach = function(client, bufnr) ... end, capabilities = ... }
-- Every other key of vim.lsp.ClientConfig given to setup (flags, before_init, handlers, ...)
-- is passed through to the client.
local M = {}

local defaults = {
  cmd = { "ttap", "lsp" },
  filetypes = { "python" },
  -- Sent as initializationOptions (Neovim 0.7 declares no workspace/configuration).
  settings = {},
  root_markers = { "pyproject.toml", "ttap.toml", "setup.py", "setup.cfg", ".git" },
  codelens = true, -- show the server's "x% of the step lost here" lenses
}

-- Keys of setup{} that are this plugin's, not the LSP client's.
local own_keys = { cmd = true, filetypes = true, settings = true, root_markers = true, codelens = true }

-- The nearest directory at or above the buffer's that holds any of the markers (as lspconfig's
-- root_pattern: nearest first, not marker by marker); else the buffer's own directory.
function M.find_root(path, markers)
  local dir = path ~= "" and vim.fn.fnamemodify(path, ":p:h") or vim.fn.getcwd()
  local start = dir
  while dir and dir ~= "" do
    for _, marker in ipairs(markers) do
      local candidate = dir .. "/" .. marker
      if vim.fn.filereadable(candidate) == 1 or vim.fn.isdirectory(candidate) == 1 then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      break
    end
    dir = parent
  end
  return start
end

local client_ids = {} -- root -> client id (Neovim 0.7)
local options = vim.deepcopy(defaults)

local function ttap_clients(bufnr)
  if vim.lsp.get_clients then -- 0.10+ (buf_get_clients / get_active_clients are deprecated)
    return vim.lsp.get_clients({ bufnr = bufnr, name = "ttap" })
  end
  local out = {}
  for _, c in pairs(bufnr and vim.lsp.buf_get_clients(bufnr) or vim.lsp.get_active_clients()) do
    if c.name == "ttap" then
      table.insert(out, c)
    end
  end
  return out
end

local function refresh_codelens(bufnr)
  if options.codelens and vim.api.nvim_buf_is_valid(bufnr) then
    if vim.fn.has("nvim-0.10") == 1 then
      pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
    else
      pcall(vim.lsp.codelens.refresh)
    end
  end
end

function M.attach(bufnr, opts)
  opts = opts or options
  local root = M.find_root(vim.api.nvim_buf_get_name(bufnr), opts.root_markers)
  local config = {}
  for k, v in pairs(opts) do
    if not own_keys[k] then
      config[k] = v
    end
  end
  config.name = "ttap"
  config.cmd = opts.cmd
  config.root_dir = root
  config.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  config.init_options = opts.settings
  local function refresh_attached()
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and #ttap_clients(buf) > 0 then
        vim.api.nvim_buf_call(buf, function()
          refresh_codelens(buf)
        end)
      end
    end
  end
  config.handlers = vim.tbl_extend("force", {
    ["ttap/status"] = function(_, result)
      vim.g.ttap_status = result and result.state or ""
      -- Neovim before 0.8 does not take the server's workspace/codeLens/refresh: the lenses of
      -- a finished analysis are fetched when the status says so, not at the first edit.
      if result and result.state == "ready" then
        vim.schedule(refresh_attached)
      end
    end,
    -- The server asks for fresh lenses after each analysis (clients that support it).
    ["workspace/codeLens/refresh"] = function()
      refresh_attached()
      return vim.NIL
    end,
  }, opts.handlers or {})
  local user_on_attach = opts.on_attach
  config.on_attach = function(client, attached)
    if options.codelens then
      vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave", "BufWritePost" }, {
        group = vim.api.nvim_create_augroup("ttap_codelens_" .. attached, { clear = true }),
        buffer = attached,
        callback = function()
          refresh_codelens(attached)
        end,
      })
      refresh_codelens(attached)
    end
    if user_on_attach then
      user_on_attach(client, attached)
    end
  end
  if vim.lsp.start then -- Neovim >= 0.8 reuses a running client with the same name and root
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  local id = client_ids[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    id = vim.lsp.start_client(config)
    client_ids[root] = id
  end
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

-- Attaches every loaded buffer of a handled filetype (after setup, or a restart).
local function attach_open_buffers()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(options.filetypes, vim.bo[buf].filetype) then
      M.attach(buf, options)
    end
  end
end

local function execute(command, on_result)
  local clients = ttap_clients(vim.api.nvim_get_current_buf())
  if #clients == 0 then
    clients = ttap_clients()
  end
  if #clients == 0 then
    vim.notify("ttap: no server attached (see :checkhealth ttap)", vim.log.levels.WARN)
    return
  end
  clients[1].request("workspace/executeCommand", { command = command, arguments = {} }, function(err, result)
    if err then
      vim.notify("ttap: " .. (err.message or tostring(err)), vim.log.levels.ERROR)
    elseif on_result then
      on_result(result)
    end
  end)
end

function M.rescan()
  execute("ttap.server.rescan")
end

-- The trace summary in a scratch markdown buffer.
function M.summary()
  execute("ttap.server.showTraceSummary", function(result)
    local text = result and result.markdown or "no summary"
    vim.cmd("new")
    local buf = vim.api.nvim_get_current_buf()
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].filetype = "markdown"
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, "\n", { plain = true }))
    vim.bo[buf].modifiable = false
  end)
end

-- Stops every ttap client and attaches the Python buffers again.
function M.restart()
  local ids = {}
  for _, c in ipairs(ttap_clients()) do
    table.insert(ids, c.id)
    c.stop()
  end
  client_ids = {}
  vim.wait(5000, function()
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) then
        return false
      end
    end
    return true
  end, 50)
  attach_open_buffers()
end

function M.options()
  return options
end

M.clients = ttap_clients

function M.setup(user)
  options = vim.tbl_deep_extend("force", defaults, user or {})
  -- Functions and tables the user passes are kept as given (capabilities, on_attach).
  for _, k in ipairs({ "on_attach", "capabilities", "handlers", "before_init", "on_init" }) do
    if user and user[k] ~= nil then
      options[k] = user[k]
    end
  end
  local group = vim.api.nvim_create_augroup("ttap", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = options.filetypes,
    callback = function(args)
      M.attach(args.buf, options)
    end,
  })
  vim.api.nvim_create_user_command("TtapRescan", M.rescan, { desc = "ttap: analyse the newest trace again" })
  vim.api.nvim_create_user_command("TtapSummary", M.summary, { desc = "ttap: the trace summary" })
  vim.api.nvim_create_user_command("TtapRestart", M.restart, { desc = "ttap: restart the server" })
  -- The code lenses' command runs here (a scratch buffer), not as a message from the server.
  vim.lsp.commands["ttap.showTraceSummary"] = function()
    M.summary()
  end
  attach_open_buffers() -- buffers already open when setup runs
end

return M
