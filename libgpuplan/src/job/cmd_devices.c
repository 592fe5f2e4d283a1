/*
 * cmd_devices.c: the machine the device commands read, and the smi and
 * topo commands.
 *
 * smi is the nvidia-smi view of this machine's GPUs (the CUDA driver and
 * NVML, loaded at run time) or of mock GPUs running a simulated training
 * job with injected faults: one document with every field of every GPU
 * (what the table, -q, -x, -L, topo -m, nvlink, dmon and pmon print), the
 * GPU-to-GPU topology, samples over time, and the rows of an nvidia-smi
 * query (--query-gpu, --query-compute-apps) for CSV.  For mock GPUs the
 * document is a function of the options alone: their clock is simulated
 * (timestamps count from 2026-12-01 09:00:00 UTC) unless wall_clock asks
 * for this machine's.
 *
 * topo is a catalog node's GPU/NIC matrix as `nvidia-smi topo -m` prints
 * it, and where each parallel group of a layout runs.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r, localtime_r, nanosleep, gethostname */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job/devices_int.h"
#include "job/smi_fields.h"
#include "sys/sys_int.h"

#define MIB 1048576.0
#define SIM_EPOCH 1796115600.0 /* 2026-12-01 09:00:00 UTC: where the mock's clock starts */

static int64_t iopt(const gpuplan_job *j, int id, int64_t d) { return gpuplan__job_int(j, DOPT(id), d); }
static double ropt(const gpuplan_job *j, int id, double d) { return gpuplan__job_real(j, DOPT(id), d); }
static const char *sopt(const gpuplan_job *j, int id) { return gpuplan__job_str(j, DOPT(id), NULL); }
static int isset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, DOPT(id)); }

/* --- the machine ------------------------------------------------------------ */

/* The simulated job: its memory per GPU from the memory model (the first
 * layout that fits, data parallel over the node: ZeRO-1, ZeRO-3, ZeRO-3
 * with full recomputation) and its step time from the performance model. */
static int size_job(gpuplan_job *job, gpuplan__machine *m, const char *model_arg, const gpuplan_gpu *g, int ngpu) {
  static const struct {
    gpuplan_dp_mode mode;
    gpuplan_recompute rc;
    const char *what;
  } rungs[] = {{GPUPLAN_DP_ZERO1, GPUPLAN_RECOMPUTE_NONE, "ZeRO-1"},
               {GPUPLAN_DP_ZERO3, GPUPLAN_RECOMPUTE_NONE, "ZeRO-3"},
               {GPUPLAN_DP_ZERO3, GPUPLAN_RECOMPUTE_FULL, "ZeRO-3, full recomputation"}};
  const gpuplan_model *mdl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory mem;
  gpuplan_cluster cl;
  gpuplan_perf perf;
  double size;
  size_t k;
  int rc;
  if (gpuplan_parse_size(model_arg, &size)) {
    /* a size is the catalog's model of that size, never another model's shape rescaled */
    gpuplan__model_res r;
    memset(&r, 0, sizeof r);
    GPUPLAN_TRY(gpuplan__model_of_size(job, DOPT(D_JOB), model_arg, size, &r));
    mdl = r.m;
    snprintf(m->job.resolved, sizeof m->job.resolved, "%s", r.note);
  } else if ((rc = gpuplan_catalog_model(m->cat, model_arg, &mdl))) {
    return gpuplan__opt_error(m->ctx, rc, DOPT(D_JOB), "%s", gpuplan_errmsg(m->ctx));
  } else {
    snprintf(m->job.resolved, sizeof m->job.resolved, "%s: the catalog's %s", model_arg, mdl->id);
  }
  m->job.model_id = mdl->id;
  o.dp = ngpu;
  o.micro_batch = 1;
  for (k = 0; k < sizeof rungs / sizeof rungs[0]; k++) {
    o.dp_mode = ngpu > 1 ? rungs[k].mode : GPUPLAN_DP_DDP;
    o.recompute = rungs[k].rc;
    GPUPLAN_TRY(gpuplan_memory_eval(m->ctx, mdl, g, &o, GPUPLAN_STAGE_WORST, &mem));
    if (mem.fits) break;
  }
  m->job.fits = mem.fits;
  snprintf(m->job.layout, sizeof m->job.layout, "data parallel over %d GPU%s, %s, micro-batch 1", ngpu,
           ngpu > 1 ? "s" : "", ngpu > 1 ? rungs[k < 3 ? k : 2].what : "DDP");
  /* the device keeps its own CUDA context: the job's cache is the rest */
  m->job.bytes = mem.total > mem.item[GPUPLAN_MEM_CONTEXT].bytes ? mem.total - mem.item[GPUPLAN_MEM_CONTEXT].bytes
                                                                  : mem.total;
  GPUPLAN_TRY(gpuplan_cluster_default(m->ctx, m->cat, g, ngpu, ngpu, &cl));
  if (gpuplan_perf_eval(m->ctx, mdl, &cl, &o, ngpu, 0, NULL, &perf) == GPUPLAN_OK && perf.step_s > 0)
    m->job.step_s = perf.step_s;
  else
    m->job.step_s = 1.0;
  gpuplan__clear(m->ctx);
  return GPUPLAN_OK;
}

static int hexdigit(int c) { return isxdigit((unsigned char)c); }

/* Case-insensitive compare of the first n characters (n = (size_t)-1: all). */
static int ieq(const char *a, const char *b, size_t n) {
  size_t i;
  for (i = 0; i < n && (a[i] || b[i]); i++)
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
  return 1;
}

/* Select GPUs by index, UUID or PCI bus id (nvidia-smi -i). */
static int select_gpus(gpuplan_job *job, gpuplan__machine *m) {
  const char *ids = sopt(job, D_IDS);
  char buf[512], *tok, *next;
  int i;
  m->nsel = 0;
  if (!ids) {
    for (i = 0; i < m->ndev && i < GPUPLAN__MAX_GPUS; i++) m->sel[m->nsel++] = i;
    return GPUPLAN_OK;
  }
  if (strlen(ids) >= sizeof buf) return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL, DOPT(D_IDS), "is too long");
  snprintf(buf, sizeof buf, "%s", ids);
  for (tok = buf; tok; tok = next) {
    int found = -1;
    next = strchr(tok, ',');
    if (next) *next++ = '\0';
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    if (strspn(tok, "0123456789") == strlen(tok)) {
      long v = strlen(tok) < 4 ? strtol(tok, NULL, 10) : 99999;
      if (v < m->ndev) found = (int)v;
    } else {
      for (i = 0; i < m->ndev && found < 0; i++) {
        gpuplan_device_info info;
        if (gpuplan_backend_device_info(m->be, i, NULL, &info)) continue;
        if (!strncmp(tok, "GPU-", 4) || !strncmp(tok, "gpu-", 4)) {
          size_t n = strlen(tok);
          if (n >= 12 && ieq(info.uuid, tok, n)) found = i;
        } else if (strchr(tok, ':')) {
          size_t n = strlen(tok), L = strlen(info.pci_bus_id);
          /* "00000000:07:00.0", "0000:07:00.0" or "07:00.0" */
          if (n <= L && ieq(info.pci_bus_id + (L - n), tok, (size_t)-1) &&
              (n == L || info.pci_bus_id[L - n - 1] == ':' || hexdigit(tok[0])))
            found = i;
        }
      }
    }
    if (found < 0)
      return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL, DOPT(D_IDS),
                                "'%s' is no GPU here (give an index 0..%d, a UUID or a PCI bus id; nvidia-smi -L "
                                "lists them)", tok, m->ndev - 1);
    for (i = 0; i < m->nsel && m->sel[i] != found; i++) {}
    if (i == m->nsel && m->nsel < GPUPLAN__MAX_GPUS) m->sel[m->nsel++] = found;
  }
  return GPUPLAN_OK;
}

