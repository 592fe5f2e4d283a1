/*
 * cmd_smi.c: gpuplan smi (the nvidia-smi view of real or simulated GPUs)
 * and gpuplan doctor (an environment check with findings and fixes).
 *
 * Real devices come from the CUDA backend (libcuda loaded at run time);
 * without a driver, smi says so as nvidia-smi does.  Simulated devices
 * (--sim SKU[:N]) are mock GPUs with a thermal model, utilisation and
 * injectable faults (--fault NAME[@GPU]): the seven problems of the seed
 * article, each showing its symptom here and its diagnosis in doctor.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MiB 1048576.0

typedef struct machine {
  gpuplan_mock *sim;          /* NULL: the real machine */
  gpuplan_backend *backend;  /* NULL when the driver could not be opened */
  int open_rc;               /* why not */
  char open_msg[640];
  int ndev;
  double torch_cuda;         /* the framework's CUDA runtime, e.g. 12.1 */
} machine;

typedef struct smi_opts {
  const char *sim;           /* SKU[:N] */
  const char *faults[16];
  int nfaults;
  double load_s, busy, mem_used;
  double torch_cuda;
} smi_opts;

/* Defaults shared by smi and doctor: a node ten minutes into training. */
static void smi_defaults(smi_opts *o) {
  memset(o, 0, sizeof *o);
  o->load_s = 600;
  o->busy = 0.95;
  o->mem_used = 0.87;
  o->torch_cuda = 12.1;
}

static void machine_close(machine *m) {
  gpuplan_backend_free(m->backend);
  gpuplan_mock_free(m->sim);
  memset(m, 0, sizeof *m);
}

/* Build the machine: the real one, or mock GPUs with faults and a load run. */
static int machine_open(cli *c, const smi_opts *o, machine *m) {
  int rc;
  memset(m, 0, sizeof *m);
  m->torch_cuda = o->torch_cuda;
  if (!o->sim) {
    if ((rc = cli_catalog(c))) return rc; /* to name the SKU a device matches */
    rc = gpuplan_backend_open_cuda(c->ctx, NULL, &m->backend);
    if (rc) {
      m->open_rc = rc;
      snprintf(m->open_msg, sizeof m->open_msg, "%s", gpuplan_errmsg(c->ctx));
      m->backend = NULL;
      return EXIT_OK;
    }
    gpuplan_backend_device_count(m->backend, &m->ndev);
    return EXIT_OK;
  } else {
    if ((rc = cli_catalog(c))) return rc;
    rc = gpuplan_mock_node(c->ctx, c->cat, o->sim, o->faults, (size_t)o->nfaults, o->load_s, o->busy, o->mem_used,
                          &m->sim);
    if (rc) return cli_fail(c, rc == GPUPLAN_EINVAL ? EXIT_USAGE : EXIT_RUNTIME, "--sim: %s", gpuplan_errmsg(c->ctx));
    if ((rc = gpuplan_mock_backend(m->sim, &m->backend))) {
      machine_close(m);
      return cli_lib_fail(c, rc);
    }
    if ((rc = gpuplan_backend_device_count(m->backend, &m->ndev))) {
      m->open_rc = rc;
      snprintf(m->open_msg, sizeof m->open_msg, "%s", gpuplan_errmsg(c->ctx));
    }
    return EXIT_OK;
  }
}

/* Telemetry of device i through the backend (NVML or the mock's model);
 * 1 when available. */
static int telemetry(machine *m, int i, gpuplan_device_telemetry *t) {
  return gpuplan_backend_telemetry(m->backend, i, t) == GPUPLAN_OK;
}

static const char *driver_string(machine *m, char *buf, size_t cap) {
  gpuplan_device_telemetry t;
  if (m->ndev > 0 && telemetry(m, 0, &t) && t.driver_version[0]) snprintf(buf, cap, "%s", t.driver_version);
  else snprintf(buf, cap, "N/A");
  return buf;
}

/* Memory as nvidia-smi counts it: what the driver has handed out. */
static void memory_of(machine *m, int i, const gpuplan_device_info *info, uint64_t *used, uint64_t *others) {
  *used = info->total_bytes - info->free_bytes;
  *others = 0;
  if (m->sim) {
    gpuplan_mock_memory mem;
    gpuplan_mock_memory_info(m->sim, i, &mem);
    *used = mem.used;
    *others = mem.others;
  }
}

