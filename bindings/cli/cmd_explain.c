/* cmd_explain.c: gpuplan explain-oom "<PyTorch OOM message>" | - : the
 * library's explain-oom command, rendered from its document.  The CLI's own
 * part: "-" reads the message (or a whole log) from stdin. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char explain_about[] =
    "Read a PyTorch OutOfMemoryError message (any release's wording, a partial\n"
    "one, or a whole log: the first OOM in it is read), say whether it is\n"
    "fragmentation, another process, a memory-fraction cap or real demand,\n"
    "and what to try, in order.  MESSAGE - reads it from stdin.\n";

#define STDIN_MAX (64u << 20)

typedef struct explain_args {
  char *text; /* stdin's, owned */
  int npos;
} explain_args;

/* "-": the message is stdin (up to 64 MiB, a log's worth). */
static int explain_extra(cli *c, void *payload, int argc, char **argv, int i) {
  explain_args *ea = payload;
  size_t cap = 65536, n = 0, got;
  int rc;
  (void)argc;
  if (argv[i][0] == '-' && argv[i][1]) return 0;
  if (ea->npos++)
    return -cli_fail(c, EXIT_USAGE, "explain-oom: give the message as one argument (quote it), or - for stdin");
  if (strcmp(argv[i], "-") != 0) return 0;
  ea->text = malloc(cap);
  if (!ea->text) return -cli_fail(c, EXIT_RUNTIME, "explain-oom: out of memory");
  while ((got = fread(ea->text + n, 1, cap - n - 1, stdin)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *nb = cap < STDIN_MAX ? realloc(ea->text, cap * 2) : NULL;
      if (!nb) return -cli_fail(c, EXIT_RUNTIME, "explain-oom: stdin is longer than %u MiB", STDIN_MAX >> 20);
      ea->text = nb;
      cap *= 2;
    }
  }
  ea->text[n] = '\0';
  /* A NUL byte (a binary file on stdin) would cut the text short: refused. */
  if ((rc = gpuplan_job_set_text(c->job, "message", ea->text, n))) return -cli_job_fail(c, "explain-oom", rc);
  return 1;
}

static int render_explain(cli *c, gpuplan_doc *doc) {
  (void)c;
  fputs(dstr(gpuplan_doc_root(doc), "explanation"), stdout);
  return EXIT_OK;
}

int cmd_explain(cli *c, int argc, char **argv) {
  explain_args ea = {NULL, 0};
  int rc = cli_run(c, gpuplan_command_find("explain-oom"), argc, argv,
                   "usage: gpuplan explain-oom \"CUDA out of memory. Tried to allocate ...\" [--json]\n"
                   "       some-log | gpuplan explain-oom - [--json]",
                   explain_about, render_explain, explain_extra, &ea);
  free(ea.text);
  return rc;
}
