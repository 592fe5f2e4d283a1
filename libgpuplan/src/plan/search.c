/*
 * search.c: the layout search (gpuplan_search).  Every candidate is a plain
 * memory + performance evaluation (microseconds), so the search is an
 * exhaustive walk over the valid layouts, pruned only by divisibility and
 * memory, keeping the best few in a small sorted array.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/internal.h"

static double score(const gpuplan_perf *p, gpuplan_objective obj) {
  if (obj == GPUPLAN_OBJ_COST && isfinite(p->cost_per_mtok)) return p->cost_per_mtok;
  return p->step_s / (double)p->global_batch; /* time per sequence */
}

static void explain(gpuplan_candidate *c) {
  const gpuplan_perf *p = &c->perf;
  const gpuplan_memory_options *o = &c->options;
  double comm = p->tp_comm_s + p->cp_comm_s + p->pp_comm_s + p->dp_comm_s;
  int n = 0;
  char *w = c->why;
  size_t cap = sizeof c->why;
#define ADD(...)                                                   \
  do {                                                             \
    int k_ = snprintf(w, cap, "%s", n++ ? "; " : "");              \
    if (k_ > 0 && (size_t)k_ < cap) w += k_, cap -= (size_t)k_;    \
    k_ = snprintf(w, cap, __VA_ARGS__);                            \
    if (k_ > 0 && (size_t)k_ < cap) w += k_, cap -= (size_t)k_;    \
  } while (0)
  c->why[0] = '\0';
  ADD("MFU %.0f%%", 100 * p->mfu);
  if (p->bubble_s > 0) ADD("bubble %.0f%% of the step", 100 * p->bubble_s / p->step_s);
  else ADD("no pipeline bubble");
  if (comm / p->step_s < 0.02) ADD("communication hidden");
  else ADD("exposed communication %.0f%% (largest: %s)", 100 * comm / p->step_s,
           p->tp_comm_s >= p->dp_comm_s && p->tp_comm_s >= p->pp_comm_s ? "tensor parallel"
           : p->dp_comm_s >= p->pp_comm_s ? "data parallel" : "pipeline");
  if (o->recompute == GPUPLAN_RECOMPUTE_FULL) ADD("full recompute costs 1/3 more compute");
  else if (o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE) ADD("selective recompute (cheap)");
  ADD("%.0f GiB of %.0f GiB", (double)c->memory_bytes / 1073741824.0, (double)c->capacity / 1073741824.0);
#undef ADD
}

