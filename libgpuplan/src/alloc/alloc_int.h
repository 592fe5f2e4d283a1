/*
 * alloc_int.h: what the library's other parts (replay, simulation, the
 * job commands) ask of the caching allocator beyond gpuplan/cachealloc.h:
 * a small interface, so that they never touch its structures
 * (alloc_parts.h, private to src/alloc/).  Not installed.
 */
#ifndef GPUPLAN_ALLOC_INT_H
#define GPUPLAN_ALLOC_INT_H

#include "common/internal.h"

#define KMIN_BLOCK 512ull
#define KSMALL_SIZE 1048576ull
#define KSMALL_BUFFER 2097152ull
#define KMIN_LARGE_ALLOC 10485760ull
#define KROUND_LARGE 2097152ull

/* round_size (R2-R4) and get_allocation_size (R7) under a conf. */
uint64_t gpuplan__round_size(const gpuplan_alloc_conf *c, uint64_t n);
uint64_t gpuplan__allocation_size(const gpuplan_alloc_conf *c, uint64_t size);

/* A block of a segment to install (a replay's start state). */
typedef struct gpuplan__install_block {
  uint64_t addr, size, requested;
  int allocated;
} gpuplan__install_block;

/* Install one segment with its blocks (tiling it, in address order) into
 * an allocator that has served nothing yet, in the pool allocations are
 * routed to (gpuplan_cachealloc_begin_pool; default: the default pools);
 * after the last one, gpuplan__alloc_installed() sorts the pools and
 * counts inactive_split.  GPUPLAN_OK or GPUPLAN_ENOMEM. */
int gpuplan__alloc_install(gpuplan_cachealloc *a, uint64_t addr, uint64_t size, uint64_t stream, int small,
                           const gpuplan__install_block *blocks, size_t n);
void gpuplan__alloc_installed(gpuplan_cachealloc *a);

/* Expandable segments with the addresses a caller chooses (the exact
 * replay gives each reservation the base the trace shows and checks every
 * map and unmap): reserve, asked when a new reservation of at least want
 * bytes (whole pages) is needed for (stream, pool), sets *base and *size
 * (a multiple of page, >= want) and returns GPUPLAN_OK, or anything else
 * to take the mock's address space; map and unmap, when set, are called
 * in place of the device's, with the address. */
typedef struct gpuplan__va_ops {
  int (*reserve)(void *payload, uint64_t want, uint64_t page, uint64_t stream, int small, uint64_t *base,
                 uint64_t *size);
  int (*map)(void *payload, uint64_t addr, uint64_t size);
  void (*unmap)(void *payload, uint64_t addr, uint64_t size);
  void *payload;
} gpuplan__va_ops;
void gpuplan__alloc_set_va_ops(gpuplan_cachealloc *a, const gpuplan__va_ops *ops);
/* The large pool's page (large_segment_size); the small pool's is 2 MiB. */
uint64_t gpuplan__alloc_large_page(const gpuplan_cachealloc *a);

/* Install an expandable reservation [base, base + size) of (stream, pool)
 * whose mapped ranges hold the n blocks (address order, inside it, tiling
 * each mapped range); what lies between them is unmapped.  Into an
 * allocator that has served nothing yet, before gpuplan__alloc_installed().
 * GPUPLAN_OK, GPUPLAN_EINVAL (blocks outside or overlapping) or
 * GPUPLAN_ENOMEM. */
int gpuplan__alloc_install_expandable(gpuplan_cachealloc *a, uint64_t base, uint64_t size, uint64_t stream,
                                      int small, const gpuplan__install_block *blocks, size_t n);

/* The built-in mock device after an install: what was installed counts as
 * reserved on it, and new segments come from above top (so that they
 * never meet installed addresses).  Then: what it holds. */
void gpuplan__alloc_mock_above(gpuplan_cachealloc *a, uint64_t top);
uint64_t gpuplan__alloc_mock_reserved(const gpuplan_cachealloc *a);

/* An out-of-memory error the caller raised on the allocator's behalf (a
 * replay whose start state does not fit the device): counted in num_ooms,
 * as every OutOfMemoryError PyTorch throws is. */
void gpuplan__alloc_count_oom(gpuplan_cachealloc *a);

/* The built-in mock device's total as its mem_info reports it (an OOM
 * message's "total capacity"): the card's memory, of which the capacity
 * given at creation is what PyTorch can get (the rest, the CUDA context,
 * is never free).  0 or less than the capacity: the capacity. */
void gpuplan__alloc_mock_total(gpuplan_cachealloc *a, uint64_t total);

/* torch.cuda.reset_peak_memory_stats(): every statistic's peak becomes its
 * current value (a replay whose start did not fit, once the cached
 * segments are released: the peaks are of what the card held). */
