/*
 * cmd_train.c: the planning commands: plan, perf, search (and search
 * --across) and simulate.  Every rule that turns a job's options into the
 * model's inputs lives here, once: the model (a name or a size), the GPU or
 * the node (vGPU slices, CPU-only VMs), the GPU count and layout, the FSDP
 * convention, explicit fabrics and NICs, and the defaults that applied.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuplan/backend.h"
#include "gpuplan/mock.h"
#include "alloc/alloc_int.h"
#include "job/job_int.h"
#include "job/tools_int.h"
#include "plan/plan_int.h"

/* A job resolved for the planning commands. */
typedef struct train_job {
  gpuplan__jobspec js;            /* model, gpu, node, gpus, options */
  const char *model_arg;         /* as given ("7B" or a catalog id) */
  int cpu_only;                  /* a CPU-only node (perf only) */
  const gpuplan_node *cpu_node;
  const gpuplan_model *cpu_model;
  int64_t max_gpus;
  gpuplan__model_res mr;         /* how the model was described (job/model_resolve.c) */
  int precision_swapped;         /* a defaulted bf16 became fp16-mixed: the SKU has no bf16 */
} train_job;

static int64_t mopt(const gpuplan_job *j, int id, int64_t dflt) { return gpuplan__job_int(j, MOPT(id), dflt); }
static int misset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, MOPT(id)); }

/* lora_modules: q,k,v,o,gate,up,down (or HF's q_proj, ...), all / all-linear. */
static int lora_modules(gpuplan_job *j, unsigned *out) {
  static const struct { const char *name; unsigned bit; } mods[] = {
    {"q", GPUPLAN_LORA_Q}, {"k", GPUPLAN_LORA_K}, {"v", GPUPLAN_LORA_V}, {"o", GPUPLAN_LORA_O},
    {"gate", GPUPLAN_LORA_GATE}, {"up", GPUPLAN_LORA_UP}, {"down", GPUPLAN_LORA_DOWN},
    {"all", GPUPLAN_LORA_ALL}, {"all-linear", GPUPLAN_LORA_ALL}};
  const char *p = gpuplan__job_str(j, MOPT(M_LORA_MODULES), NULL);
  *out = 0;
  while (p && *p) {
    char w[32];
    size_t n = strcspn(p, ", "), i, k;
    if (n && n < sizeof w) {
      memcpy(w, p, n);
      w[n] = 0;
      if (n > 5 && !strcmp(w + n - 5, "_proj")) w[n - 5] = 0;
      for (k = 0; w[k]; k++) if (w[k] == '_') w[k] = '-';
      for (i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (!strcmp(w, mods[i].name)) break;
      if (i == sizeof mods / sizeof mods[0])
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_LORA_MODULES),
                                  "'%s' is not one of q, k, v, o, gate, up, down, all", w);
      *out |= mods[i].bit;
    } else if (n) {
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_LORA_MODULES), "'%.*s' is not a module name", (int)n, p);
    }
    p += n;
    p += strspn(p, ", ");
  }
  return GPUPLAN_OK;
}

static int64_t iopt(const gpuplan_job *j, int id, int64_t dflt) { return gpuplan__job_int(j, JOPT(id), dflt); }
static int isset(const gpuplan_job *j, int id) { return gpuplan__job_isset(j, JOPT(id)); }
static const char *sopt(const gpuplan_job *j, int id) { return gpuplan__job_str(j, JOPT(id), NULL); }

/* The job's options onto the memory model's. */
static int memory_options(gpuplan_job *j, gpuplan_memory_options *o) {
  gpuplan_memory_options d = GPUPLAN_MEMORY_OPTIONS_INIT;
  int modes = isset(j, J_ZERO) + isset(j, J_FSDP) + isset(j, J_DP_MODE);
  *o = d;
  o->workload = (gpuplan_workload)iopt(j, J_WORKLOAD, GPUPLAN_TRAIN);
  o->micro_batch = iopt(j, J_MICRO_BATCH, 1);
  o->seq_len = iopt(j, J_SEQ, 0);
  o->microbatches = iopt(j, J_GRAD_ACCUM, 0);
  o->precision = (gpuplan_precision)iopt(j, J_PRECISION, GPUPLAN_PREC_BF16_MIXED);
  o->optimizer = (gpuplan_optimizer)iopt(j, J_OPTIMIZER, GPUPLAN_OPT_ADAMW);
  o->grad_bytes = (int)iopt(j, J_GRAD_BYTES, 0);
  o->recompute = (gpuplan_recompute)iopt(j, J_RECOMPUTE, GPUPLAN_RECOMPUTE_NONE);
  o->flash_attention = (int)iopt(j, J_FLASH, 1);
  o->dropout = (int)iopt(j, J_DROPOUT, 1);
  o->offload_optimizer = (int)iopt(j, J_OFFLOAD_OPTIMIZER, 0);
  o->offload_params = (int)iopt(j, J_OFFLOAD_PARAMS, 0);
  o->tp = iopt(j, J_TP, 1);
  o->pp = iopt(j, J_PP, 1);
  o->dp = iopt(j, J_DP, 1);
  o->cp = iopt(j, J_CP, 1);
  o->ep = iopt(j, J_EP, 1);
  o->sequence_parallel = (int)iopt(j, J_SP, 0);
  if (modes > 1)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL,
                          "zero, fsdp, dp_mode: give one way of sharding (zero %s, fsdp %s, dp_mode %s)",
                          isset(j, J_ZERO) ? "set" : "unset", isset(j, J_FSDP) ? "set" : "unset",
                          isset(j, J_DP_MODE) ? "set" : "unset");
  if (isset(j, J_ZERO)) o->dp_mode = (gpuplan_dp_mode)iopt(j, J_ZERO, 0);
  if (isset(j, J_FSDP)) o->dp_mode = (gpuplan_dp_mode)(GPUPLAN_DP_FSDP_FULL + iopt(j, J_FSDP, 0));
  if (isset(j, J_DP_MODE)) o->dp_mode = (gpuplan_dp_mode)iopt(j, J_DP_MODE, 0);
  /* PyTorch FSDP keeps fp32 sharded parameters and gradients: its own
   * convention, unless the job names another. */
  if (isset(j, J_CONVENTION)) o->convention = (gpuplan_convention)iopt(j, J_CONVENTION, 0);
  else if (o->dp_mode >= GPUPLAN_DP_FSDP_FULL) o->convention = GPUPLAN_CONV_FSDP;
  else o->convention = GPUPLAN_CONV_DEEPSPEED;
  o->shard_group = iopt(j, J_SHARD_GROUP, 0);
  o->schedule = (gpuplan_schedule)iopt(j, J_SCHEDULE, GPUPLAN_SCHED_1F1B);
  o->vpp = iopt(j, J_VPP, 1);
  o->first_stage_layers = iopt(j, J_FIRST_STAGE_LAYERS, 0);
  o->last_stage_layers = iopt(j, J_LAST_STAGE_LAYERS, 0);
  o->prefetch = iopt(j, J_PREFETCH, 1);
  o->bucket_bytes = iopt(j, J_BUCKET, -1);
  o->weight_dtype = (gpuplan_dtype)iopt(j, J_WEIGHTS, GPUPLAN_DTYPE_BF16);
  o->kv_dtype = (gpuplan_dtype)iopt(j, J_KV, GPUPLAN_DTYPE_BF16);
  o->context_len = iopt(j, J_CONTEXT, 0);
  o->batch = iopt(j, J_BATCH, 1);
  o->paged = (int)iopt(j, J_PAGED, 0);
  o->block_tokens = iopt(j, J_BLOCK, 16);
  o->group_size = iopt(j, J_GROUP, 128);
  o->context_bytes = iopt(j, J_CUDA_CONTEXT, -1);
  o->nccl_bytes = iopt(j, J_NCCL, -1);
  o->workspace_bytes = iopt(j, J_WORKSPACE, -1);
  /* how the code keeps activations and which step is sized (opts_model.c) */
  o->precision_auto = !isset(j, J_PRECISION);
  o->impl = (gpuplan_impl)mopt(j, M_IMPL, GPUPLAN_IMPL_FUSED); /* the model source's default: resolve() */
  o->phase = (gpuplan_phase)mopt(j, M_PHASE, GPUPLAN_PHASE_STEADY);
  o->grads_persist = misset(j, M_ZERO_GRAD) ? (int)mopt(j, M_ZERO_GRAD, 0) : -1;
  if (isset(j, J_KEEP_GRADS) && iopt(j, J_KEEP_GRADS, 0)) {
    if (misset(j, M_ZERO_GRAD) && !o->grads_persist)
      return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "keep_grads, zero_grad: keep_grads keeps them, zero_grad none frees them");
    o->grads_persist = 1;
  }
  o->optimizer_impl = misset(j, M_OPTIMIZER_IMPL) ? (gpuplan_opt_impl)mopt(j, M_OPTIMIZER_IMPL, 0) : GPUPLAN_OPTIMPL_DEFAULT;
  o->prev_logits = misset(j, M_PREV_LOGITS) ? (int)mopt(j, M_PREV_LOGITS, 0) : -1;
  o->softmax_saves_input = (int)mopt(j, M_SOFTMAX_INPUT, 0);
  o->gpu_total_bytes = (uint64_t)mopt(j, M_GPU_TOTAL, 0);
  /* parameter-efficient fine-tuning */
  o->finetune = (gpuplan_finetune)mopt(j, M_FINETUNE, GPUPLAN_FT_FULL);
  o->lora_rank = mopt(j, M_LORA_RANK, o->finetune == GPUPLAN_FT_QLORA ? 64 : 16);
  GPUPLAN_TRY(lora_modules(j, &o->lora_modules));
  {
    static const gpuplan_dtype base[] = {GPUPLAN_DTYPE_BF16, GPUPLAN_DTYPE_FP16, GPUPLAN_DTYPE_INT8, GPUPLAN_DTYPE_NF4};
    int64_t b = mopt(j, M_BASE_DTYPE, o->finetune == GPUPLAN_FT_QLORA ? 3 : 0);
    o->base_dtype = base[b >= 0 && b < 4 ? b : 0];
    if (o->finetune == GPUPLAN_FT_QLORA && o->base_dtype != GPUPLAN_DTYPE_NF4)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_BASE_DTYPE), "QLoRA's base is nf4 (give finetune lora for %s)",
                                gpuplan_dtype_name(o->base_dtype));
  }
  o->double_quant = (int)mopt(j, M_DOUBLE_QUANT, 1);
  o->paged_optimizer = (int)mopt(j, M_PAGED_OPTIMIZER, o->finetune == GPUPLAN_FT_QLORA);
  if (o->finetune == GPUPLAN_FT_FULL) {
    static const int lora_only[] = {M_LORA_RANK, M_LORA_MODULES, M_BASE_DTYPE, M_DOUBLE_QUANT};
    size_t k;
    for (k = 0; k < sizeof lora_only / sizeof lora_only[0]; k++)
      if (misset(j, lora_only[k]))
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(lora_only[k]), "needs finetune lora or qlora");
  }
  return GPUPLAN_OK;
}

