/*
 * cmd_serve.c: the serve command (issue 13): the memory an engine lays out
 * (vLLM, SGLang, TensorRT-LLM, TGI), the latency and throughput of a load
 * (offline, a static batch, concurrency, a request rate), the cost per
 * million tokens and the SLO check; --search for the cheapest SKU, TP
 * degree and replicas that meet an SLO at a rate; --validate for the
 * published serving measurements.  The model lives in plan/serve_*.c; this
 * file turns the job's options into its inputs and builds the documents.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/serve_job.h"
#include "plan/serve_int.h"

#define GiB 1073741824.0
#define MAX_NOTES 16

typedef struct serve_job {
  gpuplan_job *j;
  gpuplan__model_res mr;          /* how the job described the model (job/model_resolve.c) */
  const gpuplan_model *rec;       /* the model resolved */
  const char *model_arg;
  int sized;                      /* not a catalog row as named: a size, a config.json or a shape */
  gpuplan__smodel m;
  gpuplan__shw hw;
  gpuplan__serve_k k;
  gpuplan__scfg c;
  gpuplan__sload load;            /* per replica */
  double rate_total;              /* requests/s over all replicas */
  int64_t replicas;
  int bf16_fallback;
  char quant_text[32];
  const char *notes[MAX_NOTES];
  char note_buf[MAX_NOTES][256];
  int nnotes;
} serve_job;

static int64_t iopt(const gpuplan_job *j, int id, int64_t d) { return gpuplan__job_int(j, JOPT(id), d); }
static int jset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, JOPT(id)); }
static int64_t sint(const gpuplan_job *j, int id, int64_t d) { return gpuplan__job_int(j, SOPT(id), d); }
static double sreal(const gpuplan_job *j, int id, double d) { return gpuplan__job_real(j, SOPT(id), d); }
static int sset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, SOPT(id)); }
static const char *sstr(const gpuplan_job *j, int id) { return gpuplan__job_str(j, SOPT(id), NULL); }

static void note(serve_job *s, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);
static void note(serve_job *s, const char *fmt, ...) {
  va_list ap;
  if (s->nnotes >= MAX_NOTES) return;
  va_start(ap, fmt);
  vsnprintf(s->note_buf[s->nnotes], sizeof s->note_buf[0], fmt, ap);
  va_end(ap);
  s->notes[s->nnotes] = s->note_buf[s->nnotes];
  s->nnotes++;
}

/* "0.6.4" -> {0, 6, 4}; "latest" -> {0, 0, 0}. */
static int parse_version(gpuplan_job *j, const char *v, int ver[3]) {
  char *end;
  int i;
  ver[0] = ver[1] = ver[2] = 0;
  if (!v || strcmp(v, "latest") == 0) return GPUPLAN_OK;
  if (*v == 'v' || *v == 'V') v++;
  for (i = 0; i < 3; i++) {
    long n = strtol(v, &end, 10);
    if (end == v || n < 0 || n > 1000)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_ENGINE_VERSION),
                                "'%s' is not a version such as 0.6.4 or latest", sstr(j, S_ENGINE_VERSION));
    ver[i] = (int)n;
    v = end;
    if (*v != '.') break;
    v++;
  }
  if (*v && *v != '-' && *v != '+' && *v != 'r')
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_ENGINE_VERSION),
                              "'%s' is not a version such as 0.6.4 or latest", sstr(j, S_ENGINE_VERSION));
  return GPUPLAN_OK;
}

/* --- the model ------------------------------------------------------------------- */

static int resolve_model(serve_job *s) {
  gpuplan_job *j = s->j;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  /* the model as the job describes it: a catalog name, a size, a
   * config.json, or a shape (job/model_resolve.c, shared with plan) */
  GPUPLAN_TRY(gpuplan__model_resolve(j, &s->mr, &o));
  if (strcmp(s->mr.source, "module") == 0)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                          "module_params: a traced module has no transformer shape to serve; give the model by name, "
                          "config.json or its shape");
  s->rec = s->mr.m;
  s->model_arg = s->mr.label;
  s->sized = strcmp(s->mr.source, "catalog") != 0;
  gpuplan__smodel_from(&s->m, s->mr.m, 0);
  snprintf(s->m.id, sizeof s->m.id, "%s", s->mr.label);
  if (s->mr.note[0]) note(s, "%s", s->mr.note);
  return GPUPLAN_OK;
}

/* --- hardware, layout and the engine's settings --------------------------------------- */

static int resolve_hw(serve_job *s, const gpuplan_gpu *gpu_in, const gpuplan_node *node_in) {
  gpuplan_job *j = s->j;
  const char *gpu = gpuplan__job_str(j, JOPT(J_GPU), NULL), *node = gpuplan__job_str(j, JOPT(J_NODE), NULL);
  const gpuplan_node *n = node_in;
  const gpuplan_gpu *g = gpu_in;
  if (!g && !n) {
    if (gpu && node) return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "gpu, node: give a GPU or a node, not both");
    if (!gpu && !node)
      return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                            "gpu, node: needs a GPU SKU (gpu) or a node/VM (node; a CPU-only size serves on CPU)");
    if (node) GPUPLAN_TRY(gpuplan_catalog_node(j->cat, node, &n));
    if (gpu) GPUPLAN_TRY(gpuplan_catalog_gpu(j->cat, gpu, &g));
  }
  if (n && !n->gpu_id) return gpuplan__shw_cpu(j->ctx, n, &s->k, &s->hw);
  if (n && !g) GPUPLAN_TRY(gpuplan_catalog_gpu(j->cat, n->gpu_id, &g));
  GPUPLAN_TRY(gpuplan__shw_gpu(j->ctx, j->cat, g, n, &s->hw));
  if (gpuplan__job_str(j, JOPT(J_INTRA), NULL)) {
    const gpuplan_fabric *f;
    GPUPLAN_TRY(gpuplan_catalog_fabric(j->cat, gpuplan__job_str(j, JOPT(J_INTRA), NULL), &f));
    if (strcmp(f->scope, "intra") != 0)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_INTRA), "%s is a fabric between nodes (scope %s)",
                                f->id, f->scope);
    s->hw.link_bw = f->bw_bytes_s;
    s->hw.link_lat = isfinite(f->latency_s) ? f->latency_s : 1e-6;
    s->hw.link_name = f->id;
    s->hw.link_nvlink = strcmp(f->kind, "pcie") != 0;
  }
  if (sset(j, S_PRICE)) {
    s->hw.price_per_gpu_hour = sreal(j, S_PRICE, 0);
    s->hw.price_node_hour = NAN;
    s->hw.price_node = "given (price_per_gpu_hour)";
    s->hw.currency = "USD";
  }
  return GPUPLAN_OK;
}

/* The weight scheme from weight_dtype and quant, checked against the SKU
 * (MM-7: no BF16 below sm_80, no FP8 tensor cores below sm_89). */
