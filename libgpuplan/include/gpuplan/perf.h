/*
 * gpuplan/perf.h: the performance model: step time and its breakdown,
 * tokens/s, MFU/HFU, bytes per link class, and cost.
 *
 * FLOPs are counted per layer from the shapes (QKV, attention scores with
 * causal masking counted at half, output projection, MLP or the top-k MoE
 * experts, logits), times 3 for forward + backward, plus the recompute
 * forward for HFU.  Compute runs at the GPU's measured matmul ceiling
 * (catalog matmul_*_flops, else the dense peak) scaled by an efficiency that
 * grows with the GEMM size; elementwise work runs at HBM bandwidth;
 * collectives run on the fabric each group crosses, as rings with a bus
 * efficiency calibrated on measured NCCL runs.  The few constants are in
 * gpuplan_perf_constants, fitted once on
 * ../shared/reference/training_runs_calibration.csv (docs/performance.md).
 */
#ifndef GPUPLAN_PERF_H
#define GPUPLAN_PERF_H

#include "common.h"
#include "ctx.h"
#include "catalog.h"
#include "memory.h"

GPUPLAN_BEGIN_DECLS

/** A cluster of identical nodes. */
typedef struct gpuplan_cluster {
  const gpuplan_gpu *gpu;       /**< NULL for a CPU-only cluster */
  int64_t gpus_per_node;        /**< >= 1 (CPU-only: 1 "device" per node) */
  int64_t nodes;
  double intra_bw_bytes_s;      /**< per GPU, one direction, inside a node */
  double intra_latency_s;
  double inter_bw_bytes_s;      /**< per node, one direction, all NICs together */
  double inter_latency_s;
  double cpu_flops;             /**< CPU-only: vector FP32 peak per node */
  double price_per_hour;        /**< per node; NaN when unknown */
  const char *intra_name;       /**< fabric ids, for printing */
  const char *inter_name;
} gpuplan_cluster;

/**
 * A cluster of k catalog nodes (GPU, count, fabrics, NICs, price).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL/ENOTFOUND with a message.
 */
GPUPLAN_API int gpuplan_cluster_from_node(gpuplan_ctx *ctx, gpuplan_catalog *cat,
                                          const gpuplan_node *node, int64_t nodes,
                                          gpuplan_cluster *out);

/**
 * A cluster of gpus GPUs of a SKU in nodes of gpus_per_node, with the SKU's
 * NVLink (or PCIe) inside a node and InfiniBand NDR (H100 and newer) or
 * HDR (older) with one NIC per GPU between nodes, as DGX/HGX systems.
 */
GPUPLAN_API int gpuplan_cluster_default(gpuplan_ctx *ctx, gpuplan_catalog *cat,
                                        const gpuplan_gpu *gpu, int64_t gpus,
                                        int64_t gpus_per_node, gpuplan_cluster *out);

/** The model's fitted constants. */
typedef struct gpuplan_perf_constants {
  double gemm_eff_max;   /**< fraction of the matmul ceiling large GEMMs reach */
  double gemm_half_dim;  /**< GEMM size (per 100 FLOP/byte of machine balance) at which half of that is reached */
  double attn_eff;       /**< FlashAttention efficiency relative to the ceiling, on a balanced machine */
  double elementwise_bytes; /**< HBM bytes per hidden element per token per layer (fwd+bwd) */
  double coll_eff;       /**< NCCL bus bandwidth / link bandwidth (ring) */
  double dp_overlap;     /**< fraction of backward that hides gradient traffic */
  double attn_balance;   /**< machine balance (FLOP/byte) at which attention efficiency halves */
} gpuplan_perf_constants;

/** The fitted defaults (docs/performance.md shows the fit). */
GPUPLAN_API void gpuplan_perf_constants_default(gpuplan_perf_constants *out);

