/*
 * bench_replay.c: snapshot replay throughput, trace events per second, for
 * every real snapshot (exact mode: rebuild the start state backwards, then
 * replay forward and compare the final layout) and for a what-if replay
 * under expandable_segments.  Budget (issue 4): 5 million events/s.  Also
 * the pickle load rate in MB/s.  Prints rates and ratios; asserts nothing
 * about time.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "gpuplan.h"

int main(int argc, char **argv) {
  static const char *files[] = {"linear-grad.pickle", "cs336-small-forward.pickle",
                                "cs336-ctx128-forward.pickle", "cs336-ctx256-forward.pickle",
                                "cs336-2.7b-forward.pickle", "cs336-newest-format.pickle"};
  const char *dir = argc > 1 ? argv[1] : "tests/data/torch-snapshots";
  double min_rate = 1e30;
  size_t f;
  gpuplan_ctx *ctx;
  if (gpuplan_ctx_new(&ctx, NULL)) return 1;
  printf("snapshot replay (events/s; budget 5.0 M/s)\n");
  for (f = 0; f < sizeof files / sizeof files[0]; f++) {
    char path[1024];
    gpuplan_snapshot *s;
    gpuplan_replay_result r;
    gpuplan_replay_options w = GPUPLAN_REPLAY_OPTIONS_INIT;
    double t0, dt, rate, wrate, load;
    size_t ev, reps = 0, i;
    FILE *fp;
    long bytes;
    snprintf(path, sizeof path, "%s/%s", dir, files[f]);
    if (!(fp = fopen(path, "rb"))) {
      fprintf(stderr, "bench_replay: %s not found (vendored in tests/data/torch-snapshots)\n", path);
      gpuplan_ctx_free(ctx);
      return 1;
    }
    fseek(fp, 0, SEEK_END);
    bytes = ftell(fp);
    fclose(fp);
    t0 = now();
    for (i = 0; i < 5; i++) {
      if (gpuplan_snapshot_load(ctx, path, 0, &s)) return 1;
      if (i < 4) gpuplan_snapshot_free(s);
    }
    load = (double)bytes * 5 / (now() - t0) / 1e6;
    ev = gpuplan_snapshot_event_count(s);
    t0 = now();
    do {
      if (gpuplan_snapshot_replay(ctx, s, NULL, &r) || !r.exact) return 1;
      reps++;
    } while ((dt = now() - t0) < 0.3);
    rate = (double)(ev * reps) / dt;
    w.alloc_conf = "expandable_segments:True";
    reps = 0;
    t0 = now();
    do {
      if (gpuplan_snapshot_replay(ctx, s, &w, &r)) return 1;
      reps++;
    } while ((dt = now() - t0) < 0.3);
    wrate = (double)(ev * reps) / dt;
    if (ev > 1000 && rate < min_rate) min_rate = rate;
    printf("  %-30s %6zu events  exact %6.2f M/s (%5.2fx budget)  what-if %6.2f M/s  load %6.1f MB/s\n",
           files[f], ev, rate / 1e6, rate / 5e6, wrate / 1e6, load);
    gpuplan_snapshot_free(s);
  }
  if (min_rate < 1e30) printf("slowest exact replay: %.2f M events/s = %.2fx the 5 M/s budget\n",
                              min_rate / 1e6, min_rate / 5e6);
  gpuplan_ctx_free(ctx);
  return 0;
}
