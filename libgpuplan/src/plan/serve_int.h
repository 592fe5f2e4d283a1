/*
 * serve_int.h: the serving model (issue 13): memory as the engines lay it
 * out, speed per engine iteration, latency and throughput under a load,
 * and the serving calibration.  Not installed; the job API's `serve`
 * command (job/cmd_serve.c) is its only front end.
 *
 * Files:
 *   serve_model.c  the model's shape, weight schemes, KV bytes per token,
 *                  and each engine's memory rule (vLLM, SGLang,
 *                  TensorRT-LLM, TGI; CPU serving)
 *   serve_perf.c   the hardware (visible memory, kernels per SKU), one
 *                  engine iteration, prefill, and the loads: offline, a
 *                  static batch, closed-loop concurrency, Poisson arrivals
 *                  with p50/p90/p99
 *   serve_validate.c  published serving measurements scored per metric
 *
 * Every constant is in gpuplan__serve_k with its source or the rows it was
 * fitted on (docs/serving.md); `serve --constants name=value` overrides.
 * Evaluation allocates nothing: one serving evaluation is microseconds.
 */
#ifndef GPUPLAN_SERVE_INT_H
#define GPUPLAN_SERVE_INT_H

#include <stdint.h>

#include "common/internal.h"
#include "gpuplan/catalog.h"
#include "gpuplan/memory.h"
#include "gpuplan/perf.h"

/* --- engines and schemes ----------------------------------------------------- */

typedef enum {
  GPUPLAN__ENG_VLLM = 0,
  GPUPLAN__ENG_SGLANG,
  GPUPLAN__ENG_TRTLLM,
  GPUPLAN__ENG_TGI,
  GPUPLAN__ENG_COUNT
} gpuplan__engine;

/* How the weights are stored and multiplied. */
typedef enum {
  GPUPLAN__W_BF16 = 0,
  GPUPLAN__W_FP16,
  GPUPLAN__W_FP32,
  GPUPLAN__W_FP8,    /* W8A8 FP8 (per-tensor/channel scale): FP8 tensor cores (sm_89+), else W8A16 */
  GPUPLAN__W_INT8,   /* W8A8 INT8 (SmoothQuant-style): INT8 tensor cores */
  GPUPLAN__W_W8A16,  /* 8-bit weights, 16-bit math (weight-only) */
  GPUPLAN__W_AWQ,    /* 4-bit weights, group scales and zeros, 16-bit math */
  GPUPLAN__W_GPTQ,   /* 4-bit weights, group scales (and zeros), 16-bit math */
  GPUPLAN__W_NVFP4,  /* 4-bit floats, FP8 scale per 16: FP4 tensor cores (sm_100+) */
  GPUPLAN__W_COUNT
} gpuplan__wscheme;

const char *gpuplan__engine_name(gpuplan__engine e);
const char *gpuplan__wscheme_name(gpuplan__wscheme w);

/* --- constants ---------------------------------------------------------------- */

typedef struct gpuplan__serve_k {
  double hbm_eff;        /* share of DRAM bandwidth decode reaches (weights + KV) */
  double gemm_eff;       /* share of the dense peak the engine's GEMMs reach */
  double attn_eff;       /* prefill attention: share of the 16-bit dense peak */
  double fp8_rel;        /* FP8/INT8 W8A8 GEMMs relative to gemm_eff */
  double fp4_rel;        /* NVFP4 GEMMs relative to gemm_eff */
  double w4_rel;         /* W4A16 (AWQ/GPTQ, Marlin-class) GEMMs relative to gemm_eff, large batch */
  double moe_rel;        /* routed-expert (grouped) GEMMs relative to gemm_eff */
  double overlap_p;      /* p-norm combining memory and compute time of an iteration (1: sum, inf: max) */
  double gemm_half_tokens; /* tokens per iteration at which GEMM efficiency halves */
  double seq_s;          /* per running sequence per iteration: sampling, scheduling, detokenising */
  double layer_graph_s;  /* per layer per iteration with CUDA graphs (or a C++ runtime) */
  double layer_eager_s;  /* per layer per iteration launched eagerly (enforce_eager) */
  double iter_s[GPUPLAN__ENG_COUNT]; /* per iteration, each engine's scheduler */
  double ttft_s;         /* per request: admission, tokenisation, first-token return */
  double ar_fixed_s;     /* one all-reduce on NVLink/NVSwitch: launch and synchronisation */
  double pcie_hop_s;     /* one ring hop of an all-reduce over PCIe */
  double nvlink_eff;     /* share of the NVLink fabric's bandwidth an all-reduce reaches */
  double pcie_eff;       /* share of the PCIe fabric's bandwidth an all-reduce reaches */
  double trt_kv_eff;     /* TensorRT-LLM: share of the KV pool its scheduler fills with running requests */
  double cpu_bw_per_vcpu; /* CPU serving: sustained DRAM bandwidth per vCPU, B/s */
  double cpu_eff;        /* CPU serving: share of the vector FP32 peak GEMMs reach */
  double pp_eff;         /* pipeline-parallel serving: share of ideal stage overlap */
} gpuplan__serve_k;

