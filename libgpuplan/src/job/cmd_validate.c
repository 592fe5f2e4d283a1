/*
 * cmd_validate.c: the validate command: every training_throughput row of a
 * calibration-format CSV (data/reference/training_runs_calibration.csv)
 * rebuilt as it was run and predicted by the performance model.
 *
 * "As it was run" (review 2026-12 PM-9..PM-13):
 *  - the framework from the row (Megatron, NeMo, DeepSpeed, Composer, ...)
 *    and its profile (gpuplan_perf_constants_framework);
 *  - the sharding as the source writes it: FSDP FULL_SHARD /
 *    SHARD_GRAD_OP / HYBRID_SHARD, "FSDP", "FSDP=N (+DP)", "FSDP-style",
 *    ZeRO-1/2/3, Megatron's distributed optimizer, plain DDP;
 *  - virtual pipeline values as given: a number of chunks, or
 *    "N layers/virtual stage" (vpp = layers / (pp N));
 *  - the cluster from the row: GPUs per node ("8/node", NVL72), NICs and
 *    their fabric ("4x OmniPath", "1600 Gbps ... (RoCE)"), else the
 *    DGX/HGX shape with the assumption stated;
 *  - the GPU through the catalog's names and aliases (GB200, B200, ...).
 * A row's memory is checked first: one that does not fit as modelled is a
 * model error, reported and not scored.  Rows without the data the model
 * needs are skipped with the reason; a row with the data is never skipped.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job/validate_int.h"

#define MAXF 64
#define MAX_ROWS 100000

/* --- CSV (RFC 4180) --------------------------------------------------------- */

/* Split one record starting at *p into fields; returns the count and
 * advances *p past the record.  Fields point into the buffer (modified). */
static int csv_next(char **p, char **fields) {
  char *s = *p, *w;
  int n = 0;
  if (!*s) return 0;
  while (n < MAXF) {
    fields[n++] = w = s;
    if (*s == '"') {
      s++;
      for (;;) {
        if (!*s) break;
        if (*s == '"' && s[1] == '"') {
          *w++ = '"';
          s += 2;
        } else if (*s == '"') {
          s++;
          break;
        } else {
          *w++ = *s++;
        }
      }
      while (*s && *s != ',' && *s != '\n' && *s != '\r') s++;
    } else {
      while (*s && *s != ',' && *s != '\n' && *s != '\r') *w++ = *s++;
    }
    if (*s == ',') {
      *w = '\0';
      s++;
      continue;
    }
    if (*s == '\r') s++;
    if (*s == '\n') s++;
    *w = '\0';
    break;
  }
  /* a record longer than MAXF fields: skip the rest of it */
  if (n == MAXF && s > *p && s[-1] != '\n') {
    while (*s && *s != '\n') s++;
    if (*s == '\n') s++;
  }
  *p = s;
  return n;
}

/* A number at the start of s ("250880 padded ..." -> 250880), else NaN. */
static double num(const char *s) {
  char *e;
  double v;
  if (!s) return NAN;
  while (*s == ' ') s++;
  if (!*s) return NAN;
  v = strtod(s, &e);
  return e == s ? NAN : v;
}

/* Case-insensitive substring. */
static const char *has(const char *s, const char *w) {
  size_t n = strlen(w);
  if (!s) return NULL;
  for (; *s; s++) {
    size_t i;
    for (i = 0; i < n && s[i] && tolower((unsigned char)s[i]) == tolower((unsigned char)w[i]); i++) continue;
    if (i == n) return s;
  }
  return NULL;
}

/* The integer just before the first occurrence of w in s ("8/node" -> 8). */
static double num_before(const char *s, const char *w) {
  const char *at = has(s, w), *q;
  if (!at) return NAN;
  q = at;
  while (q > s && q[-1] == ' ') q--;
  while (q > s && isdigit((unsigned char)q[-1])) q--;
  return isdigit((unsigned char)*q) ? strtod(q, NULL) : NAN;
}

typedef struct csvfile {
  char *buf;
  char *hdr[MAXF];
  int nh;
} csvfile;

typedef struct rec {
  char *f[MAXF];
  int n;
  const csvfile *cf;
} rec;

static const char *col(const rec *r, const char *name) {
  int i;
  for (i = 0; i < r->cf->nh && i < r->n; i++)
    if (strcmp(r->cf->hdr[i], name) == 0) return r->f[i];
  return "";
}

/* --- one row ------------------------------------------------------------------ */

enum { ST_SCORED = 0, ST_SKIPPED, ST_MODEL_ERROR };

typedef struct vrow {
  char id[32], source[64], model[96], framework_text[96], gpu_type[128];
  int status;
  char reason[256];
  char assumptions[512];
  gpuplan_framework fw;
  const gpuplan_gpu *gpu;
  int64_t gpus, nodes, per_node;
  const char *intra, *inter;
  double nics;
  gpuplan_memory_options o;
  char family[48];
  const char *dp_width;
  double measured;
  const char *measured_from;
  double predicted, error, step_s, mfu, exposed_comm_s, bytes_per_nic;
  uint64_t mem_bytes, capacity;
  int fits;
  int has_layout;
} vrow;

static void note(vrow *r, const char *fmt, const char *arg) {
  size_t n = strlen(r->assumptions);
  if (n + 4 >= sizeof r->assumptions) return;
  snprintf(r->assumptions + n, sizeof r->assumptions - n, n ? "; " : "%s", "");
  n = strlen(r->assumptions);
  snprintf(r->assumptions + n, sizeof r->assumptions - n, fmt, arg ? arg : "");
}

