--[[
job_submit.lua: refuse, at submit time, GPU jobs whose model cannot fit the
GPUs they ask for, with the shortfall and the fix in the message.

Slurm's job_submit/lua plugin (JobSubmitPlugins=lua in slurm.conf) runs
slurm_job_submit() for every submission, in slurmctld's embedded Lua 5.1.
A job opts in by describing its model in --comment:

  sbatch --gres=gpu:a100:2 --comment="gpuplan:model=llama-2-70b,workload=train" train.sh

Keys after "gpuplan:" are gpuplan's options (as `gpuplan plan` flags with
underscores): model (a catalog name or a size such as 7B), workload (train,
infer, or serve), dp_mode (ddp, zero1, zero2, zero3, fsdp...), tp, pp,
precision, optimizer, recompute, micro_batch, seq_len, context_len, batch...
A serving job (workload=serve) is checked as its engine lays it out
(`gpuplan serve`: engine=vllm|sglang|trtllm|tgi, gpu_memory_utilization,
context_len = max_model_len, weight_dtype, kv_dtype...): the weights and a KV
cache that holds one request of context_len, on tp GPUs (default: all of the
job's, over NVLink or PCIe; with tp smaller, the rest are replicas).
Jobs without the tag pass untouched.  If the gpuplan module cannot be loaded,
or the job asks for a GPU type the catalog does not know, the script lets the
job through and logs why (fail open: a planning aid must not stop the
cluster).

  sbatch --gres=gpu:l4:2 --comment="gpuplan:model=llama-3.1-8b,workload=serve,context_len=32768" serve.sh

Site configuration: the table SITE below (GPU types to catalog SKUs, the
default SKU of each partition, where the module lives).
--]]

local SITE = {
  -- --gres=gpu:TYPE:N -> catalog SKU
  gres_types = {
    a100 = "a100-sxm4-40gb", ["a100-40g"] = "a100-sxm4-40gb", a100_80g = "a100-sxm4-80gb",
    ["a100-80g"] = "a100-sxm4-80gb", h100 = "h100-sxm5-80gb", h200 = "h200-sxm-141gb",
    l4 = "l4", l40s = "l40s", t4 = "t4", v100 = "v100-sxm2-32gb",
  },
  -- when the request names no type: the partition's GPU
  partitions = { gpu = "a100-sxm4-40gb", h100 = "h100-sxm5-80gb", inference = "l4" },
  default_gpu = "a100-sxm4-40gb",
  -- the ladder may suggest up to this many GPUs
  max_gpus = 512,
  -- where gpuplan's Lua files and module are installed (nil: LUA_PATH/LUA_CPATH)
  lua_path = nil,   -- e.g. "/opt/gpuplan/share/lua/5.1/?.lua"
  lua_cpath = nil,  -- e.g. "/opt/gpuplan/lib/lua/5.1/?.so"
}

if SITE.lua_path then package.path = SITE.lua_path .. ";" .. package.path end
if SITE.lua_cpath then package.cpath = SITE.lua_cpath .. ";" .. package.cpath end

local loaded, gpuplan = pcall(require, "gpuplan")
local catalog, load_error
if loaded then
  local msg
  catalog, msg = gpuplan.open()
  if not catalog then load_error = msg end
else
  load_error = tostring(gpuplan)
end

local GiB = 1073741824

--- The GPU count and type a job asks for, from its TRES/GRES strings.
-- Slurm writes --gres=gpu:a100:2 as "gres/gpu:a100:2" (21.08+), older
-- versions as "gpu:a100:2"; --gpus=N goes to tres_per_job.
local function parse_gpus(spec)
  if type(spec) ~= "string" or spec == "" then return nil end
  for item in spec:gmatch("[^,]+") do
    local rest = item:match("^gres[/:]gpu(.*)$") or item:match("^gpu(.*)$")
    if rest then
      local typ, n = rest:match("^:([%w%-_%.]+)[:=](%d+)$")
      if not typ then n = rest:match("^[:=](%d+)$") end
      if not typ and not n and rest == "" then n = "1" end
      if not typ and not n then typ = rest:match("^:([%w%-_%.]+)$"); if typ then n = "1" end end
      if n then return tonumber(n), typ end
    end
  end
  return nil
end

local function gpu_request(job_desc)
  local nodes = tonumber(job_desc.min_nodes) or 1
  if nodes < 1 or nodes > 1e6 then nodes = 1 end -- NO_VAL
  local n, typ = parse_gpus(job_desc.tres_per_job)
  if n then return n, typ end
  n, typ = parse_gpus(job_desc.tres_per_node or job_desc.gres)
  if n then return n * nodes, typ end
  return nil
end

--- The "gpuplan:k=v,k=v" tag of a comment, as a table; nil without one.
local function parse_tag(comment)
  if type(comment) ~= "string" then return nil end
  local body = comment:match("gpuplan:%s*([^%s;]+)")
  if not body then return nil end
  local t = {}
  for k, v in body:gmatch("([%w_]+)=([^,]+)") do
    if v == "true" then v = true elseif v == "false" then v = false
    elseif v:match("^%-?%d+$") then v = tonumber(v) end
    t[k] = v
  end
  return t
