/*
 * gpuplan.h: the map of gpuplan.
 *
 * gpuplan plans GPU memory and simulates deep-learning training on models
 * of real hardware: what fits (per-GPU memory by component under any
 * parallel layout, and the cheapest change that makes it fit), how fast and
 * at what cost (step time, MFU, traffic per link, $ per hour and per million
 * tokens, the best layout), and why a run failed (PyTorch's CUDA caching
 * allocator emulated rule for rule: real torch.cuda.memory snapshots replay
 * at their recorded addresses).  Every hardware figure comes from a catalog
 * whose rows carry their sources.
 *
 * The library has no global state and needs no global init.  Everything
 * hangs off a context (gpuplan_ctx: allocator, last error), and one thread at
 * a time uses a context and its children.
 *
 * ---------------------------------------------------------------------------
 * 1. The simple API: a job, set by name, answered by a document
 * ---------------------------------------------------------------------------
 *
 *     gpuplan_ctx *ctx;  gpuplan_catalog *cat;  gpuplan_job *job;  gpuplan_doc *doc;
 *     gpuplan_ctx_new(&ctx, NULL);                      gpuplan/ctx.h
 *     gpuplan_catalog_open_default(ctx, &cat);          gpuplan/catalog.h
 *     gpuplan_job_new(ctx, cat, &job);                  gpuplan/job.h
 *     gpuplan_job_set(job, "model", "llama-2-13b");
 *     gpuplan_job_set(job, "gpu", "a100-80gb");
 *     gpuplan_job_set(job, "gpus", "8");
 *     gpuplan_job_set(job, "fsdp", "full");
 *     gpuplan_job_run(job, "plan", &doc);               any command: plan, perf,
 *                                                       search, simulate, replay,
 *                                                       explain-oom, smi, topo,
 *                                                       doctor, validate, catalog,
 *                                                       version
 *     puts(gpuplan_doc_json(doc, GPUPLAN_JSON_PRETTY, NULL));   gpuplan/doc.h
 *     gpuplan_value_get(gpuplan_doc_root(doc), "worst") ...     typed getters
 *     gpuplan_doc_free(doc);  gpuplan_job_free(job);
 *     gpuplan_catalog_free(cat);  gpuplan_ctx_free(ctx);
 *
 * The options (gpuplan_job_option()) are one table: the CLI's flags, the
 * Python keyword arguments and the Lua table fields are its names, and the
 * library parses and range-checks every value, naming the option in its
 * errors.  The documents are the results of every front end: `gpuplan
 * COMMAND --json` prints one, Python wraps one, Lua converts one; each has a
 * "schema" key ("gpuplan.plan/1") and a field description
 * (gpuplan_result_fields()).  docs/options.md and docs/results.md are
 * generated from the two tables.  examples/c/plan.c is a complete program.
 *
 * ---------------------------------------------------------------------------
 * 2. Stable building blocks
 * ---------------------------------------------------------------------------
 *
 *   gpuplan/errors.h       status codes (pinned values), messages
 *   gpuplan/hostalloc.h    the host allocator hook (lua_Alloc-compatible)
 *   gpuplan/ctx.h          contexts, the library's version
 *   gpuplan/catalog.h      GPUs, nodes/VMs, models, fabrics: records with
 *                          sources; user catalog files and layers
 *   gpuplan/cachealloc.h   the caching-allocator model (gpuplan_cachealloc:
 *                          malloc/free/empty_cache, statistics, OOM text)
 *   gpuplan/replay.h       torch memory snapshots: load, replay, export
 *   gpuplan/backend.h      device backends: a real CUDA device (driver and
 *                          NVML loaded at run time) or the mock below
 *                          (included explicitly, not by this header)
 *   gpuplan/mock.h         mock GPUs with the seeds' faults (included
 *                          explicitly)
 *
 * ---------------------------------------------------------------------------
 * 3. The model layer (advanced; structures may grow between minor releases)
 * ---------------------------------------------------------------------------
 *
 *   gpuplan/memory.h       the analytic memory model (gpuplan_memory_eval)
 *   gpuplan/perf.h         the performance model, collectives, layout search
 *   gpuplan/simulate.h     step programs through the allocator model
 *
 * These take and fill caller-allocated structures for speed (a memory
 * evaluation is a few hundred nanoseconds).  Their layout is versioned
 * (a version field first; see docs/conventions.md, "ABI"), and code that
 * needs ABI stability across gpuplan releases uses the job API above, whose
 * objects are opaque.
 */
#ifndef GPUPLAN_H
#define GPUPLAN_H

#include "gpuplan/version.h"
#include "gpuplan/common.h"
#include "gpuplan/errors.h"
#include "gpuplan/hostalloc.h"
#include "gpuplan/ctx.h"
#include "gpuplan/catalog.h"
#include "gpuplan/doc.h"
#include "gpuplan/job.h"
#include "gpuplan/cachealloc.h"
#include "gpuplan/replay.h"
#include "gpuplan/memory.h"
#include "gpuplan/perf.h"
#include "gpuplan/simulate.h"

#endif /* GPUPLAN_H */