static void copy(char *dst, size_t cap, const char *s) { snprintf(dst, cap, "%s", s ? s : ""); }

/* The framework from the row's framework column (and source). */
static gpuplan_framework framework_of(const char *fwt, const char *src) {
  if (has(fwt, "nemo")) return GPUPLAN_FW_NEMO;
  if (has(fwt, "deepspeed")) return GPUPLAN_FW_DEEPSPEED;
  if (has(fwt, "composer") || has(fwt, "llm-foundry") || has(src, "mosaicml")) return GPUPLAN_FW_COMPOSER;
  if (has(fwt, "torchtitan")) return GPUPLAN_FW_TORCHTITAN;
  if (has(fwt, "maxtext") || has(fwt, "paxml") || has(fwt, "jax")) return GPUPLAN_FW_MAXTEXT;
  if (has(fwt, "fsdp2")) return GPUPLAN_FW_FSDP2;
  if (has(fwt, "megatron")) return GPUPLAN_FW_MEGATRON;
  if (has(fwt, "fsdp") || has(fwt, "metaseq") || has(fwt, "pytorch")) return GPUPLAN_FW_FSDP;
  return GPUPLAN_FW_MEGATRON;
}

/* The GPU through the catalog's names and aliases (PM-13).  The text
 * before a parenthesis names the part; an ambiguous name ("H100 80GB")
 * takes the form factor the row states, else SXM: multi-GPU training nodes
 * with an all-to-all NVLink fabric are SXM boards. */
static int gpu_of(gpuplan_job *j, vrow *r, const char *text, const gpuplan_gpu **out) {
  char name[128], alt[160];
  const char *par = strchr(text, '(');
  size_t n = par ? (size_t)(par - text) : strlen(text);
  int rc;
  if (n >= sizeof name) n = sizeof name - 1;
  memcpy(name, text, n);
  name[n] = '\0';
  while (n && name[n - 1] == ' ') name[--n] = '\0';
  if (!n) return GPUPLAN_ENOTFOUND;
  rc = gpuplan_catalog_gpu(j->cat, name, out);
  if (rc == GPUPLAN_EAMBIGUOUS) {
    const char *form = has(text, "PCIe") ? "PCIe" : has(text, "NVL") && !has(text, "NVL72") ? "NVL" : "SXM";
    snprintf(alt, sizeof alt, "%s %s", name, form);
    rc = gpuplan_catalog_gpu(j->cat, alt, out);
    if (rc == GPUPLAN_OK && !has(text, form)) note(r, "form factor not stated: %s", "SXM (HGX/DGX board)");
  }
  gpuplan__clear(j->ctx);
  return rc;
}

/* The sharding text (PM-9). */
static void sharding_of(vrow *r, const char *sh) {
  gpuplan_memory_options *o = &r->o;
  if (has(sh, "HYBRID_SHARD") || (has(sh, "FSDP=") && has(sh, "+DP"))) {
    const char *eq = has(sh, "FSDP=");
    o->dp_mode = GPUPLAN_DP_FSDP_HYBRID;
    o->shard_group = eq ? (int64_t)num(eq + 5) : 0;
    o->convention = GPUPLAN_CONV_FSDP;
  } else if (has(sh, "SHARD_GRAD_OP")) {
    o->dp_mode = GPUPLAN_DP_FSDP_GRAD_OP;
    o->convention = GPUPLAN_CONV_FSDP;
  } else if (has(sh, "FSDP")) {
    /* FULL_SHARD, "FSDP", "FSDP=N" (N = the dp size), "FSDP-style",
     * "Fully Sharded Data Parallel" */
    o->dp_mode = GPUPLAN_DP_FSDP_FULL;
    o->convention = GPUPLAN_CONV_FSDP;
    if (!has(sh, "FULL_SHARD")) note(r, "sharding '%s' read as FULL_SHARD", sh);
  } else if (has(sh, "ZeRO-3") || has(sh, "ZeRO stage 3") || has(sh, "stage 3") || has(sh, "ZeRO3")) {
    o->dp_mode = GPUPLAN_DP_ZERO3;
    o->convention = GPUPLAN_CONV_DEEPSPEED;
  } else if (has(sh, "ZeRO-2") || has(sh, "ZeRO stage 2") || has(sh, "ZeRO2")) {
    o->dp_mode = GPUPLAN_DP_ZERO2;
    o->convention = GPUPLAN_CONV_DEEPSPEED;
  } else if (has(sh, "ZeRO-1") || has(sh, "ZeRO1")) {
    o->dp_mode = GPUPLAN_DP_ZERO1;
    o->convention = GPUPLAN_CONV_DEEPSPEED;
  } else if (has(sh, "distributed optimizer")) {
    o->dp_mode = GPUPLAN_DP_ZERO1;
    o->convention = GPUPLAN_CONV_MEGATRON;
    if (has(sh, "not stated")) note(r, "%s", "Megatron distributed optimizer (the framework's default)");
  } else {
    o->dp_mode = GPUPLAN_DP_DDP;
    o->convention = r->fw == GPUPLAN_FW_MEGATRON || r->fw == GPUPLAN_FW_NEMO ? GPUPLAN_CONV_MEGATRON
                  : r->fw == GPUPLAN_FW_DEEPSPEED ? GPUPLAN_CONV_DEEPSPEED : GPUPLAN_CONV_FSDP;
  }
}

/* vpp as the source gives it (PM-11): a chunk count, or "N layers/virtual
 * stage" (Narayanan's run_table_1.sh: --num-layers-per-virtual-pipeline-stage). */
