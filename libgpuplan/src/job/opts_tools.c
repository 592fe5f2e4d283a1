/*
 * opts_tools.c: options of replay, explain-oom and catalog.  The order
 * matches the T_* enum of tools_int.h.  replay also takes the planning
 * options gpu (capacity from a catalog SKU) and alloc_conf (job_options.c).
 */
#include "job/tools_int.h"

#define MIB 1048576.0

static const gpuplan_option_info opts[] = {
  /* replay */
  {"file", "file", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)",
   "the torch.cuda.memory._dump_snapshot() pickle to replay", C_REPLAY, GPUPLAN_OPTF_POSITIONAL, "input"},
  {"env_alloc_conf", "env-alloc-conf", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "unset",
   "the value of PYTORCH_ALLOC_CONF in the run's environment (the CLI passes its own): used when alloc_conf is "
   "not given, by releases that read it (2.10 and later)",
   C_REPLAY | C_SIMULATE, 0, "what-if"},
  {"env_cuda_alloc_conf", "env-cuda-alloc-conf", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "unset",
   "the value of PYTORCH_CUDA_ALLOC_CONF in the run's environment (the CLI passes its own): used when "
   "alloc_conf is not given, after PYTORCH_ALLOC_CONF from 2.10, alone before",
   C_REPLAY | C_SIMULATE, 0, "what-if"},
  {"capacity", "capacity", GPUPLAN_OPT_BYTES, "MiB", MIB, 1125899906842624.0, NULL, "unlimited (or the gpu's)",
   "what-if: device memory PyTorch can use (18700, 40GiB)", C_REPLAY, 0, "what-if"},
  {"torch", "torch", GPUPLAN_OPT_ENUM, "", 0, 0,
   "latest|2.10|2.9|2.8|2.7|2.6|2.5|2.4|2.3|2.2|2.1|2.x|2.0|1.13", "latest",
   "the PyTorch release whose allocator rules, alloc conf keys, OOM text and summary layout to follow "
   "(docs/allocator.md, Versions)", C_REPLAY | C_SIMULATE, 0, "what-if"},
  {"device", "device", GPUPLAN_OPT_INT, "", 0, 1024, NULL, "0", "which device's trace and segments",
   C_REPLAY, 0, "input"},
  {"timeline", "timeline", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "torch.cuda.memory_allocated() and memory_reserved() after every trace event (timeline.allocated_bytes, .reserved_bytes)",
   C_REPLAY, 0, "report"},
  {"summary", "summary", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "torch.cuda.memory_summary() of the allocator at the end of the replay or simulation", C_REPLAY | C_SIMULATE,
   0, "report"},
  {"abbreviated", "abbreviated", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "memory_summary(abbreviated=True): no large/small pool rows (implies summary)", C_REPLAY | C_SIMULATE, 0, "report"},
  {"memory_stats", "memory-stats", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "torch.cuda.memory_stats() of the allocator at the end of the replay or simulation, with the keys of the torch "
   "release (memory_stats.*)", C_REPLAY | C_SIMULATE, 0, "report"},
  {"html", "html", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "write a self-contained HTML page to this path: memory over the replay, the peak, the segment map at the "
   "peak, the OOM", C_REPLAY, 0, "report"},

  /* explain-oom */
  {"message", "message", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)",
   "the OutOfMemoryError text, or a whole log (the first OOM in it is read)", C_EXPLAIN,
   GPUPLAN_OPTF_POSITIONAL, "input"},

  /* catalog */
  {"subcommand", "subcommand", GPUPLAN_OPT_ENUM, "", 0, 0, "gpus|nodes|models|fabrics|show|info", "(required)",
   "list gpus, nodes, models or fabrics; show one record; info", C_CATALOG, GPUPLAN_OPTF_POSITIONAL,
   "catalog"},
  {"name", "name", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(show: required)",
   "show: an id, name or alias, case-insensitive ('H100 SXM', 'a100-80gb', 'nd96asr_v4')", C_CATALOG, 0,
   "catalog"},
  {"kind", "kind", GPUPLAN_OPT_ENUM, "", 0, 0, "gpu|fabric|node|model", "every kind",
   "show: look the name up among records of this kind only", C_CATALOG, 0, "catalog"},
};

const gpuplan__opt_table gpuplan__opts_tools = {opts, sizeof opts / sizeof opts[0]};

/* The enum and the table must agree. */
typedef char gpuplan__opts_tools_count_check[(sizeof opts / sizeof opts[0]) == T_COUNT ? 1 : -1];

/* The releases of T_TORCH's choices, in order: each has rules of its own
 * (a predicate on major*100+minor in alloc/conf.c); what changed where is
 * in docs/allocator.md ("Versions").  "2.x" keeps 0.1's meaning, the
 * class 2.1 to 2.9, as the rules of 2.9. */
static const gpuplan__torch_release releases[] = {
  {"latest", GPUPLAN_TORCH_LATEST, "main after 2.10"},
  {"2.10", GPUPLAN_TORCH_V2_10, "2.10"},
  {"2.9", GPUPLAN_TORCH_V2_9, "2.9"},
  {"2.8", GPUPLAN_TORCH_V2_8, "2.8"},
  {"2.7", GPUPLAN_TORCH_V2_7, "2.7"},
  {"2.6", GPUPLAN_TORCH_V2_6, "2.6"},
  {"2.5", GPUPLAN_TORCH_V2_5, "2.5"},
  {"2.4", GPUPLAN_TORCH_V2_4, "2.4"},
  {"2.3", GPUPLAN_TORCH_V2_3, "2.3"},
  {"2.2", GPUPLAN_TORCH_V2_2, "2.2"},
  {"2.1", GPUPLAN_TORCH_V2_1, "2.1"},
  {"2.x", GPUPLAN_TORCH_2_X, "2.9 (2.x: 2.1 to 2.9)"},
  {"2.0", GPUPLAN_TORCH_V2_0, "2.0"},
  {"1.13", GPUPLAN_TORCH_V1_13, "1.13"},
};

const gpuplan__torch_release *gpuplan__torch_release_at(int64_t index) {
  if (index < 0 || (size_t)index >= sizeof releases / sizeof releases[0]) return &releases[0];
  return &releases[index];
}
