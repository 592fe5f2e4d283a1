/*
 * memory.c: the analytic memory model (gpuplan/memory.h).
 *
 * Sources, as cited in each component's formula string:
 *   [ZeRO]  Rajbhandari et al. 2019, formulas.md B.3
 *   [Kor]   Korthikanti et al. 2022, Table 2 and Megatron's
 *           theoretical_memory_usage.py, formulas.md B.2
 *   [Meg]   Megatron-LM accounting (18 bytes/param; 6 + 12/DP), B.3
 *   [HF]    Hugging Face model-memory anatomy, B.3/B.5
 *   [QLoRA] Dettmers et al. 2023 (NF4, double quantisation, paged optimizers)
 *   [snap]  the real snapshots in tests/data/torch-snapshots (MODELS.md): what
 *           eager and compiled PyTorch keep, tensor by tensor
 * Activations are counted as the code that trains keeps them (impl): fused
 * Megatron kernels keep Korthikanti's tensors; eager PyTorch keeps more
 * (unfused SwiGLU, two score tensors, norm internals, residual copies,
 * fp32 under autocast); Inductor keeps what its partitioner saves.  The
 * step is sized by phase: forward and backward (activations, the loss,
 * the backward working set) or the optimizer step (gradients and its
 * temporaries); the first step has no optimizer states until step().
 * Arithmetic is in double (exact for integers below 2^53) and every result
 * is checked against 2^64 before it becomes a byte count.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

#define MiB 1048576.0
#define LIMIT 1.8e19 /* below 2^64 */
#define AT_LIMIT 0.02 /* headroom under 2% of capacity: "at the limit" */

/* --- parameter counts from the shape ------------------------------------- */

typedef struct shape {
  double h, a, kv, d, f, V, L, E, k, s_pos;
  int swiglu, gated, bias, layernorm, tied, learned, encoder, relu2;
  /* extensions (gpuplan_memory_options, version 2) */
  double fe, Es, fs, Ld;          /* expert ffn, shared experts and their ffn, dense layers */
  int mla;
  double qr, kvr, dr, dv;         /* MLA ranks and head dims (d = the no-RoPE q/k head dim) */
  double Ldec;                    /* decoder layers of an encoder-decoder */
  double labels;                  /* classifier head */
  int qkv_bias, qk_norm, parallel;
  double extra;
} shape;

static int streq(const char *a, const char *b) { return a && strcmp(a, b) == 0; }

static void get_shape(const gpuplan_model *m, const gpuplan_memory_options *o, shape *s) {
  memset(s, 0, sizeof *s);
  s->h = (double)m->hidden;
  s->a = (double)m->heads;
  s->kv = (double)m->kv_heads;
  s->d = (double)m->head_dim;
  s->f = (double)m->ffn_hidden;
  s->V = (double)m->vocab;
  s->L = (double)m->layers;
  s->E = (double)(m->experts > 0 ? m->experts : 1);
  s->k = (double)(m->top_k > 0 ? m->top_k : 1);
  s->swiglu = streq(m->ffn_type, "swiglu");
  s->gated = s->swiglu || streq(m->ffn_type, "geglu");
  s->relu2 = streq(m->ffn_type, "relu2");
  s->bias = m->linear_bias;
  s->layernorm = !m->norm || strcmp(m->norm, "rmsnorm") != 0;
  s->tied = m->tied_embeddings;
  s->learned = m->position && strcmp(m->position, "learned") == 0;
  s->encoder = streq(m->arch, "encoder");
  s->s_pos = isfinite(m->max_seq_len) && m->max_seq_len > 0 ? m->max_seq_len : (double)m->seq_len;
  s->fe = s->f;
  s->qkv_bias = s->bias;
  if (!o) return;
  if (o->expert_ffn > 0) s->fe = (double)o->expert_ffn;
  s->Es = (double)o->shared_experts;
  s->fs = o->shared_expert_ffn > 0 ? (double)o->shared_expert_ffn : s->fe;
  s->Ld = s->E > 1 ? fmin((double)o->dense_layers, s->L) : s->L;
  if (s->E <= 1) s->Ld = s->L;
  s->mla = o->kv_lora_rank > 0;
  s->qr = (double)o->q_lora_rank;
  s->kvr = (double)o->kv_lora_rank;
  s->dr = (double)o->qk_rope_dim;
  s->dv = o->v_head_dim > 0 ? (double)o->v_head_dim : s->d;
  s->Ldec = (double)o->decoder_layers;
  s->labels = (double)o->head_labels;
  if (o->qkv_bias >= 0) s->qkv_bias = o->qkv_bias;
  s->qk_norm = o->qk_norm;
  s->parallel = o->parallel_block;
  s->extra = o->extra_params;
}

static double norm_params(const shape *s) { return s->layernorm ? 2 * s->h : s->h; }

/* Attention of one layer (self or cross): projections, biases, q/k norms. */
static double attn_params(const shape *s) {
  double p;
  if (s->mla) {
    double qh = s->a * (s->d + s->dr);
    p = (s->qr > 0 ? s->h * s->qr + s->qr + s->qr * qh : s->h * qh) + /* query */
        s->h * (s->kvr + s->dr) + s->kvr + s->kvr * s->a * (s->d + s->dv) + /* compressed KV */
        s->a * s->dv * s->h;                                                /* output */
    return p;
  }
  p = s->h * s->d * (2 * s->a + 2 * s->kv);
  if (s->qkv_bias) p += s->d * (s->a + 2 * s->kv);
  if (s->bias) p += s->h;
  if (s->qk_norm) p += 2 * s->d;
  return p;
}

/* One MLP of width f (an expert's, a shared expert's or the dense one). */
static double mlp_params_f(const shape *s, double f) {
  double p = (s->gated ? 3 : 2) * s->h * f;
  if (s->bias) p += (s->gated ? 2 : 1) * f + s->h;
  return p;
}

static double layer_norms(const shape *s) { return (s->parallel == 1 ? 1 : 2) * norm_params(s); }

static double dense_layer_params(const shape *s) { return attn_params(s) + mlp_params_f(s, s->f) + layer_norms(s); }

static double moe_layer_params(const shape *s) {
  return attn_params(s) + s->E * mlp_params_f(s, s->fe) + s->Es * mlp_params_f(s, s->fs) + s->h * s->E +
         layer_norms(s);
}

static double decoder_layer_params(const shape *s) {
  return 2 * attn_params(s) + mlp_params_f(s, s->f) + 3 * norm_params(s);
}

static double embed_params(const shape *s) { return s->V * s->h + (s->learned ? s->s_pos * s->h : 0); }

/* Everything after the last layer: final norm(s) and the head. */
static double head_params(const shape *s) {
  double p = norm_params(s) * (s->Ldec > 0 ? 2 : 1);
  if (s->labels > 0) return p + s->h * s->h + s->h + s->labels * (s->h + 1); /* pooler + classifier */
  if (s->encoder) p += s->h * s->h + s->h + norm_params(s) + s->V;           /* MLM transform + bias */
  if (!s->tied) p += s->V * s->h;
  return p;
}

static double total_params(const shape *s) {
  return embed_params(s) + s->Ld * dense_layer_params(s) + (s->L - s->Ld) * moe_layer_params(s) +
         s->Ldec * decoder_layer_params(s) + head_params(s) + s->extra;
}

double gpuplan_model_params(const gpuplan_model *m) {
  shape s;
  if (!m) return 0;
  get_shape(m, NULL, &s);
  s.Ld = s.L;
  if (s.E > 1) s.Ld = 0;
  s.fs = s.fe;
  s.dv = s.d;
  return total_params(&s);
}

/* --- the GEMMs of a layer (the performance model's FLOPs) --------------------- */

static int add_gemm(gpuplan__gemm *g, int n, const char *name, double N, double K, double count, int routed,
                    int split) {
  if (n >= GPUPLAN__MAX_GEMMS || !(N > 0) || !(K > 0) || !(count > 0)) return n;
  g[n].name = name;
  g[n].n = N;
  g[n].k = K;
  g[n].count = count;
  g[n].routed = routed;
  g[n].split = split;
  return n + 1;
}

static int attn_gemms(const shape *s, gpuplan__gemm *g, int n, int cross) {
  if (s->mla) {
    if (s->qr > 0) {
      n = add_gemm(g, n, "q down-projection", s->qr, s->h, 1, 0, GPUPLAN__SPLIT_NONE);
      n = add_gemm(g, n, "q up-projection", s->a * (s->d + s->dr), s->qr, 1, 0, GPUPLAN__SPLIT_N);
    } else {
      n = add_gemm(g, n, "q projection", s->a * (s->d + s->dr), s->h, 1, 0, GPUPLAN__SPLIT_N);
    }
    n = add_gemm(g, n, "kv down-projection", s->kvr + s->dr, s->h, 1, 0, GPUPLAN__SPLIT_NONE);
    n = add_gemm(g, n, "kv up-projection", s->a * (s->d + s->dv), s->kvr, 1, 0, GPUPLAN__SPLIT_N);
    return add_gemm(g, n, "attention output", s->h, s->a * s->dv, 1, 0, GPUPLAN__SPLIT_K);
  }
  n = add_gemm(g, n, cross ? "cross-attention qkv" : "qkv", (s->a + 2 * s->kv) * s->d, s->h, 1, 0, GPUPLAN__SPLIT_N);
  return add_gemm(g, n, cross ? "cross-attention output" : "attention output", s->h, s->a * s->d, 1, 0,
                  GPUPLAN__SPLIT_K);
}

static int mlp_gemms(const shape *s, gpuplan__gemm *g, int n, const char *fc1, const char *fc2, double f,
                     double count, int routed) {
  n = add_gemm(g, n, fc1, f * (s->gated ? 2 : 1), s->h, count, routed, GPUPLAN__SPLIT_N);
  return add_gemm(g, n, fc2, s->h, f, count, routed, GPUPLAN__SPLIT_K);
}

static int layer_gemms(const shape *s, int layer_kind, gpuplan__gemm *out) {
  int n = 0;
  n = attn_gemms(s, out, n, 0);
  if (layer_kind == GPUPLAN__LAYER_DECODER) n = attn_gemms(s, out, n, 1);
  if (layer_kind == GPUPLAN__LAYER_MOE && s->E > 1) {
    n = add_gemm(out, n, "router", s->E, s->h, 1, 0, GPUPLAN__SPLIT_NONE);
    n = mlp_gemms(s, out, n, "expert fc1", "expert fc2", s->fe, 1, 1);
    if (s->Es > 0) n = mlp_gemms(s, out, n, "shared expert fc1", "shared expert fc2", s->fs, s->Es, 0);
  } else {
    n = mlp_gemms(s, out, n, "fc1", "fc2", s->f, 1, 0);
  }
  return n;
}

