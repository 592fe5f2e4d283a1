/*
 * sim.c: mock GPUs.  Only the public gpuplan API is used here.
 *
 * Device addresses come from a first-fit allocator over a free list of
 * address ranges that coalesces on free, as a driver's virtual address
 * allocator would, so that freed ranges are reused.
 */
#include <string.h>

#include "gpuplan/sim.h"

typedef struct range {
  uint64_t addr, size;
} range;

typedef struct simdev {
  struct gpuplan_sim *sim;
  char name[64];
  uint64_t total, context, others, reserved;
  uint64_t allocations, failed;
  uint64_t base, top;   /* address space [base, top) handed out so far */
  range *free;          /* free ranges below top, sorted by address */
  size_t nfree, capfree;
  gpuplan_device_ops ops;
} simdev;

struct gpuplan_sim {
  gpuplan_ctx *ctx;
  simdev **dev;
  int n, cap;
};

static uint64_t granular(uint64_t size) {
  return (size + GPUPLAN_SIM_GRANULARITY - 1) / GPUPLAN_SIM_GRANULARITY * GPUPLAN_SIM_GRANULARITY;
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

int gpuplan_sim_new(gpuplan_ctx *ctx, gpuplan_sim **out) {
  gpuplan_sim *s;
  if (!ctx || !out) return GPUPLAN_EMISUSE;
  s = gpuplan_malloc(ctx, sizeof *s);
  if (!s) return GPUPLAN_ENOMEM;
  memset(s, 0, sizeof *s);
  s->ctx = ctx;
  *out = s;
  return GPUPLAN_OK;
}

void gpuplan_sim_free(gpuplan_sim *s) {
  int i;
  if (!s) return;
  for (i = 0; i < s->n; i++) {
    gpuplan_free(s->ctx, s->dev[i]->free);
    gpuplan_free(s->ctx, s->dev[i]);
  }
  gpuplan_free(s->ctx, s->dev);
  gpuplan_free(s->ctx, s);
}

int gpuplan_sim_add_device(gpuplan_sim *s, const char *name, uint64_t total, uint64_t context,
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
  s->dev[s->n] = d;
  if (index_out) *index_out = s->n;
  s->n++;
  return GPUPLAN_OK;
}

int gpuplan_sim_add_gpu(gpuplan_sim *s, const gpuplan_gpu *sku, int64_t context_bytes,
                        int *index_out) {
  if (!s || !sku) return GPUPLAN_EMISUSE;
  if (context_bytes < -1) return GPUPLAN_EINVAL;
  return gpuplan_sim_add_device(s, sku->name, sku->memory_bytes,
                                context_bytes < 0 ? sku->context_bytes : (uint64_t)context_bytes,
                                index_out);
}

int gpuplan_sim_count(const gpuplan_sim *s) { return s ? s->n : 0; }

int gpuplan_sim_set_other_processes(gpuplan_sim *s, int dev, uint64_t bytes) {
  simdev *d;
  if (!s || dev < 0 || dev >= s->n) return GPUPLAN_EINVAL;
  d = s->dev[dev];
  if (d->context + d->reserved + bytes > d->total) return GPUPLAN_EINVAL;
  d->others = bytes;
  return GPUPLAN_OK;
}

const gpuplan_device_ops *gpuplan_sim_device(gpuplan_sim *s, int dev) {
  if (!s || dev < 0 || dev >= s->n) return NULL;
  return &s->dev[dev]->ops;
}

int gpuplan_sim_memory_info(const gpuplan_sim *s, int dev, gpuplan_sim_memory *out) {
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
