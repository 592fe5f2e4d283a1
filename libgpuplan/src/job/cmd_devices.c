/*
 * cmd_devices.c: the smi, topo and doctor commands.
 */
#include "job/job_int.h"

#define TODO(name, what)                                                                  \
  int gpuplan__cmd_##name(gpuplan_job *job, gpuplan_doc **out) {                          \
    (void)out;                                                                            \
    return gpuplan__error(job->ctx, GPUPLAN_EUNSUPPORTED, what " is not moved to the job API yet"); \
  }
TODO(smi, "smi")
TODO(topo, "topo")
TODO(doctor, "doctor")
