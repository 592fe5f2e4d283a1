/*
 * opts_model.c: options that describe a model instead of naming one
 * (hyperparameters, a Hugging Face config.json, implementation profiles).
 * Read by the planning commands' resolution (job/cmd_train.c resolve()).
 */
#include "job/job_int.h"

#define TRAINING (C_PLAN | C_PERF | C_SEARCH | C_SIMULATE | C_SERVE)

static const gpuplan_option_info opts[] = {
  {"layers", "layers", GPUPLAN_OPT_INT, "layers", 1, 4096, NULL, "the model's",
   "transformer layers (with hidden, heads, ...: describe a model by its shape)", TRAINING, 0, "model shape"},
};

const gpuplan__opt_table gpuplan__opts_model = {opts, sizeof opts / sizeof opts[0]};
