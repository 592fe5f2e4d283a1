/* main.c: the gpuplan command: global options and command dispatch. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_serve(cli *c, int argc, char **argv); /* cmd_serve.c */

static const char usage[] =
    "usage: gpuplan [--catalog FILE | --layer FILE] COMMAND [ARGS]\n"
    "\n"
    "Plan GPU memory and training from a catalog of real hardware.\n"
    "\n"
    "commands:\n"
    "  plan      per-GPU memory for training or serving a model; what to change\n"
    "  perf      step time, MFU, traffic per link and cost of a layout on a cluster\n"
    "  search    the best layouts of a model on a cluster, ranked by time or cost\n"
    "  topo      a node's GPU/NIC matrix (nvidia-smi topo -m) and rank placement\n"
    "  smi       the nvidia-smi view of this machine's GPUs or of simulated ones (faults)\n"
    "  doctor    check a GPU environment: driver, CUDA, ECC, NVLink, throttling\n"
    "  simulate  run training steps through PyTorch's allocator on a mock GPU\n"
    "  replay    replay a PyTorch memory snapshot through the allocator model\n"
    "  explain-oom  read a PyTorch OOM message: fragmentation or real demand\n"
    "  serve     engine memory, latency, throughput and cost of serving a model; SLO search\n"
    "  validate  predicted vs measured throughput of published training runs\n"
    "  catalog   list and show GPUs, nodes/VMs, models and fabrics\n"
    "  version   print the version of the command and the library\n"
    "  help      show this help, or a command's (gpuplan help catalog)\n"
    "\n"
    "global options:\n"
    "  --catalog FILE  use this catalog file instead of the built-in one\n"
    "  --layer FILE    layer this catalog file over the built-in one\n"
    "                  (its rows override or extend the default)\n"
    "  -h, --help      show help\n"
    "\n"
    "Exit status: 0 success, 1 run-time error, 2 usage error.\n";

int cli_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_fail(cli *c, int code, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s: ", c->prog);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return code;
}

int cli_lib_fail(cli *c, int rc) {
  if (rc == GPUPLAN_EINVAL && c->ctx && gpuplan_errcode(c->ctx) == GPUPLAN_OK)
    return cli_fail(c, EXIT_RUNTIME, "%s", gpuplan_errstr(rc));
  return cli_fail(c, EXIT_RUNTIME, "%s",
                  c->ctx ? gpuplan_errmsg(c->ctx) : gpuplan_errstr(rc));
}

int cli_catalog(cli *c) {
  int rc;
  if (c->cat) return 0;
  if (c->catalog_path)
    rc = gpuplan_catalog_open(c->ctx, c->catalog_path, 0, &c->cat);
  else if (c->layer_path)
    rc = gpuplan_catalog_open(c->ctx, c->layer_path, GPUPLAN_CATALOG_LAYER,
                              &c->cat);
  else
    rc = gpuplan_catalog_open_default(c->ctx, &c->cat);
  return rc == GPUPLAN_OK ? 0 : cli_lib_fail(c, rc);
}

static int render_version(cli *c, gpuplan_doc *doc) {
  const gpuplan_value *r = gpuplan_doc_root(doc);
  (void)c;
  printf("gpuplan %s (library %s, catalog schema %lld)\n", GPUPLAN_VERSION_STRING, dstr(r, "version"),
         (long long)dint(r, "catalog_schema"));
  return EXIT_OK;
}

static int cmd_version(cli *c, int argc, char **argv) {
  return cli_run(c, gpuplan_command_find("version"), argc, argv, "usage: gpuplan version [--json]",
                 "Print the version of the gpuplan command and of the library it loaded.\n", render_version, NULL,
                 NULL);
}

static int dispatch(cli *c, int argc, char **argv) {
  const char *cmd = argv[0];
  if (strcmp(cmd, "catalog") == 0) return cmd_catalog(c, argc, argv);
  if (strcmp(cmd, "plan") == 0) return cmd_plan(c, argc, argv);
  if (strcmp(cmd, "replay") == 0) return cmd_replay(c, argc, argv);
  if (strcmp(cmd, "simulate") == 0) return cmd_simulate(c, argc, argv);
  if (strcmp(cmd, "explain-oom") == 0) return cmd_explain(c, argc, argv);
  if (strcmp(cmd, "validate") == 0) return cmd_validate(c, argc, argv);
  if (strcmp(cmd, "perf") == 0) return cmd_perf(c, argc, argv);
  if (strcmp(cmd, "search") == 0) return cmd_search(c, argc, argv);
  if (strcmp(cmd, "topo") == 0) return cmd_topo(c, argc, argv);
  if (strcmp(cmd, "smi") == 0) return cmd_smi(c, argc, argv);
  if (strcmp(cmd, "doctor") == 0) return cmd_doctor(c, argc, argv);
  if (strcmp(cmd, "serve") == 0) return cmd_serve(c, argc, argv);
  if (strcmp(cmd, "exporter") == 0) { int cmd_exporter(cli *, int, char **); return cmd_exporter(c, argc, argv); }
  if (strcmp(cmd, "version") == 0) return cmd_version(c, argc, argv);
  if (strcmp(cmd, "help") == 0) {
    if (argc > 1) {
      char *sub[2];
      sub[0] = argv[1];
      sub[1] = "--help";
      if (strcmp(argv[1], "help") != 0) return dispatch(c, 2, sub);
    }
    fputs(usage, stdout);
    return EXIT_OK;
  }
  return cli_fail(c, EXIT_USAGE, "unknown command '%s' (see gpuplan --help)", cmd);
}

int main(int argc, char **argv) {
  cli c;
  int i, rc, version = 0;
  char *vargv[2] = {"version", NULL};
  memset(&c, 0, sizeof c);
  c.prog = "gpuplan";

  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(usage, stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
      version = 1;
      break;
    } else if (strcmp(a, "--catalog") == 0 || strcmp(a, "--layer") == 0) {
      if (i + 1 >= argc) return cli_fail(&c, EXIT_USAGE, "%s needs a FILE", a);
      if (a[2] == 'c') c.catalog_path = argv[++i];
      else c.layer_path = argv[++i];
    } else if (a[0] == '-') {
      return cli_fail(&c, EXIT_USAGE, "unknown option '%s' (see gpuplan --help)", a);
    } else {
      break;
    }
  }
  if (c.catalog_path && c.layer_path)
    return cli_fail(&c, EXIT_USAGE, "--catalog and --layer exclude each other");
  if (i >= argc && !version)
    return cli_fail(&c, EXIT_USAGE, "no command given (see gpuplan --help)");
  c.started = cli_now();
  if (gpuplan_ctx_new(&c.ctx, NULL) != GPUPLAN_OK)
    return cli_fail(&c, EXIT_RUNTIME, "out of memory");
  rc = version ? dispatch(&c, 1, vargv) : dispatch(&c, argc - i, argv + i);
  gpuplan_catalog_free(c.cat);
  gpuplan_ctx_free(c.ctx);
  if (fflush(stdout) != 0 && rc == EXIT_OK)
    return cli_fail(&c, EXIT_RUNTIME, "cannot write the output");
  return rc;
}
