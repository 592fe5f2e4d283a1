#define _POSIX_C_SOURCE 200809L
/* bench_job.c: the job API from C, the baseline of the bindings' overhead.
 *
 * A plan and a perf of Llama-2-7B on 8 A100-80GB with ZeRO-1, set by name
 * and run, document freed: microseconds per call (median of rounds).  The
 * Python benchmark (bench_python.py) makes the same calls through the
 * binding and prints its overhead over these figures.  Printed, not
 * asserted (speed is proven here, never in timed unit tests).
 *   bench_job [CALLS] [--json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpuplan.h"

static int one(gpuplan_job *job, const char *cmd) {
  gpuplan_doc *doc;
  int rc;
  gpuplan_job_reset(job);
  if ((rc = gpuplan_job_set(job, "model", "llama-2-7b")) || (rc = gpuplan_job_set(job, "gpu", "a100-80gb")) ||
      (rc = gpuplan_job_set_int(job, "gpus", 8)) || (rc = gpuplan_job_set_int(job, "zero", 1)))
    return rc;
  if ((rc = gpuplan_job_run(job, cmd, &doc))) return rc;
  gpuplan_doc_free(doc);
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000, i;
  int json = argc > 2 && strcmp(argv[2], "--json") == 0, k, r;
  const char *cmds[2] = {"plan", "perf"};
  double us[2];
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;
  if (n < 100) n = 100;
  if (gpuplan_ctx_new(&ctx, NULL) || gpuplan_catalog_open_default(ctx, &cat) || gpuplan_job_new(ctx, cat, &job)) {
    fprintf(stderr, "bench_job: setup failed\n");
    return 1;
  }
  for (k = 0; k < 2; k++) {
    double rounds[7];
    for (r = 0; r < 7; r++) {
      double t0 = now();
      for (i = 0; i < n / 7; i++)
        if (one(job, cmds[k])) {
          fprintf(stderr, "bench_job: %s: %s\n", cmds[k], gpuplan_errmsg(ctx));
          return 1;
        }
      rounds[r] = (now() - t0) / (double)(n / 7) * 1e6;
    }
    qsort(rounds, 7, sizeof rounds[0], cmp);
    us[k] = rounds[3];
  }
  if (json)
    printf("{\"plan_us\": %.4f, \"perf_us\": %.4f}\n", us[0], us[1]);
  else
    for (k = 0; k < 2; k++)
      printf("job API from C: %s (set 4 options by name, run, free the document) %.3f us per call\n", cmds[k], us[k]);
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return 0;
}
