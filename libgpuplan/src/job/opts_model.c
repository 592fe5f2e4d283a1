/*
 * opts_model.c: options that describe a model instead of naming one
 * (hyperparameters, a Hugging Face config.json, a module traced by
 * gpuplan.from_torch), how the code that trains it keeps its activations
 * (implementation profiles), which step is sized, parameter-efficient
 * fine-tuning, and the device's memory as the driver reports it.  Read by
 * the planning commands' resolution (job/model_resolve.c, job/cmd_train.c
 * resolve() and memory_options()).  The order matches the M_* enum of
 * job_int.h.
 */
#include "job/job_int.h"

#define TRAINING (C_PLAN | C_PERF | C_SEARCH | C_SIMULATE | C_SERVE)
#define SHAPE "model shape"
#define BIGI 1000000000.0

static const gpuplan_option_info opts[] = {
  /* the transformer's hyperparameters (each overrides the named model's, or describes one) */
  {"layers", "layers", GPUPLAN_OPT_INT, "layers", 1, 100000, NULL, "the model's",
   "transformer layers (with hidden, heads, vocab: describe a model by its shape); the encoder's for encoder-decoder",
   TRAINING, 0, SHAPE},
  {"hidden", "hidden", GPUPLAN_OPT_INT, "", 1, 10000000, NULL, "the model's", "hidden size (d_model)", TRAINING, 0,
   SHAPE},
  {"heads", "heads", GPUPLAN_OPT_INT, "heads", 1, 100000, NULL, "the model's", "attention heads", TRAINING, 0, SHAPE},
  {"kv_heads", "kv-heads", GPUPLAN_OPT_INT, "heads", 1, 100000, NULL, "heads",
   "key/value heads (fewer than heads: GQA; 1: MQA)", TRAINING, 0, SHAPE},
  {"head_dim", "head-dim", GPUPLAN_OPT_INT, "", 1, 100000, NULL, "hidden / heads",
   "dimension of each head (Gemma, Qwen3 set it explicitly); with MLA the no-RoPE q/k head dim", TRAINING, 0, SHAPE},
  {"ffn", "ffn", GPUPLAN_OPT_INT, "", 1, 100000000, NULL, "4 x hidden (gated: 8/3 x hidden, multiple of 256)",
   "FFN width (intermediate_size); the dense layers' with MoE", TRAINING, 0, SHAPE},
  {"ffn_type", "ffn-type", GPUPLAN_OPT_ENUM, "", 0, 0, "gelu|swiglu|geglu|relu|relu2", "swiglu",
   "MLP: GeLU, SwiGLU, GeGLU (gated), ReLU, ReLU^2", TRAINING, 0, SHAPE},
  {"norm", "norm", GPUPLAN_OPT_ENUM, "", 0, 0, "layernorm|rmsnorm", "rmsnorm", "normalisation", TRAINING, 0, SHAPE},
  {"vocab", "vocab", GPUPLAN_OPT_INT, "tokens", 1, 100000000, NULL, "the model's", "vocabulary size", TRAINING, 0,
   SHAPE},
  {"tied", "tied", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false", "input embedding and output layer share weights",
   TRAINING, 0, SHAPE},
  {"position", "position", GPUPLAN_OPT_ENUM, "", 0, 0, "learned|rope|alibi|relative", "rope",
   "positional scheme (learned adds a max_seq x hidden table)", TRAINING, 0, SHAPE},
  {"bias", "bias", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false", "biases on every linear layer", TRAINING, 0, SHAPE},
  {"qkv_bias", "qkv-bias", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "as bias", "biases on q, k, v only (Qwen2)", TRAINING, 0,
   SHAPE},
  {"qk_norm", "qk-norm", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false", "per-head norms on q and k (Qwen3)", TRAINING, 0,
   SHAPE},
  {"parallel_block", "parallel-block", GPUPLAN_OPT_ENUM, "", 0, 0, "off|one-norm|two-norms", "off",
   "attention and MLP side by side (GPT-J, Falcon: one norm; GPT-NeoX: two)", TRAINING, 0, SHAPE},
  {"max_seq", "max-seq", GPUPLAN_OPT_INT, "tokens", 1, 100000000, NULL, "the model's",
   "longest context (max_position_embeddings): the learned position table, serving's maximum", TRAINING, 0, SHAPE},
  {"arch", "arch", GPUPLAN_OPT_ENUM, "", 0, 0, "decoder|encoder|encoder-decoder", "decoder",
   "decoder-only, encoder-only (no KV cache) or encoder-decoder", TRAINING, 0, SHAPE},
  {"decoder_layers", "decoder-layers", GPUPLAN_OPT_INT, "layers", 1, 100000, NULL, "layers",
   "encoder-decoder: the decoder's layers (self- and cross-attention)", TRAINING, 0, SHAPE},
  {"labels", "labels", GPUPLAN_OPT_INT, "labels", 0, 100000000, NULL, "0 (an LM head)",
   "a classifier of this many labels instead of the LM head (sequence classification)", TRAINING, 0, SHAPE},
  {"experts", "experts", GPUPLAN_OPT_INT, "experts", 1, 100000, NULL, "1 (dense)", "MoE: routed experts", TRAINING, 0,
   SHAPE},
  {"top_k", "top-k", GPUPLAN_OPT_INT, "experts", 1, 100000, NULL, "1", "MoE: experts per token", TRAINING, 0, SHAPE},
  {"expert_ffn", "expert-ffn", GPUPLAN_OPT_INT, "", 1, 100000000, NULL, "ffn", "MoE: each routed expert's FFN width",
   TRAINING, 0, SHAPE},
  {"shared_experts", "shared-experts", GPUPLAN_OPT_INT, "experts", 0, 1024, NULL, "0",
   "MoE: always-on experts (DeepSeek, Qwen-MoE)", TRAINING, 0, SHAPE},
  {"shared_expert_ffn", "shared-expert-ffn", GPUPLAN_OPT_INT, "", 1, 100000000, NULL, "expert_ffn",
   "MoE: the shared experts' FFN width", TRAINING, 0, SHAPE},
  {"dense_layers", "dense-layers", GPUPLAN_OPT_INT, "layers", 0, 100000, NULL, "0",
   "MoE: the first layers are dense (DeepSeek's first_k_dense_replace)", TRAINING, 0, SHAPE},
  {"kv_lora_rank", "kv-lora-rank", GPUPLAN_OPT_INT, "", 1, 1000000, NULL, "none",
   "MLA (DeepSeek-V2/V3): rank of the compressed KV (turns MLA on)", TRAINING, 0, SHAPE},
  {"q_lora_rank", "q-lora-rank", GPUPLAN_OPT_INT, "", 1, 1000000, NULL, "none", "MLA: rank of the query projection",
   TRAINING, 0, SHAPE},
  {"qk_rope_dim", "qk-rope-dim", GPUPLAN_OPT_INT, "", 1, 100000, NULL, "none", "MLA: the decoupled RoPE head dim",
   TRAINING, 0, SHAPE},
  {"v_head_dim", "v-head-dim", GPUPLAN_OPT_INT, "", 1, 100000, NULL, "head_dim", "MLA: the value head dim", TRAINING,
   0, SHAPE},
  {"extra_params", "extra-params", GPUPLAN_OPT_REAL, "parameters", -1e15, 1e15, NULL, "0",
   "parameters the shape does not show (token types, routers' biases, ...)", TRAINING, 0, SHAPE},

  /* a module traced by gpuplan.from_torch (Python): the shape is then not used */
  {"module_params", "module-params", GPUPLAN_OPT_REAL, "parameters", 1, 1e15, NULL, "none",
   "a traced module's parameters (gpuplan.from_torch): plan it instead of a transformer", TRAINING, 0, "module"},
  {"module_trainable", "module-trainable", GPUPLAN_OPT_REAL, "parameters", 0, 1e15, NULL, "module_params",
   "of them, the ones that train", TRAINING, 0, "module"},
  {"module_buffers", "module-buffers", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0",
   "its buffers (BatchNorm statistics), bytes", TRAINING, 0, "module"},
  {"module_largest", "module-largest", GPUPLAN_OPT_REAL, "elements", 0, 1e15, NULL, "0",
   "its largest parameter tensor", TRAINING, 0, "module"},
  {"module_act_bytes", "module-act-bytes", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0",
   "bytes autograd saves per sample (saved-tensor hooks), inputs excluded", TRAINING, 0, "module"},
  {"module_fwd_bytes", "module-fwd-bytes", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0",
   "per sample: forward's temporaries beyond the saved tensors at its peak", TRAINING, 0, "module"},
  {"module_bwd_bytes", "module-bwd-bytes", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0",
   "per sample: the most backward adds above the saved tensors (activation gradients)", TRAINING, 0, "module"},
  {"module_out_bytes", "module-out-bytes", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0",
   "per sample: outputs and loss", TRAINING, 0, "module"},
  {"module_in_bytes", "module-in-bytes", GPUPLAN_OPT_REAL, "B", 0, 1e15, NULL, "0", "per sample: the input batch",
   TRAINING, 0, "module"},

  /* how the code keeps activations, and the step sized */
  {"impl", "impl", GPUPLAN_OPT_ENUM, "", 0, 0, "fused|eager|compiled", "per model source (stated in the output)",
   "activations as the code keeps them: fused (Megatron-core kernels, Korthikanti's count), eager (PyTorch / "
   "Hugging Face eager or SDPA), compiled (torch.compile)", TRAINING, 0, "implementation"},
  {"phase", "phase", GPUPLAN_OPT_ENUM, "", 0, 0, "steady|first|forward", "steady",
   "the step sized: steady state, the first step (states created in step()), or a forward pass only", TRAINING, 0,
   "implementation"},
  {"zero_grad", "zero-grad", GPUPLAN_OPT_ENUM, "", 0, 0, "none|zeros", "the convention's",
   "between steps gradients are set to None (PyTorch >= 2 default) or zeroed and kept (PyTorch 1.x, DeepSpeed, "
   "Megatron buffers)", TRAINING, 0, "implementation"},
  {"optimizer_impl", "optimizer-impl", GPUPLAN_OPT_ENUM, "", 0, 0, "foreach|fused|for-loop", "the convention's",
   "the optimizer step's temporaries: foreach (torch.optim default), fused, for-loop", TRAINING, 0,
   "implementation"},
  {"prev_logits", "prev-logits", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "true with eager",
   "the loop's variable still holds the previous step's logits during the next forward", TRAINING, 0,
   "implementation"},
  {"softmax_saves_input", "softmax-saves-input", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false",
   "PyTorch <= 1.10: softmax and log_softmax also keep their input for backward (pytorch#64000)", TRAINING, 0,
   "implementation"},
  {"gpu_total", "gpu-total", GPUPLAN_OPT_BYTES, "MiB", 1048576, 1e15, NULL, "the catalog's NVML figure",
   "the GPU's memory as NVML reports it (nvidia-smi --query-gpu=memory.total)", TRAINING, 0, "implementation"},

  /* parameter-efficient fine-tuning */
  {"finetune", "finetune", GPUPLAN_OPT_ENUM, "", 0, 0, "full|lora|qlora", "full",
   "full fine-tuning, LoRA over a frozen base, or QLoRA (NF4 base)", TRAINING, 0, "fine-tuning"},
  {"lora_rank", "lora-rank", GPUPLAN_OPT_INT, "", 1, 65536, NULL, "16", "LoRA rank r", TRAINING, 0, "fine-tuning"},
  {"lora_modules", "lora-modules", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "q,v (LoRA); all (QLoRA)",
   "linear layers that get adapters: q,k,v,o,gate,up,down or all", TRAINING, 0, "fine-tuning"},
  {"base_dtype", "base-dtype", GPUPLAN_OPT_ENUM, "", 0, 0, "bf16|fp16|int8|nf4", "bf16 (nf4 with qlora)",
   "the frozen base's storage", TRAINING, 0, "fine-tuning"},
  {"double_quant", "double-quant", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "true",
   "QLoRA: quantise the NF4 absmax constants to 8 bits", TRAINING, 0, "fine-tuning"},
  {"paged_optimizer", "paged-optimizer", GPUPLAN_OPT_BOOL, "", 0, 1, NULL, "false (true with qlora)",
   "optimizer states in paged unified memory (bitsandbytes): host memory under pressure", TRAINING, 0,
   "fine-tuning"},
};

const gpuplan__opt_table gpuplan__opts_model = {opts, sizeof opts / sizeof opts[0]};

/* The enum and the table must agree. */
typedef char gpuplan__opts_model_count_check[(sizeof opts / sizeof opts[0]) == M_COUNT ? 1 : -1];
