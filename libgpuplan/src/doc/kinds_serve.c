/*
 * kinds_serve.c: field descriptions of the serving documents: serve,
 * serve-search and serve-validate (job/cmd_serve.c, plan/serve_validate.c).
 */
#include "doc/doc_int.h"

#define S GPUPLAN_VALUE_STRING
#define I GPUPLAN_VALUE_INT
#define R GPUPLAN_VALUE_REAL
#define B GPUPLAN_VALUE_BOOL
#define A GPUPLAN_VALUE_ARRAY
#define O GPUPLAN_VALUE_OBJECT
#define N(arr) arr, sizeof arr / sizeof arr[0]

#define QUANT(p, what)                                                       \
  {p, O, "", what},                                                           \
  {p ".p50", R, "s", "median"},                                               \
  {p ".p90", R, "s", "90th percentile"},                                      \
  {p ".p99", R, "s", "99th percentile"},                                      \
  {p ".mean", R, "s", "mean"}

static const gpuplan_result_field serve_fields[] = {
  {"schema", S, "", "gpuplan.serve/1"},
  {"model", S, "", "the model's name (the catalog id, or as described)"},
  {"model_source", S, "", "catalog, size, config or shape: how the job described the model"},
  {"shape_of", S, "", "the catalog model a size or a shape was taken from"},
  {"arch", S, "", "decoder, or encoder (no KV cache, no generated tokens)"},
  {"params", R, "parameters", "parameters of the model"},
  {"layers", I, "layers", "transformer layers"},
  {"experts", I, "experts", "routed experts (1: dense)"},
  {"gpu", S, "", "the GPU SKU id (null: CPU serving)"},
  {"gpu_name", S, "", "the GPU's name"},
  {"node", S, "", "the catalog node/VM, when given"},
  {"cpu_only", B, "", "served on the node's CPUs"},
  {"engine", S, "", "vllm, sglang, trtllm or tgi"},
  {"engine_version", S, "", "the engine version whose rules applied (latest: the newest modelled)"},
  {"layout", O, "", "the deployment"},
  {"layout.tp", I, "GPUs", "tensor-parallel degree"},
  {"layout.pp", I, "stages", "pipeline-parallel degree"},
  {"layout.ep", I, "GPUs", "expert-parallel degree"},
  {"layout.replicas", I, "replicas", "engine replicas sharing the load"},
  {"layout.gpus", I, "GPUs", "GPUs in all replicas"},
  {"layout.weights", S, "", "weight scheme: bf16, fp16, fp8, int8-w8a8, int8-w8a16, awq, gptq, nvfp4"},
  {"layout.kv_dtype", S, "", "KV-cache type (null for an encoder)"},
  {"layout.paged", B, "", "paged KV cache (blocks) rather than a max-length reservation"},
  {"layout.prefix_hit", R, "1", "share of each prompt served from the prefix cache"},
  {"layout.cuda_graphs", B, "", "decode runs in CUDA graphs"},
  {"layout.num_scheduler_steps", I, "steps", "vLLM multi-step scheduling"},
  {"load", O, "", "the load"},
  {"load.kind", S, "", "offline (every request queued), rate (Poisson), concurrency (clients), batch (static)"},
  {"load.input_len", R, "tokens", "prompt tokens per request (mean)"},
  {"load.output_len", R, "tokens", "generated tokens per request (mean)"},
  {"load.lengths", S, "", "fixed or exponential"},
  {"load.rate", R, "requests/s", "arrival rate over all replicas"},
  {"load.concurrency", R, "requests", "clients in flight, or the static batch"},
  {"defaults", A, "", "options that were not given and the default that applied"},
  {"defaults[].option", S, "", "the option's name"},
  {"defaults[].value", S, "", "the default, in words"},
  {"memory", O, "", "one GPU's memory as the engine lays it out"},
  {"memory.device_bytes", R, "B", "the SKU's memory"},
  {"memory.visible_bytes", R, "B", "the total the engine sees (torch.cuda.mem_get_info)"},
  {"memory.visible_source", S, "", "where that figure comes from"},
  {"memory.budget_bytes", R, "B", "what the engine may use (gpu_memory_utilization x total, ...)"},
  {"memory.rule", S, "", "the engine's KV-cache rule, in words"},
  {"memory.components", A, "", "memory by component"},
  {"memory.components[].name", S, "", "weights, activation peak, non-torch memory, KV cache, CUDA graphs"},
  {"memory.components[].bytes", R, "B", "bytes per GPU"},
  {"memory.components[].formula", S, "", "the formula and its source"},
  {"memory.components[].in_budget", B, "", "counted inside the engine's budget (CUDA graphs are not)"},
  {"memory.has_kv_cache", B, "", "false for an encoder"},
  {"memory.kv_bytes_per_token", R, "B", "KV cache per token per GPU"},
  {"memory.kv_cache_bytes", R, "B", "the KV pool per GPU (whole blocks)"},
  {"memory.kv_blocks", R, "blocks", "KV blocks (vLLM's '# GPU blocks')"},
  {"memory.kv_tokens", R, "tokens", "tokens the pool holds (vLLM's 'GPU KV cache size')"},
  {"memory.block_tokens", I, "tokens", "tokens per block"},
  {"memory.max_concurrency", R, "requests", "kv_tokens / max_model_len ('Maximum concurrency for N tokens')"},
  {"memory.max_model_len", I, "tokens", "the longest request the engine admits"},
  {"memory.max_num_seqs", I, "sequences", "the most sequences in a batch"},
  {"memory.max_num_batched_tokens", I, "tokens", "tokens per iteration (and vLLM's profile run)"},
  {"memory.chunked_prefill", B, "", "prefills mix with decoding in chunks"},
  {"memory.total_bytes", R, "B", "every component, CUDA graphs included"},
  {"memory.headroom_bytes", R, "B", "visible - total (negative: the engine runs out)"},
  {"memory.fits", B, "", "the weights fit and the KV cache holds one max_model_len request"},
  {"memory.engine_log", A, "", "what the engine prints at start-up"},
  {"memory.engine_log[]", S, "", "one log line"},
  {"speed", O, "", "latency and throughput under the load"},
  {"speed.saturated", B, "", "the arrival rate exceeds what the replicas serve"},
  {"speed.running", R, "sequences", "mean sequences decoding in one replica"},
  {"speed.batch_cap", R, "sequences", "the most the KV cache and max_num_seqs admit at once"},
  {"speed.capacity_requests_per_s", R, "requests/s", "the most all replicas sustain (offline)"},
  {"speed.prefill_s", R, "s", "the prefill of one prompt alone"},
  {"speed.prefill_tokens_per_s", R, "tokens/s", "prefill speed of one prompt alone"},
  {"speed.iteration", O, "", "one engine iteration at the operating point"},
  {"speed.iteration.seconds", R, "s", "its time"},
  {"speed.iteration.weights_s", R, "s", "reading the weights"},
  {"speed.iteration.kv_s", R, "s", "reading the running sequences' KV cache"},
  {"speed.iteration.compute_s", R, "s", "GEMMs and the output layer"},
  {"speed.iteration.attention_s", R, "s", "prefill attention (quadratic in the prompt)"},
  {"speed.iteration.tp_comm_s", R, "s", "tensor-parallel all-reduces (2 per layer) and pipeline sends"},
  {"speed.iteration.overhead_s", R, "s", "scheduler, launches, sampling"},
  {"speed.iteration.bound", S, "", "memory or compute"},
  QUANT("speed.ttft_s", "time to first token"),
  QUANT("speed.itl_s", "inter-token latency (the gap between streamed chunks; mean: TPOT)"),
  QUANT("speed.tpot_s", "time per output token of a request"),
  QUANT("speed.e2e_s", "end-to-end latency of a request"),
  {"speed.throughput", O, "", "all replicas"},
  {"speed.throughput.requests_per_s", R, "requests/s", "completed requests"},
  {"speed.throughput.output_tokens_per_s", R, "tokens/s", "generated tokens"},
  {"speed.throughput.input_tokens_per_s", R, "tokens/s", "prompt tokens"},
  {"speed.throughput.output_tokens_per_s_per_gpu", R, "tokens/s", "generated tokens per GPU"},
  {"speed.kernels", O, "", "the kernels assumed"},
  {"speed.kernels.weights", S, "", "how the weight scheme's GEMMs run on this SKU"},
  {"speed.kernels.gemm_peak_flops", R, "FLOP/s", "the dense tensor peak of that math"},
  {"speed.kernels.mem_bw_bytes_s", R, "B/s", "DRAM bandwidth"},
  {"speed.kernels.source", S, "", "where a figure the catalog lacks came from"},
  {"speed.tp_fabric", O, "", "the fabric of the tensor-parallel group"},
  {"speed.tp_fabric.fabric", S, "", "catalog fabric id (null: one GPU)"},
  {"speed.tp_fabric.nvlink", B, "", "NVLink/NVSwitch (false: PCIe)"},
  {"speed.tp_fabric.bw_bytes_s", R, "B/s", "per GPU, one direction"},
  {"speed.tp_fabric.allreduces_per_token", I, "", "all-reduces per decode step"},
  {"cost", O, "", "price of the replicas and per million tokens"},
  {"cost.currency", S, "", "the price's currency"},
  {"cost.priced_node", S, "", "the node/VM the price is from"},
  {"cost.nodes", R, "nodes", "nodes the replicas fill"},
  {"cost.per_hour", R, "currency/h", "all replicas, at the node's price per GPU"},
  {"cost.per_gpu_hour", R, "currency/h", "one GPU (the node's price / its GPUs)"},
  {"cost.input_share", R, "1", "share of GPU time spent on prefill, charged to input tokens"},
  {"cost.per_million_input", R, "currency", "per million prompt tokens"},
  {"cost.per_million_output", R, "currency", "per million generated tokens"},
  {"cost.per_million_tokens", R, "currency", "per million tokens, prompt and generated together"},
  {"slo", O, "", "the latency targets"},
  {"slo.quantile", S, "", "p50, p90 or p99"},
  {"slo.ttft_ms", R, "ms", "TTFT target"},
  {"slo.itl_ms", R, "ms", "ITL target"},
  {"slo.ttft_met", B, "", "TTFT at the quantile is within the target (null: no target)"},
  {"slo.itl_met", B, "", "ITL at the quantile is within the target"},
  {"slo.met", B, "", "both"},
  {"notes", A, "", "assumptions and warnings"},
  {"notes[]", S, "", "one note"},
};
static const gpuplan__kind_desc serve_kind = {"serve", 1, NULL, N(serve_fields)};

