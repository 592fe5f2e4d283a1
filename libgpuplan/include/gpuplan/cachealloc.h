/*
 * gpuplan/cachealloc.h: PyTorch's CUDA caching allocator, rule for rule.
 *
 * A model of the native `c10/cuda/CUDACachingAllocator.cpp` backend for one
 * device: size rounding (roundup_power2_divisions), small and large pools,
 * segment sizes, best-fit search by (stream, size, address), splitting and
 * merging, max_split_size, garbage_collection_threshold with a memory
 * fraction, the free-and-retry path, statistics and the exact OOM text.
 * Rules are numbered as in data/reference/allocator-rules.md (R1-R32);
 * docs/allocator.md maps them to the code.
 *
 * Device memory itself comes from a device (gpuplan_device_ops): the
 * built-in mock device (a capacity and a 2 MiB-granular address space) or
 * one supplied by the caller (a replay that must reproduce recorded
 * addresses, a real GPU).
 */
#ifndef GPUPLAN_ALLOCATOR_H
#define GPUPLAN_ALLOCATOR_H

#include "common.h"
#include "ctx.h"

GPUPLAN_BEGIN_DECLS

/**
 * Which PyTorch release's behaviour to reproduce where releases differ.
 *
 * Since 0.2.0 every release from 1.13 to 2.10 has a value of its own,
 * major * 100 + minor (GPUPLAN_TORCH_RELEASE(2, 4) == GPUPLAN_TORCH_V2_4 ==
 * 204), and every rule is a test on that number (docs/allocator.md,
 * "Versions", lists each rule with the PyTorch source it follows).  The
 * four values of 0.1 keep their names and stand for one release each.
 */
typedef enum gpuplan_torch_version {
  GPUPLAN_TORCH_LATEST = 0, /**< main after 2.10 (the newest source read): docs.pytorch.org URL in the OOM text */
  GPUPLAN_TORCH_2_0 = 1,    /**< 2.0 (same as GPUPLAN_TORCH_V2_0) */
  GPUPLAN_TORCH_2_X = 2,    /**< "2.x", 2.1 to 2.9: the rules of 2.9, the last of them (GPUPLAN_TORCH_V2_9) */
  GPUPLAN_TORCH_1_13 = 3,   /**< 1.13 (same as GPUPLAN_TORCH_V1_13) */
  GPUPLAN_TORCH_V1_13 = 113, /**< one value per release (since 0.2.0) */
  GPUPLAN_TORCH_V2_0 = 200,
  GPUPLAN_TORCH_V2_1 = 201,
  GPUPLAN_TORCH_V2_2 = 202,
  GPUPLAN_TORCH_V2_3 = 203,
  GPUPLAN_TORCH_V2_4 = 204,
  GPUPLAN_TORCH_V2_5 = 205,
  GPUPLAN_TORCH_V2_6 = 206,
  GPUPLAN_TORCH_V2_7 = 207,
  GPUPLAN_TORCH_V2_8 = 208,
  GPUPLAN_TORCH_V2_9 = 209,
  GPUPLAN_TORCH_V2_10 = 210
} gpuplan_torch_version;

/** The value of release major.minor (1.13 and 2.0 to 2.10 are known). */
#define GPUPLAN_TORCH_RELEASE(major, minor) ((gpuplan_torch_version)((major) * 100 + (minor)))

#define GPUPLAN_ALLOC_CONF_VERSION 2

