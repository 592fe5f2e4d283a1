/*
 * gpuplan/simulate.h: training steps as PyTorch issues their allocations,
 * run through the caching-allocator model on a (mock) device.
 *
 * From the memory model's inputs (model, GPU, gpuplan_memory_options), the
 * step program of the worst rank is generated: parameters at setup,
 * gradients in the first backward (and freed by zero_grad(set_to_none)),
 * fp32 master weights and optimizer states lazily at the first optimizer
 * step, activations per layer in forward and freed in backward, recompute
 * and GEMM temporaries, logits and loss, gradient buckets, ZeRO-3/FSDP
 * gather buffers.  Tensor sizes come from the analytic model's components
 * (gpuplan/memory.h), split across the tensors of each layer in the
 * proportions of the layer's shapes, so the two models can be compared.
 */
#ifndef GPUPLAN_SIMULATE_H
#define GPUPLAN_SIMULATE_H

#include "common.h"
#include "ctx.h"
#include "memory.h"
#include "cachealloc.h"
#include "perf.h"

GPUPLAN_BEGIN_DECLS

#define GPUPLAN_SIMULATE_OPTIONS_VERSION 3

/** Simulation settings besides the memory options. */
typedef struct gpuplan_simulate_options {
  unsigned version;
  int64_t steps;            /**< training steps to run (>= 1; default 2: the first step creates the optimizer states lazily, the peak comes from the second) */
  const char *alloc_conf;   /**< PYTORCH_CUDA_ALLOC_CONF; NULL = defaults */
  gpuplan_torch_version torch;
  int set_to_none;          /**< zero_grad(set_to_none=True) frees gradients each step (PyTorch >= 2.0 default) */
  /** The device.  NULL: the allocator's mock device with the GPU's memory
   * minus the CUDA context, NCCL buffers and cuBLAS workspace that the
   * memory model charges outside PyTorch's allocator. */
  const gpuplan_device_ops *device;
  gpuplan_alloc_trace_fn trace; /**< every allocator trace entry (may be NULL) */
  void *trace_payload;
  /** Write the run as a torch memory snapshot pickle here (memory_viz
   * opens it); NULL for none.  Written also when the run ends in an OOM. */
  const char *snapshot_path;
  /** Capture the last step in a CUDA graph (torch.cuda.graph, whole-step
   * capture): its allocations come from a private pool that the graph
   * keeps for its replays, the out-of-memory path cannot empty the cache
   * during the capture, and its gradients stay (static outputs); the steps
   * before are the eager warm-up (steps >= 2).  Read from version 2.
   * @since 0.2.0 */
  int cuda_graph;
  /** torch.cuda.empty_cache() between the warm-up and the capture, so
   * that the capture can reuse the warm-up's cached memory.  @since 0.2.0 */
  int empty_cache_before_capture;
  /** The modelled clock of the snapshot (snapshot_path): the performance
   * model's step for the same layout (gpuplan_perf_eval of the same model
   * and memory options; not copied, read during the call).  Every trace
   * entry then carries a "time_us" on that clock, 0 at the run's start:
   * step s begins at (s - 1) x step_s; in it each layer's forward and
   * backward of each micro-batch takes its share of compute_s (forward the
   * model's forward FLOPs of the hardware FLOPs, backward the rest, with
   * recompute), the exposed tensor- and context-parallel communication
   * rides along in the same shares, and the pipeline bubble and send/recv,
   * the exposed data-parallel traffic, the straggler wait and the fixed
   * overhead come after the last backward, then the optimizer step (when
   * the run holds more micro-batches in flight than the model's step has,
   * as an interleaved schedule's warm-up can, each takes the model's
   * per-micro-batch time and the step their sum).  It
   * is the GPU's modelled time, not the host's (PyTorch records the
   * host's, which runs ahead by the launch queue).  NULL: entries carry no
   * time_us.  A traced module's program (no FLOP count) takes none.  Read
   * from version 3.  @since 0.2.0 */
  const gpuplan_perf *clock;
} gpuplan_simulate_options;

#define GPUPLAN_SIMULATE_OPTIONS_INIT { GPUPLAN_SIMULATE_OPTIONS_VERSION, 2, NULL, GPUPLAN_TORCH_LATEST, 1, NULL, NULL, NULL, NULL, 0, 0, NULL }

/** What a simulation found (a plain value). */
typedef struct gpuplan_simulate_result {
  int64_t steps_done;           /**< completed steps */
  uint64_t ops;                 /**< allocations and frees issued */
  uint64_t peak_allocated, peak_reserved;
  uint64_t allocated_at_peak_reserved, largest_free_at_peak, total_free_at_peak;
  double fragmentation;         /**< 1 - peak allocated / peak reserved */
  int64_t num_alloc_retries, num_ooms;
  uint64_t capacity;            /**< bytes the allocator could get (mock device) */
  uint64_t analytic_bytes;      /**< memory model total minus what lies outside the allocator */
  double vs_analytic;           /**< peak_allocated / analytic_bytes - 1 */
  int oom;                      /**< the run ended in an OOM */
  int64_t oom_step;             /**< 1-based step of the OOM */
  char oom_op[160];             /**< which operation ("step 1 forward layer 3: mlp fc1 output") */
  char oom_message[1024];       /**< PyTorch's text */
} gpuplan_simulate_result;

/**
 * Simulate training steps of the worst rank.
 * @return GPUPLAN_OK (an OOM is a result, in out), GPUPLAN_EINVAL (bad
 *         options, as gpuplan_memory_eval or the alloc conf), GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_simulate(gpuplan_ctx *ctx, const gpuplan_model *model,
                                 const gpuplan_gpu *gpu, const gpuplan_memory_options *options,
                                 const gpuplan_simulate_options *sim, gpuplan_simulate_result *out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_SIMULATE_H */
