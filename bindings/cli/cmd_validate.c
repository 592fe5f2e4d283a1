/* cmd_validate.c: gpuplan validate FILE.csv: predicted vs measured tokens/s
 * for every training_throughput row of a calibration-format CSV. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char validate_usage[] =
    "usage: gpuplan validate FILE.csv [--json] [--constants G,H,A,E,C,O,B]\n"
    "\n"
    "For every training_throughput row of a file in the format of\n"
    "shared/reference/training_runs_calibration.csv, rebuild the run (model\n"
    "shape, GPUs, layout, batch, recompute, precision) on DGX-style nodes of\n"
    "8 GPUs, predict tokens/s with gpuplan's performance model, and compare\n"
    "with the measured tokens/s (from tokens_per_s, step_time_s, or the row's\n"
    "own TFLOP/s with its own FLOP formula).  Rows whose configuration is\n"
    "incomplete are counted and skipped with the reason.\n"
    "\n"
    "  --constants  override the fitted constants (calibration only):\n"
    "               gemm_eff_max,gemm_half_dim,attn_eff,elementwise_bytes,\n"
    "               coll_eff,dp_overlap,attn_balance\n";

#define MAXF 64

/* Split one CSV record (RFC 4180) starting at *p into fields; returns the
 * count, advances *p past the record.  Fields point into buf (modified). */
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
  *p = s;
  return n;
}

static double num(const char *s) {
  char *e;
  double v;
  if (!s || !*s) return NAN;
  v = strtod(s, &e);
  return e == s ? NAN : v;
}

static int has(const char *s, const char *w) { return s && strstr(s, w) != NULL; }

typedef struct row {
  char *f[MAXF];
  int n;
} row;

