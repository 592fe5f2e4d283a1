/*
 * expandable.c: expandable segments (expandable_segments:True, R26-R30):
 * one virtual range per stream and pool, 2 MiB (small) or
 * large_segment_size (large) pages mapped on demand and unmapped when a
 * whole page is free.  CUDACachingAllocator.cpp's find_expandable_block,
 * map_block, unmap_block and try_allocate_expandable_block.
 */
#include <string.h>

#include "alloc/alloc_parts.h"

static uint64_t page_of(const gpuplan_cachealloc *a, int small) {
  return small ? KSMALL_BUFFER : a->conf.large_segment_size;
}

/* map_block: map the pages covering [b->addr, b->addr + size) of the
 * unmapped block b: 1, or 0 when the device is full (*rc GPUPLAN_OK) or
 * host memory ran out (*rc GPUPLAN_ENOMEM, nothing changed). */
static int map_block(gpuplan_cachealloc *a, gpuplan__blk *b, uint64_t size, int *rc) {
  gpuplan__pool *p = gpuplan__pool_of(a, b->pool, b->small);
  uint64_t page = b->seg->page, off = b->addr - b->seg->addr;
  uint64_t end = (off + size + page - 1) / page * page, mapped, at = b->addr;
  if (end > b->seg->size) end = b->seg->size;
  mapped = end - off;
  if ((*rc = gpuplan__spare_reserve(a, 1)) || (*rc = gpuplan__pool_reserve(a, p, 1, 1))) return 0;
  if (a->va.map ? a->va.map(a->va.payload, at, mapped) != GPUPLAN_OK
                : a->dev.map && a->dev.map(a->dev.payload, mapped) != GPUPLAN_OK)
    return 0;
  gpuplan__pool_uremove(p, b);
  if (mapped < b->size) {
    gpuplan__blk *r = gpuplan__split_block(a, b, mapped); /* reserved: cannot fail */
    gpuplan__pool_uinsert(a, p, r);                       /* the rest stays unmapped */
  }
  b->mapped = 1;
  (void)gpuplan__try_merge_blocks(a, b, b->prev);
  (void)gpuplan__try_merge_blocks(a, b, b->next);
  gpuplan__pool_insert(a, p, b); /* reserved: cannot fail */
  gpuplan__stat3(a->st.reserved_bytes, b->small, (int64_t)mapped);
  a->st.num_device_alloc++;
  gpuplan__emit(a, GPUPLAN_ACT_SEGMENT_MAP, at, mapped, b->stream, 0);
  return 1;
}

int gpuplan__unmap_block(gpuplan_cachealloc *a, gpuplan__blk *b) {
  gpuplan__pool *p = gpuplan__pool_of(a, b->pool, b->small);
  uint64_t page = b->seg->page, base = b->seg->addr;
  uint64_t lo = (b->addr - base + page - 1) / page * page + base;
  uint64_t hi = (b->addr + b->size - base) / page * page + base;
  if (lo >= hi) return GPUPLAN_OK;
  GPUPLAN_TRY(gpuplan__spare_reserve(a, 2));
  GPUPLAN_TRY(gpuplan__pool_reserve(a, p, 2, 1));
  gpuplan__pool_remove(p, b);
  /* Partial edge pages stay mapped, as free blocks of their own. */
  if (lo > b->addr) {
    gpuplan__blk *left = b;
    b = gpuplan__split_block(a, left, lo - left->addr); /* reserved */
    gpuplan__pool_insert(a, p, left);
  }
  if (hi < b->addr + b->size) {
    gpuplan__blk *right = gpuplan__split_block(a, b, hi - b->addr); /* reserved */
    gpuplan__pool_insert(a, p, right);
  }
  b->mapped = 0;
  if (a->va.unmap) a->va.unmap(a->va.payload, lo, hi - lo);
  else if (a->dev.unmap) a->dev.unmap(a->dev.payload, hi - lo);
  gpuplan__stat3(a->st.reserved_bytes, b->small, -(int64_t)(hi - lo));
  a->st.num_device_free++;
  gpuplan__emit(a, GPUPLAN_ACT_SEGMENT_UNMAP, lo, hi - lo, b->stream, 0);
  /* Merge with unmapped neighbours, which are in the unmapped set. */
  if (b->prev && !b->prev->mapped) {
    gpuplan__blk *n = b->prev;
    gpuplan__pool_uremove(p, n);
    b->addr = n->addr;
    b->size += n->size;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
    else b->seg->first = b;
    gpuplan__blk_del(a, n);
  }
  if (b->next && !b->next->mapped) {
    gpuplan__blk *n = b->next;
    gpuplan__pool_uremove(p, n);
    b->size += n->size;
    b->next = n->next;
    if (b->next) b->next->prev = b;
    gpuplan__blk_del(a, n);
  }
  gpuplan__pool_uinsert(a, p, b); /* reserved: cannot fail */
  return GPUPLAN_OK;
}

