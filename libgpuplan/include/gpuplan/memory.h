/*
 * gpuplan/memory.h: the analytic memory model.
 *
 * For a model (a catalog record or one filled in by the caller), a GPU SKU,
 * a workload (training or inference) and a parallel layout, compute the
 * device memory of one rank by component, each component with the formula
 * that produced it (../shared/reference/formulas.md; docs/formulas.md).
 *
 * Evaluation allocates nothing and does no I/O: it is pure arithmetic on the
 * inputs, microseconds per call, and the results are plain values.
 */
#ifndef GPUPLAN_MEMORY_H
#define GPUPLAN_MEMORY_H

#include "common.h"
#include "ctx.h"
#include "catalog.h"

GPUPLAN_BEGIN_DECLS

/** Training precision recipe. */
typedef enum gpuplan_precision {
  GPUPLAN_PREC_BF16_MIXED = 0, /**< bf16 compute, fp32 master weights (default) */
  GPUPLAN_PREC_FP16_MIXED = 1, /**< fp16 compute, fp32 master weights */
  GPUPLAN_PREC_FP32 = 2,       /**< everything fp32 */
  GPUPLAN_PREC_BF16 = 3,       /**< pure bf16: no fp32 master copy */
  GPUPLAN_PREC_FP8 = 4         /**< Transformer-Engine style: bf16 params + fp8 cache, fp32 master */
} gpuplan_precision;

/** Optimizer. */
typedef enum gpuplan_optimizer {
  GPUPLAN_OPT_ADAMW = 0,    /**< Adam/AdamW: fp32 m and v (8 bytes/param) */
  GPUPLAN_OPT_SGD = 1,      /**< plain SGD: no state */
  GPUPLAN_OPT_MOMENTUM = 2, /**< SGD with momentum: 4 bytes/param */
  GPUPLAN_OPT_ADAM8BIT = 3, /**< 8-bit Adam: m and v at 1 byte each (HF accounting) */
  GPUPLAN_OPT_ADAFACTOR = 4 /**< factored second moment: 4 bytes per row and column */
} gpuplan_optimizer;

/** Activation recomputation. */
typedef enum gpuplan_recompute {
  GPUPLAN_RECOMPUTE_NONE = 0,
  GPUPLAN_RECOMPUTE_SELECTIVE = 1, /**< recompute attention's s^2 part (Korthikanti) */
  GPUPLAN_RECOMPUTE_FULL = 2       /**< keep only each layer's input */
} gpuplan_recompute;

/** Data-parallel sharding. */
typedef enum gpuplan_dp_mode {
  GPUPLAN_DP_DDP = 0,           /**< plain data parallel: all replicated */
  GPUPLAN_DP_ZERO1 = 1,         /**< optimizer states (and master) sharded; Megatron's distributed optimizer */
  GPUPLAN_DP_ZERO2 = 2,         /**< + gradients sharded */
  GPUPLAN_DP_ZERO3 = 3,         /**< + parameters sharded, gathered per layer */
  GPUPLAN_DP_FSDP_FULL = 4,     /**< FSDP FULL_SHARD (ZeRO-3 semantics) */
  GPUPLAN_DP_FSDP_GRAD_OP = 5,  /**< FSDP SHARD_GRAD_OP (ZeRO-2 semantics, params gathered for the step) */
  GPUPLAN_DP_FSDP_HYBRID = 6    /**< FSDP HYBRID_SHARD: full shard inside shard_group, replicate across */
} gpuplan_dp_mode;

/** Pipeline schedule. */
typedef enum gpuplan_schedule {
  GPUPLAN_SCHED_1F1B = 0,        /**< stage i holds min(p - i, m) micro-batches */
  GPUPLAN_SCHED_GPIPE = 1,       /**< every stage holds all m micro-batches */
  GPUPLAN_SCHED_INTERLEAVED = 2  /**< 1F1B with vpp model chunks per stage */
} gpuplan_schedule;

/** Accounting conventions: which bytes per parameter a framework keeps. */
typedef enum gpuplan_convention {
  GPUPLAN_CONV_DEEPSPEED = 0, /**< ZeRO paper: 16-bit grads, (2+2+K) bytes/param */
  GPUPLAN_CONV_MEGATRON = 1,  /**< fp32 main grads: 18 bytes/param; dist. optimizer 6 + 12/DP */
  GPUPLAN_CONV_FSDP = 2,      /**< fp32 sharded params (= master) and grads; 16-bit gathered copies */
  GPUPLAN_CONV_HF = 3         /**< HF Trainer: fp32 weights + 16-bit copy, fp32 grads: 18 bytes/param */
} gpuplan_convention;

