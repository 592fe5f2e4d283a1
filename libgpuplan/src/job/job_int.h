/*
 * job_int.h: the job object, its option table and its commands.  Not installed.
 *
 * The option table is one logical table made of sub-tables, one per area
 * (job_options.c: model, hardware, training, layout, inference, perf,
 * search, simulate; others next to their commands), so each command's
 * options live beside its code.  An option is found by name or flag;
 * values are stored in the job at the option's global index.
 *
 * A command is a function that reads the job's options and builds its
 * document.  Commands declare the kind(s) of document they produce in
 * schema.c.
 */
#ifndef GPUPLAN_JOB_INT_H
#define GPUPLAN_JOB_INT_H

#include "common/internal.h"
#include "doc/doc_int.h"
#include "gpuplan/job.h"

/* Commands, in the order of gpuplan_command_name(). */
enum {
  GPUPLAN__CMD_PLAN = 0,
  GPUPLAN__CMD_PERF,
  GPUPLAN__CMD_SEARCH,
  GPUPLAN__CMD_SIMULATE,
  GPUPLAN__CMD_REPLAY,
  GPUPLAN__CMD_EXPLAIN,
  GPUPLAN__CMD_SMI,
  GPUPLAN__CMD_TOPO,
  GPUPLAN__CMD_DOCTOR,
  GPUPLAN__CMD_VALIDATE,
  GPUPLAN__CMD_CATALOG,
  GPUPLAN__CMD_VERSION,
  GPUPLAN__CMD_SERVE,
  GPUPLAN__CMD_COUNT
};
#define C_PLAN (1u << GPUPLAN__CMD_PLAN)
#define C_PERF (1u << GPUPLAN__CMD_PERF)
#define C_SEARCH (1u << GPUPLAN__CMD_SEARCH)
#define C_SIMULATE (1u << GPUPLAN__CMD_SIMULATE)
#define C_REPLAY (1u << GPUPLAN__CMD_REPLAY)
#define C_EXPLAIN (1u << GPUPLAN__CMD_EXPLAIN)
#define C_SMI (1u << GPUPLAN__CMD_SMI)
#define C_TOPO (1u << GPUPLAN__CMD_TOPO)
#define C_DOCTOR (1u << GPUPLAN__CMD_DOCTOR)
#define C_VALIDATE (1u << GPUPLAN__CMD_VALIDATE)
#define C_CATALOG (1u << GPUPLAN__CMD_CATALOG)
#define C_VERSION (1u << GPUPLAN__CMD_VERSION)
#define C_SERVE (1u << GPUPLAN__CMD_SERVE)
#define C_JOBS (C_PLAN | C_PERF | C_SEARCH | C_SIMULATE)

/* A sub-table of options. */
typedef struct gpuplan__opt_table {
  const gpuplan_option_info *opts;
  size_t n;
} gpuplan__opt_table;

/* The sub-tables (each defined next to its commands). */
extern const gpuplan__opt_table gpuplan__opts_job;     /* job_options.c */
extern const gpuplan__opt_table gpuplan__opts_tools;   /* replay, explain-oom, validate, catalog, version */
extern const gpuplan__opt_table gpuplan__opts_devices; /* smi, topo, doctor */
extern const gpuplan__opt_table gpuplan__opts_validate; /* validate */
extern const gpuplan__opt_table gpuplan__opts_model;    /* opts_model.c: describing a model */
extern const gpuplan__opt_table gpuplan__opts_serve;    /* opts_serve.c: serving */

/* A list value (GPUPLAN_OPT_LIST). */
typedef struct gpuplan__optlist {
  const char *s;
  struct gpuplan__optlist *next;
} gpuplan__optlist;

/* A stored option value. */
typedef struct gpuplan__optval {
  int set;
  int64_t i;         /* INT, BOOL, ENUM (the choice's index), BYTES (bytes) */
  double r;          /* REAL */
  const char *s;     /* STRING (job-owned copy) */
  gpuplan__optlist *list, *list_tail; /* LIST */
} gpuplan__optval;

struct gpuplan_job {
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan__arena arena;    /* option strings */
  size_t nopts;
  gpuplan__optval *val;
  gpuplan_job_progress_fn progress;
  void *progress_payload;
};

