/*
 * serve_validate.c: published serving measurements against the serving
 * model (plan/serve_int.h): every row of a CSV in the columns of
 * data/reference/serving_runs_calibration.csv (serving_runs_README.md)
 * rebuilt as it was run and predicted, scored per metric (throughput,
 * TTFT, ITL/TPOT, end-to-end latency, engine memory) with the median, p90
 * and worst |error|, overall, by engine and by GPU.
 *
 * "As it was run": the model's shape from the row's config columns; the
 * engine and its version from `framework`; the GPU through a table of the
 * names sources use (each mapping that is an assumption says so); the
 * lengths (ShareGPT rows: the means stated in the notes, exponential
 * lengths); the engine settings the notes state as name=value
 * (gpu_memory_utilization, max_model_len, max_tokens, tokens per block,
 * total_gpu_memory, --num-scheduler-steps, ...).  A row is skipped only
 * when the model cannot be built for it (a GPU the catalog lacks, a load
 * it does not describe), and the reason is listed.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc/doc_int.h"
#include "plan/serve_int.h"

#define GiB 1073741824.0
#define MAXF 48
#define MAX_ROWS 20000

/* --- CSV ---------------------------------------------------------------------------- */

/* Split one record in place (RFC 4180 quoting); returns the field count. */
static int csv_next(char **pp, char **f) {
  char *p = *pp, *w;
  int n = 0;
  if (!*p) return 0;
  for (;;) {
    char *start;
    if (n < MAXF) f[n] = p;
    start = w = p;
    if (*p == '"') {
      p++;
      for (;;) {
        if (!*p) break;
        if (*p == '"') {
          if (p[1] == '"') {
            *w++ = '"';
            p += 2;
            continue;
          }
          p++;
          break;
        }
        *w++ = *p++;
      }
      while (*p && *p != ',' && *p != '\n' && *p != '\r') p++;
    } else {
      while (*p && *p != ',' && *p != '\n' && *p != '\r') *w++ = *p++;
    }
    (void)start;
    if (n < MAXF) n++;
    if (*p == ',') {
      *w = 0;
      p++;
      continue;
    }
    if (*p == '\r') p++;
    if (*p == '\n') p++;
    *w = 0;
    break;
  }
  *pp = p;
  return n;
}

static int read_all(gpuplan_ctx *ctx, const char *path, char **out) {
  FILE *fp = fopen(path, "rb");
  long len;
  char *buf;
  *out = NULL;
  if (!fp) return gpuplan__error(ctx, errno == ENOENT ? GPUPLAN_ENOTFOUND : GPUPLAN_EIO, "validate: %s: %s", path,
                                 strerror(errno));
  if (fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET)) {
    fclose(fp);
    return gpuplan__error(ctx, GPUPLAN_EIO, "validate: %s: cannot read", path);
  }
  if (len > 64L * 1024 * 1024) {
    fclose(fp);
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "validate: %s: larger than 64 MiB", path);
  }
  buf = gpuplan__malloc(ctx, (size_t)len + 1);
  if (!buf) {
    fclose(fp);
    return gpuplan__nomem(ctx);
  }
  if (fread(buf, 1, (size_t)len, fp) != (size_t)len) {
    fclose(fp);
    gpuplan__free(ctx, buf);
    return gpuplan__error(ctx, GPUPLAN_EIO, "validate: %s: short read", path);
  }
  fclose(fp);
  buf[len] = 0;
  *out = buf;
  return GPUPLAN_OK;
}

enum {
  C_ID, C_SOURCE, C_MODEL, C_PARAMS, C_LAYERS, C_HIDDEN, C_HEADS, C_KVH, C_FFN, C_VOCAB, C_EXPERTS, C_TOPK, C_GPU,
  C_GPUS, C_TP, C_PP, C_EP, C_FRAMEWORK, C_WPREC, C_KVPREC, C_IN, C_OUT, C_LOAD, C_METRIC, C_VALUE, C_PERGPU, C_NOTES,
  C_NCOLS
};
static const char *const colnames[C_NCOLS] = {
  "id", "source_short", "model", "params_b", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
  "moe_experts", "moe_topk", "gpu_type", "gpu_count", "tp", "pp", "ep", "framework", "weight_precision",
  "kv_precision", "input_len", "output_len", "concurrency_or_batch", "metric", "value", "per_gpu", "notes"};

