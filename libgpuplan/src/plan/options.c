/*
 * options.c: the memory options' defaults, model sizes ("7B"), and job
 * resolution (model, GPU or node, GPU count and layout) for the planning
 * commands (job/cmd_train.c).  Options by name are the job API's
 * (job/job.c, one table for every front end).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "gpuplan/memory.h"
#include "gpuplan/perf.h"
#include "job/job_int.h"

void gpuplan_memory_options_init(gpuplan_memory_options *o) {
  static const gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
  if (o) *o = d;
}

int gpuplan_parse_size(const char *s, double *params) {
  char *end;
  double v;
  if (!s || !params) return 0;
  v = strtod(s, &end);
  if (end == s || !(v > 0) || !(v < 1e16) || !end[0] || end[1]) return 0;
  switch (*end) {
  case 'B': case 'b': v *= 1e9; break;
  case 'M': case 'm': v *= 1e6; break;
  case 'T': case 't': v *= 1e12; break;
  default: return 0;
  }
  *params = v;
  return 1;
}

/* --- jobs ------------------------------------------------------------------- */

int gpuplan__job_resolve(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *model, const char *gpu,
                        const char *node, int64_t gpus, int64_t nodes, int64_t per_node, int dp_given,
                        gpuplan__jobspec *j) {
  double size;
  int64_t per;
  int sized;
  gpuplan_memory_options o;
  if (!j) return GPUPLAN_EMISUSE;
  o = j->options;
  memset(j, 0, sizeof *j);
  j->options = o;
  if (!ctx || !cat || !model) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "job: NULL argument");
  j->nodes = nodes;
  j->per_node = per_node;
  sized = gpuplan_parse_size(model, &size);
  snprintf(j->model_name, sizeof j->model_name, "%s", model);
  if (sized) {
    /* "7B": Llama-2-7B's shape scaled to that many parameters */
    if (j->options.params_override == 0) j->options.params_override = size;
    model = "llama-2-7b";
  }
  GPUPLAN_TRY(gpuplan_catalog_model(cat, model, &j->model));
  if (!sized) snprintf(j->model_name, sizeof j->model_name, "%s", j->model->id);
  if (node && gpu) return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu, node: give a GPU or a node, not both");
  if (node) {
    GPUPLAN_TRY(gpuplan_catalog_node(cat, node, &j->node));
    if (!j->node->gpu_id || j->node->gpu_count < 1)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "node: %s has no GPU (a CPU-only size)", j->node->name);
    if (nodes < 1) return gpuplan__error(ctx, GPUPLAN_EINVAL, "nodes: %lld is less than 1", (long long)nodes);
    GPUPLAN_TRY(gpuplan_catalog_gpu(cat, j->node->gpu_id, &j->gpu));
    j->node_gpu = *j->gpu;
    if (j->node->gpu_memory_bytes) j->node_gpu.memory_bytes = j->node->gpu_memory_bytes; /* vGPU slice */
    j->gpu = &j->node_gpu;
    if (!gpus) gpus = j->node->gpu_count * nodes;
  } else if (!gpu) {
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu: needs a GPU SKU (or a node)");
  } else {
    GPUPLAN_TRY(gpuplan_catalog_gpu(cat, gpu, &j->gpu));
  }
  if (j->options.tp < 1 || j->options.pp < 1 || j->options.cp < 1)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "tp, pp, cp: must be at least 1 (tp %lld, pp %lld, cp %lld)",
                          (long long)j->options.tp, (long long)j->options.pp, (long long)j->options.cp);
  if (gpus < 0 || gpus > (1LL << 24))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpus: %lld is not in 0..16777216", (long long)gpus);
  if (per_node < 1 || per_node > 1024)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "per_node: %lld is not in 1..1024", (long long)per_node);
  per = j->options.tp * j->options.pp * j->options.cp;
  if (gpus) {
    if (!dp_given) {
      if (gpus % per)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "gpus: %lld is not a multiple of tp*pp*cp (%lld); gpus must equal dp*tp*pp*cp",
                              (long long)gpus, (long long)per);
      j->options.dp = gpus / per;
    } else if (j->options.dp * per != gpus) {
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpus: %lld != dp*tp*pp*cp (%lld*%lld*%lld*%lld = %lld)",
                            (long long)gpus, (long long)j->options.dp, (long long)j->options.tp,
                            (long long)j->options.pp, (long long)j->options.cp, (long long)(j->options.dp * per));
    }
  }
  j->gpus = j->options.dp * per;
  return GPUPLAN_OK;
}

int gpuplan__job_cluster(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan__jobspec *j, gpuplan_cluster *out) {
  if (!j || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "job: NULL argument");
  if (j->node) GPUPLAN_TRY(gpuplan_cluster_from_node(ctx, cat, j->node, j->nodes, out));
  else GPUPLAN_TRY(gpuplan_cluster_default(ctx, cat, j->gpu, j->gpus, j->per_node, out));
  if (j->node && j->node->gpu_memory_bytes) out->gpu = j->gpu; /* the vGPU slice */
  return GPUPLAN_OK;
}
