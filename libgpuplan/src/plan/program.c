/*
 * program.c: the step program of one rank, run through the caching-allocator
 * model (gpuplan/simulate.h).
 *
 * The program allocates and frees the tensors the analytic model counts
 * (memory.c), with the same lists (plan/plan_int.h): per layer the tensors
 * autograd keeps, the forward temporaries, the backward working set; the
 * loss's intermediates and the previous step's logits; gradients as the
 * framework keeps them (buffers for the run, or created in backward and
 * freed by zero_grad(set_to_none)); optimizer states created lazily in the
 * first step() and the step's temporaries (foreach tensor lists, for-loop
 * temporaries).  The simulated peak therefore differs from the analytic
 * one only by named effects: allocator rounding, caching and
 * fragmentation, and the order of lifetimes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "plan/plan_int.h"
#include "replay/replay_int.h"

#define MAXW 8  /* parameter tensors per layer */
#define GRAPH_POOL 1 /* the private pool of the captured step's CUDA graph */
#define CHUNKS 16 /* a traced module's saved tensors, in this many allocations */

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

/* One layer kind's tensors, in bytes for one micro-batch. */
typedef struct layer_prog {
  gpuplan__act keep[GPUPLAN__MAX_ACTS], full[GPUPLAN__MAX_ACTS];
  int nkeep, nfull;
} layer_prog;

typedef struct prog {
  gpuplan_ctx *ctx;
  gpuplan_cachealloc *a;
  gpuplan_simulate_result *r;
  const gpuplan_memory_options *o;
  const gpuplan_model *m;
  int64_t step;
  int capture;                   /* this step is a CUDA graph's capture */
  const char *phase;
  int64_t layer;
  int oom;
  double tok;                    /* tokens of one micro-batch on this rank */
  layer_prog lp[3];              /* dense, MoE, decoder */
  gpuplan__act head[GPUPLAN__MAX_ACTS], emb[GPUPLAN__MAX_ACTS];
  int nhead, nemb;
  tens w[MAXW];                  /* parameter tensors of one layer (relative sizes) */
  int nw;
  gpuplan_memory mem;            /* the analytic model's components for the same case */
  uint64_t blas_ws[2];           /* the cuBLAS workspaces (forward's, backward's), once their first GEMM ran */
  gpuplan_recorder *rec;         /* the snapshot's recorder, or NULL: each allocation named by its frame */
  int timed;                     /* the modelled clock (sim->clock) stamps the recorder's entries */
  double now_us;                 /* that clock */
} prog;

/* The modelled clock's durations, in microseconds (gpuplan_simulate_options
 * clock): one layer's forward and backward of one micro-batch, what comes
 * after the last backward (bubble, pipeline send/recv, exposed data
 * parallel, straggler, overhead), the optimizer step, the whole step. */
typedef struct clock_plan {
  double fwd_us, bwd_us, tail_us, opt_us, step_us;
} clock_plan;

/* The clock's durations for a step of nmb micro-batches of L layers, from
 * the performance model's step.  GPUPLAN_OK, or GPUPLAN_EINVAL when the
 * step's times are not times. */
static int clock_of(gpuplan_ctx *ctx, const gpuplan_perf *pf, int64_t nmb, int64_t L, clock_plan *c) {
  double parts[9] = {pf->compute_s, pf->tp_comm_s, pf->cp_comm_s, pf->bubble_s, pf->pp_comm_s,
                     pf->dp_comm_s, pf->straggler_s, pf->overhead_s, pf->optimizer_s};
  double ff, per_mb;
  int i;
  if (!(pf->step_s > 0) || !isfinite(pf->step_s))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "clock: step_s must be a positive time (got %g)", pf->step_s);
  for (i = 0; i < 9; i++)
    if (!(parts[i] >= 0) || !isfinite(parts[i]))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "clock: the step's parts must be times >= 0 (one is %g)", parts[i]);
  /* forward: the model's forward FLOPs of the hardware's (1/3, 1/4 with
   * full recompute) */
  ff = pf->hardware_flops_per_token > 0 && pf->model_flops_per_token > 0
           ? pf->model_flops_per_token / 3 / pf->hardware_flops_per_token
           : 1.0 / 3;
  if (!(ff > 0 && ff <= 1)) ff = 1.0 / 3;
  /* one micro-batch of the model's step (its count is the run's unless the
   * run holds more in flight than the step has: then the step is longer) */
  per_mb = 1e6 * (pf->compute_s + pf->tp_comm_s + pf->cp_comm_s) /
           (double)(pf->microbatches > 0 ? pf->microbatches : nmb > 0 ? nmb : 1);
  c->fwd_us = per_mb * ff / (double)(L > 0 ? L : 1);
  c->bwd_us = per_mb * (1 - ff) / (double)(L > 0 ? L : 1);
  c->tail_us = 1e6 * (pf->bubble_s + pf->pp_comm_s + pf->dp_comm_s + pf->straggler_s + pf->overhead_s);
  c->opt_us = 1e6 * pf->optimizer_s;
  c->step_us = pf->microbatches > 0 && pf->microbatches != nmb
                  ? per_mb * (double)nmb + c->tail_us + c->opt_us
                  : 1e6 * pf->step_s;
  return GPUPLAN_OK;
}

