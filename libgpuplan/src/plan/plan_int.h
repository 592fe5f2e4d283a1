/*
 * plan_int.h: what the analytic memory model (memory.c) shares with the
 * step program (program.c), so that both count the same tensors.  Not
 * installed.
 *
 * A layer is described as the list of tensors PyTorch allocates for it,
 * each with its bytes per token of the micro-batch on this rank (tensor and
 * sequence parallelism applied) and its lifetime:
 *   KEEP      saved by autograd in forward, freed when the layer's backward runs
 *   TEMP      a forward temporary, freed right after the next op
 *   BWD       alive during the layer's backward (activation gradients)
 *   BWD_ATTN  alive during the attention part of the layer's backward
 *   BWD_MLP   alive during the MLP part of the layer's backward
 *   LOSS      the loss's intermediates (head only)
 *   PREV      the previous step's logits, still referenced by the loop (head only)
 * The analytic model adds the KEEP tensors over layers and micro-batches in
 * flight, and takes BWD + max(BWD_ATTN, BWD_MLP) as the backward working
 * set; the step program allocates and frees each tensor in that order.
 */
#ifndef GPUPLAN_PLAN_INT_H
#define GPUPLAN_PLAN_INT_H

#include "common/internal.h"

enum { GPUPLAN__KEEP = 0, GPUPLAN__TEMP, GPUPLAN__BWD, GPUPLAN__BWD_ATTN, GPUPLAN__BWD_MLP,
       GPUPLAN__LOSS, /* the loss's intermediates, alive from the loss to the start of backward */
       GPUPLAN__PREV  /* the previous step's logits, still referenced by the training loop */ };

/* Layer kinds: a dense layer, an MoE layer, an encoder-decoder's decoder layer. */
enum { GPUPLAN__LAYER_DENSE = 0, GPUPLAN__LAYER_MOE = 1, GPUPLAN__LAYER_DECODER = 2 };

#define GPUPLAN__MAX_ACTS 48

typedef struct gpuplan__act {
  const char *name;  /* static */
  double per_token;  /* bytes per token of one micro-batch on this rank */
  int kind;          /* GPUPLAN__KEEP, ... */
} gpuplan__act;

/* The tensors of one layer of the given kind under o's implementation,
 * precision, recompute, tp/sp and fine-tuning.  Returns the count (at most
 * GPUPLAN__MAX_ACTS).  With full recompute the KEEP list is the checkpoint
 * (the layer input); full = 1 asks for the rematerialised layer instead. */
int gpuplan__layer_acts(const gpuplan_model *m, const gpuplan_memory_options *o, int layer_kind, int full,
                        gpuplan__act *out);

/* The last stage's tensors after the layers (final norm, logits, loss) and
 * the first stage's before them (input ids, embeddings), per token. */
int gpuplan__head_acts(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__act *out);
int gpuplan__embed_acts(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__act *out);

/* The sum of the tensors of one kind. */
double gpuplan__acts_sum(const gpuplan__act *a, int n, int kind);

/* The implementation, convention-dependent defaults resolved. */
int gpuplan__grads_persist(const gpuplan_memory_options *o);
gpuplan_opt_impl gpuplan__opt_impl(const gpuplan_memory_options *o);
int gpuplan__prev_logits(const gpuplan_memory_options *o);

/* The matrix multiplications of one layer, per token, as the shape and the
 * version-2 extensions (expert width, shared experts, MLA, encoder-decoder)
 * give them: the performance model's FLOPs and GEMM times both come from
 * this list, so they cannot disagree with the parameter count. */
enum { GPUPLAN__SPLIT_N = 0, /* column-parallel: tensor parallelism divides the output width */
       GPUPLAN__SPLIT_K = 1, /* row-parallel: it divides the reduction */
       GPUPLAN__SPLIT_NONE = 2 /* replicated (MLA down-projections, the router) */ };
#define GPUPLAN__MAX_GEMMS 12
typedef struct gpuplan__gemm {
  const char *name; /* static */
  double n, k;      /* output width and reduction of one token's row */
  double count;     /* how many such GEMMs every token passes (shared experts: their number) */
  int routed;       /* 1: a routed expert's (each token passes top_k of the experts) */
  int split;        /* GPUPLAN__SPLIT_* */
} gpuplan__gemm;

/* One layer's model shape for the performance model. */
typedef struct gpuplan__layer_mix {
  double dense, moe, decoder; /* how many layers of each kind (gpuplan__layer_gemms' kinds) */
  double experts, top_k;      /* routed experts and how many each token passes (1 and 1 when dense) */
  double mlp_width[3];        /* the MLP width a token passes through per kind (top_k x expert + shared) */
  double qk_dim, v_dim;       /* per head: the query/key and value widths the scores use */
  int causal;                 /* 0 for encoder-only models (bidirectional self-attention) */
  gpuplan__gemm gemm[3][GPUPLAN__MAX_GEMMS]; /* each kind's GEMMs */
  int ngemm[3];
} gpuplan__layer_mix;

/* The stack's layer kinds and their GEMMs, from one read of the shape. */
void gpuplan__layer_mix_of(const gpuplan_model *m, const gpuplan_memory_options *o, gpuplan__layer_mix *mix);

/* The memory the driver reports for a card (the planner's capacity, the
 * simulated card's total, nvidia-smi's memory.total): the job's gpu_total
 * when given, else gpuplan_gpu_usable_bytes (NVML's total where the catalog
 * has it, else the marketed size); *source says which (memory.c). */
uint64_t gpuplan__gpu_total(const gpuplan_gpu *g, const gpuplan_memory_options *o, const char **source);

/* gpuplan_simulate, and torch.cuda.memory_summary() of the allocator at the
 * end of the run (the simulate command's summary option): with want set,
 * *text (ctx-allocated, the caller frees it) in the layout of the release. */
typedef struct gpuplan__sim_summary {
  int want, abbreviated;
  gpuplan_torch_version layout;
  char *text;
  int want_stats;                /* copy memory_stats() at the end into stats */
  gpuplan_alloc_stats stats;
  /* out, cuda_graph: the captured step's pool at the end of the run */
  int graph_captured;            /* the capture completed (no OOM in it) */
  uint64_t graph_reserved;       /* its segments */
  uint64_t graph_allocated;      /* ... of which allocated: the graph's static outputs */
} gpuplan__sim_summary;
int gpuplan__simulate_summary(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                              const gpuplan_memory_options *options, const gpuplan_simulate_options *sim,
                              gpuplan_simulate_result *out, gpuplan__sim_summary *sum);

/* gpuplan_mock_simulate with memory_summary() (sys/mock.c; sum may be NULL). */
int gpuplan__mock_simulate(gpuplan_ctx *ctx, const gpuplan_model *model, const gpuplan_gpu *gpu,
                           const gpuplan_memory_options *options, const gpuplan_simulate_options *so_in,
                           uint64_t other_bytes, gpuplan_simulate_result *out, gpuplan__sim_summary *sum);

#endif /* GPUPLAN_PLAN_INT_H */