static const gpuplan_result_field search_fields[] = {
  {"schema", S, "", "gpuplan.serve-search/1"},
  {"model", S, "", "the model"},
  {"params", R, "parameters", "its parameters"},
  {"engine", S, "", "the engine"},
  {"rate", R, "requests/s", "the target load"},
  {"input_len", R, "tokens", "prompt tokens per request"},
  {"output_len", R, "tokens", "generated tokens per request"},
  {"slo_quantile", S, "", "the quantile the targets hold at"},
  {"slo_ttft_ms", R, "ms", "TTFT target"},
  {"slo_itl_ms", R, "ms", "ITL target"},
  {"tried", I, "", "SKU x tensor-parallel degrees (and CPU nodes) tried"},
  {"too_big", I, "", "of them, those the model does not fit"},
  {"slo_missed", I, "", "those that fit but miss the SLO at any rate"},
  {"meeting", I, "", "those that meet it"},
  {"best", A, "", "the cheapest that meet the SLO at the rate"},
  {"best[].rank", I, "", "1 is the cheapest"},
  {"best[].gpu", S, "", "GPU SKU (null: CPU)"},
  {"best[].node", S, "", "the CPU node"},
  {"best[].cpu_only", B, "", "served on CPUs"},
  {"best[].tp", I, "GPUs", "tensor-parallel degree"},
  {"best[].replicas", I, "replicas", "replicas to carry the rate"},
  {"best[].gpus", I, "GPUs", "GPUs in all"},
  {"best[].per_replica_rate", R, "requests/s", "the most one replica serves within the SLO"},
  {"best[].ttft_s", R, "s", "TTFT at the quantile, at that rate"},
  {"best[].itl_s", R, "s", "ITL at the quantile, at that rate"},
  {"best[].output_tokens_per_s_per_gpu", R, "tokens/s", "generated tokens per GPU at that rate"},
  {"best[].per_hour", R, "currency/h", "all replicas, at the node's price per GPU"},
  {"best[].currency", S, "", "the currency"},
  {"best[].per_million_output", R, "currency", "per million generated tokens at the target rate"},
  {"best[].why", S, "", "what limits it, and the node priced"},
};
static const gpuplan__kind_desc search_kind = {"serve-search", 1, "best", N(search_fields)};