/** Allocator settings, as PYTORCH_ALLOC_CONF sets them. */
typedef struct gpuplan_alloc_conf {
  unsigned version;                 /**< GPUPLAN_ALLOC_CONF_VERSION (1 is still accepted) */
  gpuplan_torch_version torch;      /**< as given to gpuplan_alloc_conf_parse */
  uint64_t max_split_size;          /**< bytes; UINT64_MAX = unlimited (default) */
  uint64_t max_non_split_rounding;  /**< bytes; 20 MiB default */
  unsigned roundup_divisions[16];   /**< per size interval (R4); 0 = off */
  double garbage_collection_threshold; /**< (0, 1); 0 = off (needs a memory fraction) */
  int expandable_segments;
  uint64_t large_segment_size;      /**< 20 MiB */
  double memory_fraction;           /**< set_per_process_memory_fraction; 1 = none */
  /* version 2 (0.2.0) */
  unsigned release;                 /**< the release whose rules apply, major*100+minor (211: main after 2.10) */
  uint64_t roundup_bypass_threshold; /**< 1.13's roundup_bypass_threshold_mb, bytes; UINT64_MAX = none */
} gpuplan_alloc_conf;

/**
 * Parse a PYTORCH_ALLOC_CONF string ("expandable_segments:True,
 * max_split_size_mb:128", "roundup_power2_divisions:[256:1,512:2,>:8]",
 * "garbage_collection_threshold:0.6", ...) into defaults-plus-settings, as
 * the given release parses it: a key that release did not know is refused,
 * as PyTorch refused it ("Unrecognized CachingAllocator option"), naming
 * the release that added it.  NULL or "" gives the defaults.
 *
 * @param torch  a release (GPUPLAN_TORCH_V2_4, GPUPLAN_TORCH_RELEASE(2, 4))
 *               or one of the four values of 0.1.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL naming the key and the allowed values
 *         (max_split_size_mb must be > 20 before 2.10, >= 20 since, divisions
 *         powers of two, ...) or the release.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_alloc_conf_parse(gpuplan_ctx *ctx, const char *conf,
                                         gpuplan_torch_version torch,
                                         gpuplan_alloc_conf *out);

/** The device under an allocator: where segments come from. */
typedef struct gpuplan_device_ops {
  /** Reserve size bytes; GPUPLAN_OK with *addr_out, or GPUPLAN_ENOTFOUND when the device is full. */
  int (*malloc)(void *payload, uint64_t size, uint64_t *addr_out);
  /** Return a segment. */
  void (*free)(void *payload, uint64_t addr, uint64_t size);
  /** cudaMemGetInfo. */
  void (*mem_info)(void *payload, uint64_t *free_out, uint64_t *total_out);
  void *payload;
  /** Optional (expandable segments): back size bytes of physical pages;
   * GPUPLAN_OK or GPUPLAN_ENOTFOUND when full.  NULL: always succeeds. */
  int (*map)(void *payload, uint64_t size);
  /** Optional: release size bytes of physical pages. */
  void (*unmap)(void *payload, uint64_t size);
} gpuplan_device_ops;

/** Trace actions, as in torch.cuda.memory._snapshot()'s device_traces. */
typedef enum gpuplan_alloc_action {
  GPUPLAN_ACT_ALLOC = 0,
  GPUPLAN_ACT_FREE_REQUESTED,
  GPUPLAN_ACT_FREE_COMPLETED,
  GPUPLAN_ACT_SEGMENT_ALLOC,
  GPUPLAN_ACT_SEGMENT_FREE,
  GPUPLAN_ACT_SEGMENT_MAP,
  GPUPLAN_ACT_SEGMENT_UNMAP,
  GPUPLAN_ACT_OOM,
  GPUPLAN_ACT_SNAPSHOT
} gpuplan_alloc_action;

/** One trace entry. */
typedef struct gpuplan_alloc_event {
  gpuplan_alloc_action action;
  uint64_t addr;         /**< block or segment start (0 for oom) */
  uint64_t size;         /**< as PyTorch records it (requested size for alloc/free) */
  uint64_t stream;
  uint64_t device_free;  /**< oom only */
} gpuplan_alloc_event;

/** Callback receiving every trace entry the allocator produces. */
typedef void (*gpuplan_alloc_trace_fn)(void *payload, const gpuplan_alloc_event *ev);