/* Getters by descriptor: the value, or dflt when unset. */
const gpuplan__optval *gpuplan__job_val(const gpuplan_job *job, const gpuplan_option_info *opt);
int gpuplan__job_isset(const gpuplan_job *job, const gpuplan_option_info *opt);
int64_t gpuplan__job_int(const gpuplan_job *job, const gpuplan_option_info *opt, int64_t dflt);
double gpuplan__job_real(const gpuplan_job *job, const gpuplan_option_info *opt, double dflt);
const char *gpuplan__job_str(const gpuplan_job *job, const gpuplan_option_info *opt, const char *dflt);
const gpuplan__optlist *gpuplan__job_list(const gpuplan_job *job, const gpuplan_option_info *opt);
/* The n-th choice of an ENUM option's choices ("a|b|c"), copied into buf. */
const char *gpuplan__opt_choice(const gpuplan_option_info *opt, int64_t n, char *buf, size_t cap);
/* An error about an option: "name: message" (and the CLI flag). */
int gpuplan__opt_error(gpuplan_ctx *ctx, int code, const gpuplan_option_info *opt, const char *fmt, ...)
    GPUPLAN_PRINTF(4, 5);

/* The options of job_options.c, by index into gpuplan__opts_job.opts. */
enum {
  J_MODEL = 0, J_GPU, J_GPUS, J_NODE, J_NODES, J_PER_NODE,
  J_WORKLOAD,
  J_MICRO_BATCH, J_SEQ, J_GRAD_ACCUM, J_PRECISION, J_OPTIMIZER, J_GRAD_BYTES, J_CONVENTION,
  J_RECOMPUTE, J_FLASH, J_DROPOUT, J_OFFLOAD_OPTIMIZER, J_OFFLOAD_PARAMS,
  J_TP, J_PP, J_DP, J_CP, J_EP, J_SP, J_ZERO, J_FSDP, J_DP_MODE, J_SHARD_GROUP, J_SCHEDULE, J_VPP,
  J_FIRST_STAGE_LAYERS, J_LAST_STAGE_LAYERS, J_PREFETCH, J_BUCKET,
  J_WEIGHTS, J_KV, J_CONTEXT, J_BATCH, J_PAGED, J_BLOCK, J_GROUP,
  J_CUDA_CONTEXT, J_NCCL, J_WORKSPACE,
  J_PER_RANK, J_MAX_GPUS,
  J_GLOBAL_BATCH, J_TOKENS, J_INTRA, J_INTER, J_NICS, J_NIC_GBPS,
  J_TOP, J_OBJECTIVE, J_ACROSS, J_DAYS, J_MAX_NODES,
  J_STEPS, J_ALLOC_CONF, J_KEEP_GRADS, J_OTHER_PROCS, J_SNAPSHOT, J_ON,
  J_FRAMEWORK, J_TP_OVERLAP, J_DP_OVERLAP, J_THREADS, J_TIE_TOLERANCE,
  J_CUDA_GRAPH, J_EMPTY_CACHE_BEFORE_CAPTURE,
  J_COUNT
};
#define JOPT(id) (&gpuplan__opts_job.opts[id])

/* The options of opts_model.c, by index into gpuplan__opts_model.opts. */
enum {
  M_LAYERS = 0, M_HIDDEN, M_HEADS, M_KV_HEADS, M_HEAD_DIM, M_FFN, M_FFN_TYPE, M_NORM, M_VOCAB, M_TIED,
  M_POSITION, M_BIAS, M_QKV_BIAS, M_QK_NORM, M_PARALLEL, M_MAX_SEQ, M_ARCH, M_DECODER_LAYERS, M_LABELS,
  M_EXPERTS, M_TOP_K, M_EXPERT_FFN, M_SHARED_EXPERTS, M_SHARED_EXPERT_FFN, M_DENSE_LAYERS,
  M_KV_LORA_RANK, M_Q_LORA_RANK, M_QK_ROPE_DIM, M_V_HEAD_DIM, M_EXTRA_PARAMS,
  M_MODULE_PARAMS, M_MODULE_TRAINABLE, M_MODULE_BUFFERS, M_MODULE_LARGEST, M_MODULE_ACT, M_MODULE_FWD,
  M_MODULE_BWD, M_MODULE_OUT, M_MODULE_IN,
  M_IMPL, M_PHASE, M_ZERO_GRAD, M_OPTIMIZER_IMPL, M_PREV_LOGITS, M_SOFTMAX_INPUT, M_GPU_TOTAL,
  M_FINETUNE, M_LORA_RANK, M_LORA_MODULES, M_BASE_DTYPE, M_DOUBLE_QUANT, M_PAGED_OPTIMIZER,
  M_COUNT
};
#define MOPT(id) (&gpuplan__opts_model.opts[id])

