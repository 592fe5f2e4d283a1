#define _POSIX_C_SOURCE 200809L
/* bench_serve.c: the serving planner's speed (issue 13): one serving
 * evaluation (Llama-3-8B on one H100 with vLLM at 4 requests/s: engine
 * memory, the queue's fixed point, p50/p90/p99, cost, the document) in
 * microseconds, and one SLO search (every SKU x TP degree and the CPU nodes,
 * a bisection on the rate each) in milliseconds.  Medians of 7 rounds;
 * printed, and checked against the budgets: an evaluation under
 * 1000 us, a search under 1000 ms (exit 1 beyond).
 *   bench_serve [EVALS] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpuplan.h"

static int eval(gpuplan_job *job) {
  gpuplan_doc *doc;
  int rc;
  gpuplan_job_reset(job);
  if ((rc = gpuplan_job_set(job, "model", "llama-3-8b")) || (rc = gpuplan_job_set(job, "gpu", "h100-sxm5-80gb")) ||
      (rc = gpuplan_job_set(job, "rate", "4")) || (rc = gpuplan_job_set(job, "input_len", "1000")) ||
      (rc = gpuplan_job_set(job, "output_len", "200")) || (rc = gpuplan_job_set(job, "slo_ttft", "500")) ||
      (rc = gpuplan_job_set(job, "slo_itl", "50")))
    return rc;
  if ((rc = gpuplan_job_run(job, "serve", &doc))) return rc;
  gpuplan_doc_free(doc);
  return 0;
}

static int search(gpuplan_job *job) {
  gpuplan_doc *doc;
  int rc;
  gpuplan_job_reset(job);
  if ((rc = gpuplan_job_set(job, "model", "llama-3-8b")) || (rc = gpuplan_job_set(job, "search", "true")) ||
      (rc = gpuplan_job_set(job, "rate", "20")) || (rc = gpuplan_job_set(job, "input_len", "1000")) ||
      (rc = gpuplan_job_set(job, "output_len", "200")) || (rc = gpuplan_job_set(job, "slo_ttft", "500")) ||
      (rc = gpuplan_job_set(job, "slo_itl", "50")))
    return rc;
  if ((rc = gpuplan_job_run(job, "serve", &doc))) return rc;
  gpuplan_doc_free(doc);
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 5000, i;
  int json = argc > 2 && strcmp(argv[2], "--json") == 0, r;
  double rounds[7], eval_us, search_ms;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;
  if (n < 70) n = 70;
  if (gpuplan_ctx_new(&ctx, NULL) || gpuplan_catalog_open_default(ctx, &cat) || gpuplan_job_new(ctx, cat, &job)) {
    fprintf(stderr, "bench_serve: setup failed\n");
    return 1;
  }
  for (r = 0; r < 7; r++) {
    double t0 = now();
    for (i = 0; i < n / 7; i++)
      if (eval(job)) {
        fprintf(stderr, "bench_serve: serve: %s\n", gpuplan_errmsg(ctx));
        return 1;
      }
    rounds[r] = (now() - t0) / (double)(n / 7) * 1e6;
  }
  qsort(rounds, 7, sizeof rounds[0], cmp);
  eval_us = rounds[3];
  for (r = 0; r < 7; r++) {
    double t0 = now();
    if (search(job)) {
      fprintf(stderr, "bench_serve: serve --search: %s\n", gpuplan_errmsg(ctx));
      return 1;
    }
    rounds[r] = (now() - t0) * 1e3;
  }
  qsort(rounds, 7, sizeof rounds[0], cmp);
  search_ms = rounds[3];
  if (json)
    printf("{\"serve_us\": %.4f, \"search_ms\": %.4f}\n", eval_us, search_ms);
  else
    printf("serve: one evaluation (engine memory, queue at a rate, p50/p90/p99, cost, document) %.2f us\n"
           "serve --search: cheapest SKU/TP/replicas over the catalog for an SLO at a rate %.2f ms\n",
           eval_us, search_ms);
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return eval_us < 1000 && search_ms < 1000 ? 0 : 1;
}
