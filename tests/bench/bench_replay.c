/*
 * bench_replay.c: snapshot replay throughput, trace events per second, for
 * every real snapshot in tests/data/torch-snapshots (issue 14, "Speed"):
 *
 *   exact replay    gpuplan_snapshot_replay() of a loaded snapshot (the
 *                   exact check: the start state, the trace forward, the
 *                   final layout compared); budget 10 M events/s;
 *   load + replay   gpuplan_snapshot_load() of the .pickle, then the exact
 *                   replay, then gpuplan_snapshot_free(); budget 3 M/s;
 *
 * and, for information, a what-if replay under expandable_segments, the
 * load alone in MB/s, the host memory a load holds at its peak as a
 * multiple of the file's size (the loader reads a window of the file, not
 * a copy of it), and the fixed cost of a load + replay (a snapshot of a
 * few events from tests/data/replay), which bounds the rate of a short
 * trace whatever the parser does.  Beside the load + replay from the file
 * it prints what the file's reading costs, which no parser change can
 * remove: the same load + replay from the bytes already in memory
 * (gpuplan_snapshot_load_buffer), and the difference, also as a share of
 * the time the 3 M/s budget gives the trace.  (The reading timed alone is
 * no guide: on the AMD EPYC machines here a pread of 3 MB into a buffer
 * hot in cache takes 0.19 ms to an address on a 32-byte boundary and
 * 1.7-2.0 ms to one 8 or 16 bytes past it, while in a load, where the
 * window is not hot, the same preads took 0.7-0.8 ms either way.)
 * Each figure is the fastest of several repetitions
 * (the median is printed beside it), so that a loaded machine shows its
 * quiet moments; the repetitions of a figure are taken in ROUNDS rounds
 * over all the traces, seconds apart, so that one burst of a neighbour's
 * load does not spoil every repetition of one figure.  Prints rates and
 * ratios to the budgets, and the slowest trace of each; asserts nothing
 * about time.
 *
 * With a Python interpreter as the second argument, it also times the
 * peer every reader of these files has: CPython's pickle.load of the same
 * file (what torch's own memory viewer does first), at its fastest (the
 * cyclic garbage collector off, the objects freed after the clock stops),
 * in the same rounds, and prints how many times faster the load + replay
 * is, and the 3 M/s budget as a share of the peer's time: a ratio that
 * moves less from machine to machine than a rate.
 *
 *   usage: bench_replay [TRACES_DIR [PYTHON]]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "gpuplan.h"

#define REPLAY_BUDGET 10e6 /* events/s */
#define LOAD_REPLAY_BUDGET 3e6
#define MAX_REPS 4000
#define ROUNDS 3
#define MIN_REPS 3          /* a round's, for each figure */
#define TIME_PER_FIGURE 0.4 /* seconds, over all rounds */

typedef struct timing {
  double t[MAX_REPS];
  size_t n;
} timing;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double t_min(timing *t) {
  qsort(t->t, t->n, sizeof t->t[0], cmp_double);
  return t->t[0];
}

static double t_median(timing *t) {
  qsort(t->t, t->n, sizeof t->t[0], cmp_double);
  return t->t[t->n / 2];
}

/* A host allocator that keeps the peak of what is held. */
typedef struct peak_count {
  size_t cur, peak;
} peak_count;

static void *peak_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  peak_count *c = ud;
  void *p;
  if (nsize == 0) {
    if (ptr) c->cur -= osize;
    free(ptr);
    return NULL;
  }
  if (!ptr) osize = 0;
  p = realloc(ptr, nsize);
  if (!p) return NULL;
  c->cur += nsize - osize;
  if (c->cur > c->peak) c->peak = c->cur;
  return p;
}

/* The peak of host memory while loading path, in bytes (0: failed). */
static size_t load_peak(const char *path) {
  peak_count c = {0, 0};
  gpuplan_ctx_options o = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s;
  size_t base;
  o.allocator.fn = peak_alloc;
  o.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &o)) return 0;
  base = c.cur;
  c.peak = c.cur;
  if (gpuplan_snapshot_load(ctx, path, 0, &s)) {
    gpuplan_ctx_free(ctx);
    return 0;
  }
  gpuplan_snapshot_free(s);
  gpuplan_ctx_free(ctx);
  return c.peak - base;
}