/* --- the nvidia-smi table ---------------------------------------------------- */

static void smi_table(cli *c, machine *m) {
  gpuplan_driver_info drv;
  char dv[32];
  int i;
  gpuplan_backend_driver(m->backend, &drv);
  driver_string(m, dv, sizeof dv);
  printf("+-----------------------------------------------------------------------------------------+\n");
  {
    char title[160];
    snprintf(title, sizeof title, "NVIDIA-SMI %s  Driver Version: %s  CUDA Version: %d.%d  %s", dv, dv,
             drv.cuda_version / 1000, drv.cuda_version % 1000 / 10, m->sim ? "(gpuplan mock)" : "(gpuplan)");
    printf("| %-87.87s |\n", title);
  }
  printf("|-----------------------------------------+------------------------+----------------------|\n");
  printf("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n");
  printf("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n");
  printf("|=========================================+========================+======================|\n");
  for (i = 0; i < m->ndev; i++) {
    gpuplan_device_info info;
    gpuplan_device_telemetry t;
    char name[40], temp[16] = "  N/A", perf[16] = "N/A", pwr[48] = "N/A", util[16] = "N/A", ecc[24] = "N/A";
    uint64_t used, others;
    if (gpuplan_backend_device_info(m->backend, i, c->cat, &info)) continue;
    snprintf(name, sizeof name, "%.28s", info.name);
    memory_of(m, i, &info, &used, &others);
    if (telemetry(m, i, &t)) {
      if (isfinite(t.temperature_c)) snprintf(temp, sizeof temp, "%3.0fC", t.temperature_c);
      if (t.pstate >= 0) snprintf(perf, sizeof perf, "P%d", t.pstate);
      if (isfinite(t.power_w) && isfinite(t.power_limit_w))
        snprintf(pwr, sizeof pwr, "%4.0fW / %4.0fW", t.power_w, t.power_limit_w);
      if (isfinite(t.gpu_util)) snprintf(util, sizeof util, "%3.0f%%", 100 * t.gpu_util);
      if (t.ecc_uncorrected >= 0) snprintf(ecc, sizeof ecc, "%lld", t.ecc_uncorrected);
    }
    printf("| %3d  %-28.28s  On   | %-17s  Off | %20s |\n", i, name, info.pci_bus_id, ecc);
    printf("| N/A  %5s  %-4s %22s | %7.0fMiB / %6.0fMiB | %7s      Default |\n", temp, perf, pwr,
           (double)used / MiB, (double)info.total_bytes / MiB, util);
    printf("+-----------------------------------------+------------------------+----------------------+\n");
  }
  printf("\n+-----------------------------------------------------------------------------------------+\n");
  printf("| Processes:                                                                              |\n");
  printf("|  GPU   PID   Type   Process name                                             GPU Memory |\n");
  printf("|=========================================================================================|\n");
  {
    int any = 0;
    for (i = 0; m->sim && i < m->ndev; i++) {
      gpuplan_mock_memory mem;
      gpuplan_mock_memory_info(m->sim, i, &mem);
      if (mem.others) {
        printf("|  %3d  %5d    C   %-56s %8.0fMiB |\n", i, 4242 + i, "python (a process outside this job)",
               (double)mem.others / MiB);
        any = 1;
      }
    }
    if (!any) printf("| %-87s |\n", m->sim ? " No running processes found" : " (process list: not read by this build)");
  }
  printf("+-----------------------------------------------------------------------------------------+\n");
}

/* --- --query-gpu=... --format=csv --------------------------------------------- */

typedef struct qfield {
  const char *name, *unit;
} qfield;

static const qfield qfields[] = {
  {"index", ""}, {"name", ""}, {"uuid", ""}, {"pci.bus_id", ""}, {"driver_version", ""},
  {"memory.total", "MiB"}, {"memory.used", "MiB"}, {"memory.free", "MiB"}, {"temperature.gpu", ""},
  {"utilization.gpu", "%"}, {"utilization.memory", "%"}, {"power.draw", "W"}, {"power.limit", "W"},
  {"clocks.sm", "MHz"}, {"clocks.max.sm", "MHz"}, {"pstate", ""},
  {"ecc.errors.uncorrected.volatile.total", ""}, {"ecc.errors.corrected.volatile.total", ""},
  {"clocks_throttle_reasons.active", ""}, {"compute_cap", ""}, {"gpuplan.sku", ""}, {NULL, NULL}};