static int vpp_of(vrow *r, const char *text, int64_t L) {
  gpuplan_memory_options *o = &r->o;
  double x = num(text);
  if (!text[0] || isnan(x)) {
    o->vpp = 1;
    return 0;
  }
  if (has(text, "layer")) {
    double per = x;
    if (per < 1 || fmod((double)L, (double)o->pp * per) != 0) return -1;
    o->vpp = (int64_t)((double)L / ((double)o->pp * per));
  } else {
    o->vpp = (int64_t)x;
  }
  if (o->vpp > 1) {
    if (o->pp < 2 || L % (o->pp * o->vpp)) return -1;
    o->schedule = GPUPLAN_SCHED_INTERLEAVED;
  } else {
    o->vpp = 1;
  }
  return 0;
}

/* The cluster of the row (PM-12).  Returns 0 or a skip reason in r. */
static int cluster_of_row(gpuplan_job *j, vrow *r, const rec *rr, gpuplan_cluster *cl) {
  const char *gt = col(rr, "gpu_type"), *loc = col(rr, "source_locator"), *notes = col(rr, "notes");
  const gpuplan_fabric *inter = NULL, *intra = NULL;
  double per = num_before(gt, "/node"), nics = NAN, nic_gbps = NAN, total_gbps;
  const char *fab = NULL;
  int rc;
  if (isnan(per)) per = num_before(notes, "/node");
  if (has(gt, "NVL72") || has(r->gpu->id, "gb200")) {
    per = 72;
    intra = NULL;
    rc = gpuplan_catalog_fabric(j->cat, "nvl72", &intra);
    if (rc) return rc;
    if (!has(gt, "NVL72")) note(r, "%s", "GB200 in NVL72 racks (72 GPUs per NVLink domain)");
  }
  if (isnan(per)) {
    per = 8;
    note(r, "%s", "8 GPUs per node (DGX/HGX shape; the source does not say)");
  }
  if ((double)r->gpus < per) per = (double)r->gpus;
  if (fmod((double)r->gpus, per) != 0) {
    snprintf(r->reason, sizeof r->reason, "gpu_count %lld is not a multiple of %g GPUs per node",
             (long long)r->gpus, per);
    return 1;
  }
  /* scale-out */
  if (has(gt, "OmniPath") || has(gt, "Omni-Path")) {
    nics = num_before(gt, "x OmniPath");
    if (isnan(nics)) nics = num_before(gt, "x Omni-Path");
    nic_gbps = 100;
    fab = "roce-100";
    note(r, "%s", "Omni-Path 100 Gb/s as the catalog's 100 Gb/s RDMA fabric (roce-100)");
  } else if ((total_gbps = num_before(loc, "Gbps node-node")) > 0 || (total_gbps = num_before(gt, "Gbps")) > 0) {
    nics = per;
    nic_gbps = total_gbps / per;
    fab = has(loc, "RoCE") || has(gt, "RoCE") ? (nic_gbps <= 100 ? "roce-100" : nic_gbps <= 200 ? "roce-200" : "roce-400")
                                              : (nic_gbps <= 200 ? "ib-hdr" : "ib-ndr");
  } else if (has(gt, "Selene") || has(gt, "DGX A100")) {
    fab = "ib-hdr";
    nics = per;
  }
  rc = gpuplan_cluster_default(j->ctx, j->cat, r->gpu, r->gpus, (int64_t)per, cl);
  if (rc) {
    snprintf(r->reason, sizeof r->reason, "%s", gpuplan_errmsg(j->ctx));
    gpuplan__clear(j->ctx);
    return 1;
  }
  if (intra) {
    cl->intra_bw_bytes_s = intra->bw_bytes_s;
    cl->intra_latency_s = intra->latency_s;
    cl->intra_name = intra->id;
  }
  if (fab) {
    rc = gpuplan_catalog_fabric(j->cat, fab, &inter);
    if (rc) return rc;
    cl->inter_bw_bytes_s = (isnan(nics) ? per : nics) * (isnan(nic_gbps) ? inter->bw_bytes_s : nic_gbps * 1e9 / 8);
    cl->inter_latency_s = inter->latency_s;
    cl->inter_name = inter->id;
  } else if (r->gpus > per) {
    note(r, "scale-out not stated: one %s NIC per GPU", cl->inter_name);
  }
  r->per_node = cl->gpus_per_node;
  r->nodes = cl->nodes;
  r->intra = cl->intra_name;
  r->inter = cl->inter_name;
  r->nics = cl->inter_bw_bytes_s / (inter ? (isnan(nic_gbps) ? inter->bw_bytes_s : nic_gbps * 1e9 / 8) : 1);
  if (!inter) {
    const gpuplan_fabric *f = NULL;
    if (gpuplan_catalog_fabric(j->cat, cl->inter_name, &f) == GPUPLAN_OK) r->nics = cl->inter_bw_bytes_s / f->bw_bytes_s;
    gpuplan__clear(j->ctx);
  }
  return 0;
}

