/*
 * program.c: the step program of one rank, run through the caching-allocator
 * model (gpuplan/simulate.h).
 *
 * Sizes come from the analytic model's components for the same case; each
 * component is split over the tensors PyTorch would allocate, in the
 * proportions of the layer's shapes.  The simulated peak therefore differs
 * from the analytic total only by named effects: allocator rounding and
 * caching, transient temporaries, the order of lifetimes (gradients that do
 * not exist yet at the start of backward, zero_grad(set_to_none)), which is
 * what the comparison is for.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"

#define MAXT 24 /* tensors per layer */

typedef struct tens {
  const char *name;
  double bytes;
} tens;

/* Both the recorder and the caller's trace function, when both are set. */
typedef struct tee {
  gpuplan_recorder *rec;
  gpuplan_alloc_trace_fn fn;
  void *payload;
} tee;

static void tee_trace(void *payload, const gpuplan_alloc_event *ev) {
  tee *t = payload;
  if (t->rec) gpuplan_recorder_trace(t->rec, ev);
  if (t->fn) t->fn(t->payload, ev);
}

typedef struct prog {
  gpuplan_ctx *ctx;
  gpuplan_cachealloc *a;
  gpuplan_simulate_result *r;
  const gpuplan_memory_options *o;
  const gpuplan_model *m;
  int64_t step;
  const char *phase;
  int64_t layer;
  int oom;
  /* per-layer tensors */
  tens w[8];       /* parameter tensors of one layer (bytes of weights) */
  int nw;
  double wsum;     /* sum of w */
  tens act[MAXT];  /* activations kept per layer per micro-batch */
  int nact;
  tens work[4];    /* GEMM/softmax temporaries, freed at once */
  int nwork;
  double layers, inflight, mbs;
  /* component totals from the analytic model */
  gpuplan_memory mem;
} prog;

/* Allocate one tensor; on OOM record where.  Returns the address or 0. */
static uint64_t get(prog *p, double bytes, const char *what) {
  uint64_t addr = 0, n;
  int rc;
  if (p->oom || bytes < 1) return 0;
  n = (uint64_t)ceil(bytes);
  rc = gpuplan_cachealloc_malloc(p->a, n, 0, &addr);
  p->r->ops++;
  if (rc == GPUPLAN_EOOM) {
    p->oom = 1;
    p->r->oom = 1;
    p->r->oom_step = p->step;
    if (p->layer >= 0)
      snprintf(p->r->oom_op, sizeof p->r->oom_op, "step %lld %s layer %lld: %s (%llu bytes)",
               (long long)p->step, p->phase, (long long)p->layer, what, (unsigned long long)n);
    else
      snprintf(p->r->oom_op, sizeof p->r->oom_op, "step %lld %s: %s (%llu bytes)",
               (long long)p->step, p->phase, what, (unsigned long long)n);
    snprintf(p->r->oom_message, sizeof p->r->oom_message, "%s", gpuplan_errmsg(p->ctx));
    return 0;
  }
  if (rc) {
    p->oom = -1; /* host ENOMEM: abort */
    return 0;
  }
  {
    const gpuplan_alloc_stats *st = gpuplan_cachealloc_stats(p->a);
    if ((uint64_t)st->reserved_bytes[0].current > p->r->peak_reserved) {
      p->r->peak_reserved = (uint64_t)st->reserved_bytes[0].current;
      p->r->allocated_at_peak_reserved = (uint64_t)st->allocated_bytes[0].current;
      gpuplan_cachealloc_free_space(p->a, &p->r->largest_free_at_peak, &p->r->total_free_at_peak);
    }
  }
  return addr;
}

static void put(prog *p, uint64_t addr) {
  if (!addr) return;
  gpuplan_cachealloc_release(p->a, addr);
  p->r->ops++;
}