void gpuplan__layer_mix_of(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__layer_mix *mix) {
  shape s;
  int k;
  get_shape(m, o, &s); /* once: the shape's strcmp()s are most of its cost */
  memset(mix, 0, sizeof *mix);
  mix->dense = s.Ld;
  mix->moe = s.L - s.Ld;
  mix->decoder = s.Ldec;
  mix->experts = s.E > 1 ? s.E : 1;
  mix->top_k = s.E > 1 ? s.k : 1;
  mix->mlp_width[GPUPLAN__LAYER_DENSE] = s.f;
  mix->mlp_width[GPUPLAN__LAYER_MOE] = s.E > 1 ? s.k * s.fe + s.Es * s.fs : s.f;
  mix->mlp_width[GPUPLAN__LAYER_DECODER] = s.f;
  mix->qk_dim = s.mla ? s.d + s.dr : s.d;
  mix->v_dim = s.mla ? s.dv : s.d;
  mix->causal = !s.encoder;
  for (k = 0; k < 3; k++) mix->ngemm[k] = layer_gemms(&s, k, mix->gemm[k]);
}

/* --- LoRA adapters -------------------------------------------------------- */

static unsigned lora_mods(const gpuplan_memory_options *o) {
  if (o->finetune == GPUPLAN_FT_FULL) return 0;
  if (o->lora_modules) return o->lora_modules & GPUPLAN_LORA_ALL;
  return o->finetune == GPUPLAN_FT_QLORA ? GPUPLAN_LORA_ALL : (GPUPLAN_LORA_Q | GPUPLAN_LORA_V);
}

/* Adapter parameters of one layer: r x (in + out) per adapted linear. */
static double lora_layer_params(const shape *s, const gpuplan_memory_options *o, int moe) {
  unsigned mm = lora_mods(o);
  double r = (double)o->lora_rank, ad = s->a * s->d, kvd = s->kv * s->d, p = 0;
  double f = moe ? s->fe : s->f, nmlp = moe ? s->E + s->Es : 1;
  if (!mm) return 0;
  if (mm & GPUPLAN_LORA_Q) p += r * (s->h + ad);
  if (mm & GPUPLAN_LORA_K) p += r * (s->h + kvd);
  if (mm & GPUPLAN_LORA_V) p += r * (s->h + kvd);
  if (mm & GPUPLAN_LORA_O) p += r * (ad + s->h);
  if (mm & GPUPLAN_LORA_GATE && s->gated) p += nmlp * r * (s->h + f);
  if (mm & GPUPLAN_LORA_UP) p += nmlp * r * (s->h + f);
  if (mm & GPUPLAN_LORA_DOWN) p += nmlp * r * (f + s->h);
  return p;
}

/* Parameters of one layer that live in the block linears (what NF4/int8 quantise). */
static double linear_params(const shape *s, int moe) {
  double ad = s->a * s->d, kvd = s->kv * s->d;
  double attn = s->mla ? attn_params(s) : s->h * (2 * ad + 2 * kvd);
  double mlp = moe ? s->E * (s->gated ? 3 : 2) * s->h * s->fe + s->Es * (s->gated ? 3 : 2) * s->h * s->fs
                   : (s->gated ? 3 : 2) * s->h * s->f;
  return attn + mlp;
}

/* --- names ---------------------------------------------------------------- */

static const char *const prec_names[] = {"bf16-mixed", "fp16-mixed", "fp32", "bf16", "fp8"};
static const char *const opt_names[] = {"adamw", "sgd", "momentum", "adam8bit", "adafactor"};
static const char *const rec_names[] = {"none", "selective", "full"};
static const char *const dp_names[] = {"ddp", "zero1", "zero2", "zero3",
                                       "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"};
static const char *const sched_names[] = {"1f1b", "gpipe", "interleaved"};
static const char *const conv_names[] = {"deepspeed", "megatron", "fsdp", "hf"};
static const char *const dtype_names[] = {"bf16", "fp16", "fp32", "fp8", "int8", "int4", "nf4"};
static const char *const impl_names[] = {"fused", "eager", "compiled"};
static const char *const ft_names[] = {"full", "lora", "qlora"};
static const char *const optimpl_names[] = {"foreach", "fused", "for-loop"};

#define NAMEOF(arr, v) ((unsigned)(v) < sizeof arr / sizeof arr[0] ? arr[v] : "unknown")
const char *gpuplan_precision_name(gpuplan_precision p) { return NAMEOF(prec_names, p); }
const char *gpuplan_optimizer_name(gpuplan_optimizer o) { return NAMEOF(opt_names, o); }
const char *gpuplan_recompute_name(gpuplan_recompute r) { return NAMEOF(rec_names, r); }
const char *gpuplan_dp_mode_name(gpuplan_dp_mode m) { return NAMEOF(dp_names, m); }
const char *gpuplan_schedule_name(gpuplan_schedule s) { return NAMEOF(sched_names, s); }
const char *gpuplan_convention_name(gpuplan_convention c) { return NAMEOF(conv_names, c); }
const char *gpuplan_dtype_name(gpuplan_dtype d) { return NAMEOF(dtype_names, d); }
const char *gpuplan_impl_name(gpuplan_impl i) { return NAMEOF(impl_names, i); }
const char *gpuplan_finetune_name(gpuplan_finetune f) { return NAMEOF(ft_names, f); }
const char *gpuplan_opt_impl_name(gpuplan_opt_impl i) {
  return i == GPUPLAN_OPTIMPL_DEFAULT ? "default" : NAMEOF(optimpl_names, i);
}

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
    {"dtype", dtype_names, 7},    {"impl", impl_names, 3},
    {"finetune", ft_names, 3},    {"optimizer_impl", optimpl_names, 3},
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

/* --- the GPU: capacity as the driver reports it, compute capability -------- */

int gpuplan_gpu_cc(const gpuplan_gpu *g) {
  const char *s;
  int major = 0, minor = 0;
  if (!g || !(s = g->compute_capability) || !*s) return 0;
  while (*s >= '0' && *s <= '9' && major < 100) major = major * 10 + (*s++ - '0');
  if (*s == '.' && s[1] >= '0' && s[1] <= '9') minor = s[1] - '0';
  if (major < 1 || major > 99) return 0;
  return major * 10 + minor;
}

/* The NVML total the catalog's note states ("NVML-reported capacity (...):
 * H100 80GB 81,559 MiB"), in bytes, or 0. */
static uint64_t note_nvml(const char *note) {
  const char *p, *mib, *q;
  double v = 0, scale = 1;
  if (!note || !(p = strstr(note, "NVML-reported capacity"))) return 0;
  if (!(mib = strstr(p, " MiB"))) return 0;
  q = mib;
  while (q > p && (q[-1] == ',' || (q[-1] >= '0' && q[-1] <= '9'))) q--;
  if (q == mib) return 0;
  for (p = mib - 1; p >= q; p--) {
    if (*p == ',') continue;
    v += (*p - '0') * scale;
    scale *= 10;
  }
  return v > 0 && v < 1e9 ? (uint64_t)v * 1048576u : 0;
}

uint64_t gpuplan_gpu_usable_bytes(const gpuplan_gpu *g, const char **source) {
  uint64_t nvml;
  const char *dummy;
  if (!source) source = &dummy;
  if (!g) {
    *source = "none";
    return 0;
  }
  /* A vGPU slice (a node's partition of the card) has its own memory. */
  if (isfinite(g->memory_gb) && g->memory_gb > 0 && (double)g->memory_bytes < 0.99 * g->memory_gb * 1073741824.0) {
    *source = "the vGPU slice's memory (the node's gpu_memory_bytes)";
    return g->memory_bytes;
  }
  nvml = note_nvml(g->note);
  if (nvml && nvml <= g->memory_bytes + g->memory_bytes / 8) {
    *source = "NVML's total for the SKU (nvidia-smi 'memory.total', the catalog note's measured figure)";
    return nvml;
  }
  *source = "the marketed memory (the catalog has no NVML figure for this SKU; give gpu_total)";
  return g->memory_bytes;
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

#define NONNEG(field, v, max)                                                    \
  do {                                                                           \
    if ((v) < 0) return bad(ctx, field, "must not be negative", (long long)(v));  \
    if ((v) > (max)) return bad(ctx, field, "is absurdly large", (long long)(v)); \
  } while (0)

static int is_bf16(gpuplan_precision p) { return p == GPUPLAN_PREC_BF16_MIXED || p == GPUPLAN_PREC_BF16; }

/* The precision this SKU runs: a defaulted bf16 becomes fp16-mixed below sm_80. */
static gpuplan_precision eff_precision(const gpuplan_memory_options *o, const gpuplan_gpu *g) {
  int cc = gpuplan_gpu_cc(g);
  if (o->precision_auto && is_bf16(o->precision) && cc > 0 && cc < 80) return GPUPLAN_PREC_FP16_MIXED;
  return o->precision;
}

static int check_hardware(gpuplan_ctx *ctx, const gpuplan_gpu *g, const gpuplan_memory_options *o) {
  int cc = gpuplan_gpu_cc(g);
  gpuplan_precision p = eff_precision(o, g);
  if (!cc) return GPUPLAN_OK; /* unknown: nothing to check against */
  if (o->workload == GPUPLAN_TRAIN && p == GPUPLAN_PREC_FP8 && cc < 89)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "precision: fp8 needs FP8 tensor cores (compute capability >= 8.9: Ada, Hopper, "
                          "Blackwell); the %s is %d.%d: use bf16-mixed", g->name, cc / 10, cc % 10);
  if (o->workload == GPUPLAN_TRAIN && is_bf16(p) && cc < 80)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "precision: %s needs bf16 tensor cores (compute capability >= 8.0); the %s is %d.%d: "
                          "use fp16-mixed (with a loss scaler)", gpuplan_precision_name(p), g->name, cc / 10,
                          cc % 10);
  if (o->workload == GPUPLAN_TRAIN && o->finetune != GPUPLAN_FT_FULL && o->base_dtype == GPUPLAN_DTYPE_BF16 &&
      cc < 80)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "base_dtype: a bf16 base needs compute capability >= 8.0; the %s is %d.%d: use fp16",
                          g->name, cc / 10, cc % 10);
  if (o->workload == GPUPLAN_INFER && (o->weight_dtype == GPUPLAN_DTYPE_FP8) && cc < 89)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "weight_dtype: fp8 weights need FP8 tensor cores (compute capability >= 8.9); the %s "
                          "is %d.%d: use int8 or int4", g->name, cc / 10, cc % 10);
  return GPUPLAN_OK;
}

