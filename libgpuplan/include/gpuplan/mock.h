/*
 * gpuplan/mock.h: the mock GPU, part of libgpuplan (CMake also names it gpuplan::sim).
 *
 * Pure-software devices for tests and simulations with no GPU: each has the
 * memory of a catalog SKU (or of a vGPU slice), a CUDA context that is
 * always resident, memory held by other processes (settable), and a
 * driver-level allocator with 2 MiB granularity that fails, for real, when
 * the device is full.  Memory is reported as nvidia-smi shows it:
 * used = what the process reserved + its CUDA context + other processes.
 *
 * A device plugs under the caching-allocator model through
 * gpuplan_mock_device() (gpuplan_device_ops).  The mock uses only the public
 * gpuplan API.
 */
#ifndef GPUPLAN_MOCK_H
#define GPUPLAN_MOCK_H

#include "gpuplan.h"
#include "backend.h"

GPUPLAN_BEGIN_DECLS

/** A set of mock devices. */
typedef struct gpuplan_mock gpuplan_mock;

/** Driver allocation granularity (bytes). */
#define GPUPLAN_MOCK_GRANULARITY (2u * 1024u * 1024u)

/** Create an empty simulation.  @errors nomem  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_new(gpuplan_ctx *ctx, gpuplan_mock **out);

/** Free a simulation and its devices.  Accepts NULL.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API void gpuplan_mock_free(gpuplan_mock *sim);

/**
 * Add a device with a SKU's memory.
 * @param context_bytes  CUDA context; -1 for the SKU's catalog value.
 * @param[out] index_out  the device index (0, 1, ...).
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (context larger than the device),
 *         GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_add_gpu(gpuplan_mock *sim, const gpuplan_gpu *sku,
                                    int64_t context_bytes, int *index_out);

/** Add a device of total_bytes (a vGPU slice, a custom card).  @errors any  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_add_device(gpuplan_mock *sim, const char *name, uint64_t total_bytes,
                                       uint64_t context_bytes, int *index_out);

/** Number of devices.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_count(const gpuplan_mock *sim);

/**
 * Memory other processes hold on device dev (they count in nvidia-smi's
 * used and leave less for this process).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (bad index, more than is free).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_set_other_processes(gpuplan_mock *sim, int dev, uint64_t bytes);

/** The device as gpuplan_device_ops for gpuplan_cachealloc_new(); NULL for a bad index.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API const gpuplan_device_ops *gpuplan_mock_device(gpuplan_mock *sim, int dev);

/** A device's memory, as cudaMemGetInfo and nvidia-smi see it. */
typedef struct gpuplan_mock_memory {
  const char *name;
  uint64_t total;      /**< device memory */
  uint64_t context;    /**< CUDA context of this process */
  uint64_t others;     /**< other processes */
  uint64_t reserved;   /**< this process's driver allocations (2 MiB granular) */
  uint64_t used;       /**< nvidia-smi: reserved + context + others */
  uint64_t free;       /**< cudaMemGetInfo free */
  uint64_t allocations;      /**< live driver allocations */
  uint64_t failed_allocations; /**< cudaMalloc calls refused */
} gpuplan_mock_memory;

/** Read a device's memory.  @return GPUPLAN_OK or GPUPLAN_EINVAL.  @errors any  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_memory_info(const gpuplan_mock *sim, int dev, gpuplan_mock_memory *out);

/* --- telemetry and faults ------------------------------------------------- */

/**
 * Faults a mock device can have: the seven GPU problems of the seed
 * article, each with the symptom a real machine shows.
 */
typedef enum gpuplan_mock_fault {
  GPUPLAN_FAULT_OOM = 0,         /**< another process holds 95% of the memory: the run OOMs */
  GPUPLAN_FAULT_CUDA_MISMATCH,   /**< the framework has no kernels for this GPU: "no kernel image is available" */
  GPUPLAN_FAULT_GPU_NOT_FOUND,   /**< the driver does not see the GPU: "NVIDIA-SMI has failed ..." */
  GPUPLAN_FAULT_ECC,             /**< uncorrected (volatile) ECC errors: the GPU must be drained */
  GPUPLAN_FAULT_THERMAL,         /**< poor cooling: above 83 C the clocks drop, P0 -> P2, steps slow down */
  GPUPLAN_FAULT_DATA_STARVATION, /**< the input pipeline cannot keep up: utilisation below 50% */
  GPUPLAN_FAULT_NVLINK_DOWN,     /**< NVLink not detected: topology PHB, TP traffic on PCIe */
  GPUPLAN_FAULT_COUNT
} gpuplan_mock_fault;

