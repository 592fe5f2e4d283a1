/*
 * kinds_train.c: field descriptions of the planning documents: plan, perf,
 * search, search-across and simulate (job/cmd_train.c builds them).
 */
#include "doc/kinds_int.h"


/* What every planning document starts with: the job as resolved. */
#define HEAD(kind)                                                                              \
  {"schema", S, "", "gpuplan." kind "/1"},                                                       \
  {"model", S, "", "the model: its catalog id, the config's _name_or_path, or the name given"},   \
  {"model_source", S, "", "where the shape came from: catalog, size (the catalog model of that size), config "  \
                          "(a Hugging Face config.json), shape (hyperparameters given as options), module "   \
                          "(traced by gpuplan.from_torch)"},                                                   \
  {"shape_of", S, "", "size / shape: the catalog model whose shape is used"},                    \
  {"model_note", S, "", "how the model was resolved, in words (null: a catalog name)"},         \
  {"params", R, "parameters", "parameters of the model"},                                        \
  {"layers", I, "layers", "transformer layers (0: a traced module)"},                            \
  {"arch", S, "", "decoder, encoder, encoder-decoder or module"},                                \
  {"impl", S, "", "how the code keeps activations: fused, eager or compiled"},                   \
  {"impl_why", S, "", "why that implementation: the model source's default, or given"},         \
  {"gpu", S, "", "the GPU SKU id (null on a CPU-only node)"},                                    \
  {"gpu_name", S, "", "the GPU's name"},                                                         \
  {"gpu_memory_bytes", I, "B", "device memory of one GPU as marketed (a vGPU slice's when partitioned)"}, \
  {"gpu_usable_bytes", I, "B", "the memory the driver exposes (NVML's total) that fits are judged against"}, \
  {"gpu_usable_source", S, "", "where gpu_usable_bytes comes from"},                             \
  {"compute_capability", S, "", "the SKU's compute capability (bf16 >= 8.0, fp8 >= 8.9)"},       \
  {"attention", S, "", "the attention kernel planned (FlashAttention-2, memory-efficient SDPA, explicit)"}, \
  {"node", S, "", "the catalog node/VM id, or null for a bare GPU"},                             \
  {"nodes", I, "nodes", "nodes in the cluster"},                                                 \
  {"gpus", I, "GPUs", "GPUs in the job (tp*pp*dp*cp)"},                                          \
  {"workload", S, "", "train or infer"},                                                         \
  {"options", O, "", "the options as resolved"},                                                 \
  {"options.workload", S, "", "train or infer"},                                                 \
  {"options.precision", S, "", "training precision recipe"},                                     \
  {"options.optimizer", S, "", "optimizer"},                                                     \
  {"options.convention", S, "", "accounting convention (deepspeed, megatron, fsdp, hf)"},        \
  {"options.grad_bytes", I, "B", "bytes per gradient element; null: the convention's"},          \
  {"options.recompute", S, "", "activation recomputation"},                                      \
  {"options.micro_batch", I, "sequences", "sequences per micro-batch"},                          \
  {"options.seq_len", I, "tokens", "sequence length"},                                           \
  {"options.grad_accum", I, "micro-batches", "micro-batches per step per pipeline"},             \
  {"options.flash_attention", B, "", "FlashAttention"},                                          \
  {"options.dropout", B, "", "dropout masks kept"},                                              \
  {"options.offload_optimizer", B, "", "optimizer states in host memory"},                       \
  {"options.offload_params", B, "", "parameter shards in host memory"},                          \
  {"options.phase", S, "", "the step sized: steady, first or forward"},                          \
  {"options.optimizer_impl", S, "", "the optimizer step's implementation: foreach, fused, for-loop"}, \
  {"options.grads_persist", B, "", "gradients kept between steps (false: set to None by zero_grad)"}, \
  {"options.finetune", S, "", "full, lora or qlora"},                                            \
  {"options.lora_rank", I, "", "LoRA rank (null: full fine-tuning)"},                             \
  {"options.base_dtype", S, "", "LoRA: the frozen base's storage"},                              \
  {"options.paged_optimizer", B, "", "LoRA: optimizer states paged to host memory"},             \
  {"options.weight_dtype", S, "", "serving: weights' type"},                                     \
  {"options.kv_dtype", S, "", "serving: KV-cache type"},                                         \
  {"options.context_len", I, "tokens", "serving: tokens per sequence"},                          \
  {"options.batch", I, "sequences", "serving: concurrent sequences"},                            \
  {"options.paged", B, "", "serving: paged KV cache"},                                           \
  {"options.block_tokens", I, "tokens", "serving: tokens per KV block"},                         \
  {"options.tp", I, "GPUs", "tensor-parallel degree"},                                           \
  {"options.pp", I, "stages", "pipeline-parallel degree"},                                       \
  {"options.dp", I, "replicas", "data-parallel degree"},                                         \
  {"options.cp", I, "GPUs", "context-parallel degree"},                                          \
  {"options.ep", I, "GPUs", "expert-parallel degree"},                                           \
  {"options.sequence_parallel", B, "", "sequence parallelism"},                                  \
  {"options.dp_mode", S, "", "data-parallel sharding"},                                          \
  {"options.schedule", S, "", "pipeline schedule"},                                              \
  {"options.vpp", I, "chunks", "model chunks per stage"},                                        \
  {"defaults", A, "", "options that were not given and the default that applied"},              \
  {"defaults[].option", S, "", "the option's name"},                                             \
  {"defaults[].value", S, "", "the default, in words"}

