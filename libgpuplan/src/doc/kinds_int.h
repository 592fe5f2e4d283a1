/*
 * kinds_int.h: shorthands for writing field descriptions (kinds_*.c only):
 * the value types by one letter, and N(array) for "array, its length".
 */
#ifndef GPUPLAN_KINDS_INT_H
#define GPUPLAN_KINDS_INT_H

#include "doc/doc_int.h"

#define S GPUPLAN_VALUE_STRING
#define I GPUPLAN_VALUE_INT
#define R GPUPLAN_VALUE_REAL
#define B GPUPLAN_VALUE_BOOL
#define A GPUPLAN_VALUE_ARRAY
#define O GPUPLAN_VALUE_OBJECT
#define N(arr) arr, sizeof arr / sizeof arr[0]

/* The memory_stats option's object (job/cmd_replay.c
 * gpuplan__doc_memory_stats): torch.cuda.memory_stats()'s flat keys, each
 * described; a key a release lacks is absent. */
#define MS_M(name, pool, unit, what)                                                  \
  {"memory_stats." name "." pool "current", I, unit, "memory_stats option: " what " now"}, \
  {"memory_stats." name "." pool "peak", I, unit, "memory_stats option: " what ", its peak"}, \
  {"memory_stats." name "." pool "allocated", I, unit, "memory_stats option: " what ", all increases"}, \
  {"memory_stats." name "." pool "freed", I, unit, "memory_stats option: " what ", all decreases"},
#define MS_A(name, unit, what)                                                        \
  MS_M(name, "all.", unit, what " (both pools)")                                      \
  MS_M(name, "large_pool.", unit, what " (large pool: blocks over 1 MiB)")            \
  MS_M(name, "small_pool.", unit, what " (small pool: blocks of 1 MiB or less)")
#define MEMORY_STATS_FIELDS                                                                          \
  {"memory_stats", O, "",                                                                            \
   "memory_stats option: torch.cuda.memory_stats() at the end, its keys as the torch release has them " \
   "(requested_bytes from 2.0; num_sync_all_streams, num_device_alloc, num_device_free from 2.3)"},  \
  MS_A("allocation", "allocations", "allocation requests served")                                  \
  MS_A("segment", "segments", "segments reserved from the device (cudaMalloc)")                     \
  MS_A("active", "blocks", "active blocks (allocated, or freed but still used by a stream)")        \
  MS_A("inactive_split", "blocks", "free blocks of split segments (cannot be released)")            \
  MS_A("allocated_bytes", "B", "allocated memory")                                                  \
  MS_A("reserved_bytes", "B", "reserved memory")                                                    \
  MS_A("active_bytes", "B", "active memory")                                                        \
  MS_A("inactive_split_bytes", "B", "free memory of split segments (cannot be released)")           \
  MS_A("requested_bytes", "B", "memory requested, before rounding (torch 2.0+)")                     \
  MS_M("oversize_allocations", "", "allocations", "allocations over max_split_size")                \
  MS_M("oversize_segments", "", "segments", "segments over max_split_size")                         \
  {"memory_stats.num_alloc_retries", I, "", "memory_stats option: cudaMalloc retries after freeing the cache"}, \
  {"memory_stats.num_ooms", I, "", "memory_stats option: out-of-memory errors"},                    \
  {"memory_stats.max_split_size", I, "B", "memory_stats option: max_split_size (-1: unlimited)"},   \
  {"memory_stats.num_sync_all_streams", I, "", "memory_stats option: synchronizations of every stream before freeing cached segments (torch 2.3+)"}, \
  {"memory_stats.num_device_alloc", I, "", "memory_stats option: device allocations: cudaMalloc, expandable-segment maps (torch 2.3+)"}, \
  {"memory_stats.num_device_free", I, "", "memory_stats option: device frees: cudaFree, expandable-segment unmaps (torch 2.3+)"},

#endif /* GPUPLAN_KINDS_INT_H */
