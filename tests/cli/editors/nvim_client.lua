-- Neovim (0.7, Debian 12's) as the client of `gradscope lsp`, headless, configured by
-- nvim_0.7_init.lua, the set-up docs/editor.md quotes. lsp_editor_test.cpp runs, in a folder
-- holding gradscope-runs/ and with `gradscope` on PATH,
--   nvim --headless -u NONE -i NONE -n -c 'luafile nvim_client.lua'
-- with GRADSCOPE_LSP_FILE (the source to open) and GRADSCOPE_LSP_OUT (where to write what the
-- editor received: one JSON object a line). Every wait is bounded, and any error ends Neovim
-- with a non-zero code.
local out = assert(io.open(assert(os.getenv("GRADSCOPE_LSP_OUT")), "w"))
local function emit(t)
  out:write(vim.fn.json_encode(t), "\n")
  out:flush()
end

local function run()
  local file = assert(os.getenv("GRADSCOPE_LSP_FILE"))
  -- The server's exit code, which the configuration has no reason to ask for: wrap start_client
  -- to learn it without changing the configuration's text.
  local exit_code
  local start_client = vim.lsp.start_client
  vim.lsp.start_client = function(config)
    config.on_exit = function(code) exit_code = code end
    return start_client(config)
  end
  -- Wrap the publishDiagnostics handler to know that a publish arrived (an empty one too);
  -- the diagnostics are read back from vim.diagnostic, where the editor keeps them.
  local published = false
  local handler = vim.lsp.handlers["textDocument/publishDiagnostics"]
  vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
    handler(err, result, ctx, config)
    published = true
  end

  vim.cmd("filetype on")
  local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)")
  vim.cmd("luafile " .. vim.fn.fnameescape(here .. "nvim_0.7_init.lua"))
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  emit({ kind = "filetype", value = vim.bo[bufnr].filetype })
  -- Neovim 0.7 lists a client for the buffer once the server has answered initialize.
  local client_id
  assert(vim.wait(10000, function()
    client_id = next(vim.lsp.buf_get_clients(bufnr))
    return client_id ~= nil
  end, 20), "no client attached to the buffer in 10 s")

  assert(vim.wait(10000, function() return published end, 20), "no publishDiagnostics in 10 s")
  local diags = vim.diagnostic.get(bufnr)
  table.sort(diags, function(a, b) return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col) end)
  for _, d in ipairs(diags) do
    emit({ kind = "diagnostic", line = d.lnum, col = d.col, end_col = d.end_col,
           severity = d.severity, message = d.message })
  end

  -- Hover where each diagnostic sits, as `K` there would ask (the cursor's position).
  for _, d in ipairs(diags) do
    vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
    local params = vim.lsp.util.make_position_params()
    local replies = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", params, 10000)
    assert(replies and replies[client_id], "no hover reply in 10 s")
    local r = replies[client_id]
    assert(not r.err, "hover error: " .. vim.inspect(r.err))
    emit({ kind = "hover", line = d.lnum, col = d.col,
           value = r.result and r.result.contents.value or vim.NIL })
  end

  vim.lsp.stop_client(client_id)
  assert(vim.wait(10000, function() return exit_code ~= nil end, 20), "server still up 10 s after stop")
  emit({ kind = "exit", code = exit_code })
end

local ok, err = pcall(run)
if not ok then
  emit({ kind = "error", message = tostring(err) })
  out:close()
  vim.cmd("cquit 1")
end
out:close()
vim.cmd("qall!")