int gpuplan__machine_open(gpuplan_job *job, gpuplan__machine *m) {
  static const int mock_only[] = {D_FAULT, D_LOAD, D_BUSY, D_MEM, D_DRIVER, D_JOB, D_STARTUP, D_CKPT_EVERY,
                                  D_CKPT_S};
  const char *spec = sopt(job, D_SIM);
  size_t k;
  int rc;
  memset(m, 0, sizeof *m);
  m->ctx = job->ctx;
  m->cat = job->cat;
  if (!spec) {
    for (k = 0; k < sizeof mock_only / sizeof mock_only[0]; k++)
      if (isset(job, mock_only[k]))
        return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL, DOPT(mock_only[k]),
                                  "applies to simulated GPUs: give sim (e.g. a100-80gb:8)");
    rc = gpuplan_backend_open_cuda(m->ctx, NULL, &m->be);
    if (rc) {
      m->open_rc = rc;
      snprintf(m->open_msg, sizeof m->open_msg, "%s", gpuplan_errmsg(m->ctx));
      m->be = NULL;
      gpuplan__clear(m->ctx);
      return GPUPLAN_OK;
    }
  } else {
    gpuplan_mock_node_options o = GPUPLAN_MOCK_NODE_OPTIONS_INIT;
    const char *faults[64];
    const gpuplan__optlist *l;
    size_t nf = 0;
    for (l = gpuplan__job_list(job, DOPT(D_FAULT)); l; l = l->next) {
      if (nf == 64) return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL, DOPT(D_FAULT), "at most 64 faults");
      faults[nf++] = l->s;
    }
    o.spec = spec;
    o.faults = faults;
    o.nfaults = nf;
    o.load_s = ropt(job, D_LOAD, 600);
    o.busy = ropt(job, D_BUSY, 0.95);
    o.mem_fraction = ropt(job, D_MEM, 0.87);
    o.driver = sopt(job, D_DRIVER);
    if (!isset(job, D_JOB) && (isset(job, D_STARTUP) || isset(job, D_CKPT_EVERY) || isset(job, D_CKPT_S)))
      return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL,
                                DOPT(isset(job, D_STARTUP) ? D_STARTUP : isset(job, D_CKPT_EVERY) ? D_CKPT_EVERY
                                                                                                  : D_CKPT_S),
                                "is part of a simulated job's program: give job (a model, e.g. 7B)");
    if (isset(job, D_JOB)) {
      char sku[96];
      const char *colon = strchr(spec, ':');
      const gpuplan_gpu *g;
      long n = colon ? strtol(colon + 1, NULL, 10) : 1;
      if (isset(job, D_MEM))
        return gpuplan__opt_error(m->ctx, GPUPLAN_EINVAL, DOPT(D_MEM),
                                  "with job the memory comes from the job's plan; give one of them");
      snprintf(sku, sizeof sku, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
      if ((rc = gpuplan_catalog_gpu(m->cat, sku, &g)))
        return gpuplan__opt_error(m->ctx, rc, DOPT(D_SIM), "%s", gpuplan_errmsg(m->ctx));
      if (n < 1 || n > 64) n = 1; /* gpuplan_mock_node_ex names the bad count */
      m->job.model = sopt(job, D_JOB);
      GPUPLAN_TRY(size_job(job, m, m->job.model, g, (int)n));
      o.startup_s = ropt(job, D_STARTUP, 60);
      o.step_s = m->job.step_s;
      o.checkpoint_every_s = ropt(job, D_CKPT_EVERY, 1800);
      o.checkpoint_s = ropt(job, D_CKPT_S, 60);
      o.job_bytes = (int64_t)m->job.bytes;
    }
    rc = gpuplan_mock_node_ex(m->ctx, m->cat, &o, &m->sim);
    if (rc) {
      const char *msg = gpuplan_errmsg(m->ctx);
      if (rc == GPUPLAN_ENOTFOUND || rc == GPUPLAN_EAMBIGUOUS)
        return gpuplan__opt_error(m->ctx, rc, DOPT(D_SIM), "%s", msg);
      return rc;
    }
    m->seconds = o.load_s;
    if ((rc = gpuplan_mock_backend(m->sim, &m->be))) {
      gpuplan_mock_free(m->sim);
      m->sim = NULL;
      return rc;
    }
  }
  if ((rc = gpuplan_backend_device_count(m->be, &m->ndev))) {
    m->open_rc = rc;
    snprintf(m->open_msg, sizeof m->open_msg, "%s", gpuplan_errmsg(m->ctx));
    gpuplan__clear(m->ctx);
    m->ndev = 0;
  }
  if (!m->open_rc && gpuplan_backend_driver(m->be, &m->drv) == GPUPLAN_OK) m->drv_ok = 1;
  if (m->drv_ok && m->ndev > 0) {
    gpuplan_device_telemetry t;
    if (gpuplan_backend_telemetry(m->be, 0, &t) == GPUPLAN_OK)
      snprintf(m->driver_version, sizeof m->driver_version, "%s", t.driver_version);
  }
  gpuplan__clear(m->ctx);
  if (m->ndev > GPUPLAN__MAX_GPUS) m->ndev = GPUPLAN__MAX_GPUS;
  if (m->open_rc) return GPUPLAN_OK; /* no driver: nothing to select; the document says why */
  if ((rc = select_gpus(job, m))) gpuplan__machine_close(m); /* the caller only closes what opened */
  return rc;
}

void gpuplan__machine_close(gpuplan__machine *m) {
  gpuplan_backend_free(m->be);
  gpuplan_mock_free(m->sim);
  m->be = NULL;
  m->sim = NULL;
}

void gpuplan__gpu_read(gpuplan__machine *m, int i, gpuplan__gpu_state *g) {
  memset(g, 0, sizeof *g);
  g->index = i;
  if (!m->be) return;
  g->info_ok = gpuplan_backend_device_info(m->be, i, m->cat, &g->info) == GPUPLAN_OK;
  if (gpuplan_backend_telemetry(m->be, i, &g->t) == GPUPLAN_OK) g->tel_ok = 1;
  else snprintf(g->tel_err, sizeof g->tel_err, "%s", gpuplan_errmsg(m->ctx));
  g->procs_ok = gpuplan_backend_processes(m->be, i, g->procs, GPUPLAN__MAX_PROCS, &g->nprocs) == GPUPLAN_OK;
  if (g->nprocs > GPUPLAN__MAX_PROCS) g->nprocs = GPUPLAN__MAX_PROCS;
  if (m->sim) {
    gpuplan_mock_memory mem;
    gpuplan_mock_memory_info(m->sim, i, &mem);
    g->total = mem.total;
    g->used = mem.used;
    g->free = mem.free;
    g->has_job = gpuplan_mock_job_read(m->sim, i, &g->job) == GPUPLAN_OK;
  } else if (g->info_ok) {
    g->total = g->info.total_bytes;
    g->free = g->info.free_bytes;
    g->used = g->total - g->free;
  }
  gpuplan__clear(m->ctx);
}

static void put_arg(char *buf, size_t cap, const char *flag, const char *v) {
  size_t n = strlen(buf);
  int plain = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@:._-,/+") == strlen(v);
  snprintf(buf + n, cap - n, plain ? "%s--%s %s" : "%s--%s '%s'", n ? " " : "", flag, v);
}

void gpuplan__machine_args(const gpuplan_job *job, char *buf, size_t cap) {
  static const int carried[] = {D_SIM, D_LOAD, D_BUSY, D_MEM, D_DRIVER, D_JOB, D_STARTUP, D_CKPT_EVERY, D_CKPT_S};
  const gpuplan__optlist *l;
  size_t k;
  char v[64];
  buf[0] = '\0';
  for (k = 0; k < sizeof carried / sizeof carried[0]; k++) {
    const gpuplan_option_info *o = DOPT(carried[k]);
    const gpuplan__optval *val = gpuplan__job_val(job, o);
    if (!val) continue;
    if (o->type == GPUPLAN_OPT_REAL) {
      gpuplan__fmt_real(v, sizeof v, val->r);
      put_arg(buf, cap, o->flag, v);
    } else {
      put_arg(buf, cap, o->flag, val->s);
    }
    if (carried[k] == D_SIM)
      for (l = gpuplan__job_list(job, DOPT(D_FAULT)); l; l = l->next) put_arg(buf, cap, "fault", l->s);
  }
}

