/*
 * allocator.c: DeviceCachingAllocator, PyTorch's native CUDA caching
 * allocator (c10/cuda/CUDACachingAllocator.cpp) for one device, rule for
 * rule: malloc and its retry path, free, emptying the cache, and the mock
 * device it runs on by default.  Rule numbers refer to
 * data/reference/allocator-rules.md; the other parts are listed in
 * alloc_parts.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_parts.h"

/* --- the mock device ------------------------------------------------------ */

static int mock_malloc(void *payload, uint64_t size, uint64_t *addr_out) {
  gpuplan__mockdev *m = payload;
  size_t i;
  if (size > m->capacity - m->reserved) return GPUPLAN_ENOTFOUND;
  for (i = 0; i < m->nfree; i++) {
    if (m->free_size[i] >= size) {
      *addr_out = m->free_addr[i];
      m->free_addr[i] += size;
      m->free_size[i] -= size;
      if (!m->free_size[i]) {
        m->free_addr[i] = m->free_addr[m->nfree - 1];
        m->free_size[i] = m->free_size[m->nfree - 1];
        m->nfree--;
      }
      m->reserved += size;
      return GPUPLAN_OK;
    }
  }
  *addr_out = m->next_addr;
  m->next_addr += size;
  m->reserved += size;
  return GPUPLAN_OK;
}

static void mock_free(void *payload, uint64_t addr, uint64_t size) {
  gpuplan__mockdev *m = payload;
  m->reserved -= size;
  if (addr + size == m->next_addr) {
    m->next_addr = addr;
    return;
  }
  if (m->nfree == m->capfree) {
    size_t ncap = m->capfree ? m->capfree * 2 : 16;
    uint64_t *na = gpuplan__realloc(m->ctx, m->free_addr, ncap * sizeof *na);
    uint64_t *ns;
    if (!na) return; /* the range is lost to reuse, not to accounting */
    m->free_addr = na;
    ns = gpuplan__realloc(m->ctx, m->free_size, ncap * sizeof *ns);
    if (!ns) return;
    m->free_size = ns;
    m->capfree = ncap;
  }
  m->free_addr[m->nfree] = addr;
  m->free_size[m->nfree] = size;
  m->nfree++;
}

static int mock_map(void *payload, uint64_t size) {
  gpuplan__mockdev *m = payload;
  if (size > m->capacity - m->reserved) return GPUPLAN_ENOTFOUND;
  m->reserved += size;
  return GPUPLAN_OK;
}

static void mock_unmap(void *payload, uint64_t size) {
  gpuplan__mockdev *m = payload;
  m->reserved -= size;
}

static void mock_info(void *payload, uint64_t *free_out, uint64_t *total_out) {
  gpuplan__mockdev *m = payload;
  *free_out = m->capacity - m->reserved;
  *total_out = m->total > m->capacity ? m->total : m->capacity;
}

/* --- allocator object ----------------------------------------------------- */

int gpuplan_cachealloc_new(gpuplan_ctx *ctx, const gpuplan_alloc_conf *conf, uint64_t capacity,
                          const gpuplan_device_ops *device, gpuplan_cachealloc **out) {
  gpuplan_cachealloc *a;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "allocator: out is NULL");
  *out = NULL;
  if (conf && (conf->version < 1 || conf->version > GPUPLAN_ALLOC_CONF_VERSION ||
               !gpuplan__alloc_conf_release(conf) || conf->max_split_size < 20 * MiB ||
               !(conf->memory_fraction >= 0 && conf->memory_fraction <= 1) ||
               conf->large_segment_size < 2 * MiB))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "allocator: invalid conf (version, torch release, max_split_size >= 20 MiB, "
                          "memory_fraction in [0, 1], large_segment_size >= 2 MiB)");
  if (!device && capacity == 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "allocator: capacity must be positive");
  if (device && (!device->malloc || !device->free || !device->mem_info))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "allocator: device ops must all be set");
  a = gpuplan__calloc(ctx, 1, sizeof *a);
  if (!a) return gpuplan__nomem(ctx);
  a->ctx = ctx;
  gpuplan__arena_init(&a->parts, ctx);
  if (conf) gpuplan__alloc_conf_copy(&a->conf, conf); /* version 1 or 2 */
  else gpuplan__alloc_conf_defaults(&a->conf, GPUPLAN_TORCH_LATEST);
  a->mock.capacity = capacity;
  a->mock.next_addr = 0x7f0000000000ull; /* looks like a CUDA device address */
  a->mock.next_va = 1ull << 56;          /* expandable reservations live apart */
  a->mock.ctx = ctx;
  if (device) {
    a->dev = *device;
  } else {
    a->dev.malloc = mock_malloc;
    a->dev.free = mock_free;
    a->dev.mem_info = mock_info;
    a->dev.map = mock_map;
    a->dev.unmap = mock_unmap;
    a->dev.payload = &a->mock;
  }
  {
    uint64_t f, t;
    a->dev.mem_info(a->dev.payload, &f, &t);
    a->total_memory = t;
  }
  a->st.max_split_size = a->conf.max_split_size == UINT64_MAX ? -1 : (int64_t)a->conf.max_split_size;
  gpuplan__ctx_ref(ctx);
  *out = a;
  return GPUPLAN_OK;
}