/* After the model and the GPU are known: the model source's implementation
 * and accounting, and what the SKU can run. */
static void apply_model_defaults(gpuplan_job *j, train_job *t) {
  gpuplan_memory_options *o = &t->js.options;
  const gpuplan_gpu *g = t->js.gpu;
  if (!misset(j, M_IMPL)) {
    o->impl = t->mr.impl;
    /* Tensor, pipeline, sequence or context parallelism is Megatron-core's
     * (or NeMo's): its fused kernels keep Korthikanti's tensors. */
    if (o->impl == GPUPLAN_IMPL_EAGER && strcmp(t->mr.source, "module") &&
        (o->tp > 1 || o->pp > 1 || o->cp > 1 || o->sequence_parallel)) {
      o->impl = GPUPLAN_IMPL_FUSED;
      t->mr.impl = GPUPLAN_IMPL_FUSED;
      t->mr.impl_why = "fused: tensor/pipeline/sequence/context parallelism is Megatron-core's, with its fused kernels "
                       "(Korthikanti's count)";
    }
  }
  /* Eager PyTorch mixed precision is torch.autocast over fp32 weights: the
   * HF Trainer's accounting, unless the job shards or names another. */
  if (!isset(j, J_CONVENTION) && !isset(j, J_ZERO) && !isset(j, J_FSDP) && !isset(j, J_DP_MODE) &&
      o->impl != GPUPLAN_IMPL_FUSED)
    o->convention = GPUPLAN_CONV_HF;
  /* The model's own training dropout (Llama-style models train without it: MM-11). */
  if (!isset(j, J_DROPOUT) && t->mr.dropout >= 0) o->dropout = t->mr.dropout;
  if (g && o->precision_auto && gpuplan_gpu_cc(g) > 0 && gpuplan_gpu_cc(g) < 80 &&
      (o->precision == GPUPLAN_PREC_BF16_MIXED || o->precision == GPUPLAN_PREC_BF16)) {
    o->precision = GPUPLAN_PREC_FP16_MIXED;
    t->precision_swapped = 1;
  }
}

/* A vGPU slice computes as its share of the card (time-sliced): scale the
 * node's copy of the SKU. */
static void scale_slice(train_job *t) {
  const gpuplan_node *n = t->js.node;
  gpuplan_gpu *g = &t->js.node_gpu;
  double f;
  if (!n || t->js.gpu != &t->js.node_gpu || !(n->gpu_fraction > 0) || n->gpu_fraction >= 1) return;
  f = n->gpu_fraction;
  g->fp64_flops *= f;
  g->fp64_tensor_flops *= f;
  g->fp32_flops *= f;
  g->tf32_flops *= f;
  g->bf16_flops *= f;
  g->fp16_flops *= f;
  g->fp8_flops *= f;
  g->int8_ops *= f;
  g->fp4_flops *= f;
  g->matmul_bf16_flops *= f;
  g->matmul_fp8_flops *= f;
  g->mem_bw_bytes_s *= f;
}

/* Resolve model, hardware and layout.  cpu_ok: a CPU-only node is allowed (perf). */
static int resolve(gpuplan_job *j, train_job *t, int cpu_ok) {
  const char *model = sopt(j, J_MODEL), *gpu = sopt(j, J_GPU), *node = sopt(j, J_NODE);
  int64_t gpus = iopt(j, J_GPUS, 0), nodes = iopt(j, J_NODES, 1), per_node = iopt(j, J_PER_NODE, 8);
  int rc;
  memset(t, 0, sizeof *t);
  if (!gpu && !node)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "gpu, node: needs a GPU SKU (gpu) or a node/VM (node)");
  if (gpu && node) return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "gpu, node: give a GPU or a node, not both");
  if (isset(j, J_NODES) && !node)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_NODES), "needs a node (with gpu, use gpus and per_node)");
  if (isset(j, J_PER_NODE) && node)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_PER_NODE),
                              "a node has its own GPU count; per_node is for a bare gpu");
  GPUPLAN_TRY(memory_options(j, &t->js.options));
  GPUPLAN_TRY(gpuplan__model_resolve(j, &t->mr, &t->js.options));
  /* perf and search (the commands with a global batch) need FLOPs, which a traced module has not */
  if (!strcmp(t->mr.source, "module") && (cpu_ok || isset(j, J_GLOBAL_BATCH)))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, MOPT(M_MODULE_PARAMS),
                              "a traced module has a memory model but no FLOP count: plan and simulate take it, "
                              "perf and search do not");
  t->model_arg = model ? model : t->mr.label;
  if (node) {
    const gpuplan_node *n;
    GPUPLAN_TRY(gpuplan_catalog_node(j->cat, node, &n));
    if (!n->gpu_id) {
      if (!cpu_ok)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_NODE),
                                  "%s has no GPU (a CPU-only size): only perf models it", n->name);
      /* A CPU-only VM: one data-parallel rank per node, fp32. */
      t->cpu_only = 1;
      t->cpu_node = n;
      t->cpu_model = t->mr.m;
      if (t->js.options.tp * t->js.options.pp * t->js.options.cp > 1)
        return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "tp, pp, cp: a CPU-only cluster runs data parallel only");
      t->js.options.dp = nodes;
      t->js.options.precision = GPUPLAN_PREC_FP32;
      t->js.model = t->cpu_model;
      t->js.nodes = nodes;
      t->js.gpus = nodes;
      snprintf(t->js.model_name, sizeof t->js.model_name, "%s", t->mr.label);
      apply_model_defaults(j, t);
      t->js.options.precision = GPUPLAN_PREC_FP32;
      return GPUPLAN_OK;
    }
    if (gpus && gpus > n->gpu_count * nodes)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_GPUS),
                                "%lld GPUs do not fit on %lld x %s (%lld GPUs each); raise nodes",
                                (long long)gpus, (long long)nodes, n->name, (long long)n->gpu_count);
  }
  /* The hardware and layout: gpuplan__job_resolve looks a catalog model up
   * by name, so a described model goes in as its base (or any row) and is
   * swapped in afterwards. */
  rc = gpuplan__job_resolve(j->ctx, j->cat, t->mr.base ? t->mr.base->id
                                                     : ((const gpuplan_model *)gpuplan_catalog_at(j->cat, GPUPLAN_KIND_MODEL, 0))->id,
                           gpu, node, gpus, nodes, per_node, isset(j, J_DP), &t->js);
  if (rc) return rc;
  t->js.model = t->mr.m;
  snprintf(t->js.model_name, sizeof t->js.model_name, "%s", t->mr.label);
  scale_slice(t);
  apply_model_defaults(j, t);
  t->max_gpus = iopt(j, J_MAX_GPUS, t->js.gpus > 8 ? t->js.gpus : 8);
  return GPUPLAN_OK;
}