int gpuplan_search(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *cl,
                   const gpuplan_memory_options *base, int64_t G, gpuplan_objective obj,
                   gpuplan_candidate *out, size_t cap, size_t *n_out, gpuplan_search_stats *st,
                   gpuplan_progress_fn progress, void *payload) {
  static const int64_t tps[] = {1, 2, 4, 8, 16};
  static const int64_t cps[] = {1, 2, 4, 8};
  static const int64_t mbs[] = {1, 2, 4, 8};
  static const int64_t vpps[] = {1, 2, 4};
  static const gpuplan_recompute recs[] = {GPUPLAN_RECOMPUTE_NONE, GPUPLAN_RECOMPUTE_SELECTIVE,
                                           GPUPLAN_RECOMPUTE_FULL};
  static const gpuplan_dp_mode modes[] = {GPUPLAN_DP_ZERO1, GPUPLAN_DP_ZERO3};
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT, o;
  gpuplan_search_stats local;
  gpuplan_memory mem;
  gpuplan_candidate cand;
  const gpuplan_gpu *g;
  gpuplan_gpu cpu;
  int64_t gpus, pp, s;
  size_t n = 0, it, ic, im, iv, ir, id;
  uint64_t total = 0;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!m || !cl || !n_out || (!out && cap)) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "search: NULL argument");
  *n_out = 0;
  if (G < 1) return gpuplan__error(ctx, GPUPLAN_EINVAL, "global batch: must be at least 1 (got %lld)", (long long)G);
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (!base) base = &defaults;
  gpus = cl->gpus_per_node * cl->nodes;
  g = cl->gpu;
  if (!g) {
    memset(&cpu, 0, sizeof cpu);
    cpu.id = "cpu";
    cpu.memory_bytes = 1ull << 40;
    cpu.mem_bw_bytes_s = 50e9;
    g = &cpu;
  }
  s = base->seq_len ? base->seq_len : m->seq_len;
  /* The number of candidates, for progress. */
  for (pp = 1; pp <= m->layers && pp <= gpus && pp <= 128; pp++)
    if (m->layers % pp == 0) total += sizeof tps / sizeof *tps * sizeof cps / sizeof *cps;
  total *= sizeof mbs / sizeof *mbs * sizeof vpps / sizeof *vpps * 3 * 2;
  for (pp = 1; pp <= m->layers && pp <= gpus && pp <= 128; pp++) {
    if (m->layers % pp) continue;
    for (it = 0; it < sizeof tps / sizeof *tps; it++) {
      int64_t tp = tps[it];
      if (tp > cl->gpus_per_node || m->heads % tp) continue;
      for (ic = 0; ic < sizeof cps / sizeof *cps; ic++) {
        int64_t cp = cps[ic], dp;
        if (cp > 1 && s < 8192) continue; /* context parallelism is for long sequences */
        if (gpus % (tp * pp * cp)) continue;
        dp = gpus / (tp * pp * cp);
        for (im = 0; im < sizeof mbs / sizeof *mbs; im++) {
          int64_t mb = mbs[im];
          if (G % (dp * mb) || G / (dp * mb) < pp) {
            st->invalid++;
            continue;
          }
          for (iv = 0; iv < sizeof vpps / sizeof *vpps; iv++) {
            int64_t v = vpps[iv];
            if (v > 1 && (pp == 1 || m->layers % (pp * v) || (G / (dp * mb)) % pp)) continue;
            for (ir = 0; ir < 3; ir++) {
              for (id = 0; id < 2; id++) {
                if (dp == 1 && id > 0) continue;
                o = *base;
                o.tp = tp;
                o.pp = pp;
                o.cp = cp;
                o.dp = dp;
                o.micro_batch = mb;
                o.microbatches = G / (dp * mb);
                o.vpp = v;
                o.schedule = v > 1 ? GPUPLAN_SCHED_INTERLEAVED : GPUPLAN_SCHED_1F1B;
                o.sequence_parallel = tp > 1;
                o.recompute = recs[ir];
                o.dp_mode = dp > 1 ? modes[id] : GPUPLAN_DP_DDP;
                o.first_stage_layers = o.last_stage_layers = 0;
                o.flash_attention = 1;
                st->evaluated++;
                if (progress && (st->evaluated & 1023) == 0 && progress(payload, st->evaluated, total))
                  return gpuplan__error(ctx, GPUPLAN_EINTERRUPTED, "search: stopped by the caller");
                if (gpuplan_memory_eval(ctx, m, g, &o, GPUPLAN_STAGE_WORST, &mem) != GPUPLAN_OK) {
                  st->invalid++;
                  continue;
                }
                if (!mem.fits) {
                  st->too_big++;
                  continue;
                }
                if (gpuplan_perf_eval(ctx, m, cl, &o, G, 0, NULL, &cand.perf) != GPUPLAN_OK) {
                  st->invalid++;
                  continue;
                }
                /* Insert into the sorted top list. */
                {
                  double sc = score(&cand.perf, obj);
                  size_t pos = n;
                  while (pos > 0 && score(&out[pos - 1].perf, obj) > sc) pos--;
                  if (pos >= cap) continue;
                  if (n < cap) n++;
                  memmove(out + pos + 1, out + pos, (n - 1 - pos) * sizeof *out);
                  cand.options = o;
                  cand.memory_bytes = mem.total;
                  cand.capacity = mem.capacity;
                  out[pos] = cand;
                }
              }
            }
          }
        }
      }
    }
  }
  for (it = 0; it < n; it++) explain(&out[it]);
  *n_out = n;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
