/*
 * test_serve.c: the serve command (issue 13) through the job API: engine
 * memory against hand derivations and published engine logs, encoders
 * without a KV cache, decode and prefill times derived by hand, the queue,
 * TP fabrics, cost, CPU serving, the SLO search, the refusals, and the
 * published serving measurements (data/reference/serving_runs_calibration.csv)
 * scored per metric against the acceptance bounds.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>

#include "testutil.h"

#define GiB 1073741824.0

typedef struct fx {
  counting cnt;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  counting_init(&f->cnt);
  f->ctx = counting_ctx(&f->cnt);
  assert_int_equal(gpuplan_catalog_open_default(f->ctx, &f->cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &f->job), GPUPLAN_OK);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  gpuplan_job_free(f->job);
  gpuplan_catalog_free(f->cat);
  counting_done(&f->cnt, f->ctx);
  free(f);
  return 0;
}

/* Set "name=value" pairs and run serve. */
static int serve(fx *f, gpuplan_doc **doc, ...) {
  va_list ap;
  const char *kv;
  int rc = GPUPLAN_OK;
  gpuplan_job_reset(f->job);
  va_start(ap, doc);
  while (!rc && (kv = va_arg(ap, const char *)) != NULL) {
    char name[64];
    const char *eq = strchr(kv, '=');
    size_t n = (size_t)(eq - kv);
    assert_non_null(eq);
    assert_true(n < sizeof name);
    memcpy(name, kv, n);
    name[n] = 0;
    rc = gpuplan_job_set(f->job, name, eq + 1);
  }
  va_end(ap);
  if (rc) return rc;
  return gpuplan_job_run(f->job, "serve", doc);
}

static const gpuplan_value *at(const gpuplan_doc *d, const char *path) {
  return gpuplan_value_path(gpuplan_doc_root(d), path);
}
static double num(const gpuplan_doc *d, const char *path) {
  const gpuplan_value *v = at(d, path);
  if (!v) fail_msg("no %s", path);
  return gpuplan_value_type_of(v) == GPUPLAN_VALUE_NULL ? NAN : gpuplan_value_real(v);
}
static const char *str(const gpuplan_doc *d, const char *path) {
  const gpuplan_value *v = at(d, path);
  if (!v) fail_msg("no %s", path);
  return gpuplan_value_type_of(v) == GPUPLAN_VALUE_NULL ? NULL : gpuplan_value_string(v, NULL);
}
static int flag(const gpuplan_doc *d, const char *path) { return gpuplan_value_bool(at(d, path)); }

/* The bytes of a memory component by name (0 when absent). */
static double component(const gpuplan_doc *d, const char *name) {
  const gpuplan_value *c = at(d, "memory.components");
  size_t i;
  for (i = 0; i < gpuplan_value_count(c); i++) {
    const gpuplan_value *x = gpuplan_value_at(c, i);
    if (strcmp(gpuplan_value_string(gpuplan_value_get(x, "name"), NULL), name) == 0)
      return gpuplan_value_real(gpuplan_value_get(x, "bytes"));
  }
  return 0;
}

static int has_line(const gpuplan_doc *d, const char *path, const char *needle) {
  const gpuplan_value *a = at(d, path);
  size_t i;
  for (i = 0; i < gpuplan_value_count(a); i++)
    if (strstr(gpuplan_value_string(gpuplan_value_at(a, i), NULL), needle)) return 1;
  return 0;
}

static void close_to(double got, double want, double rel) {
  if (!(fabs(got - want) <= rel * fabs(want))) fail_msg("%.9g is not within %.3g%% of %.9g", got, rel * 100, want);
}

/* Llama-3-8B (catalog shape: 32 layers, h 4096, 32 heads, 8 KV heads,
 * SwiGLU 14336, vocab 128256, untied) on one H100 SXM with vLLM's defaults
 * at an 8k context, derived by hand: */