#define STAGE(p)                                                                                \
  {p, O, "", "one rank's memory"},                                                               \
  {p ".stage", I, "", "pipeline stage"},                                                         \
  {p ".layers", I, "layers", "transformer layers on the stage"},                                 \
  {p ".microbatches_in_flight", R, "micro-batches", "activations held at once"},                  \
  {p ".params_rank", R, "parameters", "parameters on this rank before DP sharding"},             \
  {p ".components", A, "", "memory by component, largest contributors named"},                   \
  {p ".components[].name", S, "", "component"},                                                  \
  {p ".components[].bytes", I, "B", "bytes"},                                                    \
  {p ".components[].formula", S, "", "the formula and its source"},                              \
  {p ".total_bytes", I, "B", "the peak of the sized step: the components that coexist then (training), " \
                            "their sum (serving)"},                                                              \
  {p ".capacity_bytes", I, "B", "the memory the driver exposes (NVML's total; see capacity_source)"}, \
  {p ".fits", B, "", "total_bytes fits with at least 2% of capacity to spare"},                  \
  {p ".headroom_bytes", I, "B", "capacity - total (negative: short by)"},                        \
  {p ".verdict", S, "", "fits, at the limit (under 2% to spare: fragmentation can OOM it), or does not fit"}, \
  {p ".at_limit", B, "", "fits in capacity with under 2% of it to spare"},                       \
  {p ".capacity_source", S, "", "where capacity comes from (NVML's figure, the marketed size, a vGPU slice)"}, \
  {p ".marketed_bytes", I, "B", "the SKU's marketed memory"},                                     \
  {p ".peak_phase", S, "", "where the step peaks: forward/backward, optimizer step, inference"}, \
  {p ".sum_bytes", I, "B", "every component added, as if all coexisted"},                        \
  {p ".allocated_bytes", I, "B", "of total, what PyTorch's allocator holds (less the CUDA context and NCCL)"}, \
  {p ".fwdbwd_bytes", I, "B", "peak during forward and backward of the sized step"},             \
  {p ".step_bytes", I, "B", "peak during optimizer.step() of the sized step"},                   \
  {p ".steady_bytes", I, "B", "peak of a steady-state step (step 2 on)"},                         \
  {p ".first_step_bytes", I, "B", "peak of the first step (optimizer states created in step())"}, \
  {p ".trainable_params", R, "parameters", "parameters with gradients and optimizer states (LoRA: the adapters)"}, \
  {p ".host_bytes", I, "B", "offloaded to host memory"},                                         \
  {p ".kv_bytes_per_token", I, "B", "serving: KV cache per token on this rank"},                 \
  {p ".kv_waste_bytes", I, "B", "serving: KV reserved but unused"},                              \
  {p ".max_sequences", I, "sequences", "serving: concurrent sequences that fit"}