static const qfield *qfind(const char *n) {
  int i;
  for (i = 0; qfields[i].name; i++)
    if (strcmp(qfields[i].name, n) == 0) return &qfields[i];
  return NULL;
}

static int smi_query(cli *c, machine *m, const char *fields, const char *format) {
  char list[512], *tok, *next;
  const qfield *q[32];
  int nq = 0, i, k, header = 1, units = 1;
  if (!format || strncmp(format, "csv", 3) != 0)
    return cli_fail(c, EXIT_USAGE, "smi: --query-gpu needs --format=csv[,noheader][,nounits]");
  header = strstr(format, "noheader") == NULL;
  units = strstr(format, "nounits") == NULL;
  snprintf(list, sizeof list, "%s", fields);
  for (tok = list; tok; tok = next) {
    next = strchr(tok, ',');
    if (next) *next++ = '\0';
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    if (nq == 32) return cli_fail(c, EXIT_USAGE, "smi: at most 32 fields");
    if (!(q[nq] = qfind(tok))) {
      char known[1024] = "";
      for (k = 0; qfields[k].name; k++) {
        strncat(known, k ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, qfields[k].name, sizeof known - strlen(known) - 1);
      }
      return cli_fail(c, EXIT_USAGE, "smi: field '%s' is not known; known fields: %s", tok, known);
    }
    nq++;
  }
  if (header) {
    for (k = 0; k < nq; k++)
      printf("%s%s%s%s%s", k ? ", " : "", q[k]->name, units && *q[k]->unit ? " [" : "", units ? q[k]->unit : "",
             units && *q[k]->unit ? "]" : "");
    printf("\n");
  }
  for (i = 0; i < m->ndev; i++) {
    gpuplan_device_info info;
    gpuplan_device_telemetry t;
    gpuplan_mock_memory mem;
    uint64_t used, others;
    char dv[32];
    int tel;
    if (gpuplan_backend_device_info(m->backend, i, c->cat, &info)) continue;
    memory_of(m, i, &info, &used, &others);
    memset(&mem, 0, sizeof mem);
    mem.total = info.total_bytes;
    mem.used = used;
    mem.free = info.free_bytes;
    tel = telemetry(m, i, &t);
    driver_string(m, dv, sizeof dv);
    for (k = 0; k < nq; k++) {
      const char *n = q[k]->name;
      const char *u = units ? q[k]->unit : "";
      const char *sp = units && *u ? " " : "";
      if (k) printf(", ");
      if (!strcmp(n, "index")) printf("%d", i);
      else if (!strcmp(n, "name")) printf("%s", info.name);
      else if (!strcmp(n, "uuid")) printf("%s", info.uuid);
      else if (!strcmp(n, "pci.bus_id")) printf("%s", info.pci_bus_id);
      else if (!strcmp(n, "driver_version")) printf("%s", dv);
      else if (!strcmp(n, "memory.total")) printf("%.0f%s%s", (double)mem.total / MiB, sp, u);
      else if (!strcmp(n, "memory.used")) printf("%.0f%s%s", (double)mem.used / MiB, sp, u);
      else if (!strcmp(n, "memory.free")) printf("%.0f%s%s", (double)mem.free / MiB, sp, u);
      else if (!strcmp(n, "compute_cap")) printf("%d.%d", info.cc_major, info.cc_minor);
      else if (!strcmp(n, "gpuplan.sku")) printf("%s", info.sku ? info.sku->id : "[unknown]");
      else if (!strcmp(n, "clocks.max.sm"))
        printf("%d%s%s", tel && t.max_sm_clock_mhz > 0 ? t.max_sm_clock_mhz : info.clock_mhz, sp, u);
      else if (!tel) printf("[N/A]");
      /* a field this card or driver does not report: [N/A], as nvidia-smi */
#define REAL(v, fmt, x) else if (!strcmp(n, v)) { if (isfinite(x)) printf(fmt "%s%s", x, sp, u); else printf("[N/A]"); }
#define INT(v, fmt, x) else if (!strcmp(n, v)) { if ((x) >= 0) printf(fmt "%s%s", x, sp, u); else printf("[N/A]"); }
      REAL("temperature.gpu", "%.0f", t.temperature_c)
      REAL("utilization.gpu", "%.0f", 100 * t.gpu_util)
      REAL("utilization.memory", "%.0f", 100 * t.mem_util)
      REAL("power.draw", "%.2f", t.power_w)
      REAL("power.limit", "%.2f", t.power_limit_w)
      INT("clocks.sm", "%d", t.sm_clock_mhz)
      INT("pstate", "P%d", t.pstate)
      INT("ecc.errors.uncorrected.volatile.total", "%lld", t.ecc_uncorrected)
      INT("ecc.errors.corrected.volatile.total", "%lld", t.ecc_corrected)
      else if (!strcmp(n, "clocks_throttle_reasons.active")) {
        if (t.throttle >= 0) printf("0x%016llx", (unsigned long long)t.throttle);
        else printf("[N/A]");
      }
#undef REAL
#undef INT
    }
    printf("\n");
  }
  return EXIT_OK;
}

