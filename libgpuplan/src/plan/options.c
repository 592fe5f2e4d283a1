/*
 * options.c: memory options by name, for bindings and configuration files.
 *
 * One table maps the public names (the struct's field names; "params" for
 * params_override, "workload" for train/infer) to a type and an offset, so
 * the Python and Lua bindings and any embedder parse options the same way.
 * Ranges are checked where the options are used (gpuplan_memory_eval),
 * which names the field; here only types and enum names are checked.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "gpuplan/memory.h"
#include "gpuplan/perf.h"

typedef struct option_desc {
  const char *name;
  gpuplan_option_type type;
  size_t offset;
  size_t size;       /* of the field: int64_t, int or an enum */
  const char *enum_kind; /* for gpuplan_enum_parse */
} option_desc;

#define F(name, type, field, kind) \
  {name, type, offsetof(gpuplan_memory_options, field), sizeof(((gpuplan_memory_options *)0)->field), kind}

static const option_desc options[] = {
  F("workload", GPUPLAN_OPTION_ENUM, workload, "workload"),
  F("convention", GPUPLAN_OPTION_ENUM, convention, "convention"),
  F("tp", GPUPLAN_OPTION_INT, tp, NULL),
  F("pp", GPUPLAN_OPTION_INT, pp, NULL),
  F("dp", GPUPLAN_OPTION_INT, dp, NULL),
  F("cp", GPUPLAN_OPTION_INT, cp, NULL),
  F("ep", GPUPLAN_OPTION_INT, ep, NULL),
  F("sequence_parallel", GPUPLAN_OPTION_BOOL, sequence_parallel, NULL),
  F("dp_mode", GPUPLAN_OPTION_ENUM, dp_mode, "dp"),
  F("shard_group", GPUPLAN_OPTION_INT, shard_group, NULL),
  F("schedule", GPUPLAN_OPTION_ENUM, schedule, "schedule"),
  F("vpp", GPUPLAN_OPTION_INT, vpp, NULL),
  F("first_stage_layers", GPUPLAN_OPTION_INT, first_stage_layers, NULL),
  F("last_stage_layers", GPUPLAN_OPTION_INT, last_stage_layers, NULL),
  F("micro_batch", GPUPLAN_OPTION_INT, micro_batch, NULL),
  F("seq_len", GPUPLAN_OPTION_INT, seq_len, NULL),
  F("microbatches", GPUPLAN_OPTION_INT, microbatches, NULL),
  F("precision", GPUPLAN_OPTION_ENUM, precision, "precision"),
  F("grad_bytes", GPUPLAN_OPTION_INT, grad_bytes, NULL),
  F("optimizer", GPUPLAN_OPTION_ENUM, optimizer, "optimizer"),
  F("recompute", GPUPLAN_OPTION_ENUM, recompute, "recompute"),
  F("flash_attention", GPUPLAN_OPTION_BOOL, flash_attention, NULL),
  F("dropout", GPUPLAN_OPTION_BOOL, dropout, NULL),
  F("offload_optimizer", GPUPLAN_OPTION_BOOL, offload_optimizer, NULL),
  F("offload_params", GPUPLAN_OPTION_BOOL, offload_params, NULL),
  F("prefetch", GPUPLAN_OPTION_INT, prefetch, NULL),
  F("bucket_bytes", GPUPLAN_OPTION_INT, bucket_bytes, NULL),
  F("weight_dtype", GPUPLAN_OPTION_ENUM, weight_dtype, "dtype"),
  F("kv_dtype", GPUPLAN_OPTION_ENUM, kv_dtype, "dtype"),
  F("group_size", GPUPLAN_OPTION_INT, group_size, NULL),
  F("context_len", GPUPLAN_OPTION_INT, context_len, NULL),
  F("batch", GPUPLAN_OPTION_INT, batch, NULL),
  F("paged", GPUPLAN_OPTION_BOOL, paged, NULL),
  F("block_tokens", GPUPLAN_OPTION_INT, block_tokens, NULL),
  F("context_bytes", GPUPLAN_OPTION_INT, context_bytes, NULL),
  F("nccl_bytes", GPUPLAN_OPTION_INT, nccl_bytes, NULL),
  F("workspace_bytes", GPUPLAN_OPTION_INT, workspace_bytes, NULL),
  F("params", GPUPLAN_OPTION_REAL, params_override, NULL),
};
#undef F

#define NOPTIONS (sizeof options / sizeof options[0])

static const option_desc *find(const char *name) {
  size_t i;
  if (!name) return NULL;
  for (i = 0; i < NOPTIONS; i++)
    if (strcmp(options[i].name, name) == 0) return &options[i];
  return NULL;
}

const char *gpuplan_option_name(size_t i) { return i < NOPTIONS ? options[i].name : NULL; }

int gpuplan_option_kind(const char *name) {
  const option_desc *d = find(name);
  return d ? (int)d->type : -1;
}

