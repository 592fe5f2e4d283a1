/*
 * gpuplan/sim.h: the mock GPU (target gpuplan_sim).
 *
 * Pure-software devices for tests and simulations with no GPU: each has the
 * memory of a catalog SKU (or of a vGPU slice), a CUDA context that is
 * always resident, memory held by other processes (settable), and a
 * driver-level allocator with 2 MiB granularity that fails, for real, when
 * the device is full.  Memory is reported as nvidia-smi shows it:
 * used = what the process reserved + its CUDA context + other processes.
 *
 * A device plugs under the caching-allocator model through
 * gpuplan_sim_device() (gpuplan_device_ops).  sim/ uses only the public
 * gpuplan headers.
 */
#ifndef GPUPLAN_SIM_H
#define GPUPLAN_SIM_H

#include "gpuplan.h"

GPUPLAN_BEGIN_DECLS

/** A set of mock devices. */
typedef struct gpuplan_sim gpuplan_sim;

/** Driver allocation granularity (bytes). */
#define GPUPLAN_SIM_GRANULARITY (2u * 1024u * 1024u)

/** Create an empty simulation.  @errors nomem  @threads ctx */
GPUPLAN_API int gpuplan_sim_new(gpuplan_ctx *ctx, gpuplan_sim **out);

/** Free a simulation and its devices.  Accepts NULL. */
GPUPLAN_API void gpuplan_sim_free(gpuplan_sim *sim);

/**
 * Add a device with a SKU's memory.
 * @param context_bytes  CUDA context; -1 for the SKU's catalog value.
 * @param[out] index_out  the device index (0, 1, ...).
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (context larger than the device),
 *         GPUPLAN_ENOMEM.
 */
GPUPLAN_API int gpuplan_sim_add_gpu(gpuplan_sim *sim, const gpuplan_gpu *sku,
                                    int64_t context_bytes, int *index_out);

/** Add a device of total_bytes (a vGPU slice, a custom card). */
GPUPLAN_API int gpuplan_sim_add_device(gpuplan_sim *sim, const char *name, uint64_t total_bytes,
                                       uint64_t context_bytes, int *index_out);

/** Number of devices. */
GPUPLAN_API int gpuplan_sim_count(const gpuplan_sim *sim);

/**
 * Memory other processes hold on device dev (they count in nvidia-smi's
 * used and leave less for this process).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (bad index, more than is free).
 */
GPUPLAN_API int gpuplan_sim_set_other_processes(gpuplan_sim *sim, int dev, uint64_t bytes);

/** The device as gpuplan_device_ops for gpuplan_cca_new(); NULL for a bad index. */
GPUPLAN_API const gpuplan_device_ops *gpuplan_sim_device(gpuplan_sim *sim, int dev);

/** A device's memory, as cudaMemGetInfo and nvidia-smi see it. */
typedef struct gpuplan_sim_memory {
  const char *name;
  uint64_t total;      /**< device memory */
  uint64_t context;    /**< CUDA context of this process */
  uint64_t others;     /**< other processes */
  uint64_t reserved;   /**< this process's driver allocations (2 MiB granular) */
  uint64_t used;       /**< nvidia-smi: reserved + context + others */
  uint64_t free;       /**< cudaMemGetInfo free */
  uint64_t allocations;      /**< live driver allocations */
  uint64_t failed_allocations; /**< cudaMalloc calls refused */
} gpuplan_sim_memory;

/** Read a device's memory.  @return GPUPLAN_OK or GPUPLAN_EINVAL. */
GPUPLAN_API int gpuplan_sim_memory_info(const gpuplan_sim *sim, int dev, gpuplan_sim_memory *out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_SIM_H */