static void llama3_8b_h100_vllm(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  const double L = 32, h = 4096, a = 32, kv = 8, dh = 128, ff = 14336, V = 128256;
  /* weights: 32 layers of attention (h x d x (2a + 2kv)) and MLP (3 h f),
   * embedding and output layer (V x h each), all bf16; plus the rotary
   * cos/sin cache (8192 positions x 128 x 2 bytes) */
  double weights = (L * (h * dh * (2 * a + 2 * kv) + 3 * h * ff) + 2 * V * h) * 2 + 8192 * dh * 2;
  /* the V1 profile run: 8192 tokens (max_num_batched_tokens on a >= 70 GiB GPU)
   * through the MLP peak (3h + 3f) x 2 bytes, then the sampler's fp32 logits
   * and probabilities for 1024 sequences (max_num_seqs) */
  double act = 8192 * (3 * h + 3 * ff) * 2 + 1024 * V * 8;
  double budget = 0.9 * 79.22 * GiB;               /* gpu_memory_utilization x total_gpu_memory */
  double kvbytes = budget - weights - act - 0.30 * GiB;
  double per_token = 2 * L * kv * dh * 2;          /* K and V, 8 heads of 128, bf16: 128 KiB */
  double blocks = floor(kvbytes / (16 * per_token)), tokens = blocks * 16;
  char line[96];
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=h100-sxm5-80gb", "context_len=8192", NULL), GPUPLAN_OK);
  assert_string_equal(str(d, "schema"), "gpuplan.serve/1");
  close_to(num(d, "memory.visible_bytes"), 79.22 * GiB, 1e-12);
  close_to(num(d, "memory.budget_bytes"), budget, 1e-12);
  close_to(component(d, "weights"), weights, 1e-12);
  close_to(component(d, "activation peak"), act, 1e-12);
  assert_true(num(d, "memory.kv_bytes_per_token") == per_token);
  assert_true(num(d, "memory.kv_blocks") == blocks);
  assert_true(num(d, "memory.kv_tokens") == tokens);
  close_to(num(d, "memory.max_concurrency"), tokens / 8192, 1e-12);
  assert_true(flag(d, "memory.fits"));
  snprintf(line, sizeof line, "GPU KV cache size: %.0f,%03.0f tokens", floor(tokens / 1000), fmod(tokens, 1000));
  assert_true(has_line(d, "memory.engine_log", line));
  assert_true(has_line(d, "memory.engine_log", "Maximum concurrency for 8,192 tokens per request"));
  /* CUDA graphs sit outside the budget, in the 10% left */
  assert_true(component(d, "CUDA graphs") > 0);
  assert_true(num(d, "memory.headroom_bytes") > 0);
  gpuplan_doc_free(d);
}

/* The same deployment as vllm-project/vllm PR #10511 logs it (V0, 0.6.5 dev,
 * max_num_seqs 256): total_gpu_memory 79.22 GiB x 0.90 = 71.29 GiB, weights
 * 14.96 GiB, non_torch_memory 1.79 GiB, PyTorch activation peak 1.26 GiB,
 * available_kv_cache_memory 53.29 GiB. */
static void llama3_8b_published_log(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=h100-sxm5-80gb", "context_len=8192", "engine_version=0.6.5",
                         "max_num_seqs=256", "non_torch_memory=1833MiB", NULL),
                   GPUPLAN_OK);
  close_to(num(d, "memory.budget_bytes"), 71.29 * GiB, 2e-4);
  close_to(component(d, "weights"), 14.96 * GiB, 1e-3);
  close_to(component(d, "activation peak"), 1.26 * GiB, 0.02);
  close_to(num(d, "memory.kv_cache_bytes"), 53.29 * GiB, 1e-3);
  assert_true(has_line(d, "memory.engine_log", "# GPU blocks: "));
  gpuplan_doc_free(d);
}