/* Tensor shapes of one layer, from the model (per token for activations). */
static void layer_shapes(prog *p) {
  const gpuplan_model *m = p->m;
  const gpuplan_memory_options *o = p->o;
  double h = (double)m->hidden, ad = (double)(m->heads * m->head_dim);
  double kvd = (double)(m->kv_heads * m->head_dim), f = (double)m->ffn_hidden;
  double s = (double)(o->seq_len ? o->seq_len : m->seq_len), a = (double)m->heads;
  int swiglu = m->ffn_type && strcmp(m->ffn_type, "gelu") != 0 && strcmp(m->ffn_type, "relu") != 0;
  double E = m->experts > 1 ? (double)m->experts / (double)o->ep : 1, k = m->experts > 1 ? (double)m->top_k : 1;
  int n = 0;
  /* Parameters (relative sizes). */
  p->w[n++] = (tens){"attention qkv weight", h * (ad + 2 * kvd)};
  p->w[n++] = (tens){"attention output weight", ad * h};
  p->w[n++] = (tens){"mlp fc1 weight", E * h * f * (swiglu ? 2 : 1)};
  p->w[n++] = (tens){"mlp fc2 weight", E * f * h};
  p->w[n++] = (tens){"norm weights", 2 * h};
  p->nw = n;
  /* Activations kept for backward (relative sizes, per token). */
  n = 0;
  p->act[n++] = (tens){"input layernorm input", 2 * h};
  p->act[n++] = (tens){"qkv input", 2 * h};
  p->act[n++] = (tens){"query", 2 * ad};
  p->act[n++] = (tens){"key and value", 4 * kvd};
  if (o->recompute == GPUPLAN_RECOMPUTE_NONE) {
    if (o->flash_attention) {
      p->act[n++] = (tens){"flash attention log-sum-exp", 4 * a};
    } else {
      p->act[n++] = (tens){"attention softmax output", 2 * a * s};
      if (o->dropout) p->act[n++] = (tens){"attention dropout mask", a * s};
      if (o->dropout) p->act[n++] = (tens){"attention dropout output", 2 * a * s};
    }
  }
  p->act[n++] = (tens){"attention output-projection input", 2 * ad};
  if (o->dropout) p->act[n++] = (tens){"attention residual dropout mask", h};
  p->act[n++] = (tens){"post-attention layernorm input", 2 * h};
  p->act[n++] = (tens){"mlp fc1 input", 2 * h};
  if (swiglu) {
    p->act[n++] = (tens){"mlp gate projection", 2 * f * k};
    p->act[n++] = (tens){"mlp up projection", 2 * f * k};
    p->act[n++] = (tens){"mlp fc2 input", 2 * f * k};
  } else {
    p->act[n++] = (tens){"mlp activation input", 2 * f * k};
    p->act[n++] = (tens){"mlp fc2 input", 2 * f * k};
  }
  if (o->dropout) p->act[n++] = (tens){"mlp dropout mask", h};
  p->nact = n;
  /* Temporaries: the widest GEMM output and, for explicit attention, the
   * raw scores before softmax. */
  n = 0;
  p->work[n++] = (tens){"mlp GEMM output (temporary)", 2 * f * k * (swiglu ? 2 : 1)};
  if (!o->flash_attention) p->work[n++] = (tens){"attention scores (temporary)", 2 * a * s};
  p->nwork = n;
}

static double sum(const tens *t, int n) {
  double s = 0;
  int i;
  for (i = 0; i < n; i++) s += t[i].bytes;
  return s;
}

/* Allocate a component of total bytes split over tensors t in proportion. */
static void get_split(prog *p, const tens *t, int n, double total, uint64_t *addrs) {
  double s = sum(t, n);
  int i;
  for (i = 0; i < n; i++) addrs[i] = s > 0 ? get(p, total * t[i].bytes / s, t[i].name) : 0;
}

static void put_all(prog *p, uint64_t *addrs, int n) {
  int i;
  for (i = n - 1; i >= 0; i--) {
    put(p, addrs[i]);
    addrs[i] = 0;
  }
}