void gpuplan__alloc_reset_peaks(gpuplan_cachealloc *a);

/* The segments the snapshot would show (gpuplan_cachealloc_segment's), all
 * at once: *segs (n of them, in address order) and their blocks, one run
 * per segment in *blocks; both ctx-allocated, freed by the caller. */
int gpuplan__alloc_layout(gpuplan_cachealloc *a, gpuplan_segment_info **segs, gpuplan_block_info **blocks,
                          size_t *n);

/* The segments one by one, without allocating (gpuplan__alloc_layout
 * sorts a copy): it zeroed to start; 1 and the next segment in no
 * particular order (expandable: it reserves address space, see
 * gpuplan__alloc_layout for its views), or 0 after the last.  Then its
 * blocks in address order, 1 for each and 0 after its last. */
typedef struct gpuplan__layout_it {
  const void *seg, *blk;
} gpuplan__layout_it;
int gpuplan__alloc_next_segment(const gpuplan_cachealloc *a, gpuplan__layout_it *it, uint64_t *addr,
                                uint64_t *size, int *expandable);
int gpuplan__alloc_next_block(gpuplan__layout_it *it, uint64_t *addr, uint64_t *size, int *allocated);

/* R36: a CUDA graph capture begins (on 1) or ends (0).  While one is
 * underway the out-of-memory path does not empty the cache before its
 * last try (malloc's `captures_underway.empty()` guard: cudaFree cannot
 * run during a capture).  Routing to the graph's pool is begin_pool's. */
void gpuplan__cachealloc_capturing(gpuplan_cachealloc *a, int on);

/* The size of the allocated block at addr, 0 when none is. */
uint64_t gpuplan__alloc_block_size(const gpuplan_cachealloc *a, uint64_t addr);

/* The context an allocator was made on. */
gpuplan_ctx *gpuplan__alloc_ctx(const gpuplan_cachealloc *a);

/* The release a torch value stands for, major*100+minor (211: main after
 * 2.10), 0 for a value that names none; its name ("2.4"); and the rule
 * for the environment: whether that release's CUDA allocator reads
 * PYTORCH_ALLOC_CONF (conf.c). */
unsigned gpuplan__release_of(gpuplan_torch_version v);
void gpuplan__torch_release_name(unsigned release, char *buf, size_t cap);
int gpuplan__reads_pytorch_alloc_conf(unsigned release);
/* 2.10's reading of both variables set (conf.c; keys as release knows
 * them): the pairs of cuda_from (PYTORCH_CUDA_ALLOC_CONF) whose keys are the
 * CUDA allocator's own, then those of generic_from (PYTORCH_ALLOC_CONF) that
 * are generic, joined with ',' into out (cap: at least the two lengths + 2),
 * *len bytes, the first *cuda_len cuda_from's; the pairs neither config
 * reads go to unread (rcap, truncated).  A key of cuda_from no config knows
 * is 2.10's error, said as the parser says it (GPUPLAN_EINVAL). */
int gpuplan__alloc_conf_split_210(gpuplan_ctx *ctx, unsigned release, const char *generic_from, const char *cuda_from,
                                  char *out, size_t cap, size_t *len, size_t *cuda_len, char *unread, size_t rcap);
/* The variable gpuplan_oom_info.conf_var names (oom.c), or NULL for 0. */
const char *gpuplan__oom_conf_var(int conf_var);
/* More release rules outside the allocator (conf.c, beside the others):
 * 1.13's snapshot layout, expandable segments (2.1 on), and which rounding
 * rules of gpuplan__round_size apply (0: 1.13, 1: 2.0-2.3, 2: 2.4 on). */
int gpuplan__snapshot_v113(unsigned release);
int gpuplan__has_expandable_segments(unsigned release);
/* R34: whether a release gives private pools expandable segments (conf.c). */
int gpuplan__private_pools_expandable(unsigned release);
int gpuplan__rounding_rules(unsigned release);
/* roundup_power2_divisions' entry for a key of mb MB (a power of two, as
 * the list form's keys and a snapshot's allocator_settings dict give it):
 * log2(mb), capped at the last entry, 15 (32768 MB and up), as
 * parseRoundUpPower2Divisions does (conf.c [CFG]; allocator-rules R5). */
unsigned gpuplan__roundup_interval(uint64_t mb);

/* memory_summary(device, abbreviated) in the layout of a release. */
int gpuplan__alloc_summary(gpuplan_cachealloc *a, int device, int abbreviated, gpuplan_torch_version layout,
                           char **out);

#endif /* GPUPLAN_ALLOC_INT_H */