static int allocatable(const gpuplan__blk *b) { return b && !b->allocated; }

static int has_room(const gpuplan__blk *b, uint64_t size) {
  uint64_t bytes = 0;
  while (bytes < size && allocatable(b)) {
    bytes += b->size;
    b = b->next;
  }
  return bytes >= size;
}

/* find_expandable_block: the lowest unmapped range on this stream (with a
 * free block right before it) that has room, or a new reservation; NULL
 * with *rc GPUPLAN_ENOMEM when host memory ran out. */
static gpuplan__blk *find_expandable_block(gpuplan_cachealloc *a, uint64_t stream, int pool, int small,
                                           uint64_t size, int *rc) {
  gpuplan__pool *p = gpuplan__pool_of(a, pool, small);
  size_t i;
  gpuplan__seg *s;
  gpuplan__blk *c;
  uint64_t page = page_of(a, small), va, base = 0, vsize = 0;
  int chosen;
  for (i = gpuplan__pool_ulower(p, stream, 0); i < p->un && p->u[i]->stream == stream; i++) {
    c = p->u[i];
    if (allocatable(c->prev)) c = c->prev;
    if (has_room(c, size)) return c;
  }
  /* Reserve address space for 1 1/8 of the device's memory. */
  va = a->total_memory + a->total_memory / 8;
  va = (va + page - 1) / page * page;
  if (va < size) va = (size + page - 1) / page * page;
  chosen = a->va.reserve && a->va.reserve(a->va.payload, (size + page - 1) / page * page, page, stream, small,
                                          &base, &vsize) == GPUPLAN_OK;
  /* A device that chooses addresses (exact replay) and refuses: no memory
   * now, as a failed map would be (the OOM path may release some first). */
  if (a->va.reserve && !chosen) return NULL;
  if (chosen) va = vsize;
  if ((*rc = gpuplan__spare_reserve(a, 1)) || (*rc = gpuplan__pool_reserve(a, p, 0, 1))) return NULL;
  if (!(s = gpuplan__calloc(a->ctx, 1, sizeof *s))) {
    *rc = gpuplan__nomem(a->ctx);
    return NULL;
  }
  c = gpuplan__blk_new(a); /* reserved: cannot fail */
  if (chosen) {
    s->addr = base;
  } else {
    s->addr = a->mock.next_va;
    a->mock.next_va += va + (1ull << 30);
  }
  s->size = va;
  s->stream = stream;
  s->small = small;
  s->pool = pool;
  s->expandable = 1;
  s->page = page;
  s->snext = a->segs;
  if (a->segs) a->segs->sprev = s;
  a->segs = s;
  a->nsegs++;
  c->addr = s->addr;
  c->size = va;
  c->stream = stream;
  c->seg = s;
  c->small = small;
  c->pool = pool;
  c->expandable = 1;
  c->mapped = 0;
  s->first = c;
  gpuplan__pool_uinsert(a, p, c); /* reserved: cannot fail */
  return c;
}

gpuplan__blk *gpuplan__try_allocate_expandable_block(gpuplan_cachealloc *a, uint64_t stream, int pool,
                                                     int small, uint64_t size, int *rc) {
  gpuplan__blk *c = find_expandable_block(a, stream, pool, small, size, rc);
  if (!c) return NULL;
  if (!c->mapped) {
    uint64_t want = c->size < size ? c->size : size;
    if (!map_block(a, c, want, rc)) return NULL;
  }
  while (c->size < size) {
    gpuplan__blk *n = c->next;
    uint64_t rem = size - c->size;
    if (!n || n->mapped) return NULL;
    if (!map_block(a, n, rem < n->size ? rem : n->size, rc)) return NULL;
    c = n; /* n absorbed c when it merged backwards */
  }
  gpuplan__pool_remove(gpuplan__pool_of(a, pool, small), c);
  return c;
}

