/*
 * cmd_serve.c: the serve command.
 */
#include "job/job_int.h"

int gpuplan__cmd_serve(gpuplan_job *job, gpuplan_doc **out) {
  (void)out;
  return gpuplan__error(job->ctx, GPUPLAN_EUNSUPPORTED, "serve is not implemented yet");
}