static int is_module(const gpuplan_memory_options *o) { return o->module.params > 0; }

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
  if ((unsigned)o->weight_dtype > GPUPLAN_DTYPE_NF4) return bad(ctx, "weight_dtype", "unknown", o->weight_dtype);
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
  /* version-2 fields */
  if ((unsigned)o->impl > GPUPLAN_IMPL_COMPILED) return bad(ctx, "impl", "unknown", o->impl);
  if ((unsigned)o->phase > GPUPLAN_PHASE_FORWARD) return bad(ctx, "phase", "unknown", o->phase);
  if (o->grads_persist < -1 || o->grads_persist > 1) return bad(ctx, "grads_persist", "must be -1, 0 or 1", o->grads_persist);
  if (o->prev_logits < -1 || o->prev_logits > 1) return bad(ctx, "prev_logits", "must be -1, 0 or 1", o->prev_logits);
  if (o->optimizer_impl < GPUPLAN_OPTIMPL_DEFAULT || o->optimizer_impl > GPUPLAN_OPTIMPL_FORLOOP)
    return bad(ctx, "optimizer_impl", "unknown", o->optimizer_impl);
  NONNEG("expert_ffn", o->expert_ffn, 100000000);
  NONNEG("shared_experts", o->shared_experts, 1024);
  NONNEG("shared_expert_ffn", o->shared_expert_ffn, 100000000);
  NONNEG("dense_layers", o->dense_layers, m->layers);
  NONNEG("q_lora_rank", o->q_lora_rank, 1000000);
  NONNEG("kv_lora_rank", o->kv_lora_rank, 1000000);
  NONNEG("qk_rope_dim", o->qk_rope_dim, 100000);
  NONNEG("v_head_dim", o->v_head_dim, 100000);
  NONNEG("decoder_layers", o->decoder_layers, 100000);
  NONNEG("head_labels", o->head_labels, 100000000);
  if (o->qkv_bias < -1 || o->qkv_bias > 1) return bad(ctx, "qkv_bias", "must be -1, 0 or 1", o->qkv_bias);
  if (o->parallel_block < 0 || o->parallel_block > 2)
    return bad(ctx, "parallel_block", "must be 0 (sequential), 1 (one shared norm) or 2 (two norms)",
               o->parallel_block);
  if (!isfinite(o->extra_params) || fabs(o->extra_params) > 1e15)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "extra_params: must be a count below 1e15");
  if (o->decoder_layers > 0 && o->pp > 1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "pp: pipeline parallelism of an encoder-decoder model is not modelled (pp must be 1)");
  if (o->kv_lora_rank > 0 && o->qk_rope_dim < 1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "qk_rope_dim: MLA (kv_lora_rank > 0) needs the RoPE head dimension");
  if (!(o->module.params >= 0) || o->module.params > 1e15 || !(o->module.trainable >= 0) ||
      o->module.trainable > o->module.params + 0.5 || !(o->module.act_bytes >= 0) ||
      !(o->module.fwd_extra_bytes >= 0) || !(o->module.bwd_extra_bytes >= 0) || !(o->module.out_bytes >= 0) ||
      !(o->module.buffer_bytes >= 0) || !(o->module.largest_param >= 0) || !(o->module.in_bytes >= 0) ||
      o->module.act_bytes > 1e15 || o->module.fwd_extra_bytes > 1e15 || o->module.bwd_extra_bytes > 1e15 ||
      o->module.out_bytes > 1e15 || o->module.in_bytes > 1e15 || o->module.buffer_bytes > 1e15)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "module: params, trainable (<= params) and the byte counts must be finite and >= 0");
  if ((unsigned)o->finetune > GPUPLAN_FT_QLORA) return bad(ctx, "finetune", "unknown", o->finetune);
  if (o->finetune != GPUPLAN_FT_FULL) {
    POS("lora_rank", o->lora_rank, 65536);
    if (o->base_dtype != GPUPLAN_DTYPE_BF16 && o->base_dtype != GPUPLAN_DTYPE_FP16 &&
        o->base_dtype != GPUPLAN_DTYPE_INT8 && o->base_dtype != GPUPLAN_DTYPE_NF4 &&
        o->base_dtype != GPUPLAN_DTYPE_FP32)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "base_dtype: a frozen base is bf16, fp16, fp32, int8 or nf4 (got %s)",
                            gpuplan_dtype_name(o->base_dtype));
    if (is_module(o))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "finetune: LoRA of a traced module is not modelled; give its trainable parameters");
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
    if (is_module(o) && (o->tp > 1 || o->pp > 1 || o->cp > 1))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "tp, pp, cp: a traced module is planned data parallel only");
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
  return check_hardware(ctx, g, o);
}

/* --- defaults that depend on the convention -------------------------------- */

int gpuplan__grads_persist(const gpuplan_memory_options *o) {
  if (o->grads_persist >= 0) return o->grads_persist;
  /* DeepSpeed and Megatron keep gradient buffers for the run; PyTorch's
   * optimizers (FSDP, HF Trainer) free them with zero_grad(set_to_none=True). */
  return o->convention == GPUPLAN_CONV_DEEPSPEED || o->convention == GPUPLAN_CONV_MEGATRON;
}

gpuplan_opt_impl gpuplan__opt_impl(const gpuplan_memory_options *o) {
  if (o->optimizer_impl != GPUPLAN_OPTIMPL_DEFAULT) return o->optimizer_impl;
  if (o->optimizer == GPUPLAN_OPT_ADAFACTOR) return GPUPLAN_OPTIMPL_FORLOOP; /* HF Adafactor loops over tensors */
  if (o->optimizer == GPUPLAN_OPT_ADAM8BIT || o->paged_optimizer) return GPUPLAN_OPTIMPL_FUSED; /* bitsandbytes' kernels */
  return o->convention == GPUPLAN_CONV_DEEPSPEED || o->convention == GPUPLAN_CONV_MEGATRON
             ? GPUPLAN_OPTIMPL_FUSED
             : GPUPLAN_OPTIMPL_FOREACH;
}

int gpuplan__prev_logits(const gpuplan_memory_options *o) {
  if (o->prev_logits >= 0) return o->prev_logits;
  return o->impl == GPUPLAN_IMPL_EAGER;
}

/* --- the layer's tensors ----------------------------------------------------- */

typedef struct actx {
  gpuplan__act *a;
  int n;
  double t, rdiv; /* split by t; replicated tensors divide by t only with SP */
} actx;

static void add(actx *x, const char *name, double per_token, int kind) {
  if (!(per_token > 0) || x->n >= GPUPLAN__MAX_ACTS) return;
  x->a[x->n].name = name;
  x->a[x->n].per_token = per_token;
  x->a[x->n].kind = kind;
  x->n++;
}
#define R(v) ((v) / x->rdiv)
#define S(v) ((v) / x->t)

double gpuplan__acts_sum(const gpuplan__act *a, int n, int kind) {
  double s = 0;
  int i;
  for (i = 0; i < n; i++)
    if (a[i].kind == kind) s += a[i].per_token;
  return s;
}

static int mixed(gpuplan_precision p) {
  return p == GPUPLAN_PREC_BF16_MIXED || p == GPUPLAN_PREC_FP16_MIXED || p == GPUPLAN_PREC_FP8;
}

/* Bytes of a GEMM output (ab) and of the residual stream and norms (rb). */
static double act_bytes(const gpuplan_memory_options *o) { return o->precision == GPUPLAN_PREC_FP32 ? 4 : 2; }
/* torch.autocast over fp32 parameters (the HF Trainer's mixed precision):
 * the residual stream and the norms stay fp32, and GEMMs save 16-bit copies
 * of their fp32 inputs.  DeepSpeed, Megatron and FSDP's MixedPrecision run
 * on 16-bit parameters instead: 16-bit activations throughout. */
static int amp_casts(const gpuplan_memory_options *o) {
  return o->impl != GPUPLAN_IMPL_FUSED && o->finetune == GPUPLAN_FT_FULL && mixed(o->precision) &&
         o->convention == GPUPLAN_CONV_HF;
}
static double res_bytes(const gpuplan_memory_options *o) {
  if (o->precision == GPUPLAN_PREC_FP32) return 4;
  return amp_casts(o) ? 4 : 2;
}

static void actx_init(actx *x, gpuplan__act *out, const gpuplan_memory_options *o) {
  x->a = out;
  x->n = 0;
  x->t = (double)o->tp;
  x->rdiv = o->sequence_parallel && o->tp > 1 ? (double)o->tp : 1;
}

/* Korthikanti's tensors, generalised to GQA/SwiGLU/MoE (the fused profile). */
static void fused_layer(actx *x, const shape *sh, const gpuplan_memory_options *o, double s_full, int with_scores,
                        int moe) {
  double h = sh->h, ad = sh->a * sh->d, kvd = sh->kv * sh->d, f = moe ? sh->fe : sh->f;
  double w = o->precision == GPUPLAN_PREC_FP32 ? 2 : 1, mask = o->dropout ? 1 : 0;
  double mlp = (sh->gated ? 6 : 4) * f * (moe ? sh->k : 1);
  if (moe && sh->Es > 0) mlp += (sh->gated ? 6 : 4) * sh->fs * sh->Es;
  add(x, "norm inputs (2 x 2h)", R(w * 4 * h), GPUPLAN__KEEP);
  add(x, "QKV input", R(w * 2 * h), GPUPLAN__KEEP);
  add(x, "fc1 input", R(w * 2 * h), GPUPLAN__KEEP);
  add(x, "dropout masks (attention, MLP)", R(2 * mask * h), GPUPLAN__KEEP);
  add(x, "query", S(w * 2 * ad), GPUPLAN__KEEP);
  add(x, "key and value", S(w * 4 * kvd), GPUPLAN__KEEP);
  add(x, "attention output-projection input", S(w * 2 * ad), GPUPLAN__KEEP);
  add(x, sh->gated ? "MLP gate, up and fc2 input" : "MLP activation input and fc2 input", S(w * mlp), GPUPLAN__KEEP);
  if (with_scores) {
    if (o->flash_attention) add(x, "flash attention log-sum-exp (fp32)", S(4 * sh->a), GPUPLAN__KEEP);
    else add(x, o->dropout ? "softmax output, dropout mask and output" : "softmax output",
             S((o->dropout ? 4 * w + 1 : 2 * w) * sh->a * s_full), GPUPLAN__KEEP);
  }
  if (!o->flash_attention) add(x, "attention scores (temporary)", S(2 * w * sh->a * s_full), GPUPLAN__TEMP);
  add(x, "MLP GEMM output (temporary)", S(2 * w * f * (sh->gated ? 2 : 1)), GPUPLAN__TEMP);
  add(x, "gradients of the layer output and input", R(2 * 2 * w * h), GPUPLAN__BWD);
  if (!o->flash_attention) add(x, "gradients of the softmax", S(2 * 2 * w * sh->a * s_full), GPUPLAN__BWD_ATTN);
  else add(x, "gradients of q, k, v", S(2 * w * (2 * ad + 2 * kvd)), GPUPLAN__BWD_ATTN);
  add(x, "gradients of the MLP intermediates", S(2 * w * f * (sh->gated ? 3 : 2) * (moe ? sh->k : 1)),
      GPUPLAN__BWD_MLP);
}