static const gpuplan_result_field plan_fields[] = {
  HEAD("plan"),
  STAGE("worst"),
  STAGE("stages[]"),
  {"stages", A, "", "every pipeline stage (per_rank)"},
  {"max_gpus", I, "GPUs", "GPUs the fix ladder may use"},
  {"ladder", A, "", "the fix ladder when it does not fit (or is at the limit): cumulative rungs, cheapest "
                    "in step time first"},
  {"ladder[].kind", S, "", "sp, selective, micro-batch, adam8bit, zero2, zero3, offload, recompute, lora, qlora, "
                           "gpus, gpu"},
  {"ladder[].time_cost", R, "1", "the rung's step-time cost over the previous, minus 1 (an estimate; 0.33: a third slower)"},
  {"ladder[].step", I, "", "rung number"},
  {"ladder[].change", S, "", "what the rung changes"},
  {"ladder[].gpu", S, "", "the GPU after the rung"},
  {"ladder[].gpus", I, "GPUs", "GPUs after the rung"},
  {"ladder[].total_bytes", I, "B", "worst-rank memory after the rung"},
  {"ladder[].capacity_bytes", I, "B", "device memory after the rung"},
  {"ladder[].fits", B, "", "the rung fits"},
};
static const gpuplan__kind_desc plan_kind = {"plan", 1, "ladder", N(plan_fields)};

#define CLUSTER                                                                                 \
  {"cluster", O, "", "the cluster modelled"},                                                    \
  {"cluster.nodes", I, "nodes", "nodes"},                                                        \
  {"cluster.gpus_per_node", I, "GPUs", "GPUs per node (0: CPU-only)"},                            \
  {"cluster.gpu", S, "", "GPU SKU"},                                                             \
  {"cluster.intra", S, "", "fabric inside a node"},                                              \
  {"cluster.intra_bw_bytes_s", R, "B/s", "per GPU, one direction, inside a node"},               \
  {"cluster.inter", S, "", "fabric between nodes"},                                              \
  {"cluster.inter_bw_bytes_s", R, "B/s", "per node, one direction, all NICs together"},          \
  {"cluster.cpu_flops", R, "FLOP/s", "CPU-only: FP32 vector peak per node"}

#define PRICE                                                                                   \
  {"currency", S, "", "currency of every cost (ISO 4217), null without a price"},                 \
  {"price_region", S, "", "region of the price"},                                                \
  {"price_date", S, "", "date of the price"}

