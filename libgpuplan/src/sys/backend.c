/*
 * backend.c: the device-backend wrapper, the CUDA driver backend (libcuda
 * loaded with dlopen: no build-time CUDA dependency), and matching a
 * device to its catalog SKU.
 *
 * The CUDA backend uses the driver API only: cuInit, cuDriverGetVersion,
 * cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetUuid_v2,
 * cuDeviceTotalMem_v2, cuDeviceGetAttribute, cuDevicePrimaryCtxRetain,
 * cuDevicePrimaryCtxRelease_v2, cuCtxSetCurrent, cuMemGetInfo_v2,
 * cuMemAlloc_v2, cuMemFree_v2, cuGetErrorName.  tests/fake/fake_cuda.c
 * implements exactly these.
 */
#define _DEFAULT_SOURCE 1 /* realpath */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "gpuplan/backend.h"

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define GPUPLAN_HAVE_DLOPEN 1
#endif

struct gpuplan_backend {
  gpuplan_ctx *ctx;
  const gpuplan_backend_ops *ops;
  void *self;
};

int gpuplan_backend_new(gpuplan_ctx *ctx, const gpuplan_backend_ops *ops, void *self, gpuplan_backend **out) {
  gpuplan_backend *b;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx || !ops) return GPUPLAN_EMISUSE;
  b = (gpuplan_backend *)gpuplan__calloc(ctx, 1, sizeof *b);
  if (!b) {
    if (ops->close) ops->close(self);
    return gpuplan__error(ctx, GPUPLAN_ENOMEM, "backend: out of memory");
  }
  b->ctx = ctx;
  b->ops = ops;
  b->self = self;
  *out = b;
  return GPUPLAN_OK;
}

void gpuplan_backend_free(gpuplan_backend *b) {
  if (!b) return;
  if (b->ops->close) b->ops->close(b->self);
  gpuplan__free(b->ctx, b);
}

const char *gpuplan_backend_kind(const gpuplan_backend *b) { return b ? b->ops->kind : NULL; }

int gpuplan_backend_driver(gpuplan_backend *b, gpuplan_driver_info *out) {
  if (!b || !out) return GPUPLAN_EMISUSE;
  memset(out, 0, sizeof *out);
  return b->ops->driver(b->self, out);
}

int gpuplan_backend_device_count(gpuplan_backend *b, int *n_out) {
  if (!b || !n_out) return GPUPLAN_EMISUSE;
  *n_out = 0;
  return b->ops->device_count(b->self, n_out);
}

int gpuplan_backend_device_info(gpuplan_backend *b, int dev, gpuplan_catalog *cat, gpuplan_device_info *out) {
  int rc;
  if (!b || !out) return GPUPLAN_EMISUSE;
  memset(out, 0, sizeof *out);
  if ((rc = b->ops->device_info(b->self, dev, out))) return rc;
  if (cat && gpuplan_catalog_match_device(cat, out->name, out->total_bytes, &out->sku) != GPUPLAN_OK)
    out->sku = NULL;
  gpuplan__clear(b->ctx);
  return GPUPLAN_OK;
}

int gpuplan_backend_telemetry(gpuplan_backend *b, int dev, gpuplan_device_telemetry *out) {
  if (!b || !out) return GPUPLAN_EMISUSE;
  memset(out, 0, sizeof *out);
  out->temperature_c = out->power_w = out->power_limit_w = out->gpu_util = out->mem_util = NAN;
  out->sm_clock_mhz = out->max_sm_clock_mhz = out->pstate = out->nvlink_links = out->nvlink_up = -1;
  out->throttle = out->ecc_uncorrected = out->ecc_corrected = -1;
  out->memory_temperature_c = out->slowdown_temp_c = out->shutdown_temp_c = out->fan_speed = NAN;
  out->mem_clock_mhz = out->max_mem_clock_mhz = out->graphics_clock_mhz = out->max_graphics_clock_mhz = -1;
  out->pcie_gen = out->pcie_gen_max = out->pcie_width = out->pcie_width_max = -1;
  out->persistence_mode = out->ecc_mode = out->compute_mode = out->mig_mode = -1;
  out->ecc_uncorrected_aggregate = out->ecc_corrected_aggregate = -1;
  out->retired_sbe = out->retired_dbe = out->remapped_correctable = out->remapped_uncorrectable = -1;
  out->retired_pending = out->remap_pending = out->remap_failure = -1;
  out->enc_util = out->dec_util = NAN;
  out->xid = -1;
  out->energy_j = out->nvlink_bytes = out->nvlink_link_gbps = NAN;
  out->pcie_rx_bytes_s = out->pcie_tx_bytes_s = NAN;
  out->pcie_replays = -1;
  out->power_violation_s = out->thermal_violation_s = NAN;
  out->numa_node = -1;
  if (!b->ops->telemetry)
    return gpuplan__error(b->ctx, GPUPLAN_EUNSUPPORTED, "telemetry: the %s backend has none", b->ops->kind);
  return b->ops->telemetry(b->self, dev, out);
}

int gpuplan_backend_processes(gpuplan_backend *b, int dev, gpuplan_device_process *out, size_t cap,
                              size_t *n_out) {
  if (!b || !n_out || (cap && !out)) return GPUPLAN_EMISUSE;
  *n_out = 0;
  if (!b->ops->processes)
    return gpuplan__error(b->ctx, GPUPLAN_EUNSUPPORTED, "processes: the %s backend has no process list",
                          b->ops->kind);
  return b->ops->processes(b->self, dev, out, cap, n_out);
}