/* Apply "name=value,..." overrides; framework.name=value only to that framework. */
static int apply_constants(gpuplan_job *j, const char *spec, gpuplan_perf_constants *k) {
  const char *p = spec;
  while (p && *p) {
    char name[96], *e;
    const char *eq = strchr(p, '='), *end = strchr(p, ','), *dot;
    size_t n;
    double v;
    gpuplan_framework fw;
    if (!end) end = p + strlen(p);
    if (!eq || eq > end)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CONSTANTS), "'%.*s' is not name=value",
                                (int)(end - p), p);
    n = (size_t)(eq - p);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, p, n);
    name[n] = '\0';
    v = strtod(eq + 1, &e);
    if (e == eq + 1 || e != end || !isfinite(v))
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CONSTANTS), "'%.*s': the value is not a number",
                                (int)(end - p), p);
    dot = strchr(name, '.');
    if (dot) {
      char fname[32];
      size_t fl = (size_t)(dot - name);
      if (fl >= sizeof fname) fl = sizeof fname - 1;
      memcpy(fname, name, fl);
      fname[fl] = '\0';
      if (gpuplan_framework_parse(fname, &fw) != GPUPLAN_OK)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CONSTANTS), "unknown framework '%s'", fname);
      if (fw == k->framework && gpuplan_perf_constant_set(k, dot + 1, v) != GPUPLAN_OK)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CONSTANTS), "unknown constant '%s'", dot + 1);
    } else if (gpuplan_perf_constant_set(k, name, v) != GPUPLAN_OK) {
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CONSTANTS), "unknown constant '%s'", name);
    }
    p = *end ? end + 1 : end;
  }
  return GPUPLAN_OK;
}

static int in_list(const char *list, const char *id) {
  size_t n = strlen(id);
  const char *p = list;
  while (p && *p) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && strncmp(p, id, n) == 0) return 1;
    p = e ? e + 1 : NULL;
  }
  return 0;
}