void gpuplan__alloc_set_va_ops(gpuplan_cachealloc *a, const gpuplan__va_ops *ops) {
  if (ops) a->va = *ops;
  else memset(&a->va, 0, sizeof a->va);
}

/* An unmapped or mapped piece of an installed reservation, after last. */
static gpuplan__blk *install_piece(gpuplan_cachealloc *a, gpuplan__seg *s, gpuplan__blk *last, uint64_t addr,
                                   uint64_t size, int mapped) {
  gpuplan__blk *b = gpuplan__blk_new(a); /* reserved: cannot fail */
  b->addr = addr;
  b->size = size;
  b->stream = s->stream;
  b->seg = s;
  b->small = s->small;
  b->expandable = 1;
  b->mapped = mapped;
  b->prev = last;
  if (last) last->next = b;
  else s->first = b;
  return b;
}

int gpuplan__alloc_install_expandable(gpuplan_cachealloc *a, uint64_t base, uint64_t size, uint64_t stream,
                                      int small, const gpuplan__install_block *blocks, size_t n) {
  gpuplan__pool *p = gpuplan__pool_of(a, 0, small);
  gpuplan__seg *s;
  gpuplan__blk *last = NULL;
  uint64_t at = base;
  size_t i;
  for (i = 0; i < n; i++)
    if (blocks[i].addr < at || blocks[i].size == 0 || blocks[i].addr + blocks[i].size > base + size)
      return gpuplan__error(a->ctx, GPUPLAN_EINVAL, "allocator: installed expandable block %zu lies outside "
                                                    "its reservation or overlaps the one before", i);
    else
      at = blocks[i].addr + blocks[i].size;
  /* Host memory first: the blocks, the gaps (at most n + 1), the pool slots. */
  GPUPLAN_TRY(gpuplan__spare_reserve(a, 2 * n + 1));
  GPUPLAN_TRY(gpuplan__pool_reserve(a, p, n, n + 1));
  if (!(s = gpuplan__calloc(a->ctx, 1, sizeof *s))) return gpuplan__nomem(a->ctx);
  s->addr = base;
  s->size = size;
  s->stream = stream;
  s->small = small;
  s->expandable = 1;
  s->page = page_of(a, small);
  s->snext = a->segs;
  if (a->segs) a->segs->sprev = s;
  a->segs = s;
  a->nsegs++;
  at = base;
  for (i = 0; i < n; i++) {
    gpuplan__blk *b;
    if (blocks[i].addr > at) {
      last = install_piece(a, s, last, at, blocks[i].addr - at, 0);
      gpuplan__pool_uinsert(a, p, last); /* reserved: cannot fail */
    }
    b = last = install_piece(a, s, last, blocks[i].addr, blocks[i].size, 1);
    b->requested = blocks[i].requested;
    b->allocated = blocks[i].allocated;
    gpuplan__stat3(a->st.reserved_bytes, small, (int64_t)b->size);
    if (b->allocated) {
      GPUPLAN_TRY(gpuplan__install_live(a, b));
    } else {
      p->v[p->n++] = b; /* reserved; gpuplan__alloc_installed sorts the pools once */
    }
    at = b->addr + b->size;
  }
  if (at < base + size) {
    last = install_piece(a, s, last, at, base + size - at, 0);
    gpuplan__pool_uinsert(a, p, last); /* reserved: cannot fail */
  }
  return GPUPLAN_OK;
}

void gpuplan__release_expandable_segments(gpuplan_cachealloc *a, int pool, int small) {
  gpuplan__seg *s = a->segs, *nx;
  for (; s; s = nx) {
    gpuplan__blk *b = s->first;
    nx = s->snext;
    if (!s->expandable || s->small != small || s->pool != pool || !b || b->mapped || b->next) continue;
    gpuplan__pool_uremove(gpuplan__pool_of(a, pool, small), b);
    gpuplan__blk_del(a, b);
    if (s->sprev) s->sprev->snext = s->snext;
    else a->segs = s->snext;
    if (s->snext) s->snext->sprev = s->sprev;
    a->nsegs--;
    gpuplan__free(a->ctx, s);
  }
}

uint64_t gpuplan__alloc_large_page(const gpuplan_cachealloc *a) { return a->conf.large_segment_size; }
