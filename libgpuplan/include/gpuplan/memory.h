/*
 * gpuplan/memory.h: the analytic memory model.
 *
 * For a model (a catalog record or one filled in by the caller), a GPU SKU,
 * a workload (training or inference) and a parallel layout, compute the
 * device memory of one rank by component, each component with the formula
 * that produced it (data/reference/formulas.md; docs/formulas.md).
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
  GPUPLAN_DTYPE_INT4 = 5, /**< with group-wise fp16 scale and zero point */
  GPUPLAN_DTYPE_NF4 = 6   /**< QLoRA 4-bit NormalFloat: fp32 absmax per 64 (8-bit with double quantisation) */
} gpuplan_dtype;

/**
 * How the code that trains keeps its activations (what autograd saves).
 * The same model keeps 1.6x more in eager PyTorch than Megatron's fused
 * kernels (docs/lab-eager-activations.md).
 */
typedef enum gpuplan_impl {
  GPUPLAN_IMPL_FUSED = 0,    /**< Megatron-core with fused kernels: Korthikanti et al.'s count */
  GPUPLAN_IMPL_EAGER = 1,    /**< eager PyTorch / Hugging Face (eager or SDPA attention) */
  GPUPLAN_IMPL_COMPILED = 2  /**< torch.compile (Inductor): what its min-cut partitioner keeps */
} gpuplan_impl;

/** Which training step is sized. */
typedef enum gpuplan_phase {
  GPUPLAN_PHASE_STEADY = 0,  /**< step 2 on: optimizer states exist during forward and backward */
  GPUPLAN_PHASE_FIRST = 1,   /**< step 1: states are created lazily in step(), after the activations are freed */
  GPUPLAN_PHASE_FORWARD = 2  /**< a forward pass only, its autograd graph kept (a profiling run; no loss) */
} gpuplan_phase;

/** How the optimizer step runs (its temporaries). */
typedef enum gpuplan_opt_impl {
  GPUPLAN_OPTIMPL_DEFAULT = -1, /**< the convention's: fused (DeepSpeed, Megatron), foreach (FSDP, HF) */
  GPUPLAN_OPTIMPL_FOREACH = 0,  /**< torch.optim default on CUDA: one state-sized tensor list of temporaries */
  GPUPLAN_OPTIMPL_FUSED = 1,    /**< fused=True, apex/DeepSpeed FusedAdam: no temporaries */
  GPUPLAN_OPTIMPL_FORLOOP = 2   /**< foreach=False (or HF's old AdamW): temporaries of the largest tensor */
} gpuplan_opt_impl;

/** Parameter-efficient fine-tuning. */
typedef enum gpuplan_finetune {
  GPUPLAN_FT_FULL = 0,  /**< every parameter trained */
  GPUPLAN_FT_LORA = 1,  /**< frozen base (base_dtype), rank-r adapters trained */
  GPUPLAN_FT_QLORA = 2  /**< LoRA over an NF4 base (Dettmers et al. 2023) */
} gpuplan_finetune;

/** Modules that get LoRA adapters (gpuplan_memory_options.lora_modules). */
enum gpuplan_lora_module {
  GPUPLAN_LORA_Q = 1 << 0, GPUPLAN_LORA_K = 1 << 1, GPUPLAN_LORA_V = 1 << 2, GPUPLAN_LORA_O = 1 << 3,
  GPUPLAN_LORA_GATE = 1 << 4, GPUPLAN_LORA_UP = 1 << 5, GPUPLAN_LORA_DOWN = 1 << 6,
  GPUPLAN_LORA_ALL = 0x7f /**< every linear layer of the blocks (QLoRA's choice) */
};

/** What the step program is made of, for a model that is not a transformer (gpuplan.from_torch). */
typedef struct gpuplan_module_desc {
  double params;             /**< parameters; > 0 turns the description on (the transformer shape is then ignored) */
  double trainable;          /**< trainable parameters (0 = all) */
  double buffer_bytes;       /**< buffers (BatchNorm running stats, ...), in their dtype */
  double largest_param;      /**< elements of the largest parameter tensor (for-loop optimizer temporaries) */
  double act_bytes;          /**< bytes autograd saves per sample at the end of forward (saved-tensor hooks) */
  double fwd_extra_bytes;    /**< per sample: bytes alive at forward's peak beyond the saved ones (temporaries, outputs) */
  double bwd_extra_bytes;    /**< per sample: the most bytes backward adds above what is still saved (activation gradients) */
  double out_bytes;          /**< per sample: the outputs and the loss */
  double in_bytes;           /**< per sample: the input batch */
  double act_dtype_bytes;    /**< the dtype the trace ran in (4: fp32); activations scale by the run's dtype over it */
} gpuplan_module_desc;