/* Whether another repetition is wanted in this round (n0 of t's were
 * taken before it): at least MIN_REPS, then until the round's share of
 * TIME_PER_FIGURE has passed, and no more than its share of MAX_REPS. */
static int more(const timing *t, size_t n0, double started) {
  return t->n - n0 < MAX_REPS / ROUNDS && (t->n - n0 < MIN_REPS || now() - started < TIME_PER_FIGURE / ROUNDS);
}

/* Load + exact replay + free of path (of buf[0..len) when buf is not
 * NULL), repeated (a round's) into *t; 0, or 1 with a message when it
 * fails or does not replay exactly. */
static int time_load_replay(gpuplan_ctx *ctx, const char *path, const void *buf, size_t len, timing *t) {
  double t0, started = now();
  const size_t n0 = t->n;
  do {
    gpuplan_snapshot *s;
    gpuplan_replay_result r;
    t0 = now();
    if (buf ? gpuplan_snapshot_load_buffer(ctx, buf, len, 0, &s) : gpuplan_snapshot_load(ctx, path, 0, &s)) {
      fprintf(stderr, "bench_replay: %s: %s\n", path, gpuplan_errmsg(ctx));
      return 1;
    }
    if (gpuplan_snapshot_replay(ctx, s, NULL, &r) || !r.exact) {
      fprintf(stderr, "bench_replay: %s does not replay exactly: %s\n", path, r.divergence);
      gpuplan_snapshot_free(s);
      return 1;
    }
    gpuplan_snapshot_free(s);
    t->t[t->n++] = now() - t0;
  } while (more(t, n0, started));
  return 0;
}

/* A trace's repetitions, figure by figure, over the rounds. */
typedef struct trace_times {
  timing load, lr, rep, whatif, mem;
  timing peer; /* pickle.load's best of each round (seconds) */
  unsigned char *bytes; /* the file, read once (the figure from memory) */
  size_t len, ev;       /* its bytes, its trace events */
} trace_times;

/* The file at path, whole, in *len bytes (malloc'd), and its trace
 * events in *ev; NULL, with a message, when it cannot be read or loaded. */
static unsigned char *read_trace(gpuplan_ctx *ctx, const char *path, size_t *len, size_t *ev) {
  gpuplan_snapshot *s;
  unsigned char *b;
  long n;
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "bench_replay: %s not found (vendored in tests/data)\n", path);
    return NULL;
  }
  n = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
  rewind(fp);
  b = n > 0 ? malloc((size_t)n) : NULL;
  if (!b || fread(b, 1, (size_t)n, fp) != (size_t)n) {
    fprintf(stderr, "bench_replay: cannot read %s\n", path);
    fclose(fp);
    free(b);
    return NULL;
  }
  fclose(fp);
  if (gpuplan_snapshot_load_buffer(ctx, b, (size_t)n, 0, &s)) {
    fprintf(stderr, "bench_replay: %s: %s\n", path, gpuplan_errmsg(ctx));
    free(b);
    return NULL;
  }
  *ev = gpuplan_snapshot_event_count(s);
  gpuplan_snapshot_free(s);
  *len = (size_t)n;
  return b;
}

/* One round of the figures of the trace at path into *tt; 0, or 1 with a
 * message. */
