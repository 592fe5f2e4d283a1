-- examples/slurm/job_submit.lua against a stand-in for Slurm's Lua API
-- (the slurm table and job_desc as slurmctld passes them).
local H = require "helper"

local function fresh_slurm()
  local s = { SUCCESS = 0, ERROR = -1, user = {}, info = {} }
  s.log_user = function(fmt, ...) s.user[#s.user + 1] = string.format(fmt, ...) end
  s.log_info = function(fmt, ...) s.info[#s.info + 1] = string.format(fmt, ...) end
  return s
end

describe("Slurm job_submit.lua", function()
  local script
  before_each(function()
    _G.slurm = fresh_slurm()
    script = dofile(H.SOURCE .. "/examples/slurm/job_submit.lua")
  end)

  it("rejects a full fine-tune of a 70B model on 2 x A100-40GB, naming the shortfall and the fix", function()
    local rc = slurm_job_submit({ tres_per_node = "gres/gpu:a100:2", min_nodes = 1,
                                  comment = "gpuplan:model=llama-2-70b,workload=train" }, {}, 1000)
    assert.equal(slurm.ERROR, rc)
    local msg = slurm.user[1]
    -- Issue 12 changed the figures deliberately: eager activations (MM-1), foreach AdamW's
    -- temporaries (MM-5), NVML's 40,960 MiB (MM-2); the ladder offers QLoRA before new GPUs (MM-10).
    assert.truthy(msg:find("llama-2-70b training needs 1414.3 GiB per GPU on 2 x a100-sxm4-40gb", 1, true), msg)
    assert.truthy(msg:find("short by 1374.3 GiB per GPU", 1, true), msg)
    assert.truthy(msg:find("Fix: QLoRA", 1, true), msg)
    assert.truthy(msg:find("optimizer states", 1, true), msg)
  end)

  it("accepts a job that fits", function()
    local rc = slurm_job_submit({ tres_per_node = "gres/gpu:a100:4",
      comment = "gpuplan:model=llama-2-7b,dp_mode=zero3,recompute=full" }, {}, 1000)
    assert.equal(slurm.SUCCESS, rc)
    assert.equal(0, #slurm.user)
  end)

  it("counts GPUs per node times nodes, and per job", function()
    local rc = slurm_job_submit({ tres_per_node = "gres/gpu:h100:8", min_nodes = 2,
      comment = "gpuplan:model=llama-2-70b,tp=8,pp=2,dp_mode=zero1,sequence_parallel=true,recompute=selective" },
      {}, 1000)
    assert.equal(slurm.SUCCESS, rc, slurm.user[1])
    rc = slurm_job_submit({ tres_per_job = "gres/gpu:2", partition = "gpu",
                            comment = "gpuplan:model=llama-2-70b" }, {}, 1000)
    assert.equal(slurm.ERROR, rc)
    assert.truthy(slurm.user[1]:find("on 2 x a100-sxm4-40gb", 1, true))
  end)

  it("parses the GRES spellings of Slurm versions", function()
    local cases = {
      { "gres/gpu:a100:2", 2, "a100" }, { "gres:gpu:a100:2", 2, "a100" }, { "gpu:a100:2", 2, "a100" },
      { "gres/gpu:4", 4, nil }, { "gres/gpu=4", 4, nil }, { "cpu=8,gres/gpu:l4:1", 1, "l4" },
      { "gres/gpu", 1, nil },
    }
    for _, c in ipairs(cases) do
      local n, typ = script.parse_gpus(c[1])
      assert.equal(c[2], n, c[1])
      assert.equal(c[3], typ, c[1])
    end
    assert.is_nil(script.parse_gpus("gres/fpga:1"))
    assert.is_nil(script.parse_gpus(nil))
  end)

  it("passes jobs without a gpuplan tag untouched", function()
    assert.equal(slurm.SUCCESS, slurm_job_submit({ tres_per_node = "gres/gpu:a100:1", comment = "my run" }, {}, 1))
    assert.equal(slurm.SUCCESS, slurm_job_submit({}, {}, 1))
  end)

  it("rejects a tag with an unknown model or option, saying which", function()
    local rc = slurm_job_submit({ tres_per_node = "gres/gpu:a100:2", comment = "gpuplan:model=gpt-9" }, {}, 1)
    assert.equal(slurm.ERROR, rc)
    assert.truthy(slurm.user[1]:find("gpt-9", 1, true))
    rc = slurm_job_submit({ tres_per_node = "gres/gpu:a100:2", comment = "gpuplan:model=llama-2-7b,colour=blue" },
      {}, 1)
    assert.equal(slurm.ERROR, rc)
    assert.truthy(slurm.user[2]:find("colour", 1, true))
    rc = slurm_job_submit({ comment = "gpuplan:model=llama-2-7b" }, {}, 1)
    assert.equal(slurm.ERROR, rc)
    assert.truthy(slurm.user[3]:find("requests no GPUs", 1, true))
  end)

  it("modifications pass", function()
    assert.equal(slurm.SUCCESS, slurm_job_modify({}, {}, {}, 1))
  end)
end)
