/*
 * cmd_validate.c: the validate command (predicted vs measured runs).
 */
#include "job/job_int.h"

int gpuplan__cmd_validate(gpuplan_job *job, gpuplan_doc **out) {
  (void)out;
  return gpuplan__error(job->ctx, GPUPLAN_EUNSUPPORTED, "validate is not moved to the job API yet");
}
