-- run_lua.lua: the parity corpus through the Lua binding, one JSON line per job:
-- {"ok": document} or {"error": message, "code": "GPUPLAN_E..."}.
--   lua run_lua.lua corpus.json
local json = require("dkjson")
local gpuplan = require("gpuplan")
local f = assert(io.open(arg[1], "rb"))
local corpus = assert(json.decode(f:read("*a")))
f:close()
-- Numbers written with 17 significant digits, so that they read back to the
-- same double (dkjson's encoder keeps 14).
local function encode(v, out)
  local t = type(v)
  if t == "table" then
    if next(v) == nil or v[1] ~= nil then
      out[#out + 1] = "["
      for i, x in ipairs(v) do
        if i > 1 then out[#out + 1] = "," end
        encode(x, out)
      end
      out[#out + 1] = "]"
    else
      out[#out + 1] = "{"
      local first = true
      for k, x in pairs(v) do
        if not first then out[#out + 1] = "," end
        first = false
        encode(tostring(k), out)
        out[#out + 1] = ":"
        encode(x, out)
      end
      out[#out + 1] = "}"
    end
  elseif t == "string" then
    out[#out + 1] = json.encode(v)
  elseif t == "number" then
    if math.type and math.type(v) == "integer" then
      out[#out + 1] = string.format("%d", v)
    else
      out[#out + 1] = string.format("%.17g", v)
    end
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  else
    out[#out + 1] = "null"
  end
end
local function tojson(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end
local cat = assert(gpuplan.open())
for _, job in ipairs(corpus) do
  local doc, msg, code = cat:run(job.command, job.options)
  if doc then
    io.write(tojson({ok = doc}), "\n")
  else
    io.write(tojson({error = msg, code = code}), "\n")
  end
end
cat:close()
