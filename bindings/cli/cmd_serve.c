/* cmd_serve.c: gpuplan serve: the library's serve command (gpuplan_job_run),
 * rendered as text from its documents (serve, serve-search, serve-validate).
 * No serving rule lives here. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_serve(cli *c, int argc, char **argv);

static double gib(double b) { return b / 1073741824.0; }

static const char serve_about[] =
    "How an inference engine (vLLM, SGLang, TensorRT-LLM, TGI) lays out MODEL on\n"
    "a GPU (weights, the profile run's activation peak, memory outside PyTorch,\n"
    "KV blocks: the \"GPU KV cache size\" the engine prints, and how many requests\n"
    "of max_model_len fit), then the latency and throughput of a load: offline\n"
    "(every request queued), --concurrency N clients, a Poisson --rate R, or a\n"
    "static --batch B: TTFT, inter-token latency, TPOT and end-to-end latency at\n"
    "p50/p90/p99, tokens/s, the cost per million input and output tokens, and\n"
    "the --slo-ttft/--slo-itl check.  A node without GPUs serves on its CPUs.\n"
    "--search: the cheapest SKU, tensor-parallel degree and replicas (and CPU\n"
    "nodes) that meet the SLO at --rate.  --validate FILE: the published\n"
    "serving measurements of FILE scored per metric.\n";

static void fmt_ms(char *buf, size_t cap, double s) {
  if (!isfinite(s)) snprintf(buf, cap, "-");
  else if (s < 1) snprintf(buf, cap, "%.1f ms", s * 1e3);
  else snprintf(buf, cap, "%.2f s", s);
}

static void print_quant_row(table *t, const char *name, const gpuplan_value *q) {
  const char *keys[] = {"p50", "p90", "p99", "mean"};
  char b[32];
  size_t i;
  table_cell(t, "%s", name);
  for (i = 0; i < 4; i++) {
    fmt_ms(b, sizeof b, dnum(q, keys[i]));
    table_cell(t, "%s", b);
  }
}

static void print_tokens(const char *label, double v) {
  if (isfinite(v)) printf("%s%.0f", label, v);
}

static int render_serve(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *m = dv(r, "memory"), *sp = dv(r, "speed"), *lay = dv(r, "layout");
  const gpuplan_value *ld = dv(r, "load"), *comps = dv(m, "components"), *d = dv(r, "defaults");
  const gpuplan_value *notes = dv(r, "notes");
  const gpuplan_value *logl = dv(m, "engine_log"), *cost = dv(r, "cost"), *slo = dv(r, "slo");
  char name[256], hw[256], tmp[64];
  size_t i, n;
  table *t;
  (void)c;
  term_safe(dstr(r, "model"), name, sizeof name);
  if (dbool(r, "cpu_only")) term_safe(dstr(r, "node"), hw, sizeof hw);
  else term_safe(dstr(r, "gpu_name"), hw, sizeof hw);
  printf("%s (%.3gB params, %s) served by %s %s on %s%s", name, dnum(r, "params") / 1e9, dstr(r, "arch"),
         dstr(r, "engine"), dstr(r, "engine_version"), dbool(r, "cpu_only") ? "the CPUs of " : "", hw);
  if (dbool(r, "cpu_only"))
    printf(": %lld replica%s\n", (long long)dint(lay, "replicas"), dint(lay, "replicas") == 1 ? "" : "s");
  else
    printf(": tp %lld, pp %lld%s, %lld replica%s (%lld GPU%s)\n", (long long)dint(lay, "tp"),
           (long long)dint(lay, "pp"), dint(lay, "ep") > 1 ? ", expert parallel" : "", (long long)dint(lay, "replicas"),
           dint(lay, "replicas") == 1 ? "" : "s", (long long)dint(lay, "gpus"), dint(lay, "gpus") == 1 ? "" : "s");
  if (strcmp(dstr(r, "model_source"), "catalog") != 0)
    printf("  model: from its %s%s%s\n", dstr(r, "model_source"), disnull(r, "shape_of") ? "" : ", the catalog's ",
           disnull(r, "shape_of") ? "" : dstr(r, "shape_of"));
  printf("  weights %s", dstr(lay, "weights"));
  if (dbool(m, "has_kv_cache"))
    printf(", KV %s (%s, %lld-token blocks)", dstr(lay, "kv_dtype"), dbool(lay, "paged") ? "paged" : "contiguous",
           (long long)dint(m, "block_tokens"));
  printf(", max_model_len %lld, max_num_seqs %lld, max_num_batched_tokens %lld%s%s\n",
         (long long)dint(m, "max_model_len"), (long long)dint(m, "max_num_seqs"),
         (long long)dint(m, "max_num_batched_tokens"), dbool(m, "chunked_prefill") ? ", chunked prefill" : "",
         dbool(r, "cpu_only") ? "" : dbool(lay, "cuda_graphs") ? ", CUDA graphs" : ", eager");
  n = gpuplan_value_count(d);
  if (n) {
    printf("  defaults:");
    for (i = 0; i < n; i++)
      printf("%s %s %s", i ? "," : "", dstr(gpuplan_value_at(d, i), "option"), dstr(gpuplan_value_at(d, i), "value"));
    printf("\n");
  }

  printf("\nmemory of %s: %s\n", dbool(r, "cpu_only") ? "the node" : "one GPU", dstr(m, "rule"));
  t = table_new(3);
  table_cell(t, "COMPONENT");
  table_cell(t, "GiB");
  table_cell(t, "HOW");
  table_cell(t, "total the engine sees");
  table_cell(t, "%.2f", gib(dnum(m, "visible_bytes")));
  table_cell(t, "%s", dstr(m, "visible_source"));
  table_cell(t, "budget");
  table_cell(t, "%.2f", gib(dnum(m, "budget_bytes")));
  table_cell(t, "%.0f%% of the total", 100 * dnum(m, "budget_bytes") / dnum(m, "visible_bytes"));
  for (i = 0; i < gpuplan_value_count(comps); i++) {
    const gpuplan_value *x = gpuplan_value_at(comps, i);
    table_cell(t, "%s %s", dbool(x, "in_budget") ? "-" : "+", dstr(x, "name"));
    table_cell(t, "%.2f", gib(dnum(x, "bytes")));
    table_cell(t, "%s%s", dbool(x, "in_budget") ? "" : "(outside the budget) ", dstr(x, "formula"));
  }
  table_cell(t, "headroom");
  table_cell(t, "%.2f", gib(dnum(m, "headroom_bytes")));
  table_cell(t, "%s", dnum(m, "headroom_bytes") >= 0 ? "left on the device" : "SHORT: the engine runs out of memory");
  table_align(t, 1, 'r');
  table_print(t, stdout);
  table_free(t);
  if (dbool(m, "has_kv_cache")) {
    printf("KV cache: %.0f bytes per token%s; %.0f blocks of %lld tokens = %.0f tokens; %.2f requests of "
           "max_model_len %lld at once\n",
           dnum(m, "kv_bytes_per_token"), dbool(r, "cpu_only") ? "" : " per GPU", dnum(m, "kv_blocks"),
           (long long)dint(m, "block_tokens"),
           dnum(m, "kv_tokens"), dnum(m, "max_concurrency"), (long long)dint(m, "max_model_len"));
  } else {
    printf("no KV cache: %s is an encoder (each request is one forward pass)\n", name);
  }
  n = gpuplan_value_count(logl);
  if (n) {
    printf("the engine would log:\n");
    for (i = 0; i < n; i++) {
      char line[512];
      printf("  %s\n", term_safe(gpuplan_value_string(gpuplan_value_at(logl, i), NULL), line, sizeof line));
    }
  }

  if (!dv(r, "speed")) {
    printf("\nDOES NOT FIT\n");
    n = gpuplan_value_count(notes);
    for (i = 0; i < n; i++) {
      char line[512];
      printf("note: %s\n", term_safe(gpuplan_value_string(gpuplan_value_at(notes, i), NULL), line, sizeof line));
    }
    return EXIT_OK;
  }
  printf("\nload: %s", dstr(ld, "kind"));
  if (!disnull(ld, "rate")) printf(" at %.4g requests/s", dnum(ld, "rate"));
  if (!disnull(ld, "concurrency")) printf(" of %.0f", dnum(ld, "concurrency"));
  printf(", %.0f prompt", dnum(ld, "input_len"));
  if (dbool(m, "has_kv_cache")) printf(" + %.0f generated", dnum(ld, "output_len"));
  printf(" tokens (%s lengths)\n", dstr(ld, "lengths"));
  if (dbool(sp, "saturated")) {
    printf("SATURATED: the replicas serve at most %.4g requests/s; latencies grow without bound\n",
           dnum(sp, "capacity_requests_per_s"));
  } else if (!disnull(sp, "ttft_s.p50") || !disnull(sp, "ttft_s.mean")) {
    t = table_new(5);
    table_cell(t, "LATENCY");
    table_cell(t, "p50");
    table_cell(t, "p90");
    table_cell(t, "p99");
    table_cell(t, "mean");
    print_quant_row(t, "TTFT", dv(sp, "ttft_s"));
    if (dbool(m, "has_kv_cache")) {
      print_quant_row(t, "ITL", dv(sp, "itl_s"));
      print_quant_row(t, "TPOT", dv(sp, "tpot_s"));
    }
    print_quant_row(t, "end to end", dv(sp, "e2e_s"));
    for (i = 1; i < 5; i++) table_align(t, (int)i, 'r');
    table_print(t, stdout);
    table_free(t);
  }
  printf("throughput: %.4g requests/s", dnum(sp, "throughput.requests_per_s"));
  if (dbool(m, "has_kv_cache"))
    printf(", %.0f output tokens/s (%.0f per GPU)", dnum(sp, "throughput.output_tokens_per_s"),
           dnum(sp, "throughput.output_tokens_per_s_per_gpu"));
  printf(", %.0f input tokens/s; at most %.4g requests/s\n", dnum(sp, "throughput.input_tokens_per_s"),
         dnum(sp, "capacity_requests_per_s"));
  {
    const gpuplan_value *it = dv(sp, "iteration");
    char a[32], b[32], cc[32], e[32], f[32], g[32], h[32];
    fmt_ms(a, sizeof a, dnum(it, "seconds"));
    fmt_ms(b, sizeof b, dnum(it, "weights_s"));
    fmt_ms(cc, sizeof cc, dnum(it, "kv_s"));
    fmt_ms(e, sizeof e, dnum(it, "compute_s"));
    fmt_ms(f, sizeof f, dnum(it, "attention_s"));
    fmt_ms(g, sizeof g, dnum(it, "tp_comm_s"));
    fmt_ms(h, sizeof h, dnum(it, "overhead_s"));
    printf("one iteration with %.1f running (at most %.0f): %s, %s-bound: weights %s, KV %s, GEMMs %s, attention %s, "
           "TP/PP %s, overhead %s\n",
           dnum(sp, "running"), dnum(sp, "batch_cap"), a, dstr(it, "bound"), b, cc, e, f, g, h);
    fmt_ms(a, sizeof a, dnum(sp, "prefill_s"));
    printf("prefill of one prompt alone: %s (%.0f tokens/s)\n", a, dnum(sp, "prefill_tokens_per_s"));
  }
  printf("kernels: %s (%.0f TFLOP/s peak, %.0f GB/s; %s)\n", dstr(sp, "kernels.weights"),
         dnum(sp, "kernels.gemm_peak_flops") / 1e12, dnum(sp, "kernels.mem_bw_bytes_s") / 1e9,
         dstr(sp, "kernels.source"));
  if (!disnull(sp, "tp_fabric.fabric"))
    printf("tensor-parallel fabric: %s (%.0f GB/s per GPU, %s), %lld all-reduces per token\n",
           dstr(sp, "tp_fabric.fabric"), dnum(sp, "tp_fabric.bw_bytes_s") / 1e9,
           dbool(sp, "tp_fabric.nvlink") ? "NVLink" : "PCIe", (long long)dint(sp, "tp_fabric.allreduces_per_token"));

  if (!disnull(cost, "per_hour"))
    printf("\ncost: %.4g %s/h (%s%s); %.4g %s per million input tokens, %.4g per million output tokens\n",
           dnum(cost, "per_hour"), dstr(cost, "currency"), dstr(cost, "priced_node"),
           disnull(cost, "nodes") ? "" : (snprintf(tmp, sizeof tmp, ", %.0f node%s", dnum(cost, "nodes"),
                                                    dnum(cost, "nodes") == 1 ? "" : "s"), tmp),
           dnum(cost, "per_million_input"), dstr(cost, "currency"), dnum(cost, "per_million_output"));
  else
    printf("\ncost: no price in the catalog for this hardware (give --price-per-gpu-hour)\n");
  if (!disnull(slo, "met")) {
    char a[32], b[32];
    fmt_ms(a, sizeof a, dnum(sp, "ttft_s.p99"));
    printf("SLO at %s: ", dstr(slo, "quantile"));
    if (!disnull(slo, "ttft_ms")) {
      const char *q = dstr(slo, "quantile");
      char path[32];
      snprintf(path, sizeof path, "ttft_s.%s", q);
      fmt_ms(a, sizeof a, dnum(sp, path));
      printf("TTFT %s vs %.4g ms %s", a, dnum(slo, "ttft_ms"), dbool(slo, "ttft_met") ? "met" : "MISSED");
    }
    if (!disnull(slo, "itl_ms")) {
      char path[32];
      snprintf(path, sizeof path, "itl_s.%s", dstr(slo, "quantile"));
      fmt_ms(b, sizeof b, dnum(sp, path));
      printf("%sITL %s vs %.4g ms %s", disnull(slo, "ttft_ms") ? "" : "; ", b, dnum(slo, "itl_ms"),
             dbool(slo, "itl_met") ? "met" : "MISSED");
    }
    printf(" -> %s\n", dbool(slo, "met") ? "MET" : "MISSED");
  }
  n = gpuplan_value_count(notes);
  for (i = 0; i < n; i++) {
    char line[512];
    printf("note: %s\n", term_safe(gpuplan_value_string(gpuplan_value_at(notes, i), NULL), line, sizeof line));
  }
  (void)print_tokens;
  return EXIT_OK;
}

static int render_search(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *best = dv(r, "best");
  size_t i, n = gpuplan_value_count(best);
  table *t;
  (void)c;
  printf("%s (%.3gB) with %s at %.4g requests/s of %.0f + %.0f tokens; SLO at %s:", dstr(r, "model"),
         dnum(r, "params") / 1e9, dstr(r, "engine"), dnum(r, "rate"), dnum(r, "input_len"), dnum(r, "output_len"),
         dstr(r, "slo_quantile"));
  if (!disnull(r, "slo_ttft_ms")) printf(" TTFT <= %.4g ms", dnum(r, "slo_ttft_ms"));
  if (!disnull(r, "slo_itl_ms")) printf(" ITL <= %.4g ms", dnum(r, "slo_itl_ms"));
  printf("\nconfigurations tried: %lld; the model does not fit %lld, miss the SLO at any rate %lld, meet it %lld\n",
         (long long)dint(r, "tried"), (long long)dint(r, "too_big"), (long long)dint(r, "slo_missed"),
         (long long)dint(r, "meeting"));
  if (!n) {
    printf("nothing meets the SLO\n");
    return EXIT_OK;
  }
  t = table_new(9);
  table_cell(t, "#");
  table_cell(t, "HARDWARE");
  table_cell(t, "TP");
  table_cell(t, "REPLICAS");
  table_cell(t, "REQ/S EACH");
  table_cell(t, "TTFT");
  table_cell(t, "ITL");
  table_cell(t, "COST/H");
  table_cell(t, "PER M OUT");
  for (i = 0; i < n; i++) {
    const gpuplan_value *b = gpuplan_value_at(best, i);
    char a[32], e[32];
    table_cell(t, "%lld", (long long)dint(b, "rank"));
    table_cell(t, "%s", dbool(b, "cpu_only") ? dstr(b, "node") : dstr(b, "gpu"));
    table_cell(t, "%lld", (long long)dint(b, "tp"));
    table_cell(t, "%lld", (long long)dint(b, "replicas"));
    table_cell(t, "%.4g", dnum(b, "per_replica_rate"));
    fmt_ms(a, sizeof a, dnum(b, "ttft_s"));
    fmt_ms(e, sizeof e, dnum(b, "itl_s"));
    table_cell(t, "%s", a);
    table_cell(t, "%s", e);
    if (disnull(b, "per_hour")) table_cell(t, "no price");
    else table_cell(t, "%.4g %s", dnum(b, "per_hour"), dstr(b, "currency"));
    if (disnull(b, "per_million_output")) table_cell(t, "-");
    else table_cell(t, "%.4g", dnum(b, "per_million_output"));
  }
  for (i = 2; i < 9; i++) table_align(t, (int)i, 'r');
  table_print(t, stdout);
  table_free(t);
  for (i = 0; i < n; i++) {
    const gpuplan_value *b = gpuplan_value_at(best, i);
    printf("  %lld. %s\n", (long long)dint(b, "rank"), dstr(b, "why"));
  }
  return EXIT_OK;
}

static void stats_table(const char *title, const gpuplan_value *arr, const char *key) {
  size_t i, n = gpuplan_value_count(arr);
  table *t;
  if (!n) return;
  printf("\n%s\n", title);
  t = table_new(key ? 7 : 6);
  table_cell(t, "METRIC");
  if (key) table_cell(t, "%s", strcmp(key, "engine") == 0 ? "ENGINE" : "GPU");
  table_cell(t, "ROWS");
  table_cell(t, "MEDIAN |ERR|");
  table_cell(t, "P90");
  table_cell(t, "WORST");
  table_cell(t, "BIAS");
  for (i = 0; i < n; i++) {
    const gpuplan_value *s = gpuplan_value_at(arr, i);
    table_cell(t, "%s", dstr(s, "metric"));
    if (key) table_cell(t, "%s", dstr(s, key));
    table_cell(t, "%lld", (long long)dint(s, "n"));
    table_cell(t, "%.1f%%", 100 * dnum(s, "median_abs_error"));
    table_cell(t, "%.1f%%", 100 * dnum(s, "p90_abs_error"));
    table_cell(t, "%.1f%% (%s)", 100 * dnum(s, "worst_abs_error"), dstr(s, "worst_id"));
    table_cell(t, "%+.1f%%", 100 * dnum(s, "median_error"));
  }
  table_print(t, stdout);
  table_free(t);
}

static int render_validate(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc), *sk = dv(r, "skipped_rows"), *as = dv(r, "assumptions");
  size_t i, n;
  (void)c;
  printf("%s: %lld rows, %lld scored, %lld skipped\n", dstr(r, "file"), (long long)dint(r, "rows"),
         (long long)dint(r, "scored"), (long long)dint(r, "skipped"));
  stats_table("per metric (|predicted / measured - 1|):", dv(r, "metrics"), NULL);
  stats_table("by engine:", dv(r, "by_engine"), "engine");
  stats_table("by GPU:", dv(r, "by_gpu"), "gpu");
  n = gpuplan_value_count(as);
  if (n) printf("\nassumptions:\n");
  for (i = 0; i < n; i++)
    printf("  %s (%lld rows)\n", dstr(gpuplan_value_at(as, i), "text"),
           (long long)dint(gpuplan_value_at(as, i), "rows"));
  n = gpuplan_value_count(sk);
  if (n) printf("\nskipped:\n");
  for (i = 0; i < n; i++) {
    const gpuplan_value *s = gpuplan_value_at(sk, i);
    printf("  %s %s: %s\n", dstr(s, "id"), dstr(s, "metric"), dstr(s, "why"));
  }
  return EXIT_OK;
}

static int render(cli *c, gpuplan_doc *doc) {
  const char *kind = gpuplan_doc_kind(doc);
  if (strcmp(kind, "serve-search") == 0) return render_search(c, doc);
  if (strcmp(kind, "serve-validate") == 0) return render_validate(c, doc);
  return render_serve(c, doc);
}

/* --check: exit 3 when the SLO is missed, the model does not fit or the rate saturates. */
static int serve_status(const gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc);
  if (strcmp(gpuplan_doc_kind(doc), "serve-search") == 0) return dint(r, "meeting") > 0 ? EXIT_OK : 3;
  if (strcmp(gpuplan_doc_kind(doc), "serve") != 0) return EXIT_OK;
  if (!dbool(r, "memory.fits") || dbool(r, "speed.saturated")) return 3;
  if (!disnull(r, "slo.met") && !dbool(r, "slo.met")) return 3;
  return EXIT_OK;
}

static int serve_extra(cli *c, void *payload, int argc, char **argv, int i) {
  (void)payload;
  (void)argc;
  if (strcmp(argv[i], "--check") != 0) return 0;
  c->status = serve_status;
  return 1;
}

int cmd_serve(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("serve"), argc, argv,
                 "usage: gpuplan serve MODEL (--gpu SKU [--tp N] [--gpus G] | --node VM)\n"
                 "                     [--engine vllm|sglang|trtllm|tgi]\n"
                 "                     [--input-len I --output-len O] [--concurrency N | --rate R | --batch B]\n"
                 "                     [--slo-ttft MS --slo-itl MS [--slo-quantile p50|p90|p99]] [--check] [--json]\n"
                 "       gpuplan serve MODEL --search --rate R --slo-ttft MS --slo-itl MS [--top K] [--json]\n"
                 "       gpuplan serve --validate FILE [--validate-rows ID,...] [--json]",
                 serve_about, render, serve_extra, NULL);
}
