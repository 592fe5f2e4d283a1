/*
 * plan.c: the simple API in one page.  Plan Llama-2-13B with FSDP on 8
 * A100-80GB, print whether it fits and its biggest memory component, then
 * the whole document as JSON, and the same job's step time.
 *
 *   cc plan.c $(pkg-config --cflags --libs gpuplan) -o plan && ./plan
 */
#include <stdio.h>

#include "gpuplan.h"

static int fail(gpuplan_ctx *ctx, const char *what) {
  fprintf(stderr, "%s: %s\n", what, gpuplan_errmsg(ctx));
  return 1;
}

int main(void) {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;
  gpuplan_doc *plan, *perf;
  const gpuplan_value *worst, *top;
  if (gpuplan_ctx_new(&ctx, NULL)) return 1;
  if (gpuplan_catalog_open_default(ctx, &cat)) return fail(ctx, "catalog");
  if (gpuplan_job_new(ctx, cat, &job)) return fail(ctx, "job");

  /* Options by name, as the CLI's flags and the bindings' arguments. */
  if (gpuplan_job_set(job, "model", "llama-2-13b") || gpuplan_job_set(job, "gpu", "a100-80gb") ||
      gpuplan_job_set(job, "gpus", "8") || gpuplan_job_set(job, "fsdp", "full"))
    return fail(ctx, "options");
  if (gpuplan_job_run(job, "plan", &plan)) return fail(ctx, "plan");

  worst = gpuplan_value_get(gpuplan_doc_root(plan), "worst");
  top = gpuplan_value_path(worst, "components.0");
  printf("%s: %s, %.2f GiB of %.2f GiB per GPU; first component %s (%.2f GiB)\n", gpuplan_doc_schema(plan),
         gpuplan_value_bool(gpuplan_value_get(worst, "fits")) ? "fits" : "does not fit",
         gpuplan_value_real(gpuplan_value_get(worst, "total_bytes")) / 1073741824.0,
         gpuplan_value_real(gpuplan_value_get(worst, "capacity_bytes")) / 1073741824.0,
         gpuplan_value_string(gpuplan_value_get(top, "name"), NULL),
         gpuplan_value_real(gpuplan_value_get(top, "bytes")) / 1073741824.0);
  fputs(gpuplan_doc_json(plan, GPUPLAN_JSON_PRETTY, NULL), stdout);

  /* The same job, another command: the step time. */
  if (gpuplan_job_set(job, "global_batch", "256") || gpuplan_job_run(job, "perf", &perf)) return fail(ctx, "perf");
  printf("step %.3f s, MFU %.1f%%\n", gpuplan_value_real(gpuplan_value_get(gpuplan_doc_root(perf), "step_s")),
         100 * gpuplan_value_real(gpuplan_value_get(gpuplan_doc_root(perf), "mfu")));

  gpuplan_doc_free(perf);
  gpuplan_doc_free(plan);
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  return 0;
}
