/*
 * sim.c: mock GPUs.  Only the public gpuplan API is used here.
 *
 * Device addresses come from a first-fit allocator over a free list of
 * address ranges that coalesces on free, as a driver's virtual address
 * allocator would, so that freed ranges are reused.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuplan/mock.h"

typedef struct range {
  uint64_t addr, size;
} range;

typedef struct simdev {
  struct gpuplan_mock *sim;
  char name[64];
  uint64_t total, context, others, reserved;
  uint64_t allocations, failed;
  uint64_t base, top;   /* address space [base, top) handed out so far */
  range *free;          /* free ranges below top, sorted by address */
  size_t nfree, capfree;
  gpuplan_device_ops ops;
  /* telemetry and faults */
  const gpuplan_gpu *sku;
  unsigned faults;      /* 1 << gpuplan_mock_fault */
  double temp, seconds, util, factor, speed;
  uint64_t ecc_unc, ecc_cor;
} simdev;

struct gpuplan_mock {
  gpuplan_ctx *ctx;
  simdev **dev;
  int n, cap;
};

static uint64_t granular(uint64_t size) {
  return (size + GPUPLAN_MOCK_GRANULARITY - 1) / GPUPLAN_MOCK_GRANULARITY * GPUPLAN_MOCK_GRANULARITY;
}

static uint64_t avail(const simdev *d) {
  uint64_t held = d->context + d->others + d->reserved;
  return held >= d->total ? 0 : d->total - held;
}

static int dev_malloc(void *payload, uint64_t size, uint64_t *addr_out) {
  simdev *d = payload;
  uint64_t g = granular(size);
  size_t i;
  if (size == 0 || g > avail(d)) {
    d->failed++;
    return GPUPLAN_ENOTFOUND;
  }
  for (i = 0; i < d->nfree; i++) {
    if (d->free[i].size >= g) {
      *addr_out = d->free[i].addr;
      d->free[i].addr += g;
      d->free[i].size -= g;
      if (!d->free[i].size) {
        memmove(d->free + i, d->free + i + 1, (d->nfree - i - 1) * sizeof *d->free);
        d->nfree--;
      }
      goto done;
    }
  }
  *addr_out = d->top;
  d->top += g;
done:
  d->reserved += g;
  d->allocations++;
  return GPUPLAN_OK;
}

static void dev_free(void *payload, uint64_t addr, uint64_t size) {
  simdev *d = payload;
  uint64_t g = granular(size);
  size_t i = 0;
  d->reserved -= g < d->reserved ? g : d->reserved;
  d->allocations--;
  if (addr + g == d->top) {
    d->top = addr;
    /* The topmost free range may now touch the top. */
    while (d->nfree && d->free[d->nfree - 1].addr + d->free[d->nfree - 1].size == d->top) {
      d->top = d->free[d->nfree - 1].addr;
      d->nfree--;
    }
    return;
  }
  while (i < d->nfree && d->free[i].addr < addr) i++;
  /* Coalesce with the neighbours. */
  if (i > 0 && d->free[i - 1].addr + d->free[i - 1].size == addr) {
    d->free[i - 1].size += g;
    if (i < d->nfree && d->free[i - 1].addr + d->free[i - 1].size == d->free[i].addr) {
      d->free[i - 1].size += d->free[i].size;
      memmove(d->free + i, d->free + i + 1, (d->nfree - i - 1) * sizeof *d->free);
      d->nfree--;
    }
    return;
  }
  if (i < d->nfree && addr + g == d->free[i].addr) {
    d->free[i].addr = addr;
    d->free[i].size += g;
    return;
  }
  if (d->nfree == d->capfree) {
    size_t ncap = d->capfree ? d->capfree * 2 : 16;
    range *nr = gpuplan_malloc(d->sim->ctx, ncap * sizeof *nr);
    if (!nr) return; /* the range is lost to reuse, not to accounting */
    if (d->nfree) memcpy(nr, d->free, d->nfree * sizeof *nr);
    gpuplan_free(d->sim->ctx, d->free);
    d->free = nr;
    d->capfree = ncap;
  }
  memmove(d->free + i + 1, d->free + i, (d->nfree - i) * sizeof *d->free);
  d->free[i].addr = addr;
  d->free[i].size = g;
  d->nfree++;
}

static void dev_info(void *payload, uint64_t *free_out, uint64_t *total_out) {
  simdev *d = payload;
  *free_out = avail(d);
  *total_out = d->total;
}