static int resolve_scheme(serve_job *s) {
  gpuplan_job *j = s->j;
  int64_t q = sint(j, S_QUANT, 0);
  gpuplan_dtype wd = (gpuplan_dtype)iopt(j, J_WEIGHTS, GPUPLAN_DTYPE_BF16);
  int wset = jset(j, J_WEIGHTS);
  const gpuplan__shw *hw = &s->hw;
  int cc = hw->cc_major * 10 + hw->cc_minor;
  gpuplan__wscheme w;
  static const gpuplan__wscheme qmap[] = {GPUPLAN__W_BF16, GPUPLAN__W_BF16, GPUPLAN__W_FP8, GPUPLAN__W_INT8,
                                          GPUPLAN__W_W8A16, GPUPLAN__W_AWQ, GPUPLAN__W_GPTQ, GPUPLAN__W_NVFP4};
  if (q >= 2) {
    w = qmap[q];
    if (wset) {
      int bits = wd == GPUPLAN_DTYPE_INT4 ? 4 : (wd == GPUPLAN_DTYPE_FP8 || wd == GPUPLAN_DTYPE_INT8) ? 8 : 16;
      int want = (w == GPUPLAN__W_AWQ || w == GPUPLAN__W_GPTQ || w == GPUPLAN__W_NVFP4) ? 4 : 8;
      if (bits != want)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_QUANT),
                                  "%s stores %d-bit weights; weight_dtype %s says otherwise", gpuplan__wscheme_name(w),
                                  want, gpuplan_dtype_name(wd));
    }
  } else {
    switch (wd) {
    case GPUPLAN_DTYPE_FP16: w = GPUPLAN__W_FP16; break;
    case GPUPLAN_DTYPE_FP32: w = GPUPLAN__W_FP32; break;
    case GPUPLAN_DTYPE_FP8: w = GPUPLAN__W_FP8; break;
    case GPUPLAN_DTYPE_INT8: w = GPUPLAN__W_INT8; break;
    case GPUPLAN_DTYPE_INT4: w = GPUPLAN__W_AWQ; break;
    default: w = GPUPLAN__W_BF16; break;
    }
    if (q == 1 && w != GPUPLAN__W_BF16 && w != GPUPLAN__W_FP16 && w != GPUPLAN__W_FP32)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_QUANT), "none, but weight_dtype is %s",
                                gpuplan_dtype_name(wd));
  }
  if (hw->gpu) {
    if (w == GPUPLAN__W_BF16 && cc < 80) {
      if (wset)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_WEIGHTS),
                                  "bf16 needs compute capability 8.0 or newer; %s is %d.%d (use fp16)",
                                  hw->gpu->name, hw->cc_major, hw->cc_minor);
      w = GPUPLAN__W_FP16;
      s->bf16_fallback = 1;
      note(s, "%s (compute capability %d.%d) has no BF16: served in FP16, as vLLM's dtype=auto does",
           hw->gpu->name, hw->cc_major, hw->cc_minor);
    }
    if (w == GPUPLAN__W_FP8 && cc < 89) {
      if (cc < 80)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_QUANT),
                                  "FP8 weights need compute capability 8.0+ (FP8 W8A16 Marlin) or 8.9+ (FP8 tensor "
                                  "cores); %s is %d.%d",
                                  hw->gpu->name, hw->cc_major, hw->cc_minor);
      w = GPUPLAN__W_W8A16;
      note(s, "%s has no FP8 tensor cores (sm_%d%d): FP8 weights run as W8A16 (Marlin), 16-bit math",
           hw->gpu->name, hw->cc_major, hw->cc_minor);
    }
    if (w == GPUPLAN__W_NVFP4 && cc < 100)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_QUANT),
                                "NVFP4 needs FP4 tensor cores (Blackwell, compute capability 10.0+); %s is %d.%d",
                                hw->gpu->name, hw->cc_major, hw->cc_minor);
    if ((w == GPUPLAN__W_AWQ || w == GPUPLAN__W_GPTQ) && cc < 80)
      note(s, "%s (sm_%d%d) has no Marlin kernels: 4-bit weights dequantise in slower kernels", hw->gpu->name,
           hw->cc_major, hw->cc_minor);
    if (w == GPUPLAN__W_INT8 && hw->i8 <= 0) {
      w = GPUPLAN__W_W8A16;
      note(s, "%s has no INT8 tensor-core figure: INT8 weights modelled as W8A16", hw->gpu->name);
    }
  }
  s->c.w = w;
  snprintf(s->quant_text, sizeof s->quant_text, "%s", gpuplan__wscheme_name(w));
  return GPUPLAN_OK;
}

static int resolve_cfg(serve_job *s) {
  gpuplan_job *j = s->j;
  gpuplan__scfg *c = &s->c;
  const gpuplan__smodel *m = &s->m;
  int64_t gpus = iopt(j, J_GPUS, 0), tpp;
  gpuplan_dtype kv;
  c->engine = (gpuplan__engine)sint(j, S_ENGINE, 0);
  GPUPLAN_TRY(parse_version(j, sstr(j, S_ENGINE_VERSION), c->ver));
  c->m = m;
  c->hw = &s->hw;
  c->k = &s->k;
  c->tp = iopt(j, J_TP, 1);
  c->pp = iopt(j, J_PP, 1);
  c->ep = iopt(j, J_EP, 1);
  tpp = c->tp * c->pp;
  if (!s->hw.gpu && tpp > 1)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "tp, pp: CPU serving runs one replica per node (tp = pp = 1)");
  if ((int64_t)m->a % c->tp)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_TP),
                              "%lld does not divide the model's %.0f attention heads",
                              (long long)c->tp, m->a);
  if ((int64_t)m->kv % c->tp && c->tp % (int64_t)m->kv)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_TP),
                              "%lld and the model's %.0f KV heads: one must divide the other", (long long)c->tp, m->kv);
  if (s->hw.gpu && c->tp > s->hw.gpus_per_node)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_TP),
                              "%lld GPUs: tensor parallelism stays inside a node (%d GPUs)", (long long)c->tp,
                              s->hw.gpus_per_node);
  if (c->pp > (int64_t)m->L)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_PP), "%lld stages for %.0f layers", (long long)c->pp,
                              m->L);
  if (c->ep > 1 && (m->E <= 1 || c->ep != c->tp || (int64_t)m->E % c->ep))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_EP),
                              "expert parallelism spans the tensor-parallel group: ep = tp, dividing the experts "
                              "(%.0f)", m->E);
  if (gpus) {
    if (gpus % tpp)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_GPUS), "%lld is not a multiple of tp*pp (%lld)",
                                (long long)gpus, (long long)tpp);
    s->replicas = gpus / tpp;
    if (sset(j, S_REPLICAS) && sint(j, S_REPLICAS, 1) != s->replicas)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_REPLICAS), "%lld, but gpus / (tp*pp) is %lld",
                                (long long)sint(j, S_REPLICAS, 1), (long long)s->replicas);
  } else if (sset(j, S_REPLICAS)) {
    s->replicas = sint(j, S_REPLICAS, 1);
  } else if (s->hw.node && s->hw.gpu) {
    int64_t all = s->hw.node->gpu_count * iopt(j, J_NODES, 1);
    s->replicas = all >= tpp ? all / tpp : 1;
  } else {
    s->replicas = iopt(j, J_NODES, 1);
  }
  GPUPLAN_TRY(resolve_scheme(s));
  c->group = iopt(j, J_GROUP, 128);
  kv = (gpuplan_dtype)iopt(j, J_KV, GPUPLAN_DTYPE_BF16);
  if (!jset(j, J_KV)) kv = c->w == GPUPLAN__W_FP16 || c->w == GPUPLAN__W_FP32 ? GPUPLAN_DTYPE_FP16 : GPUPLAN_DTYPE_BF16;
  if (kv == GPUPLAN_DTYPE_BF16 && s->hw.gpu && s->hw.cc_major < 8) {
    if (jset(j, J_KV))
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_KV),
                                "bf16 needs compute capability 8.0 or newer (use fp16)");
    kv = GPUPLAN_DTYPE_FP16;
  }
  if (kv == GPUPLAN_DTYPE_INT4)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_KV), "no engine modelled keeps an int4 KV cache");
  if (kv == GPUPLAN_DTYPE_INT8 && c->engine != GPUPLAN__ENG_TRTLLM)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_KV), "an int8 KV cache is TensorRT-LLM's (engine trtllm)");
  c->kv = kv;
  c->max_len = iopt(j, J_CONTEXT, 0);
  if (c->max_len > (int64_t)m->max_len && m->max_len > 0)
    note(s, "context_len %lld is beyond the model's %.0f positions", (long long)c->max_len, m->max_len);
  c->block = jset(j, J_BLOCK) ? iopt(j, J_BLOCK, 16) : 0;
  c->paged = jset(j, J_PAGED) ? (int)iopt(j, J_PAGED, 1) : 1;
  c->prefix_hit = sreal(j, S_PREFIX_HIT, 0);
  c->gpu_util = sset(j, S_GPU_UTIL) ? sreal(j, S_GPU_UTIL, 0.9) : NAN;
  c->mem_frac = sset(j, S_MEM_FRAC) ? sreal(j, S_MEM_FRAC, 0.88) : NAN;
  c->kv_free_frac = sset(j, S_KV_FREE_FRAC) ? sreal(j, S_KV_FREE_FRAC, 0.9) : NAN;
  c->kv_max_tokens = sint(j, S_KV_MAX_TOKENS, 0);
  c->max_seqs = sint(j, S_MAX_SEQS, 0);
  c->max_batched = sint(j, S_MAX_BATCHED, 0);
  c->chunked = sset(j, S_CHUNKED) ? (int)sint(j, S_CHUNKED, 1) : -1;
  c->eager = (int)sint(j, S_EAGER, 0) || !s->hw.gpu; /* CPU serving: no CUDA graphs */
  c->sched_steps = sint(j, S_SCHED_STEPS, 1);
  if (c->sched_steps > 1 && c->engine != GPUPLAN__ENG_VLLM)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_SCHED_STEPS), "multi-step scheduling is vLLM's");
  c->non_torch = sset(j, S_NON_TORCH) ? (double)sint(j, S_NON_TORCH, 0) : NAN;
  if (!sset(j, S_NON_TORCH) && jset(j, J_CUDA_CONTEXT))
    c->non_torch = (double)iopt(j, J_CUDA_CONTEXT, 0) + (c->tp > 1 ? 0.05 * GiB : 0);
  c->graph_bytes = sset(j, S_GRAPH_MEM) ? (double)sint(j, S_GRAPH_MEM, 0) : NAN;
  c->visible_override = sset(j, S_TOTAL_MEM) ? (double)sint(j, S_TOTAL_MEM, 0) : NAN;
  if (s->hw.gpu && c->engine == GPUPLAN__ENG_TRTLLM && !s->hw.link_nvlink && c->tp > 1)
    note(s, "tensor parallelism over %s: every layer's two all-reduces cross PCIe", s->hw.link_name);
  if (s->hw.gpu && c->engine != GPUPLAN__ENG_TRTLLM && !s->hw.link_nvlink && c->tp > 1)
    note(s, "tensor parallelism over %s (no NVLink): vLLM and SGLang run it, at PCIe all-reduce speed",
         s->hw.link_name);
  return GPUPLAN_OK;
}