/* The cluster, with explicit fabrics and NICs over what the node or SKU implies. */
static int cluster_of(gpuplan_job *j, train_job *t, gpuplan_cluster *cl) {
  const char *intra = sopt(j, J_INTRA), *inter = sopt(j, J_INTER);
  const gpuplan_fabric *f;
  if (t->cpu_only) {
    GPUPLAN_TRY(gpuplan_cluster_from_node(j->ctx, j->cat, t->cpu_node, t->js.nodes, cl));
  } else {
    GPUPLAN_TRY(gpuplan__job_cluster(j->ctx, j->cat, &t->js, cl));
  }
  if (intra) {
    GPUPLAN_TRY(gpuplan_catalog_fabric(j->cat, intra, &f));
    if (strcmp(f->scope, "intra") != 0)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_INTRA), "%s is a fabric between nodes (scope %s)",
                                f->id, f->scope);
    cl->intra_bw_bytes_s = f->bw_bytes_s;
    cl->intra_latency_s = f->latency_s;
    cl->intra_name = strcmp(f->kind, "pcie") == 0 ? "pcie" : f->id;
  }
  if (inter || isset(j, J_NICS) || isset(j, J_NIC_GBPS)) {
    double per_nic = cl->inter_bw_bytes_s / (double)cl->gpus_per_node;
    double n = isset(j, J_NICS) ? (double)iopt(j, J_NICS, 1) : (double)cl->gpus_per_node;
    if (inter) {
      GPUPLAN_TRY(gpuplan_catalog_fabric(j->cat, inter, &f));
      if (strcmp(f->scope, "inter") != 0)
        return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_INTER), "%s is a fabric inside a node (scope %s)",
                                  f->id, f->scope);
      per_nic = f->bw_bytes_s;
      cl->inter_latency_s = f->latency_s;
      cl->inter_name = f->id;
    }
    if (isset(j, J_NIC_GBPS)) per_nic = gpuplan__job_real(j, JOPT(J_NIC_GBPS), 0) * 1e9 / 8;
    cl->inter_bw_bytes_s = n * per_nic;
  }
  return GPUPLAN_OK;
}

/* --- document pieces -------------------------------------------------------- */

static const char *model_label(const train_job *t) { return t->js.model_name; }

static void put_options(gpuplan__docb *b, const gpuplan_memory_options *o, const gpuplan_model *m) {
  gpuplan__doc_obj(b, "options");
  gpuplan__doc_str(b, "workload", o->workload == GPUPLAN_TRAIN ? "train" : "infer");
  if (o->workload == GPUPLAN_TRAIN) {
    gpuplan__doc_str(b, "precision", gpuplan_precision_name(o->precision));
    gpuplan__doc_str(b, "optimizer", gpuplan_optimizer_name(o->optimizer));
    gpuplan__doc_str(b, "convention", gpuplan_convention_name(o->convention));
    if (o->grad_bytes) gpuplan__doc_int(b, "grad_bytes", o->grad_bytes);
    else gpuplan__doc_null(b, "grad_bytes");
    gpuplan__doc_str(b, "recompute", gpuplan_recompute_name(o->recompute));
    gpuplan__doc_int(b, "micro_batch", o->micro_batch);
    gpuplan__doc_int(b, "seq_len", o->seq_len ? o->seq_len : m->seq_len);
    gpuplan__doc_int(b, "grad_accum", o->microbatches ? o->microbatches : o->pp);
    gpuplan__doc_bool(b, "flash_attention", o->flash_attention);
    gpuplan__doc_bool(b, "dropout", o->dropout);
    gpuplan__doc_bool(b, "offload_optimizer", o->offload_optimizer);
    gpuplan__doc_bool(b, "offload_params", o->offload_params);
    gpuplan__doc_str(b, "phase", o->phase == GPUPLAN_PHASE_FIRST ? "first" : o->phase == GPUPLAN_PHASE_FORWARD ? "forward" : "steady");
    gpuplan__doc_str(b, "optimizer_impl", gpuplan_opt_impl_name(gpuplan__opt_impl(o)));
    gpuplan__doc_bool(b, "grads_persist", gpuplan__grads_persist(o));
    gpuplan__doc_str(b, "finetune", gpuplan_finetune_name(o->finetune));
    if (o->finetune != GPUPLAN_FT_FULL) {
      gpuplan__doc_int(b, "lora_rank", o->lora_rank);
      gpuplan__doc_str(b, "base_dtype", gpuplan_dtype_name(o->finetune == GPUPLAN_FT_QLORA ? GPUPLAN_DTYPE_NF4 : o->base_dtype));
      gpuplan__doc_bool(b, "paged_optimizer", o->paged_optimizer);
    } else {
      gpuplan__doc_null(b, "lora_rank");
      gpuplan__doc_null(b, "base_dtype");
      gpuplan__doc_null(b, "paged_optimizer");
    }
  } else {
    gpuplan__doc_str(b, "weight_dtype", gpuplan_dtype_name(o->weight_dtype));
    gpuplan__doc_str(b, "kv_dtype", gpuplan_dtype_name(o->kv_dtype));
    gpuplan__doc_int(b, "context_len",
                     o->context_len ? o->context_len
                                    : (isfinite(m->max_seq_len) ? (int64_t)m->max_seq_len : m->seq_len));
    gpuplan__doc_int(b, "batch", o->batch);
    gpuplan__doc_bool(b, "paged", o->paged);
    gpuplan__doc_int(b, "block_tokens", o->block_tokens);
  }
  gpuplan__doc_int(b, "tp", o->tp);
  gpuplan__doc_int(b, "pp", o->pp);
  gpuplan__doc_int(b, "dp", o->dp);
  gpuplan__doc_int(b, "cp", o->cp);
  gpuplan__doc_int(b, "ep", o->ep);
  gpuplan__doc_bool(b, "sequence_parallel", o->sequence_parallel);
  gpuplan__doc_str(b, "dp_mode", gpuplan_dp_mode_name(o->dp_mode));
  gpuplan__doc_str(b, "schedule", gpuplan_schedule_name(o->schedule));
  gpuplan__doc_int(b, "vpp", o->vpp);
  gpuplan__doc_end(b);
}

/* The value an option resolved to, in words. */
static void resolved_text(int id, const gpuplan_memory_options *o, const gpuplan_model *m, char *buf, size_t cap) {
  switch (id) {
  case J_PRECISION: snprintf(buf, cap, "%s", gpuplan_precision_name(o->precision)); break;
  case J_OPTIMIZER: snprintf(buf, cap, "%s", gpuplan_optimizer_name(o->optimizer)); break;
  case J_CONVENTION: snprintf(buf, cap, "%s", gpuplan_convention_name(o->convention)); break;
  case J_MICRO_BATCH: snprintf(buf, cap, "%lld", (long long)o->micro_batch); break;
  case J_SEQ: snprintf(buf, cap, "%lld (the model's)", (long long)(o->seq_len ? o->seq_len : m->seq_len)); break;
  case J_GRAD_ACCUM: snprintf(buf, cap, "%lld (pp)", (long long)(o->microbatches ? o->microbatches : o->pp)); break;
  case J_RECOMPUTE: snprintf(buf, cap, "%s", gpuplan_recompute_name(o->recompute)); break;
  case J_FLASH: snprintf(buf, cap, "%s", o->flash_attention ? "true" : "false"); break;
  case J_DROPOUT: snprintf(buf, cap, "%s", o->dropout ? "true" : "false"); break;
  case J_WEIGHTS: snprintf(buf, cap, "%s", gpuplan_dtype_name(o->weight_dtype)); break;
  case J_KV: snprintf(buf, cap, "%s", gpuplan_dtype_name(o->kv_dtype)); break;
  case J_CONTEXT:
    snprintf(buf, cap, "%lld (the model's maximum)",
             (long long)(o->context_len ? o->context_len
                                        : (isfinite(m->max_seq_len) ? (int64_t)m->max_seq_len : m->seq_len)));
    break;
  case J_BATCH: snprintf(buf, cap, "%lld", (long long)o->batch); break;
  case J_PAGED: snprintf(buf, cap, "%s", o->paged ? "true" : "false"); break;
  default: snprintf(buf, cap, "?"); break;
  }
}

/* The defaults that applied, so that no assumption is silent. */
static void put_default(gpuplan__docb *b, const char *option, const char *value) {
  gpuplan__doc_obj(b, NULL);
  gpuplan__doc_str(b, "option", option);
  gpuplan__doc_str(b, "value", value);
  gpuplan__doc_end(b);
}

static void put_defaults(gpuplan__docb *b, gpuplan_job *j, const train_job *t) {
  static const int train_ids[] = {J_PRECISION, J_OPTIMIZER, J_CONVENTION, J_MICRO_BATCH, J_SEQ, J_GRAD_ACCUM,
                                  J_RECOMPUTE, J_FLASH, J_DROPOUT};
  static const int infer_ids[] = {J_WEIGHTS, J_KV, J_CONTEXT, J_BATCH, J_PAGED};
  const gpuplan_memory_options *o = &t->js.options;
  const gpuplan_model *m = t->js.model;
  const int *ids = o->workload == GPUPLAN_TRAIN ? train_ids : infer_ids;
  size_t n = o->workload == GPUPLAN_TRAIN ? sizeof train_ids / sizeof *ids : sizeof infer_ids / sizeof *ids, i;
  char text[160];
  int k;
  gpuplan__doc_arr(b, "defaults");
  for (i = 0; i < n; i++) {
    const gpuplan_option_info *opt = JOPT(ids[i]);
    int dup = 0;
    if (gpuplan__job_isset(j, opt)) continue;
    for (k = 0; k < t->mr.ndflt; k++)
      if (!strcmp(t->mr.dflt_option[k], opt->name)) dup = 1;
    if (dup) continue;
    resolved_text(ids[i], o, m, text, sizeof text);
    if (ids[i] == J_PRECISION && t->precision_swapped)
      snprintf(text, sizeof text, "%s (the %s has no bf16: compute capability below 8.0)",
               gpuplan_precision_name(o->precision), t->js.gpu->name);
    if (ids[i] == J_DROPOUT && t->mr.dropout >= 0)
      snprintf(text, sizeof text, "%s (the model's: %s)", o->dropout ? "true" : "false",
               t->mr.dropout ? "it trains with dropout" : "it trains without dropout");
    if (ids[i] == J_CONVENTION && o->convention == GPUPLAN_CONV_HF && !gpuplan__job_isset(j, MOPT(M_MODULE_PARAMS)))
      snprintf(text, sizeof text, "hf (eager PyTorch: mixed precision is torch.autocast over fp32 weights)");
    put_default(b, opt->name, text);
  }
  if (o->workload == GPUPLAN_TRAIN && !gpuplan__job_isset(j, MOPT(M_IMPL)))
    put_default(b, MOPT(M_IMPL)->name, t->mr.impl_why);
  for (k = 0; k < t->mr.ndflt; k++) put_default(b, t->mr.dflt_option[k], t->mr.dflt_value[k]);
  gpuplan__doc_end(b);
}

