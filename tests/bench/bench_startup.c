/*
 * bench_startup.c: how long a whole `gpuplan` process takes (issue 10 item 4,
 * "Fast to start").  Budget: 2 ms for `gpuplan catalog show a100-80gb`, the
 * command that opens the built-in catalog; `gpuplan version` is printed
 * beside it as the floor that process start and dynamic linking set (it
 * opens the catalog too, since the CLI's common option path does).  Then the
 * catalog's own share, in this process: gpuplan_catalog_open_default() and
 * gpuplan_catalog_free(), the first call (cold) and the median of N after.
 *
 * Each run is a posix_spawn of the command with stdout and stderr on
 * /dev/null, timed from the spawn to the end of waitpid.  Prints the median
 * (and the fastest and slowest decile) of N runs and the ratio of the median
 * to the budget; asserts nothing about time (CI machines vary).  It fails
 * only if a command does not exit 0.
 *
 *   bench_startup PATH/TO/gpuplan [N]
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "gpuplan.h"

extern char **environ;

#define BUDGET_S 2e-3

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One spawn-to-reap time in seconds; negative if the command failed. */
static double run_once(char *const argv[], const posix_spawn_file_actions_t *fa) {
  pid_t pid;
  int status = 0;
  double t0 = now(), dt;
  if (posix_spawn(&pid, argv[0], fa, NULL, argv, environ) != 0) return -1;
  if (waitpid(pid, &status, 0) != pid) return -1;
  dt = now() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return dt;
}

static int measure(const char *label, char *const argv[], long n,
                   const posix_spawn_file_actions_t *fa, double *median_out) {
  double *t = malloc((size_t)n * sizeof *t);
  long i;
  if (!t) return 1;
  for (i = 0; i < 5; i++) /* warm the page cache and the dynamic loader */
    if (run_once(argv, fa) < 0) {
      fprintf(stderr, "bench_startup: '%s' failed\n", label);
      free(t);
      return 1;
    }
  for (i = 0; i < n; i++) {
    t[i] = run_once(argv, fa);
    if (t[i] < 0) {
      fprintf(stderr, "bench_startup: '%s' failed\n", label);
      free(t);
      return 1;
    }
  }
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  *median_out = t[n / 2];
  printf("%-34s median %.3f ms (p10 %.3f, p90 %.3f; %ld runs) = %.2fx the 2 ms budget\n",
         label, t[n / 2] * 1e3, t[n / 10] * 1e3, t[(n * 9) / 10] * 1e3, n,
         t[n / 2] / BUDGET_S);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  posix_spawn_file_actions_t fa;
  long n = argc > 2 ? atol(argv[2]) : 201;
  double show = 0, version = 0;
  int rc;
  char *show_argv[] = {NULL, "catalog", "show", "a100-80gb", NULL};
  char *version_argv[] = {NULL, "version", NULL};
  if (argc < 2 || n < 10) {
    fprintf(stderr, "usage: bench_startup PATH/TO/gpuplan [N >= 10]\n");
    return 2;
  }
  show_argv[0] = argv[1];
  version_argv[0] = argv[1];
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  printf("whole process, spawn to exit (budget 2 ms for catalog show):\n");
  rc = measure("gpuplan catalog show a100-80gb", show_argv, n, &fa, &show);
  if (rc == 0) rc = measure("gpuplan version", version_argv, n, &fa, &version);
  if (rc == 0) printf("show - version: %.3f ms\n", (show - version) * 1e3);
  posix_spawn_file_actions_destroy(&fa);
  if (rc == 0) {
    gpuplan_ctx *ctx = NULL;
    gpuplan_catalog *cat = NULL;
    double *t = malloc((size_t)n * sizeof *t), first, t0;
    long i;
    if (!t || gpuplan_ctx_new(&ctx, NULL)) return 1;
    t0 = now();
    if (gpuplan_catalog_open_default(ctx, &cat)) return 1;
    gpuplan_catalog_free(cat);
    first = now() - t0;
    for (i = 0; i < n; i++) {
      t0 = now();
      if (gpuplan_catalog_open_default(ctx, &cat)) return 1;
      gpuplan_catalog_free(cat);
      t[i] = now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("in process, open_default + free: first %.1f us, then median %.1f us "
           "(%.4fx the 2 ms budget)\n", first * 1e6, t[n / 2] * 1e6, t[n / 2] / BUDGET_S);
    free(t);
    gpuplan_ctx_free(ctx);
  }
  return rc;
}