/** "oom", "cuda-mismatch", "gpu-not-found", "ecc", "thermal", "data-starvation", "nvlink-down".  @errors none  @threads any  @since 0.2.0 */
GPUPLAN_API const char *gpuplan_mock_fault_name(gpuplan_mock_fault f);

/** The fault named s, or -1.  @threads any  @errors any  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_fault_parse(const char *s);

/**
 * Inject (on != 0) or clear a fault on device dev (-1: every device).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (bad device or fault).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_inject(gpuplan_mock *sim, int dev, gpuplan_mock_fault f, int on);

/** Whether device dev has fault f.  @errors any  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_has_fault(const gpuplan_mock *sim, int dev, gpuplan_mock_fault f);

/** What nvidia-smi / NVML would report for a mock device now (the
 * backend's telemetry, plus the mock's own speed and clock). */
typedef struct gpuplan_mock_telemetry {
  double temperature_c;
  double power_w, power_limit_w;
  int sm_clock_mhz, max_sm_clock_mhz;
  int pstate;                 /**< 0 = P0 (full speed), 2 = P2 (throttled), 8 = idle */
  double gpu_util;            /**< 0..1: time a kernel was running */
  double mem_util;            /**< 0..1: time memory was being read or written */
  unsigned throttle;          /**< GPUPLAN_THROTTLE_* bits (gpuplan/backend.h) */
  uint64_t ecc_uncorrected;   /**< volatile uncorrected ECC errors */
  uint64_t ecc_corrected;
  int nvlink_links;           /**< NVLink links of the SKU (0 for PCIe cards) */
  int nvlink_up;              /**< links up */
  double speed;               /**< work done per second relative to a healthy device (clock and starvation) */
  double seconds;             /**< simulated time so far */
} gpuplan_mock_telemetry;

/**
 * Run simulated work on device dev for seconds, the GPU busy a fraction
 * busy (0..1) of the time when fed; clocks, temperature (a first-order
 * thermal model), power, utilisation and throttling follow.
 * @return GPUPLAN_OK; GPUPLAN_ERROR when the device's fault stops the work
 *         (ECC, CUDA mismatch, GPU not found), with the error text the
 *         framework would print in *message_out (may be NULL).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_run(gpuplan_mock *sim, int dev, double seconds, double busy,
                                const char **message_out);

/** A device's telemetry.  @return GPUPLAN_OK or GPUPLAN_EINVAL.  @errors any  @threads ctx  @since 0.2.0 */
GPUPLAN_API int gpuplan_mock_telemetry_read(const gpuplan_mock *sim, int dev, gpuplan_mock_telemetry *out);

/** The catalog SKU of a device added with gpuplan_mock_add_gpu, else NULL.  @errors none  @threads ctx  @since 0.2.0 */
GPUPLAN_API const gpuplan_gpu *gpuplan_mock_sku(const gpuplan_mock *sim, int dev);

/**
 * The mock devices as a device backend (gpuplan/backend.h): the same
 * interface as a real CUDA device.  The backend borrows sim, which must
 * outlive it; a GPU-not-found fault makes the backend's driver fail as a
 * machine without a working driver does.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_backend(gpuplan_mock *sim, gpuplan_backend **out);

/**
 * A mock node as tools describe it: spec "SKU[:N]" (N GPUs of a catalog
 * SKU, 1..64), faults "NAME[@GPU]" (every GPU without @), then load_s
 * seconds of training at busy (0..1) on every GPU, whose PyTorch cache then
 * holds mem_fraction (0..1) of the free memory.  What `gpuplan smi --sim`
 * and the bindings' devices() build.
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND/EAMBIGUOUS for the SKU; GPUPLAN_EINVAL
 *         naming the field (sim, faults, load, busy, mem).
 * @threads ctx  @since 0.1.0
 * @errors any
 */
GPUPLAN_API int gpuplan_mock_node(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *spec,
                                 const char *const *faults, size_t nfaults, double load_s, double busy,
                                 double mem_fraction, gpuplan_mock **out);

/* --- a mock node running a training program (since 0.2.0) ----------------- */

