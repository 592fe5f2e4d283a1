/*
 * mock.c: mock GPUs.  Only the public gpuplan API is used here.
 *
 * Device addresses come from a first-fit allocator over a free list of
 * address ranges that coalesces on free, as a driver's virtual address
 * allocator would, so that freed ranges are reused.
 *
 * Each device also has what nvidia-smi, NVML and DCGM report about it: the
 * driver's name for the SKU, a UUID and serial derived from its position
 * (distinct, stable), the PCI bus ids and NUMA layout of an 8-GPU HGX
 * board, the NVLink topology of its kind of node (NVSwitch, DGX-1's hybrid
 * cube-mesh, NVLink bridges), a thermal model, counters (energy, NVLink
 * traffic, time throttled), the processes holding its memory, and a
 * training job whose program moves all of these over simulated time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuplan/mock.h"
#include "plan/plan_int.h"

#define MOCK_DRIVER_DEFAULT "535.161.08"

typedef struct range {
  uint64_t addr, size;
} range;

typedef struct simdev {
  struct gpuplan_mock *sim;
  int index;
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
  /* counters since the driver loaded */
  double energy_j, nvlink_bytes, thermal_violation_s, busy_s;
  /* the job on this device */
  int job_state;        /* JOB_* */
  const char *job_msg;  /* static text, or job_oom */
  char job_oom[200];
  double job_s, steps;
  uint64_t job_mapped;  /* the job's PyTorch cache (through map) */
} simdev;

enum { JOB_NONE = 0, JOB_STARTING, JOB_TRAINING, JOB_CHECKPOINT, JOB_FAILED };

struct gpuplan_mock {
  gpuplan_ctx *ctx;
  simdev **dev;
  int n, cap;
  char driver[32];      /* the driver modelled */
  int cuda;             /* its CUDA version (12020) */
  /* the node's program (gpuplan_mock_node_ex) */
  int has_program;
  double busy, startup_s, step_s, ckpt_every_s, ckpt_s;
  int64_t job_bytes;
  char process_name[128];
  double t;             /* simulated seconds of the program */
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
  snprintf(s->driver, sizeof s->driver, "%s", MOCK_DRIVER_DEFAULT);
  s->cuda = gpuplan_driver_cuda_version(s->driver);
  s->busy = 0.95;
  s->job_bytes = -1;
  snprintf(s->process_name, sizeof s->process_name, "/usr/bin/python3");
  *out = s;
  return GPUPLAN_OK;
}

int gpuplan_mock_set_driver(gpuplan_mock *s, const char *version) {
  int cuda;
  if (!s) return GPUPLAN_EMISUSE;
  cuda = gpuplan_driver_cuda_version(version);
  if (!cuda || strlen(version) >= sizeof s->driver)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL,
                            "driver: '%s' is not an NVIDIA driver version of branch 450 or later (e.g. 535.161.08)",
                            version ? version : "(null)");
  snprintf(s->driver, sizeof s->driver, "%s", version);
  s->cuda = cuda;
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
  d->index = s->n;
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
  d->temp = 30.0 + ((double)(d->index % 4) - 1.5) * 0.8; /* inlet temperature: an idle, healthy device */
  d->factor = 1.0;
  d->speed = 1.0;
  s->dev[s->n] = d;
  if (index_out) *index_out = s->n;
  s->n++;
  return GPUPLAN_OK;
}

/* What the driver says about each SKU: its device name (the string NVML
 * and nvidia-smi print), a VBIOS version and PCI device id of the form real
 * cards report, the memory clock nvidia-smi shows at full speed, the BAR1
 * aperture, and the CPU cores per socket of the servers it ships in.  The
 * names are the drivers' (as in nvidia-smi output published for each card);
 * VBIOS strings, clocks and BAR1 sizes are typical values, not read from a
 * particular card. */
typedef struct sku_facts {
  const char *id, *name, *vbios;
  unsigned pci_id;
  int mem_clock_mhz, bar1_mib, cores_per_socket;
} sku_facts;

