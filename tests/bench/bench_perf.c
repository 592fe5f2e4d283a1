/*
 * bench_perf.c: one layout evaluated (memory model + performance model),
 * budget 5 us; a full layout search for GPT-3 175B on 1024 A100-80GB,
 * budget 1 s.  Prints rates and ratios; asserts nothing about time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "gpuplan.h"

int main(int argc, char **argv) {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  const gpuplan_model *m;
  const gpuplan_gpu *g;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory mem;
  gpuplan_perf pf;
  gpuplan_candidate best[5];
  gpuplan_search_stats st;
  size_t n;
  long iters = argc > 1 ? atol(argv[1]) : 500000, i;
  double t0, dt, sink = 0;
  if (gpuplan_ctx_new(&ctx, NULL) || gpuplan_catalog_open_default(ctx, &cat)) return 1;
  if (gpuplan_catalog_model(cat, "gpt-3-175b", &m) || gpuplan_catalog_gpu(cat, "a100-80gb", &g)) return 1;
  if (gpuplan_cluster_default(ctx, cat, g, 1024, 8, &cl)) return 1;
  o.tp = 8;
  o.pp = 8;
  o.dp = 16;
  o.sequence_parallel = 1;
  o.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  o.microbatches = 96;
  t0 = now();
  for (i = 0; i < iters; i++) {
    o.micro_batch = 1 + (i & 1);
    o.microbatches = 96 / o.micro_batch;
    if (gpuplan_memory_eval(ctx, m, g, &o, GPUPLAN_STAGE_WORST, &mem)) return 1;
    if (gpuplan_perf_eval(ctx, m, &cl, &o, 1536, 0, NULL, &pf)) return 1;
    sink += pf.step_s + (double)mem.total;
  }
  dt = (now() - t0) / (double)iters;
  printf("one layout (memory + performance, GPT-3 175B, tp8 pp8 dp16): %.0f ns = %.1fx under the 5 us budget\n",
         dt * 1e9, 5e-6 / dt);
  t0 = now();
  if (gpuplan_search(ctx, m, &cl, NULL, 1536, GPUPLAN_OBJ_TIME, best, 5, &n, &st, NULL, NULL)) return 1;
  dt = now() - t0;
  printf("full search, GPT-3 175B on 1024 A100-80GB: %llu layouts in %.4f s = %.0fx under the 1 s budget "
         "(%.0f ns per layout)\n",
         (unsigned long long)st.evaluated, dt, 1.0 / dt, dt / (double)st.evaluated * 1e9);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return sink > 0 && n > 0 ? 0 : 1;
}