void gpuplan__serve_k_default(gpuplan__serve_k *k);
/* name=value[,name=value...]; iter_s.vllm=... for one engine.  EINVAL naming the bad name. */
int gpuplan__serve_k_apply(gpuplan_ctx *ctx, gpuplan__serve_k *k, const char *spec);

/* --- the model --------------------------------------------------------------------- */

typedef struct gpuplan__smodel {
  char id[128];
  int encoder;            /* an encoder (BERT): no KV cache, no decode */
  double params;          /* published parameter count */
  double L, h, a, kv, d, f, V, E, k;
  int gated, tied;
  double attn_p;          /* attention parameters of one layer (scaled to params) */
  double mlp_p;           /* one expert's (or the dense) MLP parameters (scaled) */
  double emb_p;           /* the embedding (V x h) */
  double max_len;         /* the model's longest context */
} gpuplan__smodel;

/* From a catalog record (params_override > 0: scaled to that size). */
void gpuplan__smodel_from(gpuplan__smodel *m, const gpuplan_model *rec, double params_override);
/* From the shape alone (params <= 0: counted from the shape). */
void gpuplan__smodel_shape(gpuplan__smodel *m, const char *id, double params, int64_t L, int64_t h, int64_t a,
                           int64_t kv, int64_t f, int64_t V, int64_t E, int64_t topk, int gated, int encoder);

/* --- hardware ------------------------------------------------------------------- */

typedef struct gpuplan__shw {
  const gpuplan_gpu *gpu;      /* NULL: CPU serving */
  const gpuplan_node *node;    /* the node/VM when given (price, fabric, CPU) */
  double device_bytes;         /* the SKU's (or the slice's) memory */
  double visible_bytes;        /* what torch.cuda.mem_get_info reports as total */
  const char *visible_source;
  double bw;                   /* DRAM bandwidth, B/s */
  double f16, f8, i8, f4;      /* dense tensor peaks, FLOP/s (0: none) */
  const char *flops_source;    /* where a figure the catalog lacks came from */
  int cc_major, cc_minor;      /* compute capability */
  double link_bw;              /* one direction, per GPU, of the TP fabric */
  double link_lat;             /* its per-hop latency (catalog) */
  const char *link_name;       /* the fabric id: nvswitch4, nvlink3, pcie4, ... */
  int link_nvlink;             /* 1: NVLink/NVSwitch; 0: PCIe */
  int gpus_per_node;           /* GPUs in one node (TP stays inside it) */
  double price_per_gpu_hour;   /* NaN: unknown */
  double price_node_hour;      /* the node's price; NaN unknown */
  const char *price_node;      /* the node priced */
  const char *currency;
  /* CPU serving */
  double cpu_flops, cpu_bw, ram_bytes;
  int64_t vcpus;
} gpuplan__shw;

/* The serving view of a GPU SKU (visible memory, kernel figures the catalog
 * lacks, its fabric, the cheapest priced node holding it). */
int gpuplan__shw_gpu(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan_gpu *g, const gpuplan_node *node,
                     gpuplan__shw *out);
/* A CPU-only node. */
int gpuplan__shw_cpu(gpuplan_ctx *ctx, const gpuplan_node *node, const gpuplan__serve_k *k, gpuplan__shw *out);

/* --- a deployment ---------------------------------------------------------------- */

typedef struct gpuplan__scfg {
  gpuplan__engine engine;
  int ver[3];                  /* engine version; {0,0,0}: the latest modelled */
  const gpuplan__smodel *m;
  const gpuplan__shw *hw;
  const gpuplan__serve_k *k;
  int64_t tp, pp, ep;
  gpuplan__wscheme w;
  int64_t group;               /* quantisation group (AWQ/GPTQ) */
  gpuplan_dtype kv;            /* KV-cache type */
  int64_t max_len;             /* max_model_len: longest request (prompt + output) */
  int64_t block;               /* tokens per KV block */
  int paged;                   /* paged KV (blocks) or contiguous max_len reservation */
  double prefix_hit;           /* share of each prompt served from the prefix cache */
  double gpu_util;             /* vLLM gpu_memory_utilization (NaN: default) */
  double mem_frac;             /* SGLang mem_fraction_static (NaN: default) */
  double kv_free_frac;         /* TensorRT-LLM kv_cache_free_gpu_mem_fraction (NaN: default) */
  int64_t kv_max_tokens;       /* explicit KV pool (TRT max_tokens, SGLang max_total_tokens); 0: none */
  int64_t max_seqs;            /* max_num_seqs / max_batch_size / max_running_requests; 0: default */
  int64_t max_batched;         /* max_num_batched_tokens / max_num_tokens; 0: default */
  int chunked;                 /* chunked prefill: 1, 0, -1 (the engine's default) */
  int eager;                   /* no CUDA graphs */
  int64_t sched_steps;         /* vLLM --num-scheduler-steps */
  double non_torch;            /* bytes outside the engine's allocator; NaN: estimate */
  double graph_bytes;          /* CUDA graph pools; NaN: estimate */
  double visible_override;     /* the device total the engine sees; NaN: the SKU's */
} gpuplan__scfg;

