/* cmd_explain.c: gpuplan explain-oom "<PyTorch OOM message>" | - */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char explain_usage[] =
    "usage: gpuplan explain-oom \"CUDA out of memory. Tried to allocate ...\" [--json]\n"
    "       some-log | gpuplan explain-oom - [--json]\n"
    "\n"
    "Read a PyTorch OutOfMemoryError message (any release's wording; the rest of\n"
    "the log line is ignored), say whether it is fragmentation, another process,\n"
    "a memory-fraction cap or real demand, and what to try, in order.\n";

static const char *verdicts[] = {"fragmentation", "mixed", "demand", "other-process", "fraction"};

int cmd_explain(cli *c, int argc, char **argv) {
  const char *msg = NULL;
  char *owned = NULL, *text = NULL;
  gpuplan_oom_info o;
  gpuplan_oom_verdict v;
  int json = 0, i, rc;
  for (i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(explain_usage, stdout);
      return EXIT_OK;
    } else if (strcmp(argv[i], "--json") == 0) {
      json = 1;
    } else if (!msg) {
      msg = argv[i];
    } else {
      return cli_fail(c, EXIT_USAGE, "explain-oom: give the message as one argument (quote it)");
    }
  }
  if (!msg) return cli_fail(c, EXIT_USAGE, "explain-oom: needs the OOM message (or - for stdin)");
  if (strcmp(msg, "-") == 0) {
    size_t cap = 65536, n = 0, got;
    owned = malloc(cap);
    if (!owned) return cli_fail(c, EXIT_RUNTIME, "out of memory");
    while ((got = fread(owned + n, 1, cap - n - 1, stdin)) > 0) {
      n += got;
      if (n + 1 == cap) {
        char *nb = cap < (64u << 20) ? realloc(owned, cap * 2) : NULL;
        if (!nb) break;
        owned = nb;
        cap *= 2;
      }
    }
    owned[n] = '\0';
    msg = owned;
  }
  rc = gpuplan_oom_parse(c->ctx, msg, &o);
  if (rc == GPUPLAN_OK) rc = gpuplan_oom_explain(c->ctx, &o, &v, &text);
  free(owned);
  if (rc) return cli_lib_fail(c, rc);
  if (json) {
    printf("{\n  \"verdict\": \"%s\",\n  \"tried_bytes\": %llu,\n  \"total_bytes\": %llu,\n"
           "  \"free_bytes\": %llu,\n  \"allocated_bytes\": %llu,\n  \"reserved_unallocated_bytes\": %llu,\n"
           "  \"process_bytes\": %llu,\n  \"other_processes_bytes\": %llu,\n  \"allowed_bytes\": %llu,\n"
           "  \"explanation\": ",
           verdicts[v], (unsigned long long)o.tried, (unsigned long long)o.total,
           (unsigned long long)o.free, (unsigned long long)o.allocated,
           (unsigned long long)o.unallocated, (unsigned long long)o.process,
           (unsigned long long)o.others, (unsigned long long)o.allowed);
    json_str(stdout, text);
    printf("\n}\n");
  } else {
    fputs(text, stdout);
  }
  gpuplan_free(c->ctx, text);
  return EXIT_OK;
}
