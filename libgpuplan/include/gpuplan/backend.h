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
} gpuplan_device_telemetry;

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
} gpuplan_backend_ops;

typedef struct gpuplan_backend gpuplan_backend;

/**
 * Wrap an implementation (sim/ does this for the mock GPU).
 * @return GPUPLAN_OK or GPUPLAN_ENOMEM (then ops->close(self) was called).
 * @threads ctx  @since 0.1.0
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

/** Free a backend and everything it holds (device memory, the driver).  Accepts NULL. */
GPUPLAN_API void gpuplan_backend_free(gpuplan_backend *b);

/** "cuda" or "mock". */
GPUPLAN_API const char *gpuplan_backend_kind(const gpuplan_backend *b);

/** The driver.  @return GPUPLAN_OK or the backend's error. */
GPUPLAN_API int gpuplan_backend_driver(gpuplan_backend *b, gpuplan_driver_info *out);

/** Number of devices. */
GPUPLAN_API int gpuplan_backend_device_count(gpuplan_backend *b, int *n_out);

/**
 * Device dev's information; when cat is not NULL, out->sku is the catalog
 * SKU the device matches (by name and memory) or NULL.
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (bad index), or the driver's error.
 */
GPUPLAN_API int gpuplan_backend_device_info(gpuplan_backend *b, int dev, gpuplan_catalog *cat,
                                            gpuplan_device_info *out);

/**
 * Allocations on device dev, for gpuplan_cachealloc_new() or gpuplan_simulate().
 * A real device's malloc never asks the driver for more than is free, and
 * everything still allocated is freed by gpuplan_backend_free().
 * The ops stay valid until the backend is freed.
 */
GPUPLAN_API int gpuplan_backend_device_memory(gpuplan_backend *b, int dev, const gpuplan_device_ops **out);

/**
 * Device dev's telemetry (all fields NaN/-1 first; the backend fills what
 * it can).  The CUDA backend reads NVML (libnvidia-ml.so.1, or
 * $GPUPLAN_LIBNVML), loaded at run time; without NVML it returns
 * GPUPLAN_EUNSUPPORTED with the reason.
 * @return GPUPLAN_OK, GPUPLAN_EINVAL (bad index), GPUPLAN_EUNSUPPORTED.
 */
GPUPLAN_API int gpuplan_backend_telemetry(gpuplan_backend *b, int dev, gpuplan_device_telemetry *out);

/**
 * The catalog SKU a device name and memory size match ("NVIDIA A100-SXM4-
 * 40GB", "Tesla T4", "NVIDIA H100 80GB HBM3", ...).
 * @return GPUPLAN_OK with *out, or GPUPLAN_ENOTFOUND (*out NULL).
 * @threads cat  @since 0.1.0
 */
GPUPLAN_API int gpuplan_catalog_match_device(gpuplan_catalog *cat, const char *name, uint64_t total_bytes,
                                             const gpuplan_gpu **out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_BACKEND_H */