#define STATS(p)                                                                        \
  {p, A, "", "median, p90 and worst |error|"},                                           \
  {p "[].metric", S, "", "throughput, ttft, itl (ITL and TPOT), e2e, memory"},          \
  {p "[].engine", S, "", "the engine (by_engine)"},                                     \
  {p "[].gpu", S, "", "the GPU (by_gpu)"},                                              \
  {p "[].n", I, "rows", "rows scored"},                                                 \
  {p "[].median_abs_error", R, "1", "median |predicted / measured - 1|"},               \
  {p "[].p90_abs_error", R, "1", "90th percentile of |error|"},                         \
  {p "[].worst_abs_error", R, "1", "the largest |error|"},                              \
  {p "[].worst_id", S, "", "its row"},                                                  \
  {p "[].median_error", R, "1", "median signed error (bias)"}

static const gpuplan_result_field validate_fields[] = {
  {"schema", S, "", "gpuplan.serve-validate/1"},
  {"file", S, "", "the CSV"},
  {"rows", I, "rows", "rows read"},
  {"scored", I, "rows", "rows predicted and scored"},
  {"skipped", I, "rows", "rows the model cannot be built for (skipped_rows says why)"},
  {"constants", S, "", "constants overridden"},
  STATS("metrics"),
  STATS("by_engine"),
  STATS("by_gpu"),
  {"assumptions", A, "", "choices the rows left open"},
  {"assumptions[].text", S, "", "the assumption"},
  {"assumptions[].rows", I, "rows", "rows it applies to"},
  {"skipped_rows", A, "", "rows not scored"},
  {"skipped_rows[].id", S, "", "row id"},
  {"skipped_rows[].metric", S, "", "its metric"},
  {"skipped_rows[].why", S, "", "why"},
  {"results", A, "", "every scored row"},
  {"results[].id", S, "", "row id"},
  {"results[].metric", S, "", "the metric as published"},
  {"results[].group", S, "", "its group"},
  {"results[].engine", S, "", "engine"},
  {"results[].gpu", S, "", "catalog GPU"},
  {"results[].measured", R, "", "the published value"},
  {"results[].predicted", R, "", "gpuplan's"},
  {"results[].error", R, "1", "predicted / measured - 1"},
  {"results[].note", S, "", "a remark (modelled out of memory, ...)"},
};
static const gpuplan__kind_desc validate_kind = {"serve-validate", 1, "results", N(validate_fields)};

const gpuplan__kind_desc *const gpuplan__kinds_serve[] = {&serve_kind, &search_kind, &validate_kind, NULL};