/* The attention part of an eager or compiled layer. */
static void attn_part(actx *x, const shape *sh, const gpuplan_memory_options *o, double s_full, int with_scores,
                      int cross) {
  double h = sh->h, ab = act_bytes(o), rb = res_bytes(o), a = sh->a;
  double qd = sh->mla ? a * (sh->d + sh->dr) : a * sh->d;
  double kd = sh->mla ? a * (sh->d + sh->dr) : sh->kv * sh->d, vd = sh->mla ? a * sh->dv : sh->kv * sh->d;
  double od = sh->mla ? a * sh->dv : a * sh->d;
  int eager = o->impl == GPUPLAN_IMPL_EAGER, frozen = o->finetune != GPUPLAN_FT_FULL;
  unsigned mm = lora_mods(o);
  int need_in = !frozen || (mm & (GPUPLAN_LORA_Q | GPUPLAN_LORA_K | GPUPLAN_LORA_V));
  /* Eager GQA attention repeats K and V to every head (repeat_kv) before the matmuls. */
  if (eager && !o->flash_attention && !sh->mla && sh->kv < a) kd = vd = a * sh->d;
  if (sh->parallel != 2 || !cross) {
    if (eager && !sh->layernorm && !frozen)
      add(x, cross ? "cross-attention norm: normalised x" : "attention norm: normalised x (for the norm weight's gradient)",
          R(h * rb), GPUPLAN__KEEP);
    /* Under autocast the fp32 norm output feeds only the casts: the 16-bit copies are what is saved. */
    if (need_in && !(eager && amp_casts(o)))
      add(x, cross ? "cross-attention norm output" : "attention norm output (input of q, k, v)",
          R(h * (o->impl == GPUPLAN_IMPL_COMPILED && amp_casts(o) ? 2 : rb)), GPUPLAN__KEEP);
  }
  if (eager && amp_casts(o)) add(x, "16-bit copies of the q, k, v inputs (autocast)", R((sh->mla ? 2 : 3) * h * 2),
                                 GPUPLAN__KEEP);
  if (sh->mla) {
    if (sh->qr > 0) add(x, "query down-projection and its norm", R(2 * sh->qr * ab), GPUPLAN__KEEP);
    add(x, "compressed KV and its norm", R((2 * sh->kvr + sh->dr) * ab), GPUPLAN__KEEP);
  }
  add(x, eager ? "query (after RoPE)" : "query", S(qd * ab), GPUPLAN__KEEP);
  add(x, eager && kd > sh->kv * sh->d && !sh->mla ? "key (repeated to every head)" : "key", S(kd * ab), GPUPLAN__KEEP);
  add(x, eager && vd > sh->kv * sh->d && !sh->mla ? "value (repeated to every head)" : "value", S(vd * ab),
      GPUPLAN__KEEP);
  if (eager) add(x, "query and key before RoPE (temporary)", S((qd + kd) * ab), GPUPLAN__TEMP);
  if (!o->flash_attention) {
    if (with_scores) {
      int amp = amp_casts(o);
      add(x, "attention probabilities (fp32 softmax)", S(4 * a * s_full), GPUPLAN__KEEP);
      if (o->softmax_saves_input)
        add(x, "softmax input, kept by PyTorch <= 1.10 (masked scores)", S((ab == 4 || amp ? 4 : 2) * a * s_full),
            GPUPLAN__KEEP);
      if (o->dropout) {
        add(x, "attention dropout mask", S(a * s_full), GPUPLAN__KEEP);
        /* autocast: the fp32 dropout output feeds only the cast for the matmul */
        if (!amp) add(x, "attention dropout output", S(ab * a * s_full), GPUPLAN__KEEP);
        else add(x, "16-bit copy of the probabilities (matmul input, autocast)", S(2 * a * s_full), GPUPLAN__KEEP);
      } else {
        add(x, ab == 4 ? "softmax numerator exp(x - max)" : "16-bit copy of the probabilities (matmul input)",
            S(ab * a * s_full), GPUPLAN__KEEP);
      }
    }
    add(x, "raw attention scores QK^T (temporary)", S(ab * a * s_full), GPUPLAN__TEMP);
    add(x, "gradients of the attention probabilities and scores (fp32)", S(2 * 4 * a * s_full), GPUPLAN__BWD_ATTN);
  } else {
    add(x, "attention log-sum-exp (fp32)", S(4 * a), GPUPLAN__KEEP);
    add(x, "gradients of q, k, v and the attention output", S((2 * qd + 2 * kd) * ab), GPUPLAN__BWD_ATTN);
  }
  if (!frozen || (mm & GPUPLAN_LORA_O)) add(x, "attention output (input of o_proj)", S(od * ab), GPUPLAN__KEEP);
  if (o->dropout) add(x, "dropout mask after o_proj", R(h), GPUPLAN__KEEP);
  if (sh->parallel == 0 || cross) add(x, cross ? "residual after cross-attention" : "residual after attention",
                                      R(h * rb), GPUPLAN__KEEP);
}

/* The MLP part of an eager or compiled layer. */
static void mlp_part(actx *x, const shape *sh, const gpuplan_memory_options *o, int moe) {
  double h = sh->h, ab = act_bytes(o), rb = res_bytes(o);
  double fk = moe ? sh->fe * sh->k + sh->fs * sh->Es : sh->f;
  int eager = o->impl == GPUPLAN_IMPL_EAGER, frozen = o->finetune != GPUPLAN_FT_FULL;
  unsigned mm = lora_mods(o);
  int need_in = !frozen || (mm & (GPUPLAN_LORA_GATE | GPUPLAN_LORA_UP)), need_down = !frozen || (mm & GPUPLAN_LORA_DOWN);
  if (sh->parallel == 0) {
    if (eager && !sh->layernorm && !frozen) add(x, "MLP norm: normalised x", R(h * rb), GPUPLAN__KEEP);
    if (need_in && !(eager && amp_casts(o)))
      add(x, "MLP norm output (input of the MLP)", R(h * (o->impl == GPUPLAN_IMPL_COMPILED && amp_casts(o) ? 2 : rb)),
          GPUPLAN__KEEP);
  } else if (sh->parallel == 2 && need_in && !(eager && amp_casts(o))) {
    add(x, "MLP norm output (input of the MLP)", R(h * rb), GPUPLAN__KEEP);
  }
  if (eager && amp_casts(o)) add(x, "16-bit copies of the MLP inputs (autocast)", R((sh->gated ? 2 : 1) * h * 2),
                                 GPUPLAN__KEEP);
  if (moe) {
    add(x, "router logits (fp32)", R(4 * sh->E), GPUPLAN__KEEP);
    add(x, "tokens dispatched to their experts (copies)", S(2 * h * sh->k * ab), GPUPLAN__KEEP);
  }
  if (sh->gated) {
    add(x, "MLP gate projection", S(fk * ab), GPUPLAN__KEEP);
    add(x, "MLP up projection", S(fk * ab), GPUPLAN__KEEP);
    if (eager) {
      if (sh->swiglu) {
        add(x, "sigmoid(gate) (x * sigmoid(x), unfused SiLU)", S(fk * ab), GPUPLAN__KEEP);
        add(x, "silu(gate)", S(fk * ab), GPUPLAN__KEEP);
      } else {
        add(x, "gelu(gate)", S(fk * ab), GPUPLAN__KEEP);
      }
    }
    if (need_down) add(x, "gate x up (input of down_proj)", S(fk * ab), GPUPLAN__KEEP);
  } else {
    add(x, "fc1 output (activation input)", S(fk * ab), GPUPLAN__KEEP);
    if (need_down) add(x, "activation output (input of fc2)", S(fk * ab), GPUPLAN__KEEP);
  }
  add(x, "MLP GEMM output (temporary)", S(fk * ab), GPUPLAN__TEMP);
  if (o->dropout) add(x, "dropout mask after the MLP", R(h), GPUPLAN__KEEP);
  add(x, "residual after the MLP (the layer output)", R(h * rb), GPUPLAN__KEEP);
  add(x, "gradients of the layer output and input", R(2 * h * rb), GPUPLAN__BWD);
  add(x, "gradients of the MLP intermediates", S((sh->gated ? 3 : 2) * fk * ab), GPUPLAN__BWD_MLP);
}

/* LoRA's own tensors: each adapter keeps its rank-r intermediate (and a
 * dropout mask with QLoRA's lora_dropout 0.05). */
static void lora_part(actx *x, const shape *sh, const gpuplan_memory_options *o, int moe) {
  unsigned mm = lora_mods(o);
  double r = (double)o->lora_rank, ab = act_bytes(o), nmod = 0, in = 0;
  double f = moe ? sh->fe * sh->k : sh->f;
  if (!mm) return;
  if (mm & GPUPLAN_LORA_Q) nmod++, in += sh->h;
  if (mm & GPUPLAN_LORA_K) nmod++, in += sh->h;
  if (mm & GPUPLAN_LORA_V) nmod++, in += sh->h;
  if (mm & GPUPLAN_LORA_O) nmod++, in += sh->a * sh->d;
  if (mm & GPUPLAN_LORA_GATE && sh->gated) nmod += moe ? sh->k : 1, in += sh->h;
  if (mm & GPUPLAN_LORA_UP) nmod += moe ? sh->k : 1, in += sh->h;
  if (mm & GPUPLAN_LORA_DOWN) nmod += moe ? sh->k : 1, in += f;
  add(x, "LoRA A outputs (rank r, input of B)", R(nmod * r * ab), GPUPLAN__KEEP);
  if (o->finetune == GPUPLAN_FT_QLORA) add(x, "LoRA dropout masks (lora_dropout 0.05)", R(in), GPUPLAN__KEEP);
}