void gpuplan__gpu_list(const int *gpus, int n, char *buf, size_t cap) {
  size_t len;
  int i = 0;
  snprintf(buf, cap, "GPU%s ", n == 1 ? "" : "s");
  while (i < n) {
    int j = i;
    while (j + 1 < n && gpus[j + 1] == gpus[j] + 1) j++;
    len = strlen(buf);
    if (j > i + 1) snprintf(buf + len, cap - len, "%s%d-%d", i ? "," : "", gpus[i], gpus[j]);
    else if (j == i + 1) snprintf(buf + len, cap - len, "%s%d,%d", i ? "," : "", gpus[i], gpus[j]);
    else snprintf(buf + len, cap - len, "%s%d", i ? "," : "", gpus[i]);
    i = j + 1;
  }
}

/* --- the smi document ------------------------------------------------------- */

typedef struct qfield {
  const char *name, *unit;
  gpuplan_value_type type;
} qfield;

#define QF(n, u, t, h) {n, u, t},
static const qfield gpu_fields[] = {GPUPLAN__SMI_GPU_FIELDS(QF)};
static const qfield app_fields[] = {{"timestamp", "", GPUPLAN_VALUE_STRING}, {"name", "", GPUPLAN_VALUE_STRING},
                                    GPUPLAN__SMI_APP_FIELDS(QF)};
#undef QF
#define NGF (sizeof gpu_fields / sizeof gpu_fields[0])
#define NAF (sizeof app_fields / sizeof app_fields[0])

/* Parse a query's field list against the known fields. */
static int parse_query(gpuplan_ctx *ctx, const gpuplan_option_info *opt, const char *list, const qfield *known,
                       size_t nknown, const qfield **out, int *n_out) {
  char buf[2048], *tok, *next;
  int n = 0;
  size_t k;
  if (strlen(list) >= sizeof buf) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, opt, "is too long");
  snprintf(buf, sizeof buf, "%s", list);
  for (tok = buf; tok; tok = next) {
    char *end;
    next = strchr(tok, ',');
    if (next) *next++ = '\0';
    while (*tok == ' ') tok++;
    end = tok + strlen(tok);
    while (end > tok && end[-1] == ' ') *--end = '\0';
    if (!*tok) continue;
    if (n == 64) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, opt, "at most 64 fields");
    for (k = 0; k < nknown && strcmp(known[k].name, tok) != 0; k++) {}
    if (k == nknown) {
      gpuplan__buf b;
      int rc;
      gpuplan__buf_init(&b, ctx);
      for (k = 0; k < nknown; k++) gpuplan__buf_printf(&b, "%s%s", k ? ", " : "", known[k].name);
      gpuplan__buf_put(&b, "", 1);
      rc = gpuplan__opt_error(ctx, GPUPLAN_EINVAL, opt, "field '%s' is not known; known fields: %s", tok,
                              b.ptr && !b.failed ? b.ptr : "(out of memory)");
      gpuplan__buf_dispose(&b);
      return rc;
    }
    out[n++] = &known[k];
  }
  if (!n) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, opt, "names no field");
  *n_out = n;
  return GPUPLAN_OK;
}

static int parse_format(gpuplan_ctx *ctx, const char *f, int *header, int *units) {
  char buf[128], *tok, *next;
  int csv = 0;
  *header = *units = 1;
  if (strlen(f) >= sizeof buf) f = "bad";
  snprintf(buf, sizeof buf, "%s", f);
  for (tok = buf; tok; tok = next) {
    next = strchr(tok, ',');
    if (next) *next++ = '\0';
    while (*tok == ' ') tok++;
    if (!strcmp(tok, "csv")) csv = 1;
    else if (!strcmp(tok, "noheader")) *header = 0;
    else if (!strcmp(tok, "nounits")) *units = 0;
    else csv = -1;
    if (csv < 0) break;
  }
  if (csv != 1)
    return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_FORMAT), "'%s' is not csv[,noheader][,nounits]", f);
  return GPUPLAN_OK;
}

