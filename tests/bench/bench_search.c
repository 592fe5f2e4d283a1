/*
 * bench_search.c: the layout search over the whole space (issue 11): GPT-3
 * 175B on 1,024 A100-80GB at global batch 1536, on every core and on one;
 * prints the candidates, how many were timed, the seconds, and the ratio to
 * the budget (>= 1 M candidates in < 1 s).  Asserts nothing about time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "gpuplan.h"

/* CPU seconds of the process (all threads): wall time on a loaded machine
 * overstates the search's cost; this does not. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *cl, int threads) {
  gpuplan_search_options so = GPUPLAN_SEARCH_OPTIONS_INIT;
  gpuplan_candidate best[5];
  gpuplan_search_stats st;
  size_t n = 0;
  double t0, dt, c0, dc;
  so.threads = threads;
  c0 = cpu_now();
  t0 = now();
  if (gpuplan_search_ex(ctx, m, cl, NULL, 1536, GPUPLAN_OBJ_TIME, &so, best, 5, &n, &st, NULL, NULL)) {
    fprintf(stderr, "search: %s\n", gpuplan_errmsg(ctx));
    return 1;
  }
  dt = now() - t0;
  dc = cpu_now() - c0;
  printf("search, GPT-3 175B on 1024 A100-80GB, %d thread%s: %llu candidates (%llu pruned by the memory bound, "
         "%llu too big, %llu invalid, %llu timed) in %.3f s (%.3f s of CPU) = %.2f M candidates/s; %s the budget "
         "(>= 1 M in < 1 s: %.1fx under)\n",
         st.threads, st.threads == 1 ? "" : "s", (unsigned long long)st.candidates, (unsigned long long)st.pruned,
         (unsigned long long)st.too_big, (unsigned long long)st.invalid, (unsigned long long)st.timed, dt, dc,
         (double)st.candidates / dt / 1e6, st.candidates >= 1000000 && dt < 1.0 ? "meets" : "MISSES", 1.0 / dt);
  if (n)
    printf("  #1: tp %lld pp %lld cp %lld dp %lld vpp %lld mb %lld %s %s, %.2f s per step, MFU %.1f%%; %s\n",
           (long long)best[0].options.tp, (long long)best[0].options.pp, (long long)best[0].options.cp,
           (long long)best[0].options.dp, (long long)best[0].options.vpp, (long long)best[0].options.micro_batch,
           gpuplan_dp_mode_name(best[0].options.dp_mode), gpuplan_recompute_name(best[0].options.recompute),
           best[0].perf.step_s, 100 * best[0].perf.mfu, best[0].why);
  return 0;
}

int main(void) {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  const gpuplan_model *m;
  const gpuplan_gpu *g;
  gpuplan_cluster cl;
  int rc;
  if (gpuplan_ctx_new(&ctx, NULL) || gpuplan_catalog_open_default(ctx, &cat)) return 1;
  if (gpuplan_catalog_model(cat, "gpt-3-175b", &m) || gpuplan_catalog_gpu(cat, "a100-80gb", &g)) return 1;
  if (gpuplan_cluster_default(ctx, cat, g, 1024, 8, &cl)) return 1;
  rc = run(ctx, m, &cl, 0) || run(ctx, m, &cl, 1);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return rc;
}