/** One statistic, as c10's Stat. */
typedef struct gpuplan_stat {
  int64_t current, peak, allocated, freed;
} gpuplan_stat;

/** Indexes of gpuplan_stat arrays: all, small pool, large pool. */
enum { GPUPLAN_POOL_ALL = 0, GPUPLAN_POOL_SMALL = 1, GPUPLAN_POOL_LARGE = 2 };

/** torch.cuda.memory_stats(), the keys that apply to the model. */
typedef struct gpuplan_alloc_stats {
  gpuplan_stat allocation[3], segment[3], active[3], inactive_split[3];
  gpuplan_stat allocated_bytes[3], reserved_bytes[3], active_bytes[3];
  gpuplan_stat inactive_split_bytes[3], requested_bytes[3];
  gpuplan_stat oversize_allocations, oversize_segments;
  int64_t num_alloc_retries, num_ooms, num_sync_all_streams;
  int64_t num_device_alloc, num_device_free;
  int64_t max_split_size;  /**< -1 = unlimited */
} gpuplan_alloc_stats;

typedef struct gpuplan_cachealloc gpuplan_cachealloc;

/**
 * Create an allocator over a device.
 * @param conf    NULL for the defaults of the latest release; a structure of
 *                version 1 (no release field: its torch value names the
 *                release) or 2.
 * @param capacity  bytes PyTorch can get from the built-in mock device
 *                (used when device is NULL): cudaMalloc succeeds iff the
 *                segment fits in capacity - reserved.
 * @param device  NULL for the built-in mock device; otherwise copied.
 * @param[out] out  the allocator, freed with gpuplan_cachealloc_free().
 * @return GPUPLAN_OK, GPUPLAN_ENOMEM, GPUPLAN_EINVAL.
 * @errors nomem  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cachealloc_new(gpuplan_ctx *ctx, const gpuplan_alloc_conf *conf,
                                      uint64_t capacity, const gpuplan_device_ops *device,
                                      gpuplan_cachealloc **out);

/** Free an allocator (its device segments are returned first).  Accepts NULL.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API void gpuplan_cachealloc_free(gpuplan_cachealloc *a);

/** Receive every trace entry (NULL to stop).  @threads ctx  @errors none  @since 0.2.0 */
GPUPLAN_API void gpuplan_cachealloc_set_trace(gpuplan_cachealloc *a, gpuplan_alloc_trace_fn fn,
                                             void *payload);

/**
 * torch's malloc: allocate size bytes on stream.
 * @param[out] addr_out  the block address (0 for size 0).
 * @return GPUPLAN_OK; GPUPLAN_EOOM (the simulated device is out of memory:
 *         gpuplan_errmsg() is PyTorch's OutOfMemoryError text, number for
 *         number); GPUPLAN_ENOMEM (host memory).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cachealloc_malloc(gpuplan_cachealloc *a, uint64_t size, uint64_t stream,
                                         uint64_t *addr_out);

/**
 * torch's free of the block at addr.  addr 0 (what a size-0 request gets)
 * is a no-op, as free(NULL).
 * @return GPUPLAN_OK; GPUPLAN_EINVAL when addr is not an allocated block;
 *         GPUPLAN_ENOMEM (host) before anything changed.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cachealloc_release(gpuplan_cachealloc *a, uint64_t addr);

/**
 * torch.cuda.empty_cache(): return every whole free segment, and unmap the
 * free pages of expandable segments (R19, R29).
 * @return GPUPLAN_OK; GPUPLAN_ENOMEM when host memory ran out while
 *         unmapping (the pages not yet unmapped stay mapped; the state is
 *         consistent); GPUPLAN_EMISUSE for NULL.
 * @errors nomem  @threads ctx  @since 0.1.0 (returns a status since 0.2.0)
 */
GPUPLAN_API int gpuplan_cachealloc_empty_cache(gpuplan_cachealloc *a);

