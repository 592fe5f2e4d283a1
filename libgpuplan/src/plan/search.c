/*
 * search.c: the layout search (gpuplan_search_ex).  Exhaustive over every
 * dimension (tp, cp, pp with uneven end stages, dp, micro-batch, vpp,
 * data-parallel sharding, recompute, sequence parallelism, TP overlap,
 * optimizer offload), pruned by a memory lower bound before anything is
 * evaluated, then by the memory model, then timed by the performance
 * model; spread over every core.  Each worker keeps its own best list; the
 * lists merge by (score, enumeration index), so the answer does not depend
 * on the number of threads.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#  include <pthread.h>
#  include <unistd.h>
#  define GPUPLAN_SEARCH_THREADS 1
#endif

#include "plan/perf_int.h"

/* The choices of the inner dimensions. */
static const gpuplan_recompute recs[] = {GPUPLAN_RECOMPUTE_NONE, GPUPLAN_RECOMPUTE_SELECTIVE,
                                         GPUPLAN_RECOMPUTE_FULL};
static const gpuplan_dp_mode modes[] = {GPUPLAN_DP_DDP,       GPUPLAN_DP_ZERO1,        GPUPLAN_DP_ZERO2,
                                        GPUPLAN_DP_ZERO3,     GPUPLAN_DP_FSDP_FULL,    GPUPLAN_DP_FSDP_GRAD_OP,
                                        GPUPLAN_DP_FSDP_HYBRID};
/* offload: none, optimizer states (ZeRO-Offload), + parameters (ZeRO-Infinity, ZeRO-3 only) */
#define NOFF 3
#define NRECS (sizeof recs / sizeof recs[0])
#define NMODES (sizeof modes / sizeof modes[0])
#define MAX_MB 48   /* micro-batch sizes tried: every divisor up to the 48th */
#define MAX_VPP 16
/* Context parallelism splits the sequence: each rank keeps at least this
 * many tokens (below it the ring exchange outweighs the attention it
 * shares; Megatron-Core's CP guidance starts at 8k sequences, this bound
 * lets the search weigh shorter ones). */
#define CP_MIN_TOKENS 512

/* One outer task: (tp, cp, pp, stage split). */
typedef struct task {
  int64_t tp, cp, pp, dp, first, last;
} task;

typedef struct best_list {
  gpuplan_candidate *c;
  uint64_t *seq;
  size_t n, cap;
} best_list;

typedef struct shared {
  const gpuplan_model *m;
  const gpuplan_cluster *cl;
  const gpuplan_gpu *g;
  const gpuplan_memory_options *base;
  gpuplan_objective obj;
  gpuplan_perf_constants k[2][2];     /* [TP overlap off/on][DP overlap off/on] */
  int overlap_choice;                 /* the framework can overlap TP */
  int fixed_mode, fixed_rec;
  int64_t G, s;
  task *tasks;
  size_t ntasks;
  size_t next;                        /* next task (guarded by lock) */
  int stop;
#if GPUPLAN_SEARCH_THREADS
  pthread_mutex_t lock;
#endif
  uint64_t done;                      /* candidates accounted (guarded by lock) */
  uint64_t total;
} shared;

typedef struct worker {
  shared *sh;
  struct gpuplan_ctx wctx;            /* private error state; never allocates */
  best_list best;
  gpuplan_search_stats st;
} worker;

static double score_of(const gpuplan_perf *p, gpuplan_objective obj) {
  if (obj == GPUPLAN_OBJ_COST && isfinite(p->cost_per_mtok)) return p->cost_per_mtok;
  return p->step_s / (double)p->global_batch; /* time per sequence */
}