static void put_head(gpuplan__docb *b, gpuplan_job *j, const train_job *t, double params) {
  const gpuplan_node *node = t->cpu_only ? t->cpu_node : t->js.node;
  const gpuplan_memory_options *o = &t->js.options;
  gpuplan__doc_str(b, "model", model_label(t));
  gpuplan__doc_str(b, "model_source", t->mr.source);
  if (t->mr.base && (!strcmp(t->mr.source, "size") || !strcmp(t->mr.source, "shape")))
    gpuplan__doc_str(b, "shape_of", t->mr.base->id);
  gpuplan__doc_str(b, "model_note", t->mr.note[0] ? t->mr.note : NULL);
  gpuplan__doc_real(b, "params", params);
  gpuplan__doc_int(b, "layers", o->module.params > 0 ? 0 : t->js.model->layers);
  gpuplan__doc_str(b, "arch", o->module.params > 0 ? "module" : t->js.model->arch);
  gpuplan__doc_str(b, "impl", gpuplan_impl_name(o->impl));
  gpuplan__doc_str(b, "impl_why", gpuplan__job_isset(j, MOPT(M_IMPL)) ? "given" : t->mr.impl_why);
  if (t->cpu_only) {
    gpuplan__doc_null(b, "gpu");
    gpuplan__doc_null(b, "gpu_name");
    gpuplan__doc_null(b, "gpu_memory_bytes");
    gpuplan__doc_null(b, "gpu_usable_bytes");
    gpuplan__doc_null(b, "gpu_usable_source");
    gpuplan__doc_null(b, "compute_capability");
    gpuplan__doc_null(b, "attention");
  } else {
    const char *src;
    uint64_t usable = gpuplan__gpu_total(t->js.gpu, o, &src);
    int cc = gpuplan_gpu_cc(t->js.gpu);
    gpuplan__doc_str(b, "gpu", t->js.gpu->id);
    gpuplan__doc_str(b, "gpu_name", t->js.gpu->name);
    gpuplan__doc_uint(b, "gpu_memory_bytes", t->js.gpu->memory_bytes);
    gpuplan__doc_uint(b, "gpu_usable_bytes", usable);
    gpuplan__doc_str(b, "gpu_usable_source", src);
    gpuplan__doc_str(b, "compute_capability", t->js.gpu->compute_capability);
    gpuplan__doc_str(b, "attention",
                     !o->flash_attention ? "explicit softmax(QK^T)V: the s^2 scores are kept"
                     : cc && cc < 80 ? "memory-efficient SDPA (FlashAttention-2 needs compute capability 8.0): no s^2 kept"
                                     : "FlashAttention-2 (SDPA): no s^2 kept");
  }
  gpuplan__doc_str(b, "node", node ? node->id : NULL);
  gpuplan__doc_int(b, "nodes", node ? t->js.nodes : (t->js.gpus + t->js.per_node - 1) / t->js.per_node);
  gpuplan__doc_int(b, "gpus", t->js.gpus);
  gpuplan__doc_str(b, "workload", t->js.options.workload == GPUPLAN_TRAIN ? "train" : "infer");
  put_options(b, &t->js.options, t->js.model);
  put_defaults(b, j, t);
}

static void put_stage(gpuplan__docb *b, const char *key, const gpuplan_memory *r) {
  int i;
  gpuplan__doc_obj(b, key);
  gpuplan__doc_int(b, "stage", r->stage);
  gpuplan__doc_int(b, "layers", r->layers);
  gpuplan__doc_real(b, "microbatches_in_flight", r->microbatches_in_flight);
  gpuplan__doc_real(b, "params_rank", r->params_rank);
  gpuplan__doc_arr(b, "components");
  for (i = 0; i < GPUPLAN_MEM_COUNT; i++) {
    if (!r->item[i].bytes) continue;
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "name", r->item[i].name);
    gpuplan__doc_uint(b, "bytes", r->item[i].bytes);
    gpuplan__doc_str(b, "formula", r->item[i].formula);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_uint(b, "total_bytes", r->total);
  gpuplan__doc_uint(b, "capacity_bytes", r->capacity);
  gpuplan__doc_bool(b, "fits", r->fits);
  gpuplan__doc_int(b, "headroom_bytes", r->headroom);
  gpuplan__doc_str(b, "verdict", r->verdict);
  gpuplan__doc_bool(b, "at_limit", r->at_limit);
  gpuplan__doc_str(b, "capacity_source", r->capacity_source);
  gpuplan__doc_uint(b, "marketed_bytes", r->capacity_marketed);
  gpuplan__doc_str(b, "peak_phase", r->peak_phase);
  gpuplan__doc_uint(b, "sum_bytes", r->sum_bytes);
  gpuplan__doc_uint(b, "allocated_bytes", r->allocated_bytes);
  gpuplan__doc_uint(b, "fwdbwd_bytes", r->fwdbwd_bytes);
  gpuplan__doc_uint(b, "step_bytes", r->step_bytes);
  gpuplan__doc_uint(b, "steady_bytes", r->steady_bytes);
  gpuplan__doc_uint(b, "first_step_bytes", r->first_step_bytes);
  gpuplan__doc_real(b, "trainable_params", r->trainable_params);
  gpuplan__doc_uint(b, "host_bytes", r->host_bytes);
  if (r->kv_bytes_per_token) {
    gpuplan__doc_uint(b, "kv_bytes_per_token", r->kv_bytes_per_token);
    gpuplan__doc_uint(b, "kv_waste_bytes", r->kv_waste_bytes);
  }
  if (r->kv_bytes_per_token || r->max_sequences) gpuplan__doc_int(b, "max_sequences", r->max_sequences);
  gpuplan__doc_end(b);
}

/* --- plan ----------------------------------------------------------------- */

int gpuplan__cmd_plan(gpuplan_job *j, gpuplan_doc **out) {
  train_job t;
  gpuplan_memory worst;
  gpuplan_fix fixes[16];
  size_t nfix = 0, k;
  gpuplan__docb *b;
  int rc;
  GPUPLAN_TRY(resolve(j, &t, 0));
  GPUPLAN_TRY(gpuplan_memory_eval(j->ctx, t.js.model, t.js.gpu, &t.js.options, GPUPLAN_STAGE_WORST, &worst));
  if (!worst.fits)
    GPUPLAN_TRY(gpuplan_memory_ladder(j->ctx, j->cat, t.js.model, t.js.gpu, &t.js.options, t.max_gpus, fixes,
                                      sizeof fixes / sizeof fixes[0], &nfix));
  if (!(b = gpuplan__doc_begin(j->ctx, "plan"))) return gpuplan_errcode(j->ctx);
  put_head(b, j, &t, worst.params_total);
  put_stage(b, "worst", &worst);
  if (iopt(j, J_PER_RANK, 0)) {
    int64_t s;
    gpuplan__doc_arr(b, "stages");
    for (s = 0; s < t.js.options.pp; s++) {
      gpuplan_memory r;
      if ((rc = gpuplan_memory_eval(j->ctx, t.js.model, t.js.gpu, &t.js.options, s, &r))) {
        gpuplan__doc_abort(b);
        return rc;
      }
      put_stage(b, NULL, &r);
    }
    gpuplan__doc_end(b);
  }
  gpuplan__doc_int(b, "max_gpus", t.max_gpus);
  gpuplan__doc_arr(b, "ladder");
  for (k = 0; k < nfix; k++) {
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "step", (int64_t)k + 1);
    gpuplan__doc_str(b, "change", fixes[k].what);
    gpuplan__doc_str(b, "gpu", fixes[k].gpu->id);
    gpuplan__doc_int(b, "gpus", fixes[k].gpus);
    gpuplan__doc_uint(b, "total_bytes", fixes[k].total);
    gpuplan__doc_uint(b, "capacity_bytes", fixes[k].capacity);
    gpuplan__doc_bool(b, "fits", fixes[k].fits);
    gpuplan__doc_str(b, "kind", fixes[k].kind);
    gpuplan__doc_real(b, "time_cost", fixes[k].time_cost);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  return gpuplan__doc_finish(b, out);
}

/* --- perf ----------------------------------------------------------------- */

static void put_cluster(gpuplan__docb *b, const gpuplan_cluster *cl) {
  gpuplan__doc_obj(b, "cluster");
  gpuplan__doc_int(b, "nodes", cl->nodes);
  gpuplan__doc_int(b, "gpus_per_node", cl->gpu ? cl->gpus_per_node : 0);
  gpuplan__doc_str(b, "gpu", cl->gpu ? cl->gpu->id : NULL);
  gpuplan__doc_str(b, "intra", cl->gpu ? cl->intra_name : NULL);
  gpuplan__doc_real(b, "intra_bw_bytes_s", cl->gpu ? cl->intra_bw_bytes_s : NAN);
  gpuplan__doc_str(b, "inter", cl->inter_name);
  gpuplan__doc_real(b, "inter_bw_bytes_s", cl->inter_bw_bytes_s);
  gpuplan__doc_real(b, "cpu_flops", cl->gpu ? NAN : cl->cpu_flops);
  gpuplan__doc_end(b);
}