int gpuplan__layer_acts(const gpuplan_model *m, const gpuplan_memory_options *o, int kind, int full,
                        gpuplan__act *out) {
  shape sh;
  actx ax, *x = &ax;
  double s_full = (double)(o->seq_len ? o->seq_len : m->seq_len);
  int with_scores = full || o->recompute == GPUPLAN_RECOMPUTE_NONE, moe = kind == GPUPLAN__LAYER_MOE;
  get_shape(m, o, &sh);
  actx_init(x, out, o);
  if (!full && o->recompute == GPUPLAN_RECOMPUTE_FULL) {
    double keep = (o->impl == GPUPLAN_IMPL_FUSED ? act_bytes(o) : res_bytes(o)) * sh.h;
    add(x, "layer input (checkpoint)", R(keep) * (kind == GPUPLAN__LAYER_DECODER ? 1 : 1), GPUPLAN__KEEP);
    return x->n;
  }
  if (o->impl == GPUPLAN_IMPL_FUSED) {
    fused_layer(x, &sh, o, s_full, with_scores, moe);
    if (kind == GPUPLAN__LAYER_DECODER) { /* cross-attention: another attention's tensors */
      double w = o->precision == GPUPLAN_PREC_FP32 ? 2 : 1;
      add(x, "cross-attention tensors", R(w * 2 * sh.h) + S(w * (4 * sh.a * sh.d + 4 * sh.kv * sh.d)) +
                                             (with_scores && !o->flash_attention ? S(2 * w * sh.a * s_full) : 0),
          GPUPLAN__KEEP);
    }
  } else {
    attn_part(x, &sh, o, s_full, with_scores, 0);
    if (kind == GPUPLAN__LAYER_DECODER) attn_part(x, &sh, o, s_full, with_scores, 1);
    mlp_part(x, &sh, o, moe);
  }
  lora_part(x, &sh, o, moe);
  return x->n;
}

int gpuplan__head_acts(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__act *out) {
  shape sh;
  actx ax, *x = &ax;
  double ab = act_bytes(o), rb = res_bytes(o);
  get_shape(m, o, &sh);
  actx_init(x, out, o);
  if (sh.labels > 0) { /* pooler and classifier: the first token only */
    add(x, "classifier head (first token)", R((sh.h + sh.labels) * 4) / (double)(o->seq_len ? o->seq_len : m->seq_len),
        GPUPLAN__KEEP);
    return x->n;
  }
  if (o->impl == GPUPLAN_IMPL_FUSED) {
    add(x, "final norm / output-projection input", R((o->precision == GPUPLAN_PREC_FP32 ? 4 : 2) * sh.h),
        GPUPLAN__KEEP);
    add(x, "fp32 logits and loss (vocab-parallel cross-entropy)", S(4 * sh.V), GPUPLAN__LOSS);
    return x->n;
  }
  if (!sh.encoder || sh.Ldec > 0) {
    if (o->impl == GPUPLAN_IMPL_EAGER && !sh.layernorm) add(x, "final norm: normalised x", R(sh.h * rb), GPUPLAN__KEEP);
    if (!(amp_casts(o) && o->impl == GPUPLAN_IMPL_EAGER))
      add(x, "final norm output (input of lm_head)", R(sh.h * rb), GPUPLAN__KEEP);
  } else {
    add(x, "MLM transform: dense, GELU, LayerNorm", R(3 * sh.h * ab), GPUPLAN__KEEP);
  }
  if (amp_casts(o) && o->impl == GPUPLAN_IMPL_EAGER) add(x, "16-bit copy of the lm_head input (autocast)", R(2 * sh.h),
                                                          GPUPLAN__KEEP);
  add(x, "logits (lm_head output)", S(sh.V * ab), GPUPLAN__KEEP);
  if (o->impl == GPUPLAN_IMPL_EAGER)
    add(x, ab < 4 ? "cross-entropy: fp32 upcast of the logits" : "cross-entropy: x - max (fp32)", S(4 * sh.V),
        GPUPLAN__LOSS);
  add(x, "cross-entropy: log-softmax (fp32)", S(4 * sh.V), GPUPLAN__LOSS);
  add(x, "the previous step's logits, still referenced by the loop", S(sh.V * ab), GPUPLAN__PREV);
  return x->n;
}

int gpuplan__embed_acts(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__act *out) {
  shape sh;
  actx ax, *x = &ax;
  get_shape(m, o, &sh);
  actx_init(x, out, o);
  x->rdiv = o->sequence_parallel && o->tp > 1 ? (double)o->tp : 1;
  add(x, "input ids (int64)", 8, GPUPLAN__KEEP);
  if (o->impl == GPUPLAN_IMPL_FUSED) {
    if (o->dropout) add(x, "embedding dropout mask", R(sh.h), GPUPLAN__KEEP);
    return x->n;
  }
  if (sh.encoder && sh.Ldec == 0) add(x, "embedding LayerNorm input", R(sh.h * res_bytes(o)), GPUPLAN__KEEP);
  add(x, "embedding output (input of the first layer)", R(sh.h * res_bytes(o)), GPUPLAN__KEEP);
  if (o->dropout) add(x, "embedding dropout mask", R(sh.h), GPUPLAN__KEEP);
  return x->n;
}

#undef R
#undef S

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
  "cuBLAS workspace", "backward working set", "optimizer-step temporaries", "LoRA adapters"};