static int dev_map(void *payload, uint64_t size) {
  simdev *d = payload;
  uint64_t g = granular(size);
  if (g > avail(d)) {
    d->failed++;
    return GPUPLAN_ENOTFOUND;
  }
  d->reserved += g;
  return GPUPLAN_OK;
}

static void dev_unmap(void *payload, uint64_t size) {
  simdev *d = payload;
  uint64_t g = granular(size);
  d->reserved -= g < d->reserved ? g : d->reserved;
}

int gpuplan_mock_new(gpuplan_ctx *ctx, gpuplan_mock **out) {
  gpuplan_mock *s;
  if (!ctx || !out) return GPUPLAN_EMISUSE;
  s = gpuplan_malloc(ctx, sizeof *s);
  if (!s) return GPUPLAN_ENOMEM;
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  *out = s;
  return GPUPLAN_OK;
}

void gpuplan_mock_free(gpuplan_mock *s) {
  int i;
  if (!s) return;
  for (i = 0; i < s->n; i++) {
    gpuplan_free(s->ctx, s->dev[i]->free);
    gpuplan_free(s->ctx, s->dev[i]);
  }
  gpuplan_free(s->ctx, s->dev);
  gpuplan_free(s->ctx, s);
}

int gpuplan_mock_add_device(gpuplan_mock *s, const char *name, uint64_t total, uint64_t context,
                           int *index_out) {
  simdev *d;
  if (!s) return GPUPLAN_EMISUSE;
  if (total == 0 || context >= total) return GPUPLAN_EINVAL;
  if (s->n == s->cap) {
    int ncap = s->cap ? s->cap * 2 : 4;
    simdev **nd = gpuplan_malloc(s->ctx, (size_t)ncap * sizeof *nd);
    if (!nd) return GPUPLAN_ENOMEM;
    if (s->n) memcpy(nd, s->dev, (size_t)s->n * sizeof *nd);
    gpuplan_free(s->ctx, s->dev);
    s->dev = nd;
    s->cap = ncap;
  }
  d = gpuplan_malloc(s->ctx, sizeof *d);
  if (!d) return GPUPLAN_ENOMEM;
  memset(d, 0, sizeof *d);
  d->sim = s;
  strncpy(d->name, name ? name : "mock GPU", sizeof d->name - 1);
  d->total = total;
  d->context = context;
  /* Distinct devices get distinct address ranges, 2^40 apart. */
  d->base = d->top = 0x7f0000000000ull + ((uint64_t)s->n << 40);
  d->ops.malloc = dev_malloc;
  d->ops.free = dev_free;
  d->ops.mem_info = dev_info;
  d->ops.map = dev_map;
  d->ops.unmap = dev_unmap;
  d->ops.payload = d;
  d->temp = 30.0; /* inlet temperature: an idle, healthy device */
  d->factor = 1.0;
  d->speed = 1.0;
  s->dev[s->n] = d;
  if (index_out) *index_out = s->n;
  s->n++;
  return GPUPLAN_OK;
}

int gpuplan_mock_add_gpu(gpuplan_mock *s, const gpuplan_gpu *sku, int64_t context_bytes,
                        int *index_out) {
  if (!s || !sku) return GPUPLAN_EMISUSE;
  if (context_bytes < -1) return GPUPLAN_EINVAL;
  int idx, rc;
  rc = gpuplan_mock_add_device(s, sku->name, sku->memory_bytes,
                              context_bytes < 0 ? sku->context_bytes : (uint64_t)context_bytes, &idx);
  if (rc) return rc;
  s->dev[idx]->sku = sku;
  if (index_out) *index_out = idx;
  return GPUPLAN_OK;
}

int gpuplan_mock_count(const gpuplan_mock *s) { return s ? s->n : 0; }

int gpuplan_mock_set_other_processes(gpuplan_mock *s, int dev, uint64_t bytes) {
  simdev *d;
  if (!s || dev < 0 || dev >= s->n) return GPUPLAN_EINVAL;
  d = s->dev[dev];
  if (d->context + d->reserved + bytes > d->total) return GPUPLAN_EINVAL;
  d->others = bytes;
  return GPUPLAN_OK;
}

const gpuplan_device_ops *gpuplan_mock_device(gpuplan_mock *s, int dev) {
  if (!s || dev < 0 || dev >= s->n) return NULL;
  return &s->dev[dev]->ops;
}