/** The result (a plain value). Times in seconds, per optimizer step. */
typedef struct gpuplan_perf {
  double step_s;
  double compute_s;          /**< GEMMs + attention + elementwise, with recompute */
  double bubble_s;           /**< pipeline bubble */
  double tp_comm_s;          /**< tensor-parallel collectives (exposed) */
  double cp_comm_s;          /**< context-parallel ring exchange (exposed) */
  double pp_comm_s;          /**< pipeline send/recv (exposed) */
  double dp_comm_s;          /**< data-parallel / ZeRO / FSDP traffic left exposed */
  double optimizer_s;
  double tokens_per_s;
  double model_flops_per_token;    /**< 3 x forward */
  double hardware_flops_per_token; /**< + recompute */
  double model_flops_per_s_per_gpu;
  double mfu, hfu;                 /**< against the dense peak of the precision */
  double peak_flops;               /**< that peak */
  double bytes_nvlink_per_gpu, bytes_pcie_per_gpu, bytes_network_per_gpu; /**< per step */
  double cost_per_hour, cost_per_step, cost_per_mtok;  /**< NaN without a price */
  double train_seconds, train_cost;                    /**< for train_tokens */
  int64_t global_batch;
  int64_t gpus;
} gpuplan_perf;

/**
 * Evaluate a layout on a cluster.
 * @param options  the memory model's options (layout, precision, recompute,
 *                 micro-batch, seq_len, microbatches per step per pipeline).
 * @param global_batch  sequences per optimizer step; 0 = dp x micro_batch x microbatches.
 * @param train_tokens  tokens to train on (for train_seconds / train_cost); 0 = none.
 * @param k  NULL for the fitted constants.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL naming the field.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_perf_eval(gpuplan_ctx *ctx, const gpuplan_model *model,
                                  const gpuplan_cluster *cluster,
                                  const gpuplan_memory_options *options, int64_t global_batch,
                                  double train_tokens, const gpuplan_perf_constants *k,
                                  gpuplan_perf *out);

/** Collective operations. */
typedef enum gpuplan_collective {
  GPUPLAN_ALL_REDUCE = 0,
  GPUPLAN_REDUCE_SCATTER = 1,
  GPUPLAN_ALL_GATHER = 2,
  GPUPLAN_ALL_TO_ALL = 3,
  GPUPLAN_SEND_RECV = 4
} gpuplan_collective;

/** Collective algorithms. */
typedef enum gpuplan_coll_algo {
  GPUPLAN_ALGO_RING = 0,          /**< bandwidth-optimal, latency 2(n-1) hops (all-reduce) */
  GPUPLAN_ALGO_TREE = 1,          /**< NCCL double binary tree: latency ~2 log2(n) hops */
  GPUPLAN_ALGO_HIERARCHICAL = 2   /**< inside nodes first (NVLink), then across nodes, then inside again */
} gpuplan_coll_algo;

/** Time of one collective (a plain value). */
typedef struct gpuplan_coll_time {
  double seconds;
  double algbw_bytes_s;   /**< bytes / seconds, as nccl-tests reports it */
  double busbw_bytes_s;   /**< algbw x the op's bus factor (2(n-1)/n for all-reduce) */
  double bytes_intra;     /**< per GPU, over the node fabric */
  double bytes_inter;     /**< per GPU, over the network */
} gpuplan_coll_time;

/**
 * Time a collective of `bytes` (per GPU's buffer, as nccl-tests' size) over
 * n GPUs placed in nodes of the cluster (n <= per node: inside one node),
 * with latency + size / bandwidth and the bus efficiency of the constants
 * (fitted on measured NCCL all-reduce: 234.89 GB/s on NVLink 3, 367.61 GB/s
 * on NVLink 4).
 * @return GPUPLAN_OK or GPUPLAN_EINVAL.
 * @errors any  @threads any  @since 0.1.0
 */
GPUPLAN_API int gpuplan_collective_time(gpuplan_ctx *ctx, const gpuplan_cluster *cluster,
                                        gpuplan_collective op, gpuplan_coll_algo algo, double bytes,
                                        int64_t n, const gpuplan_perf_constants *k,
                                        gpuplan_coll_time *out);

/** What the search ranks by. */
typedef enum gpuplan_objective {
  GPUPLAN_OBJ_TIME = 0,  /**< shortest step (highest tokens/s) */
  GPUPLAN_OBJ_COST = 1   /**< lowest cost per token (needs a price) */
} gpuplan_objective;

