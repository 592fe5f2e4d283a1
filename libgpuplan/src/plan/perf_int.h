/*
 * perf_int.h: what the search shares with the performance model.  Not
 * installed.
 */
#ifndef GPUPLAN_PERF_INT_H
#define GPUPLAN_PERF_INT_H

#include "common/internal.h"

/* gpuplan_perf_eval() without its checks and without the memory model:
 * the options are valid for the cluster (tp*pp*dp*cp = its GPUs, the
 * global batch a multiple of dp x micro_batch), k is a version the library
 * reads, and params_rank is gpuplan_memory.params_rank of the worst stage.
 * Writes ctx's error only on failure; allocates nothing (the search calls
 * it from worker threads, each with its own context). */
int gpuplan__perf_eval(gpuplan_ctx *ctx, const gpuplan_model *m, const gpuplan_cluster *c,
                       const gpuplan_memory_options *o, int64_t global_batch, double train_tokens,
                       const gpuplan_perf_constants *k, double params_rank, gpuplan_perf *out);

#endif /* GPUPLAN_PERF_INT_H */
