/*
 * opts_validate.c: options of validate.
 */
#include "job/job_int.h"

static const gpuplan_option_info opts[] = {
  {"csv", "csv-file", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)", "the calibration CSV file",
   C_VALIDATE, GPUPLAN_OPTF_POSITIONAL, "input"},
};

const gpuplan__opt_table gpuplan__opts_validate = {opts, sizeof opts / sizeof opts[0]};