static const gpuplan_result_field perf_fields[] = {
  HEAD("perf"),
  {"memory", O, "", "worst-rank memory of the layout"},
  {"memory.total_bytes", I, "B", "worst-rank total"},
  {"memory.capacity_bytes", I, "B", "device memory"},
  {"memory.fits", B, "", "the layout fits"},
  CLUSTER,
  {"global_batch", I, "sequences", "sequences per optimizer step"},
  {"framework", S, "", "the framework profile modelled (megatron, nemo, deepspeed, fsdp, fsdp2, composer, torchtitan, maxtext)"},
  {"microbatches", I, "micro-batches", "micro-batches per step per pipeline (gradient accumulation)"},
  {"tokens_per_microbatch", I, "tokens", "tokens of one micro-batch on one GPU (micro_batch x seq / cp): the GEMMs' M"},
  {"step_s", R, "s", "time of one optimizer step"},
  {"breakdown_s", O, "s", "the step by part"},
  {"breakdown_s.compute", R, "s", "GEMMs, attention, elementwise, recompute"},
  {"breakdown_s.bubble", R, "s", "pipeline bubble"},
  {"breakdown_s.tp_comm", R, "s", "tensor-parallel collectives, exposed"},
  {"breakdown_s.cp_comm", R, "s", "context-parallel exchange, exposed"},
  {"breakdown_s.pp_comm", R, "s", "pipeline send/recv"},
  {"breakdown_s.dp_comm", R, "s", "data-parallel / ZeRO / FSDP traffic, exposed"},
  {"breakdown_s.optimizer", R, "s", "optimizer step"},
  {"breakdown_s.stragglers", R, "s", "waiting for the slowest rank (grows with the GPU count)"},
  {"breakdown_s.overhead", R, "s", "fixed per-step cost of the framework"},
  {"compute_s", O, "s", "compute of the slowest pipeline stage by kind"},
  {"compute_s.gemm", R, "s", "GEMMs (each at the roofline of its shape)"},
  {"compute_s.attention", R, "s", "attention (fused kernel, or explicit scores and softmax)"},
  {"compute_s.elementwise", R, "s", "memory-bound work: norms, activations, residuals, casts"},
  {"compute_s.gemm_efficiency", R, "1", "GEMM FLOP/s over the dense peak"},
  {"compute_s.attention_flops_s", R, "FLOP/s", "attention's achieved rate (causal FLOPs, fwd + bwd)"},
  {"communication", O, "", "every collective of the step together"},
  {"communication.total_s", R, "s", "all collectives' time, as if alone"},
  {"communication.exposed_s", R, "s", "on the critical path"},
  {"communication.hidden_s", R, "s", "overlapped with compute"},
  {"communication.nic_bw_bytes_s", R, "B/s", "one GPU's share of its node's NICs (one direction)"},
  {"communication.bytes_per_nic", R, "B", "the largest per-NIC volume of one collective kind per step"},
  {"collectives", A, "", "each kind of collective of the step"},
  {"collectives[].name", S, "", "tp_allreduce, zero3_gather_fwd, zero3_reduce_scatter, dp_allreduce, pp_sendrecv, ..."},
  {"collectives[].op", S, "", "all-reduce, all-gather, reduce-scatter, all-to-all, send/recv"},
  {"collectives[].algo", S, "", "the algorithm NCCL would choose (ring, tree, nvls, p2p)"},
  {"collectives[].proto", S, "", "NCCL protocol (LL, LL128, Simple)"},
  {"collectives[].phase", S, "", "the compute it can hide behind (forward, backward, gemm, attention, ...)"},
  {"collectives[].ranks", I, "GPUs", "GPUs in the group"},
  {"collectives[].ranks_per_node", I, "GPUs", "of them in one node (k)"},
  {"collectives[].nics_per_node", R, "NICs", "NICs of a node the group owns (k, rail-optimised); 0 inside a node"},
  {"collectives[].count", R, "", "collectives per step"},
  {"collectives[].message_bytes", R, "B", "each collective's buffer per GPU (nccl-tests' size)"},
  {"collectives[].bytes_per_gpu", R, "B", "bytes each GPU sends per step"},
  {"collectives[].bytes_per_nic", R, "B", "bytes through each NIC per step"},
  {"collectives[].seconds", R, "s", "their time per step, as if alone"},
  {"collectives[].latency_s", R, "s", "of which latency (NCCL's model: per-hop, per protocol)"},
  {"collectives[].hidden_s", R, "s", "overlapped with compute"},
  {"collectives[].exposed_s", R, "s", "on the critical path"},
  {"tokens_per_s", R, "tokens/s", "throughput of the job"},
  {"mfu", R, "1", "model FLOPs utilisation"},
  {"hfu", R, "1", "hardware FLOPs utilisation (with recompute)"},
  {"peak_flops", R, "FLOP/s", "dense peak of the precision per GPU (per node on CPUs)"},
  {"model_flops_per_token", R, "FLOP", "3 x forward"},
  {"model_flops_per_s_per_gpu", R, "FLOP/s", "achieved model FLOP/s per GPU"},
  {"bytes_per_step_per_gpu", O, "B", "traffic per step per GPU"},
  {"bytes_per_step_per_gpu.nvlink", R, "B", "over the node fabric"},
  {"bytes_per_step_per_gpu.pcie", R, "B", "over PCIe"},
  {"bytes_per_step_per_gpu.network", R, "B", "over the network"},
  {"cost_per_hour", R, "currency/h", "cluster price per hour (null: unpriced)"},
  {"cost_per_step", R, "currency", "cost of one step"},
  {"cost_per_mtok", R, "currency/Mtok", "cost per million tokens"},
  {"train_tokens", R, "tokens", "tokens to train on (tokens option)"},
  {"train_seconds", R, "s", "time to train on them"},
  {"train_cost", R, "currency", "cost to train on them"},
  PRICE,
};
static const gpuplan__kind_desc perf_kind = {"perf", 1, NULL, N(perf_fields)};

