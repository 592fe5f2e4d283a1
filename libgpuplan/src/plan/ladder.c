/*
 * ladder.c: the fix ladder, each rung quantified by the memory model.
 *
 * The rungs are what practitioners try, ordered by what they cost in step
 * time (estimates, stated with each rung): mixed precision (faster),
 * sequence parallelism and a fused optimizer step (free), ZeRO-1/2 over
 * the data-parallel GPUs already there, 8-bit Adam, selective recompute,
 * a smaller micro-batch with gradient accumulation (2 before 1), ZeRO-3,
 * full recompute, CPU offload of the optimizer, then what changes what is
 * trained (LoRA, QLoRA), then more GPUs and a bigger GPU.  Rungs are
 * cumulative; one that saves nothing is left out; the ladder stops at the
 * first rung that fits with the 2% margin.
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
  uint64_t last;   /* the worst rank's bytes after the previous rung */
} ladder;

static int64_t gpus_of(const gpuplan_memory_options *o) { return o->tp * o->pp * o->dp * o->cp; }

/* Evaluate a rung; keep it (append, cumulative) if it saves memory or
 * changes the GPU; returns 1 when kept.  The ladder stops when it fits. */
static int rung(ladder *l, gpuplan_memory_options *cur, const gpuplan_memory_options *o, const gpuplan_gpu *g,
                const char *what, const char *kind, double cost, int force) {
  gpuplan_memory m;
  gpuplan_fix *f;
  int rc = gpuplan_memory_eval(l->ctx, l->model, g, o, GPUPLAN_STAGE_WORST, &m);
  if (rc == GPUPLAN_EINVAL && !force) {
    gpuplan__clear(l->ctx); /* a rung that does not apply (e.g. 8-bit Adam under offload) */
    return 0;
  }
  if (rc) return rc;
  if (!force && m.total >= l->last) return 0;
  if (l->n < l->cap) {
    f = &l->fixes[l->n++];
    snprintf(f->what, sizeof f->what, "%s", what);
    f->options = *o;
    f->gpu = g;
    f->gpus = gpus_of(o);
    f->total = m.total;
    f->capacity = m.capacity;
    f->fits = m.fits;
    f->time_cost = cost;
    f->kind = kind;
  }
  *cur = *o;
  l->last = m.total;
  if (m.fits) l->done = 1;
  return 1;
}

#define TRY_RUNG(...)                             \
  do {                                            \
    int rc_ = rung(&l, &cur, __VA_ARGS__);        \
    if (rc_ < 0) return rc_;                      \
    if (l.done) goto out;                         \
  } while (0)