end

local function sku_for(typ, partition)
  if typ then return SITE.gres_types[typ:lower()] or typ end
  return (partition and SITE.partitions[partition]) or SITE.default_gpu
end

--- A serving job (workload=serve): the engine's memory on tp GPUs.
local function serve_check(tag, n, sku)
  local opts = { gpu = sku }
  for k, v in pairs(tag) do
    if k ~= "workload" then opts[k] = v end
  end
  opts.tp = opts.tp or n
  if n % opts.tp ~= 0 then
    return false, string.format("gpuplan: %d GPUs are not a whole number of replicas of tp %d", n, opts.tp)
  end
  local ok, doc, msg, code = pcall(catalog.run, catalog, "serve", opts)
  if not ok then return false, "gpuplan: " .. tostring(doc) end
  if not doc then return false, string.format("gpuplan: %s (%s)", tostring(msg), tostring(code)) end
  local m = doc.memory
  if m.fits then return true end
  for _, note in ipairs(doc.notes or {}) do
    if note:find("does not fit", 1, true) then
      return false, string.format("gpuplan: %s serving on %d x %s %s", doc.model, opts.tp, sku, note)
    end
  end
  return false, string.format(
    "gpuplan: %s serving on %d x %s: the KV cache holds %d tokens, less than one request of context_len %d. "
      .. "Fix: a smaller context_len, a larger tp, kv_dtype=fp8, or a bigger GPU.",
    doc.model, opts.tp, sku, math.floor(m.kv_tokens or 0), m.max_model_len)
end

--- Check one job description; returns ok, message.
local function gpuplan_check(job_desc)
  local tag = parse_tag(job_desc.comment)
  if not tag then return true end
  if not catalog then
    return true, "gpuplan unavailable (" .. tostring(load_error) .. "); job not checked"
  end
  local n, typ = gpu_request(job_desc)
  if not n then
    return false, "gpuplan: the comment describes a model but the job requests no GPUs (--gres=gpu:TYPE:N or --gpus=N)"
  end
  local model = tag.model
  if type(model) ~= "string" then
    return false, "gpuplan: the tag needs model=NAME (a catalog model such as llama-2-7b, or a size such as 7B)"
  end
  local sku = sku_for(typ, job_desc.partition)
  if not catalog:find("gpu", sku) then -- a GPU type the catalog does not know: fail open (review EC-13)
    return true, string.format("gpuplan: GPU type '%s' is not in the catalog; job not checked", tostring(sku))
  end
  if tag.workload == "serve" then return serve_check(tag, n, sku) end
  local opts = { gpus = n, max_gpus = SITE.max_gpus }
  for k, v in pairs(tag) do
    if k ~= "model" then opts[k] = v end
  end
  if opts.workload == "infer" and not opts.tp then opts.tp = n end
  local ok, fits, plan, code = pcall(catalog.fits, catalog, model, sku, opts)
  if not ok then -- an unknown option name or a wrong type: misuse, raised
    return false, "gpuplan: " .. tostring(fits)
  end
  if fits == nil then
    return false, string.format("gpuplan: %s (%s)", tostring(plan), tostring(code))
  end
  if fits then return true end
  local w = plan.worst
  local msg = string.format(
    "gpuplan: %s %s needs %.1f GiB per GPU on %d x %s, which has %.1f GiB: short by %.1f GiB per GPU.",
    plan.model, plan.workload == "infer" and "serving" or "training", w.total_bytes / GiB, n, plan.gpu,
    w.capacity_bytes / GiB, (w.total_bytes - w.capacity_bytes) / GiB)
  local biggest = {}
  for _, c in ipairs(w.components) do biggest[#biggest + 1] = c end
  table.sort(biggest, function(a, b) return a.bytes > b.bytes end)
  local parts = {}
  for i = 1, math.min(3, #biggest) do
    parts[#parts + 1] = string.format("%s %.1f GiB", biggest[i].name, biggest[i].bytes / GiB)
  end
  msg = msg .. " Largest: " .. table.concat(parts, ", ") .. "."
  local last = plan.ladder[#plan.ladder]
  if last and last.fits then
    msg = msg .. string.format(" Fix: %s (%.1f GiB per GPU on %d x %s).", last.change, last.total_bytes / GiB,
      last.gpus, last.gpu)
  else
    msg = msg .. string.format(" Nothing on the fix ladder fits within %d GPUs; consider tensor/pipeline parallelism or offload.", SITE.max_gpus)
  end
  return false, msg
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local ok, msg = gpuplan_check(job_desc)
  if ok then
    if msg then slurm.log_info("%s", msg) end
    return slurm.SUCCESS
  end
  slurm.log_user("%s", msg)
  slurm.log_info("job from uid %s rejected: %s", tostring(submit_uid), msg)
  return slurm.ERROR
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

return { check = gpuplan_check, parse_gpus = parse_gpus, parse_tag = parse_tag }