#define LAYOUT(p)                                                                               \
  {p "tp", I, "GPUs", "tensor-parallel degree"},                                                 \
  {p "pp", I, "stages", "pipeline-parallel degree"},                                             \
  {p "cp", I, "GPUs", "context-parallel degree"},                                                \
  {p "dp", I, "replicas", "data-parallel degree"},                                               \
  {p "vpp", I, "chunks", "interleaving"},                                                        \
  {p "micro_batch", I, "sequences", "micro-batch"},                                              \
  {p "recompute", S, "", "recomputation"},                                                       \
  {p "dp_mode", S, "", "data-parallel sharding"},                                                \
  {p "sequence_parallel", B, "", "sequence parallelism"}

static const gpuplan_result_field search_fields[] = {
  HEAD("search"),
  CLUSTER,
  {"global_batch", I, "sequences", "sequences per optimizer step"},
  {"objective", S, "", "time or cost"},
  {"framework", S, "", "the framework profile searched"},
  {"candidates", I, "layouts", "layouts in the space (every combination of every dimension)"},
  {"pruned", I, "layouts", "discarded by the memory lower bound (model states) without evaluation"},
  {"evaluated", I, "layouts", "layouts whose memory was evaluated"},
  {"too_big", I, "layouts", "rejected: do not fit in memory"},
  {"invalid", I, "layouts", "rejected: divisibility"},
  {"timed", I, "layouts", "layouts that fit and were timed"},
  {"tie_tolerance", R, "1", "step times within this share of #1's are ties (the model's error)"},
  {"train_tokens", R, "tokens", "tokens to train on (tokens option)"},
  {"best", A, "", "the best layouts, best first"},
  {"best[].rank", I, "", "1 = best"},
  LAYOUT("best[]."),
  {"best[].step_s", R, "s", "step time"},
  {"best[].tokens_per_s", R, "tokens/s", "throughput"},
  {"best[].mfu", R, "1", "model FLOPs utilisation"},
  {"best[].memory_bytes", I, "B", "worst-rank memory"},
  {"best[].cost_per_mtok", R, "currency/Mtok", "cost per million tokens"},
  {"best[].train_days", R, "days", "days to train on train_tokens"},
  {"best[].slower_than_first", R, "1", "step time over #1's, minus 1"},
  {"best[].first_stage_layers", I, "layers", "layers on the first pipeline stage (0: even split)"},
  {"best[].last_stage_layers", I, "layers", "layers on the last pipeline stage (0: even split)"},
  {"best[].tp_overlap", B, "", "tensor-parallel collectives overlapped with GEMMs"},
  {"best[].dp_overlap", B, "", "gradient reduction and parameter gathers overlapped with compute"},
  {"best[].offload_optimizer", B, "", "optimizer states in host memory"},
  {"best[].tied_with_first", B, "", "within the tie tolerance of #1 (the model cannot tell them apart)"},
  {"best[].exposed_comm_s", R, "s", "exposed communication per step"},
  {"best[].bytes_network_per_gpu", R, "B", "network bytes per GPU per step"},
  {"best[].bytes_per_nic", R, "B", "largest per-NIC volume of one collective kind per step"},
  {"first_vs_second", O, "", "why #1 beats #2: the seconds of each part of the step"},
  {"first_vs_second.step_s_first", R, "s", "#1's step"},
  {"first_vs_second.step_s_second", R, "s", "#2's step"},
  {"first_vs_second.difference_s", R, "s", "#2 - #1"},
  {"first_vs_second.tied", B, "", "the difference is within the model's error"},
  {"first_vs_second.parts", A, "", "each part of the step"},
  {"first_vs_second.parts[].part", S, "", "compute, bubble, tp_comm, cp_comm, pp_comm, dp_comm, optimizer, stragglers, overhead"},
  {"first_vs_second.parts[].first_s", R, "s", "#1's seconds"},
  {"first_vs_second.parts[].second_s", R, "s", "#2's seconds"},
  {"first_vs_second.parts[].difference_s", R, "s", "#2 - #1"},
  {"first_vs_second.summary", S, "", "the same in words"},
  {"best[].why", S, "", "what makes it fast or slow"},
  PRICE,
};
static const gpuplan__kind_desc search_kind = {"search", 1, "best", N(search_fields)};

