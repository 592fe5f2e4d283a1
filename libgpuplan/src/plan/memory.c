/*
 * memory.c: the analytic memory model (gpuplan/memory.h).
 *
 * Sources, as cited in each component's formula string:
 *   [ZeRO]  Rajbhandari et al. 2019, formulas.md B.3
 *   [Kor]   Korthikanti et al. 2022, Table 2 and Megatron's
 *           theoretical_memory_usage.py, formulas.md B.2
 *   [Meg]   Megatron-LM accounting (18 bytes/param; 6 + 12/DP), B.3
 *   [HF]    Hugging Face model-memory anatomy, B.3/B.5
 * Arithmetic is in double (exact for integers below 2^53) and every result
 * is checked against 2^64 before it becomes a byte count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/internal.h"

#define MiB 1048576.0
#define LIMIT 1.8e19 /* below 2^64 */

/* --- parameter counts from the shape ------------------------------------- */

typedef struct shape {
  double h, a, kv, d, f, V, L, E, k, s_pos;
  int swiglu, bias, layernorm, tied, learned;
} shape;

static void get_shape(const gpuplan_model *m, shape *s) {
  s->h = (double)m->hidden;
  s->a = (double)m->heads;
  s->kv = (double)m->kv_heads;
  s->d = (double)m->head_dim;
  s->f = (double)m->ffn_hidden;
  s->V = (double)m->vocab;
  s->L = (double)m->layers;
  s->E = (double)(m->experts > 0 ? m->experts : 1);
  s->k = (double)(m->top_k > 0 ? m->top_k : 1);
  s->swiglu = m->ffn_type && (strcmp(m->ffn_type, "swiglu") == 0 ||
                              strcmp(m->ffn_type, "geglu") == 0);
  s->bias = m->linear_bias;
  s->layernorm = !m->norm || strcmp(m->norm, "rmsnorm") != 0;
  s->tied = m->tied_embeddings;
  s->learned = m->position && strcmp(m->position, "learned") == 0;
  s->s_pos = isfinite(m->max_seq_len) && m->max_seq_len > 0 ? m->max_seq_len
                                                              : (double)m->seq_len;
}

/* Attention matrices of one layer (QKV + output projection), with biases. */
static double attn_params(const shape *s) {
  double p = s->h * s->d * (2 * s->a + 2 * s->kv);
  if (s->bias) p += s->d * (s->a + 2 * s->kv) + s->h;
  return p;
}

/* One expert's (or the dense) MLP. */
static double mlp_params(const shape *s) {
  double p = (s->swiglu ? 3 : 2) * s->h * s->f;
  if (s->bias) p += (s->swiglu ? 2 : 1) * s->f + s->h;
  return p;
}

static double norm_params(const shape *s) { return s->layernorm ? 2 * s->h : s->h; }

static double layer_params(const shape *s) {
  double p = attn_params(s) + s->E * mlp_params(s) + 2 * norm_params(s);
  if (s->E > 1) p += s->h * s->E; /* router */
  return p;
}

static double embed_params(const shape *s) {
  return s->V * s->h + (s->learned ? s->s_pos * s->h : 0);
}

double gpuplan_model_params(const gpuplan_model *m) {
  shape s;
  if (!m) return 0;
  get_shape(m, &s);
  return embed_params(&s) + s.L * layer_params(&s) + norm_params(&s) +
         (s.tied ? 0 : s.V * s.h);
}

/* --- names ---------------------------------------------------------------- */

static const char *const prec_names[] = {"bf16-mixed", "fp16-mixed", "fp32", "bf16", "fp8"};
static const char *const opt_names[] = {"adamw", "sgd", "momentum", "adam8bit", "adafactor"};
static const char *const rec_names[] = {"none", "selective", "full"};
static const char *const dp_names[] = {"ddp", "zero1", "zero2", "zero3",
                                       "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"};
static const char *const sched_names[] = {"1f1b", "gpipe", "interleaved"};
static const char *const conv_names[] = {"deepspeed", "megatron", "fsdp", "hf"};
static const char *const dtype_names[] = {"bf16", "fp16", "fp32", "fp8", "int8", "int4"};

#define NAMEOF(arr, v) ((unsigned)(v) < sizeof arr / sizeof arr[0] ? arr[v] : "unknown")
const char *gpuplan_precision_name(gpuplan_precision p) { return NAMEOF(prec_names, p); }
const char *gpuplan_optimizer_name(gpuplan_optimizer o) { return NAMEOF(opt_names, o); }
const char *gpuplan_recompute_name(gpuplan_recompute r) { return NAMEOF(rec_names, r); }
const char *gpuplan_dp_mode_name(gpuplan_dp_mode m) { return NAMEOF(dp_names, m); }
const char *gpuplan_schedule_name(gpuplan_schedule s) { return NAMEOF(sched_names, s); }
const char *gpuplan_convention_name(gpuplan_convention c) { return NAMEOF(conv_names, c); }
const char *gpuplan_dtype_name(gpuplan_dtype d) { return NAMEOF(dtype_names, d); }