/* MM-9: an encoder keeps no KV cache and generates no tokens. */
static void bert_large_has_no_kv_cache(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  assert_int_equal(serve(f, &d, "model=bert-large", "gpu=v100", "input_len=512", "concurrency=64", NULL), GPUPLAN_OK);
  assert_string_equal(str(d, "arch"), "encoder");
  assert_false(flag(d, "memory.has_kv_cache"));
  assert_true(component(d, "KV cache") == 0);
  assert_true(isnan(num(d, "memory.kv_tokens")));
  assert_true(isnan(num(d, "memory.kv_bytes_per_token")));
  assert_true(isnan(num(d, "speed.itl_s.p50")));
  assert_true(num(d, "speed.ttft_s.p50") > 0);
  assert_true(num(d, "speed.throughput.requests_per_s") > 0);
  assert_null(str(d, "layout.kv_dtype"));
  assert_true(has_line(d, "memory.engine_log", "no KV cache"));
  assert_true(has_line(d, "notes", "FP16")); /* V100 has no BF16 */
  gpuplan_doc_free(d);
  /* and it refuses to generate */
  assert_int_equal(serve(f, &d, "model=bert-large", "gpu=v100", "output_len=16", NULL), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "encoder"));
}

/* Decode and prefill of Llama-2-7B on an A100 SXM 80GB at batch 1, with the
 * fixed costs zeroed and full efficiency, derived by hand: decode reads the
 * weights and the KV cache once per token (memory-bound); prefill is the
 * larger of its FLOPs at the dense BF16 peak and the weight read. */
static void decode_and_prefill_by_hand(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  const double L = 32, h = 4096, a = 32, dh = 128, ff = 11008, V = 32000, bw = 2039e9, peak = 312e12;
  double lin = L * (h * dh * (2 * a + 2 * a) + 3 * h * ff), W, kvt = 2 * L * a * dh * 2, ctx = 128 + 64 / 2.0;
  double t_dec, t_pre, fl;
  assert_int_equal(serve(f, &d, "model=llama-2-7b", "gpu=a100-80gb", "batch=1", "input_len=128", "output_len=64",
                         "serve_constants=hbm_eff=1,gemm_eff=1,attn_eff=1,gemm_half_tokens=0,overlap_p=1000,seq_s=0,"
                         "layer_graph_s=0,iter_s.vllm=0,ttft_s=0",
                         NULL),
                   GPUPLAN_OK);
  /* weights: bf16 linear layers, embedding and output layer, plus vLLM's rotary cache (not read per token) */
  W = (lin + 2 * V * h) * 2;
  close_to(component(d, "weights"), W + 4096 * dh * 2, 1e-12);
  /* one token for one sequence: 2 FLOP per weight is ~0.05 ms, reading 13 GB ~6 ms */
  t_dec = (W + 1 * ctx * kvt) / bw;
  close_to(num(d, "speed.itl_s.p50"), t_dec, 1e-9);
  assert_string_equal(str(d, "speed.iteration.bound"), "memory");
  /* prefill of 128 tokens: GEMMs, causal attention (64 positions on
   * average, QK^T and PV), the output layer for the one sequence */
  fl = 2 * lin * 128 + 4 * L * a * dh * 64 * 128 + 2 * V * h * 1;
  t_pre = fmax(fl / peak, W / bw);
  close_to(num(d, "speed.ttft_s.p50"), t_pre, 1e-9);
  close_to(num(d, "speed.e2e_s.p50"), t_pre + 63 * t_dec, 1e-9);
  gpuplan_doc_free(d);
}

/* Poisson arrivals: Little's law, ordered quantiles, the rate carried, and
 * saturation beyond capacity. */