/** One candidate layout found by the search. */
typedef struct gpuplan_candidate {
  gpuplan_memory_options options;  /**< the layout, ready for gpuplan_memory_eval/perf_eval */
  gpuplan_perf perf;
  uint64_t memory_bytes;           /**< worst-rank memory */
  uint64_t capacity;
  char why[256];                   /**< what makes it fast or slow, in words */
} gpuplan_candidate;

/** Search statistics. */
typedef struct gpuplan_search_stats {
  uint64_t evaluated;   /**< layouts evaluated */
  uint64_t invalid;     /**< rejected by divisibility (heads/tp, layers/pp, batch) */
  uint64_t too_big;     /**< rejected: did not fit in memory */
} gpuplan_search_stats;

/** Progress callback: return non-zero to stop (GPUPLAN_EINTERRUPTED). */
typedef int (*gpuplan_progress_fn)(void *payload, uint64_t done, uint64_t total);

/**
 * Enumerate layouts of a model on a cluster (tp over divisors of the heads up
 * to a node, pp over divisors of the layers, cp for long sequences, dp the
 * rest; ZeRO-1 / ZeRO-3; micro-batch 1-8; recompute none / selective /
 * full; interleaving 1, 2, 4), drop those that do not fit the GPU, and keep
 * the best `cap` by the objective, best first.
 * @param base  precision, optimizer, convention and sequence length to use.
 * @param global_batch  sequences per step (required).
 * @return GPUPLAN_OK (n_out may be 0: nothing fits), GPUPLAN_EINVAL,
 *         GPUPLAN_EINTERRUPTED.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_search(gpuplan_ctx *ctx, const gpuplan_model *model,
                               const gpuplan_cluster *cluster, const gpuplan_memory_options *base,
                               int64_t global_batch, gpuplan_objective objective,
                               gpuplan_candidate *out, size_t cap, size_t *n_out,
                               gpuplan_search_stats *stats, gpuplan_progress_fn progress,
                               void *payload);

/**
 * A job as the front ends describe it (the CLI's flags, the bindings'
 * arguments), resolved against the catalog: the model (a name or a size
 * such as "7B"), the GPU (a SKU, or a node's GPU with the node's visible
 * memory for vGPU slices), the GPU count and the layout.  Holds a pointer
 * into itself (gpu may point at node_gpu): pass it by pointer, do not copy.
 */
typedef struct gpuplan_jobspec {
  const gpuplan_model *model;
  const gpuplan_gpu *gpu;
  const gpuplan_node *node;       /**< NULL unless the job names a node */
  gpuplan_gpu node_gpu;           /**< the node's GPU with its visible memory */
  int64_t gpus;                   /**< dp*tp*pp*cp after resolution */
  int64_t nodes, per_node;
  gpuplan_memory_options options; /**< set by the caller first; dp filled in */
  char model_name[128];           /**< the catalog id, or the size as given ("7B") */
} gpuplan_jobspec;

/**
 * Resolve a job, as `gpuplan plan` does: model by name or size; gpu or
 * node (exactly one; node takes nodes, default 1, and gives the GPU count
 * unless gpus is set); gpus = dp*tp*pp*cp, dp inferred from gpus unless
 * dp_given (then they must agree).  job->options must hold the caller's
 * options (GPUPLAN_MEMORY_OPTIONS_INIT plus what was given) before the
 * call; params_override is set for sizes unless already set.
 * @param gpus      0: from the node, or dp*tp*pp*cp.
 * @param per_node  GPUs per node for a bare SKU (default clusters).
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND/EAMBIGUOUS for names;
 *         GPUPLAN_EINVAL naming the field (gpu, node, nodes, gpus, tp...).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_job_resolve(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *model,
                                    const char *gpu, const char *node, int64_t gpus, int64_t nodes,
                                    int64_t per_node, int dp_given, gpuplan_jobspec *job);

/** The cluster a resolved job runs on (the node's, or a default one). */
GPUPLAN_API int gpuplan_job_cluster(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_jobspec *job,
                                    gpuplan_cluster *out);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_PERF_H */
