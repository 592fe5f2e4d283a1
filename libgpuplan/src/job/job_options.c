/*
 * job_options.c: the options of the planning commands (plan, perf, search,
 * simulate): the model, the hardware, training, layout, inference, fixed
 * costs, and each command's own.  The order matches the J_* enum of
 * job_int.h.  Help texts are what `gpuplan plan --help`, the Python
 * docstrings, the Lua docs and docs/options.md print.
 */
#include "job/job_int.h"

#define BIG 9.007199254740992e15
#define TRAINING (C_PLAN | C_PERF | C_SEARCH | C_SIMULATE)
#define MIB 1048576.0

static const gpuplan_option_info opts[] = {
  /* model and hardware */
  {"model", "model", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)",
   "a catalog model (gpuplan catalog models), a size such as 70B (the catalog model of that size), a Hugging "
   "Face config.json or its directory; none with the shape options (layers, hidden, heads, vocab, ...)",
   TRAINING | C_SERVE, GPUPLAN_OPTF_POSITIONAL, "model"},
  {"gpu", "gpu", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none (planning: a gpu or a node is required)",
   "a GPU SKU from the catalog (gpuplan catalog gpus); replay: the memory its driver reports less its CUDA context "
   "is the capacity, as simulate takes it",
   TRAINING | C_TOPO | C_REPLAY | C_SERVE, 0, "hardware"},
  {"gpus", "gpus", GPUPLAN_OPT_INT, "GPUs", 1, 16777216, NULL, "tp*pp*dp*cp, or the node's GPUs x nodes",
   "number of GPUs", TRAINING | C_SERVE, 0, "hardware"},
  {"node", "node", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "a catalog node or cloud VM: its GPU, GPU count, visible memory, fabric and price", TRAINING | C_TOPO | C_SERVE, 0,
   "hardware"},
  {"nodes", "nodes", GPUPLAN_OPT_INT, "nodes", 1, 1048576, NULL, "1", "number of such nodes",
   TRAINING | C_TOPO | C_SERVE, 0, "hardware"},
  {"per_node", "per-node", GPUPLAN_OPT_INT, "GPUs", 1, 1024, NULL, "8",
   "GPUs per node for a bare --gpu (DGX/HGX-style nodes)", TRAINING | C_TOPO | C_SERVE, 0, "hardware"},
  {"workload", "workload", GPUPLAN_OPT_ENUM, "", 0, 0, "train|infer", "train",
   "training or inference (serving): --train, --infer", C_PLAN | C_PERF | C_SIMULATE,
   GPUPLAN_OPTF_VALUE_FLAGS, "workload"},

  /* training */
  {"micro_batch", "micro-batch", GPUPLAN_OPT_INT, "sequences", 1, 1048576, NULL, "1",
   "sequences per micro-batch", TRAINING, 0, "training"},
  {"seq_len", "seq", GPUPLAN_OPT_INT, "tokens", 1, 16777216, NULL, "the model's",
   "sequence length", TRAINING, 0, "training"},
  {"grad_accum", "grad-accum", GPUPLAN_OPT_INT, "micro-batches", 1, 16777216, NULL, "pp",
   "micro-batches per optimizer step and pipeline (gradient accumulation)", TRAINING, 0, "training"},
  {"precision", "precision", GPUPLAN_OPT_ENUM, "", 0, 0, "bf16-mixed|fp16-mixed|fp32|bf16|fp8", "bf16-mixed",
   "training precision recipe", TRAINING, 0, "training"},
  {"optimizer", "optimizer", GPUPLAN_OPT_ENUM, "", 0, 0, "adamw|sgd|momentum|adam8bit|adafactor", "adamw",
   "optimizer (its states per parameter)", TRAINING, 0, "training"},
  {"grad_bytes", "grad-bytes", GPUPLAN_OPT_INT, "B", 2, 4, NULL, "the convention's",
   "bytes per gradient element (2 or 4)", TRAINING, 0, "training"},
  {"convention", "convention", GPUPLAN_OPT_ENUM, "", 0, 0, "deepspeed|megatron|fsdp|hf",
   "fsdp with --fsdp, else deepspeed",
   "bytes per parameter as a framework keeps them: deepspeed (ZeRO paper), megatron (fp32 main grads), "
   "fsdp, hf (HF Trainer)", TRAINING, 0, "training"},
  {"recompute", "recompute", GPUPLAN_OPT_ENUM, "", 0, 0, "none|selective|full", "none",
   "activation recomputation (checkpointing)", TRAINING, 0, "training"},
  {"flash_attention", "flash", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "true",
   "FlashAttention (no s^2 score matrix kept); --no-flash for explicit attention", TRAINING, 0, "training"},
  {"dropout", "dropout", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "true", "dropout masks kept (--no-dropout)",
   TRAINING, 0, "training"},
  {"offload_optimizer", "offload-optimizer", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "master weights and optimizer states in host memory (ZeRO-Offload)", TRAINING, 0, "training"},
  {"offload_params", "offload-params", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "ZeRO-3 parameter shards in host memory (ZeRO-Infinity)", TRAINING, 0, "training"},

  /* layout */
  {"tp", "tp", GPUPLAN_OPT_INT, "GPUs", 1, 65536, NULL, "1", "tensor-parallel degree", TRAINING | C_SERVE, 0,
   "layout"},
  {"pp", "pp", GPUPLAN_OPT_INT, "stages", 1, 65536, NULL, "1", "pipeline-parallel degree", TRAINING | C_SERVE, 0,
   "layout"},
  {"dp", "dp", GPUPLAN_OPT_INT, "replicas", 1, 16777216, NULL, "gpus / (tp*pp*cp)", "data-parallel degree",
   TRAINING, 0, "layout"},
  {"cp", "cp", GPUPLAN_OPT_INT, "GPUs", 1, 65536, NULL, "1", "context-parallel degree", TRAINING, 0, "layout"},
  {"ep", "ep", GPUPLAN_OPT_INT, "GPUs", 1, 65536, NULL, "1", "expert-parallel degree (MoE)", TRAINING | C_SERVE, 0,
   "layout"},
  {"sequence_parallel", "sp", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "Megatron sequence parallelism (with tp > 1)", TRAINING, 0, "layout"},
  {"zero", "zero", GPUPLAN_OPT_INT, "stage", 0, 3, NULL, "0 (DDP)", "DeepSpeed ZeRO stage", TRAINING, 0,
   "layout"},
  {"fsdp", "fsdp", GPUPLAN_OPT_ENUM, "", 0, 0, "full|grad-op|hybrid", "none",
   "PyTorch FSDP sharding: FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD (with shard_group); sets the fsdp convention",
   TRAINING, 0, "layout"},
  {"dp_mode", "dp-mode", GPUPLAN_OPT_ENUM, "", 0, 0, "ddp|zero1|zero2|zero3|fsdp-full|fsdp-grad-op|fsdp-hybrid",
   "ddp", "data-parallel sharding by name (the same as zero / fsdp)", TRAINING, 0, "layout"},
  {"shard_group", "shard-group", GPUPLAN_OPT_INT, "GPUs", 1, 16777216, NULL, "the GPUs of a node",
   "HYBRID_SHARD: GPUs a model is sharded over (replicated across groups)", TRAINING, 0, "layout"},
  {"schedule", "schedule", GPUPLAN_OPT_ENUM, "", 0, 0, "1f1b|gpipe|interleaved", "1f1b", "pipeline schedule",
   TRAINING, 0, "layout"},
  {"vpp", "vpp", GPUPLAN_OPT_INT, "chunks", 1, 1024, NULL, "1", "model chunks per stage (interleaved schedule)",
   TRAINING, 0, "layout"},
  {"first_stage_layers", "first-stage-layers", GPUPLAN_OPT_INT, "layers", 1, 1048576, NULL, "even split",
   "layers on the first pipeline stage (uneven split)", TRAINING, 0, "layout"},
  {"last_stage_layers", "last-stage-layers", GPUPLAN_OPT_INT, "layers", 1, 1048576, NULL, "even split",
   "layers on the last pipeline stage (uneven split)", TRAINING, 0, "layout"},
  {"prefetch", "prefetch", GPUPLAN_OPT_INT, "layers", 0, 64, NULL, "1", "ZeRO-3/FSDP layers gathered ahead",
   TRAINING, 0, "layout"},
  {"bucket", "bucket", GPUPLAN_OPT_BYTES, "MiB", 1, 1099511627776.0, NULL, "25 MiB",
   "gradient bucket (DDP, ZeRO)", TRAINING, 0, "layout"},

  /* inference */
  {"weight_dtype", "weights", GPUPLAN_OPT_ENUM, "", 0, 0, "bf16|fp16|fp32|fp8|int8|int4", "bf16",
   "weights' storage type when serving", C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"kv_dtype", "kv", GPUPLAN_OPT_ENUM, "", 0, 0, "bf16|fp16|fp32|fp8|int8|int4", "bf16", "KV-cache type",
   C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"context_len", "context", GPUPLAN_OPT_INT, "tokens", 1, 16777216, NULL, "the model's maximum",
   "tokens per sequence (prompt + output)", C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"batch", "batch", GPUPLAN_OPT_INT, "sequences", 1, 16777216, NULL, "1", "concurrent sequences",
   C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"paged", "paged", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false", "paged KV cache (vLLM blocks)",
   C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"block_tokens", "block", GPUPLAN_OPT_INT, "tokens", 1, 65536, NULL, "16", "tokens per KV block (paged)",
   C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},
  {"group_size", "group", GPUPLAN_OPT_INT, "elements", 1, 1048576, NULL, "128",
   "int4/int8 quantisation group", C_PLAN | C_PERF | C_SIMULATE | C_SERVE, 0, "inference"},

  /* fixed costs */
  {"cuda_context", "cuda-context", GPUPLAN_OPT_BYTES, "MiB", 0, 1099511627776.0, NULL, "the SKU's catalog value",
   "CUDA context", TRAINING | C_SERVE, 0, "fixed costs"},
  {"nccl", "nccl", GPUPLAN_OPT_BYTES, "MiB", 0, 1099511627776.0, NULL, "0 on one GPU, else an estimate",
   "NCCL communicator buffers", TRAINING, 0, "fixed costs"},
  {"workspace", "workspace", GPUPLAN_OPT_BYTES, "MiB", 0, 1099511627776.0, NULL,
   "PyTorch's: 8.125 MiB per cuBLAS handle (32 MiB on sm 9.x, 10.x, 12.x); training has 2",
   "cuBLAS workspaces in all (allocated by the caching allocator at the first GEMM of each handle)", TRAINING, 0, "fixed costs"},

  /* plan */
  {"per_rank", "per-rank", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false", "every pipeline stage, not only the worst",
   C_PLAN, 0, "plan"},
  {"max_gpus", "max-gpus", GPUPLAN_OPT_INT, "GPUs", 1, 16777216, NULL, "max(8, gpus)",
   "GPUs the fix ladder may use", C_PLAN, 0, "plan"},

  /* perf and search */
  {"global_batch", "global-batch", GPUPLAN_OPT_INT, "sequences", 1, 1e12, NULL, "dp x micro-batch x grad-accum",
   "sequences per optimizer step (search: required)", C_PERF | C_SEARCH, 0, "perf"},
  {"tokens", "tokens", GPUPLAN_OPT_REAL, "tokens", 1, 1e18, NULL, "none",
   "training tokens, for the time and cost to train (e.g. 300e9)", C_PERF | C_SEARCH, 0, "perf"},
  {"intra", "intra", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "the node's or the SKU's",
   "fabric inside a node: nvlink4, nvswitch3, pcie4, ... (gpuplan catalog fabrics)",
   C_PERF | C_SEARCH | C_SERVE | C_SIMULATE, 0, "perf"},
  {"inter", "inter", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "the node's, or InfiniBand NDR",
   "fabric between nodes: ib-ndr, roce-400, eth-100, ...", C_PERF | C_SEARCH | C_SIMULATE, 0, "perf"},
  {"nics", "nics", GPUPLAN_OPT_INT, "NICs", 1, 64, NULL, "one per GPU", "scale-out NICs per node",
   C_PERF | C_SEARCH | C_SIMULATE, 0, "perf"},
  {"nic_gbps", "nic-gbps", GPUPLAN_OPT_REAL, "Gb/s", 1, 1e5, NULL, "the fabric's", "bandwidth of each NIC",
   C_PERF | C_SEARCH | C_SIMULATE, 0, "perf"},
  {"top", "top", GPUPLAN_OPT_INT, "layouts", 1, 100, NULL, "5", "layouts to show", C_SEARCH | C_SERVE, 0, "search"},
  {"objective", "objective", GPUPLAN_OPT_ENUM, "", 0, 0, "time|cost", "time", "rank by step time or by cost",
   C_SEARCH, 0, "search"},
  {"across", "across", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "search every priced node/VM type and 1, 2, 4, ... nodes (with tokens, days)", C_SEARCH, 0, "search"},
  {"days", "days", GPUPLAN_OPT_REAL, "days", 1e-6, 1e6, NULL, "none", "deadline for --across", C_SEARCH, 0,
   "search"},
  {"max_nodes", "max-nodes", GPUPLAN_OPT_INT, "nodes", 1, 65536, NULL, "64", "most nodes --across tries",
   C_SEARCH, 0, "search"},

  /* simulate */
  {"steps", "steps", GPUPLAN_OPT_INT, "steps", 1, 1000000, NULL, "2", "training steps to simulate", C_SIMULATE,
   0, "simulate"},
  {"alloc_conf", "alloc-conf", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "allocator settings as PYTORCH_ALLOC_CONF takes them, e.g. expandable_segments:True,max_split_size_mb:128",
   C_SIMULATE | C_REPLAY, 0, "what-if"},
  {"keep_grads", "keep-grads", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "zero_grad(set_to_none=False): gradients persist between steps", C_SIMULATE, 0, "simulate"},
  {"other_procs", "other-procs", GPUPLAN_OPT_BYTES, "MiB", 0, 1099511627776.0, NULL, "0",
   "memory other processes hold on the GPU", C_SIMULATE, 0, "simulate"},
  {"snapshot", "snapshot", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "write the run as a torch memory snapshot pickle, every block named by the allocation that made it "
   "(pytorch.org/memory_viz, gpuplan replay; --torch 1.13: that release's list of segments, for its _memory_viz)",
   C_SIMULATE, 0,
   "simulate"},
  {"on", "on", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "none",
   "cuda or cuda:N: run the same steps again with real allocations on that CUDA device", C_SIMULATE, 0,
   "simulate"},

  /* performance model: the framework and its overlaps (appended; docs/performance.md) */
  {"framework", "framework", GPUPLAN_OPT_ENUM, "", 0, 0,
   "auto|megatron|nemo|deepspeed|fsdp|fsdp2|composer|torchtitan|maxtext", "auto",
   "the training framework whose kernels and overlaps to model; auto: fsdp for FSDP sharding, deepspeed for "
   "ZeRO-2/3, else megatron", C_PERF | C_SEARCH | C_SIMULATE, 0, "perf"},
  {"tp_overlap", "tp-overlap", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "the framework's (on for nemo, maxtext)",
   "overlap tensor-parallel collectives with GEMMs (Megatron --tp-comm-overlap); search tries both",
   C_PERF | C_SIMULATE, 0, "perf"},
  {"dp_overlap", "dp-overlap", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "true",
   "overlap gradient reduction and parameter gathers with compute (DDP buckets, FSDP prefetch, "
   "--overlap-grad-reduce)", C_PERF | C_SEARCH | C_SIMULATE, 0, "perf"},
  {"threads", "threads", GPUPLAN_OPT_INT, "threads", 0, 1024, NULL, "0 (every core)",
   "worker threads for the search", C_SEARCH, 0, "search"},
  {"tie_tolerance", "tie-tolerance", GPUPLAN_OPT_REAL, "1", 0, 1, NULL, "0.05 (the model's median error)",
   "layouts whose step times differ by less than this share of #1's are shown as ties", C_SEARCH, 0, "search"},

  /* simulate: CUDA graphs (appended; docs/allocator.md "CUDA graphs") */
  {"cuda_graph", "cuda-graph", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "capture the last step in a CUDA graph (torch.cuda.graph): its memory comes from a private pool the graph "
   "keeps; the steps before are the eager warm-up", C_SIMULATE, 0, "simulate"},
  {"empty_cache_before_capture", "empty-cache-before-capture", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "torch.cuda.empty_cache() between the warm-up and the capture (cuda_graph)", C_SIMULATE, 0, "simulate"},
};

const gpuplan__opt_table gpuplan__opts_job = {opts, sizeof opts / sizeof opts[0]};

/* The enum and the table must agree. */
typedef char gpuplan__opts_job_count_check[(sizeof opts / sizeof opts[0]) == J_COUNT ? 1 : -1];
