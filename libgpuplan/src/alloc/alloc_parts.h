/*
 * alloc_parts.h: the caching allocator's private structures and the
 * primitives its parts share.  Only src/alloc/ includes it; replay and
 * simulation use the small interface of alloc_int.h.
 *
 * The parts, named as c10/cuda/CUDACachingAllocator.cpp names things:
 *
 *   conf.c        the settings (PYTORCH_ALLOC_CONF) and size rounding
 *                 (round_size, get_allocation_size)
 *   pool.c        Block, BlockPool and segment primitives: the free sets
 *                 ordered by (stream, size, address), the allocated-block
 *                 map, block splitting (one place), statistics (Stat)
 *   allocator.c   DeviceCachingAllocator: malloc (get_free_block,
 *                 alloc_block, the retry path, should_split,
 *                 alloc_found_block), free (free_block, try_merge_blocks),
 *                 release_cached_blocks and friends, the mock device
 *   expandable.c  expandable segments: find_expandable_block, map_block,
 *                 unmap_block, try_allocate_expandable_block
 *   report.c      what the allocator shows: the snapshot's segments,
 *                 memory_summary(), format_size
 *   oom.c         reading an OutOfMemoryError back
 */
#ifndef GPUPLAN_ALLOC_PARTS_H
#define GPUPLAN_ALLOC_PARTS_H

#include "alloc/alloc_int.h"

#define MiB 1048576ull

typedef struct gpuplan__seg gpuplan__seg;

/* Block */
typedef struct gpuplan__blk {
  uint64_t addr, size, requested;
  uint64_t stream;
  struct gpuplan__blk *prev, *next;  /* neighbours inside the segment */
  gpuplan__seg *seg;
  uint64_t gc_count;                 /* large-pool get_free_block calls since inserted */
  int allocated;
  int small;                         /* pool */
  int pool;                          /* 0: the default pools; k: private pool a->pp[k - 1] */
  int mapped;                        /* 0 only for unmapped ranges of expandable segments */
  int expandable;                    /* lives in an expandable segment */
  struct gpuplan__blk *hnext;        /* allocated-address hash chain / spare list */
} gpuplan__blk;

/* A cudaMalloc'd segment, or an expandable segment's reservation. */
struct gpuplan__seg {
  uint64_t addr, size, stream;
  int small;
  int pool;                          /* as the block's */
  int expandable;                    /* a virtual reservation mapped page by page (R26) */
  int pooled;                        /* from the allocator's parts arena (gpuplan__seg_add) */
  uint64_t page;                     /* its page size */
  gpuplan__blk *first;
  struct gpuplan__seg *snext, *sprev;
};

/* BlockPool: free blocks sorted by (stream, size, addr); for expandable
 * segments also the unmapped ranges, sorted by (stream, addr). */
typedef struct gpuplan__pool {
  gpuplan__blk **v;
  size_t n, cap;
  gpuplan__blk **u;
  size_t un, ucap;
  uint64_t get_free_blocks_call_count;
} gpuplan__pool;

/* PrivatePool (torch.cuda.MemPool, CUDA-graph pools, R33): its own small
 * and large BlockPools; freeable when use_count drops to 0, deleted by
 * empty_cache once none of its segments remain.  id 0: a free slot. */
typedef struct gpuplan__ppool {
  uint64_t id;
  int64_t use_count;
  gpuplan__pool small, large;
} gpuplan__ppool;

/* The built-in mock device: a capacity and an address space. */
typedef struct gpuplan__mockdev {
  uint64_t capacity, reserved, next_addr, next_va;
  uint64_t total; /* what mem_info reports as the total (0: capacity; gpuplan__alloc_mock_total) */
  uint64_t *free_addr, *free_size;   /* freed address ranges, reused first-fit */
  size_t nfree, capfree;
  gpuplan_ctx *ctx;
} gpuplan__mockdev;

