/*
 * opts_serve.c: options of the serve command.
 */
#include "job/job_int.h"

static const gpuplan_option_info opts[] = {
  {"engine", "engine", GPUPLAN_OPT_ENUM, "", 0, 0, "vllm|sglang|trtllm", "vllm", "the serving engine", C_SERVE, 0,
   "serving"},
};

const gpuplan__opt_table gpuplan__opts_serve = {opts, sizeof opts / sizeof opts[0]};