static const gpuplan_result_field across_fields[] = {
  {"schema", S, "", "gpuplan.search-across/1"},
  {"model", S, "", "the model id or size as given"},
  {"model_source", S, "", "catalog or size"},
  {"params", R, "parameters", "parameters"},
  {"tokens", R, "tokens", "tokens to train on"},
  {"days", R, "days", "the deadline"},
  {"global_batch", I, "sequences", "sequences per step"},
  {"max_nodes", I, "nodes", "most nodes tried per type"},
  {"configs", A, "", "every priced node type and count, cheapest first"},
  {"configs[].node", S, "", "node/VM id"},
  {"configs[].node_name", S, "", "node/VM name"},
  {"configs[].nodes", I, "nodes", "nodes"},
  {"configs[].gpus", I, "GPUs", "GPUs"},
  {"configs[].days", R, "days", "time to train"},
  {"configs[].cost", R, "currency", "cost to train"},
  {"configs[].currency", S, "", "currency of the cost"},
  {"configs[].meets_deadline", B, "", "days <= the deadline"},
  LAYOUT("configs[]."),
  {"configs[].step_s", R, "s", "step time of the best layout"},
  {"configs[].mfu", R, "1", "its MFU"},
};
static const gpuplan__kind_desc across_kind = {"search-across", 1, "configs", N(across_fields)};