/* --- topo -m and dmon ------------------------------------------------------------ */

static void smi_topo(machine *m) {
  int i, k;
  printf("       ");
  for (k = 0; k < m->ndev; k++) printf(" GPU%-3d", k);
  printf("\n");
  for (i = 0; i < m->ndev; i++) {
    printf("GPU%-3d ", i);
    for (k = 0; k < m->ndev; k++) {
      gpuplan_device_telemetry a, b;
      if (i == k) {
        printf("  X    ");
        continue;
      }
      if (!telemetry(m, i, &a)) a.nvlink_up = 0;
      if (!telemetry(m, k, &b)) b.nvlink_up = 0;
      if (a.nvlink_up > 0 && b.nvlink_up > 0) printf(" NV%-4d", a.nvlink_up < b.nvlink_up ? a.nvlink_up : b.nvlink_up);
      else printf(" PHB   ");
    }
    printf("\n");
  }
  printf("\nLegend:\n\n  X    = Self\n  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
         "  NV#  = Connection traversing a bonded set of # NVLinks\n");
}

static void smi_dmon(machine *m, int count) {
  int s, i;
  printf("# gpu    pwr  gtemp     sm    mem   mclk   pclk\n# Idx      W      C      %%      %%    MHz    MHz\n");
  for (s = 0; s < count; s++) {
    if (s && !m->sim) {
      struct timespec one = {1, 0};
      nanosleep(&one, NULL); /* a real device: one sample a second */
    }
    for (i = 0; i < m->ndev; i++) {
      gpuplan_device_telemetry t;
      if (m->sim) gpuplan_mock_run(m->sim, i, 1.0, 0.95, NULL); /* one simulated second */
      if (!telemetry(m, i, &t)) continue;
      printf("  %3d  %5.0f  %5.0f  %5.0f  %5.0f  %5d  %5d\n", i, t.power_w, t.temperature_c, 100 * t.gpu_util,
             100 * t.mem_util, 1593, t.sm_clock_mhz);
    }
  }
}

/* --- argument parsing shared by smi and doctor ------------------------------------- */

static int common_opt(cli *c, int argc, char **argv, int *i, smi_opts *o, const char *cmd) {
  const char *a = argv[*i];
  if (!strcmp(a, "--sim") || !strcmp(a, "--fault") || !strcmp(a, "--load") || !strcmp(a, "--busy") ||
      !strcmp(a, "--torch-cuda") || !strcmp(a, "--mem")) {
    const char *v;
    char *end;
    if (*i + 1 >= argc) return cli_fail(c, EXIT_USAGE, "%s: %s needs a value", cmd, a);
    v = argv[++*i];
    if (!strcmp(a, "--sim")) o->sim = v;
    else if (!strcmp(a, "--fault")) {
      if (o->nfaults == 16) return cli_fail(c, EXIT_USAGE, "%s: at most 16 faults", cmd);
      o->faults[o->nfaults++] = v;
    } else {
      double x = strtod(v, &end);
      if (*end || !(x >= 0)) return cli_fail(c, EXIT_USAGE, "%s: %s '%s' is not a number >= 0", cmd, a, v);
      if (!strcmp(a, "--load")) {
        if (x > 1e6) return cli_fail(c, EXIT_USAGE, "%s: --load at most 1e6 seconds", cmd);
        o->load_s = x;
      } else if (!strcmp(a, "--busy") || !strcmp(a, "--mem")) {
        if (x > 1) return cli_fail(c, EXIT_USAGE, "%s: %s is a fraction in 0..1", cmd, a);
        if (!strcmp(a, "--busy")) o->busy = x;
        else o->mem_used = x;
      } else {
        o->torch_cuda = x;
      }
    }
    return 1;
  }
  return 0;
}