/* DeviceCachingAllocator */
struct gpuplan_cachealloc {
  gpuplan_ctx *ctx;
  gpuplan_alloc_conf conf;
  gpuplan_device_ops dev;
  gpuplan__mockdev mock;
  gpuplan__pool small, large;
  gpuplan__seg *segs;          /* all segments (unordered list) */
  size_t nsegs;
  gpuplan__blk **hash;         /* allocated blocks by address */
  size_t hcap, hcount;
  gpuplan__blk *spare;         /* recycled block structs */
  gpuplan__seg *spare_segs;    /* recycled segment structs (through snext) */
  gpuplan__arena parts;        /* every block struct and gpuplan__seg_add's segments */
  gpuplan_alloc_stats st;
  gpuplan_alloc_trace_fn trace;
  void *trace_payload;
  uint64_t total_memory;       /* for the fraction and the OOM text */
  gpuplan__va_ops va;          /* expandable reservations' addresses (alloc_int.h), or zeroed */
  gpuplan__ppool *pp;          /* private pools (slots; blocks hold index + 1) */
  size_t npp;
  int cur_pool;                /* where allocations are routed: 0 or a private pool's index + 1 */
  int capturing;               /* a CUDA graph capture is underway (R36) */
};

/* The BlockPool of (pool, small): pool 0 the default ones, k private pool k. */
static inline gpuplan__pool *gpuplan__pool_of(gpuplan_cachealloc *a, int pool, int small) {
  if (pool) return small ? &a->pp[pool - 1].small : &a->pp[pool - 1].large;
  return small ? &a->small : &a->large;
}

/* --- conf.c ---------------------------------------------------------------- */

/* PyTorch's defaults under a release (max_split_size unlimited, 20 MiB
 * max_non_split_rounding and large_segment_size, no fraction). */
void gpuplan__alloc_conf_defaults(gpuplan_alloc_conf *c, gpuplan_torch_version v);
/* A caller's conf (version 1 or 2): the release it stands for (0: none
 * known), and the copy the allocator keeps (release filled in). */
unsigned gpuplan__alloc_conf_release(const gpuplan_alloc_conf *c);
void gpuplan__alloc_conf_copy(gpuplan_alloc_conf *dst, const gpuplan_alloc_conf *src);
/* The release rules of the OOM text and of memory_summary()'s layout. */
int gpuplan__oom_text_v1(const gpuplan_alloc_conf *c);
int gpuplan__oom_text_v21(const gpuplan_alloc_conf *c);
int gpuplan__oom_private_pools(const gpuplan_alloc_conf *c);
const char *gpuplan__oom_env(const gpuplan_alloc_conf *c);
const char *gpuplan__oom_url(const gpuplan_alloc_conf *c);
int gpuplan__summary_v113(unsigned release);

/* --- pool.c ---------------------------------------------------------------- */

/* Stat::increase / decrease, for all and for the block's pool.  PyTorch's
 * counters are int64_t; past 2^63 - 1 (a trace of many exabyte-scale
 * allocations) they wrap as its two's complement arithmetic does, here
 * without C's undefined signed overflow (review 2026-12-02, UBSan). */
static inline int64_t gpuplan__wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline void gpuplan__stat_add(gpuplan_stat *s, int64_t d) {
  s->current = gpuplan__wrap_add(s->current, d);
  if (d > 0) s->allocated = gpuplan__wrap_add(s->allocated, d);
  else s->freed = gpuplan__wrap_add(s->freed, (int64_t)(0 - (uint64_t)d));
  if (s->current > s->peak) s->peak = s->current;
}

static inline void gpuplan__stat3(gpuplan_stat *arr, int small, int64_t d) {
  gpuplan__stat_add(&arr[GPUPLAN_POOL_ALL], d);
  gpuplan__stat_add(&arr[small ? GPUPLAN_POOL_SMALL : GPUPLAN_POOL_LARGE], d);
}
/* A trace entry to the observer (record_trace). */
void gpuplan__emit(gpuplan_cachealloc *a, gpuplan_alloc_action act, uint64_t addr, uint64_t size,
                   uint64_t stream, uint64_t device_free);

/* The first free block not below (stream, size, addr). */
static inline size_t gpuplan__pool_lower_bound(const gpuplan__pool *p, uint64_t stream, uint64_t size,
                                               uint64_t addr) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const gpuplan__blk *x = p->v[mid];
    /* (stream, size, addr) < key, without branches: the search's
     * direction is a coin toss the predictor cannot learn. */
    int lt = (x->stream < stream) |
             ((x->stream == stream) & ((x->size < size) | ((x->size == size) & (x->addr < addr))));
    lo = lt ? mid + 1 : lo;
    hi = lt ? hi : mid;
  }
  return lo;
}
int gpuplan__pool_insert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b);
/* An installed block that is allocated (a replay's start): in the address
 * hash and counted as alloc_found_block counts one (oversize included). */