static int resolve_load(serve_job *s) {
  gpuplan_job *j = s->j;
  gpuplan__sload *l = &s->load;
  int modes = sset(j, S_CONCURRENCY) + sset(j, S_RATE) + jset(j, J_BATCH);
  memset(l, 0, sizeof *l);
  if (modes > 1)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                          "concurrency, rate, batch: give one load (none: offline, every request queued)");
  l->in = (double)sint(j, S_INPUT_LEN, 512);
  l->out = (double)sint(j, S_OUTPUT_LEN, 256);
  if (s->m.encoder) {
    if (sset(j, S_OUTPUT_LEN))
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_OUTPUT_LEN), "%s is an encoder: it generates no tokens",
                                s->m.id);
    l->out = 0;
  }
  l->exp_lengths = (int)sint(j, S_LENGTHS, 0);
  if (sset(j, S_RATE)) {
    l->kind = GPUPLAN__LOAD_RATE;
    s->rate_total = sreal(j, S_RATE, 1);
    l->rate = s->rate_total / (double)s->replicas;
  } else if (sset(j, S_CONCURRENCY)) {
    l->kind = GPUPLAN__LOAD_CONCURRENCY;
    l->concurrency = (double)sint(j, S_CONCURRENCY, 1) / (double)s->replicas;
    if (l->concurrency < 1) l->concurrency = 1;
  } else if (jset(j, J_BATCH)) {
    l->kind = GPUPLAN__LOAD_BATCH;
    l->concurrency = (double)iopt(j, J_BATCH, 1);
  } else {
    l->kind = GPUPLAN__LOAD_OFFLINE;
  }
  return GPUPLAN_OK;
}

static int setup(serve_job *s, gpuplan_job *j) {
  const char *spec = sstr(j, S_CONSTANTS);
  memset(s, 0, sizeof *s);
  s->j = j;
  gpuplan__serve_k_default(&s->k);
  if (spec) GPUPLAN_TRY(gpuplan__serve_k_apply(j->ctx, &s->k, spec));
  gpuplan__scfg_init(&s->c);
  GPUPLAN_TRY(resolve_model(s));
  return GPUPLAN_OK;
}

/* --- document pieces ------------------------------------------------------------------ */

static const char *const mem_names[GPUPLAN__SM_COUNT] = {"weights", "activation peak", "non-torch memory",
                                                         "KV cache", "CUDA graphs"};
static const char *const qnames[GPUPLAN__QN] = {"p50", "p90", "p99"};
static const char *const load_names[] = {"offline", "rate", "concurrency", "batch"};

static void fmt_int_commas(char *buf, size_t cap, double v) {
  char tmp[32];
  size_t n, i, o = 0, lead;
  snprintf(tmp, sizeof tmp, "%.0f", v);
  n = strlen(tmp);
  lead = n % 3 ? n % 3 : 3;
  for (i = 0; i < n && o + 2 < cap; i++) {
    if (i && i >= lead && (i - lead) % 3 == 0) buf[o++] = ',';
    buf[o++] = tmp[i];
  }
  buf[o] = 0;
}