int gpuplan_mock_memory_info(const gpuplan_mock *s, int dev, gpuplan_mock_memory *out) {
  const simdev *d;
  if (!s || !out || dev < 0 || dev >= s->n) return GPUPLAN_EINVAL;
  d = s->dev[dev];
  out->name = d->name;
  out->total = d->total;
  out->context = d->context;
  out->others = d->others;
  out->reserved = d->reserved;
  out->used = d->reserved + d->context + d->others;
  out->free = avail(d);
  out->allocations = d->allocations;
  out->failed_allocations = d->failed;
  return GPUPLAN_OK;
}

/* --- telemetry and faults ---------------------------------------------------- */

static const char *const fault_names[GPUPLAN_FAULT_COUNT] = {
  "oom", "cuda-mismatch", "gpu-not-found", "ecc", "thermal", "data-starvation", "nvlink-down"};

const char *gpuplan_mock_fault_name(gpuplan_mock_fault f) {
  return (unsigned)f < GPUPLAN_FAULT_COUNT ? fault_names[f] : NULL;
}

int gpuplan_mock_fault_parse(const char *s) {
  int i;
  for (i = 0; s && i < GPUPLAN_FAULT_COUNT; i++)
    if (strcmp(s, fault_names[i]) == 0) return i;
  return -1;
}

#define HAS(d, f) (((d)->faults >> (f)) & 1u)

/* The thermal model: steady state T = inlet + R * P, first order with a
 * 30 s time constant; a healthy device sits near 70 C at full power, one
 * with failing cooling would pass 100 C, so it throttles at 83 C: clocks
 * drop until power holds it there.  Sources: 83 C and P0 -> P2 are the seed
 * article's (shared/seeds/000, problem 5).  The rest are assumptions chosen
 * to be plausible, not measured: 30 C inlet, 40 C rise at TDP (75 C with
 * the fault), idle power 15% of TDP, power linear in busy time and clock,
 * a starved GPU busy 35% of the time (the seed's "below 50%"). */
#define T_INLET 30.0
#define T_SLOWDOWN 83.0
#define TAU_S 30.0

static double tdp(const simdev *d) {
  return d->sku && isfinite(d->sku->tdp_w) && d->sku->tdp_w > 0 ? d->sku->tdp_w : 300.0;
}
static double r_th(const simdev *d) { return (HAS(d, GPUPLAN_FAULT_THERMAL) ? 75.0 : 40.0) / tdp(d); }
static double p_idle(const simdev *d) { return 0.15 * tdp(d); }
static double power(const simdev *d, double util, double f) {
  return p_idle(d) + (tdp(d) - p_idle(d)) * util * f;
}
static int max_clock(const simdev *d) {
  return d->sku && isfinite(d->sku->boost_clock_mhz) && d->sku->boost_clock_mhz > 0
             ? (int)d->sku->boost_clock_mhz : 1410;
}
static int nvlink_links(const simdev *d) {
  double bw, per;
  if (!d->sku || !isfinite(d->sku->nvlink_gen) || !isfinite(d->sku->nvlink_bw_bytes_s)) return 0;
  bw = d->sku->nvlink_bw_bytes_s;
  per = d->sku->nvlink_gen >= 5 ? 100e9 : 50e9; /* both directions per link */
  return (int)(bw / per + 0.5);
}

int gpuplan_mock_inject(gpuplan_mock *s, int dev, gpuplan_mock_fault f, int on) {
  int i;
  if (!s || (unsigned)f >= GPUPLAN_FAULT_COUNT || dev < -1 || dev >= s->n) return GPUPLAN_EINVAL;
  for (i = dev < 0 ? 0 : dev; i < (dev < 0 ? s->n : dev + 1); i++) {
    simdev *d = s->dev[i];
    if (on) d->faults |= 1u << f;
    else d->faults &= ~(1u << f);
    if (f == GPUPLAN_FAULT_ECC) {
      d->ecc_unc = on ? 2 : 0; /* volatile counters: a reset clears them */
      d->ecc_cor = on ? 17 : 0;
    }
    if (f == GPUPLAN_FAULT_OOM) {
      /* a stray process (a leftover notebook kernel, a zombie rank) */
      uint64_t room = d->total - d->context - d->reserved;
      d->others = on ? room / 100 * 95 / GPUPLAN_MOCK_GRANULARITY * GPUPLAN_MOCK_GRANULARITY : 0;
    }
  }
  return GPUPLAN_OK;
}

