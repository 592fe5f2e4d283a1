/*
 * gpuplan/backend.h: device backends: where a run's memory comes from
 * and what the hardware says about itself.
 *
 * Two implementations: the mock GPU in sim/ (gpuplan_mock_backend) and a
 * real CUDA device (gpuplan_backend_open_cuda), whose driver is loaded at
 * run time with dlopen, so gpuplan builds and runs on machines with no
 * driver and says so clearly when asked for a device.  Both give device
 * information and a gpuplan_device_ops through which the caching-allocator
 * model (and so a step program or a snapshot replay) allocates for real.
 */
#ifndef GPUPLAN_BACKEND_H
#define GPUPLAN_BACKEND_H

#include "cachealloc.h"
#include "catalog.h"
#include "common.h"
#include "ctx.h"
#include "doc.h"

GPUPLAN_BEGIN_DECLS

/** What a device says about itself (cuDeviceGet* and cuMemGetInfo). */
typedef struct gpuplan_device_info {
  int index;
  char name[128];         /**< "NVIDIA H100 80GB HBM3" */
  char uuid[48];          /**< "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
  char pci_bus_id[24];    /**< "00000000:3B:00.0" */
  int sm_count;
  int cc_major, cc_minor; /**< compute capability */
  int clock_mhz;          /**< SM clock (the driver's typical clock) */
  int mem_clock_mhz;      /**< peak memory clock */
  uint64_t total_bytes;   /**< device memory */
  uint64_t free_bytes;    /**< free now (cuMemGetInfo) */
  const gpuplan_gpu *sku; /**< the catalog SKU it matches (gpuplan_backend_match), or NULL */
} gpuplan_device_info;

/** The driver a backend talks to. */
typedef struct gpuplan_driver_info {
  int cuda_version;       /**< highest CUDA the driver supports, 12040 = 12.4 (0: mock) */
  char library[256];      /**< the library loaded ("libcuda.so.1", a path, or "mock") */
} gpuplan_driver_info;

/** Throttle reasons, NVML's bits (nvmlClocksThrottleReasons). */
#define GPUPLAN_THROTTLE_GPU_IDLE 0x1u
#define GPUPLAN_THROTTLE_SW_POWER_CAP 0x4u
#define GPUPLAN_THROTTLE_HW_SLOWDOWN 0x8u
#define GPUPLAN_THROTTLE_SW_THERMAL 0x20u
#define GPUPLAN_THROTTLE_HW_THERMAL 0x40u

/**
 * What nvidia-smi shows beyond memory: NVML on a real device, the thermal
 * and load model on a mock one.  A field the source cannot give is NaN
 * (reals) or -1 (integers).
 */
typedef struct gpuplan_device_telemetry {
  double temperature_c;
  double power_w, power_limit_w;
  int sm_clock_mhz, max_sm_clock_mhz;
  int pstate;                 /**< 0 = P0 (full speed) ... 8 = idle */
  double gpu_util;            /**< 0..1: time a kernel was running */
  double mem_util;            /**< 0..1: time device memory was read or written */
  long long throttle;         /**< GPUPLAN_THROTTLE_* bits */
  long long ecc_uncorrected;  /**< volatile uncorrected ECC errors */
  long long ecc_corrected;
  int nvlink_links;           /**< NVLink links the device has (0: none) */
  int nvlink_up;              /**< links up */
  char driver_version[32];    /**< "535.161.08", or "" */
  /* since 0.2.0: what nvidia-smi -q, dmon and DCGM Exporter show */
  double memory_temperature_c; /**< HBM temperature (NaN on GDDR cards) */
  double slowdown_temp_c;     /**< where the clocks start to drop */
  double shutdown_temp_c;
  double fan_speed;           /**< 0..1; NaN for passively cooled cards */
  int mem_clock_mhz, max_mem_clock_mhz;
  int graphics_clock_mhz, max_graphics_clock_mhz;
  int pcie_gen, pcie_gen_max, pcie_width, pcie_width_max; /**< PCIe link now and at most */
  int persistence_mode;       /**< 1 enabled, 0 disabled, -1 unknown */
  int ecc_mode;               /**< 1 enabled, 0 disabled, -1 not supported */
  int compute_mode;           /**< 0 Default, 1 Exclusive_Thread, 2 Prohibited, 3 Exclusive_Process */
  int mig_mode;               /**< 1 enabled, 0 disabled, -1 not supported */
  long long ecc_uncorrected_aggregate, ecc_corrected_aggregate; /**< since the card was made */
  long long retired_sbe, retired_dbe; /**< pages retired (Volta and Turing) */
  int retired_pending;        /**< a retirement waits for a reset */
  long long remapped_correctable, remapped_uncorrectable; /**< rows remapped (Ampere and later) */
  int remap_pending, remap_failure;
  double enc_util, dec_util;  /**< 0..1 */
  char serial[32];
  char vbios_version[32];
  long long xid;              /**< the last Xid the driver logged (0: none, -1: unknown) */
  double energy_j;            /**< energy since the driver loaded */
  double nvlink_bytes;        /**< NVLink traffic since the driver loaded, both directions */
  double nvlink_link_gbps;    /**< one link's bandwidth, GB/s each way */
  unsigned long long nvlink_up_mask; /**< bit i: link i is up */
  double pcie_rx_bytes_s, pcie_tx_bytes_s;
  long long pcie_replays;
  double power_violation_s, thermal_violation_s; /**< time clocks were held down, since load */
  uint64_t bar1_total_bytes, bar1_used_bytes;
  uint64_t fb_reserved_bytes; /**< memory the driver keeps for itself */
  int numa_node;              /**< -1: unknown */
  char cpu_affinity[64];      /**< CPUs near the GPU, "0-47,96-143" ("" unknown) */
  int lost;                   /**< the GPU fell off the bus (Xid 79): no other field is valid */
} gpuplan_device_telemetry;

