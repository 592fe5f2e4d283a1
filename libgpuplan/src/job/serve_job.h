/*
 * serve_job.h: the options of serve (opts_serve.c), by index, for its
 * command (cmd_serve.c).  Not installed.
 */
#ifndef GPUPLAN_SERVE_JOB_H
#define GPUPLAN_SERVE_JOB_H

#include "job/job_int.h"

/* The options of opts_serve.c, by index into gpuplan__opts_serve.opts. */
enum {
  S_ENGINE = 0, S_ENGINE_VERSION, S_INPUT_LEN, S_OUTPUT_LEN, S_CONCURRENCY, S_RATE, S_LENGTHS, S_REPLICAS,
  S_QUANT, S_GPU_UTIL, S_MEM_FRAC, S_KV_FREE_FRAC, S_KV_MAX_TOKENS, S_MAX_SEQS, S_MAX_BATCHED, S_CHUNKED,
  S_EAGER, S_SCHED_STEPS, S_PREFIX_HIT, S_NON_TORCH, S_GRAPH_MEM, S_TOTAL_MEM,
  S_SLO_TTFT, S_SLO_ITL, S_SLO_QUANTILE, S_SEARCH, S_MAX_TP, S_PRICE,
  S_VALIDATE, S_VALIDATE_ROWS, S_CONSTANTS, S_VALIDATE_DETAIL,
  S_COUNT
};
#define SOPT(id) (&gpuplan__opts_serve.opts[id])

#endif /* GPUPLAN_SERVE_JOB_H */