/* The lines the engine prints at start-up for this pool. */
static void put_engine_log(gpuplan__docb *b, const serve_job *s, const gpuplan__smem *mem) {
  const gpuplan__scfg *c = &s->c;
  char tok[32], len[32];
  fmt_int_commas(tok, sizeof tok, mem->kv_tokens);
  fmt_int_commas(len, sizeof len, (double)mem->max_len);
  gpuplan__doc_arr(b, "engine_log");
  if (!s->m.encoder && mem->kv_tokens <= 0) {
    if (c->engine == GPUPLAN__ENG_VLLM)
      gpuplan__doc_str(b, NULL, "ValueError: No available memory for the cache blocks. Try increasing "
                                "`gpu_memory_utilization` when initializing the engine.");
    else
      gpuplan__doc_str(b, NULL, "(out of memory before the KV cache is allocated)");
  } else if (s->m.encoder) {
    gpuplan__doc_str(b, NULL, "(an encoder: no KV cache is allocated)");
  } else if (c->engine == GPUPLAN__ENG_VLLM && (!c->ver[0] && (c->ver[1] >= 8 || (!c->ver[1] && !c->ver[2])))) {
    gpuplan__doc_strf(b, NULL, "Available KV cache memory: %.2f GiB", mem->item[GPUPLAN__SM_KV] / GiB);
    gpuplan__doc_strf(b, NULL, "GPU KV cache size: %s tokens", tok);
    gpuplan__doc_strf(b, NULL, "Maximum concurrency for %s tokens per request: %.2fx", len, mem->max_concurrency);
  } else if (c->engine == GPUPLAN__ENG_VLLM) {
    gpuplan__doc_strf(b, NULL, "# GPU blocks: %.0f", mem->kv_blocks);
    gpuplan__doc_strf(b, NULL, "Maximum concurrency for %s tokens per request: %.2fx", len, mem->max_concurrency);
  } else if (c->engine == GPUPLAN__ENG_SGLANG) {
    gpuplan__doc_strf(b, NULL, "KV Cache is allocated. #tokens: %.0f, K size: %.2f GB, V size: %.2f GB",
                      mem->kv_tokens, mem->item[GPUPLAN__SM_KV] / 2 / GiB, mem->item[GPUPLAN__SM_KV] / 2 / GiB);
    gpuplan__doc_strf(b, NULL, "max_total_num_tokens=%.0f", mem->kv_tokens);
  } else if (c->engine == GPUPLAN__ENG_TRTLLM) {
    gpuplan__doc_strf(b, NULL, "[MemUsageChange] Allocated %.2f GiB for max tokens in paged KV cache (%.0f)",
                      mem->item[GPUPLAN__SM_KV] / GiB, mem->kv_tokens);
  } else {
    gpuplan__doc_strf(b, NULL, "Setting max batch total tokens to %.0f", mem->kv_tokens);
  }
  if (!s->m.encoder && mem->kv_tokens > 0 && mem->kv_tokens < (double)mem->max_len)
    gpuplan__doc_strf(b, NULL,
                      "ValueError: The model's max seq len (%lld) is larger than the maximum number of tokens that "
                      "can be stored in KV cache (%.0f)",
                      (long long)mem->max_len, mem->kv_tokens);
  gpuplan__doc_end(b);
}

static void put_memory(gpuplan__docb *b, const serve_job *s, const gpuplan__smem *mem) {
  int i;
  gpuplan__doc_obj(b, "memory");
  gpuplan__doc_real(b, "device_bytes", s->hw.device_bytes);
  gpuplan__doc_real(b, "visible_bytes", mem->visible);
  gpuplan__doc_str(b, "visible_source", isfinite(s->c.visible_override) ? "given (gpu_total_memory)"
                                                                        : s->hw.visible_source);
  gpuplan__doc_real(b, "budget_bytes", mem->budget);
  gpuplan__doc_str(b, "rule", mem->rule);
  gpuplan__doc_arr(b, "components");
  for (i = 0; i < GPUPLAN__SM_COUNT; i++) {
    if (i == GPUPLAN__SM_KV && s->m.encoder) continue;
    if (mem->item[i] <= 0 && i != GPUPLAN__SM_KV) continue;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "name", mem_names[i]);
    gpuplan__doc_real(b, "bytes", mem->item[i]);
    gpuplan__doc_str(b, "formula", mem->formula[i] ? mem->formula[i] : "");
    gpuplan__doc_bool(b, "in_budget", i != GPUPLAN__SM_GRAPHS);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_bool(b, "has_kv_cache", !s->m.encoder);
  if (s->m.encoder) {
    gpuplan__doc_null(b, "kv_bytes_per_token");
    gpuplan__doc_null(b, "kv_cache_bytes");
    gpuplan__doc_null(b, "kv_blocks");
    gpuplan__doc_null(b, "kv_tokens");
    gpuplan__doc_null(b, "block_tokens");
    gpuplan__doc_null(b, "max_concurrency");
  } else {
    gpuplan__doc_real(b, "kv_bytes_per_token", mem->kv_per_token);
    gpuplan__doc_real(b, "kv_cache_bytes", mem->item[GPUPLAN__SM_KV]);
    gpuplan__doc_real(b, "kv_blocks", mem->kv_blocks);
    gpuplan__doc_real(b, "kv_tokens", mem->kv_tokens);
    gpuplan__doc_int(b, "block_tokens", mem->kv_blocks > 0 ? (int64_t)(mem->kv_tokens / mem->kv_blocks)
                                                           : (s->c.block > 0 ? s->c.block : 16));
    gpuplan__doc_real(b, "max_concurrency", mem->max_concurrency);
  }
  gpuplan__doc_int(b, "max_model_len", mem->max_len);
  gpuplan__doc_int(b, "max_num_seqs", mem->max_seqs);
  gpuplan__doc_int(b, "max_num_batched_tokens", mem->max_batched);
  gpuplan__doc_bool(b, "chunked_prefill", mem->chunked);
  gpuplan__doc_real(b, "total_bytes", mem->total);
  gpuplan__doc_real(b, "headroom_bytes", mem->headroom);
  gpuplan__doc_bool(b, "fits", mem->fits);
  put_engine_log(b, s, mem);
  gpuplan__doc_end(b);
}

static void put_quantiles(gpuplan__docb *b, const char *key, const double *v, double mean) {
  int i;
  gpuplan__doc_obj(b, key);
  for (i = 0; i < GPUPLAN__QN; i++) gpuplan__doc_real(b, qnames[i], v ? v[i] : NAN);
  gpuplan__doc_real(b, "mean", mean);
  gpuplan__doc_end(b);
}

static void put_iter(gpuplan__docb *b, const char *key, const gpuplan__siter *it) {
  gpuplan__doc_obj(b, key);
  gpuplan__doc_real(b, "seconds", it->seconds);
  gpuplan__doc_real(b, "weights_s", it->weights_s);
  gpuplan__doc_real(b, "kv_s", it->kv_s);
  gpuplan__doc_real(b, "compute_s", it->compute_s);
  gpuplan__doc_real(b, "attention_s", it->attn_s);
  gpuplan__doc_real(b, "tp_comm_s", it->comm_s);
  gpuplan__doc_real(b, "overhead_s", it->overhead_s);
  gpuplan__doc_str(b, "bound", it->compute_bound ? "compute" : "memory");
  gpuplan__doc_end(b);
}

static const char *kernel_text(const serve_job *s) {
  const gpuplan__shw *hw = &s->hw;
  if (!hw->gpu) return "CPU: vector FP32 GEMMs, weights and KV read from DRAM";
  switch (s->c.w) {
  case GPUPLAN__W_FP8: return "FP8 W8A8 GEMMs on FP8 tensor cores (cuBLASLt / CUTLASS)";
  case GPUPLAN__W_INT8: return "INT8 W8A8 GEMMs on INT8 tensor cores (SmoothQuant-style, CUTLASS)";
  case GPUPLAN__W_W8A16: return "8-bit weights dequantised in the GEMM (Marlin W8A16), 16-bit tensor cores";
  case GPUPLAN__W_AWQ:
  case GPUPLAN__W_GPTQ:
    return hw->cc_major >= 8
               ? "4-bit weights dequantised in the GEMM (Marlin W4A16: ~4x less weight traffic, 16-bit math)"
                             : "4-bit weights dequantised in the GEMM (AWQ/GPTQ kernels for sm_75), 16-bit math";
  case GPUPLAN__W_NVFP4: return "NVFP4 GEMMs on FP4 tensor cores (Blackwell), FP8 scales per 16 values";
  case GPUPLAN__W_FP32: return "FP32 weights (TF32/FP32 math)";
  default: return "16-bit GEMMs on tensor cores (cuBLAS)";
  }
}