int gpuplan_mock_has_fault(const gpuplan_mock *s, int dev, gpuplan_mock_fault f) {
  if (!s || dev < 0 || dev >= s->n || (unsigned)f >= GPUPLAN_FAULT_COUNT) return 0;
  return (int)HAS(s->dev[dev], f);
}

const gpuplan_gpu *gpuplan_mock_sku(const gpuplan_mock *s, int dev) {
  return s && dev >= 0 && dev < s->n ? s->dev[dev]->sku : NULL;
}

int gpuplan_mock_run(gpuplan_mock *s, int dev, double seconds, double busy, const char **message_out) {
  simdev *d;
  double t;
  if (message_out) *message_out = NULL;
  if (!s || dev < 0 || dev >= s->n || !(seconds >= 0) || seconds > 1e7 || !(busy >= 0) || busy > 1)
    return GPUPLAN_EINVAL;
  d = s->dev[dev];
  if (HAS(d, GPUPLAN_FAULT_GPU_NOT_FOUND)) {
    if (message_out) *message_out = "RuntimeError: No CUDA GPUs are available";
    return GPUPLAN_ERROR;
  }
  if (HAS(d, GPUPLAN_FAULT_CUDA_MISMATCH)) {
    if (message_out)
      *message_out = "RuntimeError: CUDA error: no kernel image is available for execution on the device";
    return GPUPLAN_ERROR;
  }
  if (HAS(d, GPUPLAN_FAULT_ECC) && busy > 0) {
    if (message_out) *message_out = "RuntimeError: CUDA error: uncorrectable ECC error encountered";
    return GPUPLAN_ERROR;
  }
  /* starved: the GPU waits for input most of the time */
  d->util = busy * (HAS(d, GPUPLAN_FAULT_DATA_STARVATION) ? 0.35 : 1.0);
  for (t = 0; t < seconds; t += 1.0) {
    double dt = seconds - t < 1.0 ? seconds - t : 1.0;
    double f = 1.0, tss;
    if (d->util > 0 && d->temp >= T_SLOWDOWN - 1e-9) {
      /* hold at the slowdown temperature: the power that keeps it there */
      double p_allowed = (T_SLOWDOWN - T_INLET) / r_th(d);
      f = (p_allowed - p_idle(d)) / ((tdp(d) - p_idle(d)) * d->util);
      if (f > 1) f = 1;
      if (f < 0.3) f = 0.3;
    }
    tss = T_INLET + r_th(d) * power(d, d->util, f);
    d->temp = tss + (d->temp - tss) * exp(-dt / TAU_S);
    if (d->temp > 100.0) d->temp = 100.0;
    d->factor = f;
  }
  d->seconds += seconds;
  d->speed = d->factor * (HAS(d, GPUPLAN_FAULT_DATA_STARVATION) ? 0.35 : 1.0);
  return GPUPLAN_OK;
}

int gpuplan_mock_telemetry_read(const gpuplan_mock *s, int dev, gpuplan_mock_telemetry *out) {
  const simdev *d;
  if (!s || !out || dev < 0 || dev >= s->n) return GPUPLAN_EINVAL;
  d = s->dev[dev];
  memset(out, 0, sizeof *out);
  out->temperature_c = d->temp;
  out->power_limit_w = tdp(d);
  out->power_w = power(d, d->util, d->factor);
  out->max_sm_clock_mhz = max_clock(d);
  out->sm_clock_mhz = d->util > 0 ? (int)(max_clock(d) * d->factor + 0.5) : 210;
  out->pstate = d->util <= 0 ? 8 : d->factor < 1.0 ? 2 : 0;
  out->gpu_util = d->util;
  out->mem_util = 0.55 * d->util;
  if (d->util <= 0) out->throttle |= GPUPLAN_THROTTLE_GPU_IDLE;
  if (d->factor < 1.0) out->throttle |= GPUPLAN_THROTTLE_SW_THERMAL | GPUPLAN_THROTTLE_HW_SLOWDOWN;
  out->ecc_uncorrected = d->ecc_unc;
  out->ecc_corrected = d->ecc_cor;
  out->nvlink_links = nvlink_links(d);
  out->nvlink_up = HAS(d, GPUPLAN_FAULT_NVLINK_DOWN) ? 0 : out->nvlink_links;
  out->speed = d->speed;
  out->seconds = d->seconds;
  return GPUPLAN_OK;
}

/* --- the mock devices as a device backend ------------------------------------- */