/** Workload. */
typedef enum gpuplan_workload {
  GPUPLAN_TRAIN = 0,
  GPUPLAN_INFER = 1
} gpuplan_workload;

/** Version of gpuplan_memory_options understood by this header (2: fields after params_override). */
#define GPUPLAN_MEMORY_OPTIONS_VERSION 2

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

  /* --- version 2 --------------------------------------------------------- */
  /* activations and the step */
  gpuplan_impl impl;            /**< fused (Korthikanti, the default here), eager, compiled */
  int precision_auto;           /**< the precision is a default: fp16-mixed stands in for bf16 where the SKU has no bf16 (sm < 8.0) */
  gpuplan_phase phase;          /**< the step sized: steady state (default) or the first step */
  int grads_persist;            /**< -1: the convention's (kept buffers in DeepSpeed/Megatron; set_to_none in FSDP/HF), 0, 1 */
  gpuplan_opt_impl optimizer_impl; /**< GPUPLAN_OPTIMPL_DEFAULT: the convention's */
  int prev_logits;              /**< -1: the implementation's (eager keeps the previous step's logits referenced), 0, 1 */
  int softmax_saves_input;      /**< PyTorch <= 1.10: softmax/log_softmax keep their input for backward (pytorch#64000) */

  /* model facts a catalog row cannot carry (0 / -1: none, the model's) */
  int64_t expert_ffn;           /**< routed experts' FFN width; 0 = ffn_hidden */
  int64_t shared_experts;       /**< always-on experts (DeepSeek, Qwen-MoE) of shared_expert_ffn width */
  int64_t shared_expert_ffn;    /**< 0 = expert_ffn */
  int64_t dense_layers;         /**< with experts: layers that are dense (ffn_hidden) instead of MoE */
  int64_t q_lora_rank;          /**< MLA: query down-projection rank (0: none) */
  int64_t kv_lora_rank;         /**< MLA (DeepSeek-V2/V3): compressed KV rank; > 0 turns MLA on */
  int64_t qk_rope_dim;          /**< MLA: decoupled RoPE dimension per head (shared key) */
  int64_t v_head_dim;           /**< MLA: value head dimension (0 = head_dim) */
  int64_t decoder_layers;       /**< encoder-decoder: decoder layers (model.layers are the encoder's) */
  int64_t head_labels;          /**< 0: an LM head over the vocabulary; n > 0: a classifier of n labels (pooler + head) */
  int qkv_bias;                 /**< -1: the model's linear_bias; 1: biases on q, k, v only (Qwen2); 0: none */
  int qk_norm;                  /**< per-head norms on q and k (Qwen3) */
  int parallel_block;           /**< attention and MLP in parallel from one norm (GPT-J, GPT-NeoX, Falcon) */
  double extra_params;          /**< parameters the formulas do not see (token types, relative-position tables, ...) */
  gpuplan_module_desc module;   /**< a traced module instead of a transformer shape */

  /* parameter-efficient fine-tuning */
  gpuplan_finetune finetune;
  int64_t lora_rank;            /**< r */
  unsigned lora_modules;        /**< gpuplan_lora_module bits; 0 = q and v (PEFT's default for Llama) */
  gpuplan_dtype base_dtype;     /**< frozen base: bf16, fp16, int8 or nf4 (QLoRA forces nf4) */
  int double_quant;             /**< QLoRA double quantisation of the absmax constants */
  int paged_optimizer;          /**< optimizer states in unified memory, paged out under pressure */

  /* capacity */
  uint64_t gpu_total_bytes;     /**< the device's memory as NVML reports it; 0 = the catalog's NVML figure, else memory_bytes */
} gpuplan_memory_options;