/** Storage data types (inference weights, KV cache). */
typedef enum gpuplan_dtype {
  GPUPLAN_DTYPE_BF16 = 0,
  GPUPLAN_DTYPE_FP16 = 1,
  GPUPLAN_DTYPE_FP32 = 2,
  GPUPLAN_DTYPE_FP8 = 3,
  GPUPLAN_DTYPE_INT8 = 4,
  GPUPLAN_DTYPE_INT4 = 5  /**< with group-wise fp16 scale and zero point */
} gpuplan_dtype;

/** Workload. */
typedef enum gpuplan_workload {
  GPUPLAN_TRAIN = 0,
  GPUPLAN_INFER = 1
} gpuplan_workload;

/** Version of gpuplan_memory_options understood by this header. */
#define GPUPLAN_MEMORY_OPTIONS_VERSION 1

/**
 * Inputs of the memory model besides the model and the GPU.  Start from
 * GPUPLAN_MEMORY_OPTIONS_INIT: the defaults are what a practitioner would
 * pick (bf16 mixed precision, AdamW, micro-batch 1, the model's sequence
 * length, FlashAttention, one GPU).  Sizes of -1 mean "the default".
 */
typedef struct gpuplan_memory_options {
  unsigned version;
  gpuplan_workload workload;
  gpuplan_convention convention;

  /* layout */
  int64_t tp, pp, dp, cp, ep;   /**< degrees; gpus = tp*pp*dp*cp (ep divides dp*cp... see docs) */
  int sequence_parallel;        /**< Megatron SP (needs tp > 1 to matter) */
  gpuplan_dp_mode dp_mode;
  int64_t shard_group;          /**< HYBRID_SHARD group size; 0 = dp */
  gpuplan_schedule schedule;
  int64_t vpp;                  /**< model chunks per stage (interleaved) */
  int64_t first_stage_layers;   /**< uneven pipeline split; 0 = even */
  int64_t last_stage_layers;    /**< uneven pipeline split; 0 = even */

  /* training */
  int64_t micro_batch;          /**< sequences per micro-batch */
  int64_t seq_len;              /**< 0 = the model's */
  int64_t microbatches;         /**< per step per pipeline (grad accumulation) ; 0 = pp */
  gpuplan_precision precision;
  int grad_bytes;               /**< bytes per gradient element; 0 = the convention's */
  gpuplan_optimizer optimizer;
  gpuplan_recompute recompute;
  int flash_attention;          /**< no s^2 score matrix kept */
  int dropout;                  /**< keep dropout masks (Korthikanti's assumption) */
  int offload_optimizer;        /**< master + optimizer states on the host */
  int offload_params;           /**< ZeRO-3 parameter shards on the host */
  int64_t prefetch;             /**< ZeRO-3/FSDP layers gathered ahead */
  int64_t bucket_bytes;         /**< gradient bucket; -1 = 25 MiB (DDP, ZeRO) */

  /* inference */
  gpuplan_dtype weight_dtype;
  gpuplan_dtype kv_dtype;
  int64_t group_size;           /**< int4/int8 quantisation group */
  int64_t context_len;          /**< tokens per sequence (prompt + output); 0 = model max */
  int64_t batch;                /**< concurrent sequences */
  int paged;                    /**< paged KV (blocks) instead of max-length reservation */
  int64_t block_tokens;         /**< tokens per KV block */

  /* fixed costs (-1 = default) */
  int64_t context_bytes;        /**< CUDA context; -1 = the SKU's catalog value */
  int64_t nccl_bytes;           /**< NCCL buffers; -1 = 0 on one GPU, else see docs */
  int64_t workspace_bytes;      /**< cuBLAS/cuBLASLt workspace; -1 = 32 MiB */
  double params_override;       /**< scale the model to this many parameters; 0 = from shape */
} gpuplan_memory_options;

#define GPUPLAN_MEMORY_OPTIONS_INIT                                          \
  { GPUPLAN_MEMORY_OPTIONS_VERSION, GPUPLAN_TRAIN, GPUPLAN_CONV_DEEPSPEED,   \
    1, 1, 1, 1, 1, 0, GPUPLAN_DP_DDP, 0, GPUPLAN_SCHED_1F1B, 1, 0, 0,        \
    1, 0, 0, GPUPLAN_PREC_BF16_MIXED, 0, GPUPLAN_OPT_ADAMW,                  \
    GPUPLAN_RECOMPUTE_NONE, 1, 1, 0, 0, 1, -1,                               \
    GPUPLAN_DTYPE_BF16, GPUPLAN_DTYPE_BF16, 128, 0, 1, 0, 16,                \
    -1, -1, -1, 0.0 }

