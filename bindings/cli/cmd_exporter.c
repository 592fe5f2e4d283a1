/*
 * cmd_exporter.c: gpuplan exporter: GPU metrics for Prometheus, as DCGM
 * Exporter serves them (same metric names and labels, port 9400), for this
 * machine's GPUs (the CUDA driver and NVML) or for mock GPUs whose clock
 * runs while it serves: a simulated job's program and the faults move the
 * metrics over time (--speed simulated seconds per second).
 *
 * Each scrape runs the library's smi command (and doctor, for the
 * gpuplan_doctor_check_failed series) and renders the documents with
 * gpuplan_devices_metrics(); the HTTP server is libmicrohttpd, its one
 * internal thread the only user of the gpuplan context while it serves.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction, nanosleep */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "cli.h"

#ifdef GPUPLAN_HAVE_MHD
#include <dlfcn.h>
#include <microhttpd.h>

/* libmicrohttpd, loaded when the exporter starts (dlopen): linked into the
 * command it would load GnuTLS and p11-kit into every gpuplan process,
 * several milliseconds of start-up for commands that serve no HTTP. */
typedef struct mhd_api {
  void *lib;
  struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
  enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
  void (*destroy_response)(struct MHD_Response *);
  enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
  struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                     MHD_AccessHandlerCallback, void *, ...);
  const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
  void (*stop_daemon)(struct MHD_Daemon *);
} mhd_api;

/* 0, or a message of what failed. */
static const char *mhd_load(mhd_api *m) {
  static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
  size_t i;
  memset(m, 0, sizeof *m);
  for (i = 0; i < 2 && !m->lib; i++) m->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!m->lib) return "cannot load libmicrohttpd.so.12 (Debian: apt-get install libmicrohttpd12)";
#define LOAD(field, sym)                                                        \
  do {                                                                          \
    void *p_ = dlsym(m->lib, sym);                                              \
    if (!p_) return "libmicrohttpd lacks " sym;                                 \
    memcpy(&m->field, &p_, sizeof p_);                                          \
  } while (0)
  LOAD(create_response_from_buffer, "MHD_create_response_from_buffer");
  LOAD(queue_response, "MHD_queue_response");
  LOAD(destroy_response, "MHD_destroy_response");
  LOAD(add_response_header, "MHD_add_response_header");
  LOAD(start_daemon, "MHD_start_daemon");
  LOAD(get_daemon_info, "MHD_get_daemon_info");
  LOAD(stop_daemon, "MHD_stop_daemon");
#undef LOAD
  return NULL;
}
#endif

typedef struct exporter {
  cli *c;
  gpuplan_job *doctor;   /* the same machine, for doctor's checks */
  const char *listen;
  long port;
  double speed;          /* simulated seconds per second */
  double base;           /* simulated seconds at start */
  double duration;       /* stop after this many seconds (0: never) */
  double started;
  int once, exact, sim, has_load;
  unsigned long scrapes;
#ifdef GPUPLAN_HAVE_MHD
  mhd_api mhd;
#endif
} exporter;

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

/* The exposition now: the simulated clock advanced by the time served. */
static int render(exporter *e, char **text, size_t *len) {
  cli *c = e->c;
  gpuplan_doc *smi = NULL, *doc = NULL;
  int rc;
  double at = e->base + (cli_now() - e->started) * e->speed;
  if (e->sim) {
    if (at > 1e6) at = 1e6;
    if ((rc = gpuplan_job_set_real(c->job, "load", at)) || (rc = gpuplan_job_set_real(e->doctor, "load", at)))
      return rc;
  }
  if ((rc = gpuplan_job_run(c->job, "smi", &smi))) return rc;
  if (gpuplan_job_run(e->doctor, "doctor", &doc) != GPUPLAN_OK) doc = NULL; /* metrics without doctor's checks */
  rc = gpuplan_devices_metrics(c->ctx, smi, doc, e->exact ? GPUPLAN_METRICS_DCGM_EXACT : 0, text, len);
  gpuplan_doc_free(smi);
  gpuplan_doc_free(doc);
  e->scrapes++;
  return rc;
}