static void put_price(gpuplan__docb *b, const gpuplan_node *n, double per_hour) {
  int priced = isfinite(per_hour);
  gpuplan__doc_str(b, "currency", priced && n && n->currency ? n->currency : NULL);
  gpuplan__doc_str(b, "price_region", priced && n ? n->price_region : NULL);
  gpuplan__doc_str(b, "price_date", priced && n ? n->price_date : NULL);
}

/* The performance model's constants for a job: the framework's profile
 * (framework option; auto: fsdp for FSDP sharding, deepspeed for ZeRO-2/3,
 * else megatron) with the job's overlap options. */
static void perf_constants(gpuplan_job *j, const gpuplan_memory_options *o, gpuplan_perf_constants *k) {
  int64_t fw = iopt(j, J_FRAMEWORK, 0);
  gpuplan_framework f = fw > 0 ? (gpuplan_framework)(fw - 1)
                      : o->dp_mode >= GPUPLAN_DP_FSDP_FULL ? GPUPLAN_FW_FSDP
                      : o->dp_mode == GPUPLAN_DP_ZERO2 || o->dp_mode == GPUPLAN_DP_ZERO3 ? GPUPLAN_FW_DEEPSPEED
                      : GPUPLAN_FW_MEGATRON;
  gpuplan_perf_constants_framework(f, k);
  if (isset(j, J_TP_OVERLAP)) {
    gpuplan_perf_constants nemo;
    gpuplan_perf_constants_framework(GPUPLAN_FW_NEMO, &nemo);
    k->tp_overlap = iopt(j, J_TP_OVERLAP, 0) ? (k->tp_overlap > 0 ? k->tp_overlap : nemo.tp_overlap) : 0;
  }
  if (isset(j, J_DP_OVERLAP)) k->dp_overlap = (int)iopt(j, J_DP_OVERLAP, 1);
}

static void put_perf(gpuplan__docb *b, const gpuplan_perf *pf, double tokens) {
  size_t i;
  gpuplan__doc_int(b, "global_batch", pf->global_batch);
  gpuplan__doc_str(b, "framework", gpuplan_framework_name(pf->framework));
  gpuplan__doc_int(b, "microbatches", pf->microbatches);
  gpuplan__doc_int(b, "tokens_per_microbatch", pf->tokens_per_microbatch);
  gpuplan__doc_real(b, "step_s", pf->step_s);
  gpuplan__doc_obj(b, "breakdown_s");
  gpuplan__doc_real(b, "compute", pf->compute_s);
  gpuplan__doc_real(b, "bubble", pf->bubble_s);
  gpuplan__doc_real(b, "tp_comm", pf->tp_comm_s);
  gpuplan__doc_real(b, "cp_comm", pf->cp_comm_s);
  gpuplan__doc_real(b, "pp_comm", pf->pp_comm_s);
  gpuplan__doc_real(b, "dp_comm", pf->dp_comm_s);
  gpuplan__doc_real(b, "optimizer", pf->optimizer_s);
  gpuplan__doc_real(b, "stragglers", pf->straggler_s);
  gpuplan__doc_real(b, "overhead", pf->overhead_s);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "compute_s");
  gpuplan__doc_real(b, "gemm", pf->gemm_s);
  gpuplan__doc_real(b, "attention", pf->attention_s);
  gpuplan__doc_real(b, "elementwise", pf->elementwise_s);
  gpuplan__doc_real(b, "gemm_efficiency", pf->gemm_eff);
  gpuplan__doc_real(b, "attention_flops_s", pf->attn_flops_s);
  gpuplan__doc_end(b);
  gpuplan__doc_obj(b, "communication");
  gpuplan__doc_real(b, "total_s", pf->comm_s);
  gpuplan__doc_real(b, "exposed_s", pf->exposed_comm_s);
  gpuplan__doc_real(b, "hidden_s", pf->comm_s - pf->exposed_comm_s);
  gpuplan__doc_real(b, "nic_bw_bytes_s", pf->nic_bw_bytes_s);
  gpuplan__doc_real(b, "bytes_per_nic", pf->bytes_per_nic);
  gpuplan__doc_end(b);
  gpuplan__doc_arr(b, "collectives");
  for (i = 0; i < pf->n_comm; i++) {
    const gpuplan_perf_comm *c = &pf->comm[i];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "name", c->name);
    gpuplan__doc_str(b, "op", c->op);
    gpuplan__doc_str(b, "algo", c->algo);
    gpuplan__doc_str(b, "proto", c->proto);
    gpuplan__doc_str(b, "phase", c->phase);
    gpuplan__doc_int(b, "ranks", c->ranks);
    gpuplan__doc_int(b, "ranks_per_node", c->ranks_per_node);
    gpuplan__doc_real(b, "nics_per_node", c->nics_per_node);
    gpuplan__doc_real(b, "count", c->count);
    gpuplan__doc_real(b, "message_bytes", c->message_bytes);
    gpuplan__doc_real(b, "bytes_per_gpu", c->bytes_per_gpu);
    gpuplan__doc_real(b, "bytes_per_nic", c->bytes_per_nic);
    gpuplan__doc_real(b, "seconds", c->seconds);
    gpuplan__doc_real(b, "latency_s", c->latency_s);
    gpuplan__doc_real(b, "hidden_s", c->hidden_s);
    gpuplan__doc_real(b, "exposed_s", c->exposed_s);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__doc_real(b, "tokens_per_s", pf->tokens_per_s);
  gpuplan__doc_real(b, "mfu", pf->mfu);
  gpuplan__doc_real(b, "hfu", pf->hfu);
  gpuplan__doc_real(b, "peak_flops", pf->peak_flops);
  gpuplan__doc_real(b, "model_flops_per_token", pf->model_flops_per_token);
  gpuplan__doc_real(b, "model_flops_per_s_per_gpu", pf->model_flops_per_s_per_gpu);
  gpuplan__doc_obj(b, "bytes_per_step_per_gpu");
  gpuplan__doc_real(b, "nvlink", pf->bytes_nvlink_per_gpu);
  gpuplan__doc_real(b, "pcie", pf->bytes_pcie_per_gpu);
  gpuplan__doc_real(b, "network", pf->bytes_network_per_gpu);
  gpuplan__doc_end(b);
  gpuplan__doc_real(b, "cost_per_hour", pf->cost_per_hour);
  gpuplan__doc_real(b, "cost_per_step", pf->cost_per_step);
  gpuplan__doc_real(b, "cost_per_mtok", pf->cost_per_mtok);
  gpuplan__doc_real(b, "train_tokens", tokens > 0 ? tokens : NAN);
  gpuplan__doc_real(b, "train_seconds", tokens > 0 ? pf->train_seconds : NAN);
  gpuplan__doc_real(b, "train_cost", tokens > 0 ? pf->train_cost : NAN);
}

int gpuplan__cmd_perf(gpuplan_job *j, gpuplan_doc **out) {
  train_job t;
  gpuplan_cluster cl;
  gpuplan_perf_constants k;
  gpuplan_perf pf;
  gpuplan_memory worst;
  gpuplan__docb *b;
  double tokens = gpuplan__job_real(j, JOPT(J_TOKENS), 0);
  GPUPLAN_TRY(resolve(j, &t, 1));
  GPUPLAN_TRY(cluster_of(j, &t, &cl));
  if (!t.cpu_only)
    GPUPLAN_TRY(gpuplan_memory_eval(j->ctx, t.js.model, t.js.gpu, &t.js.options, GPUPLAN_STAGE_WORST, &worst));
  perf_constants(j, &t.js.options, &k);
  GPUPLAN_TRY(gpuplan_perf_eval(j->ctx, t.js.model, &cl, &t.js.options, iopt(j, J_GLOBAL_BATCH, 0), tokens, &k,
                                &pf));
  if (!(b = gpuplan__doc_begin(j->ctx, "perf"))) return gpuplan_errcode(j->ctx);
  put_head(b, j, &t, t.cpu_only ? gpuplan_model_params(t.js.model) : worst.params_total);
  gpuplan__doc_obj(b, "memory");
  if (t.cpu_only) {
    gpuplan__doc_null(b, "total_bytes");
    gpuplan__doc_null(b, "capacity_bytes");
    gpuplan__doc_null(b, "fits");
  } else {
    gpuplan__doc_uint(b, "total_bytes", worst.total);
    gpuplan__doc_uint(b, "capacity_bytes", worst.capacity);
    gpuplan__doc_bool(b, "fits", worst.fits);
  }
  gpuplan__doc_end(b);
  put_cluster(b, &cl);
  put_perf(b, &pf, tokens);
  put_price(b, t.cpu_only ? t.cpu_node : t.js.node, pf.cost_per_hour);
  return gpuplan__doc_finish(b, out);
}

/* --- search --------------------------------------------------------------- */

typedef struct across_row {
  const gpuplan_node *node;
  int64_t nodes;
  gpuplan_candidate best;
  double seconds, cost;
} across_row;

