/*
 * metrics.c: an smi document as Prometheus' text exposition, with DCGM
 * Exporter's metric names and labels (dcgm-exporter's default-counters.csv
 * and dcp-metrics-included.csv), so that its dashboards and alert rules
 * work on gpuplan's mock GPUs and on machines without DCGM.
 *
 * The profiling fields (DCGM_FI_PROF_*) need DCGM's profiling module on a
 * real GPU; for mock GPUs they come from the mock's utilisation with these
 * assumptions (a training job's typical ratios, not measurements): the
 * graphics engine is active whenever a kernel runs, SMs are active 90% of
 * that time at 40% occupancy, tensor cores 45%, DRAM as memory utilisation.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/internal.h"
#include "gpuplan/backend.h"

typedef struct metric {
  const char *name, *type, *help; /* type as DCGM Exporter declares it */
  const char *path;               /* in gpus[], or NULL for a computed value */
  double scale;
  int mock_only;                  /* DCGM_FI_PROF_*: a model of the profiling counters */
} metric;

static const metric metrics[] = {
  {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "clocks.sm_mhz", 1, 0},
  {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "clocks.mem_mhz", 1, 0},
  {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "temperature.memory_c", 1, 0},
  {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temperature.gpu_c", 1, 0},
  {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power.draw_w", 1, 0},
  {"DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge", "Power management limit (in W).", "power.limit_w", 1, 0},
  {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
   "power.energy_j", 1000, 0},
  {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "pcie.replays", 1, 0},
  {"DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe link generation.", "pcie.gen", 1, 0},
  {"DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe link width.", "pcie.width", 1, 0},
  {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "utilization.gpu", 100, 0},
  {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "utilization.memory", 100, 0},
  {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", "utilization.encoder", 100, 0},
  {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", "utilization.decoder", 100, 0},
  {"DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed (in %).", "fan_speed", 100, 0},
  {"DCGM_FI_DEV_PSTATE", "gauge", "Performance state (0 full speed, 8 idle).", "pstate", 1, 0},
  {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons (a bit mask).",
   "throttle.bits", 1, 0},
  {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "xid", 1, 0},
  {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "memory.free_bytes", 1.0 / 1048576, 0},
  {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "memory.used_bytes", 1.0 / 1048576, 0},
  {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", "memory.reserved_bytes",
   1.0 / 1048576, 0},
  {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.",
   "ecc.volatile_corrected", 1, 0},
  {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
   "ecc.volatile_uncorrected", 1, 0},
  {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.",
   "ecc.aggregate_corrected", 1, 0},
  {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.",
   "ecc.aggregate_uncorrected", 1, 0},
  {"DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors.",
   "ecc.retired_sbe", 1, 0},
  {"DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors.",
   "ecc.retired_dbe", 1, 0},
  {"DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", "ecc.retired_pending",
   1, 0},
  {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors",
   "ecc.remapped_uncorrectable", 1, 0},
  {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors",
   "ecc.remapped_correctable", 1, 0},
  {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", "ecc.remap_failure", 1, 0},
  {"DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether a row remapping waits for a GPU reset", "ecc.remap_pending",
   1, 0},
  {"DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in us).",
   "throttle.thermal_violation_s", 1e6, 0},
  {"DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us).",
   "power.violation_s", 1e6, 0},
  {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes.",
   "nvlink.bytes", 1, 0},
  {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "utilization.gpu",
   1, 1},
  {"DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned.",
   "utilization.gpu", 0.9, 1},
  {"DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.", "utilization.gpu",
   0.36, 1},
  {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.",
   "utilization.gpu", 0.45, 1},
  {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
   "Ratio of cycles the device memory interface is active sending or receiving data.", "utilization.memory", 1, 1},
  {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both "
   "protocol headers and data payloads - in bytes per second.", "pcie.tx_bytes_s", 1, 1},
  {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both "
   "protocol headers and data payloads - in bytes per second.", "pcie.rx_bytes_s", 1, 1},
  /* gpuplan's own: what DCGM's default set does not say directly */
  {"gpuplan_nvlink_links", "gauge", "NVLink links the GPU has.", "nvlink.links", 1, 0},
  {"gpuplan_nvlink_links_up", "gauge", "NVLink links up.", "nvlink.up", 1, 0},
  {"gpuplan_gpu_lost", "gauge", "1 when the GPU fell off the bus (Xid 79).", "lost", 1, 0},
  {"gpuplan_memory_other_processes_bytes", "gauge",
   "Device memory held by processes other than the simulated job (mock GPUs).", NULL, 1, 1},
  {"gpuplan_job_steps_total", "counter", "Training steps the simulated job has done.", "job.steps", 1, 1},
  {"gpuplan_job_running", "gauge", "1 while the simulated job trains or checkpoints, 0 when it failed or idles.",
   NULL, 1, 1},
};

static void esc(gpuplan__buf *o, const char *s) {
  for (; s && *s; s++) {
    if (*s == '\\' || *s == '"') gpuplan__buf_put(o, "\\", 1);
    if (*s == '\n') {
      gpuplan__buf_puts(o, "\\n");
      continue;
    }
    gpuplan__buf_put(o, s, 1);
  }
}

static const char *str(const gpuplan_value *v, const char *path) {
  const char *s = gpuplan_value_string(gpuplan_value_path(v, path), NULL);
  return s ? s : "";
}

static void labels(gpuplan__buf *o, const gpuplan_value *root, const gpuplan_value *g, unsigned flags) {
  gpuplan__buf_printf(o, "{gpu=\"%lld\",UUID=\"", (long long)gpuplan_value_int(gpuplan_value_get(g, "index")));
  esc(o, str(g, "uuid"));
  gpuplan__buf_puts(o, "\",pci_bus_id=\"");
  esc(o, str(g, "pci_bus_id"));
  gpuplan__buf_printf(o, "\",device=\"nvidia%lld\",%s=\"", (long long)gpuplan_value_int(gpuplan_value_get(g, "index")),
                      flags & GPUPLAN_METRICS_DCGM_EXACT ? "modelName" : "model_name");
  esc(o, str(g, "name"));
  gpuplan__buf_puts(o, "\",Hostname=\"");
  esc(o, str(root, "hostname"));
  gpuplan__buf_puts(o, "\",DCGM_FI_DRIVER_VERSION=\"");
  esc(o, str(root, "driver.version"));
  gpuplan__buf_puts(o, "\"}");
}

static void number(gpuplan__buf *o, double v) {
  char buf[40];
  if (v == floor(v) && fabs(v) < 9e15) snprintf(buf, sizeof buf, "%.0f", v);
  else snprintf(buf, sizeof buf, "%.6g", v);
  gpuplan__buf_puts(o, buf);
}

/* The value of metric m for GPU g, or 0 when it has none. */
static int value(const metric *m, const gpuplan_value *g, double *out) {
  const gpuplan_value *v;
  if (!m->path) {
    if (!strcmp(m->name, "gpuplan_job_running")) {
      const char *st = str(g, "job.state");
      if (gpuplan_value_type_of(gpuplan_value_get(g, "job")) != GPUPLAN_VALUE_OBJECT) return 0;
      *out = !strcmp(st, "training") || !strcmp(st, "checkpoint") || !strcmp(st, "starting");
      return 1;
    } else {
      const gpuplan_value *ps = gpuplan_value_get(g, "processes");
      size_t i;
      double sum = 0;
      for (i = 0; i < gpuplan_value_count(ps); i++)
        if (!strcmp(str(gpuplan_value_at(ps, i), "role"), "other"))
          sum += gpuplan_value_real(gpuplan_value_get(gpuplan_value_at(ps, i), "used_bytes"));
      *out = sum;
      return 1;
    }
  }
  v = gpuplan_value_path(g, m->path);
  switch (gpuplan_value_type_of(v)) {
  case GPUPLAN_VALUE_INT:
  case GPUPLAN_VALUE_REAL: *out = gpuplan_value_real(v) * m->scale; break;
  case GPUPLAN_VALUE_BOOL: *out = gpuplan_value_bool(v); break;
  default: return 0;
  }
  if (m->scale != 1 && m->scale < 1 && m->scale > 1e-3) *out = floor(*out * 1000 + 0.5) / 1000;
  if (!strncmp(m->name, "DCGM_FI_DEV_FB_", 15)) *out = floor(*out + 0.5);
  if (!strcmp(m->name, "DCGM_FI_DEV_GPU_TEMP") || !strcmp(m->name, "DCGM_FI_DEV_MEMORY_TEMP") ||
      !strcmp(m->name, "DCGM_FI_DEV_GPU_UTIL") || !strcmp(m->name, "DCGM_FI_DEV_MEM_COPY_UTIL"))
    *out = floor(*out + 0.5); /* DCGM reports whole degrees and percent */
  return 1;
}

int gpuplan_devices_metrics(gpuplan_ctx *ctx, const gpuplan_doc *smi, const gpuplan_doc *doctor, unsigned flags,
                            char **text_out, size_t *len_out) {
  const gpuplan_value *root, *gpus;
  gpuplan__buf o;
  size_t k, i, n;
  int mock;
  if (!text_out) return GPUPLAN_EMISUSE;
  *text_out = NULL;
  if (len_out) *len_out = 0;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!smi || strcmp(gpuplan_doc_kind(smi), "smi") != 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "metrics: the first document is not an smi document");
  if (doctor && strcmp(gpuplan_doc_kind(doctor), "doctor") != 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "metrics: the second document is not a doctor document");
  root = gpuplan_doc_root(smi);
  gpus = gpuplan_value_get(root, "gpus");
  n = gpuplan_value_count(gpus);
  mock = !strcmp(str(root, "source"), "mock");
  gpuplan__buf_init(&o, ctx);
  for (k = 0; k < sizeof metrics / sizeof metrics[0]; k++) {
    const metric *m = &metrics[k];
    const char *type = m->type;
    int any = 0;
    double v;
    if (m->mock_only && !mock) continue;
    /* promtool's linter refuses a name with a type in it: exact mode only */
    if (!strcmp(m->name, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER") && !(flags & GPUPLAN_METRICS_DCGM_EXACT)) continue;
    if (!strcmp(type, "counter") && !strncmp(m->name, "DCGM_", 5) && !(flags & GPUPLAN_METRICS_DCGM_EXACT))
      type = "untyped"; /* promtool's linter wants counters named *_total */
    for (i = 0; i < n; i++) {
      const gpuplan_value *g = gpuplan_value_at(gpus, i);
      int lost = gpuplan_value_bool(gpuplan_value_get(g, "lost"));
      if (lost && strcmp(m->name, "DCGM_FI_DEV_XID_ERRORS") && strcmp(m->name, "gpuplan_gpu_lost")) continue;
      if (!value(m, g, &v)) continue;
      if (!any) {
        gpuplan__buf_printf(&o, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, type);
        any = 1;
      }
      gpuplan__buf_puts(&o, m->name);
      labels(&o, root, g, flags);
      gpuplan__buf_put(&o, " ", 1);
      number(&o, v);
      gpuplan__buf_put(&o, "\n", 1);
    }
  }
  /* the node */
  gpuplan__buf_puts(&o, "# HELP gpuplan_gpus_attached GPUs the driver sees.\n# TYPE gpuplan_gpus_attached gauge\n");
  gpuplan__buf_puts(&o, "gpuplan_gpus_attached{Hostname=\"");
  esc(&o, str(root, "hostname"));
  gpuplan__buf_printf(&o, "\"} %lld\n", (long long)gpuplan_value_int(gpuplan_value_get(root, "attached_gpus")));
  gpuplan__buf_puts(&o, "# HELP gpuplan_driver_up 1 when the NVIDIA driver answers.\n# TYPE gpuplan_driver_up gauge\n");
  gpuplan__buf_puts(&o, "gpuplan_driver_up{Hostname=\"");
  esc(&o, str(root, "hostname"));
  gpuplan__buf_printf(&o, "\"} %d\n", gpuplan_value_bool(gpuplan_value_path(root, "driver.available")));
  if (doctor) {
    const gpuplan_value *d = gpuplan_doc_root(doctor), *fs = gpuplan_value_get(d, "findings");
    const char *seen[64];
    size_t ns = 0, j;
    gpuplan__buf_puts(&o, "# HELP gpuplan_doctor_check_failed 1 when gpuplan doctor's check fails on this "
                          "machine.\n# TYPE gpuplan_doctor_check_failed gauge\n");
    for (i = 0; i < gpuplan_value_count(fs); i++) {
      const char *check = str(gpuplan_value_at(fs, i), "check");
      int failed = 0;
      for (j = 0; j < ns && strcmp(seen[j], check); j++) {}
      if (j < ns || ns == 64) continue;
      seen[ns++] = check;
      for (j = i; j < gpuplan_value_count(fs); j++)
        if (!strcmp(str(gpuplan_value_at(fs, j), "check"), check) &&
            !strcmp(str(gpuplan_value_at(fs, j), "level"), "fail"))
          failed = 1;
      gpuplan__buf_puts(&o, "gpuplan_doctor_check_failed{Hostname=\"");
      esc(&o, str(root, "hostname"));
      gpuplan__buf_puts(&o, "\",check=\"");
      esc(&o, check);
      gpuplan__buf_printf(&o, "\"} %d\n", failed);
    }
  }
  if (o.failed || !o.ptr) {
    gpuplan__buf_dispose(&o);
    return gpuplan__nomem(ctx);
  }
  *text_out = o.ptr;
  if (len_out) *len_out = o.len;
  return GPUPLAN_OK;
}
