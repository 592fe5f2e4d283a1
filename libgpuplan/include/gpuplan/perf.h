/*
 * gpuplan/perf.h: the performance model: step time and its breakdown,
 * tokens/s, MFU/HFU, bytes per link class and per NIC, and cost; the
 * collectives; and the layout search.
 *
 * FLOPs are counted per layer from the shapes (QKV, attention scores with
 * causal masking counted at half, output projection, MLP or the top-k MoE
 * experts, logits), times 3 for forward + backward, plus the recompute
 * forward for HFU.  Each GEMM runs at the GPU's measured matmul ceiling
 * (catalog matmul_*_flops) times a sustained efficiency and a roofline in
 * the GEMM's own arithmetic intensity (so the tokens of a micro-batch
 * matter); attention at the fused kernel's rate for the SKU and framework;
 * memory-bound work at HBM bandwidth.  Every collective is charged on the
 * fabric its group crosses with NCCL's latency model, the algorithm NCCL
 * would choose, and the NICs the group owns; overlap is bounded by the
 * compute of the same phase.  A framework profile
 * (gpuplan_perf_constants_framework) holds the constants; each is sourced
 * or fitted on data/reference/training_runs_calibration.csv
 * (docs/performance.md).
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
  /* since 0.2.0 */
  double host_bw_bytes_s;       /**< GPU to host, one direction: the catalog's PCIe row of the GPU's generation */
} gpuplan_cluster;

/**
 * A cluster of k catalog nodes (GPU, count, fabrics, NICs, price).  A node
 * without an intra-node fabric row gets the catalog's PCIe row of its
 * GPU's generation; one without a scale-out fabric the catalog's 25 GbE.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL/ENOTFOUND with a message.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cluster_from_node(gpuplan_ctx *ctx, gpuplan_catalog *cat,
                                          const gpuplan_node *node, int64_t nodes,
                                          gpuplan_cluster *out);

/**
 * A cluster of gpus GPUs of a SKU in nodes of gpus_per_node, with the SKU's
 * NVLink (its NVSwitch fabric row for the latency) or the catalog's PCIe
 * row of its generation inside a node, and InfiniBand NDR (H100 and newer)
 * or HDR (older) with one NIC per GPU between nodes, as DGX/HGX systems.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL naming the field.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_cluster_default(gpuplan_ctx *ctx, gpuplan_catalog *cat,
                                        const gpuplan_gpu *gpu, int64_t gpus,
                                        int64_t gpus_per_node, gpuplan_cluster *out);

/**
 * Training frameworks, each with its kernels and overlaps
 * (gpuplan_perf_constants_framework() gives each one's profile;
 * docs/performance.md lists the constants and their sources).
 */
typedef enum gpuplan_framework {
  GPUPLAN_FW_MEGATRON = 0,   /**< Megatron-LM / Megatron-Core: fused kernels, TE attention, DDP or distributed optimizer */
  GPUPLAN_FW_NEMO = 1,       /**< NeMo (Megatron-Core + Transformer Engine): TP overlap, overlapped grad reduce and param gather */
  GPUPLAN_FW_DEEPSPEED = 2,  /**< DeepSpeed / Megatron-DeepSpeed ZeRO: eager kernels, reduce per micro-batch from ZeRO-2 */
  GPUPLAN_FW_FSDP = 3,       /**< PyTorch FSDP (FSDP1), eager, SDPA/FlashAttention-2 */
  GPUPLAN_FW_FSDP2 = 4,      /**< PyTorch FSDP2 (fully_shard), eager, SDPA/FlashAttention-2 */
  GPUPLAN_FW_COMPOSER = 5,   /**< MosaicML Composer / llm-foundry: FSDP1 + FlashAttention-2, eager */
  GPUPLAN_FW_TORCHTITAN = 6, /**< torchtitan: FSDP2 + torch.compile, SDPA (cuDNN/FA3 on Hopper) */
  GPUPLAN_FW_MAXTEXT = 7,    /**< MaxText / JAX on XLA: fused by the compiler, collective matmul */
  GPUPLAN_FW_COUNT = 8
} gpuplan_framework;

/** "megatron", "nemo", ... (static); "?" for an unknown value. @errors none @threads any @since 0.2.0 */
GPUPLAN_API const char *gpuplan_framework_name(gpuplan_framework fw);

/**
 * A framework by name (case-insensitive; "megatron-core", "megatron-lm",
 * "mcore" and "llm-foundry" are accepted as aliases).
 * @return GPUPLAN_OK or GPUPLAN_ENOTFOUND.  @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API int gpuplan_framework_parse(const char *name, gpuplan_framework *out);

/** Version of gpuplan_perf_constants understood by this header. */
#define GPUPLAN_PERF_CONSTANTS_VERSION 2

