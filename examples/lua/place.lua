-- gpuplan from Lua: a plan, then admission and placement on a small cluster.
--   LUA_CPATH='build/bindings/lua/5.4/?.so' LUA_PATH='bindings/lua/?.lua' lua5.4 examples/lua/place.lua
local gpuplan = require "gpuplan"
local sched = require "gpuplan.sched"

local GiB = 2 ^ 30
local cat = assert(gpuplan.open())
print(cat)

local p = assert(cat:plan("llama-2-70b", "a100-40gb", { gpus = 2 }))
print(string.format("%s on %d x %s: %.1f GiB per GPU of %.1f", p.model, p.gpus, p.gpu,
  p.worst.total_bytes / GiB, p.worst.capacity_bytes / GiB))
print("fix: " .. p.ladder[#p.ladder].change)

-- run-time failures are nil, message, code
print(cat:plan("llama-2-70b", "h100-80gb"))

local s = assert(sched.new(cat))
local cluster = { nodes = {
  { name = "dgx1", gpu = "a100-sxm4-80gb", free = { 0, 1, 2, 3, 4, 5 } },
  { name = "dgx2", gpu = "a100-sxm4-80gb", free = { 0, 1, 2, 3, 4, 5, 6, 7 } },
  { name = "dgx3", gpu = "a100-sxm4-80gb", free = { 0, 1, 2, 3, 4, 5, 6, 7 } },
  { name = "l4-1", gpu = "l4", free = { 0, 1, 2, 3 } },
} }
local jobs = {
  { model = "llama-2-70b", gpus = 16,
    options = { tp = 8, pp = 2, dp_mode = "zero1", sequence_parallel = true, recompute = "selective" } },
  { model = "llama-2-7b", gpus = 1, workload = "infer" },
  { model = "llama-2-70b", gpus = 32, options = { tp = 8, pp = 2, dp_mode = "zero1" } },
}
for _, job in ipairs(jobs) do
  local placement, why = s:place(job, cluster)
  io.write(string.format("%s x%d: ", job.model, job.gpus))
  if placement then
    local parts = {}
    for _, n in ipairs(placement.nodes) do parts[#parts + 1] = n.name .. "[" .. table.concat(n.gpus, ",") .. "]" end
    print(string.format("%s on %s (%.1f of %.1f GiB per GPU)", table.concat(parts, " "), placement.gpu,
      placement.memory_per_gpu / GiB, placement.capacity_per_gpu / GiB))
  else
    print("refused: " .. why)
  end
end
cat:close()
