/* bench.h: what the benchmarks share: a monotonic clock in seconds. */
#ifndef GPUPLAN_BENCH_H
#define GPUPLAN_BENCH_H

#include <time.h>

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