/* Stamp the recorder's next entries with the clock. */
static void stamp(prog *p) {
  if (p->timed) gpuplan_recorder_set_time(p->rec, (int64_t)llround(p->now_us));
}

/* What an allocation of the step program is: "phase[ layer L]: what", as
 * the OOM's op and a snapshot's frame name it. */
static void op_name(const prog *p, const char *what, char *buf, size_t cap) {
  if (p->layer >= 0) snprintf(buf, cap, "%s layer %lld: %s", p->phase, (long long)p->layer, what);
  else snprintf(buf, cap, "%s: %s", p->phase, what);
}

/* The frame of the allocation get() makes next (gpuplan_recorder_set_frame):
 * its op_name, the step as the line, a capture in the file's name.
 * GPUPLAN_OK or GPUPLAN_ENOMEM. */
static int name_alloc(prog *p, const char *what) {
  char name[256];
  op_name(p, what, name, sizeof name);
  return gpuplan_recorder_set_frame(p->rec, name, p->capture ? "gpuplan simulate (CUDA graph capture)" : "gpuplan simulate",
                                    (int)p->step);
}

/* Allocate one tensor; on OOM record where.  Returns the address or 0. */
static uint64_t get(prog *p, double bytes, const char *what) {
  uint64_t addr = 0, n;
  int rc;
  if (p->oom || !(bytes >= 1)) return 0;
  if (p->rec && name_alloc(p, what)) {
    p->oom = -1; /* host ENOMEM: abort */
    return 0;
  }
  n = (uint64_t)ceil(bytes);
  stamp(p);
  rc = gpuplan_cachealloc_malloc(p->a, n, 0, &addr);
  p->r->ops++;
  if (rc == GPUPLAN_EOOM) {
    p->oom = 1;
    p->r->oom = 1;
    p->r->oom_step = p->step;
    char op[96];
    op_name(p, what, op, sizeof op);
    snprintf(p->r->oom_op, sizeof p->r->oom_op, "step %lld%s %s (%llu bytes)", (long long)p->step,
             p->capture ? " (CUDA graph capture)" : "", op, (unsigned long long)n);
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
  stamp(p);
  gpuplan_cachealloc_release(p->a, addr);
  p->r->ops++;
}

static void put_all(prog *p, uint64_t *addrs, int n) {
  int i;
  for (i = n - 1; i >= 0; i--) {
    put(p, addrs[i]);
    addrs[i] = 0;
  }
}

/* The first GEMM's cuBLAS workspace: since PyTorch 1.13 (pytorch#83461,
 * aten/src/ATen/cuda/CublasHandlePool.cpp getNewWorkspace) it comes from
 * the caching allocator, once per handle and stream, and stays allocated
 * (the real snapshots show a 32 MiB allocation from getNewWorkspace() /
 * getCurrentCUDABlasHandle() at the first matmul).  So it counts in
 * memory_allocated(), not outside the allocator.  Backward's GEMMs run on
 * the autograd engine's thread, whose handle gets a workspace of its own. */
static void blas_workspace(prog *p, int backward) {
  double total = (double)p->mem.item[GPUPLAN_MEM_WORKSPACE].bytes;
  int handles = p->o->workload == GPUPLAN_TRAIN ? 2 : 1; /* memory.c: forward's and the autograd thread's */
  if (p->blas_ws[backward] || p->oom || !(total > 0) || backward >= handles) return;
  p->blas_ws[backward] = get(p, total / handles, backward ? "cuBLAS workspace of the autograd thread (getNewWorkspace)"
                                                          : "cuBLAS workspace (getNewWorkspace)");
}

/* Parameter tensors of one layer, from the model (relative sizes). */
static void layer_weights(prog *p) {
  const gpuplan_model *m = p->m;
  const gpuplan_memory_options *o = p->o;
  double h = (double)m->hidden, ad = (double)(m->heads * m->head_dim);
  double kvd = (double)(m->kv_heads * m->head_dim), f = (double)m->ffn_hidden;
  int gated = m->ffn_type && (strcmp(m->ffn_type, "swiglu") == 0 || strcmp(m->ffn_type, "geglu") == 0);
  double E = m->experts > 1 ? (double)m->experts / (double)o->ep : 1;
  int n = 0;
  if (o->expert_ffn > 0 && m->experts > 1) f = (double)o->expert_ffn;
  p->w[n++] = (tens){"attention qkv weight", h * (ad + 2 * kvd)};
  p->w[n++] = (tens){"attention output weight", ad * h};
  p->w[n++] = (tens){"mlp fc1 weight", E * h * f * (gated ? 2 : 1)};
  p->w[n++] = (tens){"mlp fc2 weight", E * f * h};
  p->w[n++] = (tens){"norm weights", 2 * h};
  p->nw = n;
}

static double wsum(const prog *p) {
  double s = 0;
  int i;
  for (i = 0; i < p->nw; i++) s += p->w[i].bytes;
  return s;
}

/* Allocate a component of total bytes split over the layer's parameter tensors. */
static void get_split(prog *p, double total, uint64_t *addrs, const char *what) {
  double s = wsum(p);
  int i;
  for (i = 0; i < p->nw; i++) addrs[i] = s > 0 ? get(p, total * p->w[i].bytes / s, what ? what : p->w[i].name) : 0;
}

/* The kind of layer li of this stage. */
static int layer_kind(const prog *p, int64_t li) {
  const gpuplan_memory_options *o = p->o;
  int64_t first = 0, s;
  if (p->m->experts <= 1) return GPUPLAN__LAYER_DENSE;
  for (s = 0; s < p->mem.stage; s++) first += p->mem.layers; /* even split: a good enough index */
  return first + li < o->dense_layers ? GPUPLAN__LAYER_DENSE : GPUPLAN__LAYER_MOE;
}

/* Forward of one layer: its kept tensors (addresses into A), temporaries freed after the next allocation. */
static void forward_layer(prog *p, const gpuplan__act *acts, int n, uint64_t *A) {
  uint64_t pending = 0;
  int i, k = 0;
  for (i = 0; i < n && !p->oom; i++) {
    double bytes = acts[i].per_token * p->tok;
    if (acts[i].kind == GPUPLAN__KEEP) {
      A[k++] = get(p, bytes, acts[i].name);
      put(p, pending);
      pending = 0;
    } else if (acts[i].kind == GPUPLAN__TEMP) {
      put(p, pending);
      pending = get(p, bytes, acts[i].name);
    }
  }
  put(p, pending);
}

/* The backward working set of one layer: BWD alive throughout, then the MLP
 * part, then the attention part (the reverse of forward). */
static void backward_layer(prog *p, const gpuplan__act *acts, int n) {
  uint64_t keep[GPUPLAN__MAX_ACTS], part[GPUPLAN__MAX_ACTS];
  int i, nk = 0, np = 0, pass;
  for (i = 0; i < n; i++)
    if (acts[i].kind == GPUPLAN__BWD) keep[nk++] = get(p, acts[i].per_token * p->tok, acts[i].name);
  for (pass = 0; pass < 2; pass++) {
    int kind = pass == 0 ? GPUPLAN__BWD_MLP : GPUPLAN__BWD_ATTN;
    np = 0;
    for (i = 0; i < n; i++)
      if (acts[i].kind == kind) part[np++] = get(p, acts[i].per_token * p->tok, acts[i].name);
    put_all(p, part, np);
  }
  put_all(p, keep, nk);
}

static int module_program(prog *p, const gpuplan_simulate_options *sim, gpuplan_simulate_result *out);

int gpuplan_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                     const gpuplan_memory_options *options, const gpuplan_simulate_options *sim,
                     gpuplan_simulate_result *out) {
  return gpuplan__simulate_summary(ctx, model, gpu, options, sim, out, NULL);
}