/* Rebuild one row and predict it. */
static int do_row(gpuplan_job *j, const rec *rr, vrow *r, gpuplan_model *m) {
  double L, h, a, kv, ffn, s, V, gpus, G, b, tp, pp, cpd, dp, ga;
  const char *prec, *rec_t, *sh, *fwt, *src = col(rr, "source_short");
  gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf_constants k;
  gpuplan_cluster cl;
  gpuplan_memory mem;
  gpuplan_perf pf;
  const char *cspec = gpuplan__job_str(j, VOPT(V_CONSTANTS), NULL);
  int rc;

  memset(r, 0, sizeof *r);
  copy(r->id, sizeof r->id, rr->f[0]);
  copy(r->source, sizeof r->source, src);
  copy(r->model, sizeof r->model, col(rr, "model"));
  copy(r->framework_text, sizeof r->framework_text, col(rr, "framework"));
  copy(r->gpu_type, sizeof r->gpu_type, col(rr, "gpu_type"));
  r->status = ST_SKIPPED;
  r->measured = r->predicted = r->error = r->step_s = r->mfu = r->exposed_comm_s = r->bytes_per_nic = NAN;
  r->nics = NAN;
  r->o = d;
  fwt = col(rr, "framework");
  r->fw = framework_of(fwt, src);

  L = num(col(rr, "layers"));
  h = num(col(rr, "hidden"));
  a = num(col(rr, "heads"));
  kv = num(col(rr, "kv_heads"));
  ffn = num(col(rr, "ffn_hidden"));
  s = num(col(rr, "seq_len"));
  V = num(col(rr, "vocab"));
  gpus = num(col(rr, "gpu_count"));
  G = num(col(rr, "global_batch_seqs"));
  b = num(col(rr, "micro_batch"));
  ga = num(col(rr, "grad_accum"));
  tp = num(col(rr, "tp"));
  pp = num(col(rr, "pp"));
  cpd = num(col(rr, "cp"));
  if (isnan(tp) && !*col(rr, "tp")) tp = 1;
  if (isnan(pp) && !*col(rr, "pp")) pp = 1;
  if (isnan(cpd) && !*col(rr, "cp")) cpd = 1;
  if (isnan(L) || isnan(h) || isnan(a)) copy(r->reason, sizeof r->reason, "model shape (layers, hidden, heads) not given");
  else if (isnan(s) || isnan(V)) copy(r->reason, sizeof r->reason, "seq_len or vocab not given");
  else if (isnan(gpus)) copy(r->reason, sizeof r->reason, "gpu_count not given");
  else if (isnan(G)) copy(r->reason, sizeof r->reason, "global batch not given");
  else if (isnan(b)) copy(r->reason, sizeof r->reason, "micro-batch not given (the source does not state it)");
  else if (isnan(tp) || isnan(pp) || isnan(cpd))
    copy(r->reason, sizeof r->reason, "tp, pp or cp degree not given as a number");
  if (r->reason[0]) return GPUPLAN_OK;
  r->gpus = (int64_t)gpus;
  dp = gpus / (tp * pp * cpd);
  if (dp != floor(dp) || dp < 1) {
    copy(r->reason, sizeof r->reason, "gpu_count is not a multiple of tp*pp*cp");
    return GPUPLAN_OK;
  }
  if (fmod(G, dp * b) != 0) {
    copy(r->reason, sizeof r->reason, "global batch is not a multiple of dp x micro-batch");
    return GPUPLAN_OK;
  }
  rc = gpu_of(j, r, r->gpu_type, &r->gpu);
  if (rc == GPUPLAN_ENOTFOUND || rc == GPUPLAN_EAMBIGUOUS) {
    snprintf(r->reason, sizeof r->reason, "GPU type '%.100s' is not in the catalog", r->gpu_type);
    return GPUPLAN_OK;
  }
  GPUPLAN_TRY(rc);

  /* measured tokens/s */
  {
    double tps = num(col(rr, "tokens_per_s")), tpg = num(col(rr, "tokens_per_s_per_gpu"));
    double st = num(col(rr, "step_time_s")), tf = num(col(rr, "tflops_per_gpu"));
    if (!isnan(tps)) r->measured = tps, r->measured_from = "tokens_per_s";
    else if (!isnan(tpg)) r->measured = tpg * gpus, r->measured_from = "tokens_per_s_per_gpu";
    else if (!isnan(st)) r->measured = G * s / st, r->measured_from = "step_time_s";
    else if (!isnan(tf) && has(src, "Narayanan")) {
      /* the paper's own count with full recompute: 96 l h^2 (1 + s/6h + V/16lh) per token */
      double per_tok = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
      r->measured = tf * 1e12 * gpus / per_tok;
      r->measured_from = "tflops_per_gpu (Narayanan's FLOP count)";
    } else {
      copy(r->reason, sizeof r->reason, "no measured tokens/s, step time, or TFLOP/s with a known FLOP formula");
      return GPUPLAN_OK;
    }
  }

  /* the model */
  memset(m, 0, sizeof *m);
  m->id = r->id;
  m->name = r->model;
  m->family = "validation";
  m->arch = "decoder";
  m->layers = (int64_t)L;
  m->hidden = (int64_t)h;
  m->heads = (int64_t)a;
  m->kv_heads = isnan(kv) ? m->heads : (int64_t)kv;
  m->head_dim = m->hidden / m->heads;
  m->ffn_hidden = isnan(ffn) ? 4 * m->hidden : (int64_t)ffn;
  if (isnan(ffn)) note(r, "%s", "ffn_hidden not given: 4 x hidden");
  m->ffn_type = has(r->model, "Llama") ? "swiglu" : "gelu";
  m->vocab = (int64_t)V;
  m->seq_len = (int64_t)s;
  m->max_seq_len = NAN;
  m->tied_embeddings = has(r->model, "Llama") ? 0 : 1;
  m->position = has(r->model, "MPT") || has(r->model, "BLOOM") ? "alibi" : has(r->model, "Llama") ? "rope" : "learned";
  m->norm = has(r->model, "Llama") ? "rmsnorm" : "layernorm";
  m->experts = 1;
  m->top_k = 1;

  /* the layout as run */
  prec = col(rr, "precision");
  rec_t = col(rr, "recompute");
  sh = col(rr, "sharding");
  r->o.tp = (int64_t)tp;
  r->o.pp = (int64_t)pp;
  r->o.cp = (int64_t)cpd;
  r->o.dp = (int64_t)dp;
  r->o.micro_batch = (int64_t)b;
  r->o.seq_len = (int64_t)s;
  r->o.microbatches = (int64_t)(G / (dp * b));
  r->has_layout = 1;
  if (!isnan(ga) && ga != (double)r->o.microbatches) note(r, "%s", "grad_accum differs from gbs / (dp x mbs): gbs used");
  sharding_of(r, sh);
  if (vpp_of(r, col(rr, "vpp"), m->layers)) {
    snprintf(r->reason, sizeof r->reason, "vpp '%.60s' does not split %lld layers on pp %lld", col(rr, "vpp"),
             (long long)m->layers, (long long)r->o.pp);
    return GPUPLAN_OK;
  }
  if (m->layers % r->o.pp) {
    /* Stages of ceil(L/pp) layers with the first and last sharing the rest:
     * how Megatron-DeepSpeed balances the embedding and logits stages
     * (BLOOM's --pp-partition-method 'type:transformer|embedding': 70 layers
     * on 12 stages are 5, 6 x 10, 5); else the remainder on the first. */
    int64_t nl = m->layers, np = r->o.pp, mid = (nl + np - 1) / np, rest = nl - (np - 2) * mid;
    if (np > 2 && rest >= 2 && rest / 2 <= mid && rest - rest / 2 <= mid) {
      r->o.first_stage_layers = rest / 2;
      r->o.last_stage_layers = rest - rest / 2;
    } else {
      r->o.first_stage_layers = nl - (nl / np) * (np - 1);
      r->o.last_stage_layers = 0;
    }
    note(r, "%s", "layers do not divide by pp: shorter first and last stages");
  }
  r->o.sequence_parallel = has(col(rr, "seq_parallel"), "yes") != NULL;
  if (!*col(rr, "seq_parallel") && r->fw == GPUPLAN_FW_NEMO && r->o.tp > 1) {
    r->o.sequence_parallel = 1;
    note(r, "%s", "sequence parallelism on (NeMo's recipes with tp > 1)");
  }
  r->o.recompute = has(rec_t, "full") ? GPUPLAN_RECOMPUTE_FULL
                 : has(rec_t, "selective") ? GPUPLAN_RECOMPUTE_SELECTIVE : GPUPLAN_RECOMPUTE_NONE;
  if (!*rec_t) note(r, "%s", "recompute not stated: none");
  r->o.precision = has(prec, "fp8") ? GPUPLAN_PREC_FP8
                 : has(prec, "fp16") && !has(prec, "bf16") ? GPUPLAN_PREC_FP16_MIXED : GPUPLAN_PREC_BF16_MIXED;
  /* gradient reduction dtype: Composer's FSDP mixed precision DEFAULT
   * reduces in fp32, PURE in bf16 (composer/distributed/mixed_precision);
   * fp16 Megatron-LM 2021 all-reduced fp16 gradients; BF16_Optimizer and
   * Megatron's bf16 recipes keep fp32 main gradients. */
  if (has(sh, "mode DEFAULT")) r->o.grad_bytes = 4;
  else if (has(sh, "mode PURE")) r->o.grad_bytes = 2;
  else if (r->o.precision == GPUPLAN_PREC_FP16_MIXED) r->o.grad_bytes = 2;
  else if (has(sh, "BF16_Optimizer")) r->o.grad_bytes = 4;
  /* FlashAttention (2022) postdates Megatron-LM 2021 and BLOOM's training
   * (Megatron's fused scale-mask-softmax) */
  if (has(src, "Narayanan2021") || has(src, "BLOOM")) {
    r->o.flash_attention = 0;
    note(r, "%s", "explicit attention with fused softmax (before FlashAttention)");
  }
  r->o.dropout = has(r->model, "MPT") || has(r->model, "Llama") ? 0 : 1;

  /* constants: the framework's profile, what the row says, the overrides */
  gpuplan_perf_constants_framework(r->fw, &k);
  if (has(sh, "local for >=39B") && num(col(rr, "params_b")) >= 39) {
    k.dp_overlap = 0; /* Megatron's "local" DDP: one all-reduce after backward */
    note(r, "%s", "DDP-impl local: gradient all-reduce after backward, not overlapped");
  }
  if (cspec) GPUPLAN_TRY(apply_constants(j, cspec, &k));

  /* the cluster */
  rc = cluster_of_row(j, r, rr, &cl);
  if (rc == 1) return GPUPLAN_OK;
  GPUPLAN_TRY(rc);

  /* family and width, for the breakdowns */
  snprintf(r->family, sizeof r->family, "%s%s%s%s", r->o.tp > 1 ? "tp+" : "", r->o.pp > 1 ? "pp+" : "",
           r->o.cp > 1 ? "cp+" : "",
           r->o.dp_mode == GPUPLAN_DP_DDP ? "dp"
           : r->o.dp_mode == GPUPLAN_DP_ZERO1 ? "zero1"
           : r->o.dp_mode == GPUPLAN_DP_ZERO2 ? "zero2"
           : r->o.dp_mode == GPUPLAN_DP_FSDP_GRAD_OP ? "fsdp-grad-op"
           : r->o.dp_mode == GPUPLAN_DP_FSDP_HYBRID ? "hsdp" : "fsdp");
  r->dp_width = r->o.dp <= 1 ? "1" : r->o.dp <= 8 ? "2-8" : r->o.dp <= 64 ? "9-64" : r->o.dp <= 512 ? "65-512"
              : "513+";

  /* memory first (PM-10) */
  rc = gpuplan_memory_eval(j->ctx, m, r->gpu, &r->o, GPUPLAN_STAGE_WORST, &mem);
  if (rc) {
    snprintf(r->reason, sizeof r->reason, "memory model: %s", gpuplan_errmsg(j->ctx));
    gpuplan__clear(j->ctx);
    r->status = ST_MODEL_ERROR;
    return GPUPLAN_OK;
  }
  r->mem_bytes = mem.total;
  r->capacity = mem.capacity;
  r->fits = mem.fits;
  rc = gpuplan_perf_eval(j->ctx, m, &cl, &r->o, (int64_t)G, 0, &k, &pf);
  if (rc) {
    snprintf(r->reason, sizeof r->reason, "performance model: %s", gpuplan_errmsg(j->ctx));
    gpuplan__clear(j->ctx);
    r->status = ST_MODEL_ERROR;
    return GPUPLAN_OK;
  }
  r->predicted = pf.tokens_per_s;
  r->step_s = pf.step_s;
  r->mfu = pf.mfu;
  r->exposed_comm_s = pf.exposed_comm_s;
  r->bytes_per_nic = pf.bytes_per_nic;
  r->error = pf.tokens_per_s / r->measured - 1;
  if (!mem.fits) {
    snprintf(r->reason, sizeof r->reason,
             "does not fit as modelled: %.1f GiB of %.1f GiB (the memory model is wrong for this run)",
             (double)mem.total / 1073741824.0, (double)mem.capacity / 1073741824.0);
    r->status = ST_MODEL_ERROR;
    return GPUPLAN_OK;
  }
  r->status = ST_SCORED;
  return GPUPLAN_OK;
}