/* --- the row as it was run --------------------------------------------------------------- */

/* Source GPU names, most specific first; assumption set where the name leaves a choice. */
static const struct {
  const char *pattern, *gpu, *assumption;
} gpu_map[] = {
  {"rtx pro 6000", "rtx-pro-6000-server", NULL},
  {"3090", "rtx-3090", NULL},
  {"4090", "rtx-4090", NULL},
  {"gb200", "gb200", NULL},
  {"b200", "b200", NULL},
  {"h100 pcie", "h100-pcie-80gb", NULL},
  {"h100", "h100-sxm5-80gb", NULL},
  {"h200", "h200-sxm-141gb", NULL},
  {"l40s", "l40s", NULL},
  {"a10g", "a10g", NULL},
  {"a100-pcie", "a100-pcie-80gb", NULL},
  {"a100 (memory size/form factor not stated)", "a100-sxm4-80gb",
   "A100 of unstated form: the SXM4 80GB the TensorRT-LLM perf pages use"},
  {"a100 80gb (form factor not stated)", "a100-sxm4-80gb", "A100 80GB of unstated form: SXM4"},
  {"a100", "a100-sxm4-80gb", NULL},
  {"80gb class", "h100-sxm5-80gb", "an unnamed 80 GB-class GPU: H100 SXM 80GB"},
  {"l4 ", "l4", NULL},
  {"t4", "t4", NULL},
};

static int ci_contains(const char *hay, const char *needle) {
  size_t n = strlen(needle), i;
  for (; *hay; hay++) {
    for (i = 0; i < n && hay[i] && tolower((unsigned char)hay[i]) == needle[i]; i++) {}
    if (i == n) return 1;
  }
  return 0;
}

static double num(const char *s) {
  char *end;
  double v;
  if (!s || !*s) return NAN;
  v = strtod(s, &end);
  return end == s ? NAN : v;
}

/* A number after one of the keys in the notes ("key=V", "key V", "--key V"). */
static double note_num(const char *notes, const char *key) {
  const char *p = notes;
  size_t n = strlen(key);
  while ((p = strstr(p, key)) != NULL) {
    const char *q = p + n;
    char *end;
    double v;
    while (*q == '=' || *q == ' ' || *q == '(' || *q == ':') q++;
    v = strtod(q, &end);
    if (end != q && isfinite(v)) return v;
    p += n;
  }
  return NAN;
}

/* The engine and its version from the framework column: the first
 * "N.N[.N]" with N < 100 (years and container tags are skipped). */
static int engine_of(const char *fw, gpuplan__engine *e, int ver[3]) {
  const char *p;
  ver[0] = ver[1] = ver[2] = 0;
  if (ci_contains(fw, "tensorrt")) *e = GPUPLAN__ENG_TRTLLM;
  else if (ci_contains(fw, "sglang")) *e = GPUPLAN__ENG_SGLANG;
  else if (ci_contains(fw, "vllm")) *e = GPUPLAN__ENG_VLLM;
  else if (ci_contains(fw, "tgi") || ci_contains(fw, "text-generation")) *e = GPUPLAN__ENG_TGI;
  else return 0;
  for (p = fw; *p; p++) {
    char *end;
    long a, b;
    if (!isdigit((unsigned char)*p) || (p > fw && isdigit((unsigned char)p[-1]))) continue;
    a = strtol(p, &end, 10);
    if (*end != '.' || !isdigit((unsigned char)end[1]) || a >= 100) continue;
    b = strtol(end + 1, &end, 10);
    ver[0] = (int)a;
    ver[1] = (int)b;
    if (*end == '.' && isdigit((unsigned char)end[1])) ver[2] = (int)strtol(end + 1, &end, 10);
    break;
  }
  if (*e == GPUPLAN__ENG_VLLM && strstr(fw, "V1") && ver[0] == 0 && ver[1] < 8) {
    ver[1] = 8; /* the V1 engine's rules */
    ver[2] = 0;
  }
  if (!ver[0] && !ver[1] && !ver[2]) ver[1] = 1; /* stated but unversioned: not "latest" */
  return 1;
}