static double gemm_peak(const serve_job *s) {
  const gpuplan__shw *hw = &s->hw;
  switch (s->c.w) {
  case GPUPLAN__W_FP8: return hw->f8;
  case GPUPLAN__W_INT8: return hw->i8;
  case GPUPLAN__W_NVFP4: return hw->f4;
  case GPUPLAN__W_FP32: return hw->f16 / 2;
  default: return hw->f16;
  }
}

static void put_speed(gpuplan__docb *b, const serve_job *s, const gpuplan__sresult *r) {
  const gpuplan__scfg *c = &s->c;
  double rep = (double)s->replicas;
  gpuplan__doc_obj(b, "speed");
  gpuplan__doc_bool(b, "saturated", r->saturated);
  gpuplan__doc_real(b, "running", r->running);
  gpuplan__doc_real(b, "batch_cap", r->batch_cap);
  gpuplan__doc_real(b, "capacity_requests_per_s", r->capacity_req_s * rep);
  gpuplan__doc_real(b, "prefill_s", r->prefill_s);
  gpuplan__doc_real(b, "prefill_tokens_per_s", r->prefill_tok_s);
  put_iter(b, "iteration", &r->decode);
  put_quantiles(b, "ttft_s", r->ttft, r->ttft_mean);
  put_quantiles(b, "itl_s", s->m.encoder ? NULL : r->itl, s->m.encoder ? NAN : r->tpot_mean);
  put_quantiles(b, "tpot_s", s->m.encoder ? NULL : r->tpot, s->m.encoder ? NAN : r->tpot_mean);
  put_quantiles(b, "e2e_s", r->e2e, r->e2e_mean);
  gpuplan__doc_obj(b, "throughput");
  gpuplan__doc_real(b, "requests_per_s", r->req_s * rep);
  gpuplan__doc_real(b, "output_tokens_per_s", r->out_tok_s * rep);
  gpuplan__doc_real(b, "input_tokens_per_s", r->in_tok_s * rep);
  gpuplan__doc_real(b, "output_tokens_per_s_per_gpu", r->out_tok_s / (double)(c->tp * c->pp));
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "kernels");
  gpuplan__doc_str(b, "weights", kernel_text(s));
  gpuplan__doc_real(b, "gemm_peak_flops", gemm_peak(s));
  gpuplan__doc_real(b, "mem_bw_bytes_s", s->hw.bw);
  gpuplan__doc_str(b, "source", s->hw.flops_source);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "tp_fabric");
  gpuplan__doc_str(b, "fabric", c->tp > 1 || c->pp > 1 ? s->hw.link_name : NULL);
  gpuplan__doc_bool(b, "nvlink", s->hw.link_nvlink);
  gpuplan__doc_real(b, "bw_bytes_s", c->tp > 1 || c->pp > 1 ? s->hw.link_bw : NAN);
  gpuplan__doc_int(b, "allreduces_per_token", c->tp > 1 ? (int64_t)(2 * s->m.L) : 0);
  gpuplan__doc_end(b);
  gpuplan__doc_end(b);
}

static void put_cost(gpuplan__docb *b, const serve_job *s, const gpuplan__sresult *r, double *per_hour_out) {
  const gpuplan__scfg *c = &s->c;
  double g = (double)(c->tp * c->pp), rep = (double)s->replicas, per_hour = NAN, nodes = NAN;
  double out = r->out_tok_s * rep, in = r->in_tok_s * rep, share = fmin(fmax(r->prefill_share, 0), 1);
  /* GPUs are charged at the node's price per GPU: replicas fill nodes, and
   * the rest of a node serves other replicas or other work */
  if (s->hw.gpu && isfinite(s->hw.price_per_gpu_hour)) {
    per_hour = rep * g * s->hw.price_per_gpu_hour;
    if (s->hw.gpus_per_node > 0) nodes = ceil(rep * g / (double)s->hw.gpus_per_node);
  } else if (!s->hw.gpu && isfinite(s->hw.price_node_hour)) {
    nodes = rep;
    per_hour = rep * s->hw.price_node_hour;
  }
  if (per_hour_out) *per_hour_out = per_hour;
  gpuplan__doc_obj(b, "cost");
  gpuplan__doc_str(b, "currency", isfinite(per_hour) ? s->hw.currency : NULL);
  gpuplan__doc_str(b, "priced_node", isfinite(per_hour) ? s->hw.price_node : NULL);
  gpuplan__doc_real(b, "nodes", nodes);
  gpuplan__doc_real(b, "per_hour", per_hour);
  gpuplan__doc_real(b, "per_gpu_hour", s->hw.price_per_gpu_hour);
  gpuplan__doc_real(b, "input_share", share);
  gpuplan__doc_real(b, "per_million_input", in > 0 ? per_hour / 3600 * share / in * 1e6 : NAN);
  gpuplan__doc_real(b, "per_million_output", out > 0 ? per_hour / 3600 * (1 - share) / out * 1e6 : NAN);
  gpuplan__doc_real(b, "per_million_tokens", in + out > 0 ? per_hour / 3600 / (in + out) * 1e6 : NAN);
  gpuplan__doc_end(b);
}

/* The SLO against the quantile asked for; met is null without a target. */
static int slo_check(const gpuplan_job *j, const gpuplan__sresult *r, int encoder, int *ttft_ok, int *itl_ok) {
  int q = (int)sint(j, S_SLO_QUANTILE, 2);
  int has_t = sset(j, S_SLO_TTFT), has_i = sset(j, S_SLO_ITL);
  *ttft_ok = !has_t || (!r->saturated && r->ttft[q] * 1e3 <= sreal(j, S_SLO_TTFT, 0));
  *itl_ok = !has_i || encoder || (!r->saturated && r->itl[q] * 1e3 <= sreal(j, S_SLO_ITL, 0));
  return *ttft_ok && *itl_ok;
}

static void put_slo(gpuplan__docb *b, const gpuplan_job *j, const gpuplan__sresult *r, int encoder) {
  int t_ok, i_ok, met = slo_check(j, r, encoder, &t_ok, &i_ok), any = sset(j, S_SLO_TTFT) || sset(j, S_SLO_ITL);
  gpuplan__doc_obj(b, "slo");
  gpuplan__doc_str(b, "quantile", qnames[sint(j, S_SLO_QUANTILE, 2)]);
  gpuplan__doc_real(b, "ttft_ms", sset(j, S_SLO_TTFT) ? sreal(j, S_SLO_TTFT, 0) : NAN);
  gpuplan__doc_real(b, "itl_ms", sset(j, S_SLO_ITL) ? sreal(j, S_SLO_ITL, 0) : NAN);
  if (any) {
    gpuplan__doc_bool(b, "ttft_met", t_ok);
    gpuplan__doc_bool(b, "itl_met", i_ok);
    gpuplan__doc_bool(b, "met", met);
  } else {
    gpuplan__doc_null(b, "ttft_met");
    gpuplan__doc_null(b, "itl_met");
    gpuplan__doc_null(b, "met");
  }
  gpuplan__doc_end(b);
}

