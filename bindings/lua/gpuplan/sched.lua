--- gpuplan.sched: admission and placement of GPU jobs for schedulers.
--
-- A scheduler describes its nodes' free GPUs and a job (model, workload,
-- requested GPUs, parallel layout); `fits(job, node)` says whether the job
-- can run on one node and `place(job, cluster)` finds a gang placement
-- across nodes: all of the job's ranks or none, each tensor-parallel group
-- inside one NVLink domain, one GPU type per job, as few nodes as possible.
-- Memory comes from gpuplan's planner (the same numbers as `gpuplan plan`),
-- so a job that would OOM is refused with the shortfall and the fix.
--
-- Serving (workload = "serve", or "infer"): tensor-parallel groups may span
-- PCIe GPUs of one node, as vLLM, SGLang and TensorRT-LLM run them (review
-- EC-13); training TP stays inside an NVLink domain.  A "serve" job's memory
-- is the engine's layout (`gpuplan serve`: weights, activation peak, KV
-- cache at max_model_len), and `place_replicas(job, cluster)` places its
-- replicas, each one TP group inside one node:
--
--   local job = { model = "llama-3-8b", workload = "serve", replicas = 4,
--                 options = { tp = 2, engine = "vllm", context_len = 8192 } }
--   local p, why = s:place_replicas(job, cluster)  -- p.replicas[i] = { name =, gpus = }
--
-- Plain Lua 5.1-5.4 and LuaJIT (Slurm's job_submit.lua embeds 5.1).
--
--   local sched = require "gpuplan.sched"
--   local s = assert(sched.new())            -- or sched.new(catalog)
--   local node = { name = "gpu01", gpu = "a100-sxm4-80gb", free = {0,1,2,3,4,5,6,7} }
--   local job  = { model = "llama-2-13b", gpus = 8, options = { dp_mode = "zero3" } }
--   local ok, how = s:fits(job, node)       -- true, placement | false, reason
--   local p, why = s:place(job, { nodes = { node, ... } })
--
-- Run-time failures (an unknown model or SKU, bad options) return
-- nil, message, code as the rest of gpuplan; a job that does not fit is not
-- an error: fits and place return false (place: nil) and the reason.

local gpuplan = require "gpuplan"

local M = { _VERSION = gpuplan._VERSION }
local Sched = {}
Sched.__index = Sched

local GiB = 1073741824

local function gib(b) return string.format("%.1f GiB", b / GiB) end

--- A scheduler over a catalog (default: the built-in one).
function M.new(catalog)
  local cat = catalog
  if not cat then
    local c, msg, code = gpuplan.open()
    if not c then return nil, msg, code end
    cat = c
  end
  return setmetatable({ cat = cat, cache = {} }, Sched)
end

--- The node's GPU SKU id, its GPU count and its memory per GPU override.
function Sched:node_hardware(node)
  local key = (node.node_type or "") .. "|" .. (node.gpu or "")
  local hw = self.cache[key]
  if hw then return hw end
  if node.node_type then
    local n, msg, code = self.cat:find("node", node.node_type)
    if not n then return nil, msg, code end
    if not n.gpu_id then return nil, "node: " .. n.name .. " has no GPU", "GPUPLAN_EINVAL" end
    local g = assert(self.cat:find("gpu", n.gpu_id))
    hw = { gpu = g, count = n.gpu_count, fabric = n.intra_fabric_id or "" }
  elseif node.gpu then
    local g, msg, code = self.cat:find("gpu", node.gpu)
    if not g then return nil, msg, code end
    hw = { gpu = g, count = nil, fabric = "" }
  else
    return nil, "node " .. tostring(node.name) .. ": needs gpu (a SKU) or node_type (a catalog node)",
      "GPUPLAN_EINVAL"
  end
  self.cache[key] = hw
  return hw
end

-- NVLink domains of a node: given, or implied by its fabric or GPU form
-- factor: an NVSwitch/SXM board is one domain; PCIe cards with NVLink
-- bridges pair up; other PCIe cards are each their own domain.  With pcie
-- (serving), a node whose GPUs are not one NVLink domain is one PCIe domain:
-- its TP groups cross PCIe.
local function domains_of(node, hw, pcie)
  if node.nvlink_domains and not pcie then return node.nvlink_domains end
  local n = node.gpus_total or hw.count
  if not n then
    n = 0
    for _, i in ipairs(node.free or {}) do if i + 1 > n then n = i + 1 end end
  end
  local ff = hw.gpu.form_factor or ""
  local linked = (hw.gpu.nvlink_bw_bytes_s or 0) > 0
  local all = {}
  for i = 0, n - 1 do all[#all + 1] = i end
  if hw.fabric:find("^nvswitch") or hw.fabric:find("^nvlink") or (linked and not ff:find("PCIe")) then
    return { all }, "nvlink"
  end
  if pcie then return { all }, "pcie" end
  local d = {}
  if linked then -- PCIe cards with NVLink bridges: pairs
    for i = 0, n - 1, 2 do d[#d + 1] = (i + 1 < n) and { i, i + 1 } or { i } end
  else
    for i = 0, n - 1 do d[#d + 1] = { i } end
  end
  return d, "nvlink"
end

local function is_serving(job)
  return job.workload == "serve" or job.workload == "infer"
end

-- Free GPUs of a node grouped by domain: { {ids...}, ... }, and the fabric
-- its TP groups use ("nvlink" or "pcie").
local function free_by_domain(node, hw, pcie)
  local free = {}
  for _, i in ipairs(node.free or {}) do free[i] = true end
  local out = {}
  local doms, fabric = domains_of(node, hw, pcie)
  for _, dom in ipairs(doms) do
    local ids = {}
    for _, i in ipairs(dom) do if free[i] then ids[#ids + 1] = i end end
    out[#out + 1] = ids
  end
  return out, fabric
end

-- The job's options with its layout for n GPUs.
local function job_options(job, extra)
  local o = {}
  for k, v in pairs(job.options or {}) do o[k] = v end
  if job.workload and job.workload ~= "serve" then o.workload = job.workload end
  -- serving on several GPUs is tensor-parallel unless the job says otherwise
  if o.workload == "infer" and not o.tp then o.tp = job.gpus end
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local function tp_of(job)
  local tp = job.options and job.options.tp
  if not tp and job.workload == "infer" then tp = job.gpus end
  if not tp and job.workload == "serve" then tp = job.replicas and job.gpus and math.floor(job.gpus / job.replicas) or job.gpus end
  return tp or 1
end

--- Memory check: does the job's worst rank fit on this GPU SKU?
-- Returns plan (fits) | false, reason, plan | nil, msg, code.
function Sched:memory(job, gpu_id)
  if job.workload == "serve" then return self:serve_memory(job, gpu_id) end
  local opts = job_options(job, { gpus = job.gpus, max_gpus = job.max_gpus or 4096 })
  local fits, plan, code = self.cat:fits(job.model, gpu_id, opts)
  if fits == nil then return nil, plan, code end
  if fits then return plan end
  local w = plan.worst
  local reason = string.format("%s %s needs %s per GPU on %d x %s (%s each): short by %s",
    plan.model, plan.workload == "infer" and "serving" or "training", gib(w.total_bytes), plan.gpus,
    gpu_id, gib(w.capacity_bytes), gib(w.total_bytes - w.capacity_bytes))
  local last = plan.ladder[#plan.ladder]
  if last and last.fits then
    reason = reason .. "; fix: " .. last.change .. string.format(" (%s per GPU)", gib(last.total_bytes))
  elseif last then
    reason = reason .. "; nothing on the fix ladder fits (last tried: " .. last.change .. ")"
  end
  return false, reason, plan
end

--- A serving job's memory as its engine lays it out (`gpuplan serve`): the
-- weights, the profile run's activation peak and a KV cache that holds one
-- request of max_model_len, per GPU of one replica.
-- Returns doc (fits) | false, reason, doc | nil, msg, code.
function Sched:serve_memory(job, gpu_id)
  local opts = { model = job.model, gpu = gpu_id, tp = tp_of(job) }
  for k, v in pairs(job.options or {}) do
    if k ~= "gpus" and k ~= "replicas" and k ~= "workload" then opts[k] = v end
  end
  opts.tp = tp_of(job)
  local doc, msg, code = self.cat:run("serve", opts)
  if not doc then return nil, msg, code end
  local m = doc.memory
  if m.fits then return doc end
  local reason
  for _, n in ipairs(doc.notes or {}) do
    if n:find("does not fit", 1, true) then reason = string.format("%s serving on %s: %s", doc.model, gpu_id, n) end
  end
  if not reason then
    reason = string.format("%s serving on %d x %s: the KV cache holds %d tokens, less than one request of "
      .. "max_model_len %d (lower context_len, raise tp, or a bigger GPU)", doc.model, opts.tp, gpu_id,
      math.floor(m.kv_tokens or 0), m.max_model_len)
  end
  return false, reason, doc
end

-- Choose TP groups on one node: up to want groups of size t, each inside one
-- NVLink domain, best fit first (the domain with the fewest free GPUs that
-- still holds a group, so large domains stay whole for large jobs).
local function take_groups(domains, t, want)
  local order = {}
  for i, ids in ipairs(domains) do order[#order + 1] = { i = i, n = #ids } end
  table.sort(order, function(a, b) if a.n ~= b.n then return a.n < b.n end return a.i < b.i end)
  local gpus, got = {}, 0
  for _, d in ipairs(order) do
    local ids = domains[d.i]
    local k = 0
    while got < want and (k + 1) * t <= #ids do
      for j = k * t + 1, (k + 1) * t do gpus[#gpus + 1] = ids[j] end
      k, got = k + 1, got + 1
    end
  end
  table.sort(gpus)
  return gpus, got
end

-- A plan's (or a serve document's) bytes per GPU and capacity.
local function per_gpu(plan)
  if plan.worst then return plan.worst.total_bytes end
  return plan.memory.total_bytes
end
local function capacity(plan)
  if plan.worst then return plan.worst.capacity_bytes end
  return plan.memory.visible_bytes
end

local function groups_on(domains, t)
  local g = 0
  for _, ids in ipairs(domains) do g = g + math.floor(#ids / t) end
  return g
end

--- Can the whole job run on this one node?  true, placement | false, reason
-- | nil, msg, code.
function Sched:fits(job, node)
  if type(job) ~= "table" or type(job.model) ~= "string" then error("job.model (a string) is needed", 2) end
  if type(job.gpus) ~= "number" or job.gpus < 1 then error("job.gpus (at least 1) is needed", 2) end
  local hw, msg, code = self:node_hardware(node)
  if not hw then return nil, msg, code end
  local t = tp_of(job)
  if job.gpus % t ~= 0 then
    return false, string.format("job.gpus (%d) is not a multiple of tp (%d)", job.gpus, t)
  end
  local plan, why, c2 = self:memory(job, hw.gpu.id)
  if plan == nil then return nil, why, c2 end
  if not plan then return false, why end
  local domains, fabric = free_by_domain(node, hw, is_serving(job))
  local gpus, got = take_groups(domains, t, job.gpus / t)
  if got < job.gpus / t then
    local free = 0
    for _, ids in ipairs(domains) do free = free + #ids end
    local where = fabric == "pcie" and "on one node's PCIe" or "within an NVLink domain"
    return false, string.format("%s has %d free GPUs%s; the job needs %d%s", node.name or "node", free,
      t > 1 and string.format(" (%d %s groups of %d)", groups_on(domains, t), fabric == "pcie" and "PCIe" or "NVLink", t)
        or "", job.gpus, t > 1 and string.format(" in groups of %d %s", t, where) or "")
  end
  return true, { gpu = hw.gpu.id, gpus = job.gpus, plan = plan, tp_fabric = t > 1 and fabric or nil,
                 memory_per_gpu = per_gpu(plan), capacity_per_gpu = capacity(plan),
                 nodes = { { name = node.name, gpus = gpus } } }
end

--- A gang placement of the whole job on the cluster, or nil and why.
-- One GPU type per job; every TP group inside one node's NVLink domain;
-- job.gpus_per_node, when set, is honoured exactly; otherwise one node when
-- one can hold the job (the tightest), else as few nodes as possible.
-- Returns placement | nil, reason (does not fit) | nil, msg, code (error).
function Sched:place(job, cluster)
  if type(job) ~= "table" or type(job.model) ~= "string" then error("job.model (a string) is needed", 2) end
  if type(job.gpus) ~= "number" or job.gpus < 1 then error("job.gpus (at least 1) is needed", 2) end
  if type(cluster) ~= "table" or type(cluster.nodes) ~= "table" then error("cluster.nodes is needed", 2) end
  local t = tp_of(job)
  if job.gpus % t ~= 0 then
    return nil, string.format("job.gpus (%d) is not a multiple of tp (%d)", job.gpus, t)
  end
  local per_node = job.gpus_per_node
  if per_node and (per_node % t ~= 0 or job.gpus % per_node ~= 0) then
    return nil, string.format("gpus_per_node (%d) must be a multiple of tp (%d) and divide gpus (%d)",
      per_node, t, job.gpus)
  end
  -- nodes by GPU type, in the order the cluster lists the types
  local by_sku, skus = {}, {}
  for _, node in ipairs(cluster.nodes) do
    local hw, msg, code = self:node_hardware(node)
    if not hw then return nil, msg, code end
    local id = hw.gpu.id
    if not by_sku[id] then by_sku[id] = {}; skus[#skus + 1] = id end
    local domains, fabric = free_by_domain(node, hw, is_serving(job))
    table.insert(by_sku[id], { node = node, domains = domains, groups = groups_on(domains, t), fabric = fabric })
  end
  local reasons, best = {}, nil
  for _, id in ipairs(skus) do
    local plan, why, code = self:memory(job, id)
    if plan == nil then return nil, why, code end
    if not plan then
      reasons[#reasons + 1] = why
    else
      local cands, need = by_sku[id], job.gpus / t
      local have = 0
      for _, c in ipairs(cands) do
        if per_node then
          if c.groups >= per_node / t then have = have + per_node / t end
        else
          have = have + c.groups
        end
      end
      if have < need then
        reasons[#reasons + 1] = string.format(
          "%s: %d of the %d GPUs free in %s (tensor-parallel groups of %d within an NVLink domain%s)",
          id, have * t, job.gpus, per_node and "usable nodes" or "NVLink groups", t,
          per_node and string.format(", %d per node", per_node) or "")
      else
        -- one node if any holds the whole job: the tightest such node (best
        -- fit keeps big free blocks for big jobs); else fewest nodes: most
        -- free groups first.  Ties: by name, so placements are reproducible.
        local single
        if not per_node or per_node == job.gpus then
          for _, c in ipairs(cands) do
            if c.groups >= need and (not single or c.groups < single.groups or
                (c.groups == single.groups and (c.node.name or "") < (single.node.name or ""))) then
              single = c
            end
          end
        end
        table.sort(cands, function(a, b)
          if a.groups ~= b.groups then return a.groups > b.groups end
          return (a.node.name or "") < (b.node.name or "")
        end)
        if single then cands = { single } end
        local nodes, left = {}, need
        for _, c in ipairs(cands) do
          if left == 0 then break end
          local want = per_node and per_node / t or math.min(left, c.groups)
          if c.groups >= want and want > 0 then
            local gpus = take_groups(c.domains, t, want)
            nodes[#nodes + 1] = { name = c.node.name, gpus = gpus }
            left = left - want
          end
        end
        local p = { gpu = id, gpus = job.gpus, plan = plan, nodes = nodes,
                    tp_fabric = t > 1 and (cands[1] and cands[1].fabric) or nil,
                    memory_per_gpu = per_gpu(plan), capacity_per_gpu = capacity(plan) }
        if not best or #nodes < #best.nodes then best = p end
      end
    end
  end
  if best then return best end
  if #reasons == 0 then return nil, "the cluster has no nodes" end
  return nil, table.concat(reasons, "; ")
end

--- Place a serving job's replicas: each replica is one tensor-parallel group
-- of tp GPUs inside one node (NVLink, or PCIe: engines run TP over PCIe),
-- all of one GPU type.  job.replicas (or job.gpus / tp) replicas are wanted;
-- job.min_replicas (default: all of them) is the least that makes a
-- placement.  Nodes are filled tightest first (best fit), so whole nodes stay
-- free for large jobs; ties by name.  The first GPU type in the cluster's
-- order whose memory check passes and that holds the most replicas wins.
-- Returns placement { gpu, tp, tp_fabric, replicas = { {name, gpus}, ... },
-- wanted, plan } | nil, reason | nil, msg, code.
function Sched:place_replicas(job, cluster)
  if type(job) ~= "table" or type(job.model) ~= "string" then error("job.model (a string) is needed", 2) end
  if type(cluster) ~= "table" or type(cluster.nodes) ~= "table" then error("cluster.nodes is needed", 2) end
  local t = (job.options and job.options.tp) or 1
  local want = job.replicas or (job.gpus and math.floor(job.gpus / t))
  if type(want) ~= "number" or want < 1 then error("job.replicas (at least 1) or job.gpus is needed", 2) end
  local need = job.min_replicas or want
  local sjob = { model = job.model, workload = job.workload or "serve", gpus = t, options = job.options }
  local by_sku, skus = {}, {}
  for _, node in ipairs(cluster.nodes) do
    local hw, msg, code = self:node_hardware(node)
    if not hw then return nil, msg, code end
    local id = hw.gpu.id
    if not by_sku[id] then by_sku[id] = {}; skus[#skus + 1] = id end
    local domains, fabric = free_by_domain(node, hw, true)
    table.insert(by_sku[id], { node = node, domains = domains, groups = groups_on(domains, t), fabric = fabric })
  end
  local reasons, best = {}, nil
  for _, id in ipairs(skus) do
    local plan, why, code = self:memory(sjob, id)
    if plan == nil then return nil, why, code end
    if not plan then
      reasons[#reasons + 1] = why
    else
      local cands = by_sku[id]
      table.sort(cands, function(a, b)
        if a.groups ~= b.groups then return a.groups < b.groups end
        return (a.node.name or "") < (b.node.name or "")
      end)
      local placed, fabrics = {}, {}
      for _, c in ipairs(cands) do
        if #placed >= want then break end
        local k = math.min(c.groups, want - #placed)
        if k > 0 then
          local gpus = take_groups(c.domains, t, k)
          for r = 1, k do
            local g = {}
            for q = (r - 1) * t + 1, r * t do g[#g + 1] = gpus[q] end
            placed[#placed + 1] = { name = c.node.name, gpus = g }
          end
          fabrics[c.fabric] = true
        end
      end
      if #placed < need then
        reasons[#reasons + 1] = string.format("%s: room for %d of the %d replicas of %d GPUs", id, #placed, want, t)
      elseif not best or #placed > #best.replicas then
        best = { gpu = id, tp = t, replicas = placed, wanted = want, plan = plan,
                 tp_fabric = t > 1 and (fabrics.pcie and "pcie" or "nvlink") or nil }
      end
    end
  end
  if best then return best end
  if #reasons == 0 then return nil, "the cluster has no nodes" end
  return nil, table.concat(reasons, "; ")
end

-- Module-level helpers on a default scheduler, opened on first use.
local default
local function get_default()
  if not default then
    local s, msg, code = M.new()
    if not s then return nil, msg, code end
    default = s
  end
  return default
end

--- fits(job, node) and place(job, cluster) with the built-in catalog.
function M.fits(job, node)
  local s, msg, code = get_default()
  if not s then return nil, msg, code end
  return s:fits(job, node)
end

function M.place(job, cluster)
  local s, msg, code = get_default()
  if not s then return nil, msg, code end
  return s:place(job, cluster)
end

function M.place_replicas(job, cluster)
  local s, msg, code = get_default()
  if not s then return nil, msg, code end
  return s:place_replicas(job, cluster)
end

M.domains_of = function(node, hw, pcie) return domains_of(node, hw, pcie) end

return M