static const sku_facts facts[] = {
  {"a100-sxm4-80gb", "NVIDIA A100-SXM4-80GB", "92.00.45.00.03", 0x20B210DEu, 1593, 131072, 48},
  {"a100-sxm4-40gb", "NVIDIA A100-SXM4-40GB", "92.00.19.00.01", 0x20B010DEu, 1215, 65536, 48},
  {"a100-pcie-80gb", "NVIDIA A100 80GB PCIe", "92.00.40.00.03", 0x20B510DEu, 1512, 131072, 32},
  {"h100-sxm5-80gb", "NVIDIA H100 80GB HBM3", "96.00.74.00.0D", 0x233010DEu, 2619, 131072, 56},
  {"h100-pcie-80gb", "NVIDIA H100 PCIe", "96.00.30.00.01", 0x233110DEu, 1593, 131072, 32},
  {"h100-nvl-94gb", "NVIDIA H100 NVL", "96.00.6A.00.01", 0x232110DEu, 2619, 131072, 32},
  {"h200-sxm-141gb", "NVIDIA H200", "96.00.A5.00.01", 0x233510DEu, 3201, 262144, 56},
  {"b100", "NVIDIA B100", "97.00.2F.00.01", 0x290010DEu, 3996, 262144, 56},
  {"b200", "NVIDIA B200", "97.00.3E.00.01", 0x290110DEu, 3996, 262144, 56},
  {"gb200", "NVIDIA GB200", "97.00.4B.00.01", 0x294110DEu, 3996, 262144, 72},
  {"v100-sxm2-32gb", "Tesla V100-SXM2-32GB", "88.00.80.00.01", 0x1DB510DEu, 877, 32768, 20},
  {"t4", "Tesla T4", "90.04.38.00.03", 0x1EB810DEu, 5001, 256, 24},
  {"a10", "NVIDIA A10", "94.02.5C.00.01", 0x223610DEu, 6251, 32768, 24},
  {"a10g", "NVIDIA A10G", "94.02.75.00.01", 0x223710DEu, 6251, 32768, 24},
  {"l4", "NVIDIA L4", "95.04.29.00.06", 0x27B810DEu, 6251, 32768, 24},
  {"l40s", "NVIDIA L40S", "95.02.66.00.02", 0x26B910DEu, 9001, 65536, 32},
  {"rtx-4090", "NVIDIA GeForce RTX 4090", "95.02.3C.00.01", 0x268410DEu, 10501, 256, 16},
};

static const sku_facts *facts_of(const gpuplan_gpu *g) {
  size_t i;
  for (i = 0; g && i < sizeof facts / sizeof facts[0]; i++)
    if (strcmp(facts[i].id, g->id) == 0) return &facts[i];
  return NULL;
}