/* --- statistics ----------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* Median of v[0..n) (sorted in place). */
static double median(double *v, size_t n) {
  if (!n) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The q-quantile (nearest rank) of sorted v. */
static double quantile(const double *v, size_t n, double q) {
  size_t i;
  if (!n) return NAN;
  i = (size_t)ceil(q * (double)n);
  if (i < 1) i = 1;
  if (i > n) i = n;
  return v[i - 1];
}

typedef const char *(*keyfn)(const vrow *r, char *buf, size_t cap);
static const char *key_fw(const vrow *r, char *buf, size_t cap) {
  (void)buf, (void)cap;
  return gpuplan_framework_name(r->fw);
}
static const char *key_gpu(const vrow *r, char *buf, size_t cap) {
  (void)buf, (void)cap;
  return r->gpu->id;
}
static const char *key_family(const vrow *r, char *buf, size_t cap) {
  (void)buf, (void)cap;
  return r->family;
}
static const char *key_width(const vrow *r, char *buf, size_t cap) {
  (void)buf, (void)cap;
  return r->dp_width;
}
static const char *key_fw_gpu(const vrow *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%s x %s", gpuplan_framework_name(r->fw), r->gpu->id);
  return buf;
}

static void put_groups(gpuplan__docb *b, const char *key, const vrow *rows, size_t n, keyfn fn, double *tmp,
                       double *tmp2) {
  size_t i, k;
  char seen[64][64], kb[64], kb2[64];
  size_t nseen = 0;
  gpuplan__doc_arr(b, key);
  for (i = 0; i < n; i++) {
    const char *ki;
    size_t m = 0, s;
    double worst = 0;
    const char *worst_id = NULL;
    if (rows[i].status != ST_SCORED) continue;
    ki = fn(&rows[i], kb, sizeof kb);
    for (s = 0; s < nseen; s++)
      if (strcmp(seen[s], ki) == 0) break;
    if (s < nseen || nseen >= 64) continue;
    snprintf(seen[nseen++], sizeof seen[0], "%s", ki);
    for (k = i; k < n; k++) {
      if (rows[k].status != ST_SCORED || strcmp(fn(&rows[k], kb2, sizeof kb2), ki) != 0) continue;
      tmp[m] = fabs(rows[k].error);
      tmp2[m] = rows[k].error;
      if (fabs(rows[k].error) > fabs(worst)) worst = rows[k].error, worst_id = rows[k].id;
      m++;
    }
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "key", ki);
    gpuplan__doc_int(b, "rows", (int64_t)m);
    gpuplan__doc_real(b, "median_abs_error", median(tmp, m));
    gpuplan__doc_real(b, "median_error", median(tmp2, m));
    gpuplan__doc_real(b, "worst_error", worst);
    gpuplan__doc_str(b, "worst_id", worst_id);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
}

static void layout_text(const vrow *r, char *buf, size_t cap) {
  snprintf(buf, cap, "%lld.%lld.%lld.%lld", (long long)r->o.tp, (long long)r->o.pp, (long long)r->o.cp,
           (long long)r->o.dp);
}

static int read_file(gpuplan_job *j, const char *path, char **out) {
  FILE *f;
  long len;
  char *buf;
  *out = NULL;
  f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return gpuplan__opt_error(j->ctx, e == ENOENT ? GPUPLAN_ENOTFOUND : GPUPLAN_EIO, VOPT(V_CSV), "%s: %s", path,
                              strerror(e));
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EIO, VOPT(V_CSV), "%s: cannot size the file", path);
  }
  buf = gpuplan__malloc(j->ctx, (size_t)len + 1);
  if (!buf) {
    fclose(f);
    return gpuplan__nomem(j->ctx);
  }
  if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
    fclose(f);
    gpuplan__free(j->ctx, buf);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EIO, VOPT(V_CSV), "%s: read failed", path);
  }
  fclose(f);
  buf[len] = '\0';
  *out = buf;
  return GPUPLAN_OK;
}