static void put_defaults(gpuplan__docb *b, const serve_job *s, const gpuplan__smem *mem) {
  const gpuplan_job *j = s->j;
  gpuplan__doc_arr(b, "defaults");
  {
    int i;
    for (i = 0; i < s->mr.ndflt; i++) {
      gpuplan__doc_obj(b, NULL);
      gpuplan__doc_str(b, "option", s->mr.dflt_option[i]);
      gpuplan__doc_str(b, "value", s->mr.dflt_value[i]);
      gpuplan__doc_end(b);
    }
  }
#define DEF(cond, opt, fmt, ...)                 \
  if (cond) {                                    \
    gpuplan__doc_obj(b, NULL);                   \
    gpuplan__doc_str(b, "option", (opt)->name);  \
    gpuplan__doc_strf(b, "value", fmt, __VA_ARGS__); \
    gpuplan__doc_end(b);                         \
  }
  DEF(!sset(j, S_ENGINE), SOPT(S_ENGINE), "%s", gpuplan__engine_name(s->c.engine));
  DEF(!sset(j, S_INPUT_LEN), SOPT(S_INPUT_LEN), "%.0f", s->load.in);
  DEF(!sset(j, S_OUTPUT_LEN) && !s->m.encoder, SOPT(S_OUTPUT_LEN), "%.0f", s->load.out);
  DEF(!jset(j, J_WEIGHTS) && gpuplan__job_int(j, SOPT(S_QUANT), 0) == 0, JOPT(J_WEIGHTS), "%s", s->quant_text);
  DEF(!jset(j, J_KV) && !s->m.encoder, JOPT(J_KV), "%s", gpuplan_dtype_name(s->c.kv));
  DEF(!jset(j, J_CONTEXT), JOPT(J_CONTEXT), "%lld (the model's maximum)", (long long)mem->max_len);
  DEF(!sset(j, S_MAX_SEQS) && s->hw.gpu, SOPT(S_MAX_SEQS), "%lld", (long long)mem->max_seqs);
  DEF(!sset(j, S_MAX_BATCHED) && s->hw.gpu, SOPT(S_MAX_BATCHED), "%lld", (long long)mem->max_batched);
  DEF(!sset(j, S_GPU_UTIL) && s->c.engine == GPUPLAN__ENG_VLLM && s->hw.gpu, SOPT(S_GPU_UTIL), "%.2f",
      mem->budget / mem->visible);
  DEF(!sset(j, S_MEM_FRAC) && s->c.engine == GPUPLAN__ENG_SGLANG && s->hw.gpu, SOPT(S_MEM_FRAC), "%.2f",
      mem->budget / mem->visible);
  DEF(!sset(j, S_KV_FREE_FRAC) && s->c.engine == GPUPLAN__ENG_TRTLLM && s->hw.gpu, SOPT(S_KV_FREE_FRAC), "%s",
      "0.90");
  DEF(!sset(j, S_NON_TORCH) && s->hw.gpu, SOPT(S_NON_TORCH), "%.2f GiB", mem->item[GPUPLAN__SM_NONTORCH] / GiB);
  DEF(!sset(j, S_REPLICAS) && !jset(j, J_GPUS), SOPT(S_REPLICAS), "%lld", (long long)s->replicas);
#undef DEF
  gpuplan__doc_end(b);
}

static void put_head(gpuplan__docb *b, const serve_job *s) {
  const gpuplan__scfg *c = &s->c;
  gpuplan__doc_str(b, "model", s->m.id);
  gpuplan__doc_str(b, "model_source", s->mr.source);
  gpuplan__doc_str(b, "shape_of", s->sized && s->mr.base ? s->mr.base->id : NULL);
  gpuplan__doc_str(b, "arch", s->m.encoder ? "encoder" : "decoder");
  gpuplan__doc_real(b, "params", s->m.params);
  gpuplan__doc_int(b, "layers", (int64_t)s->m.L);
  gpuplan__doc_int(b, "experts", (int64_t)s->m.E);
  gpuplan__doc_str(b, "gpu", s->hw.gpu ? s->hw.gpu->id : NULL);
  gpuplan__doc_str(b, "gpu_name", s->hw.gpu ? s->hw.gpu->name : NULL);
  gpuplan__doc_str(b, "node", s->hw.node ? s->hw.node->id : NULL);
  gpuplan__doc_bool(b, "cpu_only", !s->hw.gpu);
  gpuplan__doc_str(b, "engine", gpuplan__engine_name(c->engine));
  if (c->ver[0] || c->ver[1] || c->ver[2])
    gpuplan__doc_strf(b, "engine_version", "%d.%d.%d", c->ver[0], c->ver[1], c->ver[2]);
  else gpuplan__doc_str(b, "engine_version", "latest");
  gpuplan__doc_obj(b, "layout");
  gpuplan__doc_int(b, "tp", c->tp);
  gpuplan__doc_int(b, "pp", c->pp);
  gpuplan__doc_int(b, "ep", c->ep);
  gpuplan__doc_int(b, "replicas", s->replicas);
  gpuplan__doc_int(b, "gpus", s->hw.gpu ? s->replicas * c->tp * c->pp : 0);
  gpuplan__doc_str(b, "weights", s->quant_text);
  gpuplan__doc_str(b, "kv_dtype", s->m.encoder ? NULL : gpuplan_dtype_name(c->kv));
  gpuplan__doc_bool(b, "paged", c->paged);
  gpuplan__doc_real(b, "prefix_hit", c->prefix_hit);
  gpuplan__doc_bool(b, "cuda_graphs", !c->eager);
  gpuplan__doc_int(b, "num_scheduler_steps", c->sched_steps);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "load");
  gpuplan__doc_str(b, "kind", load_names[s->load.kind]);
  gpuplan__doc_real(b, "input_len", s->load.in);
  gpuplan__doc_real(b, "output_len", s->load.out);
  gpuplan__doc_str(b, "lengths", s->load.exp_lengths ? "exponential" : "fixed");
  gpuplan__doc_real(b, "rate", s->load.kind == GPUPLAN__LOAD_RATE ? s->rate_total : NAN);
  {
    double conc = NAN;
    if (s->load.kind == GPUPLAN__LOAD_CONCURRENCY) conc = s->load.concurrency * (double)s->replicas;
    else if (s->load.kind == GPUPLAN__LOAD_BATCH) conc = s->load.concurrency;
    gpuplan__doc_real(b, "concurrency", conc);
  }
  gpuplan__doc_end(b);
}

static void put_notes(gpuplan__docb *b, const serve_job *s) {
  int i;
  gpuplan__doc_arr(b, "notes");
  for (i = 0; i < s->nnotes; i++) gpuplan__doc_str(b, NULL, s->notes[i]);
  gpuplan__doc_end(b);
}

/* --- serve ------------------------------------------------------------------------ */

static int serve_search(gpuplan_job *j, gpuplan_doc **out);