static void best_insert(best_list *b, const gpuplan_candidate *c, uint64_t seq) {
  size_t pos = b->n;
  while (pos > 0 && (b->c[pos - 1].score > c->score || (b->c[pos - 1].score == c->score && b->seq[pos - 1] > seq)))
    pos--;
  if (pos >= b->cap) return;
  if (b->n < b->cap) b->n++;
  memmove(b->c + pos + 1, b->c + pos, (b->n - 1 - pos) * sizeof *b->c);
  memmove(b->seq + pos + 1, b->seq + pos, (b->n - 1 - pos) * sizeof *b->seq);
  b->c[pos] = *c;
  b->seq[pos] = seq;
}

/* The number of micro-batch sizes that divide x (at most MAX_MB). */
static size_t divisors(int64_t x, int64_t *out) {
  size_t n = 0;
  int64_t d;
  for (d = 1; d <= x && n < MAX_MB; d++)
    if (x % d == 0) out[n++] = d;
  return n;
}

/*
 * A lower bound on a rank's memory from its model states alone (bytes per
 * parameter: 2 weights + 2 grads + 12 Adam states and master, sharded as
 * the mode shards them; ZeRO paper section 3): if even that exceeds the
 * GPU, no micro-batch or recompute choice can fit.
 */
static double states_lower_bound(const gpuplan_model *m, const task *tk, gpuplan_dp_mode mode, int offload) {
  /* offload 2 moves the parameter shards too */
  double P = gpuplan_model_params(m), per_layer = P / (double)m->layers, n = (double)(tk->dp * tk->cp);
  double most = (double)(tk->first > 0 ? (tk->first > tk->last ? tk->first : tk->last)
                                      : (m->layers + tk->pp - 1) / tk->pp);
  double Pr = most * per_layer / (double)tk->tp, w = offload == 2 ? 0 : 2, gr = 2, opt = offload ? 0 : 12;
  switch (mode) {
  case GPUPLAN_DP_DDP: break;
  case GPUPLAN_DP_ZERO1: opt /= n; break;
  case GPUPLAN_DP_ZERO2: case GPUPLAN_DP_FSDP_GRAD_OP: opt /= n; gr /= n; break;
  case GPUPLAN_DP_FSDP_HYBRID: opt /= fmin(n, 8); gr /= fmin(n, 8); w /= fmin(n, 8); break;
  default: opt /= n; gr /= n; w /= n; break;
  }
  return Pr * (w + gr + opt);
}

/* Interleaving choices: 1, and every v <= MAX_VPP that splits each stage's
 * layers into whole chunks (even splits only). */
static size_t vpp_choices(const gpuplan_model *m, const task *tk, int64_t *out) {
  size_t n = 0;
  int64_t v;
  out[n++] = 1;
  if (tk->pp > 1 && !tk->first && !tk->last && m->layers % tk->pp == 0)
    for (v = 2; v <= MAX_VPP && n < MAX_VPP; v++)
      if ((m->layers / tk->pp) % v == 0) out[n++] = v;
  return n;
}

