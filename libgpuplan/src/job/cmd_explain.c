/*
 * cmd_explain.c: the explain-oom command: a PyTorch out-of-memory message
 * (or a log holding one) read back, diagnosed, and the fixes in order.
 */
#include <string.h>

#include "alloc/alloc_int.h"
#include "job/tools_int.h"

static const char *const verdicts[] = {"fragmentation", "mixed", "demand", "other-process", "fraction",
                                       "unknown"};

/* A size the message gave, or null when it did not say. */
static void put_size(gpuplan__docb *b, const char *key, int known, uint64_t v) {
  if (known) gpuplan__doc_uint(b, key, v);
  else gpuplan__doc_null(b, key);
}

int gpuplan__cmd_explain(gpuplan_job *j, gpuplan_doc **out) {
  const char *msg = gpuplan__job_str(j, TOPT(T_MESSAGE), NULL);
  gpuplan_oom_info o;
  gpuplan_oom_verdict v;
  gpuplan__docb *b;
  char *text = NULL;
  int rc, full;
  if (!msg)
    return gpuplan__opt_error(j->ctx, GPUPLAN_EINVAL, TOPT(T_MESSAGE),
                              "explain-oom needs the OutOfMemoryError text (or a log holding it)");
  GPUPLAN_TRY(gpuplan_oom_parse(j->ctx, msg, &o));
  GPUPLAN_TRY(gpuplan_oom_explain(j->ctx, &o, &v, &text));
  full = !o.partial;
  if (!(b = gpuplan__doc_begin(j->ctx, "explain-oom"))) {
    gpuplan_free(j->ctx, text);
    return gpuplan_errcode(j->ctx);
  }
  gpuplan__doc_str(b, "verdict", verdicts[(unsigned)v < 6 ? v : 5]);
  gpuplan__doc_int(b, "format", o.format);
  gpuplan__doc_int(b, "device", o.device);
  gpuplan__doc_bool(b, "partial", o.partial);
  gpuplan__doc_bool(b, "cuda_error", o.cuda_error);
  gpuplan__doc_int(b, "messages", o.messages);
  if (o.rank >= 0) gpuplan__doc_int(b, "rank", o.rank);
  else gpuplan__doc_null(b, "rank");
  put_size(b, "tried_bytes", !o.cuda_error && o.tried != UINT64_MAX, o.tried); /* (1EB: more than said) */
  put_size(b, "total_bytes", full, o.total);
  put_size(b, "free_bytes", full, o.free);
  put_size(b, "allocated_bytes", full, o.allocated);
  put_size(b, "reserved_unallocated_bytes", full, o.unallocated);
  put_size(b, "reserved_bytes", full, o.reserved);
  gpuplan__doc_uint(b, "process_bytes", o.process);
  gpuplan__doc_bool(b, "process_listed", o.self_listed);
  if (o.conf_var) gpuplan__doc_str(b, "conf_variable", gpuplan__oom_conf_var(o.conf_var));
  else gpuplan__doc_null(b, "conf_variable");
  gpuplan__doc_uint(b, "other_processes_bytes", o.others);
  gpuplan__doc_int(b, "other_processes", o.nprocs);
  gpuplan__doc_uint(b, "allowed_bytes", o.allowed);
  gpuplan__doc_uint(b, "private_pools_bytes", o.private_pools);
  gpuplan__doc_str(b, "explanation", text);
  gpuplan_free(j->ctx, text);
  rc = gpuplan__doc_finish(b, out);
  return rc;
}
