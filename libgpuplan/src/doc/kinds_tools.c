/*
 * kinds_tools.c: field descriptions of the replay, explain-oom, catalog and
 * version documents (job/cmd_replay.c, cmd_explain.c, cmd_tools.c).
 */
#include "doc/kinds_int.h"


static const gpuplan_result_field version_fields[] = {
  {"schema", S, "", "gpuplan.version/1"},
  {"version", S, "", "the library's version (MAJOR.MINOR.PATCH)"},
  {"catalog_schema", I, "", "the newest catalog schema this library reads"},
};
static const gpuplan__kind_desc version_kind = {"version", 1, NULL, N(version_fields)};

/* --- replay ------------------------------------------------------------------ */

static const gpuplan_result_field replay_fields[] = {
  {"schema", S, "", "gpuplan.replay/1"},
  {"file", S, "", "the snapshot file (null when the snapshot was given as data)"},
  {"device", I, "", "the device whose trace and segments were replayed"},
  {"format", I, "", "the file's layout: 2 a dict (torch 2.x), 1 torch 1.13's plain list of segments"},
  {"mode", S, "", "exact (the file's settings and addresses, checked) or what-if (other settings or capacity)"},
  {"torch", S, "", "the PyTorch release whose rules were followed (the torch option)"},
  {"rules", S, "", "the releases that share those rules"},
  {"alloc_conf", S, "", "the allocator settings replayed (null: PyTorch's defaults)"},
  {"alloc_conf_source", S, "",
   "where they came from: option, PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF (the environment; 2.10 with both "
   "set: 'PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF', the CUDA allocator's own keys from the second), "
   "snapshot (the file's allocator_settings) or defaults (the file records none)"},
  {"gpu", S, "", "the catalog GPU the capacity was taken from, or null"},
  {"capacity_bytes", I, "B", "what-if: device memory PyTorch could use; null: unlimited"},
  {"events", I, "events", "trace events replayed"},
  {"trace_events", I, "events", "trace events of the device in the file"},
  {"segments_in_file", I, "segments", "segments of the device in the file's final state"},
  {"expandable", B, "",
   "the file was recorded with expandable segments (segment_map/segment_unmap events, is_expandable segments): "
   "the exact check gives each reservation the base its first segment_map shows and checks every map and unmap"},
  {"annotations", I, "annotations",
   "the file's external_annotations of the device (torch 2.6+: record_function ranges); read, not replayed"},
  {"private_pools", I, "pools",
   "private pools (segment_pool_id not (0, 0): MemPools, CUDA graphs) among the device's segments; the trace "
   "does not say which pool an allocation was made in, so placements that depend on it are reported unchecked"},
  {"host_entries", I, "entries",
   "entries of the file's host_segments and host_traces (pinned host memory, PyTorch main): read, not replayed; "
   "null when the file has neither"},
  {"rebuilt_start", B, "", "the trace starts mid-run (a ring buffer): its start state was rebuilt from the end"},
  {"exact", B, "", "exact mode: every allocation at its recorded address, every cudaMalloc of its recorded size, "
                   "the final layout as the file's"},
  {"allocs", I, "allocations", "allocations matched (exact) or replayed (what-if)"},
  {"segment_allocs", I, "cudaMallocs", "cudaMalloc calls (and expandable-segment maps)"},
  {"diverged_at", I, "", "the first event the model did differently, or null"},
  {"divergence", S, "", "what differed there"},
  {"unchecked", O, "", "events whose placement the file does not determine (null: every event was checked)"},
  {"unchecked.from_event", I, "", "first such event"},
  {"unchecked.to_event", I, "", "the event after the last"},
  {"unchecked.why", S, "", "why they cannot be checked"},
  {"start_allocated_bytes", I, "B", "allocated when the trace starts (rebuilt)"},
  {"start_reserved_bytes", I, "B", "reserved when the trace starts (rebuilt)"},
  {"peak_allocated_bytes", I, "B", "peak of torch.cuda.memory_allocated() over the trace"},
  {"peak_reserved_bytes", I, "B", "peak of torch.cuda.memory_reserved() over the trace"},
  {"final_allocated_bytes", I, "B", "allocated at the end"},
  {"final_reserved_bytes", I, "B", "reserved at the end"},
  {"allocated_at_peak_reserved_bytes", I, "B", "allocated when reserved peaked"},
  {"largest_free_at_peak_bytes", I, "B", "largest cached free block when reserved peaked"},
  {"total_free_at_peak_bytes", I, "B", "cached free bytes when reserved peaked"},
  {"fragmentation", R, "1", "1 - peak allocated / peak reserved"},
  {"num_alloc_retries", I, "", "cudaMalloc retries after emptying the cache (memory_stats num_alloc_retries)"},
  {"num_ooms", I, "", "out-of-memory errors (memory_stats num_ooms)"},
  {"oom_event", I, "", "the event that ran out of memory, or null"},
  {"oom_message", S, "", "PyTorch's OutOfMemoryError text for it"},
  {"warnings", A, "", "what the figures do not show (an empty trace, segments dropped to fit, ...)"},
  {"summary", S, "", "summary option: torch.cuda.memory_summary() at the end of the replay"},
  MEMORY_STATS_FIELDS
  {"html", S, "",
   "html option: the page written (allocated and reserved bytes over the replay, the peaks, the segment map at "
   "the peak and at the OOM, the OOM message)"},
  {"timeline", O, "", "timeline option: memory after every trace event"},
  {"timeline.allocated_bytes", A, "B", "torch.cuda.memory_allocated() after event i"},
  {"timeline.reserved_bytes", A, "B", "torch.cuda.memory_reserved() after event i"},
};
static const gpuplan__kind_desc replay_kind = {"replay", 1, NULL, N(replay_fields)};