/* Time as nvidia-smi prints it: query rows and the table's header. */
static void stamp(const gpuplan__machine *m, int wall, double seconds, char *q, size_t qcap, char *t, size_t tcap) {
  struct tm tm;
  time_t now;
  double frac;
  if (m->sim && !wall) {
    double at = SIM_EPOCH + seconds;
    now = (time_t)floor(at);
    frac = at - floor(at);
    gmtime_r(&now, &tm);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    now = ts.tv_sec;
    frac = ts.tv_nsec / 1e9;
    localtime_r(&now, &tm);
  }
  {
    char tmp[96];
    size_t n;
    snprintf(tmp, sizeof tmp, "%04d/%02d/%02d %02d:%02d:%02d.%03d", (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100,
             tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100, (int)(frac * 1000) % 1000);
    n = strlen(tmp) < qcap ? strlen(tmp) : qcap - 1;
    memcpy(q, tmp, n);
    q[n] = '\0';
  }
  strftime(t, tcap, "%a %b %e %H:%M:%S %Y", &tm);
}

static const char *throttle_names[] = {"gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
                                       "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                       "hw_power_brake_slowdown", "display_clock_setting"};

static void opt_real(gpuplan__docb *b, const char *k, double v) {
  if (isfinite(v)) gpuplan__doc_real(b, k, v);
  else gpuplan__doc_null(b, k);
}
static void opt_int(gpuplan__docb *b, const char *k, long long v) {
  if (v >= 0) gpuplan__doc_int(b, k, v);
  else gpuplan__doc_null(b, k);
}
static void opt_bool(gpuplan__docb *b, const char *k, int v) {
  if (v >= 0) gpuplan__doc_bool(b, k, v);
  else gpuplan__doc_null(b, k);
}
static void opt_str(gpuplan__docb *b, const char *k, const char *v) { gpuplan__doc_str(b, k, v && *v ? v : NULL); }

static void write_procs(gpuplan__docb *b, const gpuplan__gpu_state *g) {
  size_t p;
  gpuplan__doc_arr(b, "processes");
  for (p = 0; g->procs_ok && p < g->nprocs; p++) {
    const gpuplan_device_process *q = &g->procs[p];
    char type[2] = {q->type ? q->type : 'C', 0};
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "pid", q->pid);
    gpuplan__doc_str(b, "type", type);
    gpuplan__doc_str(b, "name", q->name);
    gpuplan__doc_uint(b, "used_bytes", q->used_bytes);
    gpuplan__doc_str(b, "role", q->role == 1 ? "job" : q->role == 2 ? "other" : NULL);
    opt_real(b, "sm_util", q->sm_util);
    opt_real(b, "mem_util", q->mem_util);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
}

static void write_gpu(gpuplan__docb *b, const gpuplan__machine *m, const gpuplan__gpu_state *g) {
  const gpuplan_device_telemetry *t = &g->t;
  const gpuplan_device_info *in = &g->info;
  int tel = g->tel_ok && !t->lost;
  char buf[64];
  unsigned dom = 0, bus = 0, dv = 0, fn = 0;
  size_t k;
  gpuplan__doc_obj(b, NULL);
  gpuplan__doc_int(b, "index", g->index);
  gpuplan__doc_str(b, "name", g->info_ok ? in->name : NULL);
  gpuplan__doc_str(b, "uuid", g->info_ok ? in->uuid : NULL);
  opt_str(b, "serial", tel ? t->serial : NULL);
  gpuplan__doc_str(b, "pci_bus_id", g->info_ok ? in->pci_bus_id : NULL);
  gpuplan__doc_obj(b, "pci");
  if (g->info_ok && sscanf(in->pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dv, &fn) == 4) {
    gpuplan__doc_strf(b, "domain", "0x%04X", dom);
    gpuplan__doc_strf(b, "bus", "0x%02X", bus);
    gpuplan__doc_strf(b, "device", "0x%02X", dv);
  } else {
    gpuplan__doc_null(b, "domain");
    gpuplan__doc_null(b, "bus");
    gpuplan__doc_null(b, "device");
  }
  gpuplan__doc_end(b);
  gpuplan__doc_str(b, "sku", g->info_ok && in->sku ? in->sku->id : NULL);
  gpuplan__doc_str(b, "architecture", g->info_ok && in->sku ? in->sku->architecture : NULL);
  if (g->info_ok && in->cc_major > 0) gpuplan__doc_strf(b, "compute_cap", "%d.%d", in->cc_major, in->cc_minor);
  else gpuplan__doc_null(b, "compute_cap");
  opt_int(b, "sm_count", g->info_ok && in->sm_count > 0 ? in->sm_count : -1);
  gpuplan__doc_bool(b, "lost", g->tel_ok && t->lost);
  gpuplan__doc_str(b, "telemetry_error", g->tel_ok ? NULL : g->tel_err);
  opt_bool(b, "persistence_mode", tel ? t->persistence_mode : -1);
  opt_bool(b, "mig_mode", tel ? t->mig_mode : -1);
  if (tel && t->compute_mode >= 0) {
    static const char *cm[] = {"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"};
    gpuplan__doc_str(b, "compute_mode", t->compute_mode < 4 ? cm[t->compute_mode] : "Default");
  } else {
    gpuplan__doc_null(b, "compute_mode");
  }
  opt_str(b, "vbios_version", tel ? t->vbios_version : NULL);
  opt_real(b, "fan_speed", tel ? t->fan_speed : NAN);
  opt_int(b, "pstate", tel ? t->pstate : -1);
  gpuplan__doc_obj(b, "temperature");
  opt_real(b, "gpu_c", tel ? t->temperature_c : NAN);
  opt_real(b, "memory_c", tel ? t->memory_temperature_c : NAN);
  opt_real(b, "slowdown_c", tel ? t->slowdown_temp_c : NAN);
  opt_real(b, "shutdown_c", tel ? t->shutdown_temp_c : NAN);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "power");
  opt_real(b, "draw_w", tel ? t->power_w : NAN);
  opt_real(b, "limit_w", tel ? t->power_limit_w : NAN);
  opt_real(b, "energy_j", tel ? t->energy_j : NAN);
  opt_real(b, "violation_s", tel ? t->power_violation_s : NAN);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "clocks");
  opt_int(b, "sm_mhz", tel ? t->sm_clock_mhz : -1);
  opt_int(b, "graphics_mhz", tel ? t->graphics_clock_mhz : -1);
  opt_int(b, "mem_mhz", tel ? t->mem_clock_mhz : -1);
  opt_int(b, "max_sm_mhz", tel ? t->max_sm_clock_mhz : g->info_ok && in->clock_mhz > 0 ? in->clock_mhz : -1);
  opt_int(b, "max_graphics_mhz", tel ? t->max_graphics_clock_mhz : -1);
  opt_int(b, "max_mem_mhz", tel ? t->max_mem_clock_mhz : g->info_ok && in->mem_clock_mhz > 0 ? in->mem_clock_mhz : -1);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "throttle");
  if (tel && t->throttle >= 0) gpuplan__doc_int(b, "bits", t->throttle);
  else gpuplan__doc_null(b, "bits");
  opt_real(b, "thermal_violation_s", tel ? t->thermal_violation_s : NAN);
  gpuplan__doc_arr(b, "reasons");
  for (k = 0; tel && t->throttle > 0 && k < sizeof throttle_names / sizeof throttle_names[0]; k++)
    if (t->throttle & (1ll << k)) gpuplan__doc_str(b, NULL, throttle_names[k]);
  gpuplan__doc_end(b);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "pcie");
  opt_int(b, "gen", tel ? t->pcie_gen : -1);
  opt_int(b, "gen_max", tel ? t->pcie_gen_max : -1);
  opt_int(b, "width", tel ? t->pcie_width : -1);
  opt_int(b, "width_max", tel ? t->pcie_width_max : -1);
  opt_real(b, "rx_bytes_s", tel ? t->pcie_rx_bytes_s : NAN);
  opt_real(b, "tx_bytes_s", tel ? t->pcie_tx_bytes_s : NAN);
  opt_int(b, "replays", tel ? t->pcie_replays : -1);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "utilization");
  opt_real(b, "gpu", tel ? t->gpu_util : NAN);
  opt_real(b, "memory", tel ? t->mem_util : NAN);
  opt_real(b, "encoder", tel ? t->enc_util : NAN);
  opt_real(b, "decoder", tel ? t->dec_util : NAN);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "memory");
  if (g->info_ok) {
    gpuplan__doc_uint(b, "total_bytes", g->total);
    gpuplan__doc_uint(b, "used_bytes", g->used);
    gpuplan__doc_uint(b, "free_bytes", g->free);
  } else {
    gpuplan__doc_null(b, "total_bytes");
    gpuplan__doc_null(b, "used_bytes");
    gpuplan__doc_null(b, "free_bytes");
  }
  if (tel) gpuplan__doc_uint(b, "reserved_bytes", t->fb_reserved_bytes);
  else gpuplan__doc_null(b, "reserved_bytes");
  if (tel && t->bar1_total_bytes) {
    gpuplan__doc_uint(b, "bar1_total_bytes", t->bar1_total_bytes);
    gpuplan__doc_uint(b, "bar1_used_bytes", t->bar1_used_bytes);
  } else {
    gpuplan__doc_null(b, "bar1_total_bytes");
    gpuplan__doc_null(b, "bar1_used_bytes");
  }
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "ecc");
  opt_bool(b, "enabled", tel ? t->ecc_mode : -1);
  opt_int(b, "volatile_uncorrected", tel ? t->ecc_uncorrected : -1);
  opt_int(b, "volatile_corrected", tel ? t->ecc_corrected : -1);
  opt_int(b, "aggregate_uncorrected", tel ? t->ecc_uncorrected_aggregate : -1);
  opt_int(b, "aggregate_corrected", tel ? t->ecc_corrected_aggregate : -1);
  opt_int(b, "retired_sbe", tel ? t->retired_sbe : -1);
  opt_int(b, "retired_dbe", tel ? t->retired_dbe : -1);
  opt_bool(b, "retired_pending", tel ? t->retired_pending : -1);
  opt_int(b, "remapped_correctable", tel ? t->remapped_correctable : -1);
  opt_int(b, "remapped_uncorrectable", tel ? t->remapped_uncorrectable : -1);
  opt_bool(b, "remap_pending", tel ? t->remap_pending : -1);
  opt_bool(b, "remap_failure", tel ? t->remap_failure : -1);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "nvlink");
  opt_int(b, "links", tel ? t->nvlink_links : -1);
  opt_int(b, "up", tel ? t->nvlink_up : -1);
  opt_real(b, "link_gbps", tel && t->nvlink_links > 0 ? t->nvlink_link_gbps : NAN);
  opt_real(b, "bytes", tel && t->nvlink_links > 0 ? t->nvlink_bytes : NAN);
  gpuplan__doc_arr(b, "link_up");
  for (k = 0; tel && (int)k < t->nvlink_links && k < 64; k++) gpuplan__doc_bool(b, NULL, (t->nvlink_up_mask >> k) & 1);
  gpuplan__doc_end(b);
  gpuplan__doc_end(b);
  if (tel && t->xid >= 0) gpuplan__doc_int(b, "xid", t->xid);
  else if (g->tel_ok && t->lost) gpuplan__doc_int(b, "xid", 79);
  else gpuplan__doc_null(b, "xid");
  opt_int(b, "numa_node", tel ? t->numa_node : -1);
  opt_str(b, "cpu_affinity", tel ? t->cpu_affinity : NULL);
  write_procs(b, g);
  if (g->has_job) {
    gpuplan__doc_obj(b, "job");
    gpuplan__doc_str(b, "state", g->job.state);
    gpuplan__doc_str(b, "message", g->job.message);
    gpuplan__doc_real(b, "seconds", g->job.seconds);
    gpuplan__doc_real(b, "steps", floor(g->job.steps * 1000 + 0.5) / 1000);
    gpuplan__doc_uint(b, "cache_bytes", g->job.bytes);
    gpuplan__doc_end(b);
  } else {
    gpuplan__doc_null(b, "job");
  }
  (void)m;
  (void)buf;
  gpuplan__doc_end(b);
}