int gpuplan__simulate_summary(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                              const gpuplan_memory_options *options, const gpuplan_simulate_options *sim,
                              gpuplan_simulate_result *out, gpuplan__sim_summary *sum) {
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_simulate_options sdef = GPUPLAN_SIMULATE_OPTIONS_INIT;
  const gpuplan_memory_options *o = options ? options : &defaults;
  gpuplan_alloc_conf conf;
  prog p;
  int64_t L, li, step, nmb, slots;
  uint64_t outside, *wa = NULL, *ga = NULL, *ma = NULL, *oa = NULL, *acts = NULL;
  uint64_t buckets[2] = {0, 0}, extra_w = 0, extra_g = 0, extra_m = 0, extra_o = 0, adapters = 0, prev_logits = 0;
  double wl, gl, ml, ol, w_extra, g_extra, m_extra, o_extra;
  int rc, zero3, grads_live = 0, state_live = 0, first_stage, last_stage, persist, prev, k, logits_idx = -1, graph;
  size_t nslots, per_mb;
  const char *src;
  tee tr;
  clock_plan ck;
  double step_start = 0;

  if (!ctx) return GPUPLAN_EMISUSE;
  if (!model || !gpu || !out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "simulate: NULL argument");
  if (!sim) sim = &sdef;
  if (sim->version < 1 || sim->version > GPUPLAN_SIMULATE_OPTIONS_VERSION) /* every version 1..current (conventions rule 4) */
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "simulate: options.version %u is unknown (this library reads 1 to %d)",
                          sim->version, GPUPLAN_SIMULATE_OPTIONS_VERSION);
  if (sim->steps < 1 || sim->steps > 1000000)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "steps: must be 1..1000000 (got %lld)", (long long)sim->steps);
  graph = sim->version >= 2 && sim->cuda_graph;
  if (graph && sim->steps < 2)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "cuda_graph: needs steps >= 2 (the eager warm-up step before the capture; got %lld)",
                          (long long)sim->steps);
  if (graph && o->module.params > 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "cuda_graph: a traced module's program is not captured (simulate it without cuda_graph)");
  if (o->workload != GPUPLAN_TRAIN && !(o->module.params > 0))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "simulate: only training steps are simulated (workload is inference); a traced module's "
                          "forward loop is the exception");
  memset(out, 0, sizeof *out);
  memset(&p, 0, sizeof p);
  GPUPLAN_TRY(gpuplan_memory_eval(ctx, model, gpu, o, GPUPLAN_STAGE_WORST, &p.mem));
  GPUPLAN_TRY(gpuplan_alloc_conf_parse(ctx, sim->alloc_conf, sim->torch, &conf));
  p.ctx = ctx;
  p.r = out;
  p.o = o;
  p.m = model;
  p.layer = -1;
  /* outside the caching allocator: the context and NCCL (the cuBLAS
   * workspace is allocated inside it, blas_workspace) */
  outside = p.mem.item[GPUPLAN_MEM_CONTEXT].bytes + p.mem.item[GPUPLAN_MEM_NCCL].bytes;
  out->analytic_bytes = p.mem.total > outside ? p.mem.total - outside : 0;
  {
    uint64_t usable = gpuplan__gpu_total(gpu, o, &src);
    out->capacity = usable > outside ? usable - outside : 0;
  }
  rc = gpuplan_cachealloc_new(ctx, &conf, out->capacity ? out->capacity : 1, sim->device, &p.a);
  if (rc) return rc;
  memset(&tr, 0, sizeof tr);
  tr.fn = sim->trace;
  tr.payload = sim->trace_payload;
  if (sim->snapshot_path && (rc = gpuplan_recorder_new(ctx, &tr.rec))) goto out;
  p.rec = tr.rec;
  if (tr.fn || tr.rec) gpuplan_cachealloc_set_trace(p.a, tee_trace, &tr);

  persist = gpuplan__grads_persist(o) || !sim->set_to_none;
  if (o->module.params > 0) {
    rc = module_program(&p, sim, out);
    goto finish;
  }

  p.tok = (double)(o->seq_len ? o->seq_len : model->seq_len) / (double)o->cp * (double)o->micro_batch;
  for (k = 0; k < 3; k++) {
    p.lp[k].nkeep = gpuplan__layer_acts(model, o, k, 0, p.lp[k].keep);
    p.lp[k].nfull = o->recompute == GPUPLAN_RECOMPUTE_FULL ? gpuplan__layer_acts(model, o, k, 1, p.lp[k].full) : 0;
  }
  p.nhead = gpuplan__head_acts(model, o, p.head);
  p.nemb = gpuplan__embed_acts(model, o, p.emb);
  prev = gpuplan__prev_logits(o);
  for (k = 0; k < p.nhead; k++)
    if (p.head[k].kind == GPUPLAN__KEEP && strstr(p.head[k].name, "logits")) logits_idx = k;
  layer_weights(&p);
  L = p.mem.layers;
  nmb = o->microbatches ? o->microbatches : o->pp;
  slots = (int64_t)ceil(p.mem.microbatches_in_flight);
  if (slots < 1) slots = 1;
  if (nmb < slots) nmb = slots;
  memset(&ck, 0, sizeof ck);
  if (p.rec && sim->version >= 3 && sim->clock) {
    if ((rc = clock_of(ctx, sim->clock, nmb, L, &ck))) goto out;
    p.timed = 1;
  }
  first_stage = p.mem.stage == 0;
  last_stage = p.mem.stage == o->pp - 1;
  zero3 = p.mem.item[GPUPLAN_MEM_GATHER].bytes > 0 &&
          (o->dp_mode == GPUPLAN_DP_ZERO3 || o->dp_mode == GPUPLAN_DP_FSDP_FULL ||
           o->dp_mode == GPUPLAN_DP_FSDP_HYBRID);

  /* Split the persistent components: the layers share them in proportion
   * to their parameters; the rest (embedding, output layer, final norm) is
   * one extra tensor. */
  {
    double pr = p.mem.params_rank, per_layer, frac;
    per_layer = wsum(&p) / (double)o->tp;
    if (per_layer * (double)L > pr) per_layer = pr / (double)(L ? L : 1);
    frac = pr > 0 ? per_layer / pr : 0; /* one layer's share */
    wl = (double)p.mem.item[GPUPLAN_MEM_WEIGHTS].bytes * frac;
    gl = (double)p.mem.item[GPUPLAN_MEM_GRADIENTS].bytes / (double)(L ? L : 1);
    ml = (double)p.mem.item[GPUPLAN_MEM_MASTER].bytes * frac;
    ol = (double)p.mem.item[GPUPLAN_MEM_OPTIMIZER].bytes / (double)(L ? L : 1);
    if (o->finetune == GPUPLAN_FT_FULL) {
      gl = (double)p.mem.item[GPUPLAN_MEM_GRADIENTS].bytes * frac;
      ol = (double)p.mem.item[GPUPLAN_MEM_OPTIMIZER].bytes * frac;
    }
    w_extra = (double)p.mem.item[GPUPLAN_MEM_WEIGHTS].bytes - wl * (double)L;
    g_extra = (double)p.mem.item[GPUPLAN_MEM_GRADIENTS].bytes - gl * (double)L;
    m_extra = (double)p.mem.item[GPUPLAN_MEM_MASTER].bytes - ml * (double)L;
    o_extra = (double)p.mem.item[GPUPLAN_MEM_OPTIMIZER].bytes - ol * (double)L;
  }

  nslots = (size_t)L * (size_t)p.nw;
  per_mb = (size_t)(L + 1) * GPUPLAN__MAX_ACTS;
  wa = gpuplan__calloc(ctx, nslots + 1, sizeof *wa);
  ga = gpuplan__calloc(ctx, nslots + 1, sizeof *ga);
  ma = gpuplan__calloc(ctx, nslots + 1, sizeof *ma);
  oa = gpuplan__calloc(ctx, 2 * (size_t)L + 1, sizeof *oa);
  acts = gpuplan__calloc(ctx, per_mb * (size_t)slots + 1, sizeof *acts);
  if (!wa || !ga || !ma || !oa || !acts) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }

  /* Setup: parameters (shards under ZeRO-3), fp32 master weights (created
   * with the model or the engine), adapters, gradient buckets. */
  p.phase = "setup";
  p.step = 0;
  for (li = 0; li < L && !p.oom; li++) {
    p.layer = li;
    if (zero3) wa[li * p.nw] = get(&p, wl, "flat parameter shard");
    else get_split(&p, wl, wa + li * p.nw, NULL);
    if (ml > 0) get_split(&p, ml, ma + li * p.nw, "fp32 master weights");
  }
  p.layer = -1;
  extra_w = get(&p, w_extra, first_stage ? "embedding / output parameters" : "output parameters");
  extra_m = get(&p, m_extra, "fp32 master weights (embedding / output)");
  adapters = get(&p, (double)p.mem.item[GPUPLAN_MEM_ADAPTERS].bytes, "LoRA adapters");
  if (p.mem.item[GPUPLAN_MEM_BUCKETS].bytes) {
    buckets[0] = get(&p, p.mem.item[GPUPLAN_MEM_BUCKETS].bytes / 2.0, "gradient bucket");
    buckets[1] = get(&p, p.mem.item[GPUPLAN_MEM_BUCKETS].bytes / 2.0, "gradient bucket");
  }

  for (step = 1; step <= sim->steps && !p.oom; step++) {
    int64_t fwd = 0, bwd = 0;
    uint64_t head_a[GPUPLAN__MAX_ACTS], emb_a[GPUPLAN__MAX_ACTS], loss_a[GPUPLAN__MAX_ACTS];
    int nloss = 0, i;
    memset(head_a, 0, sizeof head_a);
    memset(emb_a, 0, sizeof emb_a);
    p.step = step;
    p.now_us = step_start;
    stamp(&p);
    if (graph && step == sim->steps) {
      /* The last step is captured (torch.cuda.graph): the steps before
       * were its eager warm-up; their cached blocks stay in the default
       * pools, which the capture cannot use, unless emptied first. */
      if (sim->empty_cache_before_capture && (rc = gpuplan_cachealloc_empty_cache(p.a))) goto out;
      if ((rc = gpuplan_cachealloc_begin_pool(p.a, GRAPH_POOL))) goto out;
      gpuplan__cachealloc_capturing(p.a, 1);
      p.capture = 1;
    }
    /* 1F1B: up to `slots` micro-batches' activations live at once. */
    while (bwd < nmb && !p.oom) {
      int do_fwd = fwd < nmb && fwd - bwd < slots;
      if (do_fwd) {
        uint64_t *A = acts + (size_t)(fwd % slots) * per_mb;
        p.phase = "forward";
        p.layer = -1;
        if (first_stage)
          for (i = 0; i < p.nemb; i++) emb_a[i] = get(&p, p.emb[i].per_token * p.tok, p.emb[i].name);
        for (li = 0; li < L && !p.oom; li++) {
          uint64_t g = 0;
          const layer_prog *lp = &p.lp[layer_kind(&p, li)];
          p.layer = li;
          if (zero3) g = get(&p, p.mem.item[GPUPLAN_MEM_GATHER].bytes / 2.0, "gathered layer parameters");
          blas_workspace(&p, 0);
          forward_layer(&p, lp->keep, lp->nkeep, A + li * GPUPLAN__MAX_ACTS);
          put(&p, g);
          p.now_us += ck.fwd_us;
        }
        p.layer = -1;
        if (last_stage && !p.oom) {
          for (i = 0; i < p.nhead && !p.oom; i++) {
            if (p.head[i].kind == GPUPLAN__KEEP) {
              head_a[i] = get(&p, p.head[i].per_token * p.tok, p.head[i].name);
              if (i == logits_idx && prev_logits) {
                put(&p, prev_logits); /* the loop's variable now refers to the new logits */
                prev_logits = 0;
              }
            }
          }
          if (o->phase != GPUPLAN_PHASE_FORWARD)
            for (i = 0; i < p.nhead && !p.oom; i++)
              if (p.head[i].kind == GPUPLAN__LOSS) loss_a[nloss++] = get(&p, p.head[i].per_token * p.tok, p.head[i].name);
        }
        fwd++;
        if (fwd - bwd < slots && fwd < nmb) continue;
      }
      if (p.oom || o->phase == GPUPLAN_PHASE_FORWARD) break;
      /* backward of the oldest micro-batch in flight */
      {
        uint64_t *A = acts + (size_t)(bwd % slots) * per_mb;
        p.phase = "backward";
        p.layer = -1;
        if (last_stage) {
          uint64_t dl = get(&p, p.tok * 4 * (double)model->vocab / (double)o->tp, "gradient of the logits (fp32)");
          put_all(&p, loss_a, nloss);
          nloss = 0;
          put(&p, dl);
          for (i = p.nhead - 1; i >= 0; i--) {
            if (i == logits_idx && prev) {
              prev_logits = head_a[i]; /* still referenced by the training loop */
              head_a[i] = 0;
            }
            put(&p, head_a[i]);
            head_a[i] = 0;
          }
        }
        if (!grads_live && !p.oom) extra_g = get(&p, g_extra, "embedding / output gradients");
        for (li = L - 1; li >= 0 && !p.oom; li--) {
          uint64_t g = 0, rec[GPUPLAN__MAX_ACTS];
          const layer_prog *lp = &p.lp[layer_kind(&p, li)];
          int nrec = 0, j;
          p.layer = li;
          if (zero3) g = get(&p, p.mem.item[GPUPLAN_MEM_GATHER].bytes / 2.0, "gathered layer parameters");
          blas_workspace(&p, 1);
          if (o->recompute == GPUPLAN_RECOMPUTE_FULL)
            for (j = 0; j < lp->nfull; j++)
              if (lp->full[j].kind == GPUPLAN__KEEP) rec[nrec++] = get(&p, lp->full[j].per_token * p.tok, lp->full[j].name);
          backward_layer(&p, o->recompute == GPUPLAN_RECOMPUTE_FULL ? lp->full : lp->keep,
                         o->recompute == GPUPLAN_RECOMPUTE_FULL ? lp->nfull : lp->nkeep);
          if (!grads_live) {
            if (zero3 || o->dp_mode == GPUPLAN_DP_ZERO2 || o->dp_mode == GPUPLAN_DP_FSDP_GRAD_OP ||
                o->finetune != GPUPLAN_FT_FULL)
              ga[li * p.nw] = get(&p, gl, "gradient shard");
            else
              get_split(&p, gl, ga + li * p.nw, "gradient");
          }
          put_all(&p, rec, nrec);
          put_all(&p, A + li * GPUPLAN__MAX_ACTS, GPUPLAN__MAX_ACTS);
          put(&p, g);
          p.now_us += ck.bwd_us;
        }
        p.layer = -1;
        put_all(&p, emb_a, GPUPLAN__MAX_ACTS);
        grads_live = 1;
        bwd++;
      }
    }
    if (p.oom) break;
    if (o->phase == GPUPLAN_PHASE_FORWARD) {
      out->steps_done = step;
      break;
    }
    /* Optimizer step: states are created lazily at the first step; the
     * step's temporaries (foreach: a state-sized tensor list).  On the
     * clock it comes after what follows the last backward. */
    p.now_us += ck.tail_us;
    p.phase = "optimizer step";
    p.layer = -1;
    if (!state_live) {
      for (li = 0; li < L && !p.oom; li++) {
        p.layer = li;
        if (ol > 0) {
          oa[2 * li] = get(&p, ol / 2, "optimizer state (exp_avg)");
          oa[2 * li + 1] = get(&p, ol / 2, "optimizer state (exp_avg_sq)");
        }
      }
      p.layer = -1;
      extra_o = get(&p, o_extra, "optimizer states (embedding / output)");
      state_live = 1;
    }
    if (p.mem.item[GPUPLAN_MEM_OPT_STEP].bytes && !p.oom) {
      if (gpuplan__opt_impl(o) == GPUPLAN_OPTIMPL_FOREACH && o->optimizer != GPUPLAN_OPT_ADAFACTOR) {
        uint64_t *tmp = oa + 0, t1 = 0;
        double per = (double)p.mem.item[GPUPLAN_MEM_OPT_STEP].bytes / (double)(L + 1);
        (void)tmp;
        /* one temporary per parameter tensor, all alive until the update */
        {
          uint64_t *list = gpuplan__calloc(ctx, (size_t)L + 2, sizeof *list);
          if (!list) {
            rc = gpuplan__nomem(ctx);
            goto out;
          }
          for (li = 0; li <= L && !p.oom; li++) list[li] = get(&p, per, "foreach temporaries (exp_avg_sq.sqrt())");
          put_all(&p, list, (int)L + 1);
          gpuplan__free(ctx, list);
        }
        (void)t1;
      } else {
        uint64_t t1 = get(&p, p.mem.item[GPUPLAN_MEM_OPT_STEP].bytes / 2.0, "optimizer temporary (denominator)");
        uint64_t t2 = get(&p, p.mem.item[GPUPLAN_MEM_OPT_STEP].bytes / 2.0, "optimizer temporary (update)");
        put(&p, t2);
        put(&p, t1);
      }
    }
    if (p.oom) break;
    step_start += ck.step_us;
    p.now_us = step_start; /* the step's end: what the parts did not account is the step's */
    if (!persist && !p.capture) {
      /* zero_grad(set_to_none=True): the gradients are freed (not after
       * a capture: the graph's gradients are its static outputs, written
       * by every replay). */
      for (li = L - 1; li >= 0; li--) put_all(&p, ga + li * p.nw, p.nw);
      put(&p, extra_g);
      extra_g = 0;
      grads_live = 0;
    }
    out->steps_done = step;
  }