int gpuplan_mock_add_gpu(gpuplan_mock *s, const gpuplan_gpu *sku, int64_t context_bytes,
                        int *index_out) {
  const sku_facts *f;
  char name[64];
  int idx, rc;
  if (!s || !sku) return GPUPLAN_EMISUSE;
  if (context_bytes < -1) return GPUPLAN_EINVAL;
  f = facts_of(sku);
  if (f) snprintf(name, sizeof name, "%s", f->name);
  else snprintf(name, sizeof name, "%s%.50s", strncmp(sku->name, "NVIDIA", 6) ? "NVIDIA " : "", sku->name);
  rc = gpuplan_mock_add_device(s, name, sku->memory_bytes,
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
 * to be plausible, not measured: 30 C inlet (+-1.2 C by the device's place
 * in the chassis, so that no two neighbours read alike), 40 C rise at TDP
 * (75 C with the fault), idle power 15% of TDP, power linear in busy time
 * and clock, a starved GPU busy 35% of the time (the seed's "below 50%"). */
#define T_INLET 30.0
#define T_SLOWDOWN 83.0
#define T_SHUTDOWN 92.0
#define TAU_S 30.0

static double inlet(const simdev *d) { return T_INLET + ((double)(d->index % 4) - 1.5) * 0.8; }
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
/* One link's bandwidth each way, as `nvidia-smi nvlink -s` prints it. */
static double link_gbps(const simdev *d) {
  double g = d->sku && isfinite(d->sku->nvlink_gen) ? d->sku->nvlink_gen : 0;
  return g >= 5 ? 50.0 : g >= 4 ? 26.562 : g >= 3 ? 25.0 : g >= 2 ? 25.781 : 0;
}
/* Fell off the bus: gpu-not-found on this GPU while others still answer. */
static int lost(const simdev *d) { return HAS(d, GPUPLAN_FAULT_GPU_NOT_FOUND) != 0; }
static int all_lost(const gpuplan_mock *s) {
  int i;
  for (i = 0; i < s->n; i++)
    if (!lost(s->dev[i])) return 0;
  return s->n > 0;
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

/* The error a fault that stops the work makes the framework print, or NULL. */
static const char *stops(const simdev *d, double busy) {
  if (HAS(d, GPUPLAN_FAULT_GPU_NOT_FOUND)) return "RuntimeError: No CUDA GPUs are available";
  if (HAS(d, GPUPLAN_FAULT_CUDA_MISMATCH))
    return "RuntimeError: CUDA error: no kernel image is available for execution on the device";
  if (HAS(d, GPUPLAN_FAULT_ECC) && busy > 0) return "RuntimeError: CUDA error: uncorrectable ECC error encountered";
  return NULL;
}

/* Clocks, temperature and counters over seconds at busy (no fault check). */
static void thermal_run(simdev *d, double seconds, double busy) {
  double t;
  d->util = busy * (HAS(d, GPUPLAN_FAULT_DATA_STARVATION) ? 0.35 : 1.0); /* starved: waits for input */
  for (t = 0; t < seconds; t += 1.0) {
    double dt = seconds - t < 1.0 ? seconds - t : 1.0;
    double f = 1.0, tss;
    if (d->util > 0 && d->temp >= T_SLOWDOWN - 1e-9) {
      /* hold at the slowdown temperature: the power that keeps it there */
      double p_allowed = (T_SLOWDOWN - inlet(d)) / r_th(d);
      f = (p_allowed - p_idle(d)) / ((tdp(d) - p_idle(d)) * d->util);
      if (f > 1) f = 1;
      if (f < 0.3) f = 0.3;
    }
    tss = inlet(d) + r_th(d) * power(d, d->util, f);
    d->temp = tss + (d->temp - tss) * exp(-dt / TAU_S);
    if (d->temp > 100.0) d->temp = 100.0;
    d->factor = f;
    /* counters: energy, time held down, NVLink traffic (tensor-parallel
     * collectives: assumed a quarter of the links' bandwidth while busy) */
    d->energy_j += power(d, d->util, f) * dt;
    if (f < 1.0) d->thermal_violation_s += dt;
    if (d->util > 0) d->busy_s += dt * d->util;
    if (!HAS(d, GPUPLAN_FAULT_NVLINK_DOWN))
      d->nvlink_bytes += d->util * f * nvlink_links(d) * link_gbps(d) * 1e9 * 2 * 0.25 * dt;
  }
  d->seconds += seconds;
  d->speed = d->factor * (HAS(d, GPUPLAN_FAULT_DATA_STARVATION) ? 0.35 : 1.0);
}

int gpuplan_mock_run(gpuplan_mock *s, int dev, double seconds, double busy, const char **message_out) {
  simdev *d;
  const char *why;
  if (message_out) *message_out = NULL;
  if (!s || dev < 0 || dev >= s->n || !(seconds >= 0) || seconds > 1e7 || !(busy >= 0) || busy > 1)
    return GPUPLAN_EINVAL;
  d = s->dev[dev];
  if ((why = stops(d, busy))) {
    if (message_out) *message_out = why;
    return GPUPLAN_ERROR;
  }
  thermal_run(d, seconds, busy);
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

/* --- the node's training program ------------------------------------------- */

static const char *const job_states[] = {"none", "starting", "training", "checkpoint", "failed"};

static void job_fail(simdev *d, const char *msg) {
  const gpuplan_device_ops *o = &d->ops;
  d->job_state = JOB_FAILED;
  if (msg != d->job_oom) d->job_msg = msg;
  else d->job_msg = d->job_oom;
  if (d->job_mapped) o->unmap(o->payload, d->job_mapped); /* the process exits: its cache goes */
  d->job_mapped = 0;
}

/* The phase of the program at t and the busy fraction it asks for. */
static double phase(const gpuplan_mock *s, double t, int *state) {
  if (!s->has_program) {
    *state = s->busy > 0 ? JOB_TRAINING : JOB_NONE;
    return s->busy;
  }
  if (t < s->startup_s) {
    *state = JOB_STARTING; /* loading weights and data: the GPU barely busy */
    return 0.03;
  }
  if (s->ckpt_every_s > 0 && s->ckpt_s > 0 && fmod(t - s->startup_s, s->ckpt_every_s + s->ckpt_s) >= s->ckpt_every_s) {
    *state = JOB_CHECKPOINT; /* writing a checkpoint: the GPU waits on storage */
    return 0.03;
  }
  *state = JOB_TRAINING;
  return s->busy;
}

int gpuplan_mock_advance(gpuplan_mock *s, double seconds) {
  double done = 0;
  int i;
  if (!s) return GPUPLAN_EMISUSE;
  if (!(seconds >= 0) || seconds > 1e7)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "load: %g is not 0..1e7 seconds", seconds);
  while (done < seconds) {
    double dt = seconds - done < 1.0 ? seconds - done : 1.0;
    int state;
    double busy = phase(s, s->t, &state);
    for (i = 0; i < s->n; i++) {
      simdev *d = s->dev[i];
      const char *why;
      if (d->job_state == JOB_FAILED || state == JOB_NONE) {
        thermal_run(d, dt, 0);
        continue;
      }
      if ((why = stops(d, busy > 0 ? busy : 1))) {
        job_fail(d, why);
        thermal_run(d, dt, 0);
        continue;
      }
      /* the first training step allocates the job's cache */
      if (state == JOB_TRAINING && s->job_bytes > 0 && !d->job_mapped) {
        const gpuplan_device_ops *o = &d->ops;
        if (o->map(o->payload, (uint64_t)s->job_bytes) != GPUPLAN_OK) {
          snprintf(d->job_oom, sizeof d->job_oom,
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU %d has a total "
                   "capacity of %.2f GiB of which %.2f GiB is free.", (double)s->job_bytes / 1073741824.0, i,
                   (double)d->total / 1073741824.0, (double)avail(d) / 1073741824.0);
          job_fail(d, d->job_oom);
          thermal_run(d, dt, 0);
          continue;
        }
        d->job_mapped = granular((uint64_t)s->job_bytes);
      }
      d->job_state = state;
      thermal_run(d, dt, busy);
      d->job_s += dt;
      if (state == JOB_TRAINING && s->step_s > 0) d->steps += dt * d->speed / s->step_s;
    }
    s->t += dt;
    done += dt;
  }
  return GPUPLAN_OK;
}

int gpuplan_mock_job_read(const gpuplan_mock *s, int dev, gpuplan_mock_job *out) {
  const simdev *d;
  if (!s || !out || dev < 0 || dev >= s->n) return GPUPLAN_EINVAL;
  d = s->dev[dev];
  out->state = job_states[d->job_state];
  out->message = d->job_state == JOB_FAILED ? d->job_msg : NULL;
  out->seconds = d->job_s;
  out->steps = d->steps;
  out->bytes = d->job_state == JOB_FAILED ? 0 : d->reserved;
  return GPUPLAN_OK;
}

/* --- the mock devices as a device backend ------------------------------------- */

static int mock_driver(void *self, gpuplan_driver_info *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  if (all_lost(s))
    return gpuplan_seterror(s->ctx, GPUPLAN_EUNSUPPORTED,
                            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                            "that the latest NVIDIA driver is installed and running.");
  out->cuda_version = s->cuda; /* driver 535: CUDA 12.2, as in the seed's nvidia-smi */
  snprintf(out->library, sizeof out->library, "mock (driver %s)", s->driver);
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

/* A stable 64-bit hash of the device's name and place (splitmix64 over FNV-1a). */
static uint64_t ident(const simdev *d, uint64_t salt) {
  uint64_t h = 1469598103934665603ull, x;
  const char *p;
  for (p = d->name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  x = h ^ ((uint64_t)d->index * 0x9e3779b97f4a7c15ull) ^ salt;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The PCI buses of an HGX 8-GPU board's GPUs (as DGX A100 and H100 list
 * them); devices past 8 continue above. */
static unsigned bus_of(int i) {
  static const unsigned hgx[8] = {0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD};
  return i < 8 ? hgx[i] : (unsigned)(0xC0 + i) & 0xFFu;
}
/* Two CPU sockets, half the GPUs on each (one socket for fewer than 4). */
static int socket_of(const gpuplan_mock *s, int i) { return s->n >= 4 && i >= (s->n + 1) / 2 ? 1 : 0; }

static int mock_info(void *self, int dev, gpuplan_device_info *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  const simdev *d;
  gpuplan_driver_info drv;
  uint64_t h1, h2;
  int rc = mock_driver(self, &drv);
  if (rc) return rc;
  if (dev < 0 || dev >= s->n)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  d = s->dev[dev];
  out->index = dev;
  snprintf(out->name, sizeof out->name, "%s", d->name);
  h1 = ident(d, 1);
  h2 = ident(d, 2);
  snprintf(out->uuid, sizeof out->uuid, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(h1 >> 32),
           (unsigned)(h1 >> 16) & 0xFFFFu, (unsigned)h1 & 0xFFFFu, (unsigned)(h2 >> 48),
           (unsigned long long)(h2 & 0xFFFFFFFFFFFFull));
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "00000000:%02X:00.0", bus_of(dev));
  if (d->sku) {
    out->sm_count = isfinite(d->sku->sm_count) ? (int)d->sku->sm_count : 0;
    if (d->sku->compute_capability) sscanf(d->sku->compute_capability, "%d.%d", &out->cc_major, &out->cc_minor);
  }
  out->clock_mhz = max_clock(d);
  {
    const sku_facts *f = facts_of(d->sku);
    out->mem_clock_mhz = f ? f->mem_clock_mhz : 0;
  }
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

static int has_hbm(const simdev *d) { return d->sku && d->sku->memory_type && !strncmp(d->sku->memory_type, "HBM", 3); }
static int geforce(const simdev *d) { return strstr(d->name, "GeForce") != NULL; }

static int mock_telemetry(void *self, int dev, gpuplan_device_telemetry *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  gpuplan_mock_telemetry t;
  gpuplan_driver_info drv;
  const simdev *d;
  const sku_facts *f;
  int rc = mock_driver(self, &drv), cc = 0, sock, cps;
  if (rc) return rc;
  if (gpuplan_mock_telemetry_read(s, dev, &t))
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  d = s->dev[dev];
  f = facts_of(d->sku);
  snprintf(out->driver_version, sizeof out->driver_version, "%s", s->driver);
  if (lost(d)) {
    out->lost = 1; /* "Unable to determine the device handle for GPU ...: GPU is lost" */
    out->xid = 79;
    return GPUPLAN_OK;
  }
  if (d->sku && d->sku->compute_capability) {
    int a = 0, b = 0;
    if (sscanf(d->sku->compute_capability, "%d.%d", &a, &b) == 2) cc = a * 10 + b;
  }
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
  out->memory_temperature_c = has_hbm(d) ? t.temperature_c + 3.0 + 4.0 * t.gpu_util : NAN;
  out->slowdown_temp_c = T_SLOWDOWN;
  out->shutdown_temp_c = T_SHUTDOWN;
  /* passively cooled data-center cards report no fan */
  out->fan_speed = geforce(d) ? fmin(1.0, fmax(0.3, 0.3 + (t.temperature_c - 40.0) / 60.0)) : NAN;
  out->graphics_clock_mhz = t.sm_clock_mhz;
  out->max_graphics_clock_mhz = t.max_sm_clock_mhz;
  out->mem_clock_mhz = out->max_mem_clock_mhz = f ? f->mem_clock_mhz : -1;
  out->pcie_gen_max = d->sku && isfinite(d->sku->pcie_gen) ? (int)d->sku->pcie_gen : 4;
  out->pcie_gen = t.gpu_util > 0 ? out->pcie_gen_max : 1; /* idle links drop to Gen1 */
  out->pcie_width = out->pcie_width_max = 16;
  out->persistence_mode = 1;
  out->ecc_mode = geforce(d) ? -1 : 1;
  out->compute_mode = 0;
  out->mig_mode = has_hbm(d) && cc >= 80 && !geforce(d) ? 0 : -1;
  out->ecc_uncorrected_aggregate = out->ecc_uncorrected;
  out->ecc_corrected_aggregate = out->ecc_corrected;
  /* Volta and Turing retire pages; Ampere and later remap rows */
  out->retired_sbe = out->retired_dbe = out->remapped_correctable = out->remapped_uncorrectable = -1;
  out->retired_pending = out->remap_pending = out->remap_failure = -1;
  if (out->ecc_mode > 0 && cc < 80) {
    out->retired_sbe = 0;
    out->retired_dbe = (long long)d->ecc_unc;
    out->retired_pending = d->ecc_unc > 0;
  } else if (out->ecc_mode > 0) {
    out->remapped_correctable = 0;
    out->remapped_uncorrectable = (long long)d->ecc_unc;
    out->remap_pending = d->ecc_unc > 0;
    out->remap_failure = 0;
  }
  out->enc_util = out->dec_util = 0;
  snprintf(out->serial, sizeof out->serial, "13%011llu", (unsigned long long)(ident(d, 3) % 100000000000ull));
  snprintf(out->vbios_version, sizeof out->vbios_version, "%s", f ? f->vbios : "00.00.00.00.00");
  /* Xid 48 double-bit ECC (Volta), 94 contained ECC error (Ampere+), 74 NVLink error */
  out->xid = d->ecc_unc ? (cc < 80 ? 48 : 94) : HAS(d, GPUPLAN_FAULT_NVLINK_DOWN) && nvlink_links(d) ? 74 : 0;
  out->energy_j = d->energy_j;
  out->nvlink_bytes = nvlink_links(d) ? d->nvlink_bytes : NAN;
  out->nvlink_link_gbps = nvlink_links(d) ? link_gbps(d) : NAN;
  out->nvlink_up_mask = t.nvlink_up >= 64 ? ~0ull : (1ull << t.nvlink_up) - 1;
  /* input batches host to device, a little back (assumed) */
  out->pcie_rx_bytes_s = 1.5e9 * t.gpu_util;
  out->pcie_tx_bytes_s = 0.25e9 * t.gpu_util;
  out->pcie_replays = 0;
  out->power_violation_s = 0;
  out->thermal_violation_s = d->thermal_violation_s;
  out->bar1_total_bytes = (uint64_t)(f ? f->bar1_mib : 256) << 20;
  out->bar1_used_bytes = (d->reserved ? 14ull : 2ull) << 20;
  out->fb_reserved_bytes = 0;
  sock = socket_of(s, dev);
  cps = f ? f->cores_per_socket : 24;
  out->numa_node = sock;
  snprintf(out->cpu_affinity, sizeof out->cpu_affinity, "%d-%d,%d-%d", sock * cps, sock * cps + cps - 1,
           2 * cps + sock * cps, 2 * cps + sock * cps + cps - 1);
  return GPUPLAN_OK;
}

/* The job's process (its cache and CUDA context) and a stray one holding
 * the memory of an oom fault. */
static int mock_processes(void *self, int dev, gpuplan_device_process *out, size_t cap, size_t *n) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  const simdev *d;
  gpuplan_driver_info drv;
  gpuplan_device_process p[2];
  size_t k = 0, i;
  int rc = mock_driver(self, &drv);
  *n = 0;
  if (rc) return rc;
  if (dev < 0 || dev >= s->n)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", dev, s->n - 1);
  d = s->dev[dev];
  if (lost(d)) return GPUPLAN_OK;
  memset(p, 0, sizeof p);
  if (d->job_state != JOB_FAILED && (d->reserved > 0 || d->job_state != JOB_NONE)) {
    p[k].pid = 31400u + (unsigned)dev; /* torchrun's workers, one per GPU */
    p[k].type = 'C';
    snprintf(p[k].name, sizeof p[k].name, "%s", s->process_name);
    p[k].used_bytes = d->reserved + d->context;
    p[k].role = 1;
    p[k].sm_util = d->util;
    p[k].mem_util = 0.55 * d->util;
    k++;
  }
  if (d->others) {
    p[k].pid = 4242u + (unsigned)dev;
    p[k].type = 'C';
    snprintf(p[k].name, sizeof p[k].name, "/opt/conda/bin/python");
    p[k].used_bytes = d->others;
    p[k].role = 2;
    p[k].sm_util = p[k].mem_util = 0;
    k++;
  }
  for (i = 0; i < k && i < cap; i++) out[i] = p[i];
  *n = k;
  return GPUPLAN_OK;
}

/* DGX-1 (V100): the hybrid cube-mesh.  Each GPU's six links go to four
 * peers, one or two links each; the rest of the pairs have no NVLink and
 * cross the CPUs (nvidia-smi topo -m on a DGX-1V). */
static const unsigned char dgx1[8][8] = {
  {0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0}, {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
  {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1}, {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0},
};

static int mock_link(void *self, int a, int b, gpuplan_device_link *out) {
  gpuplan_mock *s = (gpuplan_mock *)self;
  const simdev *x, *y;
  const char *ff;
  int la, lb, links = 0;
  gpuplan_driver_info drv;
  int rc = mock_driver(self, &drv);
  if (rc) return rc;
  if (a < 0 || a >= s->n || b < 0 || b >= s->n)
    return gpuplan_seterror(s->ctx, GPUPLAN_EINVAL, "device: %d is not in 0..%d", a < 0 || a >= s->n ? a : b,
                            s->n - 1);
  x = s->dev[a];
  y = s->dev[b];
  la = nvlink_links(x);
  lb = nvlink_links(y);
  ff = x->sku && x->sku->form_factor ? x->sku->form_factor : "";
  if (a != b && la && lb && x->sku == y->sku && !HAS(x, GPUPLAN_FAULT_NVLINK_DOWN) &&
      !HAS(y, GPUPLAN_FAULT_NVLINK_DOWN) && !lost(x) && !lost(y)) {
    if (x->sku->nvlink_gen < 3 && strstr(ff, "SXM")) links = a / 8 == b / 8 ? dgx1[a % 8][b % 8] : 0;
    else if (strstr(ff, "SXM") || strstr(ff, "superchip")) links = la < lb ? la : lb; /* NVSwitch */
    else links = a / 2 == b / 2 ? (la < lb ? la : lb) : 0;                           /* bridged pairs */
  }
  out->nvlinks = links;
  /* PCIe: pairs share a switch, then the socket's host bridges, then UPI */
  if (a == b) snprintf(out->pcie, sizeof out->pcie, "X");
  else if (a / 2 == b / 2) snprintf(out->pcie, sizeof out->pcie, "PXB");
  else if (socket_of(s, a) == socket_of(s, b)) snprintf(out->pcie, sizeof out->pcie, "NODE");
  else snprintf(out->pcie, sizeof out->pcie, "SYS");
  return GPUPLAN_OK;
}

static const gpuplan_backend_ops mock_ops = {"mock", mock_driver, mock_count, mock_info, mock_memory, NULL,
                                             mock_telemetry, mock_processes, mock_link};

int gpuplan_mock_backend(gpuplan_mock *s, gpuplan_backend **out) {
  if (!s || !out) return GPUPLAN_EMISUSE;
  return gpuplan_backend_new(s->ctx, &mock_ops, s, out);
}

int gpuplan_mock_node(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *spec, const char *const *faults,
                     size_t nfaults, double load_s, double busy, double mem_fraction, gpuplan_mock **out) {
  gpuplan_mock_node_options o = GPUPLAN_MOCK_NODE_OPTIONS_INIT;
  o.spec = spec;
  o.faults = faults;
  o.nfaults = nfaults;
  o.load_s = load_s;
  o.busy = busy;
  o.mem_fraction = mem_fraction;
  return gpuplan_mock_node_ex(ctx, cat, &o, out);
}

int gpuplan_mock_node_ex(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_mock_node_options *o,
                        gpuplan_mock **out) {
  char sku[96], name[64];
  const char *colon, *spec;
  const gpuplan_gpu *g;
  gpuplan_mock *s = NULL;
  long n = 1, i;
  size_t k;
  int rc;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx || !cat || !o || !o->spec || (o->nfaults && !o->faults))
    return gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "sim: NULL argument");
  if (o->version < 1 || o->version > GPUPLAN_MOCK_NODE_OPTIONS_VERSION) /* 1..current (conventions rule 4) */
    return gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "sim: options version %u (this library reads 1 to %u)", o->version,
                            GPUPLAN_MOCK_NODE_OPTIONS_VERSION);
  spec = o->spec;
  if (!(o->load_s >= 0 && o->load_s <= 1e6) || !(o->busy >= 0 && o->busy <= 1) ||
      !(o->mem_fraction >= 0 && o->mem_fraction <= 1))
    return gpuplan_seterror(ctx, GPUPLAN_EINVAL,
                            "load, busy, mem: load is 0..1e6 seconds, busy and mem are fractions in 0..1");
  if (!(o->startup_s >= 0 && o->startup_s <= 1e6) || !(o->step_s >= 0 && o->step_s <= 1e6) ||
      !(o->checkpoint_every_s >= 0 && o->checkpoint_every_s <= 1e7) ||
      !(o->checkpoint_s >= 0 && o->checkpoint_s <= 1e6) || o->job_bytes < -1)
    return gpuplan_seterror(ctx, GPUPLAN_EINVAL,
                            "job: startup, step and checkpoint times are 0..1e6 seconds, job bytes >= 0 or -1");
  colon = strchr(spec, ':');
  snprintf(sku, sizeof sku, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
  if (colon) {
    char *end;
    n = strtol(colon + 1, &end, 10);
    if (*end || n < 1 || n > 64 || !colon[1] || colon[1] == ' ' || colon[1] == '+' || colon[1] == '-')
      return gpuplan_seterror(ctx, GPUPLAN_EINVAL, "sim: '%s' is not SKU[:N] with N in 1..64", spec);
  }
  if ((rc = gpuplan_catalog_gpu(cat, sku, &g))) return rc;
  if ((rc = gpuplan_mock_new(ctx, &s))) return rc;
  if (o->driver && (rc = gpuplan_mock_set_driver(s, o->driver))) goto fail;
  for (i = 0; i < n; i++)
    if ((rc = gpuplan_mock_add_gpu(s, g, -1, NULL))) goto fail;
  for (k = 0; k < o->nfaults; k++) {
    const char *fs = o->faults[k];
    const char *at = fs ? strchr(fs, '@') : NULL;
    int dev = -1, f;
    if (!fs) {
      rc = gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "fault: NULL entry");
      goto fail;
    }
    snprintf(name, sizeof name, "%.*s", at ? (int)(at - fs) : (int)strlen(fs), fs);
    if (at) {
      char *end;
      long v = strtol(at + 1, &end, 10);
      dev = *end || !at[1] || at[1] < '0' || at[1] > '9' || v > 64 ? -2 : (int)v;
    }
    f = gpuplan_mock_fault_parse(name);
    if (f < 0 || dev < -1 || dev >= n || gpuplan_mock_inject(s, dev, (gpuplan_mock_fault)f, 1)) {
      rc = gpuplan_seterror(ctx, GPUPLAN_EINVAL,
                            "fault: '%s' is not NAME[@GPU] with NAME one of oom, cuda-mismatch, gpu-not-found, "
                            "ecc, thermal, data-starvation, nvlink-down and GPU in 0..%ld", fs, n - 1);
      goto fail;
    }
  }
  s->busy = o->busy;
  s->startup_s = o->startup_s;
  s->step_s = o->step_s;
  s->ckpt_every_s = o->checkpoint_every_s;
  s->ckpt_s = o->checkpoint_s;
  s->job_bytes = o->job_bytes;
  s->has_program = o->startup_s > 0 || o->step_s > 0 || o->checkpoint_every_s > 0 || o->job_bytes >= 0;
  if (o->process_name) snprintf(s->process_name, sizeof s->process_name, "%s", o->process_name);
  /* a training load: clocks, temperature and utilisation move */
  if ((rc = gpuplan_mock_advance(s, o->load_s))) goto fail;
  /* a node already training: the job's PyTorch cache holds most of what is free */
  for (i = 0; i < n && o->job_bytes < 0 && o->load_s > 0 && o->mem_fraction > 0; i++) {
    simdev *d = s->dev[i];
    uint64_t fr = avail(d), want = (uint64_t)((double)fr * o->mem_fraction);
    if (d->job_state == JOB_FAILED || d->job_state == JOB_NONE || fr <= d->total / 4) continue;
    if (d->ops.map(d->ops.payload, want) == GPUPLAN_OK) d->job_mapped = granular(want);
  }
  *out = s;
  return GPUPLAN_OK;
fail:
  gpuplan_mock_free(s);
  return rc;
}

/* gpuplan_mock_simulate, and the job API's simulate with memory_summary()
 * (sum, may be NULL): a mock GPU with the memory the driver reports
 * (options->gpu_total_bytes, else the catalog's NVML total, else the
 * marketed size: gpuplan_gpu_usable_bytes), with the memory
 * outside PyTorch's allocator resident (the CUDA context and NCCL; the
 * cuBLAS workspace is an allocation of the simulated cache,
 * plan/program.c) and other processes charged. */
int gpuplan__mock_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                           const gpuplan_memory_options *options, const gpuplan_simulate_options *so_in,
                           uint64_t other_bytes, gpuplan_simulate_result *out, gpuplan__sim_summary *sum) {
  gpuplan_memory worst;
  gpuplan_simulate_options so;
  gpuplan_mock *mock = NULL;
  gpuplan_gpu dev;
  uint64_t resident;
  int rc;
  if (!ctx || !model || !gpu || !options || !so_in || !out)
    return gpuplan_seterror(ctx, GPUPLAN_EMISUSE, "simulate: NULL argument");
  if ((rc = gpuplan_memory_eval(ctx, model, gpu, options, GPUPLAN_STAGE_WORST, &worst))) return rc;
  dev = *gpu;
  dev.memory_bytes = gpuplan__gpu_total(gpu, options, NULL);
  gpu = &dev;
  resident = worst.item[GPUPLAN_MEM_CONTEXT].bytes + worst.item[GPUPLAN_MEM_NCCL].bytes;
  if ((rc = gpuplan_mock_new(ctx, &mock))) return rc == GPUPLAN_ENOMEM ? gpuplan__nomem(ctx) : rc;
  rc = gpuplan_mock_add_device(mock, gpu->name, gpu->memory_bytes, resident, NULL);
  if (!rc && other_bytes) rc = gpuplan_mock_set_other_processes(mock, 0, other_bytes);
  if (rc == GPUPLAN_ENOMEM) {
    gpuplan_mock_free(mock);
    return gpuplan__nomem(ctx);
  }
  if (rc) {
    gpuplan_mock_free(mock);
    return gpuplan_seterror(ctx, rc, "other_procs: %llu bytes do not fit beside the %llu bytes of CUDA context "
                            "and NCCL on %s", (unsigned long long)other_bytes, (unsigned long long)resident,
                            gpu->name);
  }
  /* A version-1 caller's options end before cuda_graph. */
  memset(&so, 0, sizeof so);
  memcpy(&so, so_in, so_in->version >= 2 ? sizeof so : offsetof(gpuplan_simulate_options, cuda_graph));
  so.device = gpuplan_mock_device(mock, 0);
  rc = gpuplan__simulate_summary(ctx, model, gpu, options, &so, out, sum);
  gpuplan_mock_free(mock);
  if (rc) return rc;
  out->capacity = gpu->memory_bytes - resident - other_bytes;
  return GPUPLAN_OK;
}

int gpuplan_mock_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                         const gpuplan_memory_options *options, const gpuplan_simulate_options *so_in,
                         uint64_t other_bytes, gpuplan_simulate_result *out) {
  return gpuplan__mock_simulate(ctx, model, gpu, options, so_in, other_bytes, out, NULL);
}