int gpuplan__cmd_serve(gpuplan_job *j, gpuplan_doc **out) {
  serve_job *s;
  gpuplan__smem mem;
  gpuplan__sresult r;
  gpuplan__docb *b;
  int rc, evaluated = 1;
  const char *vfile = sstr(j, S_VALIDATE);
  if (vfile) {
    if (gpuplan__job_str(j, JOPT(J_MODEL), NULL) || gpuplan__job_str(j, JOPT(J_GPU), NULL))
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_VALIDATE),
                                "the rows name their models and GPUs: give no MODEL or gpu");
    return gpuplan__serve_validate(j->ctx, j->cat, vfile, sstr(j, S_VALIDATE_ROWS), sstr(j, S_CONSTANTS),
                                   (int)sint(j, S_VALIDATE_DETAIL, 1), out);
  }
  if (sint(j, S_SEARCH, 0)) return serve_search(j, out);
  s = gpuplan__calloc(j->ctx, 1, sizeof *s);
  if (!s) return gpuplan__nomem(j->ctx);
  if ((rc = setup(s, j)) || (rc = resolve_hw(s, NULL, NULL)) || (rc = resolve_cfg(s)) || (rc = resolve_load(s)) ||
      (rc = gpuplan__serve_memory(j->ctx, &s->c, &mem)))
    goto done;
  if (!mem.weights_ok) {
    /* the shortfall is the answer: the layout, and no speed */
    note(s, "does not fit: %.2f GiB of weights, %.2f GiB of activations and %.2f GiB outside the allocator per GPU "
         "against a budget of %.2f GiB on %s; raise tp or pp, quantise (weight_dtype fp8 or int4), or a bigger GPU",
         mem.item[GPUPLAN__SM_WEIGHTS] / GiB, mem.item[GPUPLAN__SM_ACT] / GiB, mem.item[GPUPLAN__SM_NONTORCH] / GiB,
         mem.budget / GiB, s->hw.gpu ? s->hw.gpu->name : s->hw.node->name);
    evaluated = 0;
  } else {
    if ((rc = gpuplan__serve_eval(j->ctx, &s->c, &mem, &s->load, &r))) goto done;
    if (r.saturated)
      note(s, "the arrival rate exceeds what %lld replica(s) serve (%.3g requests/s): the queue grows without bound",
           (long long)s->replicas, r.capacity_req_s * (double)s->replicas);
    if (mem.item[GPUPLAN__SM_GRAPHS] > 0 && mem.headroom < 0)
      note(s, "the CUDA graph pools (%.2f GiB) do not fit in what the budget leaves: lower gpu_memory_utilization "
           "or enforce_eager", mem.item[GPUPLAN__SM_GRAPHS] / GiB);
  }
  if (!(b = gpuplan__doc_begin(j->ctx, "serve"))) {
    rc = gpuplan_errcode(j->ctx);
    goto done;
  }
  put_head(b, s);
  put_defaults(b, s, &mem);
  put_memory(b, s, &mem);
  if (evaluated) {
    put_speed(b, s, &r);
    put_cost(b, s, &r, NULL);
    put_slo(b, j, &r, s->m.encoder);
  }
  put_notes(b, s);
  rc = gpuplan__doc_finish(b, out);
done:
  gpuplan__free(j->ctx, s);
  return rc;
}

/* --- serve --search ----------------------------------------------------------------- */

typedef struct cand {
  const gpuplan_gpu *gpu;
  const gpuplan_node *node;   /* a CPU node, or the priced node */
  int64_t tp, replicas;
  double per_replica_rate;    /* the most requests/s one replica serves within the SLO */
  double per_hour, ttft, itl, out_tok_s_gpu, usd_per_m_out;
  int priced;
  const char *currency;
  char why[160];
} cand;

static int cmp_cand(const void *x, const void *y) {
  const cand *a = x, *b = y;
  if (a->priced != b->priced) return b->priced - a->priced;
  if (a->per_hour != b->per_hour) return a->per_hour < b->per_hour ? -1 : 1;
  if (a->tp * a->replicas != b->tp * b->replicas) return a->tp * a->replicas < b->tp * b->replicas ? -1 : 1;
  return strcmp(a->gpu ? a->gpu->id : a->node->id, b->gpu ? b->gpu->id : b->node->id);
}

/* The largest per-replica rate that meets the SLO (bisection), or 0. */
static double slo_rate(serve_job *s, const gpuplan__smem *mem, gpuplan__sresult *at) {
  gpuplan_job *j = s->j;
  gpuplan__sload l = s->load;
  gpuplan__sresult r;
  double lo = 0, hi, best = 0;
  int i, t_ok, i_ok;
  l.kind = GPUPLAN__LOAD_OFFLINE;
  if (gpuplan__serve_eval(j->ctx, &s->c, mem, &l, &r)) return -1;
  hi = r.capacity_req_s;
  l.kind = GPUPLAN__LOAD_RATE;
  for (i = 0; i < 22; i++) {
    double mid = i == 0 ? hi * 1e-3 : (lo + hi) / 2;
    l.rate = mid;
    if (gpuplan__serve_eval(j->ctx, &s->c, mem, &l, &r)) return -1;
    if (slo_check(j, &r, s->m.encoder, &t_ok, &i_ok)) {
      best = mid;
      *at = r;
      lo = mid;
      if (i == 0) continue;
    } else {
      if (i == 0) return 0;
      hi = mid;
    }
    if (hi - lo <= 5e-3 * hi) break;
  }
  return best;
}

static int try_candidate(serve_job *s, const gpuplan_gpu *g, const gpuplan_node *cpu, int64_t tp, cand *out,
                         size_t *tried, size_t *too_big, size_t *no_slo) {
  gpuplan_job *j = s->j;
  gpuplan__smem mem;
  gpuplan__sresult r;
  double lam, per_hour;
  int rc;
  s->nnotes = 0;
  s->hw.gpu = NULL;
  if ((rc = resolve_hw(s, g, cpu))) return rc;
  if (g && tp > s->hw.gpus_per_node) return 1;
  s->c.tp = tp;
  s->c.hw = &s->hw;
  if ((int64_t)s->m.a % tp || ((int64_t)s->m.kv % tp && tp % (int64_t)s->m.kv)) return 1;
  if ((rc = resolve_scheme(s))) {
    gpuplan__clear(j->ctx);
    return 1; /* the SKU cannot run the scheme */
  }
  (*tried)++;
  if (gpuplan__serve_memory(j->ctx, &s->c, &mem) || !mem.fits ||
      s->load.in + s->load.out > (double)mem.max_len) {
    gpuplan__clear(j->ctx);
    (*too_big)++;
    return 1;
  }
  lam = slo_rate(s, &mem, &r);
  gpuplan__clear(j->ctx);
  if (lam <= 0) {
    (*no_slo)++;
    return 1;
  }
  memset(out, 0, sizeof *out);
  out->gpu = g;
  out->node = cpu ? cpu : NULL;
  out->tp = tp;
  out->per_replica_rate = lam;
  out->replicas = (int64_t)ceil(s->rate_total / lam - 1e-9);
  if (out->replicas < 1) out->replicas = 1;
  if (!g) per_hour = (double)out->replicas * s->hw.price_node_hour;
  else per_hour = (double)(out->replicas * tp) * s->hw.price_per_gpu_hour;
  out->per_hour = per_hour;
  out->priced = isfinite(per_hour);
  out->currency = out->priced ? (s->hw.currency ? s->hw.currency : "USD") : NULL;
  if (!g) out->node = s->hw.node;
  else out->node = NULL;
  out->ttft = r.ttft[sint(j, S_SLO_QUANTILE, 2)];
  out->itl = r.itl[sint(j, S_SLO_QUANTILE, 2)];
  out->out_tok_s_gpu = r.out_tok_s / (double)(g ? tp : 1);
  out->usd_per_m_out = out->priced ? per_hour / 3600 / (s->rate_total * s->load.out) * 1e6 : NAN;
  snprintf(out->why, sizeof out->why, "%.3g requests/s per replica within the SLO; %s%s",
           lam, r.decode.compute_bound ? "compute-bound" : "memory-bound",
           g && tp > 1 ? (s->hw.link_nvlink ? ", TP on NVLink" : ", TP over PCIe") : "");
  if (g) {
    snprintf(out->why + strlen(out->why), sizeof out->why - strlen(out->why), "; priced on %s",
             s->hw.price_node ? s->hw.price_node : "none");
  }
  return 0;
}