static const char smi_usage[] =
    "usage: gpuplan smi [--sim SKU[:N] [--fault NAME[@GPU]]... [--load SECONDS] [--busy F]]\n"
    "                   [--query-gpu=FIELD,... --format=csv[,noheader][,nounits]] [topo -m] [dmon [-c N]]\n"
    "\n"
    "The nvidia-smi view of this machine's GPUs (through the CUDA driver, loaded at\n"
    "run time) or of simulated ones.  Without a driver it says so, as nvidia-smi does.\n"
    "\n"
    "  --sim SKU[:N]      N mock GPUs of a catalog SKU (e.g. a100-80gb:8)\n"
    "  --fault NAME[@GPU] inject a fault (all GPUs without @): oom, cuda-mismatch,\n"
    "                     gpu-not-found, ecc, thermal, data-starvation, nvlink-down\n"
    "  --load SECONDS     simulated training load before the view [600]\n"
    "  --busy F           fraction of the time the GPU is busy when fed [0.95]\n"
    "  --mem F            fraction of the free memory the job's PyTorch cache holds [0.87]\n"
    "  --query-gpu=...    fields as nvidia-smi: index, name, uuid, pci.bus_id, driver_version,\n"
    "                     memory.total/used/free, temperature.gpu, utilization.gpu/memory,\n"
    "                     power.draw/limit, clocks.sm, clocks.max.sm, pstate, compute_cap,\n"
    "                     ecc.errors.(un)corrected.volatile.total, clocks_throttle_reasons.active,\n"
    "                     gpuplan.sku (the catalog SKU the device matches)\n"
    "  topo -m            the GPU interconnect matrix (NV# or PHB)\n"
    "  dmon [-c N]        N one-second samples of power, temperature, utilisation, clocks [5]\n";

int cmd_smi(cli *c, int argc, char **argv) {
  smi_opts o;
  machine m;
  const char *query = NULL, *format = NULL;
  int topo = 0, dmon = 0, count = 5, i, rc;
  smi_defaults(&o);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) {
      fputs(smi_usage, stdout);
      return EXIT_OK;
    }
    if ((rc = common_opt(c, argc, argv, &i, &o, "smi"))) {
      if (rc != 1) return rc;
    } else if (!strncmp(a, "--query-gpu=", 12)) query = a + 12;
    else if (!strncmp(a, "--format=", 9)) format = a + 9;
    else if (!strcmp(a, "topo")) topo = 1;
    else if (!strcmp(a, "-m") && topo) continue;
    else if (!strcmp(a, "dmon")) dmon = 1;
    else if (!strcmp(a, "-c") && dmon && i + 1 < argc) {
      count = atoi(argv[++i]);
      if (count < 1 || count > 3600) return cli_fail(c, EXIT_USAGE, "smi: dmon -c takes 1..3600");
    } else if (!strcmp(a, "-s") && dmon && i + 1 < argc) i++; /* dmon -s u: the columns shown are fixed */
    else return cli_fail(c, EXIT_USAGE, "smi: unexpected argument '%s' (see gpuplan smi --help)", a);
  }
  if ((rc = machine_open(c, &o, &m))) return rc;
  if (!m.backend || m.open_rc) {
    /* nvidia-smi's own words when the driver is missing or broken */
    if (m.sim || m.open_rc == GPUPLAN_EUNSUPPORTED)
      fprintf(stderr, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                      "that the latest NVIDIA driver is installed and running.\n");
    if (!m.sim) fprintf(stderr, "gpuplan: %s\n", m.open_msg);
    machine_close(&m);
    return 9; /* nvidia-smi's exit status when the driver is not loaded */
  }
  if ((dmon || topo) && !m.sim) {
    gpuplan_device_telemetry t;
    if (m.ndev > 0 && gpuplan_backend_telemetry(m.backend, 0, &t) != GPUPLAN_OK) {
      rc = cli_fail(c, EXIT_RUNTIME, "smi: %s", gpuplan_errmsg(c->ctx));
      machine_close(&m);
      return rc;
    }
  }
  if (query) rc = smi_query(c, &m, query, format);
  else if (topo) smi_topo(&m);
  else if (dmon) smi_dmon(&m, count);
  else smi_table(c, &m);
  machine_close(&m);
  return rc;
}