/** A process using a device (nvidia-smi's process list). */
typedef struct gpuplan_device_process {
  unsigned pid;
  char type;                  /**< 'C' compute, 'G' graphics */
  char name[128];             /**< the process name as nvidia-smi shows it */
  uint64_t used_bytes;        /**< device memory it holds (its CUDA context included) */
  int role;                   /**< 1 the (simulated) job, 2 another process, 0 unknown */
  double sm_util, mem_util;   /**< 0..1; NaN when unknown */
} gpuplan_device_process;

/** How two devices reach each other (nvidia-smi topo -m). */
typedef struct gpuplan_device_link {
  int nvlinks;                /**< NVLink links between them (through NVSwitch or direct) */
  char pcie[8];               /**< without NVLink: "PIX", "PXB", "PHB", "NODE", "SYS" */
} gpuplan_device_link;

/** A backend's implementation; self is its state.  Used by sim/. */
typedef struct gpuplan_backend_ops {
  const char *kind; /**< "cuda", "mock" */
  int (*driver)(void *self, gpuplan_driver_info *out);
  int (*device_count)(void *self, int *n_out);
  int (*device_info)(void *self, int dev, gpuplan_device_info *out);
  /** Allocations on device dev for the caching-allocator model. */
  int (*device_memory)(void *self, int dev, const gpuplan_device_ops **out);
  /** Free everything the backend holds (device memory included). */
  void (*close)(void *self);
  /** Telemetry of device dev (may be NULL: none). */
  int (*telemetry)(void *self, int dev, gpuplan_device_telemetry *out);
  /** Processes on device dev, at most cap into out, the count in *n (may be NULL: none).  @since 0.2.0 */
  int (*processes)(void *self, int dev, gpuplan_device_process *out, size_t cap, size_t *n);
  /** How devices a and b connect (may be NULL: NVLink from telemetry, else PHB).  @since 0.2.0 */
  int (*link)(void *self, int a, int b, gpuplan_device_link *out);
} gpuplan_backend_ops;

typedef struct gpuplan_backend gpuplan_backend;

/**
 * Wrap an implementation (sim/ does this for the mock GPU).
 * @return GPUPLAN_OK or GPUPLAN_ENOMEM (then ops->close(self) was called).
 * @threads ctx  @since 0.1.0
 * @errors any
 */
GPUPLAN_API int gpuplan_backend_new(gpuplan_ctx *ctx, const gpuplan_backend_ops *ops, void *self,
                                    gpuplan_backend **out);

