/*
 * ladder.c: the fix ladder of the seed article ("reduzir batch size ->
 * habilitar gradient checkpointing -> ZeRO-2 ou ZeRO-3 -> BF16 / mixed
 * precision -> GPU maior"), each rung quantified by the memory model.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/internal.h"

typedef struct ladder {
  gpuplan_ctx *ctx;
  const gpuplan_model *model;
  gpuplan_fix *fixes;
  size_t cap, n;
  int done;
} ladder;

static int64_t gpus_of(const gpuplan_memory_options *o) { return o->tp * o->pp * o->dp * o->cp; }

/* Evaluate a rung and append it; stop the ladder when it fits. */
static int rung(ladder *l, const gpuplan_memory_options *o, const gpuplan_gpu *g,
                const char *what) {
  gpuplan_memory m;
  gpuplan_fix *f;
  int rc = gpuplan_memory_eval(l->ctx, l->model, g, o, GPUPLAN_STAGE_WORST, &m);
  if (rc) return rc;
  if (l->n < l->cap) {
    f = &l->fixes[l->n++];
    snprintf(f->what, sizeof f->what, "%s", what);
    f->options = *o;
    f->gpu = g;
    f->gpus = gpus_of(o);
    f->total = m.total;
    f->capacity = m.capacity;
    f->fits = m.fits;
  }
  if (m.fits) l->done = 1;
  return GPUPLAN_OK;
}

int gpuplan_memory_ladder(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_model *model,
                          const gpuplan_gpu *gpu, const gpuplan_memory_options *options,
                          int64_t max_gpus, gpuplan_fix *fixes, size_t cap,
                          size_t *count_out) {
  gpuplan_memory_options cur, defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory base;
  ladder l;
  char what[160];
  int rc;

  if (!ctx) return GPUPLAN_EMISUSE;
  if (!count_out || (!fixes && cap))
    return gpuplan__error(ctx, GPUPLAN_EMISUSE, "ladder: count_out and fixes must not be NULL");
  *count_out = 0;
  cur = options ? *options : defaults;
  if (max_gpus < 1) max_gpus = 1;
  rc = gpuplan_memory_eval(ctx, model, gpu, &cur, GPUPLAN_STAGE_WORST, &base);
  if (rc) return rc;
  memset(&l, 0, sizeof l);
  l.ctx = ctx;
  l.model = model;
  l.fixes = fixes;
  l.cap = cap;
  if (base.fits || cur.workload != GPUPLAN_TRAIN) goto out;

  /* 1. Smaller micro-batch (gradient accumulation keeps the global batch). */
  if (cur.micro_batch > 1) {
    snprintf(what, sizeof what, "micro-batch %lld -> 1 (accumulate %lld steps for the same global batch)",
             (long long)cur.micro_batch, (long long)cur.micro_batch);
    cur.microbatches = (cur.microbatches ? cur.microbatches : cur.pp) * cur.micro_batch;
    cur.micro_batch = 1;
    GPUPLAN_TRY(rung(&l, &cur, gpu, what));
    if (l.done) goto out;
  }
  /* 2. Activation checkpointing. */
  if (cur.recompute != GPUPLAN_RECOMPUTE_FULL) {
    cur.recompute = GPUPLAN_RECOMPUTE_FULL;
    GPUPLAN_TRY(rung(&l, &cur, gpu, "activation checkpointing (full recompute, ~+33% compute)"));
    if (l.done) goto out;
  }
  /* 3. ZeRO-2, then ZeRO-3, over the data-parallel GPUs already there. */
  if (cur.dp * cur.cp > 1) {
    if (cur.dp_mode == GPUPLAN_DP_DDP || cur.dp_mode == GPUPLAN_DP_ZERO1) {
      cur.dp_mode = GPUPLAN_DP_ZERO2;
      snprintf(what, sizeof what, "ZeRO-2: shard gradients and optimizer over %lld GPUs",
               (long long)(cur.dp * cur.cp));
      GPUPLAN_TRY(rung(&l, &cur, gpu, what));
      if (l.done) goto out;
    }
    if (cur.dp_mode != GPUPLAN_DP_ZERO3 && cur.dp_mode != GPUPLAN_DP_FSDP_FULL) {
      cur.dp_mode = GPUPLAN_DP_ZERO3;
      snprintf(what, sizeof what, "ZeRO-3: shard parameters too over %lld GPUs",
               (long long)(cur.dp * cur.cp));
      GPUPLAN_TRY(rung(&l, &cur, gpu, what));
      if (l.done) goto out;
    }
  }
  /* 4. 16-bit mixed precision. */
  if (cur.precision == GPUPLAN_PREC_FP32) {
    cur.precision = GPUPLAN_PREC_BF16_MIXED;
    GPUPLAN_TRY(rung(&l, &cur, gpu, "bf16 mixed precision (fp32 master weights kept)"));
    if (l.done) goto out;
  }
  /* 5. More GPUs with ZeRO-3: the fewest data-parallel ranks that fit. */
  {
    int64_t per = cur.tp * cur.pp * cur.cp, dp;
    gpuplan_memory_options t = cur;
    t.dp_mode = cur.dp_mode == GPUPLAN_DP_FSDP_FULL ? cur.dp_mode : GPUPLAN_DP_ZERO3;
    for (dp = cur.dp * 2; dp * per <= max_gpus; dp *= 2) {
      gpuplan_memory m;
      t.dp = dp;
      rc = gpuplan_memory_eval(ctx, model, gpu, &t, GPUPLAN_STAGE_WORST, &m);
      if (rc) return rc;
      if (m.fits) break;
    }
    if (dp * per > max_gpus) dp = max_gpus / per;
    if (dp > cur.dp) {
      t.dp = dp;
      cur = t;
      snprintf(what, sizeof what, "ZeRO-3 across %lld GPUs", (long long)gpus_of(&cur));
      GPUPLAN_TRY(rung(&l, &cur, gpu, what));
      if (l.done) goto out;
    }
  }
  /* 6. A bigger GPU: the smallest in the catalog that fits this layout. */
  if (cat) {
    size_t i, n = gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU);
    const gpuplan_gpu *best = NULL;
    for (i = 0; i < n; i++) {
      const gpuplan_gpu *g = gpuplan_catalog_at(cat, GPUPLAN_KIND_GPU, i);
      gpuplan_memory m;
      if (g->memory_bytes <= gpu->memory_bytes) continue;
      if (cur.precision != GPUPLAN_PREC_FP32 && isnan(g->bf16_flops) && isnan(g->fp16_flops))
        continue;
      if (gpuplan_memory_eval(ctx, model, g, &cur, GPUPLAN_STAGE_WORST, &m)) continue;
      if (m.fits && (!best || g->memory_bytes < best->memory_bytes)) best = g;
    }
    gpuplan__clear(ctx);
    if (best) {
      snprintf(what, sizeof what, "a bigger GPU: %s (%g GB)", best->name, best->memory_gb);
      GPUPLAN_TRY(rung(&l, &cur, best, what));
    }
  }
out:
  *count_out = l.n;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