int gpuplan_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                     const gpuplan_memory_options *options, const gpuplan_simulate_options *sim,
                     gpuplan_simulate_result *out) {
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options sdef = GPUPLAN_SIMULATE_OPTIONS_INIT;
  const gpuplan_memory_options *o = options ? options : &defaults;
  gpuplan_alloc_conf conf;
  prog p;
  int64_t L, li, step, nmb;
  uint64_t outside, *wa = NULL, *ga = NULL, *ma = NULL, *oa = NULL, *acts = NULL;
  uint64_t buckets[2] = {0, 0}, emb = 0, extra_w = 0, extra_g = 0, extra_m = 0, extra_o = 0;
  double wl, gl, ml, ol, actl, w_extra, g_extra, m_extra, o_extra;
  int rc, zero3, grads_live = 0, state_live = 0, first_stage, last_stage;
  size_t nslots;
  tee tr;

  if (!ctx) return GPUPLAN_EMISUSE;
  if (!model || !gpu || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "simulate: NULL argument");
  if (!sim) sim = &sdef;
  if (sim->version != GPUPLAN_SIMULATE_OPTIONS_VERSION)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "simulate: options.version %u is unknown", sim->version);
  if (sim->steps < 1 || sim->steps > 1000000)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "steps: must be 1..1000000 (got %lld)", (long long)sim->steps);
  if (o->workload != GPUPLAN_TRAIN)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "simulate: only training steps are simulated (workload is inference)");
  memset(out, 0, sizeof *out);
  memset(&p, 0, sizeof p);
  GPUPLAN_TRY(gpuplan_memory_eval(ctx, model, gpu, o, GPUPLAN_STAGE_WORST, &p.mem));
  GPUPLAN_TRY(gpuplan_alloc_conf_parse(ctx, sim->alloc_conf, sim->torch, &conf));
  p.ctx = ctx;
  p.r = out;
  p.o = o;
  p.m = model;
  p.layer = -1;
  outside = p.mem.item[GPUPLAN_MEM_CONTEXT].bytes + p.mem.item[GPUPLAN_MEM_NCCL].bytes +
            p.mem.item[GPUPLAN_MEM_WORKSPACE].bytes;
  out->analytic_bytes = p.mem.total - outside;
  out->capacity = gpu->memory_bytes > outside ? gpu->memory_bytes - outside : 0;
  rc = gpuplan_cachealloc_new(ctx, &conf, out->capacity ? out->capacity : 1, sim->device, &p.a);
  if (rc) return rc;
  memset(&tr, 0, sizeof tr);
  tr.fn = sim->trace;
  tr.payload = sim->trace_payload;
  if (sim->snapshot_path && (rc = gpuplan_recorder_new(ctx, &tr.rec))) goto out;
  if (tr.fn || tr.rec) gpuplan_cachealloc_set_trace(p.a, tee_trace, &tr);

  layer_shapes(&p);
  L = p.mem.layers;
  p.inflight = p.mem.microbatches_in_flight;
  nmb = o->microbatches ? o->microbatches : o->pp;
  if (nmb < (int64_t)ceil(p.inflight)) nmb = (int64_t)ceil(p.inflight);
  first_stage = p.mem.stage == 0;
  last_stage = p.mem.stage == o->pp - 1;
  zero3 = p.mem.item[GPUPLAN_MEM_GATHER].bytes > 0 &&
          (o->dp_mode == GPUPLAN_DP_ZERO3 || o->dp_mode == GPUPLAN_DP_FSDP_FULL ||
           o->dp_mode == GPUPLAN_DP_FSDP_HYBRID);

  /* Split the persistent components: the layers share them in proportion
   * to their parameters; the rest (embedding, output layer, final norm) is
   * one extra tensor. */
  {
    double pr = p.mem.params_rank, per_layer = 0;
    double frac;
    /* params of one layer on this rank, from the shapes */
    per_layer = p.wsum = sum(p.w, p.nw) / (double)o->tp;
    if (per_layer * (double)L > pr) per_layer = pr / (double)(L ? L : 1);
    frac = pr > 0 ? per_layer / pr : 0; /* one layer's share */
    wl = (double)p.mem.item[GPUPLAN_MEM_WEIGHTS].bytes * frac;
    gl = (double)p.mem.item[GPUPLAN_MEM_GRADIENTS].bytes * frac;
    ml = (double)p.mem.item[GPUPLAN_MEM_MASTER].bytes * frac;
    ol = (double)p.mem.item[GPUPLAN_MEM_OPTIMIZER].bytes * frac;
    w_extra = (double)p.mem.item[GPUPLAN_MEM_WEIGHTS].bytes - wl * (double)L;
    g_extra = (double)p.mem.item[GPUPLAN_MEM_GRADIENTS].bytes - gl * (double)L;
    m_extra = (double)p.mem.item[GPUPLAN_MEM_MASTER].bytes - ml * (double)L;
    o_extra = (double)p.mem.item[GPUPLAN_MEM_OPTIMIZER].bytes - ol * (double)L;
  }
  actl = p.inflight > 0 && L > 0
             ? (double)p.mem.item[GPUPLAN_MEM_ACTIVATIONS].bytes / ((double)L * p.inflight)
             : 0;

  nslots = (size_t)L * (size_t)p.nw;
  wa = gpuplan__calloc(ctx, nslots + 1, sizeof *wa);
  ga = gpuplan__calloc(ctx, nslots + 1, sizeof *ga);
  ma = gpuplan__calloc(ctx, nslots + 1, sizeof *ma);
  oa = gpuplan__calloc(ctx, 2 * nslots + 1, sizeof *oa);
  acts = gpuplan__calloc(ctx, (size_t)L * (size_t)(ceil(p.inflight) + 1) * MAXT + 1, sizeof *acts);
  if (!wa || !ga || !ma || !oa || !acts) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }

  /* Setup: parameters (shards under ZeRO-3), gradient buckets. */
  p.phase = "setup";
  p.step = 0;
  for (li = 0; li < L && !p.oom; li++) {
    p.layer = li;
    if (zero3) wa[li * p.nw] = get(&p, wl, "flat parameter shard");
    else get_split(&p, p.w, p.nw, wl, wa + li * p.nw);
  }
  p.layer = -1;
  extra_w = get(&p, w_extra, first_stage ? "embedding / output parameters" : "output parameters");
  if (p.mem.item[GPUPLAN_MEM_BUCKETS].bytes) {
    buckets[0] = get(&p, p.mem.item[GPUPLAN_MEM_BUCKETS].bytes / 2.0, "gradient bucket");
    buckets[1] = get(&p, p.mem.item[GPUPLAN_MEM_BUCKETS].bytes / 2.0, "gradient bucket");
  }

  for (step = 1; step <= sim->steps && !p.oom; step++) {
    int64_t fwd = 0, bwd = 0;
    size_t per_mb = (size_t)L * MAXT;
    int64_t slots = (int64_t)ceil(p.inflight);
    uint64_t logits = 0;
    p.step = step;
    /* 1F1B: up to `inflight` micro-batches' activations live at once. */
    while (bwd < nmb && !p.oom) {
      int do_fwd = fwd < nmb && fwd - bwd < slots;
      if (do_fwd) {
        uint64_t *A = acts + (size_t)(fwd % slots) * per_mb;
        p.phase = "forward";
        p.layer = -1;
        if (first_stage && p.mem.item[GPUPLAN_MEM_EMBEDDING_ACT].bytes)
          emb = get(&p, (double)p.mem.item[GPUPLAN_MEM_EMBEDDING_ACT].bytes / p.inflight,
                    "input ids and embedding dropout mask");
        for (li = 0; li < L && !p.oom; li++) {
          uint64_t g = 0, tmp[4];
          int t;
          p.layer = li;
          if (zero3) g = get(&p, p.mem.item[GPUPLAN_MEM_GATHER].bytes / 2.0, "gathered layer parameters");
          if (o->recompute == GPUPLAN_RECOMPUTE_FULL) {
            A[li * MAXT] = get(&p, actl, "layer input (checkpoint)");
          } else {
            get_split(&p, p.act, p.nact, actl, A + li * MAXT);
          }
          for (t = 0; t < p.nwork; t++)
            tmp[t] = get(&p, p.work[t].bytes * (double)((o->seq_len ? o->seq_len : model->seq_len) / o->cp) *
                                 (double)o->micro_batch / (double)o->tp,
                         p.work[t].name);
          for (t = p.nwork - 1; t >= 0; t--) put(&p, tmp[t]);
          put(&p, g);
        }
        p.layer = -1;
        if (last_stage && p.mem.item[GPUPLAN_MEM_LOGITS].bytes && !p.oom)
          logits = get(&p, (double)p.mem.item[GPUPLAN_MEM_LOGITS].bytes, "logits and loss (fp32)");
        fwd++;
        if (fwd - bwd < slots && fwd < nmb) continue;
      }
      /* backward of the oldest micro-batch in flight */
      {
        uint64_t *A = acts + (size_t)(bwd % slots) * per_mb;
        p.phase = "backward";
        p.layer = -1;
        if (logits) {
          uint64_t dl = get(&p, (double)p.mem.item[GPUPLAN_MEM_LOGITS].bytes, "gradient of the logits");
          put(&p, logits);
          logits = 0;
          put(&p, dl);
        }
        if (!grads_live && !p.oom) extra_g = get(&p, g_extra, "embedding / output gradients");
        for (li = L - 1; li >= 0 && !p.oom; li--) {
          uint64_t g = 0, rec[MAXT], gin, gtmp;
          p.layer = li;
          memset(rec, 0, sizeof rec);
          if (zero3) g = get(&p, p.mem.item[GPUPLAN_MEM_GATHER].bytes / 2.0, "gathered layer parameters");
          if (o->recompute == GPUPLAN_RECOMPUTE_FULL)
            get_split(&p, p.act, p.nact, (double)p.mem.item[GPUPLAN_MEM_RECOMPUTE].bytes, rec);
          /* gradient of the layer's input and a GEMM temporary */
          gin = get(&p, actl * 2 * (double)model->hidden / sum(p.act, p.nact), "gradient of the layer input");
          gtmp = get(&p, p.work[0].bytes * (double)((o->seq_len ? o->seq_len : model->seq_len) / o->cp) *
                             (double)o->micro_batch / (double)o->tp,
                     "gradient GEMM temporary");
          if (!grads_live) {
            if (zero3 || o->dp_mode == GPUPLAN_DP_ZERO2 || o->dp_mode == GPUPLAN_DP_FSDP_GRAD_OP)
              ga[li * p.nw] = get(&p, gl, "gradient shard");
            else
              get_split(&p, p.w, p.nw, gl, ga + li * p.nw);
          }
          put(&p, gtmp);
          put_all(&p, rec, p.nact);
          put_all(&p, A + li * MAXT, MAXT);
          put(&p, gin);
          put(&p, g);
        }
        p.layer = -1;
        put(&p, emb);
        emb = 0;
        grads_live = 1;
        bwd++;
      }
    }
    if (p.oom) break;
    /* Optimizer step: states are created lazily at the first step. */
    p.phase = "optimizer step";
    p.layer = -1;
    if (!state_live) {
      for (li = 0; li < L && !p.oom; li++) {
        p.layer = li;
        if (ml > 0) ma[li] = get(&p, ml, "fp32 master weights");
        if (ol > 0) {
          oa[2 * li] = get(&p, ol / 2, "optimizer state (exp_avg)");
          oa[2 * li + 1] = get(&p, ol / 2, "optimizer state (exp_avg_sq)");
        }
      }
      p.layer = -1;
      extra_m = get(&p, m_extra, "fp32 master weights (embedding / output)");
      extra_o = get(&p, o_extra, "optimizer states (embedding / output)");
      state_live = 1;
    }
    if (p.oom) break;
    if (sim->set_to_none) {
      /* zero_grad(set_to_none=True): the gradients are freed. */
      for (li = L - 1; li >= 0; li--) put_all(&p, ga + li * p.nw, p.nw);
      put(&p, extra_g);
      extra_g = 0;
      grads_live = 0;
    }
    out->steps_done = step;
  }
  if (p.oom < 0) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }
  {
    const gpuplan_alloc_stats *st = gpuplan_cachealloc_stats(p.a);
    out->peak_allocated = (uint64_t)st->allocated_bytes[0].peak;
    if ((uint64_t)st->reserved_bytes[0].peak > out->peak_reserved) out->peak_reserved = (uint64_t)st->reserved_bytes[0].peak;
    out->num_alloc_retries = st->num_alloc_retries;
    out->num_ooms = st->num_ooms;
    if (out->peak_reserved) out->fragmentation = 1.0 - (double)out->peak_allocated / (double)out->peak_reserved;
    if (out->analytic_bytes) out->vs_analytic = (double)out->peak_allocated / (double)out->analytic_bytes - 1.0;
  }
  (void)extra_w;
  (void)buckets;
  (void)extra_m;
  (void)extra_o;
  rc = GPUPLAN_OK;
  if (tr.rec && (rc = gpuplan_snapshot_write(p.a, tr.rec, sim->snapshot_path))) goto out;
  gpuplan__clear(ctx);
out:
  gpuplan_recorder_free(tr.rec);
  gpuplan__free(ctx, wa);
  gpuplan__free(ctx, ga);
  gpuplan__free(ctx, ma);
  gpuplan__free(ctx, oa);
  gpuplan__free(ctx, acts);
  gpuplan_cachealloc_free(p.a);
  return rc;
}