/* One sample of every selected GPU (dmon, pmon). */
static void write_sample(gpuplan__docb *b, const gpuplan__machine *m, const gpuplan__gpu_state *gs, double seconds,
                         const char *ts, const double *prev_tviol, double interval) {
  int k;
  gpuplan__doc_obj(b, NULL);
  if (m->sim) gpuplan__doc_real(b, "seconds", seconds);
  else gpuplan__doc_null(b, "seconds");
  gpuplan__doc_str(b, "timestamp", ts);
  gpuplan__doc_arr(b, "gpus");
  for (k = 0; k < m->nsel; k++) {
    const gpuplan__gpu_state *g = &gs[k];
    const gpuplan_device_telemetry *t = &g->t;
    int tel = g->tel_ok && !t->lost;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "index", g->index);
    opt_real(b, "power_w", tel ? t->power_w : NAN);
    opt_real(b, "temperature_c", tel ? t->temperature_c : NAN);
    opt_real(b, "memory_temperature_c", tel ? t->memory_temperature_c : NAN);
    opt_real(b, "sm_util", tel ? t->gpu_util : NAN);
    opt_real(b, "mem_util", tel ? t->mem_util : NAN);
    opt_real(b, "enc_util", tel ? t->enc_util : NAN);
    opt_real(b, "dec_util", tel ? t->dec_util : NAN);
    opt_int(b, "mem_clock_mhz", tel ? t->mem_clock_mhz : -1);
    opt_int(b, "sm_clock_mhz", tel ? t->sm_clock_mhz : -1);
    /* share of the last interval the clocks were held down for heat */
    if (tel && isfinite(t->thermal_violation_s) && prev_tviol && isfinite(prev_tviol[k]))
      gpuplan__doc_real(b, "thermal_violation", fmin(1.0, (t->thermal_violation_s - prev_tviol[k]) / interval));
    else if (tel && t->throttle >= 0)
      gpuplan__doc_real(b, "thermal_violation", (t->throttle & (GPUPLAN_THROTTLE_SW_THERMAL | GPUPLAN_THROTTLE_HW_THERMAL)) ? 1.0 : 0.0);
    else
      gpuplan__doc_null(b, "thermal_violation");
    if (tel && t->throttle >= 0) gpuplan__doc_real(b, "power_violation", (t->throttle & GPUPLAN_THROTTLE_SW_POWER_CAP) ? 1.0 : 0.0);
    else gpuplan__doc_null(b, "power_violation");
    if (g->info_ok) gpuplan__doc_uint(b, "fb_used_bytes", g->used);
    else gpuplan__doc_null(b, "fb_used_bytes");
    if (tel && t->bar1_total_bytes) gpuplan__doc_uint(b, "bar1_used_bytes", t->bar1_used_bytes);
    else gpuplan__doc_null(b, "bar1_used_bytes");
    opt_int(b, "ecc_sbe", tel ? t->ecc_corrected : -1);
    opt_int(b, "ecc_dbe", tel ? t->ecc_uncorrected : -1);
    opt_int(b, "pcie_replays", tel ? t->pcie_replays : -1);
    opt_real(b, "pcie_rx_bytes_s", tel ? t->pcie_rx_bytes_s : NAN);
    opt_real(b, "pcie_tx_bytes_s", tel ? t->pcie_tx_bytes_s : NAN);
    write_procs(b, g);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_end(b);
}

static long long mib(uint64_t bytes) { return (long long)floor((double)bytes / MIB + 0.5); }
static const char *yes_no(int v) { return v ? "Yes" : "No"; }
static const char *enabled(int v) { return v ? "Enabled" : "Disabled"; }

/* The value of query field q of GPU g, in nvidia-smi's units. */
static void gpu_value(gpuplan__docb *b, const qfield *q, const gpuplan__machine *m, const gpuplan__gpu_state *g,
                      const char *ts) {
  const char *n = q->name, *k = q->name;
  const gpuplan_device_telemetry *t = &g->t;
  const gpuplan_device_info *in = &g->info;
  int tel = g->tel_ok && !t->lost;
#define IS(s) (strcmp(n, s) == 0)
#define NUL gpuplan__doc_null(b, k)
  if (IS("timestamp")) gpuplan__doc_str(b, k, ts);
  else if (IS("driver_version")) opt_str(b, k, m->driver_version);
  else if (IS("count")) gpuplan__doc_int(b, k, m->ndev);
  else if (IS("index")) gpuplan__doc_int(b, k, g->index);
  else if (!g->info_ok) NUL;
  else if (IS("name")) gpuplan__doc_str(b, k, in->name);
  else if (IS("uuid")) gpuplan__doc_str(b, k, in->uuid);
  else if (IS("pci.bus_id")) gpuplan__doc_str(b, k, in->pci_bus_id);
  else if (IS("pci.domain") || IS("pci.bus") || IS("pci.device")) {
    unsigned dom = 0, bus = 0, dv = 0, fn = 0;
    if (sscanf(in->pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dv, &fn) != 4) NUL;
    else if (IS("pci.domain")) gpuplan__doc_strf(b, k, "0x%04X", dom);
    else if (IS("pci.bus")) gpuplan__doc_strf(b, k, "0x%02X", bus);
    else gpuplan__doc_strf(b, k, "0x%02X", dv);
  } else if (IS("compute_cap")) {
    if (in->cc_major > 0) gpuplan__doc_strf(b, k, "%d.%d", in->cc_major, in->cc_minor);
    else NUL;
  } else if (IS("gpuplan.sku")) gpuplan__doc_str(b, k, in->sku ? in->sku->id : NULL);
  else if (IS("memory.total")) gpuplan__doc_int(b, k, mib(g->total));
  else if (IS("memory.used")) gpuplan__doc_int(b, k, mib(g->used));
  else if (IS("memory.free")) gpuplan__doc_int(b, k, mib(g->free));
  else if (IS("clocks.max.sm") && !tel) opt_int(b, k, in->clock_mhz > 0 ? in->clock_mhz : -1);
  else if (!tel) NUL; /* a field this card or driver does not report: [N/A], as nvidia-smi */
  else if (IS("serial")) opt_str(b, k, t->serial);
  else if (IS("pci.device_id")) NUL;
  else if (IS("pcie.link.gen.current")) opt_int(b, k, t->pcie_gen);
  else if (IS("pcie.link.gen.max")) opt_int(b, k, t->pcie_gen_max);
  else if (IS("pcie.link.width.current")) opt_int(b, k, t->pcie_width);
  else if (IS("pcie.link.width.max")) opt_int(b, k, t->pcie_width_max);
  else if (IS("display_mode") || IS("display_active")) gpuplan__doc_str(b, k, "Disabled");
  else if (IS("persistence_mode")) {
    if (t->persistence_mode >= 0) gpuplan__doc_str(b, k, enabled(t->persistence_mode));
    else NUL;
  } else if (IS("vbios_version")) opt_str(b, k, t->vbios_version);
  else if (IS("fan.speed")) {
    if (isfinite(t->fan_speed)) gpuplan__doc_int(b, k, (int64_t)floor(100 * t->fan_speed + 0.5));
    else NUL;
  } else if (IS("pstate")) {
    if (t->pstate >= 0) gpuplan__doc_strf(b, k, "P%d", t->pstate);
    else NUL;
  } else if (IS("memory.reserved")) gpuplan__doc_int(b, k, mib(t->fb_reserved_bytes));
  else if (IS("compute_mode")) {
    static const char *cm[] = {"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"};
    if (t->compute_mode >= 0 && t->compute_mode < 4) gpuplan__doc_str(b, k, cm[t->compute_mode]);
    else NUL;
  }
#define PCT(s, x) else if (IS(s)) { if (isfinite(x)) gpuplan__doc_int(b, k, (int64_t)floor(100 * (x) + 0.5)); else NUL; }
  PCT("utilization.gpu", t->gpu_util)
  PCT("utilization.memory", t->mem_util)
  PCT("utilization.encoder", t->enc_util)
  PCT("utilization.decoder", t->dec_util)
#undef PCT
  else if (IS("ecc.mode.current")) {
    if (t->ecc_mode >= 0) gpuplan__doc_str(b, k, enabled(t->ecc_mode));
    else NUL;
  }
#define CNT(s, x) else if (IS(s)) opt_int(b, k, x);
  CNT("ecc.errors.corrected.volatile.total", t->ecc_corrected)
  CNT("ecc.errors.uncorrected.volatile.total", t->ecc_uncorrected)
  CNT("ecc.errors.corrected.aggregate.total", t->ecc_corrected_aggregate)
  CNT("ecc.errors.uncorrected.aggregate.total", t->ecc_uncorrected_aggregate)
  CNT("retired_pages.single_bit_ecc.count", t->retired_sbe)
  CNT("retired_pages.double_bit.count", t->retired_dbe)
  CNT("remapped_rows.correctable", t->remapped_correctable)
  CNT("remapped_rows.uncorrectable", t->remapped_uncorrectable)
  CNT("clocks.gr", t->graphics_clock_mhz)
  CNT("clocks.sm", t->sm_clock_mhz)
  CNT("clocks.mem", t->mem_clock_mhz)
  CNT("clocks.max.gr", t->max_graphics_clock_mhz)
  CNT("clocks.max.graphics", t->max_graphics_clock_mhz)
  CNT("clocks.max.mem", t->max_mem_clock_mhz)
  CNT("clocks.max.memory", t->max_mem_clock_mhz)
#undef CNT
  else if (IS("clocks.max.sm")) opt_int(b, k, t->max_sm_clock_mhz > 0 ? t->max_sm_clock_mhz : in->clock_mhz);
  else if (IS("retired_pages.pending")) {
    if (t->retired_pending >= 0) gpuplan__doc_str(b, k, yes_no(t->retired_pending));
    else NUL;
  } else if (IS("remapped_rows.pending")) {
    if (t->remap_pending >= 0) gpuplan__doc_str(b, k, yes_no(t->remap_pending));
    else NUL;
  } else if (IS("remapped_rows.failure")) {
    if (t->remap_failure >= 0) gpuplan__doc_str(b, k, yes_no(t->remap_failure));
    else NUL;
  } else if (IS("temperature.gpu") || IS("temperature.memory")) {
    double x = IS("temperature.gpu") ? t->temperature_c : t->memory_temperature_c;
    if (isfinite(x)) gpuplan__doc_int(b, k, (int64_t)floor(x + 0.5));
    else NUL;
  } else if (IS("power.draw")) opt_real(b, k, floor(t->power_w * 100 + 0.5) / 100);
  else if (IS("power.limit") || IS("enforced.power.limit")) opt_real(b, k, floor(t->power_limit_w * 100 + 0.5) / 100);
  else if (IS("clocks_throttle_reasons.active") || IS("clocks_event_reasons.active")) {
    if (t->throttle >= 0) gpuplan__doc_strf(b, k, "0x%016llx", (unsigned long long)t->throttle);
    else NUL;
  } else if (!strncmp(n, "clocks_throttle_reasons.", 24)) {
    size_t r;
    for (r = 0; r < sizeof throttle_names / sizeof throttle_names[0] && strcmp(throttle_names[r], n + 24); r++) {}
    if (t->throttle >= 0 && r < sizeof throttle_names / sizeof throttle_names[0])
      gpuplan__doc_str(b, k, (t->throttle >> r) & 1 ? "Active" : "Not Active");
    else NUL;
  } else if (IS("mig.mode.current")) {
    if (t->mig_mode >= 0) gpuplan__doc_str(b, k, enabled(t->mig_mode));
    else NUL;
  } else NUL;
#undef IS
#undef NUL
}