/**
 * A mock node and the job it runs, for gpuplan_mock_node_ex().  The job's
 * program: startup_s seconds of start-up (the GPU nearly idle), then
 * training at busy, every checkpoint_every_s seconds checkpoint_s seconds of
 * checkpointing (nearly idle); its PyTorch cache holds job_bytes per GPU
 * from the first step (or, with job_bytes -1, mem_fraction of the free
 * memory once load_s has run: a node already training).  A fault that stops
 * the work (ECC, CUDA mismatch) or a cache that does not fit (OOM) ends the
 * job on that GPU: its process exits and its memory is freed.
 */
typedef struct gpuplan_mock_node_options {
  unsigned version;           /**< GPUPLAN_MOCK_NODE_OPTIONS_VERSION */
  const char *spec;           /**< "SKU[:N]", N in 1..64 */
  const char *const *faults;  /**< "NAME[@GPU]" (every GPU without @) */
  size_t nfaults;
  double load_s;              /**< simulated seconds of the program before the view [600] */
  double busy;                /**< 0..1: time a kernel runs when the GPU is fed [0.95] */
  double mem_fraction;        /**< 0..1 [0.87], with job_bytes -1 */
  const char *driver;         /**< the driver modelled ("535.161.08" when NULL) */
  double startup_s;           /**< [0] */
  double step_s;              /**< seconds per training step at full speed (0: steps not counted) */
  double checkpoint_every_s;  /**< 0: never */
  double checkpoint_s;
  int64_t job_bytes;          /**< the job's PyTorch cache per GPU; -1: mem_fraction */
  const char *process_name;   /**< the job's process name ["/usr/bin/python3"] */
} gpuplan_mock_node_options;

#define GPUPLAN_MOCK_NODE_OPTIONS_VERSION 1
#define GPUPLAN_MOCK_NODE_OPTIONS_INIT \
  {GPUPLAN_MOCK_NODE_OPTIONS_VERSION, NULL, NULL, 0, 600.0, 0.95, 0.87, NULL, 0, 0, 0, 0, -1, NULL}

/**
 * A mock node from options (gpuplan_mock_node() is this with the defaults
 * above for everything after mem_fraction).
 * @return as gpuplan_mock_node(); GPUPLAN_EINVAL naming driver for a version
 *         that is not a driver branch gpuplan knows (450 and later).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_node_ex(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_mock_node_options *o,
                                    gpuplan_mock **out);

/**
 * Run the node's program for seconds more on every device (what time does
 * between two nvidia-smi samples).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (seconds not in 0..1e7).
 * @errors GPUPLAN_EINVAL  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_mock_advance(gpuplan_mock *sim, double seconds);

/** The job on one mock device. */
typedef struct gpuplan_mock_job {
  const char *state;          /**< "none", "starting", "training", "checkpoint", "failed" */
  const char *message;        /**< why it failed (the framework's error), or NULL */
  double seconds;             /**< simulated seconds since the job started */
  double steps;               /**< training steps done (0 without step_s) */
  uint64_t bytes;             /**< its PyTorch cache */
} gpuplan_mock_job;

/** The job on device dev.  @return GPUPLAN_OK or GPUPLAN_EINVAL.  @since 0.2.0  @errors any  @threads ctx */
GPUPLAN_API int gpuplan_mock_job_read(const gpuplan_mock *sim, int dev, gpuplan_mock_job *out);

/**
 * The driver the mock models (its version string sets the CUDA version the
 * backend reports, and nvidia-smi's layout).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (not a driver version of branch 450+).
 * @since 0.2.0
 * @errors any  @threads ctx
 */
GPUPLAN_API int gpuplan_mock_set_driver(gpuplan_mock *sim, const char *version);

/**
 * gpuplan_simulate() on a mock GPU of the SKU, as `gpuplan simulate` runs
 * it: the device has the memory the driver reports (options->gpu_total_bytes,
 * else gpuplan_gpu_usable_bytes: the catalog's NVML total, else the marketed
 * size); the CUDA context and NCCL buffers the memory model charges sit on
 * it outside PyTorch's allocator (the cuBLAS workspaces are allocations of
 * the simulated cache), other processes hold other_bytes, and
 * out->capacity is what is left for PyTorch.
 * so->device is ignored (the mock is used).
 * @return as gpuplan_simulate; GPUPLAN_EINVAL (named) when other_bytes do
 *         not fit beside the resident memory.
 * @threads ctx  @since 0.1.0
 * @errors any
 */
GPUPLAN_API int gpuplan_mock_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                                     const gpuplan_memory_options *options, const gpuplan_simulate_options *so,
                                     uint64_t other_bytes, gpuplan_simulate_result *out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_MOCK_H */
