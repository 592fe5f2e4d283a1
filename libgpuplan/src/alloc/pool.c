/*
 * pool.c: the allocator's primitives, as CUDACachingAllocator.cpp has them:
 * Stat (current, peak, allocated, freed, for all and per pool), BlockPool
 * (free blocks ordered by (stream, size, address), BlockComparatorSize,
 * R8; the unmapped ranges of expandable segments by (stream, address),
 * BlockComparatorAddress), the allocated blocks by address, Block structs,
 * segments, and splitting a block (one place for the three users).
 *
 * The free sets are sorted arrays: the best-fit lookup is a binary search
 * and release_blocks (R19) walks them in order for free; pools rarely hold
 * more than a few thousand blocks, so the memmove on insert is cheaper than
 * a tree's pointer chase.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_parts.h"

/* --- stats --------------------------------------------------------------- */

void gpuplan__emit(gpuplan_cachealloc *a, gpuplan_alloc_action act, uint64_t addr, uint64_t size,
                 uint64_t stream, uint64_t device_free) {
  gpuplan_alloc_event ev;
  if (!a->trace) return;
  ev.action = act;
  ev.addr = addr;
  ev.size = size;
  ev.stream = stream;
  ev.device_free = device_free;
  a->trace(a->trace_payload, &ev);
}

/* --- pools (R8) -------------------------------------------------------- */

/* Insert b at index i of a growable pointer array / remove index i. */
static int parr_insert(gpuplan_cachealloc *a, gpuplan__blk ***v, size_t *n, size_t *cap, size_t i,
                       gpuplan__blk *b) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    gpuplan__blk **nv = gpuplan__realloc(a->ctx, *v, ncap * sizeof *nv);
    if (!nv) return gpuplan__nomem(a->ctx);
    *v = nv;
    *cap = ncap;
  }
  memmove(*v + i + 1, *v + i, (*n - i) * sizeof **v);
  (*v)[i] = b;
  (*n)++;
  return GPUPLAN_OK;
}

static void parr_erase(gpuplan__blk **v, size_t *n, size_t i) {
  memmove(v + i, v + i + 1, (*n - i - 1) * sizeof *v);
  (*n)--;
}

int gpuplan__pool_insert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b) {
  b->gc_count = 0;
  return parr_insert(a, &p->v, &p->n, &p->cap, gpuplan__pool_lower_bound(p, b->stream, b->size, b->addr), b);
}

void gpuplan__pool_remove(gpuplan__pool *p, gpuplan__blk *b) {
  gpuplan__pool_remove_at(p, gpuplan__pool_lower_bound(p, b->stream, b->size, b->addr), b);
}

void gpuplan__pool_remove_at(gpuplan__pool *p, size_t i, gpuplan__blk *b) {
  if (NEVER(i >= p->n || p->v[i] != b)) return;
  parr_erase(p->v, &p->n, i);
}