/* --- explain-oom ------------------------------------------------------------- */

static const gpuplan_result_field explain_fields[] = {
  {"schema", S, "", "gpuplan.explain-oom/1"},
  {"verdict", S, "",
   "fragmentation, mixed, demand, other-process, fraction, or unknown (the message does not say enough)"},
  {"format", I, "", "the message's wording: 1 torch <= 2.0, 2 torch 2.1+, 0 partial or the CUDA runtime's"},
  {"device", I, "", "the GPU the message names"},
  {"partial", B, "", "the message gives only the size asked for (or nothing): the rest is null"},
  {"cuda_error", B, "", "\"CUDA error: out of memory\": the CUDA runtime's, not the caching allocator's"},
  {"messages", I, "messages", "out-of-memory messages in the text (a multi-rank log); the first is read"},
  {"rank", I, "", "the rank the first message came from (\"[rank3]:\"), or null"},
  {"tried_bytes", I, "B", "Tried to allocate: the segment the allocator asked the driver for (null: not said)"},
  {"total_bytes", I, "B", "the GPU's total capacity (null: not said)"},
  {"free_bytes", I, "B", "free on the GPU after the allocator's retry (null: not said)"},
  {"allocated_bytes", I, "B", "allocated by PyTorch: live tensors (null: not said)"},
  {"reserved_unallocated_bytes", I, "B", "reserved by PyTorch but unallocated: cached, unusable (null: not said)"},
  {"reserved_bytes", I, "B", "reserved by PyTorch in total (null: not said)"},
  {"process_bytes", I, "B", "this process's memory in use, non-PyTorch included (0: not said)"},
  {"process_listed", B, "",
   "no 'this process has': the one 'Process N has X' of PyTorch's reserved bytes plus at most 4 GiB is taken "
   "for this process (in a container NVML gives the host's process IDs), not counted among the others"},
  {"conf_variable", S, "",
   "the allocator variable of the message's release, which the advice names: PYTORCH_ALLOC_CONF (2.10's "
   "text) or PYTORCH_CUDA_ALLOC_CONF (earlier, and main after 2.10), PYTORCH_HIP_ALLOC_CONF (ROCm builds); "
   "null: cut before its advice"},
  {"other_processes_bytes", I, "B", "memory of the other processes the message lists"},
  {"other_processes", I, "processes", "other processes the message lists"},
  {"allowed_bytes", I, "B", "a set_per_process_memory_fraction cap (0: none)"},
  {"private_pools_bytes", I, "B", "cached in private pools (CUDA graphs, MemPool)"},
  {"explanation", S, "", "the diagnosis and the fixes to try, in order"},
};
static const gpuplan__kind_desc explain_kind = {"explain-oom", 1, NULL, N(explain_fields)};

/* --- catalog ----------------------------------------------------------------- */

/* A record's fields are those of catalog/fields.c (gpuplan_kind_fields(),
 * which writes them); test_jobtools checks that this list and those tables
 * agree, name, type and unit. */