/* --- doctor ------------------------------------------------------------------------- */

typedef struct report {
  int fails, warns;
} report;

static void finding(report *r, const char *level, const char *what, const char *fix) {
  printf("[%s] %s\n", level, what);
  if (fix) printf("       fix: %s\n", fix);
  if (!strcmp(level, "FAIL")) r->fails++;
  else if (!strcmp(level, "WARN")) r->warns++;
}

static const char doctor_usage[] =
    "usage: gpuplan doctor [--sim SKU[:N] [--fault NAME[@GPU]]... [--load SECONDS]] [--torch-cuda X.Y]\n"
    "\n"
    "Check a GPU environment and print findings with fixes: driver present,\n"
    "driver vs the framework's CUDA runtime, devices visible, ECC, NVLink,\n"
    "throttling, utilisation, other processes holding memory.  On this machine\n"
    "through the CUDA driver, or on simulated GPUs with injected faults.\n"
    "Exit status 0 when nothing fails, 1 otherwise.\n"
    "\n"
    "  --torch-cuda X.Y   the CUDA runtime the framework was built with [12.1]\n";

/* The step-time cost of losing NVLink, from the performance model: a
 * reference job (Llama-2-13B, tensor parallel across the node's GPUs, 256
 * sequences per step) with the SKU's NVLink vs with PCIe. */
static int nvlink_impact(cli *c, const gpuplan_gpu *g, int ngpu, double *with_s, double *without_s, int *tp_out) {
  const gpuplan_model *mdl;
  const gpuplan_fabric *pcie;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_cluster cl;
  gpuplan_perf a, b;
  char fab[16];
  int tp = ngpu >= 8 ? 8 : ngpu >= 4 ? 4 : ngpu >= 2 ? 2 : 1;
  if (tp < 2 || gpuplan_catalog_model(c->cat, "llama-2-13b", &mdl)) return -1;
  snprintf(fab, sizeof fab, "pcie%d", isfinite(g->pcie_gen) ? (int)g->pcie_gen : 4);
  if (gpuplan_catalog_fabric(c->cat, fab, &pcie)) return -1;
  o.tp = tp;
  o.sequence_parallel = 1;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  if (gpuplan_cluster_default(c->ctx, c->cat, g, tp, tp, &cl)) return -1;
  if (gpuplan_perf_eval(c->ctx, mdl, &cl, &o, 256, 0, NULL, &a)) return -1;
  cl.intra_bw_bytes_s = pcie->bw_bytes_s;
  cl.intra_latency_s = pcie->latency_s;
  cl.intra_name = "pcie";
  if (gpuplan_perf_eval(c->ctx, mdl, &cl, &o, 256, 0, NULL, &b)) return -1;
  *with_s = a.step_s;
  *without_s = b.step_s;
  *tp_out = tp;
  return 0;
}