static int round_of(gpuplan_ctx *ctx, const char *path, trace_times *tt) {
  gpuplan_snapshot *s;
  gpuplan_replay_result r;
  gpuplan_replay_options w = GPUPLAN_REPLAY_OPTIONS_INIT;
  double t0, started;
  size_t n0;

  /* The load alone. */
  n0 = tt->load.n;
  started = now();
  do {
    t0 = now();
    if (gpuplan_snapshot_load(ctx, path, 0, &s)) {
      fprintf(stderr, "bench_replay: %s: %s\n", path, gpuplan_errmsg(ctx));
      return 1;
    }
    tt->load.t[tt->load.n++] = now() - t0;
    gpuplan_snapshot_free(s);
  } while (more(&tt->load, n0, started));

  /* Load + exact replay (+ free), as the CLI does it; the same from the
   * bytes in memory. */
  if (time_load_replay(ctx, path, NULL, 0, &tt->lr)) return 1;
  if (time_load_replay(ctx, path, tt->bytes, tt->len, &tt->mem)) return 1;

  /* The exact replay of a loaded snapshot. */
  if (gpuplan_snapshot_load(ctx, path, 0, &s)) return 1;
  n0 = tt->rep.n;
  started = now();
  do {
    t0 = now();
    if (gpuplan_snapshot_replay(ctx, s, NULL, &r) || !r.exact) {
      gpuplan_snapshot_free(s);
      return 1;
    }
    tt->rep.t[tt->rep.n++] = now() - t0;
  } while (more(&tt->rep, n0, started));

  /* What-if under expandable segments. */
  w.alloc_conf = "expandable_segments:True";
  n0 = tt->whatif.n;
  started = now();
  do {
    t0 = now();
    if (gpuplan_snapshot_replay(ctx, s, &w, &r)) {
      gpuplan_snapshot_free(s);
      return 1;
    }
    tt->whatif.t[tt->whatif.n++] = now() - t0;
  } while (more(&tt->whatif, n0, started));
  gpuplan_snapshot_free(s);
  return 0;
}

/* The peer, run by PYTHON -I -S -c PEER SECONDS FILE...: the first line
 * is the interpreter's version, then for each FILE the fastest of its
 * repetitions of pickle.load (at least 3, then until SECONDS have passed,
 * at most 1000), in seconds. */
static const char PEER[] = "import gc, pickle, sys, time\n"
                           "gc.disable()\n"
                           "print('%d.%d' % sys.version_info[:2])\n"
                           "for p in sys.argv[2:]:\n"
                           "    best, n, end = 1e9, 0, time.perf_counter() + float(sys.argv[1])\n"
                           "    while n < 3 or (n < 1000 and time.perf_counter() < end):\n"
                           "        t = time.perf_counter()\n"
                           "        with open(p, 'rb') as f:\n"
                           "            o = pickle.load(f)\n"
                           "        t = time.perf_counter() - t\n"
                           "        del o\n"
                           "        best, n = min(best, t), n + 1\n"
                           "    print(repr(best))\n";

/* s quoted for sh (in '...', each ' as '\''), appended to d[0..cap);
 * 0, or 1 when it does not fit. */
static int sh_quote(char *d, size_t cap, const char *s) {
  size_t n = strlen(d);
  if (n + 1 >= cap) return 1;
  d[n++] = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      if (n + 4 >= cap) return 1;
      memcpy(d + n, "'\\''", 4);
      n += 4;
    } else {
      if (n + 1 >= cap) return 1;
      d[n++] = *s;
    }
  }
  if (n + 2 >= cap) return 1;
  d[n++] = '\'';
  d[n++] = ' ';
  d[n] = 0;
  return 0;
}

/* One round of the peer over the nfiles traces in dir, each best into
 * tt[f].peer, the interpreter's version into ver; 0, or 1 with a message
 * (the comparison is then left out). */