static int cmp_across(const void *x, const void *y) {
  const across_row *a = x, *b = y;
  return a->cost < b->cost ? -1 : a->cost > b->cost ? 1 : (a->seconds < b->seconds ? -1 : a->seconds > b->seconds);
}

static void put_layout(gpuplan__docb *b, const gpuplan_memory_options *q) {
  gpuplan__doc_int(b, "tp", q->tp);
  gpuplan__doc_int(b, "pp", q->pp);
  gpuplan__doc_int(b, "cp", q->cp);
  gpuplan__doc_int(b, "dp", q->dp);
  gpuplan__doc_int(b, "vpp", q->vpp);
  gpuplan__doc_int(b, "micro_batch", q->micro_batch);
  gpuplan__doc_str(b, "recompute", gpuplan_recompute_name(q->recompute));
  gpuplan__doc_str(b, "dp_mode", gpuplan_dp_mode_name(q->dp_mode));
  gpuplan__doc_bool(b, "sequence_parallel", q->sequence_parallel);
}

/* The cheapest node type and count to train on `tokens` within `days`. */
static int search_across(gpuplan_job *j, gpuplan_doc **out) {
  const char *model = sopt(j, J_MODEL);
  const gpuplan_model *m;
  gpuplan_memory_options o;
  double tokens = gpuplan__job_real(j, JOPT(J_TOKENS), 0), days = gpuplan__job_real(j, JOPT(J_DAYS), 0);
  int64_t G = iopt(j, J_GLOBAL_BATCH, 0), max_nodes = iopt(j, J_MAX_NODES, 64);
  across_row *rows;
  gpuplan__model_res *mr;
  size_t nrows = 0, cap = 1024, i, nn;
  gpuplan__docb *b;
  int rc = GPUPLAN_OK;
  if (!model) return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_MODEL), "a MODEL is required");
  if (!(tokens > 0) || !(days > 0) || G < 1)
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "tokens, days, global_batch: search across needs all three");
  if (sopt(j, J_GPU) || sopt(j, J_NODE) || isset(j, J_GPUS))
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "gpu, node, gpus: search across tries every priced node type");
  GPUPLAN_TRY(memory_options(j, &o));
  /* the model as every planning command resolves it (a size is a real model of that size) */
  mr = gpuplan__calloc(j->ctx, 1, sizeof *mr);
  if (!mr) return gpuplan__nomem(j->ctx);
  if ((rc = gpuplan__model_resolve(j, mr, &o))) {
    gpuplan__free(j->ctx, mr);
    return rc;
  }
  m = mr->m;
  rows = gpuplan__calloc(j->ctx, cap, sizeof *rows);
  if (!rows) {
    gpuplan__free(j->ctx, mr);
    return gpuplan__nomem(j->ctx);
  }
  nn = gpuplan_catalog_count(j->cat, GPUPLAN_KIND_NODE);
  for (i = 0; i < nn; i++) {
    const gpuplan_node *n = gpuplan_catalog_at(j->cat, GPUPLAN_KIND_NODE, i);
    int64_t k;
    if (!n->gpu_id || !isfinite(n->price_per_hour) || n->gpu_fraction < 1) continue;
    for (k = 1; k <= max_nodes && nrows < cap; k *= 2) {
      gpuplan_cluster cl;
      gpuplan_candidate best;
      size_t nb = 0;
      if (gpuplan_cluster_from_node(j->ctx, j->cat, n, k, &cl)) continue;
      if (gpuplan_search(j->ctx, m, &cl, &o, G, GPUPLAN_OBJ_TIME, &best, 1, &nb, NULL, NULL, NULL) || !nb) continue;
      rows[nrows].node = n;
      rows[nrows].nodes = k;
      rows[nrows].best = best;
      rows[nrows].seconds = tokens / best.perf.tokens_per_s;
      rows[nrows].cost = rows[nrows].seconds / 3600 * best.perf.cost_per_hour;
      nrows++;
    }
  }
  gpuplan__clear(j->ctx);
  qsort(rows, nrows, sizeof *rows, cmp_across);
  if (!(b = gpuplan__doc_begin(j->ctx, "search-across"))) {
    gpuplan__free(j->ctx, rows);
    gpuplan__free(j->ctx, mr);
    return gpuplan_errcode(j->ctx);
  }
  gpuplan__doc_str(b, "model", mr->label);
  gpuplan__doc_str(b, "model_source", mr->source);
  gpuplan__doc_real(b, "params", gpuplan_model_params(m));
  gpuplan__doc_real(b, "tokens", tokens);
  gpuplan__doc_real(b, "days", days);
  gpuplan__doc_int(b, "global_batch", G);
  gpuplan__doc_int(b, "max_nodes", max_nodes);
  gpuplan__doc_arr(b, "configs");
  for (i = 0; i < nrows; i++) {
    const across_row *r = &rows[i];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_str(b, "node", r->node->id);
    gpuplan__doc_str(b, "node_name", r->node->name);
    gpuplan__doc_int(b, "nodes", r->nodes);
    gpuplan__doc_int(b, "gpus", r->nodes * r->node->gpu_count);
    gpuplan__doc_real(b, "days", r->seconds / 86400);
    gpuplan__doc_real(b, "cost", r->cost);
    gpuplan__doc_str(b, "currency", r->node->currency);
    gpuplan__doc_bool(b, "meets_deadline", r->seconds <= days * 86400);
    put_layout(b, &r->best.options);
    gpuplan__doc_real(b, "step_s", r->best.perf.step_s);
    gpuplan__doc_real(b, "mfu", r->best.perf.mfu);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  gpuplan__free(j->ctx, rows);
  gpuplan__free(j->ctx, mr);
  rc = gpuplan__doc_finish(b, out);
  return rc;
}

typedef struct progress_relay {
  gpuplan_job *job;
} progress_relay;

static int relay(void *p, uint64_t done, uint64_t total) {
  progress_relay *r = p;
  return r->job->progress ? r->job->progress(r->job->progress_payload, done, total) : 0;
}