int cmd_doctor(cli *c, int argc, char **argv) {
  smi_opts o;
  machine m;
  report r = {0, 0};
  gpuplan_driver_info drv;
  char buf[1024];
  int i, rc;
  smi_defaults(&o);
  for (i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) {
      fputs(doctor_usage, stdout);
      return EXIT_OK;
    }
    if ((rc = common_opt(c, argc, argv, &i, &o, "doctor"))) {
      if (rc != 1) return rc;
    } else {
      return cli_fail(c, EXIT_USAGE, "doctor: unexpected argument '%s' (see gpuplan doctor --help)", argv[i]);
    }
  }
  if ((rc = machine_open(c, &o, &m))) return rc;
  printf("gpuplan doctor: %s\n\n", m.sim ? "simulated GPUs" : "this machine");
  /* 1. the driver */
  if (!m.backend || m.open_rc || gpuplan_backend_driver(m.backend, &drv)) {
    snprintf(buf, sizeof buf, "no working NVIDIA driver: %s",
             m.open_msg[0] ? m.open_msg : gpuplan_errmsg(c->ctx));
    finding(&r, "FAIL", buf,
            "check the VM size has a GPU (ND/NC series), the NVIDIA driver VM extension or package is installed "
            "(lsmod | grep nvidia; dmesg | grep -i nvrm), reboot after a kernel update, reinstall the driver; in "
            "containers run with --gpus all (NVIDIA container toolkit)");
    machine_close(&m);
    printf("\n%d failure(s), %d warning(s)\n", r.fails, r.warns);
    return EXIT_RUNTIME;
  }
  snprintf(buf, sizeof buf, "driver present (%s), supports CUDA up to %d.%d", drv.library, drv.cuda_version / 1000,
           drv.cuda_version % 1000 / 10);
  finding(&r, "ok", buf, NULL);
  /* 2. driver vs runtime: versions as the driver encodes them, 12.2 = 12020 */
  if ((int)floor(o.torch_cuda) * 1000 + (int)floor((o.torch_cuda - floor(o.torch_cuda)) * 10 + 0.5) * 10 >
      drv.cuda_version) {
    snprintf(buf, sizeof buf,
             "the framework's CUDA runtime %.1f is newer than the driver supports (%d.%d): \"CUDA driver version "
             "is insufficient for CUDA runtime version\"", o.torch_cuda, drv.cuda_version / 1000,
             drv.cuda_version % 1000 / 10);
    finding(&r, "FAIL", buf, "update the driver, or use a framework build for an older CUDA, or an NGC container "
                             "(nvcr.io/nvidia/pytorch) whose CUDA the driver supports");
  } else {
    snprintf(buf, sizeof buf, "framework CUDA runtime %.1f <= driver's CUDA %d.%d", o.torch_cuda,
             drv.cuda_version / 1000, drv.cuda_version % 1000 / 10);
    finding(&r, "ok", buf, NULL);
  }
  /* 3. devices */
  if (m.ndev < 1) finding(&r, "FAIL", "the driver sees no GPU", "check CUDA_VISIBLE_DEVICES and the VM size");
  for (i = 0; i < m.ndev; i++) {
    gpuplan_device_info info;
    gpuplan_device_telemetry t;
    const char *msg = NULL;
    uint64_t used, others;
    int tel;
    if (gpuplan_backend_device_info(m.backend, i, c->cat, &info)) continue;
    snprintf(buf, sizeof buf, "GPU %d: %s, %.0f MiB, compute capability %d.%d%s%s", i, info.name,
             (double)info.total_bytes / MiB, info.cc_major, info.cc_minor, info.sku ? ", catalog " : "",
             info.sku ? info.sku->id : "");
    finding(&r, "ok", buf, NULL);
    tel = gpuplan_backend_telemetry(m.backend, i, &t) == GPUPLAN_OK;
    if (!tel && i == 0) {
      snprintf(buf, sizeof buf, "no telemetry (%s): ECC, NVLink and throttling not checked", gpuplan_errmsg(c->ctx));
      finding(&r, "WARN", buf, "install the NVIDIA driver's NVML (libnvidia-ml.so.1), part of every driver package");
    }
    /* a mock device: a short probe run shows what the framework would print */
    if (m.sim && gpuplan_mock_run(m.sim, i, 0.0, 0.95, &msg) != GPUPLAN_OK && msg &&
        gpuplan_mock_has_fault(m.sim, i, GPUPLAN_FAULT_CUDA_MISMATCH)) {
      snprintf(buf, sizeof buf, "GPU %d: %s: the framework has no kernels for compute capability %d.%d", i, msg,
               info.cc_major, info.cc_minor);
      finding(&r, "FAIL", buf,
              "collect the three versions (nvidia-smi, nvcc --version, python -c \"import torch; "
              "print(torch.version.cuda, torch.cuda.get_arch_list())\"); install a build whose arch list includes "
              "this GPU, or use a known-good NGC container");
    }
    if (tel && t.ecc_uncorrected > 0) {
      snprintf(buf, sizeof buf,
               "GPU %d: %lld uncorrected ECC errors (volatile); jobs fail with \"RuntimeError: CUDA error: "
               "uncorrectable ECC error encountered\"", i, t.ecc_uncorrected);
      finding(&r, "FAIL", buf,
              "drain the node (scontrol update nodename=... state=drain), check nvidia-smi -q -d ECC and page "
              "retirement; in the cloud open a ticket for host replacement; count on downtime");
    }
    if (tel && t.nvlink_links > 0 && t.nvlink_up == 0) {
      double w, wo;
      int tp;
      snprintf(buf, sizeof buf,
               "GPU %d: NVLink not detected (0 of %d links up): topo -m shows PHB, tensor-parallel traffic goes over "
               "PCIe", i, t.nvlink_links);
      finding(&r, "FAIL", buf,
              "check the VM series (ND has NVLink/NVSwitch, NC and NV do not), nvidia-smi nvlink -s, and the "
              "fabric manager (systemctl status nvidia-fabricmanager) on NVSwitch systems; keep tp within one "
              "NVLink domain (gpuplan topo --layout)");
      if (info.sku && nvlink_impact(c, info.sku, m.ndev, &w, &wo, &tp) == 0) {
        snprintf(buf, sizeof buf,
                 "GPU %d: the cost, by the performance model: Llama-2-13B with tp %d, 256 sequences per step, "
                 "%.2f s per step on NVLink, %.2f s on PCIe (%.0f%% slower)", i, tp, w, wo, 100 * (wo / w - 1));
        finding(&r, "info", buf, NULL);
      }
    }
    if (tel && t.throttle > 0 && (t.throttle & (GPUPLAN_THROTTLE_SW_THERMAL | GPUPLAN_THROTTLE_HW_SLOWDOWN |
                                               GPUPLAN_THROTTLE_HW_THERMAL))) {
      double slower = t.sm_clock_mhz > 0 && t.max_sm_clock_mhz > 0
                          ? 100.0 * ((double)t.max_sm_clock_mhz / t.sm_clock_mhz - 1) : NAN;
      if (m.sim) {
        gpuplan_mock_telemetry st;
        gpuplan_mock_telemetry_read(m.sim, i, &st);
        slower = 100 * (1 / st.speed - 1);
      }
      snprintf(buf, sizeof buf, "GPU %d: thermal throttling: %.0f C, P%d, SM clock %d of %d MHz (steps %.0f%% slower)",
               i, t.temperature_c, t.pstate, t.sm_clock_mhz, t.max_sm_clock_mhz, slower);
      finding(&r, "FAIL", buf,
              "check inlet temperature and fans (nvidia-smi -q -d TEMPERATURE,PERFORMANCE); in the cloud this "
              "is a ticket for the provider; meanwhile drain the node from tightly coupled jobs");
    }
    if (m.sim && tel && o.load_s > 0 && t.gpu_util > 0 && t.gpu_util < 0.5) {
      snprintf(buf, sizeof buf, "GPU %d: utilisation %.0f%% under a training load: the input pipeline starves the GPU",
               i, 100 * t.gpu_util);
      finding(&r, "FAIL", buf,
              "raise DataLoader num_workers, pin_memory=True, cache the dataset on local NVMe, use a streaming "
              "format (WebDataset, MDS), prefetch; profile with torch.profiler to confirm");
    }
    memory_of(&m, i, &info, &used, &others);
    if (m.sim && others > info.total_bytes / 10) {
      snprintf(buf, sizeof buf,
               "GPU %d: other processes hold %.0f MiB of %.0f MiB: this job will hit CUDA out of memory", i,
               (double)others / MiB, (double)info.total_bytes / MiB);
      finding(&r, "FAIL", buf,
              "find them (nvidia-smi --query-compute-apps=pid,used_memory --format=csv), stop leftover ranks and "
              "notebook kernels; then size the job with gpuplan plan (the fix ladder: micro-batch, checkpointing, "
              "ZeRO, bf16, bigger GPU)");
    } else if (!m.sim && used > info.total_bytes / 10) {
      snprintf(buf, sizeof buf, "GPU %d: %.0f MiB already in use before this job", i, (double)used / MiB);
      finding(&r, "WARN", buf, "list processes with nvidia-smi; stop leftover jobs or notebook kernels");
    }
  }
  machine_close(&m);
  printf("\n%d failure(s), %d warning(s)\n", r.fails, r.warns);
  return r.fails ? EXIT_RUNTIME : EXIT_OK;
}