static void rate_queue(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  double cap;
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "rate=4", "input_len=1000", "output_len=200",
                         NULL),
                   GPUPLAN_OK);
  assert_false(flag(d, "speed.saturated"));
  close_to(num(d, "speed.throughput.output_tokens_per_s"), 4 * 200, 1e-12);
  close_to(num(d, "speed.running"), 4 * 200 * num(d, "speed.tpot_s.mean"), 1e-5);
  assert_true(num(d, "speed.ttft_s.p50") <= num(d, "speed.ttft_s.p90"));
  assert_true(num(d, "speed.ttft_s.p90") <= num(d, "speed.ttft_s.p99"));
  assert_true(num(d, "speed.itl_s.p50") <= num(d, "speed.itl_s.p99"));
  assert_true(num(d, "speed.e2e_s.p50") > 199 * num(d, "speed.itl_s.p50"));
  /* TTFT at low load: the prefill alone, a wait for the running iteration, the admission */
  assert_true(num(d, "speed.ttft_s.p50") >= num(d, "speed.prefill_s"));
  cap = num(d, "speed.capacity_requests_per_s");
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "rate=1000", "input_len=1000", "output_len=200",
                         NULL),
                   GPUPLAN_OK);
  assert_true(flag(d, "speed.saturated"));
  assert_true(isnan(num(d, "speed.ttft_s.p99")));
  close_to(num(d, "speed.throughput.requests_per_s"), cap, 1e-9);
  assert_true(has_line(d, "notes", "queue grows"));
  gpuplan_doc_free(d);
  /* two replicas take twice the load at the same latency */
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "rate=8", "replicas=2", "input_len=1000",
                         "output_len=200", NULL),
                   GPUPLAN_OK);
  close_to(num(d, "speed.throughput.requests_per_s"), 8, 1e-12);
  gpuplan_doc_free(d);
}

/* Tensor parallelism over PCIe (L40S) and over NVSwitch (H100), per the
 * catalog's fabric rows; EC-13: PCIe TP is served, not refused. */
static void tp_fabrics(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  double pcie, nvl;
  assert_int_equal(serve(f, &d, "model=llama-2-70b", "gpu=l40s", "tp=4", "weight_dtype=fp8", "concurrency=8", NULL),
                   GPUPLAN_OK);
  assert_string_equal(str(d, "speed.tp_fabric.fabric"), "pcie4");
  assert_false(flag(d, "speed.tp_fabric.nvlink"));
  assert_true(num(d, "speed.tp_fabric.allreduces_per_token") == 160);
  pcie = num(d, "speed.iteration.tp_comm_s");
  assert_true(pcie > 0);
  assert_true(has_line(d, "notes", "PCIe"));
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=llama-2-70b", "gpu=h100-sxm5-80gb", "tp=4", "weight_dtype=fp8",
                         "concurrency=8", NULL),
                   GPUPLAN_OK);
  assert_string_equal(str(d, "speed.tp_fabric.fabric"), "nvswitch4");
  assert_true(flag(d, "speed.tp_fabric.nvlink"));
  nvl = num(d, "speed.iteration.tp_comm_s");
  assert_true(nvl > 0 && nvl < pcie);
  gpuplan_doc_free(d);
  /* TP inside a node only */
  assert_int_equal(serve(f, &d, "model=llama-2-70b", "node=Standard_NC4as_T4_v3", "tp=2", NULL), GPUPLAN_EINVAL);
}

/* The seeds' entry point: a 350M model on Azure's Standard_NC4as_T4_v3
 * ($0.526/h in the catalog), and the price per million tokens it implies. */
static void t4_cost(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  double per_h, share, out, in;
  assert_int_equal(serve(f, &d, "model=gpt-2-medium", "node=Standard_NC4as_T4_v3", "concurrency=8", "input_len=512",
                         "output_len=128", NULL),
                   GPUPLAN_OK);
  assert_string_equal(str(d, "gpu"), "t4");
  assert_string_equal(str(d, "layout.weights"), "fp16"); /* T4 (sm_75) has no BF16 */
  assert_string_equal(str(d, "cost.currency"), "USD");
  per_h = num(d, "cost.per_hour");
  close_to(per_h, 0.526, 1e-12);
  share = num(d, "cost.input_share");
  out = num(d, "speed.throughput.output_tokens_per_s");
  in = num(d, "speed.throughput.input_tokens_per_s");
  close_to(num(d, "cost.per_million_output"), per_h / 3600 * (1 - share) / out * 1e6, 1e-12);
  close_to(num(d, "cost.per_million_input"), per_h / 3600 * share / in * 1e6, 1e-12);
  close_to(in / out, 512.0 / 128.0, 1e-12);
  gpuplan_doc_free(d);
  /* the seed's "350 M" names the catalog model of that size (job/model_resolve.c) */
  assert_int_equal(serve(f, &d, "model=350M", "node=Standard_NC4as_T4_v3", NULL), GPUPLAN_OK);
  assert_string_equal(str(d, "model_source"), "size");
  assert_string_equal(str(d, "shape_of"), "gpt-2-medium");
  gpuplan_doc_free(d);
}