int gpuplan__cmd_search(gpuplan_job *j, gpuplan_doc **out) {
  train_job t;
  gpuplan_cluster cl;
  gpuplan_perf_constants kc;
  gpuplan_search_options so = GPUPLAN_SEARCH_OPTIONS_INIT;
  gpuplan_candidate *best;
  gpuplan_search_stats st;
  gpuplan__docb *b;
  progress_relay pr;
  size_t n = 0, k, top;
  int64_t G = iopt(j, J_GLOBAL_BATCH, 0);
  double tokens = gpuplan__job_real(j, JOPT(J_TOKENS), 0);
  int rc;
  if (iopt(j, J_ACROSS, 0)) return search_across(j, out);
  if (isset(j, J_DAYS) || isset(j, J_MAX_NODES))
    return gpuplan__error(j->ctx, GPUPLAN_EINVAL, "days, max_nodes: only with across");
  if (G < 1) return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_GLOBAL_BATCH), "search needs a global batch");
  GPUPLAN_TRY(resolve(j, &t, 0));
  GPUPLAN_TRY(cluster_of(j, &t, &cl));
  top = (size_t)iopt(j, J_TOP, 5);
  best = gpuplan__calloc(j->ctx, top, sizeof *best);
  if (!best) return gpuplan__nomem(j->ctx);
  pr.job = j;
  perf_constants(j, &t.js.options, &kc);
  so.k = &kc;
  so.threads = (int)iopt(j, J_THREADS, 0);
  so.tie_tolerance = isset(j, J_TIE_TOLERANCE) ? gpuplan__job_real(j, JOPT(J_TIE_TOLERANCE), 0) : 0;
  if (isset(j, J_TIE_TOLERANCE) && !(so.tie_tolerance > 0)) so.tie_tolerance = -1;
  rc = gpuplan_search_ex(j->ctx, t.js.model, &cl, &t.js.options, G, (gpuplan_objective)iopt(j, J_OBJECTIVE, 0), &so,
                         best, top, &n, &st, j->progress ? relay : NULL, &pr);
  if (rc) {
    gpuplan__free(j->ctx, best);
    return rc;
  }
  if (!(b = gpuplan__doc_begin(j->ctx, "search"))) {
    gpuplan__free(j->ctx, best);
    return gpuplan_errcode(j->ctx);
  }
  put_head(b, j, &t, t.js.options.params_override > 0 ? t.js.options.params_override
                                                        : gpuplan_model_params(t.js.model));
  put_cluster(b, &cl);
  gpuplan__doc_int(b, "global_batch", G);
  gpuplan__doc_str(b, "objective", iopt(j, J_OBJECTIVE, 0) ? "cost" : "time");
  gpuplan__doc_str(b, "framework", gpuplan_framework_name(kc.framework));
  gpuplan__doc_uint(b, "candidates", st.candidates);
  gpuplan__doc_uint(b, "pruned", st.pruned);
  gpuplan__doc_uint(b, "evaluated", st.evaluated);
  gpuplan__doc_uint(b, "too_big", st.too_big);
  gpuplan__doc_uint(b, "invalid", st.invalid);
  gpuplan__doc_uint(b, "timed", st.timed);
  gpuplan__doc_real(b, "tie_tolerance", so.tie_tolerance > 0 ? so.tie_tolerance
                                        : so.tie_tolerance < 0 ? 0.0 : GPUPLAN_PERF_MODEL_ERROR);
  gpuplan__doc_real(b, "train_tokens", tokens > 0 ? tokens : NAN);
  gpuplan__doc_arr(b, "best");
  for (k = 0; k < n; k++) {
    const gpuplan_candidate *c = &best[k];
    gpuplan__doc_obj(b, NULL);
    gpuplan__doc_int(b, "rank", (int64_t)k + 1);
    put_layout(b, &c->options);
    gpuplan__doc_int(b, "first_stage_layers", c->options.first_stage_layers);
    gpuplan__doc_int(b, "last_stage_layers", c->options.last_stage_layers);
    gpuplan__doc_bool(b, "tp_overlap", c->tp_overlap);
    gpuplan__doc_bool(b, "dp_overlap", c->dp_overlap);
    gpuplan__doc_bool(b, "offload_optimizer", c->options.offload_optimizer);
    gpuplan__doc_real(b, "step_s", c->perf.step_s);
    gpuplan__doc_real(b, "tokens_per_s", c->perf.tokens_per_s);
    gpuplan__doc_real(b, "mfu", c->perf.mfu);
    gpuplan__doc_uint(b, "memory_bytes", c->memory_bytes);
    gpuplan__doc_real(b, "cost_per_mtok", c->perf.cost_per_mtok);
    gpuplan__doc_real(b, "train_days", tokens > 0 ? tokens / c->perf.tokens_per_s / 86400 : NAN);
    gpuplan__doc_real(b, "slower_than_first", k ? c->perf.step_s / best[0].perf.step_s - 1 : 0.0);
    gpuplan__doc_bool(b, "tied_with_first", c->tied_with_first);
    gpuplan__doc_real(b, "exposed_comm_s", c->perf.exposed_comm_s);
    gpuplan__doc_real(b, "bytes_network_per_gpu", c->perf.bytes_network_per_gpu);
    gpuplan__doc_real(b, "bytes_per_nic", c->perf.bytes_per_nic);
    gpuplan__doc_str(b, "why", c->why);
    gpuplan__doc_end(b);
  }
  gpuplan__doc_end(b);
  /* Why #1 beats #2: the seconds of each part of the step that differ. */
  if (n >= 2) {
    const gpuplan_perf *p1 = &best[0].perf, *p2 = &best[1].perf;
    static const char *const names[] = {"compute", "bubble", "tp_comm", "cp_comm", "pp_comm", "dp_comm",
                                        "optimizer", "stragglers", "overhead"};
    double a1[9], a2[9], d = p2->step_s - p1->step_s;
    size_t i, big = 0, nb = sizeof names / sizeof names[0];
    char text[512];
    int len;
    a1[0] = p1->compute_s, a2[0] = p2->compute_s;
    a1[1] = p1->bubble_s, a2[1] = p2->bubble_s;
    a1[2] = p1->tp_comm_s, a2[2] = p2->tp_comm_s;
    a1[3] = p1->cp_comm_s, a2[3] = p2->cp_comm_s;
    a1[4] = p1->pp_comm_s, a2[4] = p2->pp_comm_s;
    a1[5] = p1->dp_comm_s, a2[5] = p2->dp_comm_s;
    a1[6] = p1->optimizer_s, a2[6] = p2->optimizer_s;
    a1[7] = p1->straggler_s, a2[7] = p2->straggler_s;
    a1[8] = p1->overhead_s, a2[8] = p2->overhead_s;
    for (i = 1; i < nb; i++)
      if (fabs(a2[i] - a1[i]) > fabs(a2[big] - a1[big])) big = i;
    gpuplan__doc_obj(b, "first_vs_second");
    gpuplan__doc_real(b, "step_s_first", p1->step_s);
    gpuplan__doc_real(b, "step_s_second", p2->step_s);
    gpuplan__doc_real(b, "difference_s", d);
    gpuplan__doc_bool(b, "tied", best[1].tied_with_first);
    gpuplan__doc_arr(b, "parts");
    for (i = 0; i < nb; i++) {
      if (a1[i] == 0 && a2[i] == 0) continue;
      gpuplan__doc_obj(b, NULL);
      gpuplan__doc_str(b, "part", names[i]);
      gpuplan__doc_real(b, "first_s", a1[i]);
      gpuplan__doc_real(b, "second_s", a2[i]);
      gpuplan__doc_real(b, "difference_s", a2[i] - a1[i]);
      gpuplan__doc_end(b);
    }
    gpuplan__doc_end(b);
    len = snprintf(text, sizeof text, "%s: #2 takes %.3f s more per step (%+.1f%%); the largest difference is %s "
                   "(%.3f s vs %.3f s)",
                   best[1].tied_with_first ? "a tie within the model's error" : "#1 is faster", d,
                   100 * d / p1->step_s, names[big], a1[big], a2[big]);
    (void)len;
    gpuplan__doc_str(b, "summary", text);
    gpuplan__doc_end(b);
  }
  put_price(b, t.js.node, n ? best[0].perf.cost_per_hour : NAN);
  gpuplan__free(j->ctx, best);
  return gpuplan__doc_finish(b, out);
}

/* --- simulate ------------------------------------------------------------- */

/* A real device, watched: the lowest free memory the driver reported while
 * the step program ran (the driver-level peak). */
typedef struct watched {
  const gpuplan_device_ops *inner;
  gpuplan_device_ops ops;
  uint64_t min_free, total;
} watched;

static void watch_sample(watched *w) {
  uint64_t f = 0, t = 0;
  w->inner->mem_info(w->inner->payload, &f, &t);
  if (f < w->min_free) w->min_free = f;
  w->total = t;
}
static int watch_malloc(void *p, uint64_t size, uint64_t *addr) {
  watched *w = (watched *)p;
  int rc = w->inner->malloc(w->inner->payload, size, addr);
  watch_sample(w);
  return rc;
}
static void watch_free(void *p, uint64_t addr, uint64_t size) {
  watched *w = (watched *)p;
  w->inner->free(w->inner->payload, addr, size);
}
static void watch_info(void *p, uint64_t *free_out, uint64_t *total_out) {
  watched *w = (watched *)p;
  w->inner->mem_info(w->inner->payload, free_out, total_out);
}

/* on = "cuda" or "cuda:N": the device index, or -1 with an error. */
static int parse_on(gpuplan_job *j, const char *on) {
  char *end;
  long dev = 0;
  if (strncmp(on, "cuda", 4) != 0 || (on[4] && on[4] != ':'))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_ON), "'%s' is not cuda or cuda:N", on);
  if (on[4]) {
    dev = strtol(on + 5, &end, 10);
    if (end == on + 5 || *end || dev < 0 || dev > 1024)
      return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_ON), "'%s': N is not a device index 0..1024", on);
  }
  return (int)dev;
}

/* The same steps with real allocations on a CUDA device. */
static int run_on_device(gpuplan_job *j, train_job *t, const gpuplan_simulate_options *so_in,
                         const gpuplan_simulate_result *pred, int dev, gpuplan__docb *b) {
  gpuplan_backend *be = NULL;
  const gpuplan_device_ops *real;
  gpuplan_device_info info;
  gpuplan_simulate_options so = *so_in;
  gpuplan_simulate_result act;
  watched w;
  uint64_t free0, total0;
  int rc;
  if (so.alloc_conf && strstr(so.alloc_conf, "expandable_segments:True"))
    return gpuplan__opt_error(j->ctx, GPUPLAN_EUNSUPPORTED, JOPT(J_ON),
                              "expandable segments need the driver's virtual memory API, which the CUDA backend "
                              "does not use yet; run without them");
  if ((rc = gpuplan_backend_open_cuda(j->ctx, NULL, &be))) {
    /* no driver here: the machine cannot do it (not a bad option) */
    char why[512];
    if (rc != GPUPLAN_ENOTFOUND && rc != GPUPLAN_EINVAL) return rc;
    snprintf(why, sizeof why, "%s", gpuplan_errmsg(j->ctx));
    return gpuplan__error(j->ctx, GPUPLAN_EUNSUPPORTED, "%s", why);
  }
  if ((rc = gpuplan_backend_device_info(be, dev, j->cat, &info)) ||
      (rc = gpuplan_backend_device_memory(be, dev, &real))) {
    gpuplan_backend_free(be);
    return rc;
  }
  memset(&w, 0, sizeof w);
  w.inner = real;
  w.ops.malloc = watch_malloc;
  w.ops.free = watch_free;
  w.ops.mem_info = watch_info;
  w.ops.payload = &w;
  real->mem_info(real->payload, &free0, &total0);
  w.min_free = free0;
  so.device = &w.ops;
  so.snapshot_path = NULL;
  rc = gpuplan_simulate(j->ctx, t->js.model, t->js.gpu, &t->js.options, &so, &act);
  gpuplan_backend_free(be); /* frees every allocation left on the card */
  if (rc) return rc;
  gpuplan__doc_obj(b, "on_device");
  gpuplan__doc_str(b, "device", info.name);
  gpuplan__doc_int(b, "index", dev);
  gpuplan__doc_uint(b, "total_bytes", total0);
  gpuplan__doc_uint(b, "free_before_bytes", free0);
  gpuplan__doc_uint(b, "predicted_peak_reserved_bytes", pred->peak_reserved);
  gpuplan__doc_uint(b, "actual_peak_reserved_bytes", act.peak_reserved);
  gpuplan__doc_uint(b, "driver_peak_used_bytes", free0 - w.min_free);
  gpuplan__doc_bool(b, "predicted_oom", pred->oom);
  gpuplan__doc_bool(b, "actual_oom", act.oom);
  gpuplan__doc_str(b, "actual_oom_op", act.oom ? act.oom_op : NULL);
  gpuplan__doc_end(b);
  return GPUPLAN_OK;
}