#ifdef GPUPLAN_HAVE_MHD
static enum MHD_Result answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  exporter *e = cls;
  struct MHD_Response *resp;
  enum MHD_Result ret;
  unsigned status = MHD_HTTP_OK;
  char *text = NULL;
  size_t len = 0;
  int rc;
  static const char index_page[] =
      "<html><head><title>gpuplan exporter</title></head><body><h1>gpuplan exporter</h1>"
      "<p><a href=\"/metrics\">Metrics</a> (DCGM Exporter's names)</p></body></html>\n";
  (void)version;
  (void)upload;
  (void)upload_size;
  (void)con_cls;
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    resp = e->mhd.create_response_from_buffer(19, (void *)"method not allowed\n", MHD_RESPMEM_PERSISTENT);
    ret = e->mhd.queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
    e->mhd.destroy_response(resp);
    return ret;
  }
  if (!strcmp(url, "/metrics")) {
    rc = render(e, &text, &len);
    if (rc) {
      const char *msg = gpuplan_errmsg(e->c->ctx);
      status = MHD_HTTP_INTERNAL_SERVER_ERROR;
      resp = e->mhd.create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_MUST_COPY);
    } else {
      resp = e->mhd.create_response_from_buffer(len, text, MHD_RESPMEM_MUST_COPY);
      gpuplan_free(e->c->ctx, text);
      if (resp) e->mhd.add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    }
  } else if (!strcmp(url, "/")) {
    resp = e->mhd.create_response_from_buffer(sizeof index_page - 1, (void *)index_page, MHD_RESPMEM_PERSISTENT);
    if (resp) e->mhd.add_response_header(resp, "Content-Type", "text/html");
  } else {
    status = MHD_HTTP_NOT_FOUND;
    resp = e->mhd.create_response_from_buffer(10, (void *)"not found\n", MHD_RESPMEM_PERSISTENT);
  }
  if (!resp) return MHD_NO;
  ret = e->mhd.queue_response(conn, status, resp);
  e->mhd.destroy_response(resp);
  return ret;
}
#endif

static int extra(cli *c, void *payload, int argc, char **argv, int i) {
  exporter *e = payload;
  const char *a = argv[i], *v = NULL;
  char *end;
  size_t n = 0;
  static const char *with_value[] = {"--listen", "--port", "--speed", "--duration", "--torch-cuda", "--torch"};
  size_t k;
  if (!strcmp(a, "--once")) return e->once = 1, 1;
  if (!strcmp(a, "--dcgm-exact")) return e->exact = 1, 1;
  if (!strncmp(a, "--sim", 5)) e->sim = 1;
  if (!strncmp(a, "--load", 6)) e->has_load = 1;
  for (k = 0; k < sizeof with_value / sizeof with_value[0]; k++) {
    n = strlen(with_value[k]);
    if (!strncmp(a, with_value[k], n) && (a[n] == '\0' || a[n] == '=')) break;
  }
  if (k == sizeof with_value / sizeof with_value[0]) return 0;
  v = a[n] == '=' ? a + n + 1 : i + 1 < argc ? argv[i + 1] : NULL;
  if (!v) return -cli_fail(c, EXIT_USAGE, "exporter: %s needs a value", with_value[k]);
  if (k == 0) e->listen = v;
  else if (k == 1) {
    e->port = strtol(v, &end, 10);
    if (*end || !*v || e->port < 0 || e->port > 65535) return -cli_fail(c, EXIT_USAGE, "exporter: --port takes 0..65535");
  } else if (k == 2 || k == 3) {
    double x = strtod(v, &end);
    if (*end || !*v || !(x > 0) || x > 1e6)
      return -cli_fail(c, EXIT_USAGE, "exporter: %s takes a number in (0, 1e6]", with_value[k]);
    if (k == 2) e->speed = x;
    else e->duration = x;
  } else {
    int rc = gpuplan_job_set(e->doctor, k == 4 ? "torch_cuda" : "torch_version", v);
    if (rc) return -cli_job_fail(c, "exporter", rc);
  }
  return a[n] == '=' ? 1 : 2;
}

static const char usage[] =
    "usage: gpuplan exporter [--sim SKU[:N] [--fault NAME[@GPU]]... [--job MODEL] [--speed X]]\n"
    "                        [--listen ADDR] [--port N] [--once] [--duration S] [--dcgm-exact]";
static const char about[] =
    "Serve GPU metrics for Prometheus as DCGM Exporter does (its metric names and\n"
    "labels, http://127.0.0.1:9400/metrics): this machine's GPUs through NVML, or\n"
    "mock GPUs whose simulated clock runs while it serves, so that a simulated job\n"
    "(--job MODEL: start-up, training steps, checkpoints) and the faults move the\n"
    "metrics.  The smi options (devices, below) build the machine; the exporter's own:\n"
    "\n"
    "  --listen ADDR    address to listen on [127.0.0.1]\n"
    "  --port N         port [9400]; 0 picks a free one (printed on stderr)\n"
    "  --speed X        simulated seconds per second [1]\n"
    "  --once           print the exposition once and exit (promtool check metrics)\n"
    "  --duration S     stop after S seconds [until SIGINT/SIGTERM]\n"
    "  --dcgm-exact     DCGM Exporter's exact spelling: the modelName label and\n"
    "                   counters typed counter (promtool's linter rejects both)\n"
    "  --torch-cuda X.Y, --torch R   the framework doctor checks, for gpuplan_doctor_check_failed\n"
    "\n"
    "Simulated time starts at --load (600 s into training; 0 with --job).\n";

int cmd_exporter(cli *c, int argc, char **argv); /* main.c dispatches here */