static gpuplan__wscheme scheme_of(const char *s, int *known) {
  *known = 1;
  if (ci_contains(s, "nvfp4") || ci_contains(s, "fp4")) return GPUPLAN__W_NVFP4;
  if (ci_contains(s, "fp8")) return GPUPLAN__W_FP8;
  if (ci_contains(s, "w8a8") || ci_contains(s, "int8")) return GPUPLAN__W_INT8;
  if (ci_contains(s, "awq")) return GPUPLAN__W_AWQ;
  if (ci_contains(s, "gptq") || ci_contains(s, "int4")) return GPUPLAN__W_GPTQ;
  if (ci_contains(s, "bf16")) return GPUPLAN__W_BF16;
  if (ci_contains(s, "fp16")) return GPUPLAN__W_FP16;
  *known = 0;
  return GPUPLAN__W_FP16;
}

/* The model's longest context when the row does not state it. */
static double default_max_len(const char *model) {
  if (ci_contains(model, "llama-2") || ci_contains(model, "llama2")) return 4096;
  if (ci_contains(model, "llama-3.1") || ci_contains(model, "llama-3.3") || ci_contains(model, "qwen")) return 131072;
  if (ci_contains(model, "llama-3")) return 8192;
  if (ci_contains(model, "mistral") || ci_contains(model, "mixtral")) return 32768;
  if (ci_contains(model, "mixtral-8x22b")) return 65536;
  return 2048;
}

typedef enum { ST_SCORED = 0, ST_SKIPPED } vstatus;

typedef struct vrow {
  char id[16];
  char metric[40];
  const char *group;
  gpuplan__engine engine;
  char gpu[32];
  double measured, predicted, err;
  vstatus status;
  char why[200];
} vrow;

static const char *group_of(const char *metric) {
  if (strncmp(metric, "throughput", 10) == 0) return "throughput";
  if (strncmp(metric, "ttft", 4) == 0) return "ttft";
  if (strncmp(metric, "itl", 3) == 0 || strncmp(metric, "tpot", 4) == 0) return "itl";
  if (strncmp(metric, "e2e", 3) == 0) return "e2e";
  return "memory";
}