static int ieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
    char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
    if (x == '_') x = '-';
    if (y == '_') y = '-';
    if (x != y) return 0;
  }
  return *a == *b;
}

int gpuplan_enum_parse(gpuplan_ctx *ctx, const char *what, const char *name) {
  static const struct {
    const char *what;
    const char *const *names;
    size_t n;
  } sets[] = {
    {"precision", prec_names, 5}, {"optimizer", opt_names, 5},
    {"recompute", rec_names, 3},  {"dp", dp_names, 7},
    {"schedule", sched_names, 3}, {"convention", conv_names, 4},
    {"dtype", dtype_names, 6},
  };
  size_t i, j;
  if (!what || !name) return gpuplan__error(ctx, GPUPLAN_EINVAL, "enum: NULL argument");
  for (i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    char allowed[256] = "";
    if (strcmp(sets[i].what, what) != 0) continue;
    for (j = 0; j < sets[i].n; j++)
      if (ieq(sets[i].names[j], name)) return (int)j;
    for (j = 0; j < sets[i].n; j++) {
      size_t len = strlen(allowed);
      snprintf(allowed + len, sizeof allowed - len, "%s%s", j ? ", " : "", sets[i].names[j]);
    }
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: '%s' is not one of %s", what, name,
                          allowed);
  }
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "enum: unknown kind '%s'", what);
}

/* --- validation ------------------------------------------------------------ */

static int bad(gpuplan_ctx *ctx, const char *field, const char *why, long long v) {
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %s (got %lld)", field, why, v);
}

#define POS(field, v, max)                                                     \
  do {                                                                         \
    if ((v) < 1) return bad(ctx, field, "must be at least 1", (long long)(v));  \
    if ((v) > (max)) return bad(ctx, field, "is absurdly large", (long long)(v)); \
  } while (0)

