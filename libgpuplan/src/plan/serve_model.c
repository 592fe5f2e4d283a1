/*
 * serve_model.c: the serving model's shape, weight schemes and KV bytes,
 * and each engine's memory rule (plan/serve_int.h).
 *
 * Memory rules, as the engines compute their KV-cache pools:
 *   vLLM      total_gpu_memory x gpu_memory_utilization - weights - the
 *             profile run's peak activation (max_num_batched_tokens tokens,
 *             max_num_seqs sampled) - memory outside PyTorch, in blocks of
 *             block_size tokens (vllm/worker/worker.py determine_num_available
 *             _blocks; v1/worker/gpu_worker.py determine_available_memory).
 *             CUDA graphs are captured after the KV cache is allocated, so
 *             their pools come out of the (1 - utilization) reserve.
 *   SGLang    total x mem_fraction_static - (total - free after loading the
 *             weights) (sglang/srt/model_executor/model_runner.py
 *             profile_max_num_token), one token per page.
 *   TRT-LLM   kv_cache_free_gpu_mem_fraction x the memory free after the
 *             engine and its runtime buffers (KvCacheConfig), or max_tokens
 *             when smaller, in blocks of tokens_per_block.
 *   TGI       the memory free after warm-up at max_batch_prefill_tokens, in
 *             blocks of 16 (text-generation-inference server warmup).
 * The profile-run activation per token was fitted on vLLM's own logs
 * (data/reference/serving_runs_calibration.csv SC0470/SC0473/SC0477 and PR
 * #10511): (3h + 3f/t) x 2 bytes with a gated MLP.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/serve_int.h"

#define GiB 1073741824.0

static const char *const engine_names[] = {"vllm", "sglang", "trtllm", "tgi"};
static const char *const wscheme_names[] = {"bf16", "fp16", "fp32", "fp8", "int8-w8a8", "int8-w8a16",
                                            "awq", "gptq", "nvfp4"};

const char *gpuplan__engine_name(gpuplan__engine e) {
  return (unsigned)e < GPUPLAN__ENG_COUNT ? engine_names[e] : "?";
}
const char *gpuplan__wscheme_name(gpuplan__wscheme w) {
  return (unsigned)w < GPUPLAN__W_COUNT ? wscheme_names[w] : "?";
}

/* --- shape ----------------------------------------------------------------- */

static void finish_shape(gpuplan__smodel *m, double params, double bias_params) {
  double attn = m->h * m->d * (2 * m->a + 2 * m->kv);
  double mlp = (m->gated ? 3 : 2) * m->h * m->f;
  double router = m->E > 1 ? m->h * m->E : 0;
  double emb = m->V * m->h;
  double layers = m->L * (attn + m->E * mlp + router) + bias_params;
  double total = layers + emb * (m->tied ? 1 : 2);
  double scale = params > 0 && layers > 0 ? (params - emb * (m->tied ? 1 : 2)) / (layers) : 1.0;
  if (!(scale > 0.5 && scale < 2.0)) scale = 1.0; /* a stated count far from the shape: trust the shape */
  m->attn_p = attn * scale;
  m->mlp_p = mlp * scale;
  m->emb_p = emb;
  m->params = params > 0 ? params : total;
}

void gpuplan__smodel_shape(gpuplan__smodel *m, const char *id, double params, int64_t L, int64_t h, int64_t a,
                           int64_t kv, int64_t f, int64_t V, int64_t E, int64_t topk, int gated, int encoder) {
  memset(m, 0, sizeof *m);
  snprintf(m->id, sizeof m->id, "%s", id ? id : "model");
  m->L = (double)L;
  m->h = (double)h;
  m->a = (double)a;
  m->kv = (double)(kv > 0 ? kv : a);
  m->d = a > 0 ? (double)h / (double)a : 0;
  m->f = (double)f;
  m->V = (double)V;
  m->E = (double)(E > 1 ? E : 1);
  m->k = (double)(E > 1 && topk > 0 ? topk : 1);
  m->gated = gated;
  m->encoder = encoder;
  m->max_len = 4096;
  finish_shape(m, params, 0);
}