static int peer_round(const char *python, const char *dir, const char *const *files, size_t nfiles,
                      trace_times *tt, char ver[16]) {
  static char cmd[16384];
  char secs[32], line[64];
  size_t f;
  FILE *p;
  cmd[0] = 0;
  snprintf(secs, sizeof secs, "%g", TIME_PER_FIGURE / ROUNDS);
  if (sh_quote(cmd, sizeof cmd, python)) return 1;
  strcat(cmd, "-I -S -c ");
  if (sh_quote(cmd, sizeof cmd, PEER) || sh_quote(cmd, sizeof cmd, secs)) return 1;
  for (f = 0; f < nfiles; f++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    if (sh_quote(cmd, sizeof cmd, path)) return 1;
  }
  if (!(p = popen(cmd, "r"))) {
    fprintf(stderr, "bench_replay: cannot run %s: the comparison with pickle.load is left out\n", python);
    return 1;
  }
  if (!fgets(line, sizeof line, p) || sscanf(line, "%15s", ver) != 1) goto bad;
  for (f = 0; f < nfiles; f++) {
    double t;
    if (!fgets(line, sizeof line, p) || sscanf(line, "%lf", &t) != 1 || !(t > 0)) goto bad;
    tt[f].peer.t[tt[f].peer.n++] = t;
  }
  if (pclose(p) != 0) {
    fprintf(stderr, "bench_replay: %s failed: the comparison with pickle.load is left out\n", python);
    return 1;
  }
  return 0;
bad:
  pclose(p);
  fprintf(stderr, "bench_replay: %s printed no timings: the comparison with pickle.load is left out\n", python);
  return 1;
}