static int serve_search(gpuplan_job *j, gpuplan_doc **out) {
  serve_job *s;
  cand *cands = NULL;
  size_t ncand = 0, cap = 0, i, n, too_big = 0, no_slo = 0, tried = 0, top = (size_t)iopt(j, J_TOP, 5);
  int64_t max_tp = sint(j, S_MAX_TP, 8), tp, only_tp;
  const char *only_gpu;
  const gpuplan_gpu *gpu_only = NULL;
  const gpuplan_node *node_only = NULL;
  gpuplan__docb *b;
  int rc = GPUPLAN_OK;
  if (!sset(j, S_RATE))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, SOPT(S_RATE), "search needs the target load (rate)");
  if (!sset(j, S_SLO_TTFT) && !sset(j, S_SLO_ITL))
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "slo_ttft, slo_itl: search needs a latency target");
  if (jset(j, J_GPUS) || sset(j, S_REPLICAS))
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "gpus, replicas: search chooses them (give gpu or tp to fix those)");
  only_gpu = gpuplan__job_str(j, JOPT(J_GPU), NULL);
  if (only_gpu) GPUPLAN_TRY(gpuplan_catalog_gpu(j->cat, only_gpu, &gpu_only));
  if (gpuplan__job_str(j, JOPT(J_NODE), NULL)) {
    GPUPLAN_TRY(gpuplan_catalog_node(j->cat, gpuplan__job_str(j, JOPT(J_NODE), NULL), &node_only));
    if (node_only->gpu_id) GPUPLAN_TRY(gpuplan_catalog_gpu(j->cat, node_only->gpu_id, &gpu_only));
  }
  only_tp = jset(j, J_TP) ? iopt(j, J_TP, 1) : 0;
  s = gpuplan__calloc(j->ctx, 1, sizeof *s);
  if (!s) return gpuplan__nomem(j->ctx);
  if ((rc = setup(s, j))) goto done;
  /* the configuration every candidate shares */
  {
    const gpuplan_gpu *g0 = gpu_only ? gpu_only : gpuplan_catalog_at(j->cat, GPUPLAN_KIND_GPU, 0);
    if (node_only && !node_only->gpu_id) g0 = NULL;
    if ((rc = resolve_hw(s, g0, g0 ? NULL : node_only)) || (rc = resolve_cfg(s)) || (rc = resolve_load(s))) goto done;
  }
  s->replicas = 1;
  s->load.rate = s->rate_total;
  n = gpuplan_catalog_count(j->cat, GPUPLAN_KIND_GPU);
  cap = n * 8 + gpuplan_catalog_count(j->cat, GPUPLAN_KIND_NODE) + 1;
  cands = gpuplan__calloc(j->ctx, cap, sizeof *cands);
  if (!cands) {
    rc = gpuplan__nomem(j->ctx);
    goto done;
  }
  for (i = 0; i < n && !(node_only && !node_only->gpu_id); i++) {
    const gpuplan_gpu *g = gpuplan_catalog_at(j->cat, GPUPLAN_KIND_GPU, i);
    if (!(g->mem_bw_bytes_s > 0) || g->memory_bytes == 0) continue;
    if (gpu_only && g != gpu_only) continue;
    for (tp = 1; tp <= max_tp && ncand < cap; tp *= 2) {
      if (only_tp && tp != only_tp) continue;
      if ((rc = try_candidate(s, g, node_only, tp, &cands[ncand], &tried, &too_big, &no_slo)) < 0) goto done;
      if (rc == 0) ncand++;
      rc = GPUPLAN_OK;
    }
  }
  /* CPU-only nodes on the same terms (small models) */
  n = gpuplan_catalog_count(j->cat, GPUPLAN_KIND_NODE);
  for (i = 0; i < n && ncand < cap; i++) {
    const gpuplan_node *nd = gpuplan_catalog_at(j->cat, GPUPLAN_KIND_NODE, i);
    if (nd->gpu_id || !isfinite(nd->cpu_fp32_flops) || !isfinite(nd->price_per_hour)) continue;
    if (gpu_only || (node_only && node_only != nd) || only_tp > 1) continue;
    if ((rc = try_candidate(s, NULL, nd, 1, &cands[ncand], &tried, &too_big, &no_slo)) < 0) goto done;
    if (rc == 0) ncand++;
    rc = GPUPLAN_OK;
  }
  qsort(cands, ncand, sizeof *cands, cmp_cand);
  if (!(b = gpuplan__doc_begin(j->ctx, "serve-search"))) {
    rc = gpuplan_errcode(j->ctx);
    goto done;
  }
  gpuplan__doc_str(b, "model", s->m.id);
  gpuplan__doc_real(b, "params", s->m.params);
  gpuplan__doc_str(b, "engine", gpuplan__engine_name(s->c.engine));
  gpuplan__doc_real(b, "rate", s->rate_total);
  gpuplan__doc_real(b, "input_len", s->load.in);
  gpuplan__doc_real(b, "output_len", s->load.out);
  gpuplan__doc_str(b, "slo_quantile", qnames[sint(j, S_SLO_QUANTILE, 2)]);
  gpuplan__doc_real(b, "slo_ttft_ms", sset(j, S_SLO_TTFT) ? sreal(j, S_SLO_TTFT, 0) : NAN);
  gpuplan__doc_real(b, "slo_itl_ms", sset(j, S_SLO_ITL) ? sreal(j, S_SLO_ITL, 0) : NAN);
  gpuplan__doc_int(b, "tried", (int64_t)tried);
  gpuplan__doc_int(b, "too_big", (int64_t)too_big);
  gpuplan__doc_int(b, "slo_missed", (int64_t)no_slo);
  gpuplan__doc_int(b, "meeting", (int64_t)ncand);
  gpuplan__doc_arr(b, "best");
  for (i = 0; i < ncand && i < top; i++) {
    const cand *c = &cands[i];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "rank", (int64_t)i + 1);
    gpuplan__doc_str(b, "gpu", c->gpu ? c->gpu->id : NULL);
    gpuplan__doc_str(b, "node", c->node ? c->node->id : NULL);
    gpuplan__doc_bool(b, "cpu_only", !c->gpu);
    gpuplan__doc_int(b, "tp", c->tp);
    gpuplan__doc_int(b, "replicas", c->replicas);
    gpuplan__doc_int(b, "gpus", c->gpu ? c->tp * c->replicas : 0);
    gpuplan__doc_real(b, "per_replica_rate", c->per_replica_rate);
    gpuplan__doc_real(b, "ttft_s", c->ttft);
    gpuplan__doc_real(b, "itl_s", c->itl);
    gpuplan__doc_real(b, "output_tokens_per_s_per_gpu", c->out_tok_s_gpu);
    gpuplan__doc_real(b, "per_hour", c->per_hour);
    gpuplan__doc_str(b, "currency", c->currency);
    gpuplan__doc_real(b, "per_million_output", c->usd_per_m_out);
    gpuplan__doc_str(b, "why", c->why);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  rc = gpuplan__doc_finish(b, out);
done:
  gpuplan__free(j->ctx, cands);
  gpuplan__free(j->ctx, s);
  return rc;
}