void gpuplan__smodel_from(gpuplan__smodel *m, const gpuplan_model *r, double params_override) {
  double bias = 0;
  memset(m, 0, sizeof *m);
  snprintf(m->id, sizeof m->id, "%s", r->id);
  m->L = (double)r->layers;
  m->h = (double)r->hidden;
  m->a = (double)r->heads;
  m->kv = (double)(r->kv_heads > 0 ? r->kv_heads : r->heads);
  m->d = (double)(r->head_dim > 0 ? r->head_dim : r->hidden / r->heads);
  m->f = (double)r->ffn_hidden;
  m->V = (double)r->vocab;
  m->E = (double)(r->experts > 1 ? r->experts : 1);
  m->k = (double)(r->experts > 1 && r->top_k > 0 ? r->top_k : 1);
  m->gated = r->ffn_type && (strcmp(r->ffn_type, "swiglu") == 0 || strcmp(r->ffn_type, "geglu") == 0);
  m->tied = r->tied_embeddings;
  m->encoder = r->arch && strcmp(r->arch, "encoder") == 0;
  m->max_len = isfinite(r->max_seq_len) && r->max_seq_len > 0 ? r->max_seq_len : (double)r->seq_len;
  if (r->linear_bias) bias = m->L * (m->d * (m->a + 2 * m->kv) + 2 * m->h + m->f);
  /* the catalog's shape is exact: scale only to a size asked for */
  finish_shape(m, params_override > 0 ? params_override : 0, bias);
  if (params_override <= 0) m->params = gpuplan_model_params(r);
}

/* --- configuration ------------------------------------------------------------ */

void gpuplan__scfg_init(gpuplan__scfg *c) {
  memset(c, 0, sizeof *c);
  c->engine = GPUPLAN__ENG_VLLM;
  c->tp = c->pp = c->ep = 1;
  c->w = GPUPLAN__W_BF16;
  c->group = 128;
  c->kv = GPUPLAN_DTYPE_BF16;
  c->block = 0;
  c->paged = 1;
  c->gpu_util = NAN;
  c->mem_frac = NAN;
  c->kv_free_frac = NAN;
  c->chunked = -1;
  c->sched_steps = 1;
  c->non_torch = NAN;
  c->graph_bytes = NAN;
  c->visible_override = NAN;
}

/* The version given is older than maj.min.patch ("latest" is never older). */
static int older(const gpuplan__scfg *c, int maj, int min, int patch) {
  if (!c->ver[0] && !c->ver[1] && !c->ver[2]) return 0;
  if (c->ver[0] != maj) return c->ver[0] < maj;
  if (c->ver[1] != min) return c->ver[1] < min;
  return c->ver[2] < patch;
}

static double wbytes(const gpuplan__scfg *c) {
  double g = (double)(c->group > 0 ? c->group : 128);
  switch (c->w) {
  case GPUPLAN__W_FP32: return 4;
  case GPUPLAN__W_FP8:
  case GPUPLAN__W_INT8:
  case GPUPLAN__W_W8A16: return 1;
  case GPUPLAN__W_AWQ: return 0.5 + 2.5 / g;  /* fp16 scale + 4-bit zero per group */
  case GPUPLAN__W_GPTQ: return 0.5 + 2.5 / g; /* fp16 scale + packed 4-bit zero per group */
  case GPUPLAN__W_NVFP4: return 0.5 + 1.0 / 16; /* FP8 (E4M3) scale per 16 values */
  default: return 2;
  }
}

static double kvbytes(gpuplan_dtype d) {
  switch (d) {
  case GPUPLAN_DTYPE_FP32: return 4;
  case GPUPLAN_DTYPE_FP8:
  case GPUPLAN_DTYPE_INT8: return 1;
  case GPUPLAN_DTYPE_INT4: return 0.5;
  default: return 2;
  }
}

double gpuplan__weights_per_gpu(const gpuplan__scfg *c) {
  const gpuplan__smodel *m = c->m;
  double tp = (double)c->tp, pp = (double)c->pp, ep = (double)c->ep;
  double shards_e = ep > 1 ? ep : tp; /* experts split whole over ep, or each split over tp */
  double lin = m->L / pp * (m->attn_p / tp + m->E * m->mlp_p / shards_e + (m->E > 1 ? m->h * m->E : 0));
  /* embeddings and the output layer stay 16-bit in quantised checkpoints;
   * with pp > 1 each end stage holds one of them */
  double emb = m->emb_p * 2 * (pp > 1 ? 1 : (m->tied ? 1 : 2)) / tp;
  return lin * wbytes(c) + emb;
}