static int do_row(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan__serve_k *k, char **f, int nf,
                  const int *col, vrow *r, const char **assumption) {
  gpuplan__smodel m;
  gpuplan__shw hw;
  gpuplan__scfg c;
  gpuplan__smem mem;
  gpuplan__sload ld;
  gpuplan__sresult res;
  const gpuplan_gpu *g = NULL;
  const char *notes, *load, *metric, *gname = NULL, *model;
  double value, p = NAN, mx, v;
  int64_t n_gpu, tp, pp, ep, L, h, a, kvh, ff, V, E, topk;
  int known, rc;
  size_t i;
#define F(cn) (col[cn] >= 0 && col[cn] < nf ? f[col[cn]] : "")
  memset(r, 0, sizeof *r);
  *assumption = NULL;
  snprintf(r->id, sizeof r->id, "%s", F(C_ID));
  metric = F(C_METRIC);
  snprintf(r->metric, sizeof r->metric, "%s", metric);
  r->group = group_of(metric);
  value = num(F(C_VALUE));
  r->measured = value;
  r->predicted = NAN;
  r->err = NAN;
  r->status = ST_SKIPPED;
  notes = F(C_NOTES);
  load = F(C_LOAD);
  model = F(C_MODEL);
  if (!engine_of(F(C_FRAMEWORK), &r->engine, c.ver)) {
    snprintf(r->why, sizeof r->why, "engine '%s' not modelled", F(C_FRAMEWORK));
    return GPUPLAN_OK;
  }
  for (i = 0; i < sizeof gpu_map / sizeof gpu_map[0]; i++)
    if (ci_contains(F(C_GPU), gpu_map[i].pattern)) {
      gname = gpu_map[i].gpu;
      *assumption = gpu_map[i].assumption;
      break;
    }
  snprintf(r->gpu, sizeof r->gpu, "%s", gname ? gname : "?");
  if (!gname || gpuplan_catalog_gpu(cat, gname, &g) != GPUPLAN_OK) {
    gpuplan__clear(ctx);
    snprintf(r->why, sizeof r->why, "GPU '%s' is not in the catalog%s%s", F(C_GPU), gname ? " as " : "",
             gname ? gname : "");
    return GPUPLAN_OK;
  }
  L = (int64_t)num(F(C_LAYERS));
  h = (int64_t)num(F(C_HIDDEN));
  a = (int64_t)num(F(C_HEADS));
  kvh = (int64_t)num(F(C_KVH));
  ff = (int64_t)num(F(C_FFN));
  V = (int64_t)num(F(C_VOCAB));
  v = num(F(C_EXPERTS));
  E = isfinite(v) ? (int64_t)v : 1;
  v = num(F(C_TOPK));
  topk = isfinite(v) ? (int64_t)v : 1;
  if (L < 1 || h < 1 || a < 1 || ff < 1 || V < 1 || !isfinite(value)) {
    snprintf(r->why, sizeof r->why, "the row lacks the model's shape or a value");
    return GPUPLAN_OK;
  }
  gpuplan__smodel_shape(&m, model, num(F(C_PARAMS)) * 1e9, L, h, a, kvh > 0 ? kvh : a, ff, V, E, topk,
                        ff != 4 * h, 0);
  mx = note_num(notes, "max_model_len");
  if (!isfinite(mx)) mx = note_num(notes, "max-model-len");
  m.max_len = default_max_len(model);
  if (GPUPLAN_OK != (rc = gpuplan__shw_gpu(ctx, cat, g, NULL, &hw))) return rc;
  v = note_num(notes, "total_gpu_memory");
  if (isfinite(v)) hw.visible_bytes = v * GiB;
  n_gpu = (int64_t)(isfinite(num(F(C_GPUS))) ? num(F(C_GPUS)) : 1);
  tp = (int64_t)(isfinite(num(F(C_TP))) ? num(F(C_TP)) : (double)n_gpu);
  pp = (int64_t)(isfinite(num(F(C_PP))) ? num(F(C_PP)) : 1);
  ep = (int64_t)(isfinite(num(F(C_EP))) ? num(F(C_EP)) : 1);
  gpuplan__scfg_init(&c);
  engine_of(F(C_FRAMEWORK), &c.engine, c.ver);
  c.m = &m;
  c.hw = &hw;
  c.k = k;
  c.tp = tp;
  c.pp = pp;
  c.ep = ep > 1 && ep == tp ? ep : 1;
  c.w = scheme_of(F(C_WPREC), &known);
  if (c.w == GPUPLAN__W_FP8 && hw.cc_major * 10 + hw.cc_minor < 89) c.w = GPUPLAN__W_W8A16;
  {
    gpuplan__wscheme kvs = scheme_of(F(C_KVPREC), &known);
    if (known) c.kv = kvs == GPUPLAN__W_FP8 ? GPUPLAN_DTYPE_FP8 : kvs == GPUPLAN__W_INT8 ? GPUPLAN_DTYPE_INT8
                      : kvs == GPUPLAN__W_BF16 ? GPUPLAN_DTYPE_BF16 : GPUPLAN_DTYPE_FP16;
    else if (c.engine == GPUPLAN__ENG_TRTLLM && (c.w == GPUPLAN__W_FP8 || c.w == GPUPLAN__W_NVFP4))
      c.kv = GPUPLAN_DTYPE_FP8; /* ModelOpt FP8/FP4 checkpoints quantise the KV cache too */
    else c.kv = c.w == GPUPLAN__W_BF16 ? GPUPLAN_DTYPE_BF16 : GPUPLAN_DTYPE_FP16;
  }
  /* the engine settings the notes state */
  v = note_num(notes, "gpu_memory_utilization=");
  if (!isfinite(v)) v = note_num(notes, "--gpu-memory-utilization");
  if (!isfinite(v)) v = note_num(notes, "--gpu_memory_utilization=");
  if (isfinite(v) && v > 0 && v <= 1) c.gpu_util = v;
  v = note_num(notes, "max_tokens=");
  if (isfinite(v)) c.kv_max_tokens = (int64_t)v;
  v = note_num(notes, "free_gpu_memory_fraction");
  if (!isfinite(v)) v = note_num(notes, "kv_cache_free_gpu_mem_fraction");
  if (isfinite(v) && v > 0 && v <= 1) c.kv_free_frac = v;
  v = note_num(notes, "tokens per block");
  if (isfinite(v)) c.block = (int64_t)v;
  v = note_num(notes, "non_torch_memory");
  if (isfinite(v) && v < 100) c.non_torch = v * GiB;
  v = note_num(notes, "--num-scheduler-steps");
  if (isfinite(v) && c.engine == GPUPLAN__ENG_VLLM) c.sched_steps = (int64_t)v;
  v = note_num(notes, "max_num_requests=");
  if (isfinite(v)) c.max_seqs = (int64_t)v;
  v = note_num(notes, "max_num_tokens=");
  if (isfinite(v)) c.max_batched = (int64_t)v;
  if (strstr(notes, "--paged_kv_cache disable")) c.paged = 0;
  n_gpu = tp * pp;

  /* the load */
  memset(&ld, 0, sizeof ld);
  ld.in = num(F(C_IN));
  ld.out = num(F(C_OUT));
  if (!isfinite(ld.in) || !isfinite(ld.out)) {
    /* a dataset (ShareGPT): the stated mean output, ~220 prompt tokens, exponential lengths */
    double mo = note_num(notes, "mean output ~");
    ld.in = 220;
    ld.out = isfinite(mo) ? mo : 200;
    ld.exp_lengths = 1;
  }
  if (strncmp(load, "fixed_batch:", 12) == 0) {
    ld.kind = GPUPLAN__LOAD_BATCH;
    ld.concurrency = num(load + 12);
  } else if (strncmp(load, "max_concurrency:", 16) == 0) {
    ld.kind = GPUPLAN__LOAD_CONCURRENCY;
    ld.concurrency = num(load + 16);
  } else if (strncmp(load, "request_rate:inf", 16) == 0 || strncmp(load, "offline", 7) == 0) {
    ld.kind = GPUPLAN__LOAD_OFFLINE;
  } else if (strncmp(load, "request_rate:", 13) == 0) {
    ld.kind = GPUPLAN__LOAD_RATE;
    ld.rate = num(load + 13);
  } else if (strncmp(load, "n/a", 3) != 0) {
    snprintf(r->why, sizeof r->why, "load '%s' not modelled", load);
    return GPUPLAN_OK;
  }
  if (isfinite(mx)) c.max_len = (int64_t)mx;
  else if (strncmp(load, "n/a", 3) != 0 && (c.engine == GPUPLAN__ENG_TRTLLM || c.engine == GPUPLAN__ENG_TGI))
    c.max_len = (int64_t)(ld.in + ld.out); /* engines built (or launched) for the benchmark's lengths */
  if (c.max_len > 0 && c.max_len < ld.in + ld.out && strncmp(load, "n/a", 3) != 0)
    c.max_len = (int64_t)(ld.in + ld.out) + 1;
  rc = gpuplan__serve_memory(ctx, &c, &mem);
  if (rc) {
    snprintf(r->why, sizeof r->why, "memory: %s", gpuplan_errmsg(ctx));
    gpuplan__clear(ctx);
    return GPUPLAN_OK;
  }
  if (strncmp(load, "n/a", 3) == 0) {
    if (strcmp(metric, "kv_cache_tokens") == 0) p = mem.kv_tokens;
    else if (strcmp(metric, "kv_cache_gib") == 0) p = mem.item[GPUPLAN__SM_KV] / GiB;
    else if (strcmp(metric, "gpu_kv_blocks") == 0) p = mem.kv_blocks;
    else if (strcmp(metric, "weights_gb_per_gpu") == 0)
      p = mem.item[GPUPLAN__SM_WEIGHTS] / GiB; /* vLLM's "GB" are GiB */
    else if (strcmp(metric, "peak_torch_memory_gib") == 0)
      p = (mem.item[GPUPLAN__SM_WEIGHTS] + mem.item[GPUPLAN__SM_ACT]) / GiB;
    else if (strcmp(metric, "activation_peak_gib") == 0) p = mem.item[GPUPLAN__SM_ACT] / GiB;
    else {
      snprintf(r->why, sizeof r->why, "memory metric '%s' not modelled", metric);
      return GPUPLAN_OK;
    }
  } else {
    if (!mem.weights_ok) {
      snprintf(r->why, sizeof r->why, "modelled out of memory: %.1f GiB of weights per GPU",
               mem.item[GPUPLAN__SM_WEIGHTS] / GiB);
      r->status = ST_SCORED;
      r->predicted = 0;
      r->err = -1;
      return GPUPLAN_OK;
    }
    rc = gpuplan__serve_eval(ctx, &c, &mem, &ld, &res);
    if (rc) {
      snprintf(r->why, sizeof r->why, "model error: %s", gpuplan_errmsg(ctx));
      gpuplan__clear(ctx);
      r->status = ST_SCORED;
      r->predicted = 0;
      r->err = -1;
      return GPUPLAN_OK;
    }
    if (strcmp(metric, "throughput_output_tok_s") == 0) p = res.out_tok_s;
    else if (strcmp(metric, "throughput_input_tok_s") == 0) p = res.in_tok_s;
    else if (strcmp(metric, "throughput_req_s") == 0) p = res.req_s;
    else if (strcmp(metric, "throughput_req_min") == 0) p = res.req_s * 60;
    else {
      int qi = strstr(metric, "median") ? GPUPLAN__Q50 : -1;
      if (strncmp(metric, "ttft_ms", 7) == 0) p = 1e3 * (qi >= 0 ? res.ttft[qi] : res.ttft_mean);
      else if (strncmp(metric, "tpot_ms", 7) == 0) p = 1e3 * (qi >= 0 ? res.tpot[qi] : res.tpot_mean);
      else if (strncmp(metric, "itl_ms", 6) == 0) p = 1e3 * (qi >= 0 ? res.itl[qi] : res.tpot_mean * c.sched_steps);
      else if (strncmp(metric, "e2e_latency_s", 13) == 0) p = qi >= 0 ? res.e2e[qi] : res.e2e_mean;
      else {
        snprintf(r->why, sizeof r->why, "metric '%s' not modelled", metric);
        return GPUPLAN_OK;
      }
    }
    if (strcmp(F(C_PERGPU), "yes") == 0 && strncmp(metric, "throughput", 10) == 0) p /= (double)n_gpu;
  }
  r->status = ST_SCORED;
  r->predicted = p;
  r->err = isfinite(p) && value != 0 ? p / value - 1 : NAN;
  if (!isfinite(r->err)) {
    r->err = -1;
    snprintf(r->why, sizeof r->why, "no prediction (saturated or undefined)");
  }
  return GPUPLAN_OK;
#undef F
}