/* CPU serving of a small model on a CPU-only VM, on the same terms. */
static void cpu_serving(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  double w;
  assert_int_equal(serve(f, &d, "model=gpt-2-medium", "node=Standard_D16s_v5", "concurrency=1", "input_len=256",
                         "output_len=64", NULL),
                   GPUPLAN_OK);
  assert_true(flag(d, "cpu_only"));
  assert_null(str(d, "gpu"));
  assert_true(flag(d, "memory.has_kv_cache"));
  w = component(d, "weights");
  /* decode at batch 1 reads every weight: at least weights / (16 vCPUs x 2.5 GB/s) */
  assert_true(num(d, "speed.itl_s.p50") >= w / (16 * 2.5e9));
  close_to(num(d, "cost.per_hour"), 0.768, 1e-12);
  gpuplan_doc_free(d);
}

/* Weight and KV types, prefix caching, paged vs contiguous, MoE with EP. */
static void layouts(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  double w16, wawq, kv16, cap_paged, ttft0, cap_hit;
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "context_len=8192", "concurrency=32", NULL),
                   GPUPLAN_OK);
  w16 = component(d, "weights");
  kv16 = num(d, "memory.kv_bytes_per_token");
  cap_paged = num(d, "speed.batch_cap");
  ttft0 = num(d, "speed.ttft_s.p50");
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "context_len=8192", "concurrency=32",
                         "weight_dtype=int4", "kv_dtype=fp8", NULL),
                   GPUPLAN_OK);
  assert_string_equal(str(d, "layout.weights"), "awq");
  wawq = component(d, "weights");
  /* linear layers at 0.5 + 2.5/128 bytes, embeddings and output layer 16-bit */
  close_to(wawq, (32 * (4096.0 * 128 * 80 + 3 * 4096.0 * 14336) * (0.5 + 2.5 / 128)) + 2 * 128256.0 * 4096 * 2 +
                     8192 * 128 * 2,
           1e-12);
  assert_true(wawq < 0.4 * w16);
  assert_true(num(d, "memory.kv_bytes_per_token") == kv16 / 2);
  gpuplan_doc_free(d);
  /* a prefix cache hit skips prefill and shares blocks */
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "context_len=8192", "concurrency=32",
                         "prefix_hit=0.5", NULL),
                   GPUPLAN_OK);
  cap_hit = num(d, "speed.batch_cap");
  assert_true(cap_hit >= cap_paged);
  assert_true(num(d, "speed.ttft_s.p50") < ttft0);
  gpuplan_doc_free(d);
  /* contiguous: every sequence reserves max_model_len */
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=a100-80gb", "context_len=8192", "concurrency=32",
                         "paged=false", NULL),
                   GPUPLAN_OK);
  close_to(num(d, "speed.batch_cap"), floor(num(d, "memory.kv_tokens") / 8192), 1e-12);
  assert_true(num(d, "speed.batch_cap") < cap_paged);
  gpuplan_doc_free(d);
  /* MoE: experts over the TP group (ep = tp) */
  assert_int_equal(serve(f, &d, "model=mixtral-8x7b", "gpu=h100-sxm5-80gb", "tp=2", "ep=2", "rate=2", NULL),
                   GPUPLAN_OK);
  assert_true(num(d, "layout.ep") == 2);
  assert_true(num(d, "experts") == 8);
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=mixtral-8x7b", "gpu=h100-sxm5-80gb", "tp=2", "ep=4", NULL), GPUPLAN_EINVAL);
  /* SGLang and TensorRT-LLM lay the same GPU out by their own rules */
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=h100-sxm5-80gb", "engine=sglang", NULL), GPUPLAN_OK);
  close_to(num(d, "memory.budget_bytes"), 0.88 * 79.22 * GiB, 1e-12);
  assert_true(has_line(d, "memory.engine_log", "KV Cache is allocated. #tokens: "));
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=h100-sxm5-80gb", "engine=trtllm",
                         "kv_cache_free_gpu_mem_fraction=0.5", NULL),
                   GPUPLAN_OK);
  assert_true(has_line(d, "memory.engine_log", "[MemUsageChange] Allocated "));
  assert_true(num(d, "memory.block_tokens") == 32);
  gpuplan_doc_free(d);
}

