-- TorchTraceAP for Neovim: starts `ttap lsp` for Python buffers and attaches it.
-- Works on Neovim 0.7.2 (vim.lsp.start_client + buf_attach_client) and newer (vim.lsp.start).
--   require("ttap").setup{ cmd = { "ttap", "lsp" }, settings = { windows = 100 } }
local M = {}

local defaults = {
  cmd = { "ttap", "lsp" },
  filetypes = { "python" },
  -- Sent as initializationOptions (Neovim 0.7 declares no workspace/configuration).
  settings = {},
  root_markers = { "pyproject.toml", "ttap.toml", "setup.py", ".git" },
}

-- The nearest directory above the buffer holding a marker; else the buffer's own directory.
local function find_root(bufnr, markers)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local dir = path ~= "" and vim.fn.fnamemodify(path, ":p:h") or vim.fn.getcwd()
  for _, marker in ipairs(markers) do
    local f = vim.fn.findfile(marker, dir .. ";")
    if f == "" then
      f = vim.fn.finddir(marker, dir .. ";")
    end
    if f ~= "" then
      return vim.fn.fnamemodify(f, ":p:h"):gsub("/%.git$", "")
    end
  end
  return dir
end

local client_ids = {}

function M.attach(bufnr, opts)
  local root = find_root(bufnr, opts.root_markers)
  local config = {
    name = "ttap",
    cmd = opts.cmd,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    init_options = opts.settings,
    handlers = {
      ["ttap/status"] = function(_, result)
        vim.g.ttap_status = result and result.state or ""
      end,
    },
  }
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

function M.setup(user)
  local opts = vim.tbl_deep_extend("force", defaults, user or {})
  local group = vim.api.nvim_create_augroup("ttap", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = opts.filetypes,
    callback = function(args)
      M.attach(args.buf, opts)
    end,
  })
  -- Buffers already open when setup runs.
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(opts.filetypes, vim.bo[buf].filetype) then
      M.attach(buf, opts)
    end
  end
end

return M