finish:
  if (p.capture) {
    /* capture_end: allocations go to the default pools again; the graph
     * keeps its pool (and every address in it) for its replays, which
     * allocate nothing. */
    gpuplan__cachealloc_capturing(p.a, 0);
    if (!rc) rc = gpuplan_cachealloc_end_pool(p.a);
    if (sum && !rc) {
      gpuplan_segment_info *segs = NULL;
      gpuplan_block_info *blocks = NULL;
      size_t i, n = 0;
      sum->graph_captured = !p.oom;
      if ((rc = gpuplan__alloc_layout(p.a, &segs, &blocks, &n))) goto out;
      for (i = 0; i < n; i++)
        if (segs[i].pool_id == GRAPH_POOL) {
          sum->graph_reserved += segs[i].total_size;
          sum->graph_allocated += segs[i].allocated_size;
        }
      gpuplan__free(ctx, segs);
      gpuplan__free(ctx, blocks);
    }
  }
  if (p.oom < 0) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }
  if (rc) goto out;
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
  (void)adapters;
  rc = GPUPLAN_OK;
  if (tr.rec && (rc = gpuplan__snapshot_write_conf(p.a, tr.rec, sim->snapshot_path, sim->torch, sim->alloc_conf))) goto out;
  /* memory_summary() as the run left the allocator (after an OOM too). */
  if (sum && sum->want && (rc = gpuplan__alloc_summary(p.a, 0, sum->abbreviated, sum->layout, &sum->text))) goto out;
  if (sum && sum->want_stats) sum->stats = *gpuplan_cachealloc_stats(p.a);
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