static void app_value(gpuplan__docb *b, const qfield *q, const gpuplan__gpu_state *g, const gpuplan_device_process *p,
                      const char *ts) {
  const char *n = q->name;
  if (!strcmp(n, "timestamp")) gpuplan__doc_str(b, n, ts);
  else if (!strcmp(n, "gpu_name")) gpuplan__doc_str(b, n, g->info_ok ? g->info.name : NULL);
  else if (!strcmp(n, "gpu_bus_id")) gpuplan__doc_str(b, n, g->info_ok ? g->info.pci_bus_id : NULL);
  else if (!strcmp(n, "gpu_serial")) opt_str(b, n, g->tel_ok ? g->t.serial : NULL);
  else if (!strcmp(n, "gpu_uuid")) gpuplan__doc_str(b, n, g->info_ok ? g->info.uuid : NULL);
  else if (!strcmp(n, "pid")) gpuplan__doc_int(b, n, p->pid);
  else if (!strcmp(n, "process_name") || !strcmp(n, "name")) gpuplan__doc_str(b, n, p->name);
  else gpuplan__doc_int(b, n, mib(p->used_bytes)); /* used_gpu_memory, used_memory */
}

static void write_rows(gpuplan__docb *rb, const gpuplan__machine *m, const gpuplan__gpu_state *gs, const qfield **q,
                       int nq, int apps, const char *ts) {
  int k, f;
  size_t p;
  for (k = 0; k < m->nsel; k++) {
    const gpuplan__gpu_state *g = &gs[k];
    if (!apps) {
      gpuplan__doc_obj(rb, NULL);
      for (f = 0; f < nq; f++) gpu_value(rb, q[f], m, g, ts);
      gpuplan__doc_end(rb);
      continue;
    }
    for (p = 0; g->procs_ok && p < g->nprocs; p++) {
      gpuplan__doc_obj(rb, NULL);
      for (f = 0; f < nq; f++) app_value(rb, q[f], g, &g->procs[p], ts);
      gpuplan__doc_end(rb);
    }
  }
}

static void sleep_s(double s) {
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - floor(s)) * 1e9);
  while (nanosleep(&ts, &ts) != 0) {}
}

static void write_topology(gpuplan__docb *b, gpuplan__machine *m) {
  int a, c;
  gpuplan__doc_arr(b, "topology");
  for (a = 0; a < m->nsel; a++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "gpu", m->sel[a]);
    gpuplan__doc_arr(b, "links");
    for (c = 0; c < m->nsel; c++) {
      gpuplan_device_link l;
      gpuplan__doc_obj(b, NULL);
      gpuplan__doc_int(b, "gpu", m->sel[c]);
      if (gpuplan_backend_link(m->be, m->sel[a], m->sel[c], &l) == GPUPLAN_OK) {
        gpuplan__doc_int(b, "nvlinks", l.nvlinks);
        gpuplan__doc_str(b, "pcie", l.pcie);
        if (a == c) gpuplan__doc_str(b, "cell", "X");
        else if (l.nvlinks > 0) gpuplan__doc_strf(b, "cell", "NV%d", l.nvlinks);
        else gpuplan__doc_str(b, "cell", l.pcie);
      } else {
        gpuplan__doc_null(b, "nvlinks");
        gpuplan__doc_null(b, "pcie");
        gpuplan__doc_str(b, "cell", a == c ? "X" : NULL);
        gpuplan__clear(m->ctx);
      }
      gpuplan__doc_end(b);
    }
    gpuplan__doc_end(b);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
}

static void read_all(gpuplan__machine *m, gpuplan__gpu_state *gs) {
  int k;
  for (k = 0; k < m->nsel; k++) gpuplan__gpu_read(m, m->sel[k], &gs[k]);
}