int gpuplan_backend_link(gpuplan_backend *b, int a, int b_dev, gpuplan_device_link *out) {
  gpuplan_device_telemetry ta, tb;
  int n = 0, rc;
  if (!b || !out) return GPUPLAN_EMISUSE;
  memset(out, 0, sizeof *out);
  if (b->ops->link) return b->ops->link(b->self, a, b_dev, out);
  /* without a topology: NVLink as both ends report it, else the host bridge */
  if ((rc = gpuplan_backend_device_count(b, &n))) return rc;
  if (a < 0 || a >= n || b_dev < 0 || b_dev >= n)
    return gpuplan__error(b->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", a < 0 || a >= n ? a : b_dev, n - 1);
  snprintf(out->pcie, sizeof out->pcie, "%s", a == b_dev ? "X" : "PHB");
  if (a == b_dev) return GPUPLAN_OK;
  if ((rc = gpuplan_backend_telemetry(b, a, &ta)) || (rc = gpuplan_backend_telemetry(b, b_dev, &tb))) return rc;
  if (ta.nvlink_up > 0 && tb.nvlink_up > 0) out->nvlinks = ta.nvlink_up < tb.nvlink_up ? ta.nvlink_up : tb.nvlink_up;
  return GPUPLAN_OK;
}

int gpuplan_backend_device_memory(gpuplan_backend *b, int dev, const gpuplan_device_ops **out) {
  if (!b || !out) return GPUPLAN_EMISUSE;
  *out = NULL;
  return b->ops->device_memory(b->self, dev, out);
}

/* --- matching a device name to a catalog SKU ------------------------------- */

/* Lower-case alphanumerics only: "NVIDIA A100-SXM4-40GB" -> "nvidiaa100sxm440gb". */
static void squash(const char *s, char *out, size_t cap) {
  size_t n = 0;
  for (; s && *s && n + 1 < cap; s++)
    if (isalnum((unsigned char)*s)) out[n++] = (char)tolower((unsigned char)*s);
  out[n] = '\0';
}

int gpuplan_catalog_match_device(gpuplan_catalog *cat, const char *name, uint64_t total_bytes,
                                 const gpuplan_gpu **out) {
  /* Family tokens, most specific first, as the driver spells device names. */
  static const char *const families[] = {"gb200", "b200", "b100", "h200", "h100", "a100", "l40s", "l40",
                                         "a10g", "a10", "l4", "t4", "v100", "rtx4090", "4090", NULL};
  char dev[160], id[160], nm[160];
  const char *fam = NULL;
  size_t i, n;
  const gpuplan_gpu *best = NULL;
  double best_score = 0;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!cat || !name) return GPUPLAN_EMISUSE;
  squash(name, dev, sizeof dev);
  for (i = 0; families[i]; i++)
    if (strstr(dev, families[i])) {
      fam = families[i];
      break;
    }
  if (!fam) return GPUPLAN_ENOTFOUND;
  n = gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU);
  for (i = 0; i < n; i++) {
    const gpuplan_gpu *g = (const gpuplan_gpu *)gpuplan_catalog_at(cat, GPUPLAN_KIND_GPU, i);
    double score, diff;
    squash(g->id, id, sizeof id);
    squash(g->name, nm, sizeof nm);
    {
      /* the family must not run into a digit: "a10" is not "a100", "l4" not "l40s" */
      const char *p = strstr(id, fam);
      if (!p) p = strstr(nm, fam);
      if (!p || isdigit((unsigned char)p[strlen(fam)])) continue;
    }
    /* memory closest (the driver reports a little less than the label) */
    diff = total_bytes ? (double)g->memory_bytes - (double)total_bytes : 0;
    if (diff < 0) diff = -diff;
    score = 1.0 / (1.0 + diff / 1e9);
    /* form factor named in the device string: SXM, PCIe, NVL */
    if (g->form_factor) {
      char ff[32];
      squash(g->form_factor, ff, sizeof ff);
      if (ff[0] && strstr(dev, ff)) score += 0.5;
      else if (strstr(dev, "pcie") && !strstr(ff, "pcie")) score -= 0.5;
      else if (!strstr(dev, "pcie") && strstr(ff, "pcie")) score -= 0.25;
    }
    if (!best || score > best_score) {
      best = g;
      best_score = score;
    }
  }
  if (!best) return GPUPLAN_ENOTFOUND;
  *out = best;
  return GPUPLAN_OK;
}

/* --- the CUDA driver backend ------------------------------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  ATTR_CLOCK_RATE = 13,
  ATTR_MULTIPROCESSOR_COUNT = 16,
  ATTR_PCI_BUS_ID = 33,
  ATTR_PCI_DEVICE_ID = 34,
  ATTR_MEMORY_CLOCK_RATE = 36,
  ATTR_PCI_DOMAIN_ID = 50,
  ATTR_CC_MAJOR = 75,
  ATTR_CC_MINOR = 76
};

typedef struct cuda_api {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetUuid_v2)(unsigned char *, CUdevice);
  CUresult (*cuDeviceTotalMem_v2)(size_t *, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo_v2)(size_t *, size_t *);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuGetErrorName)(CUresult, const char **);
} cuda_api;

typedef struct cuda_alloc {
  CUdeviceptr ptr;
  size_t size;
} cuda_alloc;

typedef struct cuda_device {
  struct cuda_backend *owner;
  int index;
  CUdevice dev;
  CUcontext ctx;            /* primary context, retained on first use */
  gpuplan_device_ops ops;
  cuda_alloc *allocs;       /* live allocations, freed at close */
  size_t nallocs, cap;
} cuda_device;

/* NVML, loaded on the first telemetry call. */
typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef struct nvml_util {
  unsigned gpu, memory;
} nvml_util;
typedef struct nvml_bar1 {
  unsigned long long total, free, used;
} nvml_bar1;
/* nvmlProcessInfo_t of NVML 11.x/12.x (the _v2 and _v3 entry points) */
typedef struct nvml_process {
  unsigned pid;
  unsigned long long used;
  unsigned gpu_instance, compute_instance;
} nvml_process;