/**
 * Open the CUDA driver (libcuda.so.1, loaded at run time) and initialise it.
 * @param library  NULL: $GPUPLAN_LIBCUDA if set, else "libcuda.so.1".
 * @return GPUPLAN_OK; GPUPLAN_EUNSUPPORTED when no driver can be loaded
 *         (the message says so as nvidia-smi would, and how to check) or
 *         when a driver entry point is missing; GPUPLAN_ENOTFOUND when the
 *         driver sees no device; GPUPLAN_ERROR for other driver failures
 *         (the message carries the driver's error name and the cause).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_backend_open_cuda(gpuplan_ctx *ctx, const char *library, gpuplan_backend **out);

/** Free a backend and everything it holds (device memory, the driver).  Accepts NULL.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API void gpuplan_backend_free(gpuplan_backend *b);

/** "cuda" or "mock".  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_backend_kind(const gpuplan_backend *b);

/** The driver.  @return GPUPLAN_OK or the backend's error.  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_backend_driver(gpuplan_backend *b, gpuplan_driver_info *out);

/** Number of devices.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_backend_device_count(gpuplan_backend *b, int *n_out);

/**
 * Device dev's information; when cat is not NULL, out->sku is the catalog
 * SKU the device matches (by name and memory) or NULL.
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (bad index), or the driver's error.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_backend_device_info(gpuplan_backend *b, int dev, gpuplan_catalog *cat,
                                            gpuplan_device_info *out);

/**
 * Allocations on device dev, for gpuplan_cachealloc_new() or gpuplan_simulate().
 * A real device's malloc never asks the driver for more than is free, and
 * everything still allocated is freed by gpuplan_backend_free().
 * The ops stay valid until the backend is freed.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_backend_device_memory(gpuplan_backend *b, int dev, const gpuplan_device_ops **out);

/**
 * Device dev's telemetry (all fields NaN/-1 first; the backend fills what
 * it can).  The CUDA backend reads NVML (libnvidia-ml.so.1, or
 * $GPUPLAN_LIBNVML), loaded at run time; without NVML it returns
 * GPUPLAN_EUNSUPPORTED with the reason.
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (bad index), GPUPLAN_EUNSUPPORTED.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_backend_telemetry(gpuplan_backend *b, int dev, gpuplan_device_telemetry *out);

/**
 * The processes on device dev (NVML's compute processes on a real device;
 * the simulated job and other processes on a mock one): at most cap of them
 * into out, how many there are in *n_out.
 * @return GPUPLAN_OK; GPUPLAN_EINVAL (bad index); GPUPLAN_EUNSUPPORTED (no
 *         NVML, or a backend without a process list; *n_out is 0).
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_backend_processes(gpuplan_backend *b, int dev, gpuplan_device_process *out, size_t cap,
                                          size_t *n_out);

/**
 * How devices a and b connect: NVLink links between them, and the PCIe
 * path (PIX, PXB, PHB, NODE, SYS) as `nvidia-smi topo -m` names it; on a
 * real machine the path comes from sysfs (PHB when it cannot be read).
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (bad index), or the backend's error.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_backend_link(gpuplan_backend *b, int a, int b_dev, gpuplan_device_link *out);

/**
 * The highest CUDA version a driver supports, from its version string
 * ("535.161.08" -> 12020, "550.54.15" -> 12040): the CUDA release each
 * driver branch shipped with (CUDA Toolkit release notes, table 3).
 * @return the version as the driver encodes it (12020 = 12.2), or 0 for a
 *         string that is not a driver version or a branch older than 450.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API int gpuplan_driver_cuda_version(const char *driver_version);

/** gpuplan_devices_metrics() flags: DCGM Exporter's exact label and type
 *  spelling (modelName, DCGM counters typed counter), which promtool's
 *  linter rejects (camelCase label, counters without _total). */
#define GPUPLAN_METRICS_DCGM_EXACT 1u

/**
 * Prometheus text exposition (format 0.0.4) of an smi document
 * (gpuplan_job_run(job, "smi", ...)) with DCGM Exporter's metric names and
 * labels: DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID=...,pci_bus_id=...,
 * device="nvidia0",model_name=...,Hostname=...,DCGM_FI_DRIVER_VERSION=...},
 * ..., DCGM_FI_PROF_* for mock GPUs (their model of the profiling
 * counters), gpuplan's own series (gpuplan_nvlink_links_up, gpuplan_gpu_lost,
 * gpuplan_job_steps_total, ...) and, when doctor is not NULL (a doctor
 * document of the same machine), gpuplan_doctor_check_failed{check=...}
 * per check.  A field the GPU does not report has no sample, as in DCGM
 * Exporter.  Without GPUPLAN_METRICS_DCGM_EXACT the exposition passes
 * `promtool check metrics`: the model label is model_name, DCGM's
 * counters are untyped and DCGM_FI_DEV_PCIE_REPLAY_COUNTER (a type in its
 * name) is left out.
 * @param[out] text_out  NUL-terminated; free with gpuplan_free(ctx, *text_out).
 * @return GPUPLAN_OK; GPUPLAN_EINVAL (not an smi or doctor document);
 *         GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_devices_metrics(gpuplan_ctx *ctx, const gpuplan_doc *smi, const gpuplan_doc *doctor,
                                        unsigned flags, char **text_out, size_t *len_out);

/**
 * The catalog SKU a device name and memory size match ("NVIDIA A100-SXM4-
 * 40GB", "Tesla T4", "NVIDIA H100 80GB HBM3", ...).
 * @return GPUPLAN_OK with *out, or GPUPLAN_ENOTFOUND (*out NULL).
 * @threads cat  @since 0.1.0
 * @errors any
 */
GPUPLAN_API int gpuplan_catalog_match_device(gpuplan_catalog *cat, const char *name, uint64_t total_bytes,
                                             const gpuplan_gpu **out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_BACKEND_H */