/* Defaults for everything not given (NaN / 0 / -1 fields). */
void gpuplan__scfg_init(gpuplan__scfg *c);

/* --- memory ----------------------------------------------------------------- */

enum {
  GPUPLAN__SM_WEIGHTS = 0,
  GPUPLAN__SM_ACT,
  GPUPLAN__SM_NONTORCH,
  GPUPLAN__SM_KV,
  GPUPLAN__SM_GRAPHS,
  GPUPLAN__SM_COUNT
};

typedef struct gpuplan__smem {
  double visible;              /* device total the engine sees */
  double budget;               /* what the engine may use: util x visible, mem_frac x visible, ... */
  double item[GPUPLAN__SM_COUNT];
  const char *formula[GPUPLAN__SM_COUNT];
  const char *rule;            /* the engine's KV rule, in words */
  double kv_per_token;         /* bytes per token per GPU */
  double kv_blocks;            /* whole blocks (per GPU; every GPU of a replica holds the same) */
  double kv_tokens;            /* "GPU KV cache size: N tokens" */
  double max_concurrency;      /* kv_tokens / max_len */
  int64_t max_len;             /* resolved max_model_len */
  int64_t max_seqs;            /* resolved max_num_seqs */
  int64_t max_batched;         /* resolved max_num_batched_tokens (profile run) */
  int chunked;                 /* resolved chunked prefill */
  double total;                /* weights + act + non-torch + KV + graphs */
  double headroom;             /* visible - total (negative: out of memory) */
  int fits;                    /* weights fit and KV holds one max_len request */
  double weights_ok;           /* weights + act + non-torch <= budget */
} gpuplan__smem;

int gpuplan__serve_memory(gpuplan_ctx *ctx, const gpuplan__scfg *c, gpuplan__smem *out);
/* Bytes per token of KV per GPU (0 for encoders). */
double gpuplan__kv_per_token(const gpuplan__scfg *c);
/* Weight bytes per GPU, and of them the routed experts'. */
double gpuplan__weights_per_gpu(const gpuplan__scfg *c);
double gpuplan__expert_bytes_per_gpu(const gpuplan__scfg *c);

/* --- speed ------------------------------------------------------------------- */

/* One engine iteration (all pipeline stages of one token step) and its parts. */
typedef struct gpuplan__siter {
  double seconds;
  double weights_s, kv_s, compute_s, attn_s, comm_s, overhead_s;
  int compute_bound;
} gpuplan__siter;

/* ndec decode tokens at mean context ctx, plus npre prefill tokens of prompts of plen. */
void gpuplan__serve_iter(const gpuplan__scfg *c, double ndec, double ctx, double npre, double plen,
                         gpuplan__siter *out);

typedef enum {
  GPUPLAN__LOAD_OFFLINE = 0,   /* every request queued at once (max load) */
  GPUPLAN__LOAD_RATE,          /* Poisson arrivals */
  GPUPLAN__LOAD_CONCURRENCY,   /* N clients, each sends its next request when one completes */
  GPUPLAN__LOAD_BATCH          /* a static batch, prefilled then decoded together */
} gpuplan__load_kind;

typedef struct gpuplan__sload {
  gpuplan__load_kind kind;
  double rate;                 /* requests/s for this replica */
  double concurrency;          /* clients, or the static batch */
  double in, out;              /* tokens per request (means) */
  int exp_lengths;             /* lengths exponentially distributed around the means */
} gpuplan__sload;

enum { GPUPLAN__Q50 = 0, GPUPLAN__Q90, GPUPLAN__Q99, GPUPLAN__QN };

typedef struct gpuplan__sresult {
  double running;              /* mean sequences in decode */
  double batch_cap;            /* most sequences the KV cache and max_num_seqs admit */
  double ttft[GPUPLAN__QN], itl[GPUPLAN__QN], tpot[GPUPLAN__QN], e2e[GPUPLAN__QN];
  double ttft_mean, tpot_mean, e2e_mean;
  double req_s, out_tok_s, in_tok_s;
  double capacity_req_s;       /* the most requests/s this replica sustains */
  double prefill_share;        /* share of GPU time spent on prefill (cost attribution) */
  double prefill_tok_s;        /* prefill speed alone */
  int saturated;               /* the arrival rate exceeds capacity */
  gpuplan__siter decode;       /* one iteration at the operating point */
  double prefill_s;            /* the prefill of one mean prompt, alone */
} gpuplan__sresult;

int gpuplan__serve_eval(gpuplan_ctx *ctx, const gpuplan__scfg *c, const gpuplan__smem *mem,
                        const gpuplan__sload *load, gpuplan__sresult *out);

/* --- validation -------------------------------------------------------------- */

/* Score a serving calibration CSV (data/reference/serving_runs_calibration.csv's
 * columns) into a document of kind serve-validate.  rows: comma-separated ids or
 * NULL; constants: a gpuplan__serve_k_apply spec or NULL. */
int gpuplan__serve_validate(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *path, const char *rows,
                            const char *constants, int with_rows, gpuplan_doc **out);

#endif /* GPUPLAN_SERVE_INT_H */