static int validate(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_gpu *g,
                    const gpuplan_memory_options *o) {
  if (o->version < 1 || o->version > GPUPLAN_MEMORY_OPTIONS_VERSION)
    return bad(ctx, "options.version", "unknown version", o->version);
  POS("model.layers", m->layers, 100000);
  POS("model.hidden", m->hidden, 10000000);
  POS("model.heads", m->heads, 100000);
  POS("model.kv_heads", m->kv_heads, 100000);
  POS("model.head_dim", m->head_dim, 100000);
  POS("model.ffn_hidden", m->ffn_hidden, 100000000);
  POS("model.vocab", m->vocab, 100000000);
  POS("model.seq_len", m->seq_len, 100000000);
  POS("model.experts", m->experts, 100000);
  POS("model.top_k", m->top_k, m->experts);
  if (m->heads % m->kv_heads)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "model.kv_heads: %lld does not divide heads (%lld)",
                          (long long)m->kv_heads, (long long)m->heads);
  if (g->memory_bytes == 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu.memory_bytes: must be positive");
  POS("tp", o->tp, 1 << 20);
  POS("pp", o->pp, 1 << 20);
  POS("dp", o->dp, 1 << 24);
  POS("cp", o->cp, 1 << 20);
  POS("ep", o->ep, 1 << 20);
  POS("vpp", o->vpp, 1 << 10);
  if ((double)o->tp * o->pp * o->dp * o->cp > 1e8)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "gpus: tp*pp*dp*cp = %.0f is more GPUs than any cluster has",
                          (double)o->tp * o->pp * o->dp * o->cp);
  if (m->heads % o->tp)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "tp: %lld does not divide the model's %lld attention heads",
                          (long long)o->tp, (long long)m->heads);
  if (m->experts % o->ep)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "ep: %lld does not divide the model's %lld experts",
                          (long long)o->ep, (long long)m->experts);
  if (o->ep > 1 && (o->dp * o->cp) % o->ep)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "ep: %lld must divide dp*cp (%lld); experts are sharded over "
                          "the data-parallel ranks", (long long)o->ep,
                          (long long)(o->dp * o->cp));
  if ((unsigned)o->workload > GPUPLAN_INFER) return bad(ctx, "workload", "unknown", o->workload);
  if ((unsigned)o->convention > GPUPLAN_CONV_HF) return bad(ctx, "convention", "unknown", o->convention);
  if ((unsigned)o->dp_mode > GPUPLAN_DP_FSDP_HYBRID) return bad(ctx, "dp_mode", "unknown", o->dp_mode);
  if ((unsigned)o->schedule > GPUPLAN_SCHED_INTERLEAVED) return bad(ctx, "schedule", "unknown", o->schedule);
  if ((unsigned)o->precision > GPUPLAN_PREC_FP8) return bad(ctx, "precision", "unknown", o->precision);
  if ((unsigned)o->optimizer > GPUPLAN_OPT_ADAFACTOR) return bad(ctx, "optimizer", "unknown", o->optimizer);
  if ((unsigned)o->recompute > GPUPLAN_RECOMPUTE_FULL) return bad(ctx, "recompute", "unknown", o->recompute);
  if ((unsigned)o->weight_dtype > GPUPLAN_DTYPE_INT4) return bad(ctx, "weight_dtype", "unknown", o->weight_dtype);
  if ((unsigned)o->kv_dtype > GPUPLAN_DTYPE_INT4) return bad(ctx, "kv_dtype", "unknown", o->kv_dtype);
  if (o->grad_bytes != 0 && o->grad_bytes != 1 && o->grad_bytes != 2 && o->grad_bytes != 4)
    return bad(ctx, "grad_bytes", "must be 0 (convention), 1, 2 or 4", o->grad_bytes);
  if (o->schedule == GPUPLAN_SCHED_INTERLEAVED && o->pp < 2)
    return bad(ctx, "schedule", "interleaved needs pp >= 2; pp is", o->pp);
  if (o->first_stage_layers < 0 || o->last_stage_layers < 0)
    return bad(ctx, "first_stage_layers/last_stage_layers", "must not be negative",
               o->first_stage_layers < 0 ? o->first_stage_layers : o->last_stage_layers);
  if (o->first_stage_layers == 0 && o->last_stage_layers == 0 &&
      m->layers % (o->pp * o->vpp))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "pp: %lld%s does not divide the model's %lld layers (give "
                          "first_stage_layers/last_stage_layers for an uneven split)",
                          (long long)o->pp, o->vpp > 1 ? " x vpp" : "",
                          (long long)m->layers);
  if (o->first_stage_layers || o->last_stage_layers) {
    long long rest = m->layers - o->first_stage_layers - o->last_stage_layers;
    long long mid = o->pp - (o->first_stage_layers ? 1 : 0) - (o->last_stage_layers ? 1 : 0);
    if (o->pp < 2) return bad(ctx, "first_stage_layers", "needs pp >= 2; pp is", o->pp);
    if (rest < 0 || (mid > 0 && rest % mid) || (mid == 0 && rest != 0))
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "first_stage_layers/last_stage_layers: the other %lld stages "
                            "cannot share the remaining %lld layers evenly", mid, rest);
  }
  if (o->workload == GPUPLAN_TRAIN) {
    POS("micro_batch", o->micro_batch, 1 << 24);
    if (o->seq_len < 0 || o->seq_len > 100000000)
      return bad(ctx, "seq_len", "must be 0 (model default) or a positive length", o->seq_len);
    if (o->microbatches < 0 || o->microbatches > 1 << 24)
      return bad(ctx, "microbatches", "must be 0 (= pp) or positive", o->microbatches);
    if (o->prefetch < 0 || o->prefetch > 64) return bad(ctx, "prefetch", "must be 0..64", o->prefetch);
    if (o->dp_mode == GPUPLAN_DP_FSDP_HYBRID && o->shard_group &&
        (o->shard_group < 1 || o->dp % o->shard_group))
      return bad(ctx, "shard_group", "must divide dp", o->shard_group);
    if (o->cp > 1 && !o->flash_attention)
      return bad(ctx, "cp", "context parallelism needs flash attention (ring attention); cp is", o->cp);
  } else {
    POS("batch", o->batch, 1 << 24);
    if (o->context_len < 0 || o->context_len > 100000000)
      return bad(ctx, "context_len", "must be 0 (model maximum) or positive", o->context_len);
    POS("block_tokens", o->block_tokens, 1 << 20);
    if (o->weight_dtype == GPUPLAN_DTYPE_INT4 || o->weight_dtype == GPUPLAN_DTYPE_INT8)
      POS("group_size", o->group_size, 1 << 24);
    if (o->pp > 1 || o->dp > 1 || o->cp > 1)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "inference: only tensor parallelism is modelled (pp, dp, cp must be 1)");
  }
  if (o->context_bytes < -1 || o->nccl_bytes < -1 || o->workspace_bytes < -1 ||
      o->bucket_bytes < -1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "context_bytes/nccl_bytes/workspace_bytes/bucket_bytes: -1 "
                          "(default) or a size >= 0");
  if (!(o->params_override >= 0) || o->params_override > 1e15)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "params_override: must be 0 (from shape) or a count up to 1e15");
  return GPUPLAN_OK;
}

/* --- the model ------------------------------------------------------------ */

typedef struct acc {
  gpuplan_memory *out;
  int overflow;
} acc;