typedef struct nvml_api {
  nvmlReturn_t (*nvmlInit_v2)(void);
  nvmlReturn_t (*nvmlShutdown)(void);
  const char *(*nvmlErrorString)(nvmlReturn_t);
  nvmlReturn_t (*nvmlSystemGetDriverVersion)(char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*nvmlDeviceGetTemperature)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetPowerUsage)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetUtilizationRates)(nvmlDevice_t, nvml_util *);
  nvmlReturn_t (*nvmlDeviceGetClockInfo)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetPerformanceState)(nvmlDevice_t, int *);
  nvmlReturn_t (*nvmlDeviceGetCurrentClocksThrottleReasons)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*nvmlDeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
  nvmlReturn_t (*nvmlDeviceGetNvLinkState)(nvmlDevice_t, unsigned, int *);
  /* optional (NULL when this NVML lacks them): what nvidia-smi -q shows */
  nvmlReturn_t (*nvmlDeviceGetFanSpeed)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetPersistenceMode)(nvmlDevice_t, int *);
  nvmlReturn_t (*nvmlDeviceGetEccMode)(nvmlDevice_t, int *, int *);
  nvmlReturn_t (*nvmlDeviceGetComputeMode)(nvmlDevice_t, int *);
  nvmlReturn_t (*nvmlDeviceGetMigMode)(nvmlDevice_t, unsigned *, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetSerial)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetVbiosVersion)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetRetiredPages)(nvmlDevice_t, int, unsigned *, unsigned long long *);
  nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, int *);
  nvmlReturn_t (*nvmlDeviceGetRemappedRows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetEncoderUtilization)(nvmlDevice_t, unsigned *, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetDecoderUtilization)(nvmlDevice_t, unsigned *, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*nvmlDeviceGetTemperatureThreshold)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetBAR1MemoryInfo)(nvmlDevice_t, nvml_bar1 *);
  nvmlReturn_t (*nvmlDeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned *, nvml_process *);
  nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_v2)(nvmlDevice_t, unsigned *, nvml_process *);
  nvmlReturn_t (*nvmlSystemGetProcessName)(unsigned, char *, unsigned);
  nvmlReturn_t (*nvmlDeviceGetNvLinkVersion)(nvmlDevice_t, unsigned, unsigned *);
} nvml_api;

typedef struct cuda_backend {
  gpuplan_ctx *ctx;
  void *lib;
  char library[256];
  cuda_api api;
  int count;
  cuda_device *devices;
  void *nvml_lib;      /* NULL until loaded */
  int nvml_state;      /* 0 not tried, 1 ready, -1 unavailable (nvml_why) */
  char nvml_why[300];
  char driver_version[32];
  nvml_api nvml;
} cuda_backend;