int gpuplan_memory_ladder(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_model *model,
                          const gpuplan_gpu *gpu, const gpuplan_memory_options *options,
                          int64_t max_gpus, gpuplan_fix *fixes, size_t cap,
                          size_t *count_out) {
  gpuplan_memory_options cur, t, defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory base;
  ladder l;
  char what[160];
  int rc, module;

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
  l.last = base.total;
  module = cur.module.params > 0;
  if (base.fits || cur.workload != GPUPLAN_TRAIN) goto out;

  /* Mixed precision: faster as well as smaller. */
  if (cur.precision == GPUPLAN_PREC_FP32) {
    int cc = gpuplan_gpu_cc(gpu);
    t = cur;
    t.precision = cc && cc < 80 ? GPUPLAN_PREC_FP16_MIXED : GPUPLAN_PREC_BF16_MIXED;
    snprintf(what, sizeof what, "%s mixed precision (fp32 master weights; tensor cores make it ~2x faster)",
             t.precision == GPUPLAN_PREC_FP16_MIXED ? "fp16 (with a loss scaler)" : "bf16");
    TRY_RUNG(&t, gpu, what, "precision", -0.5, 0);
  }
  /* Sequence parallelism: the same communication volume, activations /t. */
  if (cur.tp > 1 && !cur.sequence_parallel) {
    t = cur;
    t.sequence_parallel = 1;
    TRY_RUNG(&t, gpu, "sequence parallelism (norms and dropout sharded over tp; no extra communication)", "sp", 0.0, 0);
  }
  /* The optimizer step's temporaries: fused kernels keep none. */
  if (base.item[GPUPLAN_MEM_OPT_STEP].bytes && !cur.offload_optimizer) {
    t = cur;
    t.optimizer_impl = GPUPLAN_OPTIMPL_FUSED;
    TRY_RUNG(&t, gpu, "fused optimizer step (AdamW fused=True: no foreach tensor-list temporaries)", "fused-optimizer",
             0.0, 0);
  }
  /* ZeRO-1, then ZeRO-2, over the data-parallel GPUs already there. */
  if (cur.dp * cur.cp > 1 && !module) {
    if (cur.dp_mode == GPUPLAN_DP_DDP) {
      t = cur;
      t.dp_mode = GPUPLAN_DP_ZERO1;
      snprintf(what, sizeof what, "ZeRO-1: shard optimizer states over %lld GPUs", (long long)(cur.dp * cur.cp));
      TRY_RUNG(&t, gpu, what, "zero1", 0.01, 0);
    }
    if (cur.dp_mode == GPUPLAN_DP_DDP || cur.dp_mode == GPUPLAN_DP_ZERO1) {
      t = cur;
      t.dp_mode = GPUPLAN_DP_ZERO2;
      snprintf(what, sizeof what, "ZeRO-2: shard gradients and optimizer over %lld GPUs", (long long)(cur.dp * cur.cp));
      TRY_RUNG(&t, gpu, what, "zero2", 0.02, 0);
    }
  }
  /* 8-bit Adam: 2 bytes of state per parameter instead of 8. */
  if (cur.optimizer == GPUPLAN_OPT_ADAMW && !cur.offload_optimizer) {
    t = cur;
    t.optimizer = GPUPLAN_OPT_ADAM8BIT;
    TRY_RUNG(&t, gpu, "8-bit Adam (bitsandbytes: block-wise quantised states, 2 bytes per parameter)", "adam8bit", 0.01, 0);
  }
  /* Selective recompute: the s^2 part only (nothing to save with FlashAttention). */
  if (cur.recompute == GPUPLAN_RECOMPUTE_NONE && !cur.flash_attention && !module) {
    t = cur;
    t.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
    TRY_RUNG(&t, gpu, "selective recompute (the attention scores, ~+3% compute)", "selective", 0.03, 0);
  }
  /* A smaller micro-batch with gradient accumulation: halve it, 2 before 1. */
  while (cur.micro_batch > 1) {
    int64_t to = cur.micro_batch / 2, acc = (cur.microbatches ? cur.microbatches : cur.pp);
    t = cur;
    t.microbatches = acc * cur.micro_batch / to;
    t.micro_batch = to;
    snprintf(what, sizeof what, "micro-batch %lld -> %lld (accumulate %lld micro-batches for the same global batch)",
             (long long)cur.micro_batch, (long long)to, (long long)t.microbatches);
    {
      int rc_ = rung(&l, &cur, &t, gpu, what, "micro-batch", 0.05, 0);
      if (rc_ < 0) return rc_;
      if (l.done) goto out;
      if (!rc_) break;
    }
  }
  /* ZeRO-3 over the data-parallel GPUs already there. */
  if (cur.dp * cur.cp > 1 && !module && cur.dp_mode != GPUPLAN_DP_ZERO3 && cur.dp_mode != GPUPLAN_DP_FSDP_FULL &&
      cur.dp_mode != GPUPLAN_DP_FSDP_HYBRID) {
    t = cur;
    t.dp_mode = GPUPLAN_DP_ZERO3;
    snprintf(what, sizeof what, "ZeRO-3: shard parameters too over %lld GPUs (~1.5x the communication)",
             (long long)(cur.dp * cur.cp));
    TRY_RUNG(&t, gpu, what, "zero3", 0.15, 0);
  }
  /* Activation checkpointing. */
  if (cur.recompute != GPUPLAN_RECOMPUTE_FULL) {
    t = cur;
    t.recompute = GPUPLAN_RECOMPUTE_FULL;
    TRY_RUNG(&t, gpu, "activation checkpointing (full recompute, ~+33% compute)", "recompute", 0.33, 0);
  }
  /* ZeRO-Offload: master weights and optimizer states on the host (CPU Adam). */
  if (!cur.offload_optimizer && (base.item[GPUPLAN_MEM_OPTIMIZER].bytes || base.item[GPUPLAN_MEM_MASTER].bytes)) {
    t = cur;
    t.offload_optimizer = 1;
    TRY_RUNG(&t, gpu, "CPU offload of the optimizer (ZeRO-Offload: states in host memory, the step on the CPU; "
                      "~+50% step time, needs host RAM)", "offload", 0.5, 0);
  }
  /* What changes what is trained: LoRA, then QLoRA. */
  if (cur.finetune == GPUPLAN_FT_FULL && !module) {
    t = cur;
    t.finetune = GPUPLAN_FT_LORA;
    t.lora_rank = 16;
    t.lora_modules = 0;
    t.base_dtype = gpuplan_gpu_cc(gpu) && gpuplan_gpu_cc(gpu) < 80 ? GPUPLAN_DTYPE_FP16 : GPUPLAN_DTYPE_BF16;
    t.offload_optimizer = 0;
    t.offload_params = 0;
    if (t.precision == GPUPLAN_PREC_FP32) t.precision = GPUPLAN_PREC_BF16_MIXED, t.precision_auto = 1;
    TRY_RUNG(&t, gpu, "LoRA r16 on q and v over a frozen 16-bit base (trains adapters only: a different run)", "lora",
             -0.25, 0);
  }
  if (cur.finetune != GPUPLAN_FT_QLORA && !module) {
    t = cur;
    t.finetune = GPUPLAN_FT_QLORA;
    t.lora_rank = 64;
    t.lora_modules = GPUPLAN_LORA_ALL;
    t.base_dtype = GPUPLAN_DTYPE_NF4;
    t.double_quant = 1;
    t.paged_optimizer = 1;
    t.offload_optimizer = 0;
    t.offload_params = 0;
    t.recompute = GPUPLAN_RECOMPUTE_FULL;
    if (t.precision == GPUPLAN_PREC_FP32) t.precision = GPUPLAN_PREC_BF16_MIXED, t.precision_auto = 1;
    TRY_RUNG(&t, gpu, "QLoRA: NF4 base with double quantisation, r64 adapters on every linear, paged AdamW, "
                      "checkpointing (~+30% over LoRA)", "qlora", 0.3, 0);
  }
  /* More GPUs with ZeRO-3: the fewest data-parallel ranks that fit. */
  if (!module || cur.module.params > 0) {
    int64_t per = cur.tp * cur.pp * cur.cp, dp;
    t = cur;
    t.dp_mode = cur.dp_mode == GPUPLAN_DP_FSDP_FULL ? cur.dp_mode : GPUPLAN_DP_ZERO3;
    if (module) t.dp_mode = GPUPLAN_DP_ZERO3;
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
      snprintf(what, sizeof what, "ZeRO-3 across %lld GPUs", (long long)gpus_of(&t));
      TRY_RUNG(&t, gpu, what, "gpus", 0.0, 1);
    }
  }
  /* A bigger GPU: the smallest in the catalog that fits this layout. */
  if (cat) {
    size_t i, n = gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU);
    const gpuplan_gpu *best = NULL;
    uint64_t have = gpuplan_gpu_usable_bytes(gpu, NULL), best_cap = 0;
    for (i = 0; i < n; i++) {
      const gpuplan_gpu *g = gpuplan_catalog_at(cat, GPUPLAN_KIND_GPU, i);
      gpuplan_memory m;
      uint64_t c = gpuplan_gpu_usable_bytes(g, NULL);
      if (c <= have) continue;
      if (cur.precision != GPUPLAN_PREC_FP32 && isnan(g->bf16_flops) && isnan(g->fp16_flops)) continue;
      if (gpuplan_memory_eval(ctx, model, g, &cur, GPUPLAN_STAGE_WORST, &m)) continue;
      if (m.fits && (!best || c < best_cap)) best = g, best_cap = c;
    }
    gpuplan__clear(ctx);
    if (best) {
      snprintf(what, sizeof what, "a bigger GPU: %s (%g GB)", best->name, best->memory_gb);
      TRY_RUNG(&cur, best, what, "gpu", 0.0, 1);
    }
  }
out:
  *count_out = l.n;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
