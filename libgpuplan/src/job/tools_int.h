/*
 * tools_int.h: the options of replay, explain-oom and catalog (opts_tools.c),
 * by index, for their commands (cmd_replay.c, cmd_explain.c, cmd_tools.c).
 * Not installed.
 */
#ifndef GPUPLAN_TOOLS_INT_H
#define GPUPLAN_TOOLS_INT_H

#include "job/job_int.h"

/* The options of opts_tools.c, by index into gpuplan__opts_tools.opts. */
enum {
  T_FILE = 0,        /* replay: the snapshot pickle (positional) */
  T_ENV_ALLOC_CONF,  /* replay, simulate: PYTORCH_ALLOC_CONF's value in the run's environment */
  T_ENV_CUDA_ALLOC_CONF, /* replay, simulate: PYTORCH_CUDA_ALLOC_CONF's value */
  T_CAPACITY,        /* replay: usable device memory */
  T_TORCH,           /* replay: the release whose rules apply */
  T_DEVICE,          /* replay: which device's trace */
  T_TIMELINE,        /* replay: memory after every allocator event */
  T_SUMMARY,         /* replay: memory_summary() */
  T_ABBREVIATED,     /* replay: memory_summary(abbreviated=True) */
  T_MEMORY_STATS,    /* replay, simulate: torch.cuda.memory_stats() */
  T_HTML,            /* replay: the HTML page to write */
  T_MESSAGE,         /* explain-oom: the text (positional) */
  T_SUBCOMMAND,      /* catalog: gpus|nodes|models|fabrics|show|info (positional) */
  T_NAME,            /* catalog show: the record's name */
  T_KIND,            /* catalog show: restrict to one kind */
  T_COUNT
};
#define TOPT(id) (&gpuplan__opts_tools.opts[id])


/* Choices of T_SUBCOMMAND, in order. */
enum {
  GPUPLAN__CAT_GPUS = 0, GPUPLAN__CAT_NODES, GPUPLAN__CAT_MODELS, GPUPLAN__CAT_FABRICS,
  GPUPLAN__CAT_SHOW, GPUPLAN__CAT_INFO
};

/* A torch release as T_TORCH names it: the behaviour class it belongs to
 * and its name ("2.4"); index is the option's value. */
typedef struct gpuplan__torch_release {
  const char *name;
  gpuplan_torch_version rules;
  const char *rules_name; /* the behaviour class, in words */
} gpuplan__torch_release;
const gpuplan__torch_release *gpuplan__torch_release_at(int64_t index);

/* The allocator settings a run uses, one rule for replay and simulate:
 * alloc_conf when given (from = "option");
 * else the environment as torch `release` (major*100+minor) reads it:
 * from 2.10 PYTORCH_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF; before,
 * PYTORCH_CUDA_ALLOC_CONF only (a PYTORCH_ALLOC_CONF that release ignored
 * gives a warning in warn); else NULL with from = "defaults".  Returns
 * GPUPLAN_OK. */
/* torch.cuda.memory_stats() of st under key "memory_stats": the flat dict
 * (keys sorted, as memory_stats() sorts them) with the keys torch `release`
 * (major*100+minor) has: requested_bytes from 2.0, num_sync_all_streams,
 * num_device_alloc and num_device_free from 2.3.  cmd_replay.c. */
void gpuplan__doc_memory_stats(gpuplan__docb *b, const gpuplan_alloc_stats *st, unsigned release);

int gpuplan__alloc_conf_source(gpuplan_job *j, unsigned release, const char **conf, const char **from, char *warn,
                               size_t warn_cap);

#endif /* GPUPLAN_TOOLS_INT_H */