/* Evaluate one outer task: every inner combination. */
static void run_task(worker *w, size_t ti) {
  shared *sh = w->sh;
  const task *tk = &sh->tasks[ti];
  const gpuplan_model *m = sh->m;
  gpuplan_ctx *ctx = &w->wctx;
  int64_t mbs[MAX_MB], vpps[MAX_VPP], dp = tk->dp;
  size_t nmb = divisors(sh->G / dp, mbs), nvpp = vpp_choices(m, tk, vpps), im, ir, id, iv;
  uint64_t seq = (uint64_t)ti << 32, local = 0, inner;
  int nsp = tk->tp > 1 ? 2 : 1, nov = tk->tp > 1 && sh->overlap_choice ? 2 : 1;
  int ndo = dp * tk->cp > 1 ? 2 : 1; /* data-parallel overlap off / on */
  gpuplan_memory mem;
  gpuplan_candidate cand;
  double cap = (double)sh->g->memory_bytes;
  size_t nmodes = dp * tk->cp > 1 && !sh->fixed_mode ? NMODES : 1, nrec = sh->fixed_rec ? 1 : NRECS;
  int off, isp;
  /* inner combinations per (mode, offload): micro-batch x vpp x recompute x sp x overlap */
  inner = (uint64_t)nmb * nvpp * nrec * (uint64_t)nsp * (uint64_t)nov * (uint64_t)ndo;
  for (id = 0; id < nmodes; id++) {
    gpuplan_dp_mode mode = sh->fixed_mode ? sh->base->dp_mode : dp * tk->cp > 1 ? modes[id] : GPUPLAN_DP_DDP;
    for (off = 0; off < NOFF; off++) {
      w->st.candidates += inner;
      if (mode == GPUPLAN_DP_FSDP_HYBRID && dp * tk->cp <= sh->cl->gpus_per_node / tk->tp) {
        w->st.invalid += inner; /* the shard group is the whole dp group: that is FULL_SHARD */
        continue;
      }
      if (off == 2 && mode != GPUPLAN_DP_ZERO3 && mode != GPUPLAN_DP_FSDP_FULL) {
        w->st.invalid += inner; /* parameters offload only where parameters are sharded */
        continue;
      }
      if (states_lower_bound(m, tk, mode, off) > cap) {
        w->st.pruned += inner;
        continue;
      }
      /* Micro-batch sizes ascending, innermost: memory grows with the
       * micro-batch, so once one does not fit, the larger ones do not either
       * (counted as pruned without evaluation). */
      for (iv = 0; iv < nvpp; iv++) {
        int64_t v = vpps[iv];
        for (ir = 0; ir < nrec; ir++) {
          for (isp = 0; isp < nsp; isp++) {
            for (im = 0; im < nmb; im++) {
              int64_t mb = mbs[im], M = sh->G / (dp * mb);
              gpuplan_memory_options o = *sh->base;
              int iov;
              /* Megatron interleaving: micro-batches a multiple of pp */
              if (v > 1 && M % tk->pp) {
                w->st.invalid += (uint64_t)(nov * ndo);
                continue;
              }
              o.tp = tk->tp;
              o.pp = tk->pp;
              o.cp = tk->cp;
              o.dp = dp;
              o.micro_batch = mb;
              o.microbatches = M;
              o.vpp = v;
              o.schedule = v > 1 ? GPUPLAN_SCHED_INTERLEAVED : GPUPLAN_SCHED_1F1B;
              o.sequence_parallel = tk->tp > 1 && isp == 0; /* SP first: usually better */
              o.recompute = sh->fixed_rec ? sh->base->recompute : recs[ir];
              o.dp_mode = mode;
              o.shard_group = mode == GPUPLAN_DP_FSDP_HYBRID ? sh->cl->gpus_per_node / tk->tp : 0;
              o.first_stage_layers = tk->first;
              o.last_stage_layers = tk->last;
              o.offload_optimizer = off > 0;
              o.offload_params = off == 2;
              if (o.flash_attention < 0) o.flash_attention = 1;
              w->st.evaluated++;
              if (gpuplan_memory_eval(ctx, m, sh->g, &o, GPUPLAN_STAGE_WORST, &mem) != GPUPLAN_OK) {
                w->st.invalid += (uint64_t)(nov * ndo);
                continue;
              }
              if (!mem.fits) {
                w->st.too_big += (uint64_t)(nov * ndo);
                w->st.pruned += (uint64_t)(nmb - im - 1) * (uint64_t)(nov * ndo);
                break;
              }
              for (iov = 0; iov < nov * ndo; iov++) {
                const gpuplan_perf_constants *k = &sh->k[iov % nov][ndo == 2 ? iov / nov : 1];
                if (gpuplan__perf_eval(ctx, m, sh->cl, &o, sh->G, 0, k, mem.params_rank, &cand.perf) != GPUPLAN_OK) {
                  w->st.invalid++;
                  continue;
                }
                w->st.timed++;
                cand.options = o;
                cand.memory_bytes = mem.total;
                cand.capacity = mem.capacity;
                cand.tp_overlap = iov % nov;
                cand.dp_overlap = ndo == 2 ? iov / nov : 1;
                cand.tied_with_first = 0;
                cand.score = score_of(&cand.perf, sh->obj);
                cand.why[0] = '\0';
                best_insert(&w->best, &cand, seq + local++);
              }
            }
          }
        }
      }
    }
  }
}