static const char *cu_name(cuda_backend *c, CUresult r) {
  const char *s = NULL;
  if (c->api.cuGetErrorName && c->api.cuGetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN";
}

static int cu_fail(cuda_backend *c, CUresult r, const char *what) {
  switch (r) {
  case CUDA_ERROR_NO_DEVICE:
    return gpuplan__error(c->ctx, GPUPLAN_ENOTFOUND,
                          "%s: %s: the driver sees no CUDA device (check CUDA_VISIBLE_DEVICES, that the GPU is "
                          "passed to this container or VM, and lspci | grep -i nvidia)",
                          what, cu_name(c, r));
  case CUDA_ERROR_INSUFFICIENT_DRIVER:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    return gpuplan__error(c->ctx, GPUPLAN_ERROR,
                          "%s: %s: the NVIDIA kernel driver and its user-space library (%s) do not match, or the "
                          "driver is older than the CUDA this needs; reinstall or update the driver and reboot",
                          what, cu_name(c, r), c->library);
  case CUDA_ERROR_ECC_UNCORRECTABLE:
    return gpuplan__error(c->ctx, GPUPLAN_ERROR,
                          "%s: %s: an uncorrectable ECC error was detected; drain the node, check "
                          "nvidia-smi -q -d ECC and reset the GPU (nvidia-smi -r) or replace it",
                          what, cu_name(c, r));
  default:
    return gpuplan__error(c->ctx, GPUPLAN_ERROR, "%s: %s (%d)", what, cu_name(c, r), r);
  }
}

static int cuda_driver(void *self, gpuplan_driver_info *out) {
  cuda_backend *c = (cuda_backend *)self;
  CUresult r = c->api.cuDriverGetVersion(&out->cuda_version);
  snprintf(out->library, sizeof out->library, "%s", c->library);
  return r == CUDA_SUCCESS ? GPUPLAN_OK : cu_fail(c, r, "cuDriverGetVersion");
}

static int cuda_count(void *self, int *n) {
  *n = ((cuda_backend *)self)->count;
  return GPUPLAN_OK;
}

static int cuda_check_index(cuda_backend *c, int dev) {
  if (dev < 0 || dev >= c->count)
    return gpuplan__error(c->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, c->count - 1);
  return GPUPLAN_OK;
}

static int cuda_info(void *self, int dev, gpuplan_device_info *out) {
  cuda_backend *c = (cuda_backend *)self;
  cuda_device *d;
  unsigned char u[16];
  size_t total = 0, free_b = 0, tot2 = 0;
  int v = 0, bus = 0, dom = 0, devid = 0;
  CUresult r;
  GPUPLAN_TRY(cuda_check_index(c, dev));
  d = &c->devices[dev];
  out->index = dev;
  if ((r = c->api.cuDeviceGetName(out->name, (int)sizeof out->name, d->dev))) return cu_fail(c, r, "cuDeviceGetName");
  out->name[sizeof out->name - 1] = '\0';
  if ((r = c->api.cuDeviceGetUuid_v2(u, d->dev))) return cu_fail(c, r, "cuDeviceGetUuid");
  snprintf(out->uuid, sizeof out->uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
           u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  if ((r = c->api.cuDeviceTotalMem_v2(&total, d->dev))) return cu_fail(c, r, "cuDeviceTotalMem");
  out->total_bytes = total;
#define ATTR(field, a)                                                        \
  do {                                                                        \
    if ((r = c->api.cuDeviceGetAttribute(&v, a, d->dev)))                     \
      return cu_fail(c, r, "cuDeviceGetAttribute(" #a ")");                   \
    field = v;                                                                \
  } while (0)
  ATTR(out->sm_count, ATTR_MULTIPROCESSOR_COUNT);
  ATTR(out->cc_major, ATTR_CC_MAJOR);
  ATTR(out->cc_minor, ATTR_CC_MINOR);
  ATTR(out->clock_mhz, ATTR_CLOCK_RATE);
  ATTR(out->mem_clock_mhz, ATTR_MEMORY_CLOCK_RATE);
  ATTR(bus, ATTR_PCI_BUS_ID);
  ATTR(devid, ATTR_PCI_DEVICE_ID);
  ATTR(dom, ATTR_PCI_DOMAIN_ID);
#undef ATTR
  out->clock_mhz /= 1000; /* kHz */
  out->mem_clock_mhz /= 1000;
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%08X:%02X:%02X.0", (unsigned)dom, (unsigned)bus,
           (unsigned)devid);
  /* free memory needs the device's context */
  if (!d->ctx && (r = c->api.cuDevicePrimaryCtxRetain(&d->ctx, d->dev))) {
    d->ctx = NULL;
    return cu_fail(c, r, "cuDevicePrimaryCtxRetain");
  }
  if ((r = c->api.cuCtxSetCurrent(d->ctx))) return cu_fail(c, r, "cuCtxSetCurrent");
  if ((r = c->api.cuMemGetInfo_v2(&free_b, &tot2))) return cu_fail(c, r, "cuMemGetInfo");
  out->free_bytes = free_b;
  return GPUPLAN_OK;
}

/* --- device memory: never more than is free, every allocation tracked ------ */

static int cuda_malloc(void *payload, uint64_t size, uint64_t *addr_out) {
  cuda_device *d = (cuda_device *)payload;
  cuda_backend *c = d->owner;
  size_t free_b = 0, total = 0;
  CUdeviceptr p = 0;
  CUresult r;
  if (c->api.cuCtxSetCurrent(d->ctx) != CUDA_SUCCESS) return GPUPLAN_ENOTFOUND;
  if (c->api.cuMemGetInfo_v2(&free_b, &total) != CUDA_SUCCESS || size > free_b) return GPUPLAN_ENOTFOUND;
  if (d->nallocs == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    cuda_alloc *a = (cuda_alloc *)gpuplan__realloc(c->ctx, d->allocs, cap * sizeof *a);
    if (!a) return GPUPLAN_ENOTFOUND; /* cannot track it: do not allocate it */
    d->allocs = a;
    d->cap = cap;
  }
  r = c->api.cuMemAlloc_v2(&p, (size_t)size);
  if (r != CUDA_SUCCESS) return GPUPLAN_ENOTFOUND; /* CUDA_ERROR_OUT_OF_MEMORY and kin */
  d->allocs[d->nallocs].ptr = p;
  d->allocs[d->nallocs].size = (size_t)size;
  d->nallocs++;
  *addr_out = p;
  return GPUPLAN_OK;
}

static void cuda_free(void *payload, uint64_t addr, uint64_t size) {
  cuda_device *d = (cuda_device *)payload;
  size_t i;
  (void)size;
  for (i = d->nallocs; i-- > 0;)
    if (d->allocs[i].ptr == addr) {
      d->owner->api.cuCtxSetCurrent(d->ctx);
      d->owner->api.cuMemFree_v2(addr);
      d->allocs[i] = d->allocs[--d->nallocs];
      return;
    }
}

static void cuda_mem_info(void *payload, uint64_t *free_out, uint64_t *total_out) {
  cuda_device *d = (cuda_device *)payload;
  size_t f = 0, t = 0;
  d->owner->api.cuCtxSetCurrent(d->ctx);
  d->owner->api.cuMemGetInfo_v2(&f, &t);
  *free_out = f;
  *total_out = t;
}

static int cuda_memory(void *self, int dev, const gpuplan_device_ops **out) {
  cuda_backend *c = (cuda_backend *)self;
  cuda_device *d;
  CUresult r;
  GPUPLAN_TRY(cuda_check_index(c, dev));
  d = &c->devices[dev];
  if (!d->ctx && (r = c->api.cuDevicePrimaryCtxRetain(&d->ctx, d->dev))) {
    d->ctx = NULL;
    return cu_fail(c, r, "cuDevicePrimaryCtxRetain");
  }
  d->ops.malloc = cuda_malloc;
  d->ops.free = cuda_free;
  d->ops.mem_info = cuda_mem_info;
  d->ops.payload = d;
  *out = &d->ops;
  return GPUPLAN_OK;
}

static void cuda_close(void *self) {
  cuda_backend *c = (cuda_backend *)self;
  int i;
  if (!c) return;
  for (i = 0; c->devices && i < c->count; i++) {
    cuda_device *d = &c->devices[i];
    size_t k;
    if (d->ctx) {
      c->api.cuCtxSetCurrent(d->ctx);
      for (k = 0; k < d->nallocs; k++) c->api.cuMemFree_v2(d->allocs[k].ptr);
      c->api.cuDevicePrimaryCtxRelease_v2(d->dev);
    }
    gpuplan__free(c->ctx, d->allocs);
  }
  gpuplan__free(c->ctx, c->devices);
#ifdef GPUPLAN_HAVE_DLOPEN
  if (c->nvml_lib) {
    c->nvml.nvmlShutdown();
    dlclose(c->nvml_lib);
  }
  if (c->lib) dlclose(c->lib);
#endif
  gpuplan__free(c->ctx, c);
}

static int nvml_open(cuda_backend *c) {
#ifdef GPUPLAN_HAVE_DLOPEN
  const char *lib = getenv("GPUPLAN_LIBNVML");
  nvmlReturn_t r;
  if (c->nvml_state) return c->nvml_state > 0 ? GPUPLAN_OK : GPUPLAN_EUNSUPPORTED;
  if (!lib || !*lib) lib = "libnvidia-ml.so.1";
  c->nvml_state = -1;
  c->nvml_lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!c->nvml_lib) {
    const char *why = dlerror();
    snprintf(c->nvml_why, sizeof c->nvml_why, "cannot load %s (%s)", lib, why ? why : "not found");
    return GPUPLAN_EUNSUPPORTED;
  }
#define NSYM(name)                                                                     \
  do {                                                                                 \
    *(void **)(&c->nvml.name) = dlsym(c->nvml_lib, #name);                             \
    if (!c->nvml.name) {                                                               \
      snprintf(c->nvml_why, sizeof c->nvml_why, "%s has no %s (NVML too old)", lib, #name); \
      dlclose(c->nvml_lib);                                                            \
      c->nvml_lib = NULL;                                                              \
      return GPUPLAN_EUNSUPPORTED;                                                     \
    }                                                                                  \
  } while (0)
  NSYM(nvmlInit_v2);
  NSYM(nvmlShutdown);
  NSYM(nvmlErrorString);
  NSYM(nvmlSystemGetDriverVersion);
  NSYM(nvmlDeviceGetHandleByPciBusId_v2);
  NSYM(nvmlDeviceGetTemperature);
  NSYM(nvmlDeviceGetPowerUsage);
  NSYM(nvmlDeviceGetEnforcedPowerLimit);
  NSYM(nvmlDeviceGetUtilizationRates);
  NSYM(nvmlDeviceGetClockInfo);
  NSYM(nvmlDeviceGetMaxClockInfo);
  NSYM(nvmlDeviceGetPerformanceState);
  NSYM(nvmlDeviceGetCurrentClocksThrottleReasons);
  NSYM(nvmlDeviceGetTotalEccErrors);
  NSYM(nvmlDeviceGetNvLinkState);
#undef NSYM
#define OSYM(name) (*(void **)(&c->nvml.name) = dlsym(c->nvml_lib, #name))
  OSYM(nvmlDeviceGetFanSpeed);
  OSYM(nvmlDeviceGetCurrPcieLinkGeneration);
  OSYM(nvmlDeviceGetMaxPcieLinkGeneration);
  OSYM(nvmlDeviceGetCurrPcieLinkWidth);
  OSYM(nvmlDeviceGetMaxPcieLinkWidth);
  OSYM(nvmlDeviceGetPersistenceMode);
  OSYM(nvmlDeviceGetEccMode);
  OSYM(nvmlDeviceGetComputeMode);
  OSYM(nvmlDeviceGetMigMode);
  OSYM(nvmlDeviceGetSerial);
  OSYM(nvmlDeviceGetVbiosVersion);
  OSYM(nvmlDeviceGetRetiredPages);
  OSYM(nvmlDeviceGetRetiredPagesPendingStatus);
  OSYM(nvmlDeviceGetRemappedRows);
  OSYM(nvmlDeviceGetEncoderUtilization);
  OSYM(nvmlDeviceGetDecoderUtilization);
  OSYM(nvmlDeviceGetTotalEnergyConsumption);
  OSYM(nvmlDeviceGetTemperatureThreshold);
  OSYM(nvmlDeviceGetBAR1MemoryInfo);
  OSYM(nvmlDeviceGetPcieReplayCounter);
  OSYM(nvmlDeviceGetPcieThroughput);
  OSYM(nvmlDeviceGetComputeRunningProcesses_v3);
  OSYM(nvmlDeviceGetComputeRunningProcesses_v2);
  OSYM(nvmlSystemGetProcessName);
  OSYM(nvmlDeviceGetNvLinkVersion);
#undef OSYM
  if ((r = c->nvml.nvmlInit_v2()) != 0) {
    snprintf(c->nvml_why, sizeof c->nvml_why, "nvmlInit: %s", c->nvml.nvmlErrorString(r));
    dlclose(c->nvml_lib);
    c->nvml_lib = NULL;
    return GPUPLAN_EUNSUPPORTED;
  }
  if (c->nvml.nvmlSystemGetDriverVersion(c->driver_version, sizeof c->driver_version) != 0)
    c->driver_version[0] = '\0';
  c->nvml_state = 1;
  return GPUPLAN_OK;
#else
  snprintf(c->nvml_why, sizeof c->nvml_why, "no dlopen on this platform");
  return GPUPLAN_EUNSUPPORTED;
#endif
}

/* The optional NVML queries: each field stays unknown when its entry point
 * is missing or the card does not support it. */
static void nvml_more(cuda_backend *c, nvmlDevice_t h, gpuplan_device_telemetry *out) {
  nvml_api *n = &c->nvml;
  unsigned u = 0, v = 0, w = 0, x = 0;
  int i = 0, k = 0;
  unsigned long long ull = 0;
  char buf[64];
  nvml_bar1 bar;
  if (n->nvmlDeviceGetFanSpeed && !n->nvmlDeviceGetFanSpeed(h, &u)) out->fan_speed = u / 100.0;
  if (!n->nvmlDeviceGetClockInfo(h, 0, &u)) out->graphics_clock_mhz = (int)u; /* NVML_CLOCK_GRAPHICS */
  if (!n->nvmlDeviceGetClockInfo(h, 2, &u)) out->mem_clock_mhz = (int)u;      /* NVML_CLOCK_MEM */
  if (!n->nvmlDeviceGetMaxClockInfo(h, 0, &u)) out->max_graphics_clock_mhz = (int)u;
  if (!n->nvmlDeviceGetMaxClockInfo(h, 2, &u)) out->max_mem_clock_mhz = (int)u;
  if (n->nvmlDeviceGetCurrPcieLinkGeneration && !n->nvmlDeviceGetCurrPcieLinkGeneration(h, &u)) out->pcie_gen = (int)u;
  if (n->nvmlDeviceGetMaxPcieLinkGeneration && !n->nvmlDeviceGetMaxPcieLinkGeneration(h, &u)) out->pcie_gen_max = (int)u;
  if (n->nvmlDeviceGetCurrPcieLinkWidth && !n->nvmlDeviceGetCurrPcieLinkWidth(h, &u)) out->pcie_width = (int)u;
  if (n->nvmlDeviceGetMaxPcieLinkWidth && !n->nvmlDeviceGetMaxPcieLinkWidth(h, &u)) out->pcie_width_max = (int)u;
  if (n->nvmlDeviceGetPersistenceMode && !n->nvmlDeviceGetPersistenceMode(h, &i)) out->persistence_mode = i != 0;
  if (n->nvmlDeviceGetEccMode && !n->nvmlDeviceGetEccMode(h, &i, &k)) out->ecc_mode = i != 0;
  if (n->nvmlDeviceGetComputeMode && !n->nvmlDeviceGetComputeMode(h, &i)) out->compute_mode = i;
  if (n->nvmlDeviceGetMigMode && !n->nvmlDeviceGetMigMode(h, &u, &v)) out->mig_mode = u != 0;
  if (n->nvmlDeviceGetSerial && !n->nvmlDeviceGetSerial(h, buf, sizeof buf))
    snprintf(out->serial, sizeof out->serial, "%.*s", (int)sizeof out->serial - 1, buf);
  if (n->nvmlDeviceGetVbiosVersion && !n->nvmlDeviceGetVbiosVersion(h, buf, sizeof buf))
    snprintf(out->vbios_version, sizeof out->vbios_version, "%.*s", (int)sizeof out->vbios_version - 1, buf);
  /* NVML_AGGREGATE_ECC = 1 */
  if (!n->nvmlDeviceGetTotalEccErrors(h, 1, 1, &ull)) out->ecc_uncorrected_aggregate = (long long)ull;
  if (!n->nvmlDeviceGetTotalEccErrors(h, 0, 1, &ull)) out->ecc_corrected_aggregate = (long long)ull;
  /* NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0, _DOUBLE_BIT = 1; count only */
  if (n->nvmlDeviceGetRetiredPages) {
    u = 0;
    if (!n->nvmlDeviceGetRetiredPages(h, 0, &u, NULL)) out->retired_sbe = u;
    u = 0;
    if (!n->nvmlDeviceGetRetiredPages(h, 1, &u, NULL)) out->retired_dbe = u;
  }
  if (n->nvmlDeviceGetRetiredPagesPendingStatus && !n->nvmlDeviceGetRetiredPagesPendingStatus(h, &i))
    out->retired_pending = i != 0;
  if (n->nvmlDeviceGetRemappedRows && !n->nvmlDeviceGetRemappedRows(h, &u, &v, &w, &x)) {
    out->remapped_correctable = u;
    out->remapped_uncorrectable = v;
    out->remap_pending = w != 0;
    out->remap_failure = x != 0;
  }
  if (n->nvmlDeviceGetEncoderUtilization && !n->nvmlDeviceGetEncoderUtilization(h, &u, &v)) out->enc_util = u / 100.0;
  if (n->nvmlDeviceGetDecoderUtilization && !n->nvmlDeviceGetDecoderUtilization(h, &u, &v)) out->dec_util = u / 100.0;
  if (n->nvmlDeviceGetTotalEnergyConsumption && !n->nvmlDeviceGetTotalEnergyConsumption(h, &ull))
    out->energy_j = (double)ull / 1000.0; /* mJ */
  /* NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0, _SLOWDOWN = 1 */
  if (n->nvmlDeviceGetTemperatureThreshold && !n->nvmlDeviceGetTemperatureThreshold(h, 0, &u)) out->shutdown_temp_c = u;
  if (n->nvmlDeviceGetTemperatureThreshold && !n->nvmlDeviceGetTemperatureThreshold(h, 1, &u)) out->slowdown_temp_c = u;
  if (n->nvmlDeviceGetBAR1MemoryInfo && !n->nvmlDeviceGetBAR1MemoryInfo(h, &bar)) {
    out->bar1_total_bytes = bar.total;
    out->bar1_used_bytes = bar.used;
  }
  if (n->nvmlDeviceGetPcieReplayCounter && !n->nvmlDeviceGetPcieReplayCounter(h, &u)) out->pcie_replays = u;
  /* NVML_PCIE_UTIL_TX_BYTES = 0, _RX_BYTES = 1, in KB/s */
  if (n->nvmlDeviceGetPcieThroughput && !n->nvmlDeviceGetPcieThroughput(h, 0, &u)) out->pcie_tx_bytes_s = u * 1024.0;
  if (n->nvmlDeviceGetPcieThroughput && !n->nvmlDeviceGetPcieThroughput(h, 1, &u)) out->pcie_rx_bytes_s = u * 1024.0;
  out->xid = -1; /* NVML gives Xids only as events; nvidia-smi does not show them either */
}

/* sysfs: the NUMA node and the CPUs near a PCI device ("00000000:07:00.0"
 * is /sys/bus/pci/devices/0000:07:00.0). */
static void sysfs_path(const char *bus, char *out, size_t cap) {
  const char *p = strlen(bus) > 12 ? bus + 4 : bus; /* 8-digit NVML domain: sysfs uses 4 */
  size_t k;
  char low[32];
  for (k = 0; p[k] && k + 1 < sizeof low; k++) low[k] = (char)tolower((unsigned char)p[k]);
  low[k] = '\0';
  snprintf(out, cap, "/sys/bus/pci/devices/%s", low);
}

static int read_small(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
  return n > 0;
}

static void sysfs_affinity(const char *bus, gpuplan_device_telemetry *out) {
  char dir[96], path[160], buf[256];
  sysfs_path(bus, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/numa_node", dir);
  if (read_small(path, buf, sizeof buf)) out->numa_node = atoi(buf);
  snprintf(path, sizeof path, "%s/local_cpulist", dir);
  if (read_small(path, buf, sizeof buf))
    snprintf(out->cpu_affinity, sizeof out->cpu_affinity, "%.*s", (int)sizeof out->cpu_affinity - 1, buf);
}

/* The PCIe path between two devices as nvidia-smi names it, from where
 * sysfs places them: under one switch PIX, several switches PXB, only the
 * root complex in common PHB, different host bridges of one NUMA node
 * NODE, different nodes SYS.  "" when sysfs cannot tell. */
static void sysfs_relation(const char *bus_a, const char *bus_b, int numa_a, int numa_b, char *out, size_t cap) {
#if defined(__linux__)
  char pa[96], pb[96], ra[512], rb[512];
  const char *ca[32], *cb[32];
  int na = 0, nb = 0, common = 0, k;
  char *q;
  out[0] = '\0';
  sysfs_path(bus_a, pa, sizeof pa);
  sysfs_path(bus_b, pb, sizeof pb);
  if (!realpath(pa, ra) || !realpath(pb, rb) || strncmp(ra, "/sys/devices/", 13) || strncmp(rb, "/sys/devices/", 13))
    return;
  /* components after /sys/devices/ */
  for (q = strtok(ra + 13, "/"); q && na < 32; q = strtok(NULL, "/")) ca[na++] = q;
  for (q = strtok(rb + 13, "/"); q && nb < 32; q = strtok(NULL, "/")) cb[nb++] = q;
  if (!na || !nb) return;
  for (k = 0; k < na && k < nb && strcmp(ca[k], cb[k]) == 0; k++) common++;
  if (common == 0) snprintf(out, cap, "%s", numa_a >= 0 && numa_a == numa_b ? "NODE" : "SYS");
  else if (common == 1) snprintf(out, cap, "PHB");
  else if (na - common <= 2 && nb - common <= 2) snprintf(out, cap, "PIX");
  else snprintf(out, cap, "PXB");
#else
  (void)bus_a;
  (void)bus_b;
  (void)numa_a;
  (void)numa_b;
  out[0] = '\0';
  (void)cap;
#endif
}

/* NVML's device busId is "00000000:07:00.0", as gpuplan_device_info's. */
static int cuda_telemetry(void *self, int dev, gpuplan_device_telemetry *out) {
  cuda_backend *c = (cuda_backend *)self;
  gpuplan_device_info info;
  nvmlDevice_t h;
  unsigned u = 0, link;
  int ps = 0, st = 0, rc;
  unsigned long long ull = 0;
  nvml_util ut;
  GPUPLAN_TRY(cuda_check_index(c, dev));
  if (nvml_open(c)) return gpuplan__error(c->ctx, GPUPLAN_EUNSUPPORTED, "telemetry: NVML unavailable: %s", c->nvml_why);
  memset(&info, 0, sizeof info);
  if ((rc = cuda_info(self, dev, &info))) return rc;
  if (c->nvml.nvmlDeviceGetHandleByPciBusId_v2(info.pci_bus_id, &h) != 0)
    return gpuplan__error(c->ctx, GPUPLAN_ERROR, "telemetry: NVML has no device at %s", info.pci_bus_id);
  snprintf(out->driver_version, sizeof out->driver_version, "%s", c->driver_version);
  /* each query may be unsupported on a given card: the field stays unset */
  if (!c->nvml.nvmlDeviceGetTemperature(h, 0, &u)) out->temperature_c = u;
  if (!c->nvml.nvmlDeviceGetPowerUsage(h, &u)) out->power_w = u / 1000.0;
  if (!c->nvml.nvmlDeviceGetEnforcedPowerLimit(h, &u)) out->power_limit_w = u / 1000.0;
  if (!c->nvml.nvmlDeviceGetUtilizationRates(h, &ut)) {
    out->gpu_util = ut.gpu / 100.0;
    out->mem_util = ut.memory / 100.0;
  }
  if (!c->nvml.nvmlDeviceGetClockInfo(h, 1, &u)) out->sm_clock_mhz = (int)u;    /* NVML_CLOCK_SM */
  if (!c->nvml.nvmlDeviceGetMaxClockInfo(h, 1, &u)) out->max_sm_clock_mhz = (int)u;
  if (!c->nvml.nvmlDeviceGetPerformanceState(h, &ps)) out->pstate = ps;
  if (!c->nvml.nvmlDeviceGetCurrentClocksThrottleReasons(h, &ull)) out->throttle = (long long)ull;
  /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, _CORRECTED = 0; NVML_VOLATILE_ECC = 0 */
  if (!c->nvml.nvmlDeviceGetTotalEccErrors(h, 1, 0, &ull)) out->ecc_uncorrected = (long long)ull;
  if (!c->nvml.nvmlDeviceGetTotalEccErrors(h, 0, 0, &ull)) out->ecc_corrected = (long long)ull;
  out->nvlink_links = out->nvlink_up = 0;
  out->nvlink_up_mask = 0;
  for (link = 0; link < 18; link++) { /* NVML_NVLINK_MAX_LINKS */
    if (c->nvml.nvmlDeviceGetNvLinkState(h, link, &st) != 0) break;
    out->nvlink_links++;
    if (st) {
      out->nvlink_up++; /* NVML_FEATURE_ENABLED */
      out->nvlink_up_mask |= 1ull << link;
    }
  }
  /* one link's speed each way from its NVLink version, as nvidia-smi nvlink -s prints it */
  if (out->nvlink_links > 0 && c->nvml.nvmlDeviceGetNvLinkVersion &&
      !c->nvml.nvmlDeviceGetNvLinkVersion(h, 0, &u) && u >= 1 && u <= 5) {
    static const double gbps[6] = {0, 20.0, 25.781, 25.0, 26.562, 50.0};
    out->nvlink_link_gbps = gbps[u];
  }
  nvml_more(c, h, out);
  sysfs_affinity(info.pci_bus_id, out);
  return GPUPLAN_OK;
}

static int cuda_processes(void *self, int dev, gpuplan_device_process *out, size_t cap, size_t *n) {
  cuda_backend *c = (cuda_backend *)self;
  gpuplan_device_info info;
  nvml_process procs[64];
  nvmlDevice_t h;
  unsigned count = 64, i;
  nvmlReturn_t r;
  int rc;
  *n = 0;
  GPUPLAN_TRY(cuda_check_index(c, dev));
  if (nvml_open(c)) return gpuplan__error(c->ctx, GPUPLAN_EUNSUPPORTED, "processes: NVML unavailable: %s", c->nvml_why);
  if (!c->nvml.nvmlDeviceGetComputeRunningProcesses_v3 && !c->nvml.nvmlDeviceGetComputeRunningProcesses_v2)
    return gpuplan__error(c->ctx, GPUPLAN_EUNSUPPORTED, "processes: this NVML has no process list (too old)");
  memset(&info, 0, sizeof info);
  if ((rc = cuda_info(self, dev, &info))) return rc;
  if (c->nvml.nvmlDeviceGetHandleByPciBusId_v2(info.pci_bus_id, &h) != 0)
    return gpuplan__error(c->ctx, GPUPLAN_ERROR, "processes: NVML has no device at %s", info.pci_bus_id);
  r = c->nvml.nvmlDeviceGetComputeRunningProcesses_v3 ? c->nvml.nvmlDeviceGetComputeRunningProcesses_v3(h, &count, procs)
                                                       : c->nvml.nvmlDeviceGetComputeRunningProcesses_v2(h, &count, procs);
  if (r != 0) return gpuplan__error(c->ctx, GPUPLAN_ERROR, "processes: %s", c->nvml.nvmlErrorString(r));
  for (i = 0; i < count && i < 64; i++) {
    if (i < cap) {
      gpuplan_device_process *p = &out[i];
      memset(p, 0, sizeof *p);
      p->pid = procs[i].pid;
      p->type = 'C';
      p->used_bytes = procs[i].used == ~0ull ? 0 : procs[i].used; /* NVML_VALUE_NOT_AVAILABLE */
      p->sm_util = p->mem_util = NAN;
      if (!c->nvml.nvmlSystemGetProcessName || c->nvml.nvmlSystemGetProcessName(p->pid, p->name, sizeof p->name))
        snprintf(p->name, sizeof p->name, "[pid %u]", p->pid);
    }
  }
  *n = count < 64 ? count : 64;
  return GPUPLAN_OK;
}

static int cuda_link(void *self, int a, int b, gpuplan_device_link *out) {
  cuda_backend *c = (cuda_backend *)self;
  gpuplan_device_info ia, ib;
  gpuplan_device_telemetry ta, tb;
  int rc, na = -1, nb = -1;
  GPUPLAN_TRY(cuda_check_index(c, a));
  GPUPLAN_TRY(cuda_check_index(c, b));
  if (a == b) {
    snprintf(out->pcie, sizeof out->pcie, "X");
    return GPUPLAN_OK;
  }
  memset(&ia, 0, sizeof ia);
  memset(&ib, 0, sizeof ib);
  if ((rc = cuda_info(self, a, &ia)) || (rc = cuda_info(self, b, &ib))) return rc;
  {
    gpuplan_device_telemetry sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    sa.numa_node = sb.numa_node = -1;
    sysfs_affinity(ia.pci_bus_id, &sa);
    sysfs_affinity(ib.pci_bus_id, &sb);
    na = sa.numa_node;
    nb = sb.numa_node;
  }
  sysfs_relation(ia.pci_bus_id, ib.pci_bus_id, na, nb, out->pcie, sizeof out->pcie);
  if (!out->pcie[0]) snprintf(out->pcie, sizeof out->pcie, "PHB");
  /* NVLink: links up at both ends (an NVSwitch board connects every pair) */
  memset(&ta, 0, sizeof ta);
  memset(&tb, 0, sizeof tb);
  if ((rc = cuda_telemetry(self, a, &ta)) || (rc = cuda_telemetry(self, b, &tb))) return rc;
  if (ta.nvlink_up > 0 && tb.nvlink_up > 0) out->nvlinks = ta.nvlink_up < tb.nvlink_up ? ta.nvlink_up : tb.nvlink_up;
  return GPUPLAN_OK;
}

static const gpuplan_backend_ops cuda_ops = {"cuda", cuda_driver, cuda_count, cuda_info, cuda_memory, cuda_close,
                                             cuda_telemetry, cuda_processes, cuda_link};

int gpuplan_backend_open_cuda(gpuplan_ctx *ctx, const char *library, gpuplan_backend **out) {
  cuda_backend *c;
  CUresult r;
  int i, rc;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!library) library = getenv("GPUPLAN_LIBCUDA");
  if (!library || !*library) library = "libcuda.so.1";
#ifndef GPUPLAN_HAVE_DLOPEN
  return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED, "CUDA backend: this platform has no dlopen");
#else
  c = (cuda_backend *)gpuplan__calloc(ctx, 1, sizeof *c);
  if (!c) return gpuplan__error(ctx, GPUPLAN_ENOMEM, "CUDA backend: out of memory");
  c->ctx = ctx;
  snprintf(c->library, sizeof c->library, "%s", library);
  c->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    const char *why = dlerror();
    char msg[300];
    snprintf(msg, sizeof msg, "%s", why ? why : "not found");
    gpuplan__free(ctx, c);
    return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,
                          "no NVIDIA driver: cannot load %s (%s). nvidia-smi would say: \"NVIDIA-SMI has failed "
                          "because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA "
                          "driver is installed and running.\" Check: lsmod | grep nvidia, dmesg | grep -i nvrm, and "
                          "in containers the NVIDIA container toolkit (--gpus all)",
                          library, msg);
  }
#define SYM(name)                                                                        \
  do {                                                                                   \
    *(void **)(&c->api.name) = dlsym(c->lib, #name);                                     \
    if (!c->api.name) {                                                                  \
      cuda_close(c);                                                                     \
      return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,                                   \
                            "CUDA driver %s has no %s: the driver is too old for gpuplan", \
                            library, #name);                                             \
    }                                                                                    \
  } while (0)
  SYM(cuGetErrorName);
  SYM(cuInit);
  SYM(cuDriverGetVersion);
  SYM(cuDeviceGetCount);
  SYM(cuDeviceGet);
  SYM(cuDeviceGetName);
  SYM(cuDeviceGetUuid_v2);
  SYM(cuDeviceTotalMem_v2);
  SYM(cuDeviceGetAttribute);
  SYM(cuDevicePrimaryCtxRetain);
  SYM(cuDevicePrimaryCtxRelease_v2);
  SYM(cuCtxSetCurrent);
  SYM(cuMemGetInfo_v2);
  SYM(cuMemAlloc_v2);
  SYM(cuMemFree_v2);
#undef SYM
  if ((r = c->api.cuInit(0)) != CUDA_SUCCESS) {
    rc = cu_fail(c, r, "cuInit");
    cuda_close(c);
    return rc;
  }
  if ((r = c->api.cuDeviceGetCount(&c->count)) != CUDA_SUCCESS) {
    rc = cu_fail(c, r, "cuDeviceGetCount");
    cuda_close(c);
    return rc;
  }
  if (c->count < 1) {
    rc = cu_fail(c, CUDA_ERROR_NO_DEVICE, "cuDeviceGetCount");
    c->count = 0;
    cuda_close(c);
    return rc;
  }
  c->devices = (cuda_device *)gpuplan__calloc(ctx, (size_t)c->count, sizeof *c->devices);
  if (!c->devices) {
    c->count = 0;
    cuda_close(c);
    return gpuplan__error(ctx, GPUPLAN_ENOMEM, "CUDA backend: out of memory");
  }
  for (i = 0; i < c->count; i++) {
    c->devices[i].owner = c;
    c->devices[i].index = i;
    if ((r = c->api.cuDeviceGet(&c->devices[i].dev, i)) != CUDA_SUCCESS) {
      rc = cu_fail(c, r, "cuDeviceGet");
      cuda_close(c);
      return rc;
    }
  }
  return gpuplan_backend_new(ctx, &cuda_ops, c, out);
#endif
}
