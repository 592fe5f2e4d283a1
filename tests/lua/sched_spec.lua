-- gpuplan.sched: admission (fits) and gang placement (place) honouring
-- NVLink domains, one GPU type per job, and memory from the planner.
local sched = require "gpuplan.sched"

local function ids(n) local t = {} for i = 0, n - 1 do t[#t + 1] = i end return t end

local function names(p)
  local t = {}
  for _, n in ipairs(p.nodes) do t[#t + 1] = n.name .. ":" .. table.concat(n.gpus, ",") end
  return table.concat(t, " ")
end

describe("gpuplan.sched", function()
  local s
  setup(function() s = assert(sched.new()) end)

  -- a layout of Llama-2-70B that fits 16 A100-80GB: tp 8, pp 2, ZeRO-1, full recompute
  local j70 = { model = "llama-2-70b", gpus = 16,
                options = { tp = 8, pp = 2, dp_mode = "zero1", sequence_parallel = true, recompute = "full" } }

  describe("fits(job, node)", function()
    it("refuses a 70B full fine-tune on 2 x A100-40GB, naming the shortfall and the fix", function()
      local ok, why = s:fits({ model = "llama-2-70b", gpus = 2 },
        { name = "gpu01", gpu = "a100-sxm4-40gb", free = { 0, 1 } })
      assert.is_false(ok)
      assert.truthy(why:find("short by", 1, true), why)
      assert.truthy(why:find("; fix: ", 1, true), why) -- the ladder's first rung that fits
    end)

    it("admits a job that fits and names its GPUs", function()
      local ok, p = s:fits({ model = "llama-2-7b", gpus = 4, options = { dp_mode = "zero3", recompute = "full" } },
        { name = "gpu01", gpu = "a100-sxm4-40gb", free = { 1, 3, 5, 7 } })
      assert.is_true(ok)
      assert.equal("gpu01:1,3,5,7", names(p))
      assert.is_true(p.memory_per_gpu < p.capacity_per_gpu)
    end)

    it("refuses when the node has too few free GPUs", function()
      local ok, why = s:fits({ model = "llama-2-7b", gpus = 8, options = { dp_mode = "zero3" } },
        { name = "gpu01", gpu = "a100-sxm4-80gb", free = { 0, 1, 2 } })
      assert.is_false(ok)
      assert.truthy(why:find("3 free GPUs", 1, true), why)
    end)

    it("keeps a tensor-parallel group inside one NVLink domain", function()
      -- two NVLink islands of 4 (as a node split into quads); 2 + 2 free is not a group of 4
      local node = { name = "quad", gpu = "a100-sxm4-80gb", free = { 0, 1, 4, 5 },
                     nvlink_domains = { { 0, 1, 2, 3 }, { 4, 5, 6, 7 } } }
      local ok, why = s:fits({ model = "llama-2-13b", gpus = 4, options = { tp = 4 } }, node)
      assert.is_false(ok)
      assert.truthy(why:find("groups of 4 within an NVLink domain", 1, true), why)
      node.free = { 0, 1, 2, 3, 4 }
      local ok2, p = s:fits({ model = "llama-2-13b", gpus = 4, options = { tp = 4 } }, node)
      assert.is_true(ok2, p)
      assert.equal("quad:0,1,2,3", names(p))
    end)

    it("treats PCIe cards without NVLink as one domain each for training", function()
      local node = { name = "l4box", gpu = "l4", free = { 0, 1, 2, 3 } }
      local ok, why = s:fits({ model = "gpt-2", gpus = 2, options = { tp = 2 } }, node)
      assert.is_false(ok) -- training TP needs NVLink between the GPUs
      assert.truthy(why:find("NVLink", 1, true), why)
    end)

    it("admits serving with tensor parallelism over PCIe, as vLLM runs it (EC-13)", function()
      local node = { name = "l4box", gpu = "l4", free = { 0, 1, 2, 3 } }
      local ok, p = s:fits({ model = "llama-2-7b", gpus = 2, workload = "infer" }, node)
      assert.is_true(ok, p)
      assert.equal("pcie", p.tp_fabric)
      assert.equal("l4box:0,1", names(p))
      ok = s:fits({ model = "llama-2-7b", gpus = 1, workload = "infer" }, node)
      assert.is_true(ok)
    end)

    it("takes the node's hardware from the catalog (node_type)", function()
      local ok, p = s:fits({ model = "llama-2-13b", gpus = 8, options = { dp_mode = "zero3", recompute = "full" } },
        { name = "az1", node_type = "Standard_ND96asr_v4", free = ids(8) })
      assert.is_true(ok, p)
      assert.equal("a100-sxm4-40gb", p.gpu)
    end)

    it("returns nil, message, code for unknown hardware or models; raises on a malformed job", function()
      local r, msg, code = s:fits({ model = "llama-2-7b", gpus = 1 }, { name = "x", gpu = "a100-9000", free = { 0 } })
      assert.is_nil(r)
      assert.equal("GPUPLAN_ENOTFOUND", code)
      assert.truthy(msg:find("a100-9000", 1, true))
      r, msg, code = s:fits({ model = "gpt-9", gpus = 1 }, { name = "x", gpu = "a100-sxm4-40gb", free = { 0 } })
      assert.is_nil(r)
      assert.equal("GPUPLAN_ENOTFOUND", code)
      assert.has_error(function() s:fits({ gpus = 1 }, { gpu = "l4", free = { 0 } }) end)
      assert.has_error(function() s:fits({ model = "llama-2-7b", gpus = 0 }, { gpu = "l4", free = { 0 } }) end)
    end)
  end)

  describe("place(job, cluster)", function()
    local cluster = { nodes = {
      { name = "n1", gpu = "a100-sxm4-80gb", free = { 0, 1, 2, 3, 4, 5 } },
      { name = "n2", gpu = "a100-sxm4-80gb", free = ids(8) },
      { name = "n3", gpu = "a100-sxm4-80gb", free = ids(8) },
      { name = "p1", gpu = "l4", free = ids(4) },
    } }

    it("places every rank or none (gang), TP groups whole on NVLink", function()
      local p = assert(s:place(j70, cluster))
      assert.equal("n2:0,1,2,3,4,5,6,7 n3:0,1,2,3,4,5,6,7", names(p))
      assert.equal("a100-sxm4-80gb", p.gpu)
      -- 32 GPUs: n1's 6 free are not a group of 8, so only 16 are usable:
      -- refused whole, not placed in part
      local job = { model = j70.model, gpus = 32, options = j70.options }
      local none, why = s:place(job, cluster)
      assert.is_nil(none)
      assert.truthy(why:find("16 of the 32 GPUs", 1, true), why)
    end)

    it("puts a job that fits one node on the tightest node (best fit)", function()
      local p = assert(s:place({ model = "llama-2-7b", gpus = 4, workload = "infer" }, cluster))
      assert.equal("n1:0,1,2,3", names(p))
    end)

    it("honours gpus_per_node exactly", function()
      local p = assert(s:place({ model = "llama-2-13b", gpus = 8, gpus_per_node = 4,
                                 options = { dp_mode = "zero3" } }, cluster))
      assert.equal(2, #p.nodes)
      for _, n in ipairs(p.nodes) do assert.equal(4, #n.gpus) end
    end)

    it("never mixes GPU types in one job and says why each type fails", function()
      local none, why = s:place({ model = "llama-2-70b", gpus = 16, options = { tp = 8 } }, cluster)
      assert.is_nil(none)
      assert.truthy(why:find("a100-sxm4-80gb", 1, true) and why:find("l4", 1, true), why)
      assert.truthy(why:find("short by", 1, true), why)
    end)

    it("falls back to another GPU type when the first cannot hold the model", function()
      -- Llama-2-13B in bf16 is 26 GB of weights: more than an L4's 24 GB
      local mixed = { nodes = {
        { name = "a", gpu = "l4", free = ids(4) },
        { name = "b", gpu = "a100-sxm4-80gb", free = { 3 } },
      } }
      local p = assert(s:place({ model = "llama-2-13b", gpus = 1, workload = "infer" }, mixed))
      assert.equal("a100-sxm4-80gb", p.gpu)
      assert.equal("b:3", names(p))
    end)

    it("works through the module-level helpers with the built-in catalog", function()
      local p = assert(sched.place({ model = "llama-2-7b", gpus = 1, workload = "infer" }, cluster))
      assert.equal(1, #p.nodes)
      assert.is_true(sched.fits({ model = "llama-2-7b", gpus = 1, workload = "infer" }, cluster.nodes[4]))
    end)
  end)
  describe("serving jobs (gpuplan serve's memory, replicas)", function()
    it("checks memory as the engine lays it out: weights, activations, KV for one max_model_len request", function()
      local node = { name = "l4a", gpu = "l4", free = ids(4) }
      -- Llama-3.1-8B's 131072-token default context needs more KV than one L4 holds
      local ok, why = s:fits({ model = "llama-3.1-8b", gpus = 1, workload = "serve" }, node)
      assert.is_false(ok)
      assert.truthy(why:find("max_model_len", 1, true), why)
      -- at an 8k context it serves, on one L4 or as tp 2 over PCIe
      local p
      ok, p = s:fits({ model = "llama-3.1-8b", gpus = 1, workload = "serve", options = { context_len = 8192 } }, node)
      assert.is_true(ok, p)
      assert.truthy(p.plan.memory.kv_tokens >= 8192)
      ok, p = s:fits({ model = "llama-3.1-8b", gpus = 2, workload = "serve",
                       options = { tp = 2, context_len = 32768 } }, node)
      assert.is_true(ok, p)
      assert.equal("pcie", p.tp_fabric)
      assert.equal(2, p.plan.layout.tp)
    end)

    it("refuses weights beyond the engine's budget with the numbers", function()
      local ok, why = s:fits({ model = "llama-2-70b", gpus = 1, workload = "serve" },
        { name = "l4a", gpu = "l4", free = { 0 } })
      assert.is_false(ok)
      assert.truthy(why:find("does not fit", 1, true), why)
    end)

    it("places replicas, each a TP group inside one node, tightest nodes first", function()
      local cluster = { nodes = {
        { name = "h1", gpu = "h100-sxm5-80gb", free = ids(8) },
        { name = "h2", gpu = "h100-sxm5-80gb", free = { 0, 1, 2 } },
      } }
      local p = assert(s:place_replicas({ model = "llama-3-8b", replicas = 4, options = { tp = 2 } }, cluster))
      assert.equal("h100-sxm5-80gb", p.gpu)
      assert.equal(4, #p.replicas)
      assert.equal("nvlink", p.tp_fabric)
      -- h2 (3 free: one group of 2) is filled first, then h1
      assert.equal("h2", p.replicas[1].name)
      assert.same({ 0, 1 }, p.replicas[1].gpus)
      for i = 2, 4 do assert.equal("h1", p.replicas[i].name); assert.equal(2, #p.replicas[i].gpus) end
    end)

    it("places serving replicas over PCIe cards, all or none unless min_replicas says", function()
      local cluster = { nodes = {
        { name = "l4a", gpu = "l4", free = ids(4) },
        { name = "l4b", gpu = "l4", free = { 1, 2, 3 } },
      } }
      local job = { model = "llama-3.1-8b", replicas = 4, options = { tp = 2, context_len = 16384 } }
      local none, why = s:place_replicas(job, cluster)
      assert.is_nil(none)
      assert.truthy(why:find("room for 3 of the 4 replicas", 1, true), why)
      job.min_replicas = 2
      local p = assert(s:place_replicas(job, cluster))
      assert.equal(3, #p.replicas)
      assert.equal("pcie", p.tp_fabric)
      assert.equal(4, p.wanted)
    end)

    it("goes to the next GPU type when the first cannot hold the model", function()
      local cluster = { nodes = {
        { name = "t", gpu = "t4", free = ids(4) },
        { name = "a", gpu = "a100-sxm4-80gb", free = ids(2) },
      } }
      local p = assert(sched.place_replicas({ model = "llama-2-13b", replicas = 2,
                                              options = { context_len = 4096 } }, cluster))
      assert.equal("a100-sxm4-80gb", p.gpu)
      assert.equal(2, #p.replicas)
    end)
  end)
end)