/* A traced module: its parameters, the saved tensors in CHUNKS pieces, the
 * forward's temporaries and outputs, backward's working set, the step. */
static int module_program(prog *p, const gpuplan_simulate_options *sim, gpuplan_simulate_result *out) {
  const gpuplan_memory_options *o = p->o;
  const gpuplan_module_desc *md = &o->module;
  double b = (double)o->micro_batch;
  uint64_t w[CHUNKS], g[CHUNKS], mst[CHUNKS], st[2 * CHUNKS], act[CHUNKS], in = 0, prev = 0, tmp;
  uint64_t prev_in = 0, prev_act[CHUNKS];
  int64_t step;
  int i, grads = 0, states = 0, persist = gpuplan__grads_persist(o) || !sim->set_to_none;
  int use_prev = gpuplan__prev_logits(o);
  (void)out;
  memset(w, 0, sizeof w);
  memset(g, 0, sizeof g);
  memset(mst, 0, sizeof mst);
  memset(st, 0, sizeof st);
  memset(prev_act, 0, sizeof prev_act);
  p->phase = "setup";
  for (i = 0; i < CHUNKS; i++) w[i] = get(p, (double)p->mem.item[GPUPLAN_MEM_WEIGHTS].bytes / CHUNKS, "parameters");
  for (i = 0; i < CHUNKS; i++) mst[i] = get(p, (double)p->mem.item[GPUPLAN_MEM_MASTER].bytes / CHUNKS, "fp32 master weights");
  if (o->workload == GPUPLAN_INFER || o->phase == GPUPLAN_PHASE_FORWARD) {
    /* A loop of forwards (x = next batch; y = model(x)): the previous
     * output is released when the new one is bound; with autograd on, its
     * graph keeps the previous input and saved tensors alive until then. */
    int graph = o->workload == GPUPLAN_TRAIN;
    double b2 = o->workload == GPUPLAN_INFER ? (double)o->batch : b;
    for (step = 1; step <= sim->steps && !p->oom; step++) {
      p->step = step;
      p->phase = "forward";
      in = get(p, md->in_bytes * b2, "input batch");
      if (!graph) {
        put(p, prev_in);
        prev_in = 0;
      }
      for (i = 0; i < CHUNKS && graph; i++) act[i] = get(p, md->act_bytes * b2 / CHUNKS, "saved activations");
      tmp = get(p, md->fwd_extra_bytes * b2, "forward temporaries");
      put(p, tmp);
      blas_workspace(p, 0); /* by the module's first matmul (a classifier's head at the latest) */
      tmp = get(p, md->out_bytes * b2, "outputs");
      if (!use_prev) {
        put(p, tmp);
        tmp = 0;
      }
      put(p, prev);
      put(p, prev_in);
      for (i = CHUNKS - 1; i >= 0 && graph; i--) put(p, prev_act[i]);
      prev = tmp;
      prev_in = in;
      if (graph) memcpy(prev_act, act, sizeof act);
      if (!p->oom) out->steps_done = step;
    }
    return GPUPLAN_OK;
  }
  for (step = 1; step <= sim->steps && !p->oom; step++) {
    p->step = step;
    p->phase = "forward";
    in = get(p, md->in_bytes * b, "input batch");
    for (i = 0; i < CHUNKS; i++) act[i] = get(p, md->act_bytes * b / CHUNKS, "saved activations");
    tmp = get(p, md->fwd_extra_bytes * b, "forward temporaries");
    put(p, tmp);
    blas_workspace(p, 0);
    tmp = get(p, md->out_bytes * b, "outputs and loss");
    put(p, prev);
    prev = 0;
    p->phase = "backward";
    blas_workspace(p, 1);
    {
      uint64_t bw = get(p, md->bwd_extra_bytes * b, "activation gradients");
      if (!grads)
        for (i = 0; i < CHUNKS; i++) g[i] = get(p, (double)p->mem.item[GPUPLAN_MEM_GRADIENTS].bytes / CHUNKS, "gradients");
      grads = 1;
      for (i = CHUNKS - 1; i >= 0; i--) put(p, act[i]);
      put(p, bw);
    }
    put(p, in);
    if (use_prev) prev = tmp;
    else put(p, tmp);
    p->phase = "optimizer step";
    if (!states)
      for (i = 0; i < 2 * CHUNKS; i++)
        st[i] = get(p, (double)p->mem.item[GPUPLAN_MEM_OPTIMIZER].bytes / (2 * CHUNKS), "optimizer states");
    states = 1;
    tmp = get(p, (double)p->mem.item[GPUPLAN_MEM_OPT_STEP].bytes, "optimizer-step temporaries");
    put(p, tmp);
    if (!persist) {
      for (i = CHUNKS - 1; i >= 0; i--) put(p, g[i]);
      grads = 0;
    }
    if (!p->oom) out->steps_done = step;
  }
  return GPUPLAN_OK;
}
