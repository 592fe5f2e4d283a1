/*
 * cmd_tools.c: the replay, explain-oom, validate, catalog and version commands.
 */
#include "job/job_int.h"

int gpuplan__cmd_version(gpuplan_job *job, gpuplan_doc **out) {
  gpuplan__docb *b = gpuplan__doc_begin(job->ctx, "version");
  if (!b) return gpuplan_errcode(job->ctx);
  gpuplan__doc_str(b, "version", gpuplan_version_string());
  gpuplan__doc_int(b, "catalog_schema", gpuplan_catalog_schema_latest());
  return gpuplan__doc_finish(b, out);
}

#define TODO(name, what)                                                                  \
  int gpuplan__cmd_##name(gpuplan_job *job, gpuplan_doc **out) {                          \
    (void)out;                                                                            \
    return gpuplan__error(job->ctx, GPUPLAN_EUNSUPPORTED, what " is not moved to the job API yet"); \
  }
TODO(replay, "replay")
TODO(explain, "explain-oom")
TODO(catalog, "catalog")