/* --- statistics -------------------------------------------------------------------------- */

static int cmp_d(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* Nearest-rank quantile of sorted values. */
static double qrank(const double *v, size_t n, double q) {
  size_t k;
  if (!n) return NAN;
  k = (size_t)ceil(q * (double)n);
  if (k < 1) k = 1;
  return v[k - 1];
}

static double median(const double *v, size_t n) {
  if (!n) return NAN;
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void put_stats(gpuplan__docb *b, const vrow *rows, size_t n, const char *group, int by, const char *val,
                      double *tmp) {
  size_t i, m = 0, worst = (size_t)-1;
  double wv = -1, bias_sum = 0;
  double *signed_e = tmp + n;
  for (i = 0; i < n; i++) {
    const vrow *r = &rows[i];
    if (r->status != ST_SCORED || strcmp(r->group, group) != 0) continue;
    if (by == 1 && strcmp(gpuplan__engine_name(r->engine), val) != 0) continue;
    if (by == 2 && strcmp(r->gpu, val) != 0) continue;
    tmp[m] = fabs(r->err);
    signed_e[m] = r->err;
    bias_sum += r->err;
    if (fabs(r->err) > wv) {
      wv = fabs(r->err);
      worst = i;
    }
    m++;
  }
  if (!m) return;
  qsort(tmp, m, sizeof *tmp, cmp_d);
  qsort(signed_e, m, sizeof *signed_e, cmp_d);
  gpuplan__doc_obj(b, NULL);
  gpuplan__doc_str(b, "metric", group);
  gpuplan__doc_str(b, "engine", by == 1 ? val : NULL);
  gpuplan__doc_str(b, "gpu", by == 2 ? val : NULL);
  gpuplan__doc_int(b, "n", (int64_t)m);
  gpuplan__doc_real(b, "median_abs_error", median(tmp, m));
  gpuplan__doc_real(b, "p90_abs_error", qrank(tmp, m, 0.9));
  gpuplan__doc_real(b, "worst_abs_error", tmp[m - 1]);
  gpuplan__doc_str(b, "worst_id", rows[worst].id);
  gpuplan__doc_real(b, "median_error", median(signed_e, m));
  gpuplan__doc_end(b);
  (void)bias_sum;
}

static int in_list(const char *list, const char *id) {
  size_t n = strlen(id);
  const char *p = list;
  while (p && *p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, id, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

int gpuplan__serve_validate(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *path, const char *only,
                            const char *constants, int with_rows, gpuplan_doc **out) {
  static const char *const groups[] = {"throughput", "ttft", "itl", "e2e", "memory"};
  gpuplan__serve_k k;
  char *buf = NULL, *p, *hdr[MAXF], *f[MAXF];
  int col[C_NCOLS], nh, i, rc = GPUPLAN_OK;
  vrow *rows = NULL;
  size_t n = 0, cap = 0, r, g, nscored = 0, nskip = 0;
  double *tmp = NULL;
  gpuplan__docb *b;
  char seen_gpu[64][32];
  size_t ngpu = 0;
  struct {
    const char *text;
    size_t count;
  } assum[32];
  size_t nassum = 0;
  gpuplan__serve_k_default(&k);
  if (constants) GPUPLAN_TRY(gpuplan__serve_k_apply(ctx, &k, constants));
  GPUPLAN_TRY(read_all(ctx, path, &buf));
  p = buf;
  if ((unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb && (unsigned char)p[2] == 0xbf) p += 3;
  nh = csv_next(&p, hdr);
  for (i = 0; i < C_NCOLS; i++) {
    int h2;
    col[i] = -1;
    for (h2 = 0; h2 < nh; h2++)
      if (strcmp(hdr[h2], colnames[i]) == 0) col[i] = h2;
    if (col[i] < 0 && i != C_EP && i != C_PERGPU) {
      gpuplan__free(ctx, buf);
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "validate: %s: no column '%s' (the columns of data/reference/serving_runs_README.md)", path,
                            colnames[i]);
    }
  }
  while (*p) {
    const char *assumption;
    int nf = csv_next(&p, f);
    if (nf < 2 || !f[0][0]) continue;
    if (only && !in_list(only, f[col[C_ID]])) continue;
    if (n >= MAX_ROWS) {
      rc = gpuplan__error(ctx, GPUPLAN_EINVAL, "validate: %s: more than %d rows", path, MAX_ROWS);
      goto done;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 512;
      vrow *nr = gpuplan__realloc(ctx, rows, nc * sizeof *rows);
      if (!nr) {
        rc = gpuplan__nomem(ctx);
        goto done;
      }
      rows = nr;
      cap = nc;
    }
    if ((rc = do_row(ctx, cat, &k, f, nf, col, &rows[n], &assumption))) goto done;
    if (rows[n].status == ST_SCORED) nscored++;
    else nskip++;
    if (assumption && rows[n].status == ST_SCORED) {
      size_t a2;
      for (a2 = 0; a2 < nassum && assum[a2].text != assumption; a2++) {}
      if (a2 == nassum && nassum < 32) {
        assum[a2].text = assumption;
        assum[a2].count = 0;
        nassum++;
      }
      if (a2 < nassum) assum[a2].count++;
    }
    if (rows[n].status == ST_SCORED) {
      size_t q;
      for (q = 0; q < ngpu && strcmp(seen_gpu[q], rows[n].gpu) != 0; q++) {}
      if (q == ngpu && ngpu < 64) snprintf(seen_gpu[ngpu++], sizeof seen_gpu[0], "%s", rows[n].gpu);
    }
    n++;
  }
  tmp = gpuplan__calloc(ctx, 2 * n + 2, sizeof *tmp);
  if (!tmp) {
    rc = gpuplan__nomem(ctx);
    goto done;
  }
  if (!(b = gpuplan__doc_begin(ctx, "serve-validate"))) {
    rc = gpuplan_errcode(ctx);
    goto done;
  }
  gpuplan__doc_str(b, "file", path);
  gpuplan__doc_int(b, "rows", (int64_t)n);
  gpuplan__doc_int(b, "scored", (int64_t)nscored);
  gpuplan__doc_int(b, "skipped", (int64_t)nskip);
  gpuplan__doc_str(b, "constants", constants ? constants : "");
  gpuplan__doc_arr(b, "metrics");
  for (g = 0; g < sizeof groups / sizeof groups[0]; g++) put_stats(b, rows, n, groups[g], 0, NULL, tmp);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "by_engine");
  for (g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (i = 0; i < GPUPLAN__ENG_COUNT; i++) put_stats(b, rows, n, groups[g], 1, gpuplan__engine_name(i), tmp);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "by_gpu");
  for (g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (r = 0; r < ngpu; r++) put_stats(b, rows, n, groups[g], 2, seen_gpu[r], tmp);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "assumptions");
  for (r = 0; r < nassum; r++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "text", assum[r].text);
    gpuplan__doc_int(b, "rows", (int64_t)assum[r].count);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "skipped_rows");
  for (r = 0; r < n; r++) {
    if (rows[r].status != ST_SKIPPED) continue;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "id", rows[r].id);
    gpuplan__doc_str(b, "metric", rows[r].metric);
    gpuplan__doc_str(b, "why", rows[r].why);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "results");
  for (r = 0; with_rows && r < n; r++) {
    const vrow *v = &rows[r];
    if (v->status != ST_SCORED) continue;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "id", v->id);
    gpuplan__doc_str(b, "metric", v->metric);
    gpuplan__doc_str(b, "group", v->group);
    gpuplan__doc_str(b, "engine", gpuplan__engine_name(v->engine));
    gpuplan__doc_str(b, "gpu", v->gpu);
    gpuplan__doc_real(b, "measured", v->measured);
    gpuplan__doc_real(b, "predicted", v->predicted);
    gpuplan__doc_real(b, "error", v->err);
    gpuplan__doc_str(b, "note", v->why[0] ? v->why : NULL);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  rc = gpuplan__doc_finish(b, out);
done:
  gpuplan__free(ctx, tmp);
  gpuplan__free(ctx, rows);
  gpuplan__free(ctx, buf);
  return rc;
}