#define F(P, name, type, unit) {P #name, type, unit, "the catalog's " #name " column (docs/catalog.md)"},
/* Every column of every kind once: the rows of a list. */
#define ANY_RECORD(P, F) \
  F(P, id, S, "") \
  F(P, name, S, "") \
  F(P, vendor, S, "") \
  F(P, architecture, S, "") \
  F(P, chip, S, "") \
  F(P, compute_capability, S, "") \
  F(P, form_factor, S, "") \
  F(P, sm_count, R, "count") \
  F(P, cuda_cores, R, "count") \
  F(P, tensor_cores, R, "count") \
  F(P, memory_gb, R, "GB (marketed)") \
  F(P, memory_bytes, I, "bytes") \
  F(P, memory_type, S, "") \
  F(P, mem_bw_bytes_s, R, "bytes/s") \
  F(P, l2_bytes, R, "bytes") \
  F(P, fp64_flops, R, "FLOP/s") \
  F(P, fp64_tensor_flops, R, "FLOP/s") \
  F(P, fp32_flops, R, "FLOP/s") \
  F(P, tf32_flops, R, "FLOP/s") \
  F(P, bf16_flops, R, "FLOP/s") \
  F(P, fp16_flops, R, "FLOP/s") \
  F(P, fp8_flops, R, "FLOP/s") \
  F(P, int8_ops, R, "OP/s") \
  F(P, fp4_flops, R, "FLOP/s") \
  F(P, nvlink_gen, R, "") \
  F(P, nvlink_bw_bytes_s, R, "bytes/s") \
  F(P, pcie_gen, R, "") \
  F(P, tdp_w, R, "W") \
  F(P, boost_clock_mhz, R, "MHz") \
  F(P, tensor_clock_mhz, R, "MHz") \
  F(P, slowdown_temp_c, R, "C") \
  F(P, matmul_bf16_flops, R, "FLOP/s") \
  F(P, matmul_fp8_flops, R, "FLOP/s") \
  F(P, context_bytes, I, "bytes") \
  F(P, source, S, "") \
  F(P, note, S, "") \
  F(P, unverified, S, "") \
  F(P, kind, S, "") \
  F(P, scope, S, "") \
  F(P, generation, S, "") \
  F(P, bw_bytes_s, R, "bytes/s") \
  F(P, latency_s, R, "s") \
  F(P, provider, S, "") \
  F(P, gpu_id, S, "") \
  F(P, gpu_count, I, "count") \
  F(P, gpu_fraction, R, "") \
  F(P, gpu_memory_bytes, I, "bytes") \
  F(P, intra_fabric_id, S, "") \
  F(P, inter_fabric_id, S, "") \
  F(P, nic_count, R, "count") \
  F(P, nic_bw_bytes_s, R, "bytes/s") \
  F(P, rail_optimized, R, "") \
  F(P, vcpus, I, "count") \
  F(P, cpu, S, "") \
  F(P, cpu_fp32_flops, R, "FLOP/s") \
  F(P, ram_bytes, R, "bytes") \
  F(P, price_per_hour, R, "currency/h") \
  F(P, currency, S, "") \
  F(P, price_region, S, "") \
  F(P, price_date, S, "") \
  F(P, family, S, "") \
  F(P, arch, S, "") \
  F(P, params, R, "count") \
  F(P, layers, I, "count") \
  F(P, hidden, I, "") \
  F(P, heads, I, "count") \
  F(P, kv_heads, I, "count") \
  F(P, head_dim, I, "") \
  F(P, ffn_hidden, I, "") \
  F(P, ffn_type, S, "") \
  F(P, vocab, I, "tokens") \
  F(P, seq_len, I, "tokens") \
  F(P, max_seq_len, R, "tokens") \
  F(P, tied_embeddings, B, "") \
  F(P, position, S, "") \
  F(P, norm, S, "") \
  F(P, linear_bias, B, "") \
  F(P, experts, I, "count") \
  F(P, top_k, I, "count")

static const gpuplan_result_field catalog_fields[] = {
  {"schema", S, "", "gpuplan.catalog/1"},
  {"subcommand", S, "", "gpus, nodes, models, fabrics, show or info"},
  {"kind", S, "", "the kind of the records: gpu, node, model or fabric"},
  {"rows", A, "", "lists: every record of the kind, in id order"},
  ANY_RECORD("rows[].", F)
  {"record", O, "", "show: the record the name denotes"},
  ANY_RECORD("record.", F)
  {"info", O, "", "info: the catalog itself"},
  {"info.path", S, "", "the catalog file (null: the built-in catalog)"},
  {"info.layered", B, "", "the file is layered over the built-in catalog"},
  {"info.schema_version", I, "", "the file's schema version"},
  {"info.schema_latest", I, "", "the newest schema this library reads"},
  {"info.counts", O, "", "records by kind"},
  {"info.counts.gpus", I, "records", "GPU SKUs"},
  {"info.counts.fabrics", I, "records", "fabrics"},
  {"info.counts.nodes", I, "records", "nodes and VMs"},
  {"info.counts.models", I, "records", "models"},
};
static const gpuplan__kind_desc catalog_kind = {"catalog", 1, "rows", N(catalog_fields)};

const gpuplan__kind_desc *const gpuplan__kinds_tools[] = {&replay_kind, &explain_kind, &catalog_kind,
                                                           &version_kind, NULL};
