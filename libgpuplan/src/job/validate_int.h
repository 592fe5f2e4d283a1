/*
 * validate_int.h: the options of validate (opts_validate.c), by index, for
 * its command (cmd_validate.c).  Not installed.
 */
#ifndef GPUPLAN_VALIDATE_INT_H
#define GPUPLAN_VALIDATE_INT_H

#include "job/job_int.h"

/* The options of opts_validate.c, by index into gpuplan__opts_validate.opts. */
enum {
  V_CSV = 0,     /* the calibration-format CSV file (positional) */
  V_CONSTANTS,   /* name=value,... over the framework profiles (calibration) */
  V_ROWS,        /* only these row ids (comma-separated) */
  V_COUNT
};
#define VOPT(id) (&gpuplan__opts_validate.opts[id])

#endif /* GPUPLAN_VALIDATE_INT_H */