static const char *col(const row *r, char **hdr, int nh, const char *name) {
  int i;
  for (i = 0; i < nh && i < r->n; i++)
    if (strcmp(hdr[i], name) == 0) return r->f[i];
  return "";
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int cmd_validate(cli *c, int argc, char **argv) {
  const char *file = NULL;
  char *buf, *p, *hdr[MAXF];
  int json = 0, nh, i, rc, nrows = 0, nskip = 0, nok = 0, first = 1;
  gpuplan_perf_constants k;
  double errs[1024], worst = 0;
  const char *worst_id = "";
  gpuplan_perf_constants_default(&k);
  for (i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(validate_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (strcmp(argv[i], "--constants") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%lf,%lf,%lf,%lf,%lf,%lf,%lf", &k.gemm_eff_max, &k.gemm_half_dim,
                 &k.attn_eff, &k.elementwise_bytes, &k.coll_eff, &k.dp_overlap, &k.attn_balance) != 7)
        return cli_fail(c, EXIT_USAGE, "validate: --constants needs seven comma-separated numbers");
    } else if (argv[i][0] == '-') {
      return cli_fail(c, EXIT_USAGE, "validate: unknown option '%s'", argv[i]);
    } else {
      file = argv[i];
    }
  }
  if (!file) return cli_fail(c, EXIT_USAGE, "validate: needs FILE.csv");
  if ((rc = cli_catalog(c))) return rc;
  buf = slurp(file);
  if (!buf) return cli_fail(c, EXIT_RUNTIME, "validate: cannot read %s", file);
  p = buf;
  nh = csv_next(&p, hdr);
  if (nh < 10 || strcmp(hdr[0], "id") != 0) {
    free(buf);
    return cli_fail(c, EXIT_RUNTIME, "validate: %s: not in the calibration format (header must start with id,record_type,...)", file);
  }
  if (json) printf("{\n  \"rows\": [");
  else printf("%-6s %-28s %-10s %5s %-14s %12s %12s %7s  %s\n", "ID", "MODEL", "GPU", "GPUS",
              "TP.PP.CP.DP", "MEASURED", "PREDICTED", "ERROR", "MFU (pred)");
  while (*p) {
    row r;
    const char *why = NULL, *gpu_id, *gt, *prec, *rec, *shard;
    gpuplan_model m;
    gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
    gpuplan_cluster cl;
    gpuplan_perf pf;
    const gpuplan_gpu *g;
    double L, h, a, s, V, gpus, G, b, tp, pp, cpd, dp, meas = NAN, err;
    r.n = csv_next(&p, r.f);
    if (r.n < 10 || strcmp(col(&r, hdr, nh, "record_type"), "training_throughput") != 0) continue;
    nrows++;
    L = num(col(&r, hdr, nh, "layers"));
    h = num(col(&r, hdr, nh, "hidden"));
    a = num(col(&r, hdr, nh, "heads"));
    s = num(col(&r, hdr, nh, "seq_len"));
    V = num(col(&r, hdr, nh, "vocab"));
    gpus = num(col(&r, hdr, nh, "gpu_count"));
    G = num(col(&r, hdr, nh, "global_batch_seqs"));
    b = num(col(&r, hdr, nh, "micro_batch"));
    tp = num(col(&r, hdr, nh, "tp"));
    pp = num(col(&r, hdr, nh, "pp"));
    cpd = num(col(&r, hdr, nh, "cp"));
    gt = col(&r, hdr, nh, "gpu_type");
    if (isnan(tp)) tp = 1;
    if (isnan(pp)) pp = 1;
    if (isnan(cpd)) cpd = 1;
    if (isnan(L) || isnan(h) || isnan(a)) why = "model shape (layers, hidden, heads) not given";
    else if (isnan(s) || isnan(V)) why = "seq_len or vocab not given";
    else if (isnan(gpus)) why = "gpu_count not given";
    else if (isnan(G) || isnan(b)) why = "global batch or micro-batch not given";
    else if (*col(&r, hdr, nh, "tp") && isnan(num(col(&r, hdr, nh, "tp")))) why = "tp degree not given";
    gpu_id = has(gt, "H100") ? "h100-sxm5-80gb" : has(gt, "H200") ? "h200-sxm-141gb"
           : has(gt, "A100") && has(gt, "40") ? "a100-sxm4-40gb" : has(gt, "A100") ? "a100-sxm4-80gb" : NULL;
    if (!why && !gpu_id) why = "GPU type not in the catalog";
    dp = gpus / (tp * pp * cpd);
    if (!why && (dp != floor(dp) || dp < 1)) why = "gpu_count is not a multiple of tp*pp*cp";
    /* measured tokens/s */
    if (!why) {
      double tps = num(col(&r, hdr, nh, "tokens_per_s")), tpg = num(col(&r, hdr, nh, "tokens_per_s_per_gpu"));
      double st = num(col(&r, hdr, nh, "step_time_s")), tf = num(col(&r, hdr, nh, "tflops_per_gpu"));
      const char *inc = col(&r, hdr, nh, "flops_count_includes_recompute");
      if (!isnan(tps)) meas = tps;
      else if (!isnan(tpg)) meas = tpg * gpus;
      else if (!isnan(st)) meas = G * s / st;
      else if (!isnan(tf) && has(col(&r, hdr, nh, "source_short"), "Narayanan")) {
        /* the paper's own count: 96 l h^2 (1 + s/6h + V/16lh) per token with full recompute */
        double per_tok = 96 * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
        meas = tf * 1e12 * gpus / per_tok;
        (void)inc;
      } else {
        why = "no measured tokens/s, step time, or TFLOP/s with a known FLOP formula";
      }
    }
    if (why) {
      nskip++;
      if (json) {
        printf("%s\n    {\"id\": ", first ? "" : ",");
        json_str(stdout, r.f[0]);
        printf(", \"skipped\": ");
        json_str(stdout, why);
        printf("}");
        first = 0;
      } else {
        printf("%-6s %-28.28s skipped: %s\n", r.f[0], col(&r, hdr, nh, "model"), why);
      }
      continue;
    }
    /* the model */
    memset(&m, 0, sizeof m);
    m.id = r.f[0];
    m.name = col(&r, hdr, nh, "model");
    m.family = "validation";
    m.arch = "decoder";
    m.layers = (int64_t)L;
    m.hidden = (int64_t)h;
    m.heads = (int64_t)a;
    m.kv_heads = isnan(num(col(&r, hdr, nh, "kv_heads"))) ? m.heads : (int64_t)num(col(&r, hdr, nh, "kv_heads"));
    m.head_dim = m.hidden / m.heads;
    m.ffn_hidden = isnan(num(col(&r, hdr, nh, "ffn_hidden"))) ? 4 * m.hidden : (int64_t)num(col(&r, hdr, nh, "ffn_hidden"));
    m.ffn_type = has(m.name, "Llama") || has(m.name, "llama") ? "swiglu" : "gelu";
    m.vocab = (int64_t)V;
    m.seq_len = (int64_t)s;
    m.max_seq_len = NAN;
    m.tied_embeddings = 1;
    m.position = "rope";
    m.norm = "layernorm";
    m.experts = 1;
    m.top_k = 1;
    prec = col(&r, hdr, nh, "precision");
    rec = col(&r, hdr, nh, "recompute");
    shard = col(&r, hdr, nh, "sharding");
    o.tp = (int64_t)tp;
    o.pp = (int64_t)pp;
    o.cp = (int64_t)cpd;
    o.dp = (int64_t)dp;
    o.micro_batch = (int64_t)b;
    o.seq_len = (int64_t)s;
    o.vpp = isnan(num(col(&r, hdr, nh, "vpp"))) ? 1 : (int64_t)num(col(&r, hdr, nh, "vpp"));
    if (o.vpp > 1) {
      o.schedule = GPUPLAN_SCHED_INTERLEAVED;
      /* Megatron's vpp counts model chunks over all stages in some configs:
       * keep the layers-per-chunk integral. */
      if (m.layers % (o.pp * o.vpp)) o.vpp = 1, o.schedule = GPUPLAN_SCHED_1F1B;
    }
    o.sequence_parallel = has(col(&r, hdr, nh, "seq_parallel"), "yes");
    o.recompute = has(rec, "full") ? GPUPLAN_RECOMPUTE_FULL : has(rec, "selective") ? GPUPLAN_RECOMPUTE_SELECTIVE : GPUPLAN_RECOMPUTE_NONE;
    o.precision = has(prec, "fp8") || has(prec, "FP8") ? GPUPLAN_PREC_FP8 : GPUPLAN_PREC_BF16_MIXED;
    if (has(shard, "FULL_SHARD")) o.dp_mode = GPUPLAN_DP_FSDP_FULL, o.convention = GPUPLAN_CONV_FSDP;
    else if (has(shard, "SHARD_GRAD_OP")) o.dp_mode = GPUPLAN_DP_FSDP_GRAD_OP, o.convention = GPUPLAN_CONV_FSDP;
    else if (has(shard, "ZeRO-1") || has(shard, "distributed optimizer")) o.dp_mode = GPUPLAN_DP_ZERO1, o.convention = GPUPLAN_CONV_MEGATRON;
    else o.convention = GPUPLAN_CONV_MEGATRON;
    if (m.layers % o.pp) o.first_stage_layers = m.layers - (m.layers / o.pp) * (o.pp - 1), o.last_stage_layers = 0;
    if ((rc = gpuplan_catalog_gpu(c->cat, gpu_id, &g)) ||
        (rc = gpuplan_cluster_default(c->ctx, c->cat, g, (int64_t)gpus, 8, &cl)) ||
        (rc = gpuplan_perf_eval(c->ctx, &m, &cl, &o, (int64_t)G, 0, &k, &pf))) {
      nskip++;
      if (json) {
        printf("%s\n    {\"id\": ", first ? "" : ",");
        json_str(stdout, r.f[0]);
        printf(", \"skipped\": ");
        json_str(stdout, gpuplan_errmsg(c->ctx));
        printf("}");
        first = 0;
      } else {
        printf("%-6s %-28.28s skipped: %s\n", r.f[0], m.name, gpuplan_errmsg(c->ctx));
      }
      continue;
    }
    err = pf.tokens_per_s / meas - 1;
    if (nok < 1024) errs[nok] = fabs(err);
    nok++;
    if (fabs(err) > fabs(worst)) {
      worst = err;
      worst_id = r.f[0];
    }
    if (json) {
      printf("%s\n    {\"id\": ", first ? "" : ",");
      json_str(stdout, r.f[0]);
      printf(", \"measured_tokens_per_s\": ");
      json_num(stdout, meas);
      printf(", \"predicted_tokens_per_s\": ");
      json_num(stdout, pf.tokens_per_s);
      printf(", \"error\": ");
      json_num(stdout, err);
      printf(", \"mfu\": ");
      json_num(stdout, pf.mfu);
      printf("}");
      first = 0;
    } else {
      char lay[96];
      snprintf(lay, sizeof lay, "%g.%g.%g.%g", tp, pp, cpd, dp);
      printf("%-6s %-28.28s %-10.10s %5.0f %-14s %12.0f %12.0f %+6.1f%%  %.1f%%\n", r.f[0], m.name,
             g->id, gpus, lay, meas, pf.tokens_per_s, 100 * err, 100 * pf.mfu);
    }
  }
  {
    double median = 0;
    size_t n = nok < 1024 ? (size_t)nok : 1024;
    if (n) {
      qsort(errs, n, sizeof *errs, cmp_double);
      median = n % 2 ? errs[n / 2] : (errs[n / 2 - 1] + errs[n / 2]) / 2;
    }
    if (json) {
      printf("\n  ],\n  \"rows_total\": %d,\n  \"rows_compared\": %d,\n  \"rows_skipped\": %d,\n"
             "  \"median_abs_error\": ", nrows, nok, nskip);
      json_num(stdout, median);
      printf(",\n  \"worst_error\": ");
      json_num(stdout, worst);
      printf(",\n  \"worst_id\": ");
      json_str(stdout, worst_id);
      printf("\n}\n");
    } else {
      printf("\n%d training_throughput rows: %d compared, %d skipped (reasons above)\n", nrows, nok, nskip);
      printf("median |error| %.1f%%, worst %+.1f%% (%s)\n", 100 * median, 100 * worst, worst_id);
    }
  }
  free(buf);
  return EXIT_OK;
}