/**
 * The model's constants: the framework's profile and the hardware
 * efficiencies.  Fill with gpuplan_perf_constants_framework() (or
 * _default()) and change fields; every field's value and source is in
 * docs/performance.md.  Fractions are of the catalog's figures: the
 * measured matmul ceiling (matmul_*_flops, stas00's MAMF), the dense peak,
 * HBM and link bandwidths.
 */
typedef struct gpuplan_perf_constants {
  unsigned version;              /**< GPUPLAN_PERF_CONSTANTS_VERSION */
  gpuplan_framework framework;
  /* GEMMs */
  double gemm_eff_ampere;        /**< sustained share of the matmul ceiling, large GEMMs, sm 8.x */
  double gemm_eff_hopper;        /**< the same, sm 9.x */
  double gemm_eff_blackwell;     /**< the same, sm 10.x */
  double gemm_eff_other;         /**< the same, other GPUs (Volta, Turing, Ada) */
  double gemm_roofline;          /**< efficiency = eff x I / (I + gemm_roofline x B): I the GEMM's FLOP/byte, B the GPU's */
  double gemm_dim_half;          /**< tile/wave term: efficiency x d / (d + gemm_dim_half), d = min(N, K) per GPU */
  double gemm_scale;             /**< the framework's GEMMs relative to the sustained share (kernels, library era) */
  double fp8_gemm_eff;           /**< FP8 GEMMs: share of the FP8 ceiling relative to the BF16 share (scaling, amax) */
  /* attention */
  double attn_fa2_ampere;        /**< FlashAttention-2 forward+backward, share of the dense peak, long sequences, d = 128 */
  double attn_fa2_hopper;        /**< FlashAttention-2 on Hopper */
  double attn_fa3_hopper;        /**< FlashAttention-3 / cuDNN fused attention on Hopper */
  double attn_blackwell;         /**< cuDNN fused attention on Blackwell */
  double attn_seq_half;          /**< sequence length (per GPU, after cp) at which the rate halves */
  double attn_d64;               /**< rate at head dim 64 relative to 128 */
  double attn_scale;             /**< the framework's attention kernel relative to the published FA rates */
  double softmax_bytes;          /**< explicit (unfused) attention: HBM bytes per score element, fwd + bwd */
  /* memory-bound work */
  double elementwise_scale;      /**< framework's HBM traffic relative to the eager per-op count (fused < 1) */
  double hbm_eff;                /**< share of HBM bandwidth memory-bound kernels reach */
  double fp8_cast_bytes;         /**< FP8: extra bytes per GEMM-input element per token (casts, amax, transposes) */
  double launch_s;               /**< host/launch overhead per layer per micro-batch (eager), seconds */
  /* communication */
  double coll_eff;               /**< NCCL bus bandwidth / link bandwidth */
  double overlap_eff;            /**< share of a phase's compute that can hide its collectives */
  double tp_overlap;             /**< share of TP collectives that overlap their GEMMs (0: not overlapped) */
  double dp_bw_eff;              /**< share of the bus bandwidth the ZeRO-2/3 / FSDP engine's per-micro-batch collectives reach (DeepSpeed: 0.1) */
  double straggler;              /**< per-rank step-time jitter (share of compute); cost grows as sqrt(2 ln n) */
  double step_overhead_s;        /**< fixed per-step cost (optimizer launch, logging, data), seconds */
  int grad_reduce_per_microbatch; /**< -1: the framework's rule; 0: once per step; 1: every micro-batch */
  int dp_overlap;                /**< overlap gradient reduction / parameter gathers with compute (0/1) */
  double reserved[8];            /**< zero */
} gpuplan_perf_constants;

/** The profile of a framework (GPUPLAN_FW_*). @errors none @threads any @since 0.2.0 */
GPUPLAN_API void gpuplan_perf_constants_framework(gpuplan_framework fw, gpuplan_perf_constants *out);
/** The Megatron profile (gpuplan_perf_constants_framework(GPUPLAN_FW_MEGATRON)). @errors none @threads any @since 0.1.0 */
GPUPLAN_API void gpuplan_perf_constants_default(gpuplan_perf_constants *out);

/**
 * Set one constant by name ("gemm_eff_hopper", "overlap_eff", ...), as
 * the validate command's constants option does.
 * @return GPUPLAN_OK or GPUPLAN_ENOTFOUND (unknown name).  @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API int gpuplan_perf_constant_set(gpuplan_perf_constants *k, const char *name, double value);

/** The n-th constant's name (static) and value (n from 0; NULL past the end). @errors none @threads any @since 0.2.0 */
GPUPLAN_API const char *gpuplan_perf_constant_at(const gpuplan_perf_constants *k, size_t n, double *value);