/** Memory components. */
typedef enum gpuplan_mem_component {
  GPUPLAN_MEM_WEIGHTS = 0,     /**< parameters in compute precision (or serving precision) */
  GPUPLAN_MEM_GRADIENTS,
  GPUPLAN_MEM_MASTER,          /**< fp32 master weights */
  GPUPLAN_MEM_OPTIMIZER,       /**< optimizer states */
  GPUPLAN_MEM_ACTIVATIONS,     /**< transformer layers, all micro-batches in flight */
  GPUPLAN_MEM_RECOMPUTE,       /**< one layer rematerialised during backward */
  GPUPLAN_MEM_EMBEDDING_ACT,   /**< input ids, embedding dropout mask */
  GPUPLAN_MEM_LOGITS,          /**< final norm input + fp32 logits/loss spike */
  GPUPLAN_MEM_GATHER,          /**< ZeRO-3/FSDP gathered layers + reduce-scatter buffer */
  GPUPLAN_MEM_BUCKETS,         /**< gradient buckets */
  GPUPLAN_MEM_MOE_A2A,         /**< MoE all-to-all dispatch/combine buffers */
  GPUPLAN_MEM_KV_CACHE,        /**< inference KV cache */
  GPUPLAN_MEM_INFER_ACT,       /**< inference activation workspace */
  GPUPLAN_MEM_CONTEXT,         /**< CUDA context */
  GPUPLAN_MEM_NCCL,            /**< NCCL communicator buffers */
  GPUPLAN_MEM_WORKSPACE,       /**< cuBLAS workspace */
  GPUPLAN_MEM_COUNT
} gpuplan_mem_component;

/** One component of a rank's memory. */
typedef struct gpuplan_mem_item {
  const char *name;     /**< "weights", "optimizer", ... (static) */
  const char *formula;  /**< the formula and its source (static); "" when zero */
  uint64_t bytes;
} gpuplan_mem_item;

/** The memory of one rank (a plain value). */
typedef struct gpuplan_memory {
  int64_t stage;                /**< pipeline stage evaluated */
  int64_t layers;               /**< transformer layers on this stage */
  double microbatches_in_flight;
  double params_total;          /**< whole model */
  double params_rank;           /**< held by this rank before DP sharding */
  gpuplan_mem_item item[GPUPLAN_MEM_COUNT];
  uint64_t total;               /**< sum of the items */
  uint64_t capacity;            /**< device memory (the SKU's, or the node's vGPU slice) */
  int fits;                     /**< total <= capacity */
  int64_t headroom;             /**< capacity - total (negative: short by) */
  uint64_t host_bytes;          /**< offloaded to host memory */
  /* inference */
  uint64_t kv_bytes_per_token;  /**< per rank */
  uint64_t kv_waste_bytes;      /**< reserved but unused (contiguous) or block tail (paged) */
  int64_t max_sequences;        /**< concurrent sequences of context_len that fit */
} gpuplan_memory;

/** Stage selector for gpuplan_memory_eval(): the worst (largest) stage. */
#define GPUPLAN_STAGE_WORST (-1)

/**
 * Evaluate the memory of one rank.
 *
 * @param model  the model (a catalog record or caller-filled; only the shape
 *               fields are read).
 * @param gpu    the device SKU; capacity = gpu->memory_bytes.
 * @param options  NULL for the defaults.
 * @param stage  pipeline stage 0..pp-1, or GPUPLAN_STAGE_WORST.
 * @param[out] out  the result.
 * @return GPUPLAN_OK, or GPUPLAN_EINVAL with a message naming the field and
 *         the allowed values (heads not divisible by tp, layers not divisible
 *         by pp, non-positive sizes, products that overflow 64 bits, ...).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_memory_eval(gpuplan_ctx *ctx, const gpuplan_model *model,
                                    const gpuplan_gpu *gpu,
                                    const gpuplan_memory_options *options,
                                    int64_t stage, gpuplan_memory *out);

/** Parameters of a model computed from its shape (embeddings included once). */
GPUPLAN_API double gpuplan_model_params(const gpuplan_model *model);

/** One rung of the fix ladder. */
typedef struct gpuplan_fix {
  char what[160];                  /**< "micro-batch 4 -> 1", "ZeRO-3 on 8 GPUs", ... */
  gpuplan_memory_options options;  /**< the options after this rung (cumulative) */
  const gpuplan_gpu *gpu;          /**< the GPU after this rung (bigger-GPU rungs change it) */
  int64_t gpus;                    /**< GPUs after this rung */
  uint64_t total;                  /**< worst-rank bytes */
  uint64_t capacity;
  int fits;
} gpuplan_fix;

