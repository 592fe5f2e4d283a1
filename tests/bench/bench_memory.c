/*
 * bench_memory.c: how long one full memory evaluation (all components, the
 * worst rank) takes.  Budget (issue 3): 2 microseconds.  Prints the rate and
 * the ratio to the budget; asserts nothing about time (CI machines vary).
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
  gpuplan_memory r;
  long n = argc > 1 ? atol(argv[1]) : 2000000, i;
  double t0, dt, sink = 0;
  static const struct { const char *model; int64_t tp, pp, dp; gpuplan_dp_mode mode; } cases[] = {
    {"llama-2-7b", 1, 1, 8, GPUPLAN_DP_ZERO3},
    {"llama-2-70b", 8, 4, 8, GPUPLAN_DP_ZERO1},
    {"gpt-3-175b", 8, 8, 16, GPUPLAN_DP_ZERO1},
  };
  size_t c;
  if (gpuplan_ctx_new(&ctx, NULL) || gpuplan_catalog_open_default(ctx, &cat)) return 1;
  if (gpuplan_catalog_gpu(cat, "a100-80gb", &g)) return 1;
  printf("memory model: one evaluation = all components of the worst pipeline stage\n");
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
    if (gpuplan_catalog_model(cat, cases[c].model, &m)) return 1;
    o.tp = cases[c].tp;
    o.pp = cases[c].pp;
    o.dp = cases[c].dp;
    o.dp_mode = cases[c].mode;
    o.sequence_parallel = o.tp > 1;
    t0 = now();
    for (i = 0; i < n; i++) {
      o.micro_batch = 1 + (i & 3); /* defeat hoisting */
      if (gpuplan_memory_eval(ctx, m, g, &o, GPUPLAN_STAGE_WORST, &r)) return 1;
      sink += (double)r.total;
    }
    dt = now() - t0;
    printf("  %-12s tp%-2lld pp%-2lld dp%-3lld %-6s %8.1f ns/eval  %6.2f M evals/s  %5.2fx under the 2 us budget\n",
           cases[c].model, (long long)o.tp, (long long)o.pp, (long long)o.dp,
           gpuplan_dp_mode_name(o.dp_mode), dt / (double)n * 1e9, (double)n / dt / 1e6,
           2e-6 / (dt / (double)n));
  }
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return sink > 0 ? 0 : 1;
}