static void put(acc *a, gpuplan_mem_component c, double bytes, const char *formula) {
  gpuplan_mem_item *it = &a->out->item[c];
  if (!(bytes >= 0) || bytes > LIMIT) {
    a->overflow = 1;
    bytes = 0;
  }
  it->bytes = (uint64_t)ceil(bytes);
  it->formula = bytes > 0 ? formula : "";
}

static const char *const comp_names[GPUPLAN_MEM_COUNT] = {
  "weights", "gradients", "master weights", "optimizer states", "activations",
  "recompute working set", "embedding activations", "logits and loss",
  "ZeRO-3/FSDP gather buffers", "gradient buckets", "MoE all-to-all buffers",
  "KV cache", "inference activations", "CUDA context", "NCCL buffers",
  "cuBLAS workspace"};

static double dtype_bytes(gpuplan_dtype d) {
  switch (d) {
  case GPUPLAN_DTYPE_FP32: return 4;
  case GPUPLAN_DTYPE_FP8:
  case GPUPLAN_DTYPE_INT8: return 1;
  case GPUPLAN_DTYPE_INT4: return 0.5;
  default: return 2;
  }
}

/* Layers on stage i for the split in o. */
static double stage_layers(const gpuplan_model *m, const gpuplan_memory_options *o, int64_t i) {
  int64_t p = o->pp;
  if (!o->first_stage_layers && !o->last_stage_layers) return (double)m->layers / (double)p;
  if (i == 0 && o->first_stage_layers) return (double)o->first_stage_layers;
  if (i == p - 1 && o->last_stage_layers) return (double)o->last_stage_layers;
  {
    int64_t mid = p - (o->first_stage_layers ? 1 : 0) - (o->last_stage_layers ? 1 : 0);
    return (double)(m->layers - o->first_stage_layers - o->last_stage_layers) / (double)mid;
  }
}

/*
 * Activation bytes of one transformer layer for one micro-batch, no
 * recompute, generalised from Korthikanti Table 2 (a*d = h, f = 4h, MHA
 * gives 34*s*b*h + 5*a*s^2*b):
 *   attention  2h (QKV input) + 2ad (Q) + 4 kv d (K, V) + 2ad (out-proj input)
 *              + h (dropout mask)                       [11h for MHA]
 *   MLP        2h (fc1 input) + 2f (act input) + 2f (fc2 input) + h (mask)
 *              SwiGLU: 2h + 2f (gate) + 2f (up) + 2f (fc2 input) + h
 *   norms      2 x 2h
 *   scores     5 a s (softmax 2, mask 1, dropout out 2) per token; FlashAttention
 *              keeps only the fp32 log-sum-exp, 4 a per token
 * With TP, the norm inputs, the QKV/fc1 inputs and the masks (10h) are
 * replicated unless SP shards them; the rest is split by t.
 * Returns bytes per token of the micro-batch (multiply by s*b).
 */
static double layer_act_per_token(const shape *sh, const gpuplan_memory_options *o,
                                  double s_local, double s_full, int with_scores) {
  double t = (double)o->tp, h = sh->h, f = sh->f, ad = sh->a * sh->d, kvd = sh->kv * sh->d;
  double mask = o->dropout ? 1 : 0;
  /* fp32 training keeps 4-byte activations: the 16-bit terms double, the
   * 1-byte dropout masks do not. */
  double w = o->precision == GPUPLAN_PREC_FP32 ? 2 : 1;
  double repl = w * (4 * h + 2 * h + 2 * h) + 2 * mask * h;  /* norms, QKV in, fc1 in | masks */
  double mlp = sh->swiglu ? 6 * f : 4 * f;
  double split, scores = 0;
  if (sh->E > 1) mlp *= sh->k;
  split = w * (2 * ad + 4 * kvd + 2 * ad + mlp);             /* Q, K, V, out-proj in, MLP */
  if (with_scores) {
    if (o->flash_attention) scores = 4 * sh->a;             /* fp32 LSE per head */
    else scores = (o->dropout ? 4 * w + 1 : 2 * w) * sh->a * s_full; /* softmax, dropout out | mask */
  }
  (void)s_local;
  if (o->sequence_parallel && o->tp > 1) return (repl + split + scores) / t;
  return repl + (split + scores) / t;
}