int cmd_exporter(cli *c, int argc, char **argv) {
  int cmd = gpuplan_command_find("smi"), rc, code = EXIT_OK;
  gpuplan_job *job = NULL;
  exporter e;
  cli_out out;
  memset(&e, 0, sizeof e);
  e.c = c;
  e.listen = "127.0.0.1";
  e.port = 9400;
  e.speed = 1.0;
  if ((rc = cli_catalog(c))) return rc;
  if ((rc = gpuplan_job_new(c->ctx, c->cat, &job)) || (rc = gpuplan_job_new(c->ctx, c->cat, &e.doctor))) {
    gpuplan_job_free(job);
    return cli_lib_fail(c, rc);
  }
  c->job = job;
  code = cli_parse(c, cmd, argc, argv, job, &out, extra, &e);
  if (!code && out.help) {
    cli_help(cmd, usage, about, stdout); /* the smi options build the machine */
    goto done;
  }
  if (code) goto done;
  if (out.format != FMT_TABLE) {
    code = cli_fail(c, EXIT_USAGE, "exporter: --json and --csv are smi's; the exporter serves Prometheus' text");
    goto done;
  }
  /* the doctor job sees the same machine */
  {
    static const char *names[] = {"sim", "busy", "mem_fraction", "mock_driver", "job_model", "job_startup",
                                  "checkpoint_every", "checkpoint_seconds", "gpu_ids"};
    size_t k, i;
    const gpuplan_option_info *o;
    for (i = 1; i < (size_t)argc; i++) {
      /* re-read the machine's flags from argv: the job API has no getter */
      const char *a = argv[i];
      char flag[64];
      const char *eq = strchr(a, '=');
      if (strncmp(a, "--", 2) != 0) continue;
      snprintf(flag, sizeof flag, "%.*s", (int)(eq ? (size_t)(eq - a - 2) : strlen(a + 2)), a + 2);
      o = gpuplan_job_option_find(flag, NULL);
      if (!o || !(o->flags == 0)) continue;
      for (k = 0; k < sizeof names / sizeof names[0] && strcmp(names[k], o->name); k++) {}
      if (k < sizeof names / sizeof names[0] || !strcmp(o->name, "fault")) {
        const char *v = eq ? eq + 1 : i + 1 < (size_t)argc ? argv[i + 1] : NULL;
        if (v && (rc = gpuplan_job_set(e.doctor, o->name, v))) {
          code = cli_job_fail(c, "exporter", rc);
          goto done;
        }
      }
    }
  }
  if (e.has_load) {
    gpuplan_doc *d = NULL;
    if ((rc = gpuplan_job_run(job, "smi", &d))) {
      code = cli_job_fail(c, "exporter", rc);
      goto done;
    }
    e.base = dnum(gpuplan_doc_root(d), "seconds");
    gpuplan_doc_free(d);
  } else {
    gpuplan_doc *d = NULL;
    int with_job = 0;
    if ((rc = gpuplan_job_run(job, "smi", &d))) {
      code = cli_job_fail(c, "exporter", rc);
      goto done;
    }
    with_job = gpuplan_value_type_of(dv(gpuplan_doc_root(d), "job")) == GPUPLAN_VALUE_OBJECT;
    gpuplan_doc_free(d);
    e.base = with_job ? 0 : 600;
  }
  e.started = cli_now();
  if (e.once) {
    char *text = NULL;
    size_t len = 0;
    if ((rc = render(&e, &text, &len))) code = cli_job_fail(c, "exporter", rc);
    else fwrite(text, 1, len, stdout);
    gpuplan_free(c->ctx, text);
    goto done;
  }
#ifdef GPUPLAN_HAVE_MHD
  {
    struct sockaddr_in addr;
    struct MHD_Daemon *d;
    const union MHD_DaemonInfo *info;
    struct sigaction sa;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)e.port);
    const char *why;
    if (inet_pton(AF_INET, e.listen, &addr.sin_addr) != 1) {
      code = cli_fail(c, EXIT_USAGE, "exporter: --listen '%s' is not an IPv4 address", e.listen);
      goto done;
    }
    if ((why = mhd_load(&e.mhd))) {
      code = cli_fail(c, EXIT_RUNTIME, "exporter: %s; --once still prints the metrics", why);
      goto done;
    }
    d = e.mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, (uint16_t)e.port, NULL, NULL, answer,
                         &e, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_TIMEOUT,
                         (unsigned)30, MHD_OPTION_END);
    if (!d) {
      code = cli_fail(c, EXIT_RUNTIME, "exporter: cannot listen on %s:%ld (in use?)", e.listen, e.port);
      goto done;
    }
    info = e.mhd.get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "gpuplan exporter: serving http://%s:%u/metrics\n", e.listen,
            info ? (unsigned)info->port : (unsigned)e.port);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    while (!stop_flag && !(e.duration > 0 && cli_now() - e.started >= e.duration)) {
      struct timespec ts = {0, 50 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    e.mhd.stop_daemon(d);
    fprintf(stderr, "gpuplan exporter: %lu scrapes served\n", e.scrapes);
  }
#else
  code = cli_fail(c, EXIT_RUNTIME, "exporter: this gpuplan was built without libmicrohttpd; --once still works");
#endif
done:
  gpuplan_job_free(e.doctor);
  gpuplan_job_free(job);
  c->job = NULL;
  return code;
}