static int any_fault(const gpuplan_mock *s, gpuplan_mock_fault f) {
  int i;
  for (i = 0; i < s->n; i++)
    if (HAS(s->dev[i], f)) return 1;
  return 0;
}

static int mock_driver(void *self, gpuplan_driver_info *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  if (any_fault(s, GPUPLAN_FAULT_GPU_NOT_FOUND))
    return gpuplan_seterror(s->ctx, GPUPLAN_EUNSUPPORTED,
                            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                            "that the latest NVIDIA driver is installed and running.");
  out->cuda_version = 12020; /* driver 535: CUDA 12.2, as in the seed's nvidia-smi */
  snprintf(out->library, sizeof out->library, "mock (driver 535.161.08)");
  return GPUPLAN_OK;
}

static int mock_count(void *self, int *n) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  gpuplan_driver_info drv;
  int rc = mock_driver(self, &drv);
  if (rc) return rc;
  *n = s->n;
  return GPUPLAN_OK;
}

static int mock_info(void *self, int dev, gpuplan_device_info *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  const simdev *d;
  gpuplan_driver_info drv;
  int rc = mock_driver(self, &drv);
  if (rc) return rc;
  if (dev < 0 || dev >= s->n)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  d = s->dev[dev];
  out->index = dev;
  snprintf(out->name, sizeof out->name, "%s", d->name);
  snprintf(out->uuid, sizeof out->uuid, "GPU-5a11ab1e-0000-4000-8000-%012x", (unsigned)dev);
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "00000000:%02X:00.0", (unsigned)(0x07 + dev));
  if (d->sku) {
    out->sm_count = isfinite(d->sku->sm_count) ? (int)d->sku->sm_count : 0;
    if (d->sku->compute_capability) sscanf(d->sku->compute_capability, "%d.%d", &out->cc_major, &out->cc_minor);
  }
  out->clock_mhz = max_clock(d);
  out->total_bytes = d->total;
  out->free_bytes = avail(d);
  return GPUPLAN_OK;
}

static int mock_memory(void *self, int dev, const gpuplan_device_ops **out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  if (dev < 0 || dev >= s->n)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  *out = &s->dev[dev]->ops;
  return GPUPLAN_OK;
}

static int mock_telemetry(void *self, int dev, gpuplan_device_telemetry *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  gpuplan_mock_telemetry t;
  gpuplan_driver_info drv;
  int rc = mock_driver(self, &drv);
  if (rc) return rc;
  if (gpuplan_mock_telemetry_read(s, dev, &t))
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  out->temperature_c = t.temperature_c;
  out->power_w = t.power_w;
  out->power_limit_w = t.power_limit_w;
  out->sm_clock_mhz = t.sm_clock_mhz;
  out->max_sm_clock_mhz = t.max_sm_clock_mhz;
  out->pstate = t.pstate;
  out->gpu_util = t.gpu_util;
  out->mem_util = t.mem_util;
  out->throttle = t.throttle;
  out->ecc_uncorrected = (long long)t.ecc_uncorrected;
  out->ecc_corrected = (long long)t.ecc_corrected;
  out->nvlink_links = t.nvlink_links;
  out->nvlink_up = t.nvlink_up;
  snprintf(out->driver_version, sizeof out->driver_version, "535.161.08");
  return GPUPLAN_OK;
}

static const gpuplan_backend_ops mock_ops = {"mock", mock_driver, mock_count, mock_info, mock_memory, NULL,
                                             mock_telemetry};

int gpuplan_mock_backend(gpuplan_mock *s, gpuplan_backend **out) {
  if (!s || !out) return GPUPLAN_EMISUSE;
  return gpuplan_backend_new(s->ctx, &mock_ops, s, out);
}