static const gpuplan_result_field simulate_fields[] = {
  HEAD("simulate"),
  {"steps", I, "steps", "steps completed"},
  {"steps_requested", I, "steps", "steps asked for"},
  {"alloc_conf", S, "", "the allocator settings applied, as PYTORCH_ALLOC_CONF takes them (empty: PyTorch's defaults)"},
  {"alloc_conf_source", S, "",
   "where they came from: option, PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF (env_alloc_conf, env_cuda_alloc_conf; 2.10 "
   "with both set: 'PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF', the CUDA allocator's own keys from the second), or defaults "
   "(none given, or PYTORCH_ALLOC_CONF under a release that did not read it)"},
  {"torch", S, "", "the PyTorch release whose rules were followed (the torch option)"},
  {"rules", S, "", "the release those rules are (2.x: 2.9's; latest: main after 2.10)"},
  {"set_to_none", B, "", "zero_grad(set_to_none=True)"},
  {"cuda_graph", B, "", "the last step was captured in a CUDA graph (cuda_graph option; the steps before: its warm-up)"},
  {"empty_cache_before_capture", B, "", "torch.cuda.empty_cache() ran between the warm-up and the capture"},
  {"graph_captured", B, "", "the capture completed (false: no cuda_graph, or an OOM inside it)"},
  {"graph_pool_reserved_bytes", I, "B",
   "the graph's private pool at the end: reserved away from the default pools for as long as the graph lives "
   "(part of peak_reserved_bytes)"},
  {"graph_pool_allocated_bytes", I, "B", "... of which allocated: the graph's static outputs (its gradients, loss, logits)"},
  {"ops", I, "", "allocations and frees issued"},
  {"capacity_bytes", I, "B", "what PyTorch's allocator could get"},
  {"peak_allocated_bytes", I, "B", "peak of allocated memory"},
  {"peak_reserved_bytes", I, "B", "peak of reserved (cached) memory"},
  {"allocated_at_peak_reserved_bytes", I, "B", "allocated when reserved peaked"},
  {"largest_free_at_peak_bytes", I, "B", "largest cached free block at the peak"},
  {"total_free_at_peak_bytes", I, "B", "cached free memory at the peak"},
  {"fragmentation", R, "1", "1 - peak allocated / peak reserved"},
  {"analytic_bytes", I, "B", "the memory model's total inside the allocator"},
  {"vs_analytic", R, "1", "peak allocated / analytic - 1"},
  {"num_alloc_retries", I, "", "cudaMalloc retries after freeing the cache"},
  {"num_ooms", I, "", "out-of-memory errors"},
  {"oom", B, "", "the run ended in an OOM"},
  {"oom_step", I, "", "1-based step of the OOM (0: none)"},
  {"oom_op", S, "", "the operation that failed"},
  {"oom_message", S, "", "PyTorch's out-of-memory message"},
  {"resident_bytes", I, "B", "CUDA context + NCCL, outside the allocator (the cuBLAS workspace is an allocation inside it)"},
  {"other_procs_bytes", I, "B", "memory of other processes"},
  {"nvidia_smi_used_bytes", I, "B", "what nvidia-smi would show at the peak"},
  {"snapshot", S, "", "the snapshot file written, if any"},
  {"snapshot_step_s", R, "s", "the step of the modelled clock the snapshot's time_us follow (perf's step_s for the same case); null without one"},
  {"snapshot_clock", S, "", "with a snapshot: modelled (its entries' time_us, 0 at the run's start), or none and why"},
  {"warnings", A, "", "what the run could not follow as asked (settings a release ignored)"},
  {"summary", S, "", "summary option: torch.cuda.memory_summary() at the end of the run"},
  MEMORY_STATS_FIELDS
  {"on_device", O, "", "the same steps on a real CUDA device (on option)"},
  {"on_device.device", S, "", "device name"},
  {"on_device.index", I, "", "device index"},
  {"on_device.total_bytes", I, "B", "device memory"},
  {"on_device.free_before_bytes", I, "B", "free before the run"},
  {"on_device.predicted_peak_reserved_bytes", I, "B", "the mock's peak reserved"},
  {"on_device.actual_peak_reserved_bytes", I, "B", "the card's peak reserved"},
  {"on_device.driver_peak_used_bytes", I, "B", "driver-level peak use"},
  {"on_device.predicted_oom", B, "", "the mock ran out of memory"},
  {"on_device.actual_oom", B, "", "the card ran out of memory"},
  {"on_device.actual_oom_op", S, "", "where the card ran out"},
};
static const gpuplan__kind_desc simulate_kind = {"simulate", 1, NULL, N(simulate_fields)};

const gpuplan__kind_desc *const gpuplan__kinds_train[] = {&plan_kind, &perf_kind, &search_kind, &across_kind,
                                                           &simulate_kind, NULL};