double gpuplan__expert_bytes_per_gpu(const gpuplan__scfg *c) {
  const gpuplan__smodel *m = c->m;
  double shards_e = c->ep > 1 ? (double)c->ep : (double)c->tp;
  if (m->E <= 1) return 0;
  return m->L / (double)c->pp * m->E * m->mlp_p / shards_e * wbytes(c);
}

double gpuplan__kv_per_token(const gpuplan__scfg *c) {
  const gpuplan__smodel *m = c->m;
  double heads;
  if (m->encoder) return 0;
  heads = ceil(m->kv / (double)c->tp); /* fewer KV heads than ranks: each rank keeps one */
  return 2 * (m->L / (double)c->pp) * heads * m->d * kvbytes(c->kv);
}

/* Activation bytes per token of a forward, one layer at a time (the peak is in the MLP):
 * the hidden state, the residual and the normed input, and the MLP's
 * intermediates on this rank. */
static double act_per_token(const gpuplan__scfg *c) {
  const gpuplan__smodel *m = c->m;
  double mlp = (m->gated ? 3 : 2) * m->f;
  double shards = m->E > 1 && c->ep > 1 ? 1 : (double)c->tp;
  if (m->E > 1) mlp *= m->k;
  return (3 * m->h + mlp / shards) * 2;
}

/* vLLM's default max_num_batched_tokens and max_num_seqs for the OpenAI
 * server (vllm/engine/arg_utils.py): V1 (0.8+) 8192 / 1024 on GPUs of 70 GiB
 * or more, else 2048 / 256; V0 256 sequences and max(max_model_len, 2048)
 * tokens without chunked prefill, 512 (0.6) or 2048 (0.7) with it. */
static void vllm_defaults(const gpuplan__scfg *c, double visible, gpuplan__smem *o) {
  int v1 = !older(c, 0, 8, 0);
  int chunked = c->chunked >= 0 ? c->chunked : (v1 || o->max_len > 32768);
  o->chunked = chunked;
  if (c->max_seqs > 0) o->max_seqs = c->max_seqs;
  else o->max_seqs = v1 && visible >= 70 * GiB ? 1024 : 256;
  if (c->max_batched > 0) o->max_batched = c->max_batched;
  else if (!chunked) o->max_batched = o->max_len > 2048 ? o->max_len : 2048;
  else if (v1) o->max_batched = visible >= 70 * GiB ? 8192 : 2048;
  else o->max_batched = older(c, 0, 7, 0) ? 512 : 2048;
}

/* Memory outside the engine's allocator: CUDA context, NCCL and
 * custom-all-reduce buffers, cuBLAS workspaces.  Published vLLM logs show
 * 0.20-0.35 GiB on 24 GB cards (issue #10517, #13061, PR #14447); the
 * context's own size is the catalog's (an estimate for most SKUs). */
static double non_torch(const gpuplan__scfg *c) {
  if (isfinite(c->non_torch)) return c->non_torch;
  if (!c->hw->gpu) return 0;
  return 0.30 * GiB + (c->tp > 1 ? 0.05 * GiB : 0);
}