int gpuplan__cmd_smi(gpuplan_job *job, gpuplan_doc **out) {
  gpuplan_ctx *ctx = job->ctx;
  gpuplan__machine m;
  gpuplan__gpu_state *gs = NULL;
  gpuplan__docb *b = NULL, *rb = NULL;
  gpuplan_doc *rows = NULL;
  const qfield *q[64];
  const char *qgpu = sopt(job, D_QUERY_GPU), *qapps = sopt(job, D_QUERY_APPS);
  int nq = 0, header = 1, units = 1, rc, k, wall = (int)iopt(job, D_WALL_CLOCK, 0);
  int64_t samples = iopt(job, D_SAMPLES, 1), s;
  double interval = ropt(job, D_INTERVAL, 1.0), *tviol = NULL;
  char ts[40], tt[64], host[128];
  if (qgpu && qapps)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "query_gpu, query_compute_apps: give one query, not both");
  if (qgpu) GPUPLAN_TRY(parse_query(ctx, DOPT(D_QUERY_GPU), qgpu, gpu_fields, NGF, q, &nq));
  if (qapps) GPUPLAN_TRY(parse_query(ctx, DOPT(D_QUERY_APPS), qapps, app_fields, NAF, q, &nq));
  GPUPLAN_TRY(parse_format(ctx, sopt(job, D_FORMAT) ? sopt(job, D_FORMAT) : "csv", &header, &units));
  GPUPLAN_TRY(gpuplan__machine_open(job, &m));
  gs = gpuplan__calloc(ctx, GPUPLAN__MAX_GPUS, sizeof *gs);
  tviol = gpuplan__calloc(ctx, GPUPLAN__MAX_GPUS, sizeof *tviol);
  b = gpuplan__doc_begin(ctx, "smi");
  rb = gpuplan__doc_begin(ctx, "smi");
  if (!gs || !tviol || !b || !rb) {
    rc = gpuplan__nomem(ctx);
    goto done;
  }
  if (sopt(job, D_HOSTNAME)) snprintf(host, sizeof host, "%s", sopt(job, D_HOSTNAME));
  else if (m.sim || gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "gpuplan-mock");
  host[sizeof host - 1] = '\0';
  read_all(&m, gs);
  stamp(&m, wall, m.seconds, ts, sizeof ts, tt, sizeof tt);
  gpuplan__doc_str(b, "source", m.sim ? "mock" : "cuda");
  gpuplan__doc_str(b, "sim", sopt(job, D_SIM));
  gpuplan__doc_str(b, "hostname", host);
  gpuplan__doc_str(b, "timestamp", ts);
  gpuplan__doc_str(b, "timestamp_text", tt);
  if (m.sim) gpuplan__doc_real(b, "seconds", m.seconds);
  else gpuplan__doc_null(b, "seconds");
  gpuplan__doc_obj(b, "driver");
  gpuplan__doc_bool(b, "available", m.be && !m.open_rc);
  gpuplan__doc_str(b, "error", m.open_rc ? m.open_msg : NULL);
  gpuplan__doc_str(b, "error_code", m.open_rc ? gpuplan_errname(m.open_rc) : NULL);
  opt_str(b, "version", m.driver_version);
  if (m.drv_ok && m.drv.cuda_version > 0) {
    gpuplan__doc_strf(b, "cuda_version", "%d.%d", m.drv.cuda_version / 1000, m.drv.cuda_version % 1000 / 10);
    gpuplan__doc_int(b, "cuda_version_code", m.drv.cuda_version);
  } else {
    gpuplan__doc_null(b, "cuda_version");
    gpuplan__doc_null(b, "cuda_version_code");
  }
  gpuplan__doc_str(b, "library", m.drv_ok ? m.drv.library : NULL);
  {
    const char *nvml_err = NULL;
    for (k = 0; k < m.nsel; k++)
      if (!gs[k].tel_ok) nvml_err = gs[k].tel_err;
    gpuplan__doc_bool(b, "telemetry", m.nsel > 0 && !nvml_err);
    gpuplan__doc_str(b, "telemetry_error", nvml_err);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_int(b, "attached_gpus", m.ndev);
  if (m.sim && m.job.model) {
    gpuplan__doc_obj(b, "job");
    gpuplan__doc_str(b, "model", m.job.model);
    gpuplan__doc_str(b, "model_id", m.job.model_id);
    gpuplan__doc_str(b, "model_note", m.job.resolved);
    gpuplan__doc_str(b, "layout", m.job.layout);
    gpuplan__doc_real(b, "step_s", m.job.step_s);
    gpuplan__doc_uint(b, "cache_bytes", m.job.bytes);
    gpuplan__doc_bool(b, "fits", m.job.fits);
    gpuplan__doc_end(b);
  } else {
    gpuplan__doc_null(b, "job");
  }
  gpuplan__doc_arr(b, "gpus");
  for (k = 0; k < m.nsel; k++) write_gpu(b, &m, &gs[k]);
  gpuplan__doc_end(b);
  if (m.be && !m.open_rc) write_topology(b, &m);
  else {
    gpuplan__doc_arr(b, "topology");
    gpuplan__doc_end(b);
  }
  /* samples over time, and the query's rows for each */
  gpuplan__doc_arr(b, "samples");
  gpuplan__doc_arr(rb, "rows");
  for (s = 0; s < samples; s++) {
    if (s > 0) {
      for (k = 0; k < m.nsel; k++) tviol[k] = gs[k].tel_ok ? gs[k].t.thermal_violation_s : NAN;
      if (m.sim) {
        gpuplan_mock_advance(m.sim, interval);
        m.seconds += interval;
      } else {
        sleep_s(interval);
      }
      read_all(&m, gs);
      stamp(&m, wall, m.seconds, ts, sizeof ts, tt, sizeof tt);
    }
    write_sample(b, &m, gs, m.seconds, ts, s ? tviol : NULL, interval);
    if (nq) write_rows(rb, &m, gs, q, nq, qapps != NULL, ts);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_end(rb);
  gpuplan__doc_obj(b, "query");
  gpuplan__doc_str(b, "kind", qgpu ? "gpu" : qapps ? "compute-apps" : NULL);
  gpuplan__doc_arr(b, "fields");
  for (k = 0; k < nq; k++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "name", q[k]->name);
    gpuplan__doc_str(b, "unit", q[k]->unit);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_bool(b, "header", header);
  gpuplan__doc_bool(b, "units", units);
  gpuplan__doc_end(b);
  rc = gpuplan__doc_finish(rb, &rows);
  rb = NULL;
  if (rc) goto done;
  gpuplan__doc_copy(b, "rows", gpuplan_value_get(gpuplan_doc_root(rows), "rows"));
  rc = gpuplan__doc_finish(b, out);
  b = NULL;
done:
  gpuplan__doc_abort(b);
  gpuplan__doc_abort(rb);
  gpuplan_doc_free(rows);
  gpuplan__free(ctx, gs);
  gpuplan__free(ctx, tviol);
  gpuplan__machine_close(&m);
  return rc;
}

/* --- topo --------------------------------------------------------------------- */

/* PCIe between GPUs i and j of a node of `per` GPUs: pairs share a switch,
 * a socket holds half the node. */
static const char *pcie_rel(int64_t i, int64_t j, int64_t per) {
  if (i / 2 == j / 2) return "PIX";
  if (per > 4 && i / (per / 2) != j / (per / 2)) return "SYS";
  return "PXB";
}

static int nv_links(double gen) {
  if (gen >= 4) return 18;
  if (gen >= 3) return 12;
  if (gen >= 2) return 6;
  return 4;
}

/* a * b, or -1 when it would pass INT64_MAX. */
static int64_t mul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return -1;
  if (a && b > INT64_MAX / a) return -1;
  return a * b;
}

static int parse_layout(gpuplan_ctx *ctx, const char *s, int64_t v[4]) {
  int k = 0;
  const char *p = s;
  v[0] = v[1] = v[2] = v[3] = 1;
  while (*p && k < 4) {
    int64_t x = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
      if (x > (INT64_MAX - 9) / 10) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_LAYOUT), "'%s': a degree is too large", s);
      x = x * 10 + (*p++ - '0');
      digits++;
    }
    if (!digits || x < 1)
      return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_LAYOUT), "'%s' is not TP,PP,DP[,CP] (integers >= 1)", s);
    v[k++] = x;
    if (*p == ',') p++;
    else if (*p) break;
  }
  if (*p || k < 3)
    return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_LAYOUT), "'%s' is not TP,PP,DP[,CP] (integers >= 1)", s);
  return GPUPLAN_OK;
}