/* The defaults, by field name (C99 designated initializers). */
#define GPUPLAN_MEMORY_OPTIONS_INIT                                                          \
  { .version = GPUPLAN_MEMORY_OPTIONS_VERSION, .workload = GPUPLAN_TRAIN,                   \
    .convention = GPUPLAN_CONV_DEEPSPEED, .tp = 1, .pp = 1, .dp = 1, .cp = 1, .ep = 1,       \
    .sequence_parallel = 0, .dp_mode = GPUPLAN_DP_DDP, .shard_group = 0,                     \
    .schedule = GPUPLAN_SCHED_1F1B, .vpp = 1, .first_stage_layers = 0, .last_stage_layers = 0, \
    .micro_batch = 1, .seq_len = 0, .microbatches = 0, .precision = GPUPLAN_PREC_BF16_MIXED,   \
    .grad_bytes = 0, .optimizer = GPUPLAN_OPT_ADAMW, .recompute = GPUPLAN_RECOMPUTE_NONE,      \
    .flash_attention = 1, .dropout = 1, .offload_optimizer = 0, .offload_params = 0,           \
    .prefetch = 1, .bucket_bytes = -1, .weight_dtype = GPUPLAN_DTYPE_BF16,                     \
    .kv_dtype = GPUPLAN_DTYPE_BF16, .group_size = 128, .context_len = 0, .batch = 1,           \
    .paged = 0, .block_tokens = 16, .context_bytes = -1, .nccl_bytes = -1,                     \
    .workspace_bytes = -1, .params_override = 0.0, .impl = GPUPLAN_IMPL_FUSED,                \
    .precision_auto = 0, .phase = GPUPLAN_PHASE_STEADY, .grads_persist = -1,                   \
    .optimizer_impl = GPUPLAN_OPTIMPL_DEFAULT, .prev_logits = -1, .softmax_saves_input = 0,      \
    .expert_ffn = 0,             \
    .shared_experts = 0, .shared_expert_ffn = 0, .dense_layers = 0, .q_lora_rank = 0,          \
    .kv_lora_rank = 0, .qk_rope_dim = 0, .v_head_dim = 0, .decoder_layers = 0,                 \
    .head_labels = 0, .qkv_bias = -1, .qk_norm = 0, .parallel_block = 0, .extra_params = 0.0,  \
    .module = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, .finetune = GPUPLAN_FT_FULL, .lora_rank = 16,       \
    .lora_modules = 0, .base_dtype = GPUPLAN_DTYPE_BF16, .double_quant = 1,                   \
    .paged_optimizer = 0, .gpu_total_bytes = 0 }

/**
 * Fill o with the defaults (the same as GPUPLAN_MEMORY_OPTIONS_INIT), for
 * callers that cannot use the macro (bindings, other languages).
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API void gpuplan_memory_options_init(gpuplan_memory_options *o);

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
  GPUPLAN_MEM_WORKSPACE,       /**< cuBLAS workspace (inside PyTorch's allocator since 2.0) */
  GPUPLAN_MEM_BACKWARD,        /**< backward working set: one layer's activation gradients, embedding/output gradient */
  GPUPLAN_MEM_OPT_STEP,        /**< optimizer-step temporaries (foreach / for-loop) */
  GPUPLAN_MEM_ADAPTERS,        /**< LoRA adapter weights */
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

  /* --- since 0.2.0 --------------------------------------------------------- */
  uint64_t capacity_marketed;   /**< the SKU's marketed memory (gpu->memory_bytes) */
  const char *capacity_source;  /**< where capacity comes from (static text) */
  int at_limit;                 /**< total fits, but with less than 2% of capacity to spare: not "fits" */
  const char *verdict;          /**< "fits", "at the limit" or "does not fit" (static) */
  const char *peak_phase;       /**< the phase that peaks: "forward/backward", "optimizer step", "inference" (static) */
  uint64_t sum_bytes;           /**< every component added, as if all coexisted */
  uint64_t fwdbwd_bytes;        /**< peak during forward and backward of the sized step */
  uint64_t step_bytes;          /**< peak during optimizer.step() of the sized step */
  uint64_t steady_bytes;        /**< peak of a steady-state step (step >= 2) */
  uint64_t first_step_bytes;    /**< peak of the first step (states created lazily) */
  uint64_t allocated_bytes;     /**< of total, inside PyTorch's caching allocator (total - CUDA context - NCCL) */
  double trainable_params;      /**< parameters that get gradients and optimizer states (LoRA: the adapters) */
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