/* The refusals name what to change. */
static void refusals(void **state) {
  fx *f = *state;
  gpuplan_doc *d = NULL;
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=t4", "weight_dtype=bf16", NULL), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "compute capability"));
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "gpu=h100-sxm5-80gb", "quant=nvfp4", "weight_dtype=int4", NULL),
                   GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "Blackwell"));
  assert_int_equal(serve(f, &d, "model=llama-2-7b", "gpu=h100-sxm5-80gb", "tp=3", NULL), GPUPLAN_EINVAL);
  assert_int_equal(serve(f, &d, "model=llama-2-7b", "gpu=h100-sxm5-80gb", "rate=1", "concurrency=4", NULL),
                   GPUPLAN_EINVAL);
  assert_int_equal(serve(f, &d, "model=llama-2-7b", "gpu=h100-sxm5-80gb", "kv_dtype=int8", NULL), GPUPLAN_EINVAL);
  assert_int_equal(serve(f, &d, "model=llama-2-7b", "gpu=h100-sxm5-80gb", "serve_constants=nonsense=1", NULL),
                   GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "unknown constant"));
  /* weights beyond the budget: the layout and the shortfall, no speed */
  assert_int_equal(serve(f, &d, "model=llama-2-70b", "gpu=l4", NULL), GPUPLAN_OK);
  assert_false(flag(d, "memory.fits"));
  assert_null(at(d, "speed"));
  assert_true(has_line(d, "notes", "does not fit"));
  gpuplan_doc_free(d);
  /* the KV cache holds no max_model_len request: fits is false and vLLM's error is quoted */
  assert_int_equal(serve(f, &d, "model=llama-3.1-8b", "gpu=l4", "input_len=512", "output_len=64", "rate=1", NULL),
                   GPUPLAN_OK);
  assert_false(flag(d, "memory.fits"));
  assert_true(has_line(d, "memory.engine_log", "is larger than the maximum number of tokens"));
  gpuplan_doc_free(d);
  assert_int_equal(gpuplan_job_run(f->job, "plan", &d), GPUPLAN_EINVAL); /* serve's options are serve's */
}

/* serve --search: the cheapest SKU/TP/replicas that meet the SLO at the rate. */
static void slo_search(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  size_t i, n;
  double prev = 0;
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "search=true", "rate=10", "input_len=1000", "output_len=200",
                         "slo_ttft=1000", "slo_itl=100", "top=20", NULL),
                   GPUPLAN_OK);
  assert_string_equal(str(d, "schema"), "gpuplan.serve-search/1");
  n = gpuplan_value_count(at(d, "best"));
  assert_true(n > 0);
  assert_true(num(d, "meeting") >= (double)n);
  for (i = 0; i < n; i++) {
    char p[64];
    snprintf(p, sizeof p, "best.%zu.ttft_s", i);
    assert_true(num(d, p) <= 1.0);
    snprintf(p, sizeof p, "best.%zu.itl_s", i);
    assert_true(num(d, p) <= 0.1);
    snprintf(p, sizeof p, "best.%zu.per_hour", i);
    if (!isnan(num(d, p))) {
      assert_true(num(d, p) >= prev);
      prev = num(d, p);
    }
    snprintf(p, sizeof p, "best.%zu.replicas", i);
    {
      double reps = num(d, p);
      snprintf(p, sizeof p, "best.%zu.per_replica_rate", i);
      assert_true(reps * num(d, p) >= 10 * (1 - 1e-9));
    }
  }
  gpuplan_doc_free(d);
  /* a 350M model with a loose SLO: CPU nodes compete on the same terms */
  assert_int_equal(serve(f, &d, "model=gpt-2-medium", "search=true", "rate=1", "input_len=256", "output_len=64",
                         "slo_ttft=2000", "slo_itl=200", "top=40", NULL),
                   GPUPLAN_OK);
  n = gpuplan_value_count(at(d, "best"));
  {
    int cpu = 0;
    for (i = 0; i < n; i++) {
      char p[64];
      snprintf(p, sizeof p, "best.%zu.cpu_only", i);
      cpu |= flag(d, p);
    }
    assert_true(cpu);
  }
  gpuplan_doc_free(d);
  assert_int_equal(serve(f, &d, "model=llama-3-8b", "search=true", "slo_ttft=1000", NULL), GPUPLAN_EINVAL);
}