static int unknown(gpuplan_ctx *ctx, const char *name) {
  return gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "option '%s' is unknown (options are the fields of "
                        "gpuplan_memory_options: tp, pp, dp, micro_batch, precision, ...)", name ? name : "(null)");
}

/* Store an integer in a field of the option's size. */
static void store_int(gpuplan_memory_options *o, const option_desc *d, int64_t v) {
  char *p = (char *)o + d->offset;
  if (d->size == sizeof(int64_t)) {
    memcpy(p, &v, sizeof v);
  } else {
    int x = (int)v;
    memcpy(p, &x, sizeof x);
  }
}

int gpuplan_option_set_int(gpuplan_ctx *ctx, gpuplan_memory_options *o, const char *name, int64_t v) {
  const option_desc *d = find(name);
  if (!o) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "options: NULL");
  if (!d) return unknown(ctx, name);
  switch (d->type) {
  case GPUPLAN_OPTION_INT:
    if (d->size != sizeof(int64_t) && (v < -1 || v > 1 << 20))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %lld is out of range", name, (long long)v);
    store_int(o, d, v);
    return GPUPLAN_OK;
  case GPUPLAN_OPTION_BOOL:
    if (v != 0 && v != 1)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %lld is not a boolean (0 or 1)", name, (long long)v);
    store_int(o, d, v);
    return GPUPLAN_OK;
  case GPUPLAN_OPTION_REAL:
    return gpuplan_option_set_real(ctx, o, name, (double)v);
  case GPUPLAN_OPTION_ENUM: break;
  }
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: takes a name, not the number %lld", name, (long long)v);
}

int gpuplan_option_set_real(gpuplan_ctx *ctx, gpuplan_memory_options *o, const char *name, double v) {
  const option_desc *d = find(name);
  if (!o) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "options: NULL");
  if (!d) return unknown(ctx, name);
  if (d->type == GPUPLAN_OPTION_REAL) {
    if (!(v >= 0 && v < 1e16))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %g is not a parameter count in [0, 1e16)", name, v);
    memcpy((char *)o + d->offset, &v, sizeof v);
    return GPUPLAN_OK;
  }
  if ((d->type == GPUPLAN_OPTION_INT || d->type == GPUPLAN_OPTION_BOOL) && v == (double)(int64_t)v &&
      v > -9.2e18 && v < 9.2e18)
    return gpuplan_option_set_int(ctx, o, name, (int64_t)v);
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %g is not %s", name, v,
                        d->type == GPUPLAN_OPTION_ENUM ? "a name" : "an integer");
}

int gpuplan_option_set_string(gpuplan_ctx *ctx, gpuplan_memory_options *o, const char *name, const char *v) {
  const option_desc *d = find(name);
  if (!o || !v) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "options: NULL");
  if (!d) return unknown(ctx, name);
  switch (d->type) {
  case GPUPLAN_OPTION_ENUM: {
    int r;
    if (strcmp(d->enum_kind, "workload") == 0) {
      if (strcmp(v, "train") == 0) r = GPUPLAN_TRAIN;
      else if (strcmp(v, "infer") == 0) r = GPUPLAN_INFER;
      else return gpuplan__error(ctx, GPUPLAN_EINVAL, "workload: '%s' is not train or infer", v);
    } else if ((r = gpuplan_enum_parse(ctx, d->enum_kind, v)) < 0) {
      /* the message names the enum kind ("dp: ..."); name the option too
       * (copied first: the message buffer is rewritten) */
      char why[200];
      snprintf(why, sizeof why, "%s", ctx ? gpuplan_errmsg(ctx) : "");
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %s", name, why);
    }
    store_int(o, d, r);
    return GPUPLAN_OK;
  }
  case GPUPLAN_OPTION_BOOL:
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0)
      return gpuplan_option_set_int(ctx, o, name, 1);
    if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0)
      return gpuplan_option_set_int(ctx, o, name, 0);
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: '%s' is not true or false", name, v);
  case GPUPLAN_OPTION_INT:
  case GPUPLAN_OPTION_REAL: {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end) return gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: '%s' is not a number", name, v);
    return gpuplan_option_set_real(ctx, o, name, x);
  }
  }
  return unknown(ctx, name);
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

int gpuplan_job_resolve(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *model, const char *gpu,
                        const char *node, int64_t gpus, int64_t nodes, int64_t per_node, int dp_given,
                        gpuplan_jobspec *j) {
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

int gpuplan_job_cluster(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_jobspec *j, gpuplan_cluster *out) {
  if (!j || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "job: NULL argument");
  if (j->node) GPUPLAN_TRY(gpuplan_cluster_from_node(ctx, cat, j->node, j->nodes, out));
  else GPUPLAN_TRY(gpuplan_cluster_default(ctx, cat, j->gpu, j->gpus, j->per_node, out));
  if (j->node && j->node->gpu_memory_bytes) out->gpu = j->gpu; /* the vGPU slice */
  return GPUPLAN_OK;
}
