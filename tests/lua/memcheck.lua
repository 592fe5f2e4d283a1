-- Run under valgrind by CTest (lua_memcheck): every path of the module,
-- errors included, must free what it allocates.
local gpuplan = require "gpuplan"
local sched = require "gpuplan.sched"

local cat = assert(gpuplan.open())
assert(cat:plan("llama-2-7b", "a100-40gb", { per_rank = true }))
assert(cat:plan("llama-2-70b", "h100-sxm5-80gb", { gpus = 64, tp = 8, pp = 4, per_rank = true }))
assert(cat:perf("gpt3-175b", "a100-80gb", { gpus = 64, tp = 8, pp = 8, global_batch = 64 }))
assert(cat:search("llama-2-13b", "a100-80gb", { gpus = 16, global_batch = 64 }))
assert(cat:simulate("llama-2-7b", "a100-40gb"))
assert(cat:simulate("llama-2-7b", "a100-80gb", { alloc_conf = "expandable_segments:True", other_procs = 1024 }))
assert(not cat:simulate("llama-2-7b", "a100-80gb", { other_procs = 2^20 }))
assert(not cat:plan("gpt-9", "a100-40gb"))
assert(not cat:plan("llama-2-7b", "h100-80gb"))
assert(not cat:plan("llama-2-7b", "a100-40gb", { precision = "fp13" }))
assert(not cat:plan("llama-2-7b", "a100-40gb", { tp = 3 }))
assert(not pcall(cat.plan, cat, "llama-2-7b", "a100-40gb", { colour = 1 }))
assert(not cat:search("llama-2-7b", "a100-40gb", {}))
assert(gpuplan.explain_oom("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of " ..
  "79.15 GiB of which 1.20 GiB is free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.50 " ..
  "GiB is reserved by PyTorch but unallocated."))
assert(not gpuplan.explain_oom("nope"))
assert(not gpuplan.replay("/nonexistent.pickle"))
-- the vendored snapshots (tests/data/torch-snapshots): a missing one fails
local traces = assert(os.getenv("GPUPLAN_TRACES"), "GPUPLAN_TRACES not set")
assert(gpuplan.replay(traces .. "/linear-grad.pickle"))
assert(not gpuplan.open("/nonexistent/catalog.sqlite"))
assert(cat:devices({ sim = "a100-80gb:4", faults = { "thermal", "ecc@1" } }))
assert(not cat:devices({ sim = "a100-80gb", faults = { "gremlins" } }))
cat:devices() -- no driver here: nil, message
local s = assert(sched.new(cat))
assert(s:place({ model = "llama-2-7b", gpus = 4, options = { dp_mode = "zero3", recompute = "full" } },
  { nodes = { { name = "a", gpu = "a100-sxm4-40gb", free = { 0, 1, 2, 3 } } } }))
assert(not s:place({ model = "llama-2-70b", gpus = 2 }, { nodes = { { name = "a", gpu = "l4", free = { 0, 1 } } } }))
cat:close()
cat:close()
local other = assert(gpuplan.open()) -- collected, not closed
other = nil
collectgarbage()
print("memcheck: ok")
