-- Shared by the busted specs: the CLI as independent truth, and a deep
-- comparison of its --json documents with Lua results.
local json = require "dkjson"

local H = {}

H.CLI = os.getenv("GPUPLAN_CLI") or "gpuplan"
H.SOURCE = os.getenv("GPUPLAN_SOURCE_DIR") or "."
-- The real torch snapshots, vendored in the repository: a missing one fails.
H.TRACES = os.getenv("GPUPLAN_TRACES") or (H.SOURCE .. "/tests/data/torch-snapshots")

--- The path of a vendored snapshot; raises when the file is missing.
function H.trace(name)
  local f = H.TRACES .. "/" .. name
  local fh = io.open(f, "rb")
  assert(fh, "missing " .. f .. " (GPUPLAN_TRACES=" .. H.TRACES .. ")")
  fh:close()
  return f
end

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- Run `gpuplan ARGS... --json` and decode it (JSON null: absent).
function H.cli_json(...)
  local parts = { quote(H.CLI) }
  for _, a in ipairs({ ... }) do parts[#parts + 1] = quote(a) end
  parts[#parts + 1] = "--json"
  local p = assert(io.popen(table.concat(parts, " ") .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  local doc, _, err = json.decode(out, 1, nil)
  assert(doc, "cannot decode the CLI's output (" .. tostring(err) .. "): " .. out)
  return doc
end

--- Every key the CLI prints is in the Lua result with the same value
-- (numbers to 1e-12 relative: the CLI prints %.15g).
function H.same(cli, got, path, skip)
  path = path or "$"
  if type(cli) == "table" then
    assert(type(got) == "table", path .. ": expected a table, got " .. type(got))
    for k, v in pairs(cli) do
      if not (skip and skip[k]) then
        local p = path .. "." .. tostring(k)
        assert(got[k] ~= nil, p .. " is missing from the Lua result")
        H.same(v, got[k], p, skip)
      end
    end
  elseif type(cli) == "number" then
    assert(type(got) == "number", path .. ": expected a number, got " .. type(got))
    local tol = math.max(math.abs(cli), math.abs(got)) * 1e-12
    assert(math.abs(cli - got) <= tol, string.format("%s: CLI %.17g, Lua %.17g", path, cli, got))
  else
    assert(cli == got, string.format("%s: CLI %s, Lua %s", path, tostring(cli), tostring(got)))
  end
  return true
end

return H