/** Maximum number of collectives in a gpuplan_perf breakdown. */
#define GPUPLAN_PERF_COMM_MAX 12

/** One kind of collective of a step: what it moves, on what, and what it costs. */
typedef struct gpuplan_perf_comm {
  const char *name;          /**< "tp", "cp", "pp", "dp_allreduce", "zero3_gather_fwd", ... (static) */
  const char *op;            /**< "all-reduce", "all-gather", "reduce-scatter", "send/recv" (static) */
  const char *algo;          /**< what NCCL would choose: "ring", "tree", "nvls", "p2p" (static) */
  const char *proto;         /**< "LL", "LL128", "Simple" (static) */
  const char *phase;         /**< the compute it can hide behind: "forward", "backward", "step", "none" (static) */
  int64_t ranks;             /**< GPUs in the group */
  int64_t ranks_per_node;    /**< of them in one node (k) */
  double nics_per_node;      /**< NICs the group owns in a node (k of the node's, rail-optimised) */
  double count;              /**< collectives per step (per GPU) */
  double message_bytes;      /**< each collective's buffer per GPU (nccl-tests' size) */
  double bytes_per_gpu;      /**< bytes each GPU sends per step (ring traffic) */
  double bytes_per_nic;      /**< bytes through each of the group's NICs per step (0 inside a node) */
  double seconds;            /**< time of all of them per step, as if alone */
  double latency_s;          /**< of which latency (NCCL's model) */
  double hidden_s;           /**< overlapped with compute */
  double exposed_s;          /**< on the critical path */
} gpuplan_perf_comm;

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
  /* since 0.2.0 */
  gpuplan_framework framework;
  int64_t microbatches;      /**< per step per pipeline (gradient accumulation) */
  int64_t tokens_per_microbatch; /**< per GPU: micro_batch x seq / cp */
  double gemm_s;             /**< of compute_s: GEMMs */
  double attention_s;        /**< of compute_s: attention (fused or explicit) */
  double elementwise_s;      /**< of compute_s: memory-bound kernels, casts, launches */
  double gemm_eff;           /**< FLOP-weighted GEMM efficiency against the dense peak */
  double attn_flops_s;       /**< attention's achieved FLOP/s per GPU */
  double straggler_s;        /**< the cost of waiting for the slowest rank */
  double overhead_s;         /**< fixed per-step cost */
  double comm_s;             /**< every collective's time, as if alone */
  double exposed_comm_s;     /**< of which on the critical path */
  double bytes_per_nic;      /**< largest per-NIC volume of the step's collectives */
  double nic_bw_bytes_s;     /**< one NIC (the node's scale-out bandwidth / its GPUs) */
  size_t n_comm;
  gpuplan_perf_comm comm[GPUPLAN_PERF_COMM_MAX];
} gpuplan_perf;

/**
 * Evaluate a layout on a cluster.
 * @param options  the memory model's options (layout, precision, recompute,
 *                 micro-batch, seq_len, microbatches per step per pipeline).
 * @param global_batch  sequences per optimizer step; 0 = dp x micro_batch x microbatches.
 * @param train_tokens  tokens to train on (for train_seconds / train_cost); 0 = none.
 * @param k  NULL for the Megatron profile; else a framework's (gpuplan_perf_constants_framework).
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
  GPUPLAN_ALGO_HIERARCHICAL = 2,  /**< inside nodes first (NVLink), then across nodes, then inside again */
  GPUPLAN_ALGO_AUTO = 3           /**< what NCCL's tuning model would choose (since 0.2.0) */
} gpuplan_coll_algo;

/** Time of one collective (a plain value). */
typedef struct gpuplan_coll_time {
  double seconds;
  double algbw_bytes_s;   /**< bytes / seconds, as nccl-tests reports it */
  double busbw_bytes_s;   /**< algbw x the op's bus factor (2(n-1)/n for all-reduce) */
  double bytes_intra;     /**< per GPU, over the node fabric */
  double bytes_inter;     /**< per GPU, over the network */
  /* since 0.2.0 */
  double latency_s;       /**< the latency term */
  const char *algo;       /**< the algorithm used: "ring", "tree", "nvls", "hierarchical", "p2p" (static) */
  const char *proto;      /**< NCCL protocol: "LL", "LL128", "Simple" (static) */
  double bytes_per_nic;   /**< through each NIC the group owns */
} gpuplan_coll_time;