/* The snapshot's modelled clock: the performance model's step for the same
 * model, layout and cluster as perf evaluates it (*clock, and *use set to
 * it), or, where there is none, why (1.13's layout has no trace; a traced
 * module has no FLOP count; the model refuses the case), with *use NULL.  Errors only for memory. */
static int snapshot_clock(gpuplan_job *j, train_job *t, unsigned release, gpuplan_perf *clock,
                          const gpuplan_perf **use, char *why, size_t cap) {
  gpuplan_cluster cl;
  gpuplan_perf_constants k;
  int rc;
  *use = NULL;
  if (gpuplan__snapshot_v113(release)) {
    snprintf(why, cap, "none: 1.13's memory_snapshot() keeps no trace to time");
    return GPUPLAN_OK;
  }
  if (!strcmp(t->mr.source, "module")) {
    snprintf(why, cap, "none: a traced module has a memory model but no FLOP count");
    return GPUPLAN_OK;
  }
  perf_constants(j, &t->js.options, &k);
  if ((rc = cluster_of(j, t, &cl)) == GPUPLAN_OK &&
      (rc = gpuplan_perf_eval(j->ctx, t->js.model, &cl, &t->js.options, 0, 0, &k, clock)) == GPUPLAN_OK) {
    *use = clock;
    return GPUPLAN_OK;
  }
  if (rc == GPUPLAN_ENOMEM) return rc;
  snprintf(why, cap, "none: the performance model has no step for it (%s)", gpuplan_errmsg(j->ctx));
  gpuplan__clear(j->ctx);
  return GPUPLAN_OK;
}

int gpuplan__cmd_simulate(gpuplan_job *j, gpuplan_doc **out) {
  train_job t;
  gpuplan_simulate_options so = GPUPLAN_SIMULATE_OPTIONS_INIT;
  gpuplan_simulate_result sr;
  gpuplan_memory worst;
  gpuplan_alloc_conf parsed;
  gpuplan__sim_summary sum;
  gpuplan__docb *b;
  uint64_t other = (uint64_t)iopt(j, J_OTHER_PROCS, 0), resident;
  const char *on = sopt(j, J_ON), *conf_from;
  const gpuplan__torch_release *tr = gpuplan__torch_release_at(gpuplan__job_int(j, TOPT(T_TORCH), 0));
  unsigned release = gpuplan__release_of(tr->rules);
  char warn[512] = "", clock_why[GPUPLAN_ERRMSG_MAX] = "";
  gpuplan_perf clock;
  int dev = -1, rc;
  GPUPLAN_TRY(resolve(j, &t, 0));
  if (on && (dev = parse_on(j, on)) < 0) return dev;
  so.steps = iopt(j, J_STEPS, 2);
  so.torch = tr->rules;
  so.set_to_none = !iopt(j, J_KEEP_GRADS, 0);
  so.snapshot_path = sopt(j, J_SNAPSHOT);
  if (so.snapshot_path && !*so.snapshot_path) /* (as replay's html option) */
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_SNAPSHOT), "give the path of the snapshot to write");
  so.cuda_graph = (int)iopt(j, J_CUDA_GRAPH, 0);
  so.empty_cache_before_capture = (int)iopt(j, J_EMPTY_CACHE_BEFORE_CAPTURE, 0);
  if (so.empty_cache_before_capture && !so.cuda_graph)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, JOPT(J_EMPTY_CACHE_BEFORE_CAPTURE),
                              "needs cuda_graph (it empties the cache before the capture)");
  /* the option, or the environment as that release reads it (cmd_replay.c) */
  GPUPLAN_TRY(gpuplan__alloc_conf_source(j, release, &so.alloc_conf, &conf_from, warn, sizeof warn));
  /* A bad setting is the option's fault (or the variable's): say which. */
  if ((rc = gpuplan_alloc_conf_parse(j->ctx, so.alloc_conf, so.torch, &parsed))) {
    char msg[GPUPLAN_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(j->ctx));
    if (strcmp(conf_from, "option")) return gpuplan__error(j->ctx, rc, "alloc_conf (from %s): %s", conf_from, msg);
    return gpuplan__opt_error(j->ctx, rc, JOPT(J_ALLOC_CONF), "%s", msg);
  }
  memset(&sum, 0, sizeof sum);
  sum.want = (int)gpuplan__job_int(j, TOPT(T_SUMMARY), 0) || gpuplan__job_int(j, TOPT(T_ABBREVIATED), 0);
  sum.abbreviated = (int)gpuplan__job_int(j, TOPT(T_ABBREVIATED), 0);
  sum.layout = tr->rules;
  sum.want_stats = (int)gpuplan__job_int(j, TOPT(T_MEMORY_STATS), 0);
  GPUPLAN_TRY(gpuplan_memory_eval(j->ctx, t.js.model, t.js.gpu, &t.js.options, GPUPLAN_STAGE_WORST, &worst));
  /* outside PyTorch's allocator (the cuBLAS workspace is inside it) */
  resident = worst.item[GPUPLAN_MEM_CONTEXT].bytes + worst.item[GPUPLAN_MEM_NCCL].bytes;
  if (so.snapshot_path) GPUPLAN_TRY(snapshot_clock(j, &t, release, &clock, &so.clock, clock_why, sizeof clock_why));
  GPUPLAN_TRY(gpuplan__mock_simulate(j->ctx, t.js.model, t.js.gpu, &t.js.options, &so, other, &sr, &sum));
  if (!(b = gpuplan__doc_begin(j->ctx, "simulate"))) {
    gpuplan__free(j->ctx, sum.text);
    return gpuplan_errcode(j->ctx);
  }
  put_head(b, j, &t, worst.params_total);
  gpuplan__doc_int(b, "steps", sr.steps_done);
  gpuplan__doc_int(b, "steps_requested", so.steps);
  gpuplan__doc_str(b, "alloc_conf", so.alloc_conf ? so.alloc_conf : "");
  gpuplan__doc_str(b, "alloc_conf_source", conf_from);
  gpuplan__doc_str(b, "torch", tr->name);
  gpuplan__doc_str(b, "rules", tr->rules_name);
  gpuplan__doc_bool(b, "set_to_none", so.set_to_none);
  gpuplan__doc_bool(b, "cuda_graph", so.cuda_graph);
  gpuplan__doc_bool(b, "empty_cache_before_capture", so.empty_cache_before_capture);
  gpuplan__doc_bool(b, "graph_captured", sum.graph_captured);
  gpuplan__doc_uint(b, "graph_pool_reserved_bytes", sum.graph_reserved);
  gpuplan__doc_uint(b, "graph_pool_allocated_bytes", sum.graph_allocated);
  gpuplan__doc_uint(b, "ops", sr.ops);
  gpuplan__doc_uint(b, "capacity_bytes", sr.capacity);
  gpuplan__doc_uint(b, "peak_allocated_bytes", sr.peak_allocated);
  gpuplan__doc_uint(b, "peak_reserved_bytes", sr.peak_reserved);
  gpuplan__doc_uint(b, "allocated_at_peak_reserved_bytes", sr.allocated_at_peak_reserved);
  gpuplan__doc_uint(b, "largest_free_at_peak_bytes", sr.largest_free_at_peak);
  gpuplan__doc_uint(b, "total_free_at_peak_bytes", sr.total_free_at_peak);
  gpuplan__doc_real(b, "fragmentation", sr.fragmentation);
  gpuplan__doc_uint(b, "analytic_bytes", sr.analytic_bytes);
  gpuplan__doc_real(b, "vs_analytic", sr.vs_analytic);
  gpuplan__doc_int(b, "num_alloc_retries", sr.num_alloc_retries);
  gpuplan__doc_int(b, "num_ooms", sr.num_ooms);
  gpuplan__doc_bool(b, "oom", sr.oom);
  gpuplan__doc_int(b, "oom_step", sr.oom ? sr.oom_step : 0);
  gpuplan__doc_str(b, "oom_op", sr.oom ? sr.oom_op : NULL);
  gpuplan__doc_str(b, "oom_message", sr.oom ? sr.oom_message : NULL);
  gpuplan__doc_uint(b, "resident_bytes", resident);
  gpuplan__doc_uint(b, "other_procs_bytes", other);
  gpuplan__doc_uint(b, "nvidia_smi_used_bytes", sr.peak_reserved + resident + other);
  gpuplan__doc_str(b, "snapshot", so.snapshot_path);
  gpuplan__doc_real(b, "snapshot_step_s", so.clock ? clock.step_s : NAN);
  gpuplan__doc_str(b, "snapshot_clock", !so.snapshot_path ? NULL : so.clock ? "modelled" : clock_why);
  gpuplan__doc_arr(b, "warnings");
  if (*warn) gpuplan__doc_str(b, NULL, warn);
  gpuplan__doc_end(b);
  if (sum.want) gpuplan__doc_str(b, "summary", sum.text);
  if (sum.want_stats) gpuplan__doc_memory_stats(b, &sum.stats, release);
  gpuplan__free(j->ctx, sum.text);
  if (dev >= 0 && (rc = run_on_device(j, &t, &so, &sr, dev, b))) {
    gpuplan__doc_abort(b);
    return rc;
  }
  return gpuplan__doc_finish(b, out);
}