int gpuplan__cmd_validate(gpuplan_job *j, gpuplan_doc **out) {
  const char *path = gpuplan__job_str(j, VOPT(V_CSV), NULL), *only = gpuplan__job_str(j, VOPT(V_ROWS), NULL);
  const char *cspec = gpuplan__job_str(j, VOPT(V_CONSTANTS), NULL);
  csvfile cf;
  char *p;
  vrow *rows = NULL;
  double *tmp = NULL, *tmp2 = NULL;
  size_t n = 0, cap = 0, i, nscored = 0, nskip = 0, nerr = 0;
  gpuplan__docb *b;
  gpuplan_model model;
  int rc = GPUPLAN_OK;
  if (!path) return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CSV), "a CSV file is required");
  if (cspec) {
    /* check the overrides once, before any row */
    gpuplan_perf_constants k;
    gpuplan_perf_constants_default(&k);
    GPUPLAN_TRY(apply_constants(j, cspec, &k));
  }
  memset(&cf, 0, sizeof cf);
  GPUPLAN_TRY(read_file(j, path, &cf.buf));
  p = cf.buf;
  if (p[0] == '\xef' && p[1] == '\xbb' && p[2] == '\xbf') p += 3; /* UTF-8 BOM */
  cf.nh = csv_next(&p, cf.hdr);
  if (cf.nh < 10 || strcmp(cf.hdr[0], "id") != 0 || strcmp(cf.hdr[1], "record_type") != 0) {
    gpuplan__free(j->ctx, cf.buf);
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CSV),
                              "%s: not in the calibration format (the header starts id,record_type,...)", path);
  }
  while (*p) {
    rec rr;
    rr.cf = &cf;
    rr.n = csv_next(&p, rr.f);
    if (rr.n < 10 || strcmp(col(&rr, "record_type"), "training_throughput") != 0) continue;
    if (only && !in_list(only, rr.f[0])) continue;
    if (n >= MAX_ROWS) {
      rc = gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, VOPT(V_CSV), "%s: more than %d training rows", path, MAX_ROWS);
      goto done;
    }
    if (n == cap) {
      size_t ncap = cap ? 2 * cap : 256;
      vrow *nr = gpuplan__realloc(j->ctx, rows, ncap * sizeof *rows);
      if (!nr) {
        rc = gpuplan__nomem(j->ctx);
        goto done;
      }
      rows = nr;
      cap = ncap;
    }
    if ((rc = do_row(j, &rr, &rows[n], &model))) goto done;
    if (rows[n].status == ST_SCORED) nscored++;
    else if (rows[n].status == ST_SKIPPED) nskip++;
    else nerr++;
    n++;
  }
  tmp = gpuplan__calloc(j->ctx, n + 1, sizeof *tmp);
  tmp2 = gpuplan__calloc(j->ctx, n + 1, sizeof *tmp2);
  if (!tmp || !tmp2) {
    rc = gpuplan__nomem(j->ctx);
    goto done;
  }
  if (!(b = gpuplan__doc_begin(j->ctx, "validate"))) {
    rc = gpuplan_errcode(j->ctx);
    goto done;
  }
  gpuplan__doc_str(b, "file", path);
  gpuplan__doc_str(b, "constants", cspec);
  gpuplan__doc_int(b, "rows_total", (int64_t)n);
  gpuplan__doc_int(b, "rows_scored", (int64_t)nscored);
  gpuplan__doc_int(b, "rows_skipped", (int64_t)nskip);
  gpuplan__doc_int(b, "rows_model_error", (int64_t)nerr);
  {
    size_t m = 0;
    double worst = 0, sum = 0;
    const char *worst_id = NULL;
    for (i = 0; i < n; i++) {
      if (rows[i].status != ST_SCORED) continue;
      tmp[m] = fabs(rows[i].error);
      tmp2[m] = rows[i].error;
      sum += rows[i].error;
      if (fabs(rows[i].error) > fabs(worst)) worst = rows[i].error, worst_id = rows[i].id;
      m++;
    }
    gpuplan__doc_real(b, "median_abs_error", median(tmp, m));
    gpuplan__doc_real(b, "p90_abs_error", quantile(tmp, m, 0.9));
    gpuplan__doc_real(b, "worst_error", m ? worst : NAN);
    gpuplan__doc_str(b, "worst_id", worst_id);
    gpuplan__doc_real(b, "mean_error", m ? sum / (double)m : NAN);
    gpuplan__doc_real(b, "median_error", median(tmp2, m));
  }
  gpuplan__doc_obj(b, "by");
  put_groups(b, "framework", rows, n, key_fw, tmp, tmp2);
  put_groups(b, "gpu", rows, n, key_gpu, tmp, tmp2);
  put_groups(b, "family", rows, n, key_family, tmp, tmp2);
  put_groups(b, "dp_width", rows, n, key_width, tmp, tmp2);
  put_groups(b, "framework_gpu", rows, n, key_fw_gpu, tmp, tmp2);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "rows");
  for (i = 0; i < n; i++) {
    const vrow *r = &rows[i];
    char lay[64];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "id", r->id);
    gpuplan__doc_str(b, "status", r->status == ST_SCORED ? "scored" : r->status == ST_SKIPPED ? "skipped" : "model error");
    gpuplan__doc_str(b, "reason", r->reason[0] ? r->reason : NULL);
    gpuplan__doc_str(b, "source", r->source);
    gpuplan__doc_str(b, "model", r->model);
    gpuplan__doc_str(b, "framework", gpuplan_framework_name(r->fw));
    gpuplan__doc_str(b, "gpu", r->gpu ? r->gpu->id : NULL);
    gpuplan__doc_str(b, "gpu_type", r->gpu_type);
    if (r->gpus) gpuplan__doc_int(b, "gpus", r->gpus);
    else gpuplan__doc_null(b, "gpus");
    if (r->nodes) {
      gpuplan__doc_int(b, "nodes", r->nodes);
      gpuplan__doc_int(b, "gpus_per_node", r->per_node);
    } else {
      gpuplan__doc_null(b, "nodes");
      gpuplan__doc_null(b, "gpus_per_node");
    }
    gpuplan__doc_str(b, "intra", r->intra);
    gpuplan__doc_str(b, "inter", r->inter);
    gpuplan__doc_real(b, "nics_per_node", r->nics);
    if (r->has_layout) {
      layout_text(r, lay, sizeof lay);
      gpuplan__doc_str(b, "layout", lay);
      gpuplan__doc_int(b, "tp", r->o.tp);
      gpuplan__doc_int(b, "pp", r->o.pp);
      gpuplan__doc_int(b, "cp", r->o.cp);
      gpuplan__doc_int(b, "dp", r->o.dp);
      gpuplan__doc_int(b, "vpp", r->o.vpp);
      gpuplan__doc_int(b, "micro_batch", r->o.micro_batch);
      gpuplan__doc_int(b, "microbatches", r->o.microbatches);
      gpuplan__doc_str(b, "dp_mode", gpuplan_dp_mode_name(r->o.dp_mode));
      gpuplan__doc_str(b, "recompute", gpuplan_recompute_name(r->o.recompute));
      gpuplan__doc_str(b, "precision", gpuplan_precision_name(r->o.precision));
      gpuplan__doc_bool(b, "sequence_parallel", r->o.sequence_parallel);
      gpuplan__doc_bool(b, "flash_attention", r->o.flash_attention);
      gpuplan__doc_str(b, "family", r->family[0] ? r->family : NULL);
      gpuplan__doc_str(b, "dp_width", r->dp_width);
    }
    gpuplan__doc_real(b, "measured_tokens_per_s", r->measured);
    gpuplan__doc_str(b, "measured_from", r->measured_from);
    gpuplan__doc_real(b, "predicted_tokens_per_s", r->predicted);
    gpuplan__doc_real(b, "error", r->status == ST_SCORED ? r->error : NAN);
    gpuplan__doc_real(b, "unscored_error", r->status == ST_MODEL_ERROR ? r->error : NAN);
    gpuplan__doc_real(b, "predicted_step_s", r->step_s);
    gpuplan__doc_real(b, "predicted_mfu", r->mfu);
    gpuplan__doc_real(b, "exposed_comm_s", r->exposed_comm_s);
    gpuplan__doc_real(b, "bytes_per_nic", r->bytes_per_nic);
    if (r->capacity) {
      gpuplan__doc_uint(b, "memory_bytes", r->mem_bytes);
      gpuplan__doc_uint(b, "capacity_bytes", r->capacity);
      gpuplan__doc_bool(b, "fits", r->fits);
    } else {
      gpuplan__doc_null(b, "memory_bytes");
      gpuplan__doc_null(b, "capacity_bytes");
      gpuplan__doc_null(b, "fits");
    }
    gpuplan__doc_str(b, "assumptions", r->assumptions[0] ? r->assumptions : NULL);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  rc = gpuplan__doc_finish(b, out);
done:
  gpuplan__free(j->ctx, tmp2);
  gpuplan__free(j->ctx, tmp);
  gpuplan__free(j->ctx, rows);
  gpuplan__free(j->ctx, cf.buf);
  return rc;
}
