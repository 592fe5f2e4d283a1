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
  if (!b->ops->telemetry)
    return gpuplan__error(b->ctx, GPUPLAN_EUNSUPPORTED, "telemetry: the %s backend has none", b->ops->kind);
  return b->ops->telemetry(b->self, dev, out);
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
  for (link = 0; link < 18; link++) { /* NVML_NVLINK_MAX_LINKS */
    if (c->nvml.nvmlDeviceGetNvLinkState(h, link, &st) != 0) break;
    out->nvlink_links++;
    if (st) out->nvlink_up++; /* NVML_FEATURE_ENABLED */
  }
  return GPUPLAN_OK;
}

static const gpuplan_backend_ops cuda_ops = {"cuda", cuda_driver, cuda_count, cuda_info, cuda_memory, cuda_close,
                                             cuda_telemetry};

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