/* The unmapped set, ordered by (stream, address) (BlockComparatorAddress). */
size_t gpuplan__pool_ulower(const gpuplan__pool *p, uint64_t stream, uint64_t addr) {
  size_t lo = 0, hi = p->un;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const gpuplan__blk *x = p->u[mid];
    if (x->stream < stream || (x->stream == stream && x->addr < addr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int gpuplan__pool_uinsert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b) {
  return parr_insert(a, &p->u, &p->un, &p->ucap, gpuplan__pool_ulower(p, b->stream, b->addr), b);
}

void gpuplan__pool_uremove(gpuplan__pool *p, gpuplan__blk *b) {
  size_t i = gpuplan__pool_ulower(p, b->stream, b->addr);
  if (NEVER(i >= p->un || p->u[i] != b)) return;
  parr_erase(p->u, &p->un, i);
}

/* --- allocated-block hash ------------------------------------------------ */

static size_t hslot(uint64_t addr, size_t cap) {
  uint64_t h = addr * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (cap - 1);
}

int gpuplan__hash_put(gpuplan_cachealloc *a, gpuplan__blk *b) {
  if (a->hcount * 2 >= a->hcap) {
    size_t ncap = a->hcap ? a->hcap * 2 : 64, i;
    gpuplan__blk **nh = gpuplan__calloc(a->ctx, ncap, sizeof *nh);
    if (!nh) return gpuplan__nomem(a->ctx);
    for (i = 0; i < a->hcap; i++) {
      gpuplan__blk *c = a->hash[i];
      while (c) {
        gpuplan__blk *next = c->hnext;
        size_t s = hslot(c->addr, ncap);
        c->hnext = nh[s];
        nh[s] = c;
        c = next;
      }
    }
    gpuplan__free(a->ctx, a->hash);
    a->hash = nh;
    a->hcap = ncap;
  }
  {
    size_t s = hslot(b->addr, a->hcap);
    b->hnext = a->hash[s];
    a->hash[s] = b;
    a->hcount++;
  }
  return GPUPLAN_OK;
}

uint64_t gpuplan__alloc_block_size(const gpuplan_cachealloc *a, uint64_t addr) {
  const gpuplan__blk *b;
  if (!a || !a->hcap) return 0;
  for (b = a->hash[hslot(addr, a->hcap)]; b; b = b->hnext)
    if (b->addr == addr) return b->size;
  return 0;
}

gpuplan__blk *gpuplan__hash_take(gpuplan_cachealloc *a, uint64_t addr) {
  gpuplan__blk **pp;
  if (!a->hcap) return NULL;
  for (pp = &a->hash[hslot(addr, a->hcap)]; *pp; pp = &(*pp)->hnext) {
    if ((*pp)->addr == addr) {
      gpuplan__blk *b = *pp;
      *pp = b->hnext;
      b->hnext = NULL;
      a->hcount--;
      return b;
    }
  }
  return NULL;
}

/* --- block structs --------------------------------------------------------- */

/* Block structs come from the allocator's arena (a->parts) and are
 * recycled through a->spare; gpuplan_cachealloc_free frees them at once. */
gpuplan__blk *gpuplan__blk_new(gpuplan_cachealloc *a) {
  gpuplan__blk *b = a->spare;
  if (b) a->spare = b->hnext;
  else b = gpuplan__arena_alloc(&a->parts, sizeof *b);
  if (b) {
    memset(b, 0, sizeof *b);
    b->mapped = 1;
  }
  return b;
}

void gpuplan__blk_del(gpuplan_cachealloc *a, gpuplan__blk *b) {
  b->hnext = a->spare;
  a->spare = b;
}

/* Host memory first, then the change (review M3): after these, the next n
 * gpuplan__blk_new() calls and n inserts into p's free set (un into its unmapped
 * set) cannot fail, so an operation either fails with GPUPLAN_ENOMEM
 * before it changes anything or completes. */
int gpuplan__spare_reserve_slow(gpuplan_cachealloc *a, size_t n) {
  size_t have = 0;
  gpuplan__blk *b;
  for (b = a->spare; b && have < n; b = b->hnext) have++;
  if (have < n && n - have > 1 && n - have <= SIZE_MAX / sizeof *b) {
    /* Many at once (installing a segment): one arena block. */
    gpuplan__blk *v = gpuplan__arena_alloc(&a->parts, (n - have) * sizeof *v);
    if (v) {
      for (; have < n; have++, v++) {
        v->hnext = a->spare;
        a->spare = v;
      }
    }
  }
  for (; have < n; have++) {
    if (!(b = gpuplan__arena_alloc(&a->parts, sizeof *b))) return gpuplan__nomem(a->ctx);
    b->hnext = a->spare;
    a->spare = b;
  }
  return GPUPLAN_OK;
}

static int parr_reserve(gpuplan_cachealloc *a, gpuplan__blk ***v, size_t n, size_t *cap, size_t more) {
  size_t ncap = *cap ? *cap : 64;
  gpuplan__blk **nv;
  if (n + more <= *cap) return GPUPLAN_OK;
  while (ncap < n + more) ncap *= 2;
  if (!(nv = gpuplan__realloc(a->ctx, *v, ncap * sizeof *nv))) return gpuplan__nomem(a->ctx);
  *v = nv;
  *cap = ncap;
  return GPUPLAN_OK;
}

int gpuplan__pool_reserve_slow(gpuplan_cachealloc *a, gpuplan__pool *p, size_t more, size_t umore) {
  GPUPLAN_TRY(parr_reserve(a, &p->v, p->n, &p->cap, more));
  return parr_reserve(a, &p->u, p->un, &p->ucap, umore);
}

/* --- segments ------------------------------------------------------------- */

gpuplan__seg *gpuplan__seg_add(gpuplan_cachealloc *a, uint64_t addr, uint64_t size, uint64_t stream, int small) {
  gpuplan__seg *s = a->spare_segs;
  if (s) a->spare_segs = s->snext;
  else if (!(s = gpuplan__arena_alloc(&a->parts, sizeof *s))) return NULL;
  memset(s, 0, sizeof *s);
  s->pooled = 1;
  s->addr = addr;
  s->size = size;
  s->stream = stream;
  s->small = small;
  s->snext = a->segs;
  if (a->segs) a->segs->sprev = s;
  a->segs = s;
  a->nsegs++;
  gpuplan__stat3(a->st.segment, small, 1);
  gpuplan__stat3(a->st.reserved_bytes, small, (int64_t)size);
  if (size >= a->conf.max_split_size) gpuplan__stat_add(&a->st.oversize_segments, 1);
  return s;
}

void gpuplan__seg_unlink(gpuplan_cachealloc *a, gpuplan__seg *s) {
  if (s->sprev) s->sprev->snext = s->snext;
  else a->segs = s->snext;
  if (s->snext) s->snext->sprev = s->sprev;
  a->nsegs--;
  gpuplan__stat3(a->st.segment, s->small, -1);
  gpuplan__stat3(a->st.reserved_bytes, s->small, -(int64_t)s->size);
  if (s->size >= a->conf.max_split_size) gpuplan__stat_add(&a->st.oversize_segments, -1);
  if (s->pooled) {
    s->snext = a->spare_segs;
    a->spare_segs = s;
  } else {
    gpuplan__free(a->ctx, s);
  }
}

gpuplan__blk *gpuplan__split_block(gpuplan_cachealloc *a, gpuplan__blk *b, uint64_t off) {
  gpuplan__blk *r = gpuplan__blk_new(a);
  if (!r) return NULL;
  r->addr = b->addr + off;
  r->size = b->size - off;
  r->stream = b->stream;
  r->seg = b->seg;
  r->small = b->small;
  r->pool = b->pool;
  r->expandable = b->expandable;
  r->mapped = b->mapped;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = off;
  return r;
}

/* --- walking the layout ------------------------------------------------------ */

int gpuplan__alloc_next_segment(const gpuplan_cachealloc *a, gpuplan__layout_it *it, uint64_t *addr,
                                uint64_t *size, int *expandable) {
  const gpuplan__seg *s = it->seg ? ((const gpuplan__seg *)it->seg)->snext : a->segs;
  it->seg = s;
  it->blk = s ? s->first : NULL;
  if (!s) return 0;
  *addr = s->addr;
  *size = s->size;
  *expandable = s->expandable;
  return 1;
}

int gpuplan__alloc_next_block(gpuplan__layout_it *it, uint64_t *addr, uint64_t *size, int *allocated) {
  const gpuplan__blk *b = it->blk;
  if (!b) return 0;
  *addr = b->addr;
  *size = b->size;
  *allocated = b->allocated;
  it->blk = b->next;
  return 1;
}

/* --- installing a state (a replay's start) ------------------------------------ */

int gpuplan__install_live(gpuplan_cachealloc *a, gpuplan__blk *b) {
  GPUPLAN_TRY(gpuplan__hash_put(a, b));
  gpuplan__stat3(a->st.allocation, b->small, 1);
  gpuplan__stat3(a->st.allocated_bytes, b->small, (int64_t)b->size);
  gpuplan__stat3(a->st.active, b->small, 1);
  gpuplan__stat3(a->st.active_bytes, b->small, (int64_t)b->size);
  gpuplan__stat3(a->st.requested_bytes, b->small, (int64_t)b->requested);
  if (b->size >= a->conf.max_split_size) gpuplan__stat_add(&a->st.oversize_allocations, 1);
  return GPUPLAN_OK;
}

int gpuplan__alloc_install(gpuplan_cachealloc *a, uint64_t addr, uint64_t size, uint64_t stream, int small,
                           const gpuplan__install_block *blocks, size_t n) {
  gpuplan__seg *s;
  gpuplan__blk *last = NULL;
  size_t i;
  /* Host memory first: the block structs and the pool slots. */
  GPUPLAN_TRY(gpuplan__spare_reserve(a, n));
  GPUPLAN_TRY(gpuplan__pool_reserve(a, gpuplan__pool_of(a, a->cur_pool, small), n, 0));
  if (!(s = gpuplan__seg_add(a, addr, size, stream, small))) return gpuplan__nomem(a->ctx);
  /* A segment installed is one cudaMalloc'd before the trace: counted as
   * segment.* counts it (review C-2: num_device_alloc left it out) */
  a->st.num_device_alloc++;
  s->pool = a->cur_pool; /* the pool allocations are routed to (begin_pool) */
  for (i = 0; i < n; i++) {
    gpuplan__blk *b = gpuplan__blk_new(a); /* reserved: cannot fail */
    b->addr = blocks[i].addr;
    b->size = blocks[i].size;
    b->requested = blocks[i].requested;
    b->stream = stream;
    b->seg = s;
    b->small = small;
    b->pool = s->pool;
    b->allocated = blocks[i].allocated;
    b->prev = last;
    if (last) last->next = b;
    else s->first = b;
    last = b;
    if (b->allocated) {
      GPUPLAN_TRY(gpuplan__install_live(a, b));
    } else {
      /* Appended unsorted; gpuplan__alloc_installed sorts the pools once. */
      gpuplan__pool *p = gpuplan__pool_of(a, s->pool, small);
      p->v[p->n++] = b; /* reserved: cannot fail */
    }
  }
  return GPUPLAN_OK;
}

static int blk_cmp(const void *x, const void *y) {
  const gpuplan__blk *a = *(const gpuplan__blk *const *)x, *b = *(const gpuplan__blk *const *)y;
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* A block and its size, as the radix sort moves them. */
typedef struct skey {
  uint64_t size;
  gpuplan__blk *b;
} skey;

/* Sort the free blocks install appended into the pool's order, (stream,
 * size, addr).  Install appends them in address order (segment by segment,
 * segments by address), so where they are in address order and on one
 * stream, sorting by size alone, stably, gives that order: an LSD radix
 * sort of the bytes in which the sizes differ (sizes are multiples of 512
 * and at most a few GiB: 3 or 4 passes; 2.7b's start has 4,000 free
 * blocks, on which qsort took a sixth of a replay).  Anything else (and no
 * host memory for the passes) is left to qsort. */
static void sort_pool(gpuplan_cachealloc *a, gpuplan__pool *p) {
  const size_t n = p->n;
  gpuplan__blk **v = p->v;
  skey *x, *y;
  uint64_t diff = 0;
  size_t i;
  unsigned byte;
  if (n < 2) return;
  for (i = 1; i < n; i++)
    if (v[i]->stream != v[0]->stream || v[i]->addr <= v[i - 1]->addr) break;
  if (i < n || n > SIZE_MAX / (2 * sizeof *x) || !(x = gpuplan__malloc(a->ctx, 2 * n * sizeof *x))) {
    qsort(v, n, sizeof *v, blk_cmp);
    return;
  }
  y = x + n;
  for (i = 0; i < n; i++) {
    x[i].size = v[i]->size;
    x[i].b = v[i];
    diff |= x[i].size ^ x[0].size;
  }
  for (byte = 0; byte < 8; byte++) {
    const unsigned sh = 8 * byte;
    size_t count[256] = {0}, at = 0, c;
    skey *t;
    if (!((diff >> sh) & 0xffu)) continue;
    for (i = 0; i < n; i++) count[(x[i].size >> sh) & 0xffu]++;
    for (c = 0; c < 256; c++) {
      size_t m = count[c];
      count[c] = at;
      at += m;
    }
    for (i = 0; i < n; i++) y[count[(x[i].size >> sh) & 0xffu]++] = x[i];
    t = x, x = y, y = t;
  }
  for (i = 0; i < n; i++) v[i] = x[i].b;
  gpuplan__free(a->ctx, x < y ? x : y);
}

/* After a state was installed: sort the pools, recompute inactive_split. */
void gpuplan__alloc_installed(gpuplan_cachealloc *a) {
  gpuplan__seg *s;
  size_t q;
  int k;
  sort_pool(a, &a->small);
  sort_pool(a, &a->large);
  for (q = 0; q < a->npp; q++) {
    sort_pool(a, &a->pp[q].small);
    sort_pool(a, &a->pp[q].large);
  }
  for (k = 0; k < 3; k++) {
    memset(&a->st.inactive_split[k], 0, sizeof a->st.inactive_split[k]);
    memset(&a->st.inactive_split_bytes[k], 0, sizeof a->st.inactive_split_bytes[k]);
  }
  for (s = a->segs; s; s = s->snext) {
    gpuplan__blk *b;
    if (!s->first || !s->first->next || s->expandable) continue; /* R12: none for expandable */
    for (b = s->first; b; b = b->next)
      if (!b->allocated) {
        gpuplan__stat3(a->st.inactive_split, b->small, 1);
        gpuplan__stat3(a->st.inactive_split_bytes, b->small, (int64_t)b->size);
      }
  }
}