int main(int argc, char **argv) {
  static const char *files[] = {"linear-grad.pickle",          "linear-no-grad.pickle",
                                "cs336-small-forward.pickle",  "cs336-ctx128-forward.pickle",
                                "cs336-ctx256-forward.pickle", "cs336-2.7b-forward.pickle",
                                "cs336-newest-format.pickle"};
  enum { NFILES = sizeof files / sizeof files[0] };
  const char *dir = argc > 1 ? argv[1] : "tests/data/torch-snapshots";
  const char *python = argc > 2 ? argv[2] : NULL;
  char pyver[16] = "";
  double slow_rate = 1e30, slow_lr = 1e30;
  const char *slow_rate_file = NULL, *slow_lr_file = NULL;
  static trace_times tt[NFILES];
  static timing t;
  size_t f, round;
  gpuplan_ctx *ctx;
  if (gpuplan_ctx_new(&ctx, NULL)) return 1;
  for (f = 0; f < NFILES; f++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    if (!(tt[f].bytes = read_trace(ctx, path, &tt[f].len, &tt[f].ev))) {
      gpuplan_ctx_free(ctx);
      return 1;
    }
  }
  for (round = 0; round < ROUNDS; round++) {
    for (f = 0; f < NFILES; f++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dir, files[f]);
      if (round_of(ctx, path, &tt[f])) {
        fprintf(stderr, "bench_replay: %s fails or does not replay exactly\n", path);
        gpuplan_ctx_free(ctx);
        return 1;
      }
    }
    if (python && peer_round(python, dir, files, NFILES, tt, pyver)) python = NULL;
  }
  printf("snapshot replay, events/s (fastest of >= %d runs in %d rounds; median in brackets)\n",
         MIN_REPS * ROUNDS, ROUNDS);
  printf("  budgets: exact replay %.0f M/s, load + replay %.0f M/s\n", REPLAY_BUDGET / 1e6,
         LOAD_REPLAY_BUDGET / 1e6);
  printf("  %-28s %6s %6s  %-29s  %-29s  %8s  %9s  %s\n", "trace", "events", "MB", "exact replay M/s (x budget)",
         "load+replay M/s (x budget)", "what-if", "load MB/s", "peak/file");
  for (f = 0; f < NFILES; f++) {
    char path[1024];
    const size_t ev = tt[f].ev;
    const double bytes = (double)tt[f].len;
    double rate, rate_med, lr, lr_med, wrate, load;
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    load = bytes / t_min(&tt[f].load) / 1e6;
    lr = (double)ev / t_min(&tt[f].lr);
    lr_med = (double)ev / t_median(&tt[f].lr);
    rate = (double)ev / t_min(&tt[f].rep);
    rate_med = (double)ev / t_median(&tt[f].rep);
    wrate = (double)ev / t_min(&tt[f].whatif);
    if (rate < slow_rate) slow_rate = rate, slow_rate_file = files[f];
    if (lr < slow_lr) slow_lr = lr, slow_lr_file = files[f];
    printf("  %-28s %6zu %6.2f  %6.2f (%6.2f) = %5.2fx      %6.2f (%6.2f) = %5.2fx      %6.2f M/s  %9.1f  %8.2fx\n",
           files[f], ev, bytes / 1e6, rate / 1e6, rate_med / 1e6, rate / REPLAY_BUDGET, lr / 1e6,
           lr_med / 1e6, lr / LOAD_REPLAY_BUDGET, wrate / 1e6, load, (double)load_peak(path) / bytes);
  }
  printf("what the file's reading costs (load + replay from the path against the same from the bytes in memory):\n");
  printf("  %-28s  %-26s  %s\n", "trace", "from memory M/s (x budget)", "path - memory us (of budget)");
  for (f = 0; f < NFILES; f++) {
    const size_t ev = tt[f].ev;
    double mem, extra, budget;
    budget = (double)ev / LOAD_REPLAY_BUDGET; /* seconds */
    mem = (double)ev / t_min(&tt[f].mem);
    extra = t_min(&tt[f].lr) - t_min(&tt[f].mem);
    printf("  %-28s  %6.2f = %5.2fx              %8.1f (%5.1f%%)\n", files[f], mem / 1e6,
           mem / LOAD_REPLAY_BUDGET, extra * 1e6, 100 * extra / budget);
  }
  if (python) {
    printf("against CPython %s's pickle.load of the same file (the reader torch's memory viewer uses, at its fastest: "
           "gc off, the objects freed after the clock stops):\n", pyver);
    printf("  %-28s  %14s  %15s  %8s  %s\n", "trace", "pickle.load us", "load+replay us", "faster",
           "3 M/s budget us (of pickle.load)");
    for (f = 0; f < NFILES; f++) {
      const double peer = t_min(&tt[f].peer), lr = t_min(&tt[f].lr), budget = (double)tt[f].ev / LOAD_REPLAY_BUDGET;
      printf("  %-28s  %14.1f  %15.1f  %7.2fx  %10.1f (%5.1f%%)\n", files[f], peer * 1e6, lr * 1e6, peer / lr,
             budget * 1e6, 100 * budget / peer);
    }
  }
  {
    /* The fixed cost of a load + replay (open, read, set up the loader,
     * the snapshot and the allocator, free them): a few-event snapshot,
     * which bounds what a short trace can reach; and the same from its
     * bytes in memory, the rest being the file's system calls. */
    static timing tm;
    char path[1024];
    unsigned char *small;
    double floor_s, mem_s;
    size_t ev, len;
    snprintf(path, sizeof path, "%s/../replay/private-pool.pickle", dir);
    if (!(small = read_trace(ctx, path, &len, &ev))) return 1;
    t.n = 0;
    for (round = 0; round < ROUNDS; round++)
      if (time_load_replay(ctx, path, NULL, 0, &t) || time_load_replay(ctx, path, small, len, &tm)) {
        free(small);
        return 1;
      }
    free(small);
    floor_s = t_min(&t);
    mem_s = t_min(&tm);
    /* (files[0] is the shortest trace here, linear-grad) */
    printf("fixed cost: load + replay of private-pool.pickle (%zu events): %.1f us, %.1f us of it the file's "
           "system calls (%.1f us from memory); at that cost alone %s's %zu events reach %.2f M events/s\n",
           ev, floor_s * 1e6, (floor_s - mem_s) * 1e6, mem_s * 1e6, files[0], tt[0].ev,
           (double)tt[0].ev / floor_s / 1e6);
  }
  if (slow_rate_file)
    printf("slowest exact replay: %s, %.2f M events/s = %.2fx the %.0f M/s budget\n", slow_rate_file,
           slow_rate / 1e6, slow_rate / REPLAY_BUDGET, REPLAY_BUDGET / 1e6);
  if (slow_lr_file)
    printf("slowest load + replay: %s, %.2f M events/s = %.2fx the %.0f M/s budget\n", slow_lr_file,
           slow_lr / 1e6, slow_lr / LOAD_REPLAY_BUDGET, LOAD_REPLAY_BUDGET / 1e6);
  for (f = 0; f < NFILES; f++) {
    free(tt[f].bytes);
  }
  gpuplan_ctx_free(ctx);
  return 0;
}