static int eval_stage(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_gpu *g,
                      const gpuplan_memory_options *o, int64_t stage, gpuplan_memory *out) {
  shape sh;
  acc a;
  double t = (double)o->tp, p = (double)o->pp, dp = (double)o->dp, cp = (double)o->cp;
  double ep = (double)o->ep, Ls, first, last, scale = 1;
  double p_layer_dense, p_layer_expert, p_rank, p_expert_rank, p_stage_extra = 0;
  double wbytes, gbytes, master, optb, nshard_w, nshard_g, nshard_o, nshard_e;
  int conv = o->convention, zero3;
  int train = o->workload == GPUPLAN_TRAIN;
  gpuplan_dp_mode mode = o->dp_mode;

  memset(out, 0, sizeof *out);
  a.out = out;
  a.overflow = 0;
  get_shape(m, &sh);
  if (o->params_override > 0) scale = o->params_override / gpuplan_model_params(m);
  Ls = stage_layers(m, o, stage);
  first = stage == 0;
  last = stage == o->pp - 1;
  out->stage = stage;
  out->layers = (int64_t)Ls;
  out->params_total = gpuplan_model_params(m) * scale;

  /* Parameters this rank holds (before DP sharding).  Attention and MLP
   * matrices are split by t; experts by ep then t; norms are replicated;
   * the embedding is vocab-parallel (/t) on the first stage, the output
   * layer on the last (a second copy when tied and pp > 1, as Megatron). */
  p_layer_dense = (attn_params(&sh) / t + 2 * norm_params(&sh) +
                   (sh.E > 1 ? sh.h * sh.E : mlp_params(&sh) / t)) * scale;
  p_layer_expert = sh.E > 1 ? (sh.E / ep) * mlp_params(&sh) / t * scale : 0;
  if (first) p_stage_extra += (sh.V * sh.h / t + (sh.learned ? sh.s_pos * sh.h : 0)) * scale;
  if (last && (!sh.tied || o->pp > 1)) p_stage_extra += sh.V * sh.h / t * scale;
  if (last) p_stage_extra += norm_params(&sh) * scale;
  p_rank = Ls * p_layer_dense + p_stage_extra;
  p_expert_rank = Ls * p_layer_expert;
  out->params_rank = p_rank + p_expert_rank;

  if (!train) {
    double wb = dtype_bytes(o->weight_dtype), ctxlen, kvb, per_tok, blocks, seqs_mem;
    double kv_heads_rank = ceil(sh.kv / t);
    const char *wf = "params/t x bytes(dtype)";
    if (o->weight_dtype == GPUPLAN_DTYPE_INT4) {
      wb += 4.0 / (double)o->group_size; /* fp16 scale + zero per group */
      wf = "params/t x (0.5 + 4/group) bytes: int4 with fp16 scale and zero per group";
    } else if (o->weight_dtype == GPUPLAN_DTYPE_INT8) {
      wb += 2.0 / (double)o->group_size;
      wf = "params/t x (1 + 2/group) bytes: int8 with an fp16 scale per group";
    }
    put(&a, GPUPLAN_MEM_WEIGHTS, out->params_rank * wb, wf);
    ctxlen = o->context_len ? (double)o->context_len
                            : (isfinite(m->max_seq_len) && m->max_seq_len > 0 ? m->max_seq_len
                                                                              : (double)m->seq_len);
    kvb = dtype_bytes(o->kv_dtype);
    per_tok = 2 * sh.L * kv_heads_rank * sh.d * kvb;
    out->kv_bytes_per_token = (uint64_t)per_tok;
    if (o->paged) {
      blocks = ceil(ctxlen / (double)o->block_tokens);
      seqs_mem = blocks * (double)o->block_tokens * per_tok;
      put(&a, GPUPLAN_MEM_KV_CACHE, (double)o->batch * seqs_mem,
          "batch x ceil(len/block) x block x 2 x layers x ceil(kv_heads/t) x head_dim x bytes (paged)");
      out->kv_waste_bytes = (uint64_t)((double)o->batch * (seqs_mem - ctxlen * per_tok));
    } else {
      double maxlen = isfinite(m->max_seq_len) && m->max_seq_len > ctxlen ? m->max_seq_len : ctxlen;
      seqs_mem = maxlen * per_tok;
      put(&a, GPUPLAN_MEM_KV_CACHE, (double)o->batch * seqs_mem,
          "batch x max_len x 2 x layers x ceil(kv_heads/t) x head_dim x bytes (contiguous reservation)");
      out->kv_waste_bytes = (uint64_t)((double)o->batch * (maxlen - ctxlen) * per_tok);
    }
    /* Prefill workspace for one sequence: hidden states in and out, QKV and
     * the MLP intermediate of one layer at a time, plus last-token logits. */
    put(&a, GPUPLAN_MEM_INFER_ACT,
        ctxlen * 2 * (2 * sh.h + (sh.a * sh.d + 2 * sh.kv * sh.d) / t +
                      (sh.swiglu ? 3 : 2) * sh.f / t * sh.k) +
            (double)o->batch * sh.V / t * 4,
        "prefill of one sequence, one layer at a time: len x 2 x (2h + qkv/t + mlp/t) + batch x V/t x 4 (fp32 logits)");
  } else {
    double s = (double)(o->seq_len ? o->seq_len : m->seq_len), b = (double)o->micro_batch;
    double mb = (double)(o->microbatches ? o->microbatches : o->pp), inflight, tok;
    double per_tok, act_layer, grad_default;

    /* Bytes per parameter by precision and convention. */
    switch (o->precision) {
    case GPUPLAN_PREC_FP32: wbytes = 4; master = 0; grad_default = 4; break;
    case GPUPLAN_PREC_BF16: wbytes = 2; master = 0; grad_default = 2; break;
    case GPUPLAN_PREC_FP8: wbytes = 3; master = 4; grad_default = 2; break;
    default: wbytes = 2; master = 4; grad_default = 2; break;
    }
    if (master > 0 && (conv == GPUPLAN_CONV_MEGATRON || conv == GPUPLAN_CONV_HF ||
                       conv == GPUPLAN_CONV_FSDP))
      grad_default = 4; /* fp32 main grads / fp32 sharded grads */
    gbytes = o->grad_bytes ? o->grad_bytes : grad_default;
    switch (o->optimizer) {
    case GPUPLAN_OPT_SGD: optb = 0; break;
    case GPUPLAN_OPT_MOMENTUM: optb = 4; break;
    case GPUPLAN_OPT_ADAM8BIT: optb = 2; break;
    case GPUPLAN_OPT_ADAFACTOR:
      /* Row and column statistics, 4 bytes each, per weight matrix. */
      optb = -1;
      break;
    default: optb = 8; break;
    }

    /* Sharding degrees for weights, grads, optimizer(+master). */
    {
      double shard = dp * cp; /* ZeRO shards over the whole data-parallel group */
      if (mode == GPUPLAN_DP_FSDP_HYBRID && o->shard_group) shard = (double)o->shard_group;
      nshard_w = nshard_g = nshard_o = 1;
      zero3 = mode == GPUPLAN_DP_ZERO3 || mode == GPUPLAN_DP_FSDP_FULL ||
              mode == GPUPLAN_DP_FSDP_HYBRID;
      if (mode != GPUPLAN_DP_DDP) nshard_o = shard;
      if (mode == GPUPLAN_DP_ZERO2 || mode == GPUPLAN_DP_FSDP_GRAD_OP || zero3) nshard_g = shard;
      if (zero3) nshard_w = shard;
      /* Expert parameters are already split over ep of the dp ranks; ZeRO
       * shards them over the remaining dp*cp/ep. */
      nshard_e = ep;
    }
    {
      double pw = p_rank, pe = p_expert_rank, wsh = pw / nshard_w + pe / (nshard_w > 1 ? nshard_w / nshard_e : 1);
      double gsh = pw / nshard_g + pe / (nshard_g > 1 ? nshard_g / nshard_e : 1);
      double osh = pw / nshard_o + pe / (nshard_o > 1 ? nshard_o / nshard_e : 1);
      const char *wf, *gf, *mf, *of;
      double wb = wbytes;
      if (conv == GPUPLAN_CONV_HF && master > 0) {
        /* HF counts the fp32 weights plus the 16-bit copy under weights. */
        wb = wbytes; /* the 16-bit copy; fp32 under master */
      }
      if (conv == GPUPLAN_CONV_FSDP && master > 0 && zero3) {
        /* FSDP keeps fp32 sharded flat params (they are the master copy) and
         * gathers 16-bit copies per unit: no persistent 16-bit weights. */
        wb = 0;
      }
      if (o->offload_params && zero3) wb = 0;
      wf = nshard_w > 1 ? "params/(t*pp) x weight bytes / N_shard [ZeRO-3 P_p]"
                        : "params/(t*pp) x weight bytes (2 for 16-bit, 4 fp32, 3 fp8 = bf16 + fp8 cache)";
      gf = nshard_g > 1 ? "params/(t*pp) x grad bytes / N_shard [ZeRO-2 P_g]"
                        : "params/(t*pp) x grad bytes (16-bit [ZeRO], fp32 main grads [Megatron/HF/FSDP])";
      mf = nshard_o > 1 ? "params/(t*pp) x 4 / N_shard [ZeRO-1 P_os]" : "params/(t*pp) x 4 (fp32 master)";
      put(&a, GPUPLAN_MEM_WEIGHTS, wsh * wb, wf);
      put(&a, GPUPLAN_MEM_GRADIENTS, gsh * gbytes, gf);
      if (conv == GPUPLAN_CONV_MEGATRON && mode == GPUPLAN_DP_ZERO1)
        put(&a, GPUPLAN_MEM_GRADIENTS, (pw + pe) * gbytes,
            "params/(t*pp) x 4: the distributed optimizer keeps the full fp32 grad buffer [Meg 6 + 12/DP]");
      if (o->offload_optimizer) {
        put(&a, GPUPLAN_MEM_MASTER, 0, "");
        out->host_bytes += (uint64_t)(osh * master);
      } else {
        put(&a, GPUPLAN_MEM_MASTER, osh * master, mf);
      }
      if (optb >= 0) {
        of = nshard_o > 1 ? "params/(t*pp) x K / N_shard (K: Adam 8, momentum 4, 8-bit Adam 2) [ZeRO P_os]"
                          : "params/(t*pp) x K (Adam 8, momentum 4, 8-bit Adam 2, SGD 0)";
        if (o->offload_optimizer) out->host_bytes += (uint64_t)(osh * optb);
        else put(&a, GPUPLAN_MEM_OPTIMIZER, osh * optb, of);
      } else {
        double rc = Ls * ((sh.h + (sh.a + 2 * sh.kv) * sh.d / t) + (sh.a * sh.d / t + sh.h) +
                          sh.E / ep * (sh.swiglu ? 3 : 2) * (sh.h + sh.f / t));
        if (first) rc += sh.V / t + sh.h;
        rc *= 4.0 / nshard_o;
        if (o->offload_optimizer) out->host_bytes += (uint64_t)rc;
        else put(&a, GPUPLAN_MEM_OPTIMIZER, rc,
                 "4 bytes x (rows + cols) of every weight matrix (Adafactor factored second moment)");
      }
      if (o->offload_params && zero3) out->host_bytes += (uint64_t)(wsh * wbytes);

      /* ZeRO-3/FSDP: one layer (the unit) gathered unsharded in compute
       * precision, plus `prefetch` more, plus its unsharded gradient for
       * the reduce-scatter. */
      if (zero3 && nshard_w > 1) {
        double unit = p_layer_dense + p_layer_expert;
        put(&a, GPUPLAN_MEM_GATHER,
            unit * ((wbytes > 2 ? 2 : wbytes) * (1 + (double)o->prefetch) + gbytes),
            "largest unit (one layer) x (16-bit bytes x (1 + prefetch) + grad bytes)");
      }
      if (mode == GPUPLAN_DP_FSDP_GRAD_OP && nshard_g > 1)
        put(&a, GPUPLAN_MEM_GATHER, (pw + pe) * 2,
            "params/(t*pp) x 2: SHARD_GRAD_OP keeps the gathered 16-bit params from forward to backward");
      if (!zero3 && o->dp * o->cp > 1) {
        double bucket = o->bucket_bytes >= 0 ? (double)o->bucket_bytes : 25 * MiB;
        put(&a, GPUPLAN_MEM_BUCKETS, 2 * bucket,
            "2 x bucket (25 MiB default: DDP bucket_cap_mb, DeepSpeed reduce_bucket_size)");
      }
    }

    /* Activations. */
    if (o->schedule == GPUPLAN_SCHED_GPIPE) inflight = mb;
    else inflight = fmin((double)(o->pp - stage), mb);
    if (o->schedule == GPUPLAN_SCHED_INTERLEAVED && stage == 0)
      inflight = fmin(mb, p) * (1 + (p - 1) / (p * (double)o->vpp));
    out->microbatches_in_flight = inflight;
    tok = s / cp * b; /* tokens of one micro-batch on this rank */
    per_tok = layer_act_per_token(&sh, o, s / cp, s, o->recompute == GPUPLAN_RECOMPUTE_NONE);
    act_layer = per_tok * tok;
    if (o->recompute == GPUPLAN_RECOMPUTE_FULL) {
      double keep = (o->precision == GPUPLAN_PREC_FP32 ? 4 : 2) * sh.h * tok /
                    (o->sequence_parallel && o->tp > 1 ? t : 1);
      put(&a, GPUPLAN_MEM_ACTIVATIONS, keep * Ls * inflight,
          "2sbh per layer (layer input only) x layers x micro-batches in flight [Kor Table 2, full]");
      put(&a, GPUPLAN_MEM_RECOMPUTE,
          layer_act_per_token(&sh, o, s / cp, s, 1) * tok,
          "one layer's activations, rematerialised in backward [Kor]");
    } else {
      put(&a, GPUPLAN_MEM_ACTIVATIONS, act_layer * Ls * inflight,
          o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE
              ? "sbh(10 + 24/t) per layer (34sbh/t with SP), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2, selective]"
          : o->flash_attention
              ? "sbh(34 + 4a/h...) per layer, FlashAttention (no s^2), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2]"
              : "sbh(34 + 5as/h) per layer (TP: 10 + 24/t + 5as/(ht)), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2]");
    }
    if (first) {
      double emb = (8 * s / cp * b + (o->dropout ? s / cp * b * sh.h : 0) /
                                         (o->sequence_parallel && o->tp > 1 ? t : 1)) * inflight;
      put(&a, GPUPLAN_MEM_EMBEDDING_ACT, emb, "8sb (int64 ids) + sbh (embedding dropout mask) per micro-batch in flight [Kor/Meg]");
    }
    if (last) {
      put(&a, GPUPLAN_MEM_LOGITS, ((o->precision == GPUPLAN_PREC_FP32 ? 4 : 2) * sh.h /
                                       (o->sequence_parallel && o->tp > 1 ? t : 1) +
                                   4 * sh.V / t) * tok,
          "2sbh (final norm/projection input) + 4sbV/t (fp32 logits and loss) [Kor/Meg]");
    }
    if (sh.E > 1 && ep > 1)
      put(&a, GPUPLAN_MEM_MOE_A2A, 2 * 2 * tok * sh.k * sh.h,
          "2 (dispatch + combine) x tokens x top_k x h x 2 bytes");
  }

  /* Fixed costs. */
  {
    double gpus = t * p * dp * cp;
    put(&a, GPUPLAN_MEM_CONTEXT, o->context_bytes >= 0 ? (double)o->context_bytes : (double)g->context_bytes,
        o->context_bytes >= 0 ? "given" : "catalog context_bytes for the SKU (V100 measured 1343 MiB, formulas.md B.5)");
    put(&a, GPUPLAN_MEM_NCCL,
        o->nccl_bytes >= 0 ? (double)o->nccl_bytes : (gpus > 1 ? 256 * MiB : 0),
        o->nccl_bytes >= 0 ? "given" : "NCCL_BUFFSIZE 4 MiB x 2 (send, recv) x 32 channels (default estimate; override)");
    put(&a, GPUPLAN_MEM_WORKSPACE,
        o->workspace_bytes >= 0 ? (double)o->workspace_bytes : 32 * MiB,
        o->workspace_bytes >= 0 ? "given" : "CUBLAS_WORKSPACE_CONFIG :4096:8 = 32 MiB (PyTorch default)");
  }

  if (a.overflow)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "sizes: the memory of this configuration overflows 64 bits "
                          "(check micro_batch, seq_len, batch and context_len)");
  {
    int c;
    double total = 0;
    for (c = 0; c < GPUPLAN_MEM_COUNT; c++) {
      out->item[c].name = comp_names[c];
      if (!out->item[c].formula) out->item[c].formula = "";
      total += (double)out->item[c].bytes;
    }
    if (total > LIMIT)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "sizes: the total overflows 64 bits");
    out->total = (uint64_t)total;
  }
  return GPUPLAN_OK;
}