/**
 * Time a collective of `bytes` (per GPU's buffer, as nccl-tests' size) over
 * n GPUs placed in nodes of the cluster (n <= per node: inside one node),
 * with NCCL's latency model (src/graph/tuning.cc) and the bus efficiency
 * of the constants (measured NCCL all-reduce: 234.89 GB/s on NVLink 3,
 * 367.61 GB/s on NVLink 4).  Across nodes a group of n GPUs with k of them
 * in each node owns k of the node's NICs (rail-optimised: one per GPU).
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
  /* since 0.2.0 */
  int tp_overlap;                  /**< TP communication overlapped with GEMMs */
  int dp_overlap;                  /**< gradient reduction / parameter gathers overlapped with compute */
  int tied_with_first;             /**< within the model's error of #1 */
  double score;                    /**< what the objective ranks (s per sequence, or cost per Mtok) */
} gpuplan_candidate;

/** Search statistics. */
typedef struct gpuplan_search_stats {
  uint64_t evaluated;   /**< layouts evaluated (memory, then time) */
  uint64_t invalid;     /**< rejected by divisibility (heads/tp, layers/pp, batch) */
  uint64_t too_big;     /**< rejected: did not fit in memory */
  /* since 0.2.0 */
  uint64_t candidates;  /**< layouts in the space (every combination of every dimension) */
  uint64_t pruned;      /**< discarded by the memory lower bound without evaluation */
  uint64_t timed;       /**< layouts that fit and got a step time */
  int threads;          /**< worker threads used */
} gpuplan_search_stats;

/** Progress callback: return non-zero to stop (GPUPLAN_EINTERRUPTED). */
typedef int (*gpuplan_progress_fn)(void *payload, uint64_t done, uint64_t total);

/** Version of gpuplan_search_options understood by this header. */
#define GPUPLAN_SEARCH_OPTIONS_VERSION 1

/** Options of gpuplan_search_ex(); zero fields mean the default. */
typedef struct gpuplan_search_options {
  unsigned version;                   /**< GPUPLAN_SEARCH_OPTIONS_VERSION */
  const gpuplan_perf_constants *k;    /**< NULL: the framework's profile (framework below) */
  gpuplan_framework framework;        /**< used when k is NULL */
  int threads;                        /**< 0: every core */
  double tie_tolerance;               /**< 0: the model's median error (GPUPLAN_PERF_MODEL_ERROR); < 0: no ties */
  int fixed_dp_mode;                  /**< 1: keep base's dp_mode (do not search sharding) */
  int fixed_recompute;                /**< 1: keep base's recompute */
  double reserved[6];
} gpuplan_search_options;

#define GPUPLAN_SEARCH_OPTIONS_INIT {GPUPLAN_SEARCH_OPTIONS_VERSION, NULL, GPUPLAN_FW_MEGATRON, 0, 0, 0, 0, {0}}

/**
 * The model's median |error| on published runs (`gpuplan validate`
 * on data/reference/training_runs_calibration.csv): two layouts whose step
 * times differ by less are tied.
 */
#define GPUPLAN_PERF_MODEL_ERROR 0.05

/**
 * Search every layout of a model on a cluster: tp over divisors of the
 * heads up to a node, pp up to the layers (uneven first and last stages
 * when pp does not divide them), cp, every micro-batch size that divides
 * the batch, interleaving, DDP / ZeRO-1 / ZeRO-2 / ZeRO-3 / FSDP
 * (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD), recompute, sequence
 * parallelism, TP overlap and optimizer offload.  A memory lower bound
 * prunes first; what fits is timed, on every core.  Keeps the best `cap`
 * by the objective, best first (ties broken by the enumeration order, so
 * the result does not depend on the number of threads); marks those
 * within the tie tolerance of #1.
 * @param base  precision, optimizer, convention and sequence length to use.
 * @param global_batch  sequences per step (required).
 * @return GPUPLAN_OK (n_out may be 0: nothing fits), GPUPLAN_EINVAL,
 *         GPUPLAN_EINTERRUPTED, GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_search_ex(gpuplan_ctx *ctx, const gpuplan_model *model,
                                  const gpuplan_cluster *cluster, const gpuplan_memory_options *base,
                                  int64_t global_batch, gpuplan_objective objective,
                                  const gpuplan_search_options *so, gpuplan_candidate *out, size_t cap,
                                  size_t *n_out, gpuplan_search_stats *stats, gpuplan_progress_fn progress,
                                  void *payload);

/**
 * gpuplan_search_ex() with the default options (the Megatron profile,
 * every core).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_search(gpuplan_ctx *ctx, const gpuplan_model *model,
                               const gpuplan_cluster *cluster, const gpuplan_memory_options *base,
                               int64_t global_batch, gpuplan_objective objective,
                               gpuplan_candidate *out, size_t cap, size_t *n_out,
                               gpuplan_search_stats *stats, gpuplan_progress_fn progress,
                               void *payload);


GPUPLAN_END_DECLS

#endif /* GPUPLAN_PERF_H */