static void *work(void *arg) {
  worker *w = arg;
  shared *sh = w->sh;
  for (;;) {
    size_t ti;
#if GPUPLAN_SEARCH_THREADS
    pthread_mutex_lock(&sh->lock);
#endif
    ti = sh->stop ? sh->ntasks : sh->next++;
#if GPUPLAN_SEARCH_THREADS
    pthread_mutex_unlock(&sh->lock);
#endif
    if (ti >= sh->ntasks) break;
    {
      uint64_t before = w->st.candidates;
      run_task(w, ti);
#if GPUPLAN_SEARCH_THREADS
      pthread_mutex_lock(&sh->lock);
#endif
      sh->done += w->st.candidates - before;
#if GPUPLAN_SEARCH_THREADS
      pthread_mutex_unlock(&sh->lock);
#endif
    }
  }
  return NULL;
}

/* What makes a candidate fast or slow, in words. */
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
  if (comm / p->step_s < 0.02) ADD("communication hidden (%.1f s of %.1f s overlapped)", p->comm_s - comm, p->comm_s);
  else ADD("exposed communication %.0f%% (largest: %s)", 100 * comm / p->step_s,
           p->tp_comm_s >= p->dp_comm_s && p->tp_comm_s >= p->pp_comm_s && p->tp_comm_s >= p->cp_comm_s
               ? "tensor parallel"
           : p->dp_comm_s >= p->pp_comm_s && p->dp_comm_s >= p->cp_comm_s ? "data parallel"
           : p->pp_comm_s >= p->cp_comm_s ? "pipeline" : "context parallel");
  if (p->bytes_per_nic > 0) ADD("%.0f GB per NIC per step", p->bytes_per_nic / 1e9);
  if (o->recompute == GPUPLAN_RECOMPUTE_FULL) ADD("full recompute costs 1/3 more compute");
  else if (o->recompute == GPUPLAN_RECOMPUTE_SELECTIVE) ADD("selective recompute (cheap)");
  ADD("%.0f GiB of %.0f GiB", (double)c->memory_bytes / 1073741824.0, (double)c->capacity / 1073741824.0);
#undef ADD
}

static int cpu_count(void) {
#if GPUPLAN_SEARCH_THREADS
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)(n > 256 ? 256 : n) : 1;
#else
  return 1;
#endif
}