/* A model as the job describes it (job/model_resolve.c): a catalog name, a
 * size mapped to a catalog model of that size, a Hugging Face config.json,
 * hyperparameters given as options (alone or over a named model), or a
 * module traced by gpuplan.from_torch. */
#define GPUPLAN__MODEL_NOTES 16
typedef struct gpuplan__model_res {
  gpuplan_model model;          /* storage for a described model */
  const gpuplan_model *m;       /* what to plan: a catalog row or &model */
  const gpuplan_model *base;    /* the catalog row it came from (catalog, size, shape over a name), or NULL */
  const char *source;           /* "catalog", "size", "config", "shape", "module" */
  char label[128];              /* the model's name in the documents */
  char note[512];               /* how it was resolved, in words */
  int dropout;                  /* the model's training dropout: 1, 0, or -1 unknown (the option's default) */
  gpuplan_impl impl;            /* the implementation profile that applies by default */
  const char *impl_why;         /* why (static text) */
  /* defaults the resolution applied, for the documents' "defaults" */
  const char *dflt_option[GPUPLAN__MODEL_NOTES];
  char dflt_value[GPUPLAN__MODEL_NOTES][96];
  int ndflt;
} gpuplan__model_res;

/* Resolve the job's model options into r and the model-fact fields of o
 * (the version-2 shape extensions, module description, fine-tuning).
 * Errors name the option (model, layers, ...) or the config.json field. */
int gpuplan__model_resolve(gpuplan_job *job, gpuplan__model_res *r, gpuplan_memory_options *o);

/* A size ("70B", already parsed into size) mapped to the catalog model of
 * that size (within 10%), with r->note saying which; ENOTFOUND naming opt
 * and the nearest models when none is.  Never a rescaled shape. */
int gpuplan__model_of_size(gpuplan_job *job, const gpuplan_option_info *opt, const char *arg, double size,
                           gpuplan__model_res *r);

/* The hardware and layout of a planning job (plan/options.c). */
#include "gpuplan/perf.h"
/**
 * A job as the front ends describe it (the CLI's flags, the bindings'
 * arguments), resolved against the catalog: the model (a name or a size
 * such as "7B"), the GPU (a SKU, or a node's GPU with the node's visible
 * memory for vGPU slices), the GPU count and the layout.  Holds a pointer
 * into itself (gpu may point at node_gpu): pass it by pointer, do not copy.
 */
typedef struct gpuplan__jobspec {
  const gpuplan_model *model;
  const gpuplan_gpu *gpu;
  const gpuplan_node *node;       /**< NULL unless the job names a node */
  gpuplan_gpu node_gpu;           /**< the node's GPU with its visible memory */
  int64_t gpus;                   /**< dp*tp*pp*cp after resolution */
  int64_t nodes, per_node;
  gpuplan_memory_options options; /**< set by the caller first; dp filled in */
  char model_name[128];           /**< the catalog id, or the size as given ("7B") */
} gpuplan__jobspec;

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
 * @errors any  @threads ctx  (internal since 0.2: the public way is gpuplan_job_run)
 */
int gpuplan__job_resolve(gpuplan_ctx *ctx, gpuplan_catalog *cat, const char *model,
                                    const char *gpu, const char *node, int64_t gpus, int64_t nodes,
                                    int64_t per_node, int dp_given, gpuplan__jobspec *job);

/** The cluster a resolved job runs on (the node's, or a default one).  @errors any  @threads ctx  (internal since 0.2: the public way is gpuplan_job_run) */
int gpuplan__job_cluster(gpuplan_ctx *ctx, gpuplan_catalog *cat, const gpuplan__jobspec *job,
                                    gpuplan_cluster *out);

/* Commands. */
typedef int (*gpuplan__cmd_fn)(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_plan(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_perf(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_search(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_simulate(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_replay(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_explain(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_smi(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_topo(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_doctor(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_validate(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_catalog(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_version(gpuplan_job *job, gpuplan_doc **out);
int gpuplan__cmd_serve(gpuplan_job *job, gpuplan_doc **out);

#endif /* GPUPLAN_JOB_INT_H */
