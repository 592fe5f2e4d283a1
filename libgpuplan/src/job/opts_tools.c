/*
 * opts_tools.c: options of replay, explain-oom, validate, catalog, version.
 */
#include "job/job_int.h"

static const gpuplan_option_info opts[] = {
  {"file", "file", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)", "the input file",
   C_REPLAY, GPUPLAN_OPTF_POSITIONAL, "input"},
};

const gpuplan__opt_table gpuplan__opts_tools = {opts, sizeof opts / sizeof opts[0]};