int gpuplan__serve_memory(gpuplan_ctx *ctx, const gpuplan__scfg *c, gpuplan__smem *o) {
  const gpuplan__smodel *m = c->m;
  const gpuplan__shw *hw = c->hw;
  double visible = isfinite(c->visible_override) ? c->visible_override : hw->visible_bytes;
  double w = gpuplan__weights_per_gpu(c), kvt = gpuplan__kv_per_token(c), aT = act_per_token(c);
  double act = 0, nt = non_torch(c), kv = 0, budget = visible, graphs = 0, block;
  memset(o, 0, sizeof *o);
  if (!m || !hw) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "serve: no model or hardware");
  if (c->tp < 1 || c->pp < 1 || c->ep < 1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "tp, pp, ep: must be at least 1");
  o->visible = visible;
  o->kv_per_token = kvt;
  o->max_len = c->max_len > 0 ? c->max_len : (int64_t)m->max_len;
  if (o->max_len < 1) o->max_len = 1;
  o->formula[GPUPLAN__SM_WEIGHTS] = "params/(tp*pp) x bytes of the scheme; embeddings and output layer 16-bit, /tp";

  if (!hw->gpu) {
    /* CPU serving: weights, KV and activations in RAM; 10% and 2 GiB left to the OS */
    budget = visible * 0.9 - 2 * GiB;
    o->max_seqs = c->max_seqs > 0 ? c->max_seqs : 64;
    o->max_batched = c->max_batched > 0 ? c->max_batched : 2048;
    o->chunked = 1;
    act = o->max_batched * aT;
    kv = budget - w - act;
    block = 1;
    o->rule = "CPU: 90% of RAM less 2 GiB for the OS, less weights and activations";
    o->formula[GPUPLAN__SM_ACT] = "max_num_batched_tokens x (3h + MLP intermediates) x 2 bytes";
    o->formula[GPUPLAN__SM_KV] = "what is left of the RAM budget";
  } else if (c->engine == GPUPLAN__ENG_VLLM) {
    double util = isfinite(c->gpu_util) ? c->gpu_util : 0.9;
    double T, S;
    vllm_defaults(c, visible, o);
    T = (double)o->max_batched;
    S = fmin((double)o->max_seqs, T);
    budget = util * visible;
    if (older(c, 0, 6, 5)) {
      /* peak of torch's allocated bytes: the MLP or the bf16 logits of the sampled sequences */
      act = fmax(T * aT, S * m->V * 2);
      o->formula[GPUPLAN__SM_ACT] =
          "max(T x (3h + 3f/tp) x 2, S x V x 2): the profile run's peak (T = max_num_batched_tokens, S = max_num_seqs)";
    } else if (older(c, 0, 8, 0)) {
      /* 0.6.5-0.7 (V0): the profile adds the sampler's bf16 and fp32 logits, probabilities and logprobs */
      act = T * aT + S * m->V * 14;
      o->formula[GPUPLAN__SM_ACT] =
          "T x (3h + 3f/tp) x 2 + S x V x 14: the profile run at T = max_num_batched_tokens, S = max_num_seqs sampled";
    } else {
      /* V1: the dummy run at T tokens, then the dummy sampler's fp32 logits and probabilities */
      act = T * aT + S * m->V * 8;
      o->formula[GPUPLAN__SM_ACT] =
          "T x (3h + 3f/tp) x 2 + S x V x 8: the profile run at T = max_num_batched_tokens, the sampler at "
          "S = max_num_seqs";
    }
    if (m->encoder) act = T * aT;
    if (!m->encoder) w += (m->max_len > 0 ? m->max_len : 4096) * m->d * 2; /* rotary cos/sin cache */
    kv = budget - w - act - nt;
    block = (double)(c->block > 0 ? c->block : 16);
    graphs = c->eager ? 0 : isfinite(c->graph_bytes) ? c->graph_bytes : (older(c, 0, 8, 0) ? 1.0 : 0.5) * GiB;
    o->rule = "gpu_memory_utilization x total_gpu_memory - weights - profile-run peak activation - non-torch memory";
    o->formula[GPUPLAN__SM_KV] = "the rest of the budget, in blocks of block_size tokens";
  } else if (c->engine == GPUPLAN__ENG_SGLANG) {
    double frac = c->mem_frac;
    if (!isfinite(frac)) {
      /* sglang/srt/server_args.py (0.3-0.4) */
      frac = c->tp >= 16 ? 0.79 : c->tp >= 8 ? 0.83 : c->tp >= 4 ? 0.85 : c->tp >= 2 ? 0.87 : 0.88;
    }
    budget = frac * visible;
    o->max_batched = c->max_batched > 0 ? c->max_batched : 8192; /* chunked_prefill_size */
    o->chunked = c->chunked >= 0 ? c->chunked : 1;
    act = 0; /* activations and CUDA graphs live in the (1 - mem_fraction_static) rest */
    kv = budget - w - nt;
    block = (double)(c->block > 0 ? c->block : 1);
    graphs = c->eager ? 0 : isfinite(c->graph_bytes) ? c->graph_bytes : 0.5 * GiB;
    o->rule = "mem_fraction_static x total - weights - memory used before the KV pool";
    o->formula[GPUPLAN__SM_KV] = "the rest of mem_fraction_static x total, one token per page";
    if (kvt > 0) {
      double tokens = floor(fmax(kv, 0) / kvt);
      o->max_seqs = c->max_seqs > 0 ? c->max_seqs : (int64_t)fmin(4096, fmax(1, tokens / 2));
    } else {
      o->max_seqs = c->max_seqs > 0 ? c->max_seqs : 256;
    }
  } else if (c->engine == GPUPLAN__ENG_TRTLLM) {
    double frac = isfinite(c->kv_free_frac) ? c->kv_free_frac : 0.9;
    o->max_seqs = c->max_seqs > 0 ? c->max_seqs : 2048; /* max_batch_size default */
    o->max_batched = c->max_batched > 0 ? c->max_batched : 8192; /* max_num_tokens default */
    o->chunked = c->chunked >= 0 ? c->chunked : 1;
    act = o->max_batched * aT + (double)o->max_seqs * m->V * 4 / (double)c->tp; /* runtime buffers */
    budget = visible;
    kv = frac * (visible - w - act - nt);
    block = (double)(c->block > 0 ? c->block : (older(c, 0, 19, 0) ? 64 : 32));
    graphs = 0;
    o->rule = "kv_cache_free_gpu_mem_fraction x (memory free after weights and runtime buffers)";
    o->formula[GPUPLAN__SM_ACT] = "max_num_tokens x (3h + 3f/tp) x 2 + max_batch_size x V/tp x 4 (runtime buffers)";
    o->formula[GPUPLAN__SM_KV] = "the fraction of what is free, in blocks of tokens_per_block";
  } else {
    /* TGI: warm-up at max_batch_prefill_tokens (4096), then the free memory
     * (less a 5% margin) becomes KV blocks of 16 */
    o->max_seqs = c->max_seqs > 0 ? c->max_seqs : 128; /* max_concurrent_requests */
    o->max_batched = c->max_batched > 0 ? c->max_batched : 4096;
    o->chunked = c->chunked >= 0 ? c->chunked : !older(c, 3, 0, 0);
    act = o->max_batched * aT;
    budget = visible * 0.95;
    kv = budget - w - act - nt;
    block = (double)(c->block > 0 ? c->block : 16);
    o->rule = "95% of total - weights - warm-up activation at max_batch_prefill_tokens - non-torch memory";
    o->formula[GPUPLAN__SM_ACT] = "max_batch_prefill_tokens x (3h + 3f/tp) x 2 (warm-up)";
    o->formula[GPUPLAN__SM_KV] = "the rest, in blocks of 16 tokens";
  }
  if (m->encoder) {
    kv = 0;
    o->formula[GPUPLAN__SM_KV] = "none: an encoder keeps no KV cache";
  }
  o->budget = budget;
  o->item[GPUPLAN__SM_WEIGHTS] = w;
  o->item[GPUPLAN__SM_ACT] = act;
  o->item[GPUPLAN__SM_NONTORCH] = nt;
  o->item[GPUPLAN__SM_GRAPHS] = graphs;
  o->formula[GPUPLAN__SM_NONTORCH] = isfinite(c->non_torch) ? "given"
                                     : "CUDA context, NCCL, cuBLAS: 0.30 GiB (+0.05 with tp > 1), median of "
                                       "published vLLM logs";
  o->formula[GPUPLAN__SM_GRAPHS] =
      c->eager ? "" : isfinite(c->graph_bytes) ? "given" : "CUDA graph pools, captured after the KV cache (estimate)";
  o->weights_ok = w + act + nt <= budget;
  if (kvt > 0 && kv > 0) {
    double per_block = block * kvt;
    o->kv_blocks = floor(kv / per_block);
    o->kv_tokens = o->kv_blocks * block;
    if (c->kv_max_tokens > 0 && (double)c->kv_max_tokens < o->kv_tokens) {
      o->kv_blocks = ceil((double)c->kv_max_tokens / block);
      o->kv_tokens = o->kv_blocks * block;
    }
    o->item[GPUPLAN__SM_KV] = o->kv_blocks * per_block;
  }
  o->max_concurrency = kvt > 0 ? o->kv_tokens / (double)o->max_len : NAN;
  o->total = w + act + nt + o->item[GPUPLAN__SM_KV] + graphs;
  o->headroom = visible - o->total;
  o->fits = o->weights_ok && (m->encoder || o->kv_tokens >= (double)o->max_len);
  return GPUPLAN_OK;
}