int gpuplan_search_ex(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *cl,
                      const gpuplan_memory_options *base, int64_t G, gpuplan_objective obj,
                      const gpuplan_search_options *so, gpuplan_candidate *out, size_t cap, size_t *n_out,
                      gpuplan_search_stats *st, gpuplan_progress_fn progress, void *payload) {
  gpuplan_search_options sdef = GPUPLAN_SEARCH_OPTIONS_INIT;
  gpuplan_memory_options defaults = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_search_stats local;
  shared sh;
  worker *ws = NULL;
  gpuplan_gpu cpu;
  int64_t gpus, tp, cp, pp, s;
  size_t ntasks = 0, i, nw, want = cap ? cap : 1;
  int threads, rc = GPUPLAN_OK;
  double tol;
#if GPUPLAN_SEARCH_THREADS
  pthread_t *tids = NULL;
#endif
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!m || !cl || !n_out || (!out && cap)) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "search: NULL argument");
  *n_out = 0;
  if (G < 1) return gpuplan__error(ctx, GPUPLAN_EINVAL, "global batch: must be at least 1 (got %lld)", (long long)G);
  if (!so) so = &sdef;
  if (so->version < 1 || so->version > GPUPLAN_SEARCH_OPTIONS_VERSION)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "search options: version %u (this library reads 1..%d)", so->version,
                          GPUPLAN_SEARCH_OPTIONS_VERSION);
  if (!st) st = &local;
  memset(st, 0, sizeof *st);
  if (!base) base = &defaults;
  memset(&sh, 0, sizeof sh);
  sh.m = m;
  sh.cl = cl;
  sh.base = base;
  sh.obj = obj;
  sh.G = G;
  sh.fixed_mode = so->fixed_dp_mode;
  sh.fixed_rec = so->fixed_recompute;
  {
    /* TP overlap as a choice where the framework has it (Megatron's
     * --tp-comm-overlap, NeMo, MaxText's collective matmul, torchtitan's
     * async TP): the framework's value, else NeMo's; DP overlap off / on. */
    gpuplan_perf_constants base_k, nemo;
    int a, d;
    if (so->k) base_k = *so->k;
    else gpuplan_perf_constants_framework(so->framework, &base_k);
    gpuplan_perf_constants_framework(GPUPLAN_FW_NEMO, &nemo);
    sh.overlap_choice = base_k.framework == GPUPLAN_FW_MEGATRON || base_k.framework == GPUPLAN_FW_NEMO ||
                        base_k.framework == GPUPLAN_FW_MAXTEXT || base_k.framework == GPUPLAN_FW_TORCHTITAN;
    for (a = 0; a < 2; a++)
      for (d = 0; d < 2; d++) {
        sh.k[a][d] = base_k;
        sh.k[a][d].tp_overlap = a ? (base_k.tp_overlap > 0 ? base_k.tp_overlap : nemo.tp_overlap) : 0;
        sh.k[a][d].dp_overlap = d;
      }
    if (!sh.overlap_choice) {
      sh.k[0][0].tp_overlap = sh.k[0][1].tp_overlap = base_k.tp_overlap;
    }
  }
  gpus = cl->gpus_per_node * cl->nodes;
  sh.g = cl->gpu;
  if (!sh.g) {
    memset(&cpu, 0, sizeof cpu);
    cpu.id = "cpu";
    cpu.memory_bytes = 1ull << 40;
    cpu.mem_bw_bytes_s = 50e9;
    cpu.fp32_flops = cl->cpu_flops;
    cpu.bf16_flops = cpu.fp16_flops = cpu.tf32_flops = NAN;
    cpu.matmul_bf16_flops = cpu.matmul_fp8_flops = NAN;
    sh.g = &cpu;
  }
  s = base->seq_len ? base->seq_len : m->seq_len;
  sh.s = s;
  /* Outer tasks: tp (divides heads and kv heads, inside a node), cp, pp
   * (1..min(layers, 128): a deeper pipeline than 128 stages has no
   * published run), with the even split and, where it exists, first and
   * last stages one layer shorter (or the remainder on them). */
  for (i = 0; i < 2; i++) {
    for (tp = 1; tp <= cl->gpus_per_node; tp++) {
      if (m->heads % tp || (m->kv_heads && m->kv_heads % tp) || gpus % tp) continue;
      for (cp = 1; cp <= 64; cp *= 2) {
        if (cp > 1 && (s % (2 * cp) || s / cp < CP_MIN_TOKENS)) continue;
        if (gpus % (tp * cp)) continue;
        for (pp = 1; pp <= m->layers && pp <= 128 && pp <= gpus / (tp * cp); pp++) {
          int64_t dp, L = m->layers, variants[3][2], nv = 0, vi;
          if ((gpus / (tp * cp)) % pp) continue;
          dp = gpus / (tp * cp * pp);
          if (G % dp) continue;
          if (pp == 1 || L % pp == 0) {
            variants[nv][0] = variants[nv][1] = 0;
            nv++;
          }
          if (pp > 2) {
            /* middle stages of mid layers, the ends sharing the rest */
            int64_t mid;
            for (mid = (L + pp - 1) / pp; mid <= (L + pp - 1) / pp + 1 && nv < 3; mid++) {
              int64_t rest = L - (pp - 2) * mid, fl = rest / 2, ll = rest - fl;
              if (rest < 2 || fl > mid || ll > mid || fl < 1) continue;
              if (fl == mid && ll == mid) continue; /* that is the even split */
              variants[nv][0] = fl;
              variants[nv][1] = ll;
              nv++;
            }
          } else if (pp == 2 && L % 2) {
            variants[nv][0] = L / 2;
            variants[nv][1] = L - L / 2;
            nv++;
          }
          for (vi = 0; vi < nv; vi++) {
            if (i == 1) {
              task *tk = &sh.tasks[ntasks];
              tk->tp = tp;
              tk->cp = cp;
              tk->pp = pp;
              tk->dp = dp;
              tk->first = variants[vi][0];
              tk->last = variants[vi][1];
            }
            ntasks++;
          }
        }
      }
    }
    if (i == 0) {
      if (!ntasks) break;
      sh.tasks = gpuplan__calloc(ctx, ntasks, sizeof *sh.tasks);
      if (!sh.tasks) return gpuplan__nomem(ctx);
      ntasks = 0;
    }
  }
  sh.ntasks = ntasks;
  threads = so->threads > 0 ? so->threads : cpu_count();
  if ((size_t)threads > ntasks) threads = ntasks ? (int)ntasks : 1;
  nw = (size_t)threads;
  ws = gpuplan__calloc(ctx, nw, sizeof *ws);
  if (!ws) {
    gpuplan__free(ctx, sh.tasks);
    return gpuplan__nomem(ctx);
  }
  for (i = 0; i < nw; i++) {
    ws[i].sh = &sh;
    ws[i].wctx.alloc = ctx->alloc;
    ws[i].best.cap = want;
    ws[i].best.c = gpuplan__calloc(ctx, want, sizeof *ws[i].best.c);
    ws[i].best.seq = gpuplan__calloc(ctx, want, sizeof *ws[i].best.seq);
    if (!ws[i].best.c || !ws[i].best.seq) rc = gpuplan__nomem(ctx);
  }