/**
 * The fix ladder of the seed article, quantified for this case: smaller
 * micro-batch -> activation checkpointing -> ZeRO-2 / ZeRO-3 -> bf16 mixed
 * precision -> more GPUs -> a bigger GPU.  Rungs are cumulative; the ladder
 * stops at the first rung that fits.  Rungs that do not apply are skipped.
 *
 * @param cat   the catalog, searched for bigger GPUs.
 * @param max_gpus  the most GPUs the "more GPUs" rung may use (e.g. 8).
 * @param[out] fixes  caller array of cap rungs; *count_out rungs written.
 * @return GPUPLAN_OK or GPUPLAN_EINVAL (as gpuplan_memory_eval).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_memory_ladder(gpuplan_ctx *ctx, gpuplan_catalog *cat,
                                      const gpuplan_model *model,
                                      const gpuplan_gpu *gpu,
                                      const gpuplan_memory_options *options,
                                      int64_t max_gpus, gpuplan_fix *fixes,
                                      size_t cap, size_t *count_out);

/** Names of enum values, for printing and parsing ("bf16-mixed", "adamw", "zero3", ...). */
GPUPLAN_API const char *gpuplan_precision_name(gpuplan_precision p);
GPUPLAN_API const char *gpuplan_optimizer_name(gpuplan_optimizer o);
GPUPLAN_API const char *gpuplan_recompute_name(gpuplan_recompute r);
GPUPLAN_API const char *gpuplan_dp_mode_name(gpuplan_dp_mode m);
GPUPLAN_API const char *gpuplan_schedule_name(gpuplan_schedule s);
GPUPLAN_API const char *gpuplan_convention_name(gpuplan_convention c);
GPUPLAN_API const char *gpuplan_dtype_name(gpuplan_dtype d);

/**
 * Parse an enum value by name (case-insensitive), for CLIs and bindings.
 * @param what  "precision", "optimizer", "recompute", "dp", "schedule",
 *              "convention" or "dtype".
 * @return the value (>= 0), or GPUPLAN_EINVAL with a message listing the
 *         allowed names.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_enum_parse(gpuplan_ctx *ctx, const char *what,
                                   const char *name);

/** Types of named options (gpuplan_option_type). */
typedef enum gpuplan_option_type {
  GPUPLAN_OPTION_INT = 0,  /**< an integer (degrees, sizes, bytes; -1 = default where documented) */
  GPUPLAN_OPTION_BOOL,     /**< 0 or 1; as a string true/false, yes/no, 1/0 */
  GPUPLAN_OPTION_REAL,     /**< a real number ("params": parameters to scale the model to) */
  GPUPLAN_OPTION_ENUM      /**< a name: "bf16-mixed", "zero3", "train", ... (gpuplan_enum_parse) */
} gpuplan_option_type;

/**
 * Memory options by name, so bindings and configuration files share one
 * parser.  Names are the fields of gpuplan_memory_options ("tp",
 * "micro_batch", "precision", "dp_mode", "kv_dtype", "flash_attention",
 * ...), with "params" for params_override and "workload" ("train" or
 * "infer").  Types are checked here, ranges by gpuplan_memory_eval.
 *
 * gpuplan_option_name(i): the i-th name, NULL past the last (static strings).
 * gpuplan_option_kind(name): its gpuplan_option_type, or -1 if unknown.
 * gpuplan_option_set_int/real/string: set one option; an integral real
 *   sets an INT or BOOL option, a string sets any (numbers parsed).
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND for an unknown name; GPUPLAN_EINVAL
 *         for a value of the wrong type (the message names the option);
 *         GPUPLAN_EMISUSE for NULL options.
 * @errors any  @threads ctx (the name functions: any thread)  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_option_name(size_t i);
GPUPLAN_API int gpuplan_option_kind(const char *name);
GPUPLAN_API int gpuplan_option_set_int(gpuplan_ctx *ctx, gpuplan_memory_options *o,
                                       const char *name, int64_t value);
GPUPLAN_API int gpuplan_option_set_real(gpuplan_ctx *ctx, gpuplan_memory_options *o,
                                        const char *name, double value);
GPUPLAN_API int gpuplan_option_set_string(gpuplan_ctx *ctx, gpuplan_memory_options *o,
                                          const char *name, const char *value);

/**
 * A model size such as "7B", "1.3b", "350M" or "1T": 1 and *params set, or
 * 0 when s is not a size (then it is a catalog name).  Tools plan such a
 * size as Llama-2-7B's shape scaled to exactly that many parameters
 * (options.params_override), as `gpuplan plan 7B` does.
 * @threads any  @since 0.1.0
 */
GPUPLAN_API int gpuplan_parse_size(const char *s, double *params);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_MEMORY_H */