/**
 * Parameters of a model computed from its shape (embeddings included once;
 * the catalog row's fields only, without the memory options' extensions).
 * @errors none  @threads any  @since 0.1.0
 */
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
  double time_cost;                /**< step time after the rung over before it, minus 1 (0.33: a third slower; estimates) */
  const char *kind;                /**< "sp", "recompute", "offload", "adam8bit", "lora", "qlora", "micro-batch", "zero", "gpus", "gpu" */
} gpuplan_fix;

/**
 * The fix ladder, quantified for this case: what practitioners try, cheapest
 * in step time first (sequence parallelism, selective recompute, micro-batch
 * with gradient accumulation, 8-bit Adam, ZeRO stages, CPU offload, full
 * recompute, LoRA / QLoRA, then more GPUs and a bigger GPU), each rung
 * with its estimated time cost.  Rungs are cumulative; the ladder stops at
 * the first rung that fits.  Rungs that do not apply are skipped; a rung
 * that saves nothing is left out.
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

/**
 * The memory a PyTorch process can use on a GPU: NVML's total for the SKU
 * (the catalog's measured figure, e.g. 81,559 MiB on an H100 80GB), or the
 * marketed size when the catalog has none, or a vGPU slice's memory.
 * @param[out] source  static text naming where the figure comes from (may be NULL).
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API uint64_t gpuplan_gpu_usable_bytes(const gpuplan_gpu *gpu, const char **source);

/**
 * Compute capability of a SKU as major*10 + minor (80 for "8.0"), or 0 when unknown.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API int gpuplan_gpu_cc(const gpuplan_gpu *gpu);

/*
 * Names of enum values, for printing and parsing ("bf16-mixed", "adamw",
 * "zero3", ...): static strings, "unknown" for a value out of range.
 */
/** The precision's name ("bf16-mixed").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_precision_name(gpuplan_precision p);
/** The optimizer's name ("adamw").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_optimizer_name(gpuplan_optimizer o);
/** The recompute mode's name ("selective").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_recompute_name(gpuplan_recompute r);
/** The data-parallel mode's name ("zero3").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_dp_mode_name(gpuplan_dp_mode m);
/** The pipeline schedule's name ("1f1b").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_schedule_name(gpuplan_schedule s);
/** The convention's name ("deepspeed").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_convention_name(gpuplan_convention c);
/** The dtype's name ("int4", "nf4").  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API const char *gpuplan_dtype_name(gpuplan_dtype d);
/** "fused", "eager", "compiled".  @errors none  @threads any  @since 0.2.0 */
GPUPLAN_API const char *gpuplan_impl_name(gpuplan_impl i);
/** "full", "lora", "qlora".  @errors none  @threads any  @since 0.2.0 */
GPUPLAN_API const char *gpuplan_finetune_name(gpuplan_finetune f);
/** "foreach", "fused", "for-loop" ("default" resolves per convention).  @errors none  @threads any  @since 0.2.0 */
GPUPLAN_API const char *gpuplan_opt_impl_name(gpuplan_opt_impl i);

/**
 * Parse an enum value by name (case-insensitive), for CLIs and bindings.
 * @param what  "precision", "optimizer", "recompute", "dp", "schedule",
 *              "convention", "dtype", "impl", "finetune" or "optimizer_impl".
 * @return the value (>= 0), or GPUPLAN_EINVAL with a message listing the
 *         allowed names.
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_enum_parse(gpuplan_ctx *ctx, const char *what,
                                   const char *name);

/**
 * A model size such as "7B", "1.3b", "350M" or "1T": 1 and *params set, or
 * 0 when s is not a size (then it is a catalog name).  The planning
 * commands map a size to the catalog model of that size (within 10%) and
 * say which, or refuse it naming the nearest; they never scale another
 * model's shape (options.params_override remains for callers of the C API).
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API int gpuplan_parse_size(const char *s, double *params);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_MEMORY_H */