/**
 * beginAllocateToPool: route every following allocation to the private
 * pool pool_id (torch.cuda.MemPool, a CUDA graph's pool), created with
 * use_count 1 on first use, else its use_count is incremented.  A private
 * pool's blocks are cached in it and reused only by allocations routed to
 * it; a freed block returns to its own pool.
 * @return GPUPLAN_OK; GPUPLAN_EINVAL for pool_id 0 or while another
 *         begin_pool is in force; GPUPLAN_ENOMEM; GPUPLAN_EMISUSE for NULL.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_cachealloc_begin_pool(gpuplan_cachealloc *a, uint64_t pool_id);

/**
 * endAllocateToPool: allocations go to the default pools again.
 * @return GPUPLAN_OK; GPUPLAN_EINVAL when no begin_pool is in force;
 *         GPUPLAN_EMISUSE for NULL.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_cachealloc_end_pool(gpuplan_cachealloc *a);

/**
 * releasePool: decrement pool_id's use_count.  At 0 the next empty_cache
 * frees its whole free segments, and deletes the pool once none remain;
 * empty_cache never frees segments of a pool still in use.
 * @return GPUPLAN_OK; GPUPLAN_EINVAL for a pool that is unknown or no
 *         longer in use; GPUPLAN_EMISUSE for NULL.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_cachealloc_release_pool(gpuplan_cachealloc *a, uint64_t pool_id);

/** The statistics (borrowed; valid while the allocator lives).  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API const gpuplan_alloc_stats *gpuplan_cachealloc_stats(const gpuplan_cachealloc *a);

/** The configuration in force (borrowed).  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API const gpuplan_alloc_conf *gpuplan_cachealloc_conf(const gpuplan_cachealloc *a);

/** Largest free cached block and total free cached bytes (fragmentation view).  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API void gpuplan_cachealloc_free_space(const gpuplan_cachealloc *a, uint64_t *largest_out,
                                              uint64_t *total_out);

/** A block of a segment. */
typedef struct gpuplan_block_info {
  uint64_t addr, size, requested;
  int state;  /**< 0 inactive, 1 active_allocated */
} gpuplan_block_info;

/** A segment (cudaMalloc) with its blocks, as in the snapshot's "segments". */
typedef struct gpuplan_segment_info {
  uint64_t addr, total_size, allocated_size, requested_size, stream;
  int large;       /**< segment_type "large" */
  int expandable;
  size_t nblocks;
  uint64_t pool_id; /**< the private pool it belongs to (gpuplan_cachealloc_begin_pool); 0: the default pools  @since 0.2.0 */
} gpuplan_segment_info;

/** Number of segments.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API size_t gpuplan_cachealloc_segment_count(const gpuplan_cachealloc *a);

/**
 * Segment i in address order, and up to cap of its blocks in address order.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (i out of range).
 * @threads ctx
 * @errors any  @since 0.2.0
 */
GPUPLAN_API int gpuplan_cachealloc_segment(gpuplan_cachealloc *a, size_t i,
                                          gpuplan_segment_info *seg_out,
                                          gpuplan_block_info *blocks, size_t cap);