/* --- the published serving measurements ---------------------------------------------- */

static const char *reference(void) {
  const char *d = getenv("GPUPLAN_REFERENCE");
  return d ? d : "../data/reference";
}

static double metric(const gpuplan_doc *d, const char *group, const char *field) {
  const gpuplan_value *m = at(d, "metrics");
  size_t i;
  for (i = 0; i < gpuplan_value_count(m); i++) {
    const gpuplan_value *x = gpuplan_value_at(m, i);
    if (strcmp(gpuplan_value_string(gpuplan_value_get(x, "metric"), NULL), group) == 0)
      return gpuplan_value_real(gpuplan_value_get(x, field));
  }
  fail_msg("no metric %s", group);
  return NAN;
}

static double result(const gpuplan_doc *d, const char *id) {
  const gpuplan_value *m = at(d, "results");
  size_t i;
  for (i = 0; i < gpuplan_value_count(m); i++) {
    const gpuplan_value *x = gpuplan_value_at(m, i);
    if (strcmp(gpuplan_value_string(gpuplan_value_get(x, "id"), NULL), id) == 0)
      return gpuplan_value_real(gpuplan_value_get(x, "predicted"));
  }
  fail_msg("no row %s", id);
  return NAN;
}

static void calibration(void **state) {
  fx *f = *state;
  gpuplan_doc *d;
  gpuplan_catalog *layered;
  gpuplan_job *job;
  char csv[1024], layer[1024], sqlpath[1024], *sql;
  const char *tmp = getenv("GPUPLAN_TEST_TMP"), *src = getenv("GPUPLAN_SOURCE_DIR");
  FILE *fp;
  long n;
  size_t i;
  snprintf(csv, sizeof csv, "%s/serving_runs_calibration.csv", reference());
  /* the default catalog has every row's GPU (the RTX 3090 and RTX PRO 6000 rows came from
   * tests/data/serve/extra_gpus.sql): no row is skipped; a skipped row would say why */
  gpuplan_job_reset(f->job);
  assert_int_equal(gpuplan_job_set(f->job, "validate_file", csv), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(f->job, "serve", &d), GPUPLAN_OK);
  assert_true(num(d, "rows") == 486);
  assert_true(num(d, "skipped") == 0);
  for (i = 0; i < gpuplan_value_count(at(d, "skipped_rows")); i++)
    assert_non_null(strstr(gpuplan_value_string(gpuplan_value_get(gpuplan_value_at(at(d, "skipped_rows"), i), "why"),
                                                NULL),
                           "not in the catalog"));
  gpuplan_doc_free(d);

  /* layering the same rows over it (as a site would add its own GPUs) changes nothing */
  snprintf(layer, sizeof layer, "%s/serve_layer.sqlite", tmp ? tmp : ".");
  snprintf(sqlpath, sizeof sqlpath, "%s/tests/data/serve/extra_gpus.sql", src ? src : "..");
  remove(layer);
  fp = fopen(sqlpath, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  n = ftell(fp);
  rewind(fp);
  sql = calloc(1, (size_t)n + 1);
  assert_int_equal(fread(sql, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  assert_int_equal(gpuplan_catalog_open(f->ctx, layer, GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &layered),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_import(layered, sql), GPUPLAN_OK);
  free(sql);
  assert_int_equal(gpuplan_job_new(f->ctx, layered, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "validate_file", csv), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "serve", &d), GPUPLAN_OK);
  assert_true(num(d, "rows") == 486);
  assert_true(num(d, "scored") == 486);
  assert_true(num(d, "skipped") == 0);
  /* the acceptance: median |error| <= 15% throughput, <= 20% TTFT and ITL */
  printf("# serving calibration: throughput median %.1f%% (p90 %.1f%%, worst %.1f%%), TTFT %.1f%% (worst %.1f%%), "
         "ITL %.1f%% (worst %.1f%%), memory %.1f%%\n",
         100 * metric(d, "throughput", "median_abs_error"), 100 * metric(d, "throughput", "p90_abs_error"),
         100 * metric(d, "throughput", "worst_abs_error"), 100 * metric(d, "ttft", "median_abs_error"),
         100 * metric(d, "ttft", "worst_abs_error"), 100 * metric(d, "itl", "median_abs_error"),
         100 * metric(d, "itl", "worst_abs_error"), 100 * metric(d, "memory", "median_abs_error"));
  assert_true(metric(d, "throughput", "n") == 390);
  assert_true(metric(d, "ttft", "n") == 40);
  assert_true(metric(d, "itl", "n") == 16);
  assert_true(metric(d, "throughput", "median_abs_error") <= 0.15);
  assert_true(metric(d, "ttft", "median_abs_error") <= 0.20);
  assert_true(metric(d, "itl", "median_abs_error") <= 0.20);
  /* numbers engines print, for the published cases */
  assert_true(result(d, "SC0483") == 860320);             /* TRT-LLM: max_tokens 860308 in blocks of 32 */
  close_to(result(d, "SC0484"), 52.51, 1e-3);             /* its GiB */
  close_to(result(d, "SC0469"), 14.9888, 1e-3);           /* vLLM: Loading model weights took 14.9888 GB */
  close_to(result(d, "SC0470"), 17.06, 0.01);             /* peak_torch_memory 17.06 GiB (20k max_model_len) */
  close_to(result(d, "SC0473"), 17.98, 0.01);             /* 17.98 GiB at 29k */
  close_to(result(d, "SC0477"), 15.05, 0.01);             /* 15.05 GiB at 35k: chunked prefill shrinks the profile */
  close_to(result(d, "SC0472"), 1952, 0.025);             /* # GPU blocks: 1952 */
  close_to(result(d, "SC0465"), 7351, 0.02);              /* # GPU blocks: 7351 (A100, Llama-2-7B) */
  close_to(result(d, "SC0485"), 67.7229, 0.005);          /* W8A8 70B: 67.7229 GB */
  gpuplan_doc_free(d);
  gpuplan_job_free(job);
  gpuplan_catalog_free(layered);
  remove(layer);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(llama3_8b_h100_vllm, setup, teardown),
    cmocka_unit_test_setup_teardown(llama3_8b_published_log, setup, teardown),
    cmocka_unit_test_setup_teardown(bert_large_has_no_kv_cache, setup, teardown),
    cmocka_unit_test_setup_teardown(decode_and_prefill_by_hand, setup, teardown),
    cmocka_unit_test_setup_teardown(rate_queue, setup, teardown),
    cmocka_unit_test_setup_teardown(tp_fabrics, setup, teardown),
    cmocka_unit_test_setup_teardown(t4_cost, setup, teardown),
    cmocka_unit_test_setup_teardown(cpu_serving, setup, teardown),
    cmocka_unit_test_setup_teardown(layouts, setup, teardown),
    cmocka_unit_test_setup_teardown(refusals, setup, teardown),
    cmocka_unit_test_setup_teardown(slo_search, setup, teardown),
    cmocka_unit_test_setup_teardown(calibration, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
