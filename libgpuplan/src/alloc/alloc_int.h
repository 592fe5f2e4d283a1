/* alloc_int.h: the caching allocator's private structures (replay uses them). */
#ifndef GPUPLAN_ALLOC_INT_H
#define GPUPLAN_ALLOC_INT_H

#include "common/internal.h"

#define KMIN_BLOCK 512ull
#define KSMALL_SIZE 1048576ull
#define KSMALL_BUFFER 2097152ull
#define KMIN_LARGE_ALLOC 10485760ull
#define KROUND_LARGE 2097152ull

typedef struct gpuplan__seg gpuplan__seg;

typedef struct gpuplan__blk {
  uint64_t addr, size, requested;
  uint64_t stream;
  struct gpuplan__blk *prev, *next;  /* neighbours inside the segment */
  gpuplan__seg *seg;
  uint64_t gc_count;                 /* large-pool get_free_block calls since inserted */
  int allocated;
  int small;                         /* pool */
  int mapped;                        /* 0 only for unmapped ranges of expandable segments */
  int expandable;                    /* lives in an expandable segment */
  struct gpuplan__blk *hnext;        /* allocated-address hash chain / free list */
} gpuplan__blk;

struct gpuplan__seg {
  uint64_t addr, size, stream;
  int small;
  int expandable;                    /* a virtual reservation mapped page by page (R26) */
  uint64_t page;                     /* its page size */
  gpuplan__blk *first;
  struct gpuplan__seg *snext, *sprev;
};

/* A pool: free blocks sorted by (stream, size, addr). */
typedef struct gpuplan__pool {
  gpuplan__blk **v;
  size_t n, cap;
  gpuplan__blk **u;                  /* unmapped ranges, sorted by (stream, addr) */
  size_t un, ucap;
  uint64_t get_free_blocks_call_count;
} gpuplan__pool;

typedef struct gpuplan__mockdev {
  uint64_t capacity, reserved, next_addr, next_va;
  /* freed address ranges, reused first-fit */
  uint64_t *free_addr, *free_size;
  size_t nfree, capfree;
  gpuplan_ctx *ctx;
} gpuplan__mockdev;

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
  gpuplan_alloc_stats st;
  gpuplan_alloc_trace_fn trace;
  void *trace_payload;
  uint64_t total_memory;       /* for the fraction and the OOM text */
};

/* Used by replay to build a starting state. */
gpuplan__seg *gpuplan__alloc_add_segment(gpuplan_cachealloc *a, uint64_t addr, uint64_t size,
                                         uint64_t stream, int small);
int gpuplan__alloc_add_block(gpuplan_cachealloc *a, gpuplan__seg *s, uint64_t addr,
                             uint64_t size, uint64_t requested, int allocated);
uint64_t gpuplan__round_size(const gpuplan_alloc_conf *c, uint64_t n);
void gpuplan__alloc_recount(gpuplan_cachealloc *a);
uint64_t gpuplan__allocation_size(const gpuplan_alloc_conf *c, uint64_t size);
/* memory_summary(device, abbreviated) in the layout of a release. */
int gpuplan__alloc_summary(gpuplan_cachealloc *a, int device, int abbreviated, gpuplan_torch_version layout,
                           char **out);

#endif