int gpuplan__install_live(gpuplan_cachealloc *a, gpuplan__blk *b);
void gpuplan__pool_remove(gpuplan__pool *p, gpuplan__blk *b);
/* gpuplan__pool_remove of b where the caller found it: at index i. */
void gpuplan__pool_remove_at(gpuplan__pool *p, size_t i, gpuplan__blk *b);
/* The unmapped set: first range not below (stream, addr); insert, remove. */
size_t gpuplan__pool_ulower(const gpuplan__pool *p, uint64_t stream, uint64_t addr);
int gpuplan__pool_uinsert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b);
void gpuplan__pool_uremove(gpuplan__pool *p, gpuplan__blk *b);

/* The allocated blocks by address. */
int gpuplan__hash_put(gpuplan_cachealloc *a, gpuplan__blk *b);
gpuplan__blk *gpuplan__hash_take(gpuplan_cachealloc *a, uint64_t addr);

/* Block structs, recycled. */
gpuplan__blk *gpuplan__blk_new(gpuplan_cachealloc *a);
void gpuplan__blk_del(gpuplan_cachealloc *a, gpuplan__blk *b);

/* Host memory first, then the change (review M3): after these, the next n
 * gpuplan__blk_new() calls and `more` inserts into p's free set (`umore`
 * into its unmapped set) cannot fail, so an operation either fails with
 * GPUPLAN_ENOMEM before it changes anything or completes. */
int gpuplan__spare_reserve_slow(gpuplan_cachealloc *a, size_t n);
int gpuplan__pool_reserve_slow(gpuplan_cachealloc *a, gpuplan__pool *p, size_t more, size_t umore);
static inline int gpuplan__spare_reserve(gpuplan_cachealloc *a, size_t n) {
  if (n == 0 || (n == 1 && a->spare)) return GPUPLAN_OK;
  return gpuplan__spare_reserve_slow(a, n);
}
static inline int gpuplan__pool_reserve(gpuplan_cachealloc *a, gpuplan__pool *p, size_t more, size_t umore) {
  if (p->n + more <= p->cap && p->un + umore <= p->ucap) return GPUPLAN_OK;
  return gpuplan__pool_reserve_slow(a, p, more, umore);
}

/* Split b at off (0 < off < b->size): b keeps its first off bytes; the
 * returned block, right after b in the segment, the rest, with b's stream,
 * pool, kind and mapping.  Neither is put in a pool.  The one place blocks
 * are split (alloc_found_block, map_block, unmap_block).  NULL only when
 * no spare was reserved and host memory ran out. */
gpuplan__blk *gpuplan__split_block(gpuplan_cachealloc *a, gpuplan__blk *b, uint64_t off);

/* A segment's bookkeeping: listed, counted (segment, reserved_bytes,
 * oversize_segments); unlinked, uncounted and freed. */
gpuplan__seg *gpuplan__seg_add(gpuplan_cachealloc *a, uint64_t addr, uint64_t size, uint64_t stream, int small);
void gpuplan__seg_unlink(gpuplan_cachealloc *a, gpuplan__seg *s);

/* --- allocator.c ------------------------------------------------------------- */

/* try_merge_blocks: merge the free block b with its free neighbour n of the
 * same mapping (taking n out of its pool); the bytes merged, or 0. */
uint64_t gpuplan__try_merge_blocks(gpuplan_cachealloc *a, gpuplan__blk *b, gpuplan__blk *n);

/* --- expandable.c ------------------------------------------------------------ */

/* try_allocate_expandable_block: grow into unmapped space until a free
 * block of size bytes exists, and return it out of its pool; NULL when the
 * device is full (*rc GPUPLAN_OK) or host memory ran out (*rc set). */
gpuplan__blk *gpuplan__try_allocate_expandable_block(gpuplan_cachealloc *a, uint64_t stream, int pool,
                                                     int small, uint64_t size, int *rc);
/* unmap_block (R29): the whole pages inside the free mapped block b. */
int gpuplan__unmap_block(gpuplan_cachealloc *a, gpuplan__blk *b);
/* release_expandable_segment: drop the pool's reservations that are
 * wholly unmapped (a later one is a new reservation). */
void gpuplan__release_expandable_segments(gpuplan_cachealloc *a, int pool, int small);

#endif /* GPUPLAN_ALLOC_PARTS_H */