static double dtype_bytes(gpuplan_dtype d) {
  switch (d) {
  case GPUPLAN_DTYPE_FP32: return 4;
  case GPUPLAN_DTYPE_FP8:
  case GPUPLAN_DTYPE_INT8: return 1;
  case GPUPLAN_DTYPE_INT4:
  case GPUPLAN_DTYPE_NF4: return 0.5;
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

/* Index of stage i's first layer. */
static double stage_first(const gpuplan_model *m, const gpuplan_memory_options *o, int64_t i) {
  double n = 0;
  int64_t j;
  for (j = 0; j < i; j++) n += stage_layers(m, o, j);
  return n;
}

/* Sum of one kind over a list, per token. */
#define SUMK(arr, n, kind) gpuplan__acts_sum(arr, n, kind)

/* Per-token bytes of the layers' lists. */
typedef struct layer_sums {
  double keep, temp, bwd, full; /* kept, largest temporary, working set, the rematerialised layer */
} layer_sums;

static void layer_sums_of(const gpuplan_model *m, const gpuplan_memory_options *o, int kind, layer_sums *ls) {
  gpuplan__act a[GPUPLAN__MAX_ACTS];
  int n = gpuplan__layer_acts(m, o, kind, 0, a), i;
  memset(ls, 0, sizeof *ls);
  ls->keep = SUMK(a, n, GPUPLAN__KEEP);
  for (i = 0; i < n; i++)
    if (a[i].kind == GPUPLAN__TEMP && a[i].per_token > ls->temp) ls->temp = a[i].per_token;
  if (o->recompute == GPUPLAN_RECOMPUTE_FULL) {
    n = gpuplan__layer_acts(m, o, kind, 1, a);
    ls->full = SUMK(a, n, GPUPLAN__KEEP);
  }
  ls->bwd = SUMK(a, n, GPUPLAN__BWD) + fmax(SUMK(a, n, GPUPLAN__BWD_ATTN), SUMK(a, n, GPUPLAN__BWD_MLP));
}

static const char *act_formula(const gpuplan_memory_options *o) {
  if (o->recompute == GPUPLAN_RECOMPUTE_FULL)
    return o->impl == GPUPLAN_IMPL_FUSED
               ? "2sbh per layer (layer input only) x layers x micro-batches in flight [Kor Table 2, full]"
               : "sbh x residual bytes per layer (the checkpointed layer input) x layers x micro-batches in flight";
  switch (o->impl) {
  case GPUPLAN_IMPL_EAGER:
    return o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE
               ? "eager PyTorch, the s^2 scores recomputed: unfused SwiGLU 5 ffn-sized, norm internals, RoPE'd q/k, "
                 "residuals (fp32 under autocast), x layers x in flight [snap]"
               : "eager PyTorch: unfused SwiGLU 5 ffn-sized tensors, 2 score tensors (fp32 softmax), norm internals, "
                 "RoPE'd q/k, residuals; fp32 norms and 16-bit GEMM-input copies under autocast; x layers x in flight [snap]";
  case GPUPLAN_IMPL_COMPILED:
    return "torch.compile (Inductor): 8 hidden-sized + 3 ffn-sized (SwiGLU) + 2 score tensors per layer, x layers x in "
           "flight [snap]";
  default:
    return o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE
               ? "sbh(10 + 24/t) per layer (34sbh/t with SP), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2, selective]"
           : o->flash_attention
               ? "sbh(34 + 4a/h...) per layer, FlashAttention (no s^2), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2]"
               : "sbh(34 + 5as/h) per layer (TP: 10 + 24/t + 5as/(ht)), generalised to GQA/SwiGLU, x layers x in flight [Kor Table 2]";
  }
}

/* Inference of an encoder: no KV cache; each sequence's forward keeps one
 * layer's hidden states and s^2 scores at a time, and the head's output. */
static void encoder_infer(acc *a, const shape *sh, const gpuplan_memory_options *o, double ctxlen, double t) {
  double per_seq = ctxlen * (2 * 2 * sh->h + 3 * 2 * sh->h / t + 2 * 2 * sh->f / t) +
                   ctxlen * sh->a / t * ctxlen * (2 + 4);
  double head = sh->labels > 0 ? sh->labels * 4 : ctxlen * sh->V / t * 4;
  put(a, GPUPLAN_MEM_INFER_ACT, (double)o->batch * (per_seq + head),
      sh->labels > 0
          ? "batch x len x (hidden in/out, q/k/v, MLP of one layer) + batch x heads x len^2 x 6 (scores, fp32 softmax); no KV cache"
          : "batch x len x (one layer's tensors) + batch x heads x len^2 x 6 (scores) + batch x len x V x 4 (MLM logits); no KV cache");
}

/* What every stage shares: the layers' per-token sums (computed once per evaluation). */
typedef struct pre_sums {
  int done;
  layer_sums ld, lm, ldec;
} pre_sums;

static int eval_stage(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_gpu *g,
                      const gpuplan_memory_options *oin, int64_t stage, gpuplan_memory *out, pre_sums *pre) {
  shape sh;
  acc a;
  gpuplan_memory_options oo = *oin;
  const gpuplan_memory_options *o = &oo;
  double t = (double)o->tp, p = (double)o->pp, dp = (double)o->dp, cp = (double)o->cp;
  double ep = (double)o->ep, Ls, first, last, scale = 1, Lfirst, Ldense_stage, Lmoe_stage;
  double p_layer_dense, p_layer_moe_shared, p_layer_expert, p_rank, p_expert_rank, p_stage_extra = 0;
  double wbytes, gbytes, master, optb, nshard_w, nshard_g, nshard_o, nshard_e;
  int conv = o->convention, zero3, frozen = o->finetune != GPUPLAN_FT_FULL;
  int train = o->workload == GPUPLAN_TRAIN, module = is_module(o);
  gpuplan_dp_mode mode = o->dp_mode;

  oo.precision = eff_precision(oin, g);
  memset(out, 0, sizeof *out);
  a.out = out;
  a.overflow = 0;
  get_shape(m, o, &sh);
  if (o->params_override > 0) scale = o->params_override / total_params(&sh);
  Ls = stage_layers(m, o, stage);
  Lfirst = stage_first(m, o, stage);
  Ldense_stage = fmax(0, fmin(Ls, sh.Ld - Lfirst));
  Lmoe_stage = Ls - Ldense_stage;
  first = stage == 0;
  last = stage == o->pp - 1;
  out->stage = stage;
  out->layers = (int64_t)Ls;
  out->params_total = module ? o->module.params : total_params(&sh) * scale;

  /* Parameters this rank holds (before DP sharding).  Attention and MLP
   * matrices are split by t; experts by ep then t; norms are replicated;
   * the embedding is vocab-parallel (/t) on the first stage, the output
   * layer on the last (a second copy when tied and pp > 1, as Megatron).
   * A dense layer and an MoE layer differ; p_layer_* are per layer. */
  p_layer_dense = (attn_params(&sh) / t + layer_norms(&sh) + mlp_params_f(&sh, sh.f) / t) * scale;
  p_layer_moe_shared = (attn_params(&sh) / t + layer_norms(&sh) + sh.h * sh.E + sh.Es * mlp_params_f(&sh, sh.fs) / t) * scale;
  p_layer_expert = sh.E > 1 ? (sh.E / ep) * mlp_params_f(&sh, sh.fe) / t * scale : 0;
  if (first) p_stage_extra += (sh.V * sh.h / t + (sh.learned ? sh.s_pos * sh.h : 0) + sh.extra) * scale;
  if (last) {
    double head = head_params(&sh);
    if (sh.labels <= 0 && !sh.tied) head -= sh.V * sh.h - sh.V * sh.h / t;
    if (sh.labels <= 0 && sh.tied && o->pp > 1) head += sh.V * sh.h / t;
    p_stage_extra += head * scale;
  }
  if (sh.Ldec > 0) p_stage_extra += sh.Ldec * (2 * attn_params(&sh) / t + mlp_params_f(&sh, sh.f) / t + 3 * norm_params(&sh)) * scale;
  p_rank = Ldense_stage * p_layer_dense + Lmoe_stage * p_layer_moe_shared + p_stage_extra;
  p_expert_rank = Lmoe_stage * p_layer_expert;
  if (module) {
    p_rank = o->module.params;
    p_expert_rank = 0;
  }
  out->params_rank = p_rank + p_expert_rank;
  out->trainable_params = out->params_rank;

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
    } else if (o->weight_dtype == GPUPLAN_DTYPE_NF4) {
      wb += 4.0 / 64;
      wf = "params/t x (0.5 + 4/64) bytes: NF4 with an fp32 absmax per 64 [QLoRA]";
    }
    put(&a, GPUPLAN_MEM_WEIGHTS, out->params_rank * wb + (module ? o->module.buffer_bytes : 0), wf);
    ctxlen = o->context_len ? (double)o->context_len
                            : (isfinite(m->max_seq_len) && m->max_seq_len > 0 ? m->max_seq_len
                                                                              : (double)m->seq_len);
    if (module) {
      double b = (double)o->batch;
      put(&a, GPUPLAN_MEM_INFER_ACT,
          b * (o->module.in_bytes + o->module.out_bytes * (gpuplan__prev_logits(o) ? 2 : 1) + o->module.fwd_extra_bytes),
          "batch x (input + output (+ the previous batch's output still referenced) + forward temporaries), as traced");
    } else if (sh.encoder && sh.Ldec == 0) {
      encoder_infer(&a, &sh, o, ctxlen, t);
    } else {
      kvb = dtype_bytes(o->kv_dtype);
      per_tok = sh.mla ? sh.L * (sh.kvr + sh.dr) * kvb : 2 * sh.L * kv_heads_rank * sh.d * kvb;
      if (sh.Ldec > 0) per_tok = 2 * 2 * sh.Ldec * kv_heads_rank * sh.d * kvb; /* self + cross (encoder length = len) */
      out->kv_bytes_per_token = (uint64_t)per_tok;
      if (o->paged) {
        blocks = ceil(ctxlen / (double)o->block_tokens);
        seqs_mem = blocks * (double)o->block_tokens * per_tok;
        put(&a, GPUPLAN_MEM_KV_CACHE, (double)o->batch * seqs_mem,
            sh.mla ? "batch x ceil(len/block) x block x layers x (kv_lora_rank + rope dim) x bytes (MLA's compressed cache, paged)"
                   : "batch x ceil(len/block) x block x 2 x layers x ceil(kv_heads/t) x head_dim x bytes (paged)");
        out->kv_waste_bytes = (uint64_t)((double)o->batch * (seqs_mem - ctxlen * per_tok));
      } else {
        double maxlen = isfinite(m->max_seq_len) && m->max_seq_len > ctxlen ? m->max_seq_len : ctxlen;
        seqs_mem = maxlen * per_tok;
        put(&a, GPUPLAN_MEM_KV_CACHE, (double)o->batch * seqs_mem,
            sh.mla ? "batch x max_len x layers x (kv_lora_rank + rope dim) x bytes (MLA's compressed cache)"
                   : "batch x max_len x 2 x layers x ceil(kv_heads/t) x head_dim x bytes (contiguous reservation)");
        out->kv_waste_bytes = (uint64_t)((double)o->batch * (maxlen - ctxlen) * per_tok);
      }
      /* Prefill workspace for one sequence: hidden states in and out, QKV and
       * the MLP intermediate of one layer at a time, plus last-token logits. */
      put(&a, GPUPLAN_MEM_INFER_ACT,
          ctxlen * 2 * (2 * sh.h + (sh.a * sh.d + 2 * sh.kv * sh.d) / t +
                        (sh.gated ? 3 : 2) * (sh.E > 1 ? sh.fe : sh.f) / t * sh.k) +
              (double)o->batch * sh.V / t * 4,
          "prefill of one sequence, one layer at a time: len x 2 x (2h + qkv/t + mlp/t) + batch x V/t x 4 (fp32 logits)");
    }
  } else {
    double s = (double)(o->seq_len ? o->seq_len : m->seq_len), b = (double)o->micro_batch;
    double mb = (double)(o->microbatches ? o->microbatches : o->pp), inflight, tok;
    double grad_default, train_p, train_e, ad_bytes = 0, lora_p = 0;
    double A = 0, R = 0, BW = 0, E = 0, LG_keep = 0, LG_loss = 0, LG_prev = 0, T_opt = 0, W, Gb, Mb, Ob;
    double base, fwdbwd, step, fwdbwd_first, step_first, mid, end, largest;
    int persist = gpuplan__grads_persist(o), prev = gpuplan__prev_logits(o);
    gpuplan_opt_impl oi = gpuplan__opt_impl(o);

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

    /* LoRA: the adapters are what trains; the base is frozen at base_dtype. */
    if (frozen) {
      double lin = (Ldense_stage * linear_params(&sh, 0) + Lmoe_stage * (linear_params(&sh, 1))) / t * scale;
      double other = p_rank + p_expert_rank - lin, bb = dtype_bytes(o->base_dtype), consts = 0;
      const char *wf;
      gpuplan_dtype bd = o->finetune == GPUPLAN_FT_QLORA ? GPUPLAN_DTYPE_NF4 : o->base_dtype;
      bb = dtype_bytes(bd);
      if (bd == GPUPLAN_DTYPE_NF4) {
        consts = o->double_quant ? 1.0 / 64 + 4.0 / (64 * 256) : 4.0 / 64;
        wf = o->double_quant
                 ? "block linears x (0.5 + 1/64 + 4/16384) bytes: NF4, 8-bit absmax per 64 and fp32 per 256 blocks "
                   "(double quantisation); embeddings, norms and lm_head in 16-bit [QLoRA]"
                 : "block linears x (0.5 + 4/64) bytes: NF4 with an fp32 absmax per 64; the rest in 16-bit [QLoRA]";
      } else if (bd == GPUPLAN_DTYPE_INT8) {
        consts = 4.0 / sh.h;
        wf = "block linears x (1 + 4/in) bytes: LLM.int8 with an fp32 scale per row; the rest in 16-bit";
      } else {
        wf = "params/(t*pp) x base bytes: the frozen base (no gradients, no optimizer states)";
      }
      if (o->precision == GPUPLAN_PREC_FP32 && bd != GPUPLAN_DTYPE_NF4 && bd != GPUPLAN_DTYPE_INT8) bb = 4;
      W = lin * (bb + consts) + other * (o->precision == GPUPLAN_PREC_FP32 ? 4 : 2);
      W /= nshard_w;
      put(&a, GPUPLAN_MEM_WEIGHTS, W, wf);
      lora_p = (Ldense_stage * lora_layer_params(&sh, o, 0) + Lmoe_stage * lora_layer_params(&sh, o, 1)) / t;
      /* PEFT keeps adapters in fp32 (autocast_adapter_dtype); the QLoRA recipe casts them to bf16. */
      ad_bytes = o->finetune == GPUPLAN_FT_QLORA && o->precision != GPUPLAN_PREC_FP32 ? 2 : 4;
      put(&a, GPUPLAN_MEM_ADAPTERS, lora_p * ad_bytes,
          o->finetune == GPUPLAN_FT_QLORA ? "r x (in + out) per adapted linear x 2 bytes (bf16 adapters, the QLoRA recipe)"
                                          : "r x (in + out) per adapted linear x 4 bytes (PEFT keeps adapters in fp32)");
      train_p = lora_p;
      train_e = 0;
      gbytes = ad_bytes;
      master = 0;
      out->trainable_params = lora_p;
    } else {
      double wb = wbytes, wsh = p_rank / nshard_w + p_expert_rank / (nshard_w > 1 ? nshard_w / nshard_e : 1);
      const char *wf;
      if (conv == GPUPLAN_CONV_FSDP && master > 0 && zero3) wb = 0; /* fp32 shards are the master copy */
      if (o->offload_params && zero3) wb = 0;
      wf = module ? "params x weight bytes (+ buffers), as traced"
           : nshard_w > 1 ? "params/(t*pp) x weight bytes / N_shard [ZeRO-3 P_p]"
                          : "params/(t*pp) x weight bytes (2 for 16-bit, 4 fp32, 3 fp8 = bf16 + fp8 cache)";
      if (conv == GPUPLAN_CONV_HF && master > 0)
        wf = "params x 2: autocast's 16-bit copies of the fp32 weights (the fp32 weights are under master) [HF]";
      put(&a, GPUPLAN_MEM_WEIGHTS, wsh * wb + (module ? o->module.buffer_bytes : 0), wf);
      if (o->offload_params && zero3) out->host_bytes += (uint64_t)(wsh * wbytes);
      train_p = p_rank;
      train_e = p_expert_rank;
      if (module && o->module.trainable > 0) train_p = o->module.trainable;
      out->trainable_params = train_p + train_e;
    }
    {
      double pw = train_p, pe = train_e;
      double gsh = pw / nshard_g + pe / (nshard_g > 1 ? nshard_g / nshard_e : 1);
      double osh = pw / nshard_o + pe / (nshard_o > 1 ? nshard_o / nshard_e : 1);
      const char *gf, *mf, *of;
      gf = frozen ? "adapter params x adapter bytes (only the adapters get gradients)"
           : nshard_g > 1 ? "params/(t*pp) x grad bytes / N_shard [ZeRO-2 P_g]"
                          : "params/(t*pp) x grad bytes (16-bit [ZeRO], fp32 main grads [Megatron/HF/FSDP])";
      mf = nshard_o > 1 ? "params/(t*pp) x 4 / N_shard [ZeRO-1 P_os]" : "params/(t*pp) x 4 (fp32 master)";
      put(&a, GPUPLAN_MEM_GRADIENTS, gsh * gbytes, gf);
      if (conv == GPUPLAN_CONV_MEGATRON && mode == GPUPLAN_DP_ZERO1 && !frozen)
        put(&a, GPUPLAN_MEM_GRADIENTS, (pw + pe) * gbytes,
            "params/(t*pp) x 4: the distributed optimizer keeps the full fp32 grad buffer [Meg 6 + 12/DP]");
      if (o->offload_optimizer) {
        put(&a, GPUPLAN_MEM_MASTER, 0, "");
        out->host_bytes += (uint64_t)(osh * master);
      } else {
        put(&a, GPUPLAN_MEM_MASTER, osh * master, mf);
      }
      if (optb >= 0) {
        of = frozen ? "adapter params x K (Adam 8, 8-bit Adam 2): states for the adapters only"
             : nshard_o > 1 ? "params/(t*pp) x K / N_shard (K: Adam 8, momentum 4, 8-bit Adam 2) [ZeRO P_os]"
                            : "params/(t*pp) x K (Adam 8, momentum 4, 8-bit Adam 2, SGD 0)";
        if (o->offload_optimizer || o->paged_optimizer) out->host_bytes += (uint64_t)(osh * optb);
        else put(&a, GPUPLAN_MEM_OPTIMIZER, osh * optb, of);
      } else {
        double rc = module ? 2 * sqrt(osh) * 4
                           : Ls * ((sh.h + (sh.a + 2 * sh.kv) * sh.d / t) + (sh.a * sh.d / t + sh.h) +
                                   sh.E / ep * (sh.swiglu ? 3 : 2) * (sh.h + sh.fe / t));
        if (!module) {
          if (first) rc += sh.V / t + sh.h;
          rc *= 4.0 / nshard_o;
        }
        if (frozen) rc = 2 * sqrt(osh) * 4;
        if (o->offload_optimizer) out->host_bytes += (uint64_t)rc;
        else put(&a, GPUPLAN_MEM_OPTIMIZER, rc,
                 "4 bytes x (rows + cols) of every weight matrix (Adafactor factored second moment)");
      }

      /* Optimizer-step temporaries.  foreach AdamW: _foreach_sqrt(exp_avg_sq)
       * returns a state-sized tensor list; the for-loop path and HF's
       * Adafactor allocate a few tensors the size of the largest parameter;
       * fused kernels none.  clip_grad_norm_ and GradScaler.unscale_ work in
       * place (per-tensor norms only). */
      largest = module ? o->module.largest_param
                       : fmax(fmax(sh.V * sh.h / t, sh.h * fmax(sh.f, sh.fe) / t), sh.h * sh.a * sh.d / t);
      if (frozen) largest = sh.h * (double)o->lora_rank * 4;
      if (!o->offload_optimizer && optb != 0) {
        double sb = optb == 2 ? 1 : 4; /* state element bytes */
        if (oi == GPUPLAN_OPTIMPL_FOREACH && o->optimizer != GPUPLAN_OPT_SGD)
          T_opt = osh * sb * (o->optimizer == GPUPLAN_OPT_ADAFACTOR ? 0 : 1);
        else if (oi == GPUPLAN_OPTIMPL_FORLOOP)
          T_opt = 2 * 4 * largest;
        if (o->optimizer == GPUPLAN_OPT_ADAFACTOR) T_opt = 2 * 4 * largest;
      }
      put(&a, GPUPLAN_MEM_OPT_STEP, T_opt,
          oi == GPUPLAN_OPTIMPL_FORLOOP || o->optimizer == GPUPLAN_OPT_ADAFACTOR
              ? "2 x 4 bytes x the largest parameter tensor (for-loop optimizer: denominator and update)"
              : "trainable params/shard x 4 bytes: foreach AdamW's _foreach_sqrt(exp_avg_sq) tensor list (torch.optim default on CUDA)");

      /* ZeRO-3/FSDP: one layer (the unit) gathered unsharded in compute
       * precision, plus `prefetch` more, plus its unsharded gradient for
       * the reduce-scatter. */
      if (zero3 && nshard_w > 1 && !module) {
        double unit = fmax(p_layer_dense, p_layer_moe_shared + p_layer_expert);
        if (Lmoe_stage == 0) unit = p_layer_dense;
        put(&a, GPUPLAN_MEM_GATHER,
            unit * ((wbytes > 2 ? 2 : wbytes) * (1 + (double)o->prefetch) + (frozen ? 0 : gbytes)),
            "largest unit (one layer) x (16-bit bytes x (1 + prefetch) + grad bytes)");
      }
      if (mode == GPUPLAN_DP_FSDP_GRAD_OP && nshard_g > 1)
        put(&a, GPUPLAN_MEM_GATHER, (p_rank + p_expert_rank) * 2,
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
    if (module) {
      A = o->module.act_bytes * b * inflight;
      put(&a, GPUPLAN_MEM_ACTIVATIONS, A,
          "tensors autograd saves per sample (saved-tensor hooks on the traced module) x micro-batch");
      E = o->module.in_bytes * b;
      put(&a, GPUPLAN_MEM_EMBEDDING_ACT, E, "the input batch, as traced");
      LG_keep = o->module.out_bytes * b;
      LG_prev = prev ? o->module.out_bytes * b : 0;
      put(&a, GPUPLAN_MEM_LOGITS, LG_keep + LG_prev,
          prev ? "outputs and loss per sample x micro-batch, and the previous step's still referenced"
               : "outputs and loss per sample x micro-batch");
      BW = (o->module.bwd_extra_bytes + 0) * b;
      put(&a, GPUPLAN_MEM_BACKWARD, fmax(BW, o->module.fwd_extra_bytes * b),
          "the most bytes backward adds above what is still saved (activation gradients), or forward's temporaries, per sample as traced");
      BW = fmax(BW, o->module.fwd_extra_bytes * b);
    } else {
      gpuplan__act ha[GPUPLAN__MAX_ACTS], ea[GPUPLAN__MAX_ACTS];
      int nh, ne;
      double Lact_dense = Ldense_stage, Lact_moe = Lmoe_stage;
      layer_sums ld, lm, ldec;
      if (!pre->done) {
        memset(pre, 0, sizeof *pre);
        if (sh.Ld > 0) layer_sums_of(m, o, GPUPLAN__LAYER_DENSE, &pre->ld);
        if (sh.L - sh.Ld > 0) layer_sums_of(m, o, GPUPLAN__LAYER_MOE, &pre->lm);
        if (sh.Ldec > 0) layer_sums_of(m, o, GPUPLAN__LAYER_DECODER, &pre->ldec);
        pre->done = 1;
      }
      ld = pre->ld;
      lm = pre->lm;
      ldec = pre->ldec;
      A = (Lact_dense * ld.keep + Lact_moe * lm.keep + sh.Ldec * ldec.keep) * tok * inflight;
      put(&a, GPUPLAN_MEM_ACTIVATIONS, A, act_formula(o));
      if (o->recompute == GPUPLAN_RECOMPUTE_FULL) {
        R = fmax(fmax(Lact_dense > 0 ? ld.full : 0, Lact_moe > 0 ? lm.full : 0), ldec.full) * tok;
        put(&a, GPUPLAN_MEM_RECOMPUTE, R, o->impl == GPUPLAN_IMPL_FUSED
                                              ? "one layer's activations, rematerialised in backward [Kor]"
                                              : "one layer's activations as the implementation keeps them, rematerialised in backward");
      }
      BW = fmax(fmax(Lact_dense > 0 ? ld.bwd : 0, Lact_moe > 0 ? lm.bwd : 0), ldec.bwd) * tok;
      if (frozen && o->finetune == GPUPLAN_FT_QLORA)
        BW += 2 * sh.h * fmax(sh.f, sh.fe) / t; /* one weight dequantised to bf16 */
      if (persist && !frozen && (first || last)) BW = fmax(BW, sh.V * sh.h / t * gbytes); /* embedding grad accumulation */
      put(&a, GPUPLAN_MEM_BACKWARD, BW,
          frozen && o->finetune == GPUPLAN_FT_QLORA
              ? "one layer's activation gradients (attention or MLP part) + one weight dequantised from NF4 to bf16"
              : "one layer's activation gradients: 2 hidden-sized + the attention part (fp32 score gradients, or dq/dk/dv) or the MLP part, whichever is larger");
      if (first) {
        ne = gpuplan__embed_acts(m, o, ea);
        E = SUMK(ea, ne, GPUPLAN__KEEP) * tok * inflight;
        put(&a, GPUPLAN_MEM_EMBEDDING_ACT, E,
            o->impl == GPUPLAN_IMPL_FUSED ? "8sb (int64 ids) + sbh (embedding dropout mask) per micro-batch in flight [Kor/Meg]"
                                          : "8sb (int64 ids) + the embedding output (and LayerNorm input, dropout mask) per micro-batch in flight");
      }
      if (last) {
        nh = gpuplan__head_acts(m, o, ha);
        LG_keep = SUMK(ha, nh, GPUPLAN__KEEP) * tok;
        LG_loss = SUMK(ha, nh, GPUPLAN__LOSS) * tok;
        LG_prev = prev && o->phase != GPUPLAN_PHASE_FIRST ? SUMK(ha, nh, GPUPLAN__PREV) * tok : 0;
        if (o->phase == GPUPLAN_PHASE_FORWARD) LG_loss = 0; /* forward only: no loss */
        put(&a, GPUPLAN_MEM_LOGITS, LG_keep + LG_loss + LG_prev,
            o->impl == GPUPLAN_IMPL_FUSED
                ? "2sbh (final norm/projection input) + 4sbV/t (fp32 logits and loss) [Kor/Meg]"
            : prev ? "final norm, logits (sbV), 2 fp32 cross-entropy tensors (2 x 4sbV) and the previous step's logits "
                     "(sbV), all alive at the loss [snap]"
                   : "final norm, logits (sbV) and the fp32 cross-entropy tensors (4sbV each)");
      }
    }
    if (sh.E > 1 && ep > 1 && !module)
      put(&a, GPUPLAN_MEM_MOE_A2A, 2 * 2 * tok * sh.k * sh.h,
          "2 (dispatch + combine) x tokens x top_k x h x 2 bytes");

    /* Fixed costs come below; the phases of the step use what is known now. */
    W = (double)out->item[GPUPLAN_MEM_WEIGHTS].bytes + (double)out->item[GPUPLAN_MEM_ADAPTERS].bytes;
    Gb = (double)out->item[GPUPLAN_MEM_GRADIENTS].bytes;
    Mb = (double)out->item[GPUPLAN_MEM_MASTER].bytes;
    Ob = (double)out->item[GPUPLAN_MEM_OPTIMIZER].bytes;
    base = W + Mb + Ob + (double)out->item[GPUPLAN_MEM_GATHER].bytes + (double)out->item[GPUPLAN_MEM_BUCKETS].bytes +
           (double)out->item[GPUPLAN_MEM_MOE_A2A].bytes;
    /* Forward and backward: at the loss (activations, logits and loss), in
     * the top layer's backward (the loss freed, one layer's working set and
     * recompute), at the end of backward (every gradient). */
    mid = A + LG_prev + R + BW + (persist ? 0 : Gb / fmax(Ls, 1) + (last && !module ? sh.V * sh.h / t * gbytes : 0));
    end = (persist ? 0 : Gb) + LG_prev + BW;
    fwdbwd = base + (persist ? Gb : 0) + E + fmax(A + LG_keep + LG_loss + LG_prev, fmax(mid, end));
    step = base + Gb + LG_prev + (double)out->item[GPUPLAN_MEM_OPT_STEP].bytes;
    /* The first step: optimizer states appear inside step(), after the
     * activations are freed; no previous logits. */
    fwdbwd_first = fwdbwd - Ob - LG_prev;
    step_first = step - LG_prev;
    out->fwdbwd_bytes = (uint64_t)fwdbwd;
    out->step_bytes = (uint64_t)step;
    out->steady_bytes = (uint64_t)fmax(fwdbwd, step);
    out->first_step_bytes = (uint64_t)fmax(fwdbwd_first, step_first);
    if (o->phase == GPUPLAN_PHASE_FIRST) {
      out->fwdbwd_bytes = (uint64_t)fwdbwd_first;
      out->step_bytes = (uint64_t)step_first;
    } else if (o->phase == GPUPLAN_PHASE_FORWARD) { /* forward only, the graph kept (a profiling run) */
      /* A loop of forwards: the previous iteration's output (and, for a
       * module, its input and graph) is alive until the new output exists. */
      double prev_fwd = module && prev ? E + A + LG_keep : LG_prev;
      out->fwdbwd_bytes = (uint64_t)(base + (persist ? Gb : 0) + E + A + LG_keep + prev_fwd);
      out->step_bytes = 0;
    }
    out->peak_phase = out->step_bytes > out->fwdbwd_bytes ? "optimizer step" : "forward/backward";
  }

  /* Fixed costs. */
  {
    double gpus = t * p * dp * cp;
    put(&a, GPUPLAN_MEM_CONTEXT, o->context_bytes >= 0 ? (double)o->context_bytes : (double)g->context_bytes,
        o->context_bytes >= 0 ? "given" : "catalog context_bytes for the SKU (V100 measured 1343 MiB, formulas.md B.5)");
    put(&a, GPUPLAN_MEM_NCCL,
        o->nccl_bytes >= 0 ? (double)o->nccl_bytes : (gpus > 1 ? 256 * MiB : 0),
        o->nccl_bytes >= 0 ? "given" : "NCCL_BUFFSIZE 4 MiB x 2 (send, recv) x 32 channels (default estimate; override)");
    /* One workspace per cuBLAS handle and stream, from the caching
     * allocator at the handle's first GEMM (since 1.13, pytorch#83461);
     * handles are per thread, and backward runs on the autograd engine's
     * device thread: training keeps two.  Default size per handle
     * (aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize):
     * 32 MiB (:4096:8) on compute capability 9.x, 10.x and 12.x, else
     * :4096:2:16:8 = 8,519,680 bytes. */
    int cc = gpuplan_gpu_cc(g), big = cc >= 90 && cc < 110 ? 1 : cc >= 120 && cc < 130;
    double handles = o->workload == GPUPLAN_TRAIN ? 2 : 1;
    put(&a, GPUPLAN_MEM_WORKSPACE,
        o->workspace_bytes >= 0 ? (double)o->workspace_bytes : handles * (big ? 32 * MiB : 8519680.0),
        o->workspace_bytes >= 0 ? "given"
        : big ? (handles > 1 ? "cuBLAS workspaces, 2 x 32 MiB (CUBLAS_WORKSPACE_CONFIG :4096:8 on sm 9.x/10.x/12.x): "
                               "forward's handle and the autograd thread's, from the caching allocator at each one's first GEMM"
                             : "cuBLAS workspace, 32 MiB (CUBLAS_WORKSPACE_CONFIG :4096:8 on sm 9.x/10.x/12.x), from the "
                               "caching allocator at the first GEMM")
        : (handles > 1 ? "cuBLAS workspaces, 2 x 8.125 MiB (CUBLAS_WORKSPACE_CONFIG :4096:2:16:8): forward's handle and "
                         "the autograd thread's, from the caching allocator at each one's first GEMM"
                       : "cuBLAS workspace, 8.125 MiB (CUBLAS_WORKSPACE_CONFIG :4096:2:16:8), from the caching allocator "
                         "at the first GEMM"));
  }

  if (a.overflow)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "sizes: the memory of this configuration overflows 64 bits "
                          "(check micro_batch, seq_len, batch and context_len)");
  {
    int c;
    double sum = 0, fixed = (double)out->item[GPUPLAN_MEM_CONTEXT].bytes + (double)out->item[GPUPLAN_MEM_NCCL].bytes +
                            (double)out->item[GPUPLAN_MEM_WORKSPACE].bytes;
    for (c = 0; c < GPUPLAN_MEM_COUNT; c++) {
      out->item[c].name = comp_names[c];
      if (!out->item[c].formula) out->item[c].formula = "";
      sum += (double)out->item[c].bytes;
    }
    if (sum > LIMIT)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "sizes: the total overflows 64 bits");
    out->sum_bytes = (uint64_t)sum;
    if (train) {
      out->fwdbwd_bytes += (uint64_t)fixed;
      if (out->step_bytes) out->step_bytes += (uint64_t)fixed;
      out->steady_bytes += (uint64_t)fixed;
      out->first_step_bytes += (uint64_t)fixed;
      out->total = out->fwdbwd_bytes > out->step_bytes ? out->fwdbwd_bytes : out->step_bytes;
    } else {
      out->total = out->sum_bytes;
      out->peak_phase = "inference";
    }
    out->allocated_bytes = out->total - out->item[GPUPLAN_MEM_CONTEXT].bytes - out->item[GPUPLAN_MEM_NCCL].bytes;
  }
  return GPUPLAN_OK;
}

