-- LuaRocks package of the gpuplan Lua binding.  libgpuplan itself is built
-- and installed with CMake first (README: cmake --install), then:
--   luarocks make bindings/lua/gpuplan-0.1.0-1.rockspec GPUPLAN_DIR=/usr/local
rockspec_format = "3.0"
package = "gpuplan"
version = "0.1.0-1"
source = {
  url = "git+https://example.invalid/gpuplan.git",
  tag = "v0.1.0",
}
description = {
  summary = "Plan GPU memory and simulate deep-learning training on models of real hardware",
  detailed = [[
    Bindings to libgpuplan: the GPU/VM/model catalog, per-GPU memory by
    component with the fix ladder, step time and cost, layout search,
    PyTorch caching-allocator simulation and snapshot replay; and
    gpuplan.sched, admission and gang placement of GPU jobs for schedulers
    (Slurm's job_submit.lua).  Runs on Lua 5.1-5.4 and LuaJIT.
  ]],
  license = "MIT",
  labels = { "gpu", "cuda", "pytorch", "slurm", "scheduler" },
}
dependencies = {
  "lua >= 5.1, < 5.5",
}
external_dependencies = {
  GPUPLAN = { header = "gpuplan.h", library = "gpuplan" },
}
build = {
  type = "builtin",
  modules = {
    gpuplan = {
      sources = { "bindings/lua/lgpuplan.c" },
      incdirs = { "$(GPUPLAN_INCDIR)", "bindings/lua" },
      libdirs = { "$(GPUPLAN_LIBDIR)" },
      libraries = { "gpuplan" },
    },
    ["gpuplan.sched"] = "bindings/lua/gpuplan/sched.lua",
  },
  copy_directories = { "examples" },
}
test_dependencies = { "busted" }
test = { type = "busted", flags = { "tests/lua" } }