static void finish(const gpuplan_gpu *g, const gpuplan_memory_options *o, gpuplan_memory *out) {
  out->capacity = g->memory_bytes;
  out->fits = out->total <= out->capacity;
  out->headroom = (int64_t)out->capacity - (int64_t)out->total;
  if (o->workload == GPUPLAN_INFER) {
    uint64_t fixed = out->total - out->item[GPUPLAN_MEM_KV_CACHE].bytes;
    double per_seq = o->batch > 0 ? (double)out->item[GPUPLAN_MEM_KV_CACHE].bytes / (double)o->batch : 0;
    out->max_sequences = per_seq > 0 && out->capacity > fixed
                             ? (int64_t)floor((double)(out->capacity - fixed) / per_seq)
                             : 0;
  }
}

int gpuplan_memory_eval(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                        const gpuplan_memory_options *options, int64_t stage,
                        gpuplan_memory *out) {
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  const gpuplan_memory_options *o = options ? options : &defaults;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!model || !gpu || !out)
    return gpuplan__error(ctx, GPUPLAN_EMISUSE, "memory: model, gpu and out must not be NULL");
  GPUPLAN_TRY(validate(ctx, model, gpu, o));
  if (stage != GPUPLAN_STAGE_WORST && (stage < 0 || stage >= o->pp))
    return bad(ctx, "stage", "must be -1 (worst) or 0..pp-1", (long long)stage);
  if (stage == GPUPLAN_STAGE_WORST) {
    /* First and last stages are the candidates (activations in flight vs
     * the output layer and logits); an uneven split can make any stage
     * the largest, so then look at all of them. */
    gpuplan_memory tmp;
    int64_t i, n = o->pp;
    int all = o->first_stage_layers || o->last_stage_layers;
    rc = eval_stage(ctx, model, gpu, o, 0, out);
    for (i = 1; rc == GPUPLAN_OK && i < n; i++) {
      if (!all && i != n - 1 && i != 1) continue;
      rc = eval_stage(ctx, model, gpu, o, i, &tmp);
      if (rc == GPUPLAN_OK && tmp.total > out->total) *out = tmp;
    }
  } else {
    rc = eval_stage(ctx, model, gpu, o, stage, out);
  }
  if (rc != GPUPLAN_OK) return rc;
  finish(gpu, o, out);
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