void gpuplan_cachealloc_free(gpuplan_cachealloc *a) {
  gpuplan_ctx *ctx;
  size_t i;
  if (!a) return;
  ctx = a->ctx;
  while (a->segs) {
    gpuplan__seg *s = a->segs;
    a->segs = s->snext;
    if (!s->expandable) a->dev.free(a->dev.payload, s->addr, s->size);
    if (!s->pooled) gpuplan__free(ctx, s);
  }
  gpuplan__arena_free(&a->parts); /* the block structs and pooled segments */
  for (i = 0; i < a->npp; i++) {
    gpuplan__free(ctx, a->pp[i].small.v);
    gpuplan__free(ctx, a->pp[i].large.v);
    gpuplan__free(ctx, a->pp[i].small.u);
    gpuplan__free(ctx, a->pp[i].large.u);
  }
  gpuplan__free(ctx, a->pp);
  gpuplan__free(ctx, a->small.v);
  gpuplan__free(ctx, a->large.v);
  gpuplan__free(ctx, a->small.u);
  gpuplan__free(ctx, a->large.u);
  gpuplan__free(ctx, a->hash);
  gpuplan__free(ctx, a->mock.free_addr);
  gpuplan__free(ctx, a->mock.free_size);
  gpuplan__free(ctx, a);
  gpuplan__ctx_unref(ctx);
}

void gpuplan_cachealloc_set_trace(gpuplan_cachealloc *a, gpuplan_alloc_trace_fn fn, void *payload) {
  if (!a) return;
  a->trace = fn;
  a->trace_payload = payload;
}

const gpuplan_alloc_stats *gpuplan_cachealloc_stats(const gpuplan_cachealloc *a) {
  return a ? &a->st : NULL;
}

const gpuplan_alloc_conf *gpuplan_cachealloc_conf(const gpuplan_cachealloc *a) {
  return a ? &a->conf : NULL;
}

