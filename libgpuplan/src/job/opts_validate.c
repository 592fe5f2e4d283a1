/*
 * opts_validate.c: options of validate.  The order matches the V_* enum of
 * validate_int.h.
 */
#include "job/validate_int.h"

static const gpuplan_option_info opts[] = {
  {"csv", "csv-file", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "(required)",
   "a CSV in the format of data/reference/training_runs_calibration.csv (its training_throughput rows)",
   C_VALIDATE, GPUPLAN_OPTF_POSITIONAL, "input"},
  {"constants", "constants", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "the framework profiles",
   "calibration: override model constants, name=value[,name=value...]; framework.name=value changes one "
   "framework's profile only (e.g. composer.overlap_eff=0.7)",
   C_VALIDATE, 0, "calibration"},
  {"rows", "rows", GPUPLAN_OPT_STRING, "", 0, 0, NULL, "every row",
   "only the rows with these ids (comma-separated, e.g. R0240,R0009)", C_VALIDATE, 0, "input"},
};

const gpuplan__opt_table gpuplan__opts_validate = {opts, sizeof opts / sizeof opts[0]};

typedef char gpuplan__opts_validate_count_check[(sizeof opts / sizeof opts[0]) == V_COUNT ? 1 : -1];