int gpuplan__cmd_topo(gpuplan_job *job, gpuplan_doc **out) {
  gpuplan_ctx *ctx = job->ctx;
  const char *node_name = gpuplan__job_str(job, JOPT(J_NODE), NULL), *gpu_name = gpuplan__job_str(job, JOPT(J_GPU), NULL);
  const char *layout = sopt(job, D_LAYOUT);
  int64_t nodes = gpuplan__job_int(job, JOPT(J_NODES), 1), per = gpuplan__job_int(job, JOPT(J_PER_NODE), 8);
  int64_t lay[4], i, j, nics, links, world;
  int pcie_only = (int)iopt(job, D_PCIE_ONLY, 0), nv, rc;
  const gpuplan_gpu *g = NULL;
  const gpuplan_node *n = NULL;
  gpuplan_cluster cl;
  gpuplan__docb *b;
  int local = 0;
  if (node_name && gpu_name)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "gpu, node: give a node/VM (node) or a GPU SKU (gpu), one of them");
  if (!node_name && !gpu_name) {
    /* This machine's GPUs, through the CUDA driver (as nvidia-smi topo -m):
     * their SKU and count; without a driver, a document that says so. */
    gpuplan_backend *be = NULL;
    gpuplan_device_info info;
    int count = 0;
    rc = gpuplan_backend_open_cuda(ctx, NULL, &be);
    if (!rc) rc = gpuplan_backend_device_count(be, &count);
    if (!rc && count < 1) rc = gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "the CUDA driver sees no GPU");
    if (!rc) rc = gpuplan_backend_device_info(be, 0, job->cat, &info);
    if (!rc && !info.sku)
      rc = gpuplan__error(ctx, GPUPLAN_ENOTFOUND, "GPU 0 (%s) matches no catalog SKU; give --gpu", info.name);
    if (!rc) g = info.sku;
    gpuplan_backend_free(be);
    if (rc) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(ctx));
      gpuplan__clear(ctx);
      if (!(b = gpuplan__doc_begin(ctx, "topo"))) return gpuplan_errcode(ctx);
      gpuplan__doc_str(b, "source", "cuda");
      gpuplan__doc_obj(b, "driver");
      gpuplan__doc_bool(b, "available", 0);
      gpuplan__doc_str(b, "error", msg);
      gpuplan__doc_str(b, "error_code", gpuplan_errname(rc));
      gpuplan__doc_end(b);
      return gpuplan__doc_finish(b, out);
    }
    gpu_name = g->id;
    per = count;
    local = 1;
  }
  if (node_name && gpuplan__job_isset(job, JOPT(J_PER_NODE)))
    return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, JOPT(J_PER_NODE), "a node has its own GPU count; per_node is for a bare gpu");
  if (layout) GPUPLAN_TRY(parse_layout(ctx, layout, lay));
  if (node_name) {
    GPUPLAN_TRY(gpuplan_catalog_node(job->cat, node_name, &n));
    if (!n->gpu_id) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, JOPT(J_NODE), "%s has no GPU (a CPU-only size)", n->name);
    GPUPLAN_TRY(gpuplan_cluster_from_node(ctx, job->cat, n, nodes, &cl));
    g = cl.gpu;
    per = cl.gpus_per_node;
    nics = isfinite(n->nic_count) ? (int64_t)n->nic_count : 1;
  } else {
    if ((world = mul(per, nodes)) < 0)
      return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, JOPT(J_NODES), "%lld nodes of %lld GPUs overflow", (long long)nodes, (long long)per);
    GPUPLAN_TRY(gpuplan_catalog_gpu(job->cat, gpu_name, &g));
    GPUPLAN_TRY(gpuplan_cluster_default(ctx, job->cat, g, world, per, &cl));
    nics = per;
  }
  if (!g) return gpuplan__error(ctx, GPUPLAN_EINVAL, "node: %s has no GPU", n ? n->name : "the node");
  if (pcie_only) {
    cl.intra_name = "pcie";
    cl.intra_bw_bytes_s = isfinite(g->pcie_gen) && g->pcie_gen >= 5 ? 63e9 : 31.5e9;
  }
  nv = !pcie_only && strcmp(cl.intra_name, "pcie") != 0 && per > 1;
  links = nv ? nv_links(g->nvlink_gen) : 0;
  if (nics > 16) nics = 16;
  if (nics < 0) nics = 0;
  world = mul(per, nodes);
  if (world < 0) return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, JOPT(J_NODES), "the cluster's GPU count overflows");
  if (layout) {
    int64_t p = mul(mul(mul(lay[0], lay[1]), lay[2]), lay[3]);
    if (p < 0)
      return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_LAYOUT),
                                "tp*pp*dp*cp of %s overflows; the cluster has %lld GPUs", layout, (long long)world);
    if (p != world)
      return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, DOPT(D_LAYOUT), "tp*pp*dp*cp = %lld, but the cluster has %lld GPUs",
                                (long long)p, (long long)world);
  }
  if (per > 256)
    return gpuplan__opt_error(ctx, GPUPLAN_EINVAL, JOPT(J_PER_NODE), "%lld GPUs per node: topo prints at most 256",
                              (long long)per);
  b = gpuplan__doc_begin(ctx, "topo");
  if (!b) return gpuplan_errcode(ctx);
  gpuplan__doc_str(b, "source", local ? "cuda" : "catalog");
  gpuplan__doc_str(b, "gpu", g->id);
  gpuplan__doc_str(b, "gpu_name", g->name);
  gpuplan__doc_str(b, "node", n ? n->id : NULL);
  gpuplan__doc_int(b, "nodes", nodes);
  gpuplan__doc_int(b, "per_node", per);
  gpuplan__doc_int(b, "gpus", world);
  gpuplan__doc_int(b, "nics", nics);
  gpuplan__doc_bool(b, "nvlink", nv);
  gpuplan__doc_bool(b, "pcie_only", pcie_only);
  gpuplan__doc_int(b, "nvlinks", links);
  gpuplan__doc_obj(b, "intra");
  gpuplan__doc_str(b, "fabric", nv ? cl.intra_name : "pcie");
  gpuplan__doc_real(b, "bw_bytes_s", cl.intra_bw_bytes_s);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "inter");
  gpuplan__doc_str(b, "fabric", cl.inter_name);
  gpuplan__doc_real(b, "bw_bytes_s", cl.inter_bw_bytes_s);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "matrix");
  for (i = 0; i < per; i++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "gpu", i);
    gpuplan__doc_arr(b, "gpus");
    for (j = 0; j < per; j++) {
      if (i == j) gpuplan__doc_str(b, NULL, "X");
      else if (nv) gpuplan__doc_strf(b, NULL, "NV%lld", (long long)links);
      else gpuplan__doc_str(b, NULL, pcie_rel(i, j, per));
    }
    gpuplan__doc_end(b);
    gpuplan__doc_arr(b, "nics");
    for (j = 0; j < nics; j++) gpuplan__doc_str(b, NULL, pcie_rel(i, j * per / (nics ? nics : 1), per));
    gpuplan__doc_end(b);
    gpuplan__doc_int(b, "socket", per > 4 && i >= per / 2 ? 1 : 0);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  if (!layout) {
    gpuplan__doc_null(b, "layout");
    return gpuplan__doc_finish(b, out);
  }
  gpuplan__doc_obj(b, "layout");
  gpuplan__doc_int(b, "tp", lay[0]);
  gpuplan__doc_int(b, "pp", lay[1]);
  gpuplan__doc_int(b, "dp", lay[2]);
  gpuplan__doc_int(b, "cp", lay[3]);
  gpuplan__doc_arr(b, "groups");
  {
    struct {
      const char *name;
      int64_t size, stride;
    } grp[4] = {{"tensor parallel", lay[0], 1},
                {"context parallel", lay[3], lay[0]},
                {"data parallel", lay[2], lay[0] * lay[3]},
                {"pipeline", lay[1], lay[0] * lay[3] * lay[2]}};
    int k;
    for (k = 0; k < 4; k++) {
      int64_t span = grp[k].size * grp[k].stride, nodes_in;
      if (grp[k].size <= 1) continue;
      nodes_in = span <= per ? 1 : (grp[k].stride >= per ? grp[k].size : (span + per - 1) / per);
      gpuplan__doc_obj(b, NULL);
      gpuplan__doc_str(b, "name", grp[k].name);
      gpuplan__doc_int(b, "size", grp[k].size);
      gpuplan__doc_int(b, "stride", grp[k].stride);
      gpuplan__doc_int(b, "nodes", nodes_in);
      gpuplan__doc_str(b, "fabric", nodes_in == 1 ? (nv ? cl.intra_name : "PCIe") : cl.inter_name);
      gpuplan__doc_end(b);
    }
    gpuplan__doc_end(b);
    gpuplan__doc_arr(b, "warnings");
    {
      int64_t tp_nodes = lay[0] <= per ? 1 : (lay[0] + per - 1) / per;
      char w[200];
      if (lay[0] > 1 && tp_nodes > 1) {
        snprintf(w, sizeof w, "tensor parallelism spans nodes: every layer waits on %s", cl.inter_name);
        gpuplan__doc_str(b, NULL, w);
      }
      if (lay[0] > 1 && !nv) {
        snprintf(w, sizeof w, "tensor parallelism runs over PCIe only (%.0f GB/s instead of NVLink)",
                 cl.intra_bw_bytes_s / 1e9);
        gpuplan__doc_str(b, NULL, w);
      }
    }
    gpuplan__doc_end(b);
  }
  gpuplan__doc_arr(b, "ranks");
  for (i = 0; i < world && i < 32; i++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "rank", i);
    gpuplan__doc_int(b, "node", i / per);
    gpuplan__doc_int(b, "gpu", i % per);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_end(b);
  rc = gpuplan__doc_finish(b, out);
  return rc;
}