uint64_t gpuplan__gpu_total(const gpuplan_gpu *g, const gpuplan_memory_options *o, const char **source) {
  const char *dummy;
  if (!source) source = &dummy;
  if (o && o->gpu_total_bytes) {
    *source = "given (gpu_total)";
    return o->gpu_total_bytes;
  }
  return gpuplan_gpu_usable_bytes(g, source);
}

static void finish(const gpuplan_gpu *g, const gpuplan_memory_options *o, gpuplan_memory *out) {
  const char *src;
  uint64_t cap = gpuplan__gpu_total(g, o, &src);
  out->capacity = cap;
  out->capacity_marketed = g->memory_bytes;
  out->capacity_source = src;
  out->headroom = (int64_t)out->capacity - (int64_t)out->total;
  out->fits = out->total <= out->capacity && (double)out->headroom >= AT_LIMIT * (double)out->capacity;
  out->at_limit = out->total <= out->capacity && !out->fits;
  out->verdict = out->fits ? "fits" : out->at_limit ? "at the limit" : "does not fit";
  if (o->workload == GPUPLAN_INFER) {
    uint64_t fixed = out->total - out->item[GPUPLAN_MEM_KV_CACHE].bytes;
    double per_seq = o->batch > 0 ? (double)out->item[GPUPLAN_MEM_KV_CACHE].bytes / (double)o->batch : 0;
    if (per_seq <= 0 && o->batch > 0) { /* an encoder: sequences limited by their working set */
      fixed = out->total - out->item[GPUPLAN_MEM_INFER_ACT].bytes;
      per_seq = (double)out->item[GPUPLAN_MEM_INFER_ACT].bytes / (double)o->batch;
    }
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
  pre_sums pre;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!model || !gpu || !out)
    return gpuplan__error(ctx, GPUPLAN_EMISUSE, "memory: model, gpu and out must not be NULL");
  GPUPLAN_TRY(validate(ctx, model, gpu, o));
  pre.done = 0;
  if (stage != GPUPLAN_STAGE_WORST && (stage < 0 || stage >= o->pp))
    return bad(ctx, "stage", "must be -1 (worst) or 0..pp-1", (long long)stage);
  if (stage == GPUPLAN_STAGE_WORST) {
    /* First and last stages are the candidates (activations in flight vs
     * the output layer and logits); an uneven split or dense/MoE layers
     * can make any stage the largest, so then look at all of them. */
    gpuplan_memory tmp;
    int64_t i, n = o->pp;
    int all = o->first_stage_layers || o->last_stage_layers || (model->experts > 1 && o->dense_layers > 0);
    rc = eval_stage(ctx, model, gpu, o, 0, out, &pre);
    for (i = 1; rc == GPUPLAN_OK && i < n; i++) {
      if (!all && i != n - 1 && i != 1) continue;
      rc = eval_stage(ctx, model, gpu, o, i, &tmp, &pre);
      if (rc == GPUPLAN_OK && tmp.total > out->total) *out = tmp;
    }
  } else {
    rc = eval_stage(ctx, model, gpu, o, stage, out, &pre);
  }
  if (rc != GPUPLAN_OK) return rc;
  finish(gpu, o, out);
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