#if GPUPLAN_SEARCH_THREADS
  if (!rc && nw > 1) {
    tids = gpuplan__calloc(ctx, nw, sizeof *tids);
    if (!tids) rc = gpuplan__nomem(ctx);
  }
  pthread_mutex_init(&sh.lock, NULL);
#endif
  if (!rc) {
    /* the candidates in the space, for progress */
    sh.total = 0;
    for (i = 0; i < ntasks; i++) {
      int64_t tmp[MAX_MB], vtmp[MAX_VPP];
      uint64_t nsp = sh.tasks[i].tp > 1 ? 2 : 1, nov = sh.tasks[i].tp > 1 && sh.overlap_choice ? 2 : 1;
      uint64_t ndo = sh.tasks[i].dp * sh.tasks[i].cp > 1 ? 2 : 1;
      uint64_t nmodes = sh.tasks[i].dp * sh.tasks[i].cp > 1 && !sh.fixed_mode ? NMODES : 1;
      sh.total += divisors(G / sh.tasks[i].dp, tmp) * (uint64_t)vpp_choices(m, &sh.tasks[i], vtmp) *
                  (sh.fixed_rec ? 1 : NRECS) * nsp * nov * ndo * nmodes * NOFF;
    }
#if GPUPLAN_SEARCH_THREADS
    {
      size_t started = 0;
      for (i = 1; i < nw; i++)
        if (pthread_create(&tids[i], NULL, work, &ws[i]) == 0) started = i;
        else break;
      /* This thread works too, a task at a time; the caller's callback
       * runs here only, between tasks. */
      for (;;) {
        size_t ti;
        uint64_t done;
        pthread_mutex_lock(&sh.lock);
        ti = sh.stop ? sh.ntasks : sh.next < sh.ntasks ? sh.next++ : sh.ntasks;
        pthread_mutex_unlock(&sh.lock);
        if (ti >= sh.ntasks) break;
        {
          uint64_t before = ws[0].st.candidates;
          run_task(&ws[0], ti);
          pthread_mutex_lock(&sh.lock);
          sh.done += ws[0].st.candidates - before;
          done = sh.done;
          pthread_mutex_unlock(&sh.lock);
        }
        if (progress && progress(payload, done, sh.total)) {
          pthread_mutex_lock(&sh.lock);
          sh.stop = 1;
          pthread_mutex_unlock(&sh.lock);
          rc = gpuplan__error(ctx, GPUPLAN_EINTERRUPTED, "search: stopped by the caller");
          break;
        }
      }
      for (i = 1; i <= started; i++) pthread_join(tids[i], NULL);
      if (!rc && progress && progress(payload, sh.total, sh.total))
        rc = gpuplan__error(ctx, GPUPLAN_EINTERRUPTED, "search: stopped by the caller");
    }
#else
    for (i = 0; i < ntasks && !rc; i++) {
      uint64_t before = ws[0].st.candidates;
      run_task(&ws[0], i);
      sh.done += ws[0].st.candidates - before;
      if (progress && progress(payload, sh.done, sh.total))
        rc = gpuplan__error(ctx, GPUPLAN_EINTERRUPTED, "search: stopped by the caller");
    }
#endif
  }
  /* Merge the workers' lists: by score, then by enumeration order. */
  if (!rc) {
    best_list all;
    size_t w;
    all.c = out;
    all.cap = cap;
    all.n = 0;
    all.seq = gpuplan__calloc(ctx, want, sizeof *all.seq);
    if (!all.seq) rc = gpuplan__nomem(ctx);
    for (w = 0; w < nw && !rc; w++) {
      for (i = 0; i < ws[w].best.n && cap; i++) best_insert(&all, &ws[w].best.c[i], ws[w].best.seq[i]);
      st->evaluated += ws[w].st.evaluated;
      st->invalid += ws[w].st.invalid;
      st->too_big += ws[w].st.too_big;
      st->candidates += ws[w].st.candidates;
      st->pruned += ws[w].st.pruned;
      st->timed += ws[w].st.timed;
    }
    st->threads = (int)nw;
    tol = so->tie_tolerance > 0 ? so->tie_tolerance : so->tie_tolerance < 0 ? 0 : GPUPLAN_PERF_MODEL_ERROR;
    for (i = 0; i < all.n; i++) {
      explain(&out[i]);
      out[i].tied_with_first = i == 0 || (tol > 0 && out[i].score <= out[0].score * (1 + tol));
    }
    *n_out = all.n;
    gpuplan__free(ctx, all.seq);
  }
#if GPUPLAN_SEARCH_THREADS
  pthread_mutex_destroy(&sh.lock);
  gpuplan__free(ctx, tids);
#endif
  for (i = 0; i < nw; i++) {
    gpuplan__free(ctx, ws[i].best.c);
    gpuplan__free(ctx, ws[i].best.seq);
  }
  gpuplan__free(ctx, ws);
  gpuplan__free(ctx, sh.tasks);
  if (!rc) gpuplan__clear(ctx);
  return rc;
}

int gpuplan_search(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *cl,
                   const gpuplan_memory_options *base, int64_t G, gpuplan_objective obj,
                   gpuplan_candidate *out, size_t cap, size_t *n_out, gpuplan_search_stats *st,
                   gpuplan_progress_fn progress, void *payload) {
  return gpuplan_search_ex(ctx, m, cl, base, G, obj, NULL, out, cap, n_out, st, progress, payload);
}