int gpuplan_mock_node(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *spec, const char *const *faults,
                     size_t nfaults, double load_s, double busy, double mem_fraction, gpuplan_mock **out) {
  char sku[96], name[64];
  const char *colon;
  const gpuplan_gpu *g;
  gpuplan_mock *s = NULL;
  long n = 1, i;
  size_t k;
  int rc;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx || !cat || !spec || (nfaults && !faults)) return gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "sim: NULL argument");
  if (!(load_s >= 0 && load_s <= 1e6) || !(busy >= 0 && busy <= 1) || !(mem_fraction >= 0 && mem_fraction <= 1))
    return gpuplan_seterror(ctx, GPUPLAN_EINVAL,
                            "load, busy, mem: load is 0..1e6 seconds, busy and mem are fractions in 0..1");
  colon = strchr(spec, ':');
  snprintf(sku, sizeof sku, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
  if (colon) {
    char *end;
    n = strtol(colon + 1, &end, 10);
    if (*end || n < 1 || n > 64)
      return gpuplan_seterror(ctx, GPUPLAN_EINVAL, "sim: '%s' is not SKU[:N] with N in 1..64", spec);
  }
  if ((rc = gpuplan_catalog_gpu(cat, sku, &g))) return rc;
  if ((rc = gpuplan_mock_new(ctx, &s))) return rc;
  for (i = 0; i < n; i++)
    if ((rc = gpuplan_mock_add_gpu(s, g, -1, NULL))) goto fail;
  for (k = 0; k < nfaults; k++) {
    const char *at = faults[k] ? strchr(faults[k], '@') : NULL;
    int dev = -1, f;
    if (!faults[k]) {
      rc = gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "faults: NULL entry");
      goto fail;
    }
    snprintf(name, sizeof name, "%.*s", at ? (int)(at - faults[k]) : (int)strlen(faults[k]), faults[k]);
    if (at) {
      char *end;
      dev = (int)strtol(at + 1, &end, 10);
      if (*end || !at[1]) dev = -2;
    }
    f = gpuplan_mock_fault_parse(name);
    if (f < 0 || dev < -1 || dev >= n || gpuplan_mock_inject(s, dev, (gpuplan_mock_fault)f, 1)) {
      rc = gpuplan_seterror(ctx, GPUPLAN_EINVAL,
                            "faults: '%s' is not NAME[@GPU] with NAME one of oom, cuda-mismatch, gpu-not-found, "
                            "ecc, thermal, data-starvation, nvlink-down and GPU in 0..%ld", faults[k], n - 1);
      goto fail;
    }
  }
  /* a training load: clocks, temperature and utilisation move, and the
   * job's PyTorch cache holds most of what is free */
  for (i = 0; i < n && load_s > 0; i++) {
    const gpuplan_device_ops *d = gpuplan_mock_device(s, (int)i);
    uint64_t fr, tot, addr;
    gpuplan_mock_run(s, (int)i, load_s, busy, NULL);
    d->mem_info(d->payload, &fr, &tot);
    if (mem_fraction > 0 && fr > tot / 4) d->malloc(d->payload, (uint64_t)((double)fr * mem_fraction), &addr);
  }
  *out = s;
  return GPUPLAN_OK;
fail:
  gpuplan_mock_free(s);
  return rc;
}

int gpuplan_mock_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                         const gpuplan_memory_options *options, const gpuplan_simulate_options *so_in,
                         uint64_t other_bytes, gpuplan_simulate_result *out) {
  gpuplan_memory worst;
  gpuplan_simulate_options so;
  gpuplan_mock *mock = NULL;
  uint64_t resident;
  int rc;
  if (!ctx || !model || !gpu || !options || !so_in || !out)
    return gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "simulate: NULL argument");
  if ((rc = gpuplan_memory_eval(ctx, model, gpu, options, GPUPLAN_STAGE_WORST, &worst))) return rc;
  resident = worst.item[GPUPLAN_MEM_CONTEXT].bytes + worst.item[GPUPLAN_MEM_NCCL].bytes +
             worst.item[GPUPLAN_MEM_WORKSPACE].bytes;
  if ((rc = gpuplan_mock_new(ctx, &mock))) return gpuplan_seterror(ctx, rc, "simulate: out of memory");
  rc = gpuplan_mock_add_device(mock, gpu->name, gpu->memory_bytes, resident, NULL);
  if (!rc && other_bytes) rc = gpuplan_mock_set_other_processes(mock, 0, other_bytes);
  if (rc) {
    gpuplan_mock_free(mock);
    return gpuplan_seterror(ctx, rc, "other_procs: %llu bytes do not fit beside the %llu bytes of CUDA context, "
                            "NCCL and cuBLAS on %s", (unsigned long long)other_bytes, (unsigned long long)resident,
                            gpu->name);
  }
  so = *so_in;
  so.device = gpuplan_mock_device(mock, 0);
  rc = gpuplan_simulate(ctx, model, gpu, options, &so, out);
  gpuplan_mock_free(mock);
  if (rc) return rc;
  out->capacity = gpu->memory_bytes - resident - other_bytes;
  return GPUPLAN_OK;
}