/**
 * The memory_summary() report (torch/cuda/memory.py's table, device 0, in
 * the layout of the conf's release: 1.13's KB/MB without "Requested
 * memory", else 2.x's), NUL-terminated.
 * @param[out] out  free with gpuplan_free(ctx, *out).
 * @errors nomem  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cachealloc_summary(gpuplan_cachealloc *a, char **out);

/** PyTorch's format_size(): "512 bytes", "2.00 MiB", "1.50 GiB" into buf.  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API void gpuplan_format_size(uint64_t bytes, char *buf, size_t cap);

/** What a PyTorch OOM message says (gpuplan_oom_parse). Sizes in bytes. */
typedef struct gpuplan_oom_info {
  int format;               /**< 1: torch <= 2.0 text; 2: 2.1+ text */
  int device;
  uint64_t tried;           /**< "Tried to allocate": the segment the allocator asked the driver for */
  uint64_t total;           /**< total capacity */
  uint64_t free;            /**< free on the device */
  uint64_t allocated;       /**< allocated by PyTorch */
  uint64_t unallocated;     /**< reserved by PyTorch but unallocated (2.1+; derived for 2.0) */
  uint64_t reserved;        /**< allocated + unallocated */
  uint64_t process;         /**< "this process has X memory in use" (0 if absent) */
  uint64_t others;          /**< memory of other processes listed in the message */
  uint64_t allowed;         /**< set_per_process_memory_fraction cap (0 if none) */
  uint64_t private_pools;   /**< cached in CUDA-graph pools */
  int nprocs;               /**< other processes listed */
  int partial;              /**< only "Tried to allocate" was given (format 0): the rest is unknown */
  int cuda_error;           /**< "CUDA error: out of memory": the CUDA runtime, not the caching allocator */
  int messages;             /**< out-of-memory messages in the text (a multi-rank log); the first is read */
  int rank;                 /**< the rank the first came from ("[rank3]:"), or -1 */
  int self_listed;          /**< no "this process has": the one "Process N has X" of PyTorch's reserved
                                 bytes plus at most 4 GiB is taken for this process (a container, where
                                 NVML gives the host's PIDs) and counted in process, not others
                                 @since 0.2.0 */
  int conf_var;             /**< the variable the message's release reads, which the advice names:
                                 1 PYTORCH_CUDA_ALLOC_CONF (<= 2.9, main: the text names it, or 2.1's
                                 wording), 2 PYTORCH_ALLOC_CONF (2.10's text names it), 3
                                 PYTORCH_HIP_ALLOC_CONF (a ROCm build's), 0 unknown (a message cut before
                                 its advice)  @since 0.2.0 */
} gpuplan_oom_info;

/**
 * Parse the text of a torch.OutOfMemoryError ("CUDA out of memory. Tried to
 * allocate 2.00 GiB. GPU 0 has a total capacity of ..."), or a log holding
 * it: the first out-of-memory message is read (a multi-rank log repeats
 * it per rank; messages counts them), the rest of the log is ignored.  The
 * <= 2.0 and 2.1+ wordings are understood, so are a message cut after
 * "Tried to allocate X" (partial) and the CUDA runtime's "CUDA error: out
 * of memory" (cuda_error).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL when the text holds no
 *         out-of-memory message (or an unreadable one), saying so.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_oom_parse(gpuplan_ctx *ctx, const char *text, gpuplan_oom_info *out);

/** Verdicts of gpuplan_oom_explain(). */
typedef enum gpuplan_oom_verdict {
  GPUPLAN_OOM_FRAGMENTATION = 0, /**< the cached free memory alone exceeds the request */
  GPUPLAN_OOM_MIXED = 1,         /**< free + cached would cover it, neither alone */
  GPUPLAN_OOM_DEMAND = 2,        /**< the job needs more than the card has */
  GPUPLAN_OOM_OTHER_PROCESS = 3, /**< another process holds what was missing */
  GPUPLAN_OOM_FRACTION = 4,      /**< a memory-fraction cap, not the card, refused it */
  GPUPLAN_OOM_UNKNOWN = 5        /**< the message does not say enough (partial, or the CUDA runtime's) */
} gpuplan_oom_verdict;

/**
 * Diagnose a parsed OOM: the verdict and the fixes, in the order to try
 * them, as text (one fix a line, numbered).
 * @param[out] text_out  NUL-terminated; free with gpuplan_free(ctx, *text_out).
 * @return GPUPLAN_OK or GPUPLAN_ENOMEM.
 * @errors nomem  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_oom_explain(gpuplan_ctx *ctx, const gpuplan_oom_info *info,
                                    gpuplan_oom_verdict *verdict_out, char **text_out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_ALLOCATOR_H */