void gpuplan__alloc_mock_above(gpuplan_cachealloc *a, uint64_t top) {
  if (top > a->mock.next_addr) a->mock.next_addr = (top + (1ull << 30)) & ~((1ull << 21) - 1);
  a->mock.reserved = (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current;
}

uint64_t gpuplan__alloc_mock_reserved(const gpuplan_cachealloc *a) { return a->mock.reserved; }

void gpuplan__alloc_count_oom(gpuplan_cachealloc *a) { a->st.num_ooms++; }

void gpuplan__alloc_reset_peaks(gpuplan_cachealloc *a) {
  gpuplan_stat *arrays[] = {a->st.allocation, a->st.segment, a->st.active, a->st.inactive_split,
                            a->st.allocated_bytes, a->st.reserved_bytes, a->st.active_bytes,
                            a->st.inactive_split_bytes, a->st.requested_bytes};
  size_t i, k;
  for (i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    for (k = 0; k < 3; k++) arrays[i][k].peak = arrays[i][k].current;
  a->st.oversize_allocations.peak = a->st.oversize_allocations.current;
  a->st.oversize_segments.peak = a->st.oversize_segments.current;
}

void gpuplan__alloc_mock_total(gpuplan_cachealloc *a, uint64_t total) {
  uint64_t f, t;
  a->mock.total = total;
  /* (per_process_memory_fraction is of the card's total, as PyTorch's) */
  a->dev.mem_info(a->dev.payload, &f, &t);
  a->total_memory = t;
}

gpuplan_ctx *gpuplan__alloc_ctx(const gpuplan_cachealloc *a) { return a->ctx; }

/* --- the algorithm --------------------------------------------------------- */

static int gc_enabled(const gpuplan_cachealloc *a) {
  return a->conf.memory_fraction < 1 && a->conf.garbage_collection_threshold > 0;
}

static uint64_t allowed_max(const gpuplan_cachealloc *a) {
  return (uint64_t)(a->conf.memory_fraction * (double)a->total_memory);
}

static uint64_t exp_size(const gpuplan__blk *b) {
  return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* R9, R10: the single best-fit candidate, or NULL. */
static gpuplan__blk *get_free_block(gpuplan_cachealloc *a, gpuplan__pool *p, uint64_t size,
                                    uint64_t stream) {
  size_t i;
  gpuplan__blk *b;
  uint64_t M = a->conf.max_split_size;
  if (gc_enabled(a) && p == &a->large) {
    size_t k;
    p->get_free_blocks_call_count++;
    for (k = 0; k < p->n; k++) p->v[k]->gc_count++;
  }
  i = gpuplan__pool_lower_bound(p, stream, size, 0);
  if (i >= p->n) return NULL;
  b = p->v[i];
  if (b->stream != stream) return NULL;
  if (b->expandable) {
    /* R27: a block that can grow into unmapped space counts at the size it
     * can grow to, so the free tail of a segment is used last. */
    while (i + 1 < p->n && p->v[i]->expandable && p->v[i + 1]->stream == stream &&
           exp_size(p->v[i + 1]) < exp_size(p->v[i]))
      i++;
    b = p->v[i];
  }
  if (size < M && b->size >= M) return NULL;
  if (size >= M && b->size >= size + a->conf.max_non_split_rounding) return NULL;
  gpuplan__pool_remove_at(p, i, b); /* (found at i: not searched for again) */
  return b;
}

/* cudaFree of the whole free segment of b, which the caller has taken out
 * of its pool. */
static void release_segment(gpuplan_cachealloc *a, gpuplan__blk *b) {
  gpuplan__seg *s = b->seg;
  a->dev.free(a->dev.payload, s->addr, s->size);
  a->st.num_device_free++;
  gpuplan__emit(a, GPUPLAN_ACT_SEGMENT_FREE, s->addr, s->size, s->stream, 0);
  gpuplan__blk_del(a, b);
  gpuplan__seg_unlink(a, s);
}

static void release_block(gpuplan_cachealloc *a, gpuplan__blk *b) {
  gpuplan__pool_remove(gpuplan__pool_of(a, b->pool, b->small), b);
  release_segment(a, b);
}

/* R19 step 2: every unsplit free block of a pool, in pool order; then the
 * free pages of the pool's expandable segments are unmapped (R29).  The
 * end state does not depend on the order in which those are unmapped.
 * GPUPLAN_ENOMEM (host) leaves the pages not yet unmapped mapped. */
static int release_blocks(gpuplan_cachealloc *a, int pool, int small) {
  gpuplan__pool *p = gpuplan__pool_of(a, pool, small);
  size_t i, w = 0;
  gpuplan__seg *s;
  /* One compacting pass: the pool keeps its order, no per-block memmove. */
  for (i = 0; i < p->n; i++) {
    gpuplan__blk *b = p->v[i];
    if (!b->expandable && !b->prev && !b->next) release_segment(a, b);
    else p->v[w++] = b;
  }
  p->n = w;
  for (s = a->segs; s; s = s->snext) {
    gpuplan__blk *b;
    if (!s->expandable || s->small != small || s->pool != pool) continue;
    for (b = s->first; b; b = b->next)
      if (!b->allocated && b->mapped) GPUPLAN_TRY(gpuplan__unmap_block(a, b));
  }
  gpuplan__release_expandable_segments(a, pool, small);
  return GPUPLAN_OK;
}

/* A private pool's slot back to free (its BlockPools are empty). */
static void delete_pool(gpuplan_cachealloc *a, gpuplan__ppool *q) {
  gpuplan__free(a->ctx, q->small.v);
  gpuplan__free(a->ctx, q->large.v);
  gpuplan__free(a->ctx, q->small.u);
  gpuplan__free(a->ctx, q->large.u);
  memset(q, 0, sizeof *q);
}

/* R19 and R33: the default pools, then every freeable private pool
 * (use_count 0), which is deleted once none of its segments remain. */
static int release_cached_blocks(gpuplan_cachealloc *a) {
  size_t k;
  a->st.num_sync_all_streams++;
  GPUPLAN_TRY(release_blocks(a, 0, 0));
  GPUPLAN_TRY(release_blocks(a, 0, 1));
  for (k = 0; k < a->npp; k++) {
    gpuplan__ppool *q = &a->pp[k];
    gpuplan__seg *s;
    if (!q->id || q->use_count || a->cur_pool == (int)k + 1) continue; /* routed to: in use */
    GPUPLAN_TRY(release_blocks(a, (int)k + 1, 1));
    GPUPLAN_TRY(release_blocks(a, (int)k + 1, 0));
    for (s = a->segs; s && s->pool != (int)k + 1; s = s->snext) {
    }
    if (!s) delete_pool(a, q);
  }
  return GPUPLAN_OK;
}

/* R21 (only when max_split_size is set). */
static int release_available_cached_blocks(gpuplan_cachealloc *a, gpuplan__pool *p, uint64_t size,
                                           uint64_t stream) {
  uint64_t M = a->conf.max_split_size, key = size > M ? size : M, freed = 0;
  size_t i;
  if (M == UINT64_MAX) return 0;
  i = gpuplan__pool_lower_bound(p, stream, key, 0);
  if (i < p->n && p->v[i]->stream == stream && !p->v[i]->expandable) {
    release_block(a, p->v[i]);
    return 1;
  }
  /* From the largest block of this stream downwards. */
  i = gpuplan__pool_lower_bound(p, stream + 1, 0, 0);
  while (i > 0 && freed < key) {
    gpuplan__blk *b = p->v[i - 1];
    if (b->stream != stream || b->size < M) break;
    i--;
    if (!b->expandable && !b->prev && !b->next) {
      freed += b->size;
      release_block(a, b);
    }
  }
  return freed >= key;
}

/* R20: garbage_collect_cached_blocks. */
static void garbage_collect_cached_blocks(gpuplan_cachealloc *a) {
  uint64_t threshold = (uint64_t)(a->conf.garbage_collection_threshold * (double)allowed_max(a));
  uint64_t reserved = (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current, target, reclaimed = 0;
  gpuplan__pool *p = &a->large;
  if (reserved <= threshold) return;
  target = reserved - threshold;
  for (;;) {
    double total_age = 0, avg;
    size_t i, n = 0, freed_any = 0;
    for (i = 0; i < p->n; i++)
      if (!p->v[i]->expandable && !p->v[i]->prev && !p->v[i]->next) {
        total_age += (double)p->v[i]->gc_count;
        n++;
      }
    if (n == 0) break;
    avg = total_age / (double)n;
    i = 0;
    while (i < p->n) {
      gpuplan__blk *b = p->v[i];
      if (!b->expandable && !b->prev && !b->next && (double)b->gc_count >= avg) {
        reclaimed += b->size;
        freed_any++;
        release_block(a, b);
      } else {
        i++;
      }
    }
    if (reclaimed >= target || !freed_any) break;
  }
}

/* R18: a new segment from the device. */
static gpuplan__blk *alloc_block(gpuplan_cachealloc *a, uint64_t alloc_size, uint64_t expand_size,
                                 uint64_t stream, int pool, int small, int is_retry, int *rc) {
  uint64_t addr;
  gpuplan__seg *s;
  gpuplan__blk *b;
  *rc = GPUPLAN_OK;
  if (is_retry) a->st.num_alloc_retries++;
  if (a->conf.memory_fraction < 1 &&
      (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current + alloc_size > allowed_max(a))
    return NULL;
  if (a->conf.expandable_segments && (!pool || gpuplan__private_pools_expandable(a->conf.release))) /* R34 */
    return gpuplan__try_allocate_expandable_block(a, stream, pool, small, expand_size, rc);
  if (a->dev.malloc(a->dev.payload, alloc_size, &addr) != GPUPLAN_OK) return NULL;
  s = gpuplan__seg_add(a, addr, alloc_size, stream, small);
  b = s ? gpuplan__blk_new(a) : NULL;
  if (!b) {
    if (s) gpuplan__seg_unlink(a, s);
    a->dev.free(a->dev.payload, addr, alloc_size);
    *rc = gpuplan__nomem(a->ctx);
    return NULL;
  }
  a->st.num_device_alloc++;
  gpuplan__emit(a, GPUPLAN_ACT_SEGMENT_ALLOC, addr, alloc_size, stream, 0);
  b->addr = addr;
  b->size = alloc_size;
  b->stream = stream;
  b->seg = s;
  b->small = small;
  b->pool = s->pool = pool;
  s->first = b;
  return b;
}

static void oom_message(gpuplan_cachealloc *a, uint64_t alloc_size, uint64_t request) {
  char A[32], T[32], F[32], P[32], U[32], R[32], AL[48] = "", PP[96] = "";
  uint64_t dfree, dtotal, allocated, reserved, in_private = 0;
  size_t k, i;
  a->dev.mem_info(a->dev.payload, &dfree, &dtotal);
  allocated = (uint64_t)a->st.allocated_bytes[GPUPLAN_POOL_ALL].current;
  reserved = (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current;
  if (gpuplan__oom_private_pools(&a->conf)) {
    /* R35: the free blocks cached in private pools (allocated_bytes
     * already counts their live ones), moved from "unallocated" to
     * "allocated by PyTorch". */
    for (k = 0; k < a->npp; k++) {
      for (i = 0; i < a->pp[k].small.n; i++) in_private += a->pp[k].small.v[i]->size;
      for (i = 0; i < a->pp[k].large.n; i++) in_private += a->pp[k].large.v[i]->size;
    }
    if (in_private) {
      char X[32];
      gpuplan_format_size(in_private, X, sizeof X);
      snprintf(PP, sizeof PP, "with %s allocated in private pools (e.g., CUDA Graphs), ", X);
      allocated += in_private;
    }
  }
  gpuplan_format_size(alloc_size, A, sizeof A);
  gpuplan_format_size(dtotal, T, sizeof T);
  gpuplan_format_size(dfree, F, sizeof F);
  gpuplan_format_size(allocated, P, sizeof P);
  gpuplan_format_size(reserved - allocated, U, sizeof U);
  gpuplan_format_size(reserved, R, sizeof R);
  if (a->conf.memory_fraction < 1) {
    char m[32];
    gpuplan_format_size(allowed_max(a), m, sizeof m);
    snprintf(AL, sizeof AL, "%s allowed; ", m);
  }
  (void)request;
  if (gpuplan__oom_text_v1(&a->conf)) { /* the release rules: conf.c */
    gpuplan__error(a->ctx, GPUPLAN_EOOM,
                   "CUDA out of memory. Tried to allocate %s (GPU 0; %s total capacity; %s already "
                   "allocated; %s free; %s%s reserved in total by PyTorch) If reserved memory is >> "
                   "allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
                   "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                   A, T, P, F, AL, R);
  } else if (gpuplan__oom_text_v21(&a->conf)) {
    gpuplan__error(a->ctx, GPUPLAN_EOOM,
                   "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacty of %s of "
                   "which %s is free. %sOf the allocated memory %s is allocated by PyTorch, and %s "
                   "is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
                   "large try setting max_split_size_mb to avoid fragmentation.  See documentation "
                   "for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                   A, T, F, AL, P, U);
  } else {
    gpuplan__error(a->ctx, GPUPLAN_EOOM,
                   "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of "
                   "which %s is free. %sOf the allocated memory %s is allocated by PyTorch, %sand %s "
                   "is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
                   "large try setting %s=expandable_segments:True to avoid "
                   "fragmentation.  See documentation for Memory Management  (%s)",
                   A, T, F, AL, P, PP, U, gpuplan__oom_env(&a->conf), gpuplan__oom_url(&a->conf));
  }
}

/* should_split (R11): whether the rest of b after size bytes goes back to
 * the pool as a block of its own. */
static int should_split(const gpuplan_cachealloc *a, const gpuplan__blk *b, uint64_t size) {
  uint64_t remaining = b->size - size;
  if (b->small || a->conf.expandable_segments) return remaining >= KMIN_BLOCK;
  return size < a->conf.max_split_size && remaining > KSMALL_SIZE;
}

/* alloc_found_block (R12): hand out the low end of b (out of its pool),
 * split off the rest when should_split, and account.  Host memory for the
 * split and a pool slot was reserved by the caller; on GPUPLAN_ENOMEM (the
 * address map) b is back in its pool, nothing else changed. */
static int alloc_found_block(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b, uint64_t orig,
                             uint64_t size, uint64_t stream, uint64_t *addr_out) {
  int small = b->small, was_split = (b->prev || b->next) && !b->expandable, rc;
  /* The low end keeps b's address: into the address map first. */
  if ((rc = gpuplan__hash_put(a, b)) != GPUPLAN_OK) {
    gpuplan__pool_insert(a, p, b); /* reserved: cannot fail */
    return rc;
  }
  if (should_split(a, b, size)) {
    uint64_t remaining = b->size - size;
    gpuplan__blk *r = gpuplan__split_block(a, b, size); /* reserved: cannot fail */
    gpuplan__pool_insert(a, p, r);                       /* reserved: cannot fail */
    if (b->expandable) {
      /* R12: no inactive_split accounting for expandable blocks. */
    } else if (!was_split) {
      gpuplan__stat3(a->st.inactive_split, small, 1);
      gpuplan__stat3(a->st.inactive_split_bytes, small, (int64_t)remaining);
    } else {
      gpuplan__stat3(a->st.inactive_split_bytes, small, -(int64_t)size);
    }
  } else if (was_split) {
    gpuplan__stat3(a->st.inactive_split, small, -1);
    gpuplan__stat3(a->st.inactive_split_bytes, small, -(int64_t)b->size);
  }
  b->allocated = 1;
  b->requested = orig;
  gpuplan__stat3(a->st.allocation, small, 1);
  gpuplan__stat3(a->st.allocated_bytes, small, (int64_t)b->size);
  gpuplan__stat3(a->st.active, small, 1);
  gpuplan__stat3(a->st.active_bytes, small, (int64_t)b->size);
  gpuplan__stat3(a->st.requested_bytes, small, (int64_t)orig);
  if (b->size >= a->conf.max_split_size) gpuplan__stat_add(&a->st.oversize_allocations, 1);
  gpuplan__emit(a, GPUPLAN_ACT_ALLOC, b->addr, orig, stream, 0);
  *addr_out = b->addr;
  return GPUPLAN_OK;
}

/* DeviceCachingAllocator::malloc (R17): find a cached block, or collect
 * garbage, ask the device, free oversize cached blocks and ask again,
 * empty the cache and ask again, and only then fail with the OOM text. */
int gpuplan_cachealloc_malloc(gpuplan_cachealloc *a, uint64_t orig, uint64_t stream,
                             uint64_t *addr_out) {
  uint64_t size, alloc_size;
  gpuplan__pool *p;
  gpuplan__blk *b;
  int small, rc = GPUPLAN_OK;
  if (!a) return GPUPLAN_EMISUSE;
  if (!addr_out) return gpuplan__error(a->ctx, GPUPLAN_EMISUSE, "allocator: addr_out is NULL");
  *addr_out = 0;
  if (orig == 0) return GPUPLAN_OK; /* R24 */
  if (orig >= (1ull << 60)) {      /* R23 */
    a->st.num_ooms++;
    return gpuplan__error(a->ctx, GPUPLAN_EOOM,
                          "CUDA out of memory. Tried to allocate more than 1EB memory.");
  }
  size = gpuplan__round_size(&a->conf, orig);
  small = size <= KSMALL_SIZE;
  p = gpuplan__pool_of(a, a->cur_pool, small);
  alloc_size = gpuplan__allocation_size(&a->conf, size);
  /* The split needs a block and a pool slot: host memory first. */
  if ((rc = gpuplan__spare_reserve(a, 1)) || (rc = gpuplan__pool_reserve(a, p, 1, 0))) return rc;

  b = get_free_block(a, p, size, stream);
  if (!b) {
    if (gc_enabled(a)) garbage_collect_cached_blocks(a);
    b = alloc_block(a, alloc_size, size, stream, a->cur_pool, small, 0, &rc);
    if (!b && !rc && release_available_cached_blocks(a, p, size, stream))
      b = alloc_block(a, alloc_size, size, stream, a->cur_pool, small, 0, &rc);
    if (!b && !rc && !a->capturing && !(rc = release_cached_blocks(a))) /* R36 */
      b = alloc_block(a, alloc_size, size, stream, a->cur_pool, small, 1, &rc);
    if (rc) return rc;
    if (!b) {
      uint64_t dfree, dtotal;
      a->dev.mem_info(a->dev.payload, &dfree, &dtotal);
      gpuplan__emit(a, GPUPLAN_ACT_OOM, 0, size, stream, dfree);
      a->st.num_ooms++;
      oom_message(a, alloc_size, size);
      return GPUPLAN_EOOM;
    }
    /* alloc_block's reservations may have used the spare: again. */
    if ((rc = gpuplan__spare_reserve(a, 1)) || (rc = gpuplan__pool_reserve(a, p, 1, 0))) {
      gpuplan__pool_insert(a, p, b); /* a fresh free block: a valid state */
      return rc;
    }
  }
  return alloc_found_block(a, p, b, orig, size, stream, addr_out);
}

uint64_t gpuplan__try_merge_blocks(gpuplan_cachealloc *a, gpuplan__blk *b, gpuplan__blk *n) {
  uint64_t sz;
  if (!n || n->allocated || n->mapped != b->mapped) return 0;
  gpuplan__pool_remove(gpuplan__pool_of(a, n->pool, n->small), n);
  sz = n->size;
  if (b->prev == n) {
    b->addr = n->addr;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
    else b->seg->first = b;
  } else {
    b->next = n->next;
    if (b->next) b->next->prev = b;
  }
  b->size += sz;
  gpuplan__blk_del(a, n);
  return sz;
}

/* free_block (R14): merge with free neighbours, account the net change in
 * inactive_split, back into the pool (a slot reserved by the caller). */
static void free_block(gpuplan_cachealloc *a, gpuplan__blk *b, int64_t orig_size) {
  gpuplan__blk *prev = b->prev, *next = b->next;
  int64_t net_n = 0, net_bytes = 0;
  int exp = b->expandable, small = b->small;
  if (!exp && prev && !prev->allocated) {
    net_n--;
    net_bytes -= (int64_t)prev->size;
  }
  if (!exp && next && !next->allocated) {
    net_n--;
    net_bytes -= (int64_t)next->size;
  }
  (void)gpuplan__try_merge_blocks(a, b, prev);
  (void)gpuplan__try_merge_blocks(a, b, next);
  if (!exp && (b->prev || b->next)) {
    net_n++;
    net_bytes += (int64_t)b->size;
  }
  gpuplan__stat3(a->st.active, small, -1);
  gpuplan__stat3(a->st.active_bytes, small, -orig_size);
  gpuplan__stat3(a->st.requested_bytes, small, -(int64_t)b->requested);
  if (net_n) gpuplan__stat3(a->st.inactive_split, small, net_n);
  if (net_bytes) gpuplan__stat3(a->st.inactive_split_bytes, small, net_bytes);
  gpuplan__pool_insert(a, gpuplan__pool_of(a, b->pool, small), b); /* reserved: cannot fail */
}

/* DeviceCachingAllocator::free (R13): single-stream, so free_block at once. */
int gpuplan_cachealloc_release(gpuplan_cachealloc *a, uint64_t addr) {
  gpuplan__blk *b;
  uint64_t at;
  int64_t orig_size;
  int small, rc;
  if (!a) return GPUPLAN_EMISUSE;
  if (addr == 0) return GPUPLAN_OK; /* the null pointer a size-0 request got (R24), as free(NULL) */
  /* The block goes back into its pool: room first (either default pool;
   * a private pool's once the block is known). */
  if ((rc = gpuplan__pool_reserve(a, &a->small, 1, 0)) || (rc = gpuplan__pool_reserve(a, &a->large, 1, 0))) return rc;
  b = gpuplan__hash_take(a, addr);
  if (!b)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL,
                          "allocator: free of 0x%llx, which is not an allocated block",
                          (unsigned long long)addr);
  if (b->pool && (rc = gpuplan__pool_reserve(a, gpuplan__pool_of(a, b->pool, b->small), 1, 0))) {
    (void)gpuplan__hash_put(a, b); /* it was just taken out: no growth, cannot fail */
    return rc;
  }
  small = b->small;
  orig_size = (int64_t)b->size;
  at = b->addr;
  gpuplan__stat3(a->st.allocation, small, -1);
  gpuplan__stat3(a->st.allocated_bytes, small, -orig_size);
  if (b->size >= a->conf.max_split_size) gpuplan__stat_add(&a->st.oversize_allocations, -1);
  gpuplan__emit(a, GPUPLAN_ACT_FREE_REQUESTED, at, b->requested, b->stream, 0);
  b->allocated = 0;
  gpuplan__emit(a, GPUPLAN_ACT_FREE_COMPLETED, at, b->requested, b->stream, 0);
  free_block(a, b, orig_size);
  return GPUPLAN_OK;
}

int gpuplan_cachealloc_empty_cache(gpuplan_cachealloc *a) {
  if (!a) return GPUPLAN_EMISUSE;
  return release_cached_blocks(a);
}

void gpuplan_cachealloc_free_space(const gpuplan_cachealloc *a, uint64_t *largest_out,
                                  uint64_t *total_out) {
  uint64_t largest = 0, total = 0;
  size_t i;
  const gpuplan__pool *ps[2];
  int k;
  if (a) {
    ps[0] = &a->small;
    ps[1] = &a->large;
    for (k = 0; k < 2; k++)
      for (i = 0; i < ps[k]->n; i++) {
        total += ps[k]->v[i]->size;
        if (ps[k]->v[i]->size > largest) largest = ps[k]->v[i]->size;
      }
  }
  if (largest_out) *largest_out = largest;
  if (total_out) *total_out = total;
}


/* --- private pools (R33) ------------------------------------------------------ */

static gpuplan__ppool *find_pool(gpuplan_cachealloc *a, uint64_t id) {
  size_t k;
  for (k = 0; k < a->npp; k++)
    if (a->pp[k].id == id) return &a->pp[k];
  return NULL;
}

/* beginAllocateToPool: create_or_incref_pool, then route. */
int gpuplan_cachealloc_begin_pool(gpuplan_cachealloc *a, uint64_t pool_id) {
  gpuplan__ppool *q;
  if (!a) return GPUPLAN_EMISUSE;
  if (pool_id == 0)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL, "gpuplan_cachealloc_begin_pool: pool id 0 names the default pools");
  if (a->cur_pool)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL,
                          "gpuplan_cachealloc_begin_pool: allocations already go to pool %llu (end_pool first)",
                          (unsigned long long)a->pp[a->cur_pool - 1].id);
  if (!(q = find_pool(a, pool_id)) && !(q = find_pool(a, 0))) {
    gpuplan__ppool *np = gpuplan__realloc(a->ctx, a->pp, (a->npp + 1) * sizeof *np);
    if (!np) return gpuplan__nomem(a->ctx);
    a->pp = np;
    q = &a->pp[a->npp++];
    memset(q, 0, sizeof *q);
  }
  if (!q->id) q->id = pool_id;
  q->use_count++;
  a->cur_pool = (int)(q - a->pp) + 1;
  return GPUPLAN_OK;
}

int gpuplan_cachealloc_end_pool(gpuplan_cachealloc *a) {
  if (!a) return GPUPLAN_EMISUSE;
  if (!a->cur_pool)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL,
                          "gpuplan_cachealloc_end_pool: no gpuplan_cachealloc_begin_pool in force");
  a->cur_pool = 0;
  return GPUPLAN_OK;
}

void gpuplan__cachealloc_capturing(gpuplan_cachealloc *a, int on) {
  if (a) a->capturing = on != 0;
}

int gpuplan_cachealloc_release_pool(gpuplan_cachealloc *a, uint64_t pool_id) {
  gpuplan__ppool *q;
  if (!a) return GPUPLAN_EMISUSE;
  if (pool_id == 0 || !(q = find_pool(a, pool_id)) || q->use_count == 0)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL,
                          "gpuplan_cachealloc_release_pool: pool %llu is not in use",
                          (unsigned long long)pool_id);
  q->use_count--;
  return GPUPLAN_OK;
}
