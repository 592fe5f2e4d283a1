/*
 * gpuplan/replay.h: real PyTorch memory snapshots, replayed through the
 * caching-allocator model (gpuplan/cachealloc.h).
 *
 * A snapshot is the pickle written by torch.cuda.memory._dump_snapshot().
 * It is read directly in C by a reader that accepts only plain data (dict,
 * list, tuple, str, bytes, int, float, bool, None) and refuses every pickle
 * opcode that imports or calls.  Replay runs the recorded trace through the
 * allocator model.  Traces that start mid-run (the history is a ring
 * buffer) get their starting state rebuilt by undoing the trace backwards
 * from the file's final `segments` (allocator-rules.md section 8).
 */
#ifndef GPUPLAN_REPLAY_H
#define GPUPLAN_REPLAY_H

#include "common.h"
#include "ctx.h"
#include "cachealloc.h"
#include "job.h"

GPUPLAN_BEGIN_DECLS

/** A loaded snapshot (immutable after load). */
typedef struct gpuplan_snapshot gpuplan_snapshot;

/**
 * Load a snapshot pickle from a file.
 *
 * Only what a replay reads is kept: the stack frames of blocks and trace
 * entries ("frames", most of a file's bytes), their times and compile
 * contexts are read through, opcode by opcode with the same refusals, but
 * not built, so that a cycle or a nesting limit inside them is not an
 * error.  The state the trace starts from is rebuilt here, once for every
 * replay of the snapshot.
 * @param device  which device's trace and segments to use (usually 0).
 * @param[out] out  freed with gpuplan_snapshot_free().
 * @return GPUPLAN_OK; GPUPLAN_ENOTFOUND / GPUPLAN_EIO (file); GPUPLAN_EINVAL
 *         (not a pickle, a hostile pickle, or not a memory snapshot: the
 *         message names the offset, opcode or field); GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.1.0 (frames skipped, start state rebuilt at load since 0.2.0)
 */
GPUPLAN_API int gpuplan_snapshot_load(gpuplan_ctx *ctx, const char *path, int device,
                                      gpuplan_snapshot **out);

/** The same from a buffer (not retained).  @errors any  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_snapshot_load_buffer(gpuplan_ctx *ctx, const void *buf, size_t len,
                                             int device, gpuplan_snapshot **out);

/** Free a snapshot.  Accepts NULL.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API void gpuplan_snapshot_free(gpuplan_snapshot *s);

/** Trace events of the chosen device.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API size_t gpuplan_snapshot_event_count(const gpuplan_snapshot *s);
/** Event i (borrowed), or NULL.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API const gpuplan_alloc_event *gpuplan_snapshot_event(const gpuplan_snapshot *s, size_t i);
/** Segments of the chosen device in the file's final state.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API size_t gpuplan_snapshot_segment_count(const gpuplan_snapshot *s);
/** The allocator settings recorded in the file (defaults when absent).  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API const gpuplan_alloc_conf *gpuplan_snapshot_conf(const gpuplan_snapshot *s);

#define GPUPLAN_REPLAY_OPTIONS_VERSION 2

/** How to replay. */
typedef struct gpuplan_replay_options {
  unsigned version;
  /** NULL: exact replay with the file's own settings, on a device that
   * gives back the recorded segment addresses (the check).  Otherwise a
   * PYTORCH_CUDA_ALLOC_CONF string: replay "what if" under these settings. */
  const char *alloc_conf;
  gpuplan_torch_version torch;
  /** What-if device capacity in bytes PyTorch can use; 0 = unlimited. */
  uint64_t capacity;
  /** Called with each allocator trace entry of the replay (may be NULL). */
  gpuplan_alloc_trace_fn trace;
  void *trace_payload;
  /** What-if: the device's total memory as the driver reports it
   * (cudaMemGetInfo's total: the "total capacity" of an OOM message), of
   * which capacity is what PyTorch can use (the rest: the CUDA context);
   * 0: capacity.  Version 2 and later.  @since 0.2.0 */
  uint64_t device_total;
} gpuplan_replay_options;

#define GPUPLAN_REPLAY_OPTIONS_INIT { GPUPLAN_REPLAY_OPTIONS_VERSION, NULL, GPUPLAN_TORCH_LATEST, 0, NULL, NULL, 0 }

/** What a replay found (a plain value). */
typedef struct gpuplan_replay_result {
  int exact;                 /**< exact mode: every alloc address, segment size and the final layout
                                  matched (0 for a trace with no events: nothing was checked) */
  int rebuilt_start;         /**< the trace started mid-run; its start state was rebuilt */
  size_t events;             /**< trace events processed */
  size_t allocs;             /**< alloc events matched (exact) or replayed */
  size_t segment_allocs;     /**< cudaMallocs */
  size_t diverged_at;        /**< first diverging event index, or SIZE_MAX */
  char divergence[512];      /**< what differed there */
  uint64_t start_allocated, start_reserved;
  uint64_t peak_allocated, peak_reserved, final_allocated, final_reserved;
  uint64_t allocated_at_peak_reserved;
  uint64_t largest_free_at_peak, total_free_at_peak;
  double fragmentation;      /**< 1 - peak allocated / peak reserved */
  int64_t num_alloc_retries, num_ooms;
  size_t oom_event;          /**< first event that ran out of memory, or SIZE_MAX */
  char oom_message[1024];    /**< PyTorch's text for it */
} gpuplan_replay_result;

/**
 * Replay a snapshot.  A trace that starts mid-run gets its start state
 * rebuilt; where the file does not fix it (a block handed out whole before
 * the trace may have been up to 1 MiB longer than its request), the sizes
 * are learnt from the trace, and the job API's document says which events
 * could not be checked (gpuplan_job_run(job, "replay")).
 * @param options  NULL for an exact replay.
 * @return GPUPLAN_OK (inspect out: a divergence or an OOM is a result, not
 *         an error); GPUPLAN_EINVAL (bad alloc_conf); GPUPLAN_ENOMEM.
 *         Traces recorded with expandable segments are checked exactly
 *         too (since 0.3: each reservation at the base its first
 *         segment_map shows, every map and unmap checked).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_snapshot_replay(gpuplan_ctx *ctx, const gpuplan_snapshot *s,
                                        const gpuplan_replay_options *options,
                                        gpuplan_replay_result *out);

/**
 * The replay command of the job API on a snapshot held in memory (the bytes
 * of a .pickle: a Dask worker's, a download's) instead of a file: the same
 * options as gpuplan_job_run(job, "replay", out) (alloc_conf, capacity, gpu,
 * torch, device, summary, timeline, ...) and the same document, whose
 * "file" is then null.  The option `file` must be unset.  The bytes are
 * read during the call and not retained.
 *
 * This is the entry point for bindings whose users hold bytes, not paths:
 * a job option is text, and a pickle is binary.
 *
 * @param data  the pickle (len bytes; may hold NUL bytes).
 * @param[out] out  the "replay" document (gpuplan_doc_free); NULL on error.
 * @return as gpuplan_job_run(): GPUPLAN_OK; GPUPLAN_EINVAL (an option replay
 *         does not take, file set, not a snapshot, a bad alloc_conf);
 *         GPUPLAN_ENOTFOUND (gpu not in the catalog); GPUPLAN_EUNSUPPORTED;
 *         GPUPLAN_ENOMEM.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_job_run_snapshot(gpuplan_job *job, const void *data, size_t len,
                                         gpuplan_doc **out);

/** Collects allocator trace entries (to export them as a snapshot). */
typedef struct gpuplan_recorder gpuplan_recorder;

/** Create a recorder.  @errors nomem  @threads ctx  @since 0.1.0 */
GPUPLAN_API int gpuplan_recorder_new(gpuplan_ctx *ctx, gpuplan_recorder **out);
/** Free a recorder.  Accepts NULL.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API void gpuplan_recorder_free(gpuplan_recorder *r);
/** A gpuplan_alloc_trace_fn: pass it with the recorder as payload.  @errors none  @threads any  @since 0.1.0 */
GPUPLAN_API void gpuplan_recorder_trace(void *recorder, const gpuplan_alloc_event *ev);
/** Number of entries recorded.  @errors none  @threads ctx  @since 0.1.0 */
GPUPLAN_API size_t gpuplan_recorder_count(const gpuplan_recorder *r);

/**
 * Name what the allocations recorded from now on are for: written as the
 * "frames" of their trace entries and blocks ([{name, filename, line}]),
 * which PyTorch's memory viewer shows for each block (simulate names a
 * step program's phase, layer and tensor: name "forward layer 12: fc1
 * output (activation input)", filename "gpuplan simulate", line the step;
 * a captured step's file is "gpuplan simulate (CUDA graph capture)").
 * A free's entry names the frame of the allocation it frees.  Strings are
 * copied; a frame met before is found again in constant time.  NULL name:
 * no frame from now on (entries then name gpuplan's model).
 * @return GPUPLAN_OK, GPUPLAN_ENOMEM, GPUPLAN_EMISUSE (NULL recorder).
 * @errors nomem  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_recorder_set_frame(gpuplan_recorder *r, const char *name, const char *filename,
                                           int line);

/**
 * The time of the entries recorded from now on, in microseconds since the
 * epoch (a modelled clock: step start + modelled op times).  Without a
 * call, entries carry no "time_us", rather than a made-up one.
 * @errors none  @threads ctx  @since 0.2.0
 */
GPUPLAN_API void gpuplan_recorder_set_time(gpuplan_recorder *r, int64_t time_us);

/**
 * Write a torch.cuda.memory._dump_snapshot()-format pickle: the allocator's
 * current segments and blocks, the recorded trace as device 0's history,
 * and the allocator settings.  PyTorch's memory_viz (pytorch.org/memory_viz)
 * opens it, and gpuplan_snapshot_load() reads it back: a trace longer than
 * the reader takes (about 2.5 million entries) is written as its last
 * entries, as PyTorch's own ring buffer keeps them, and the replay rebuilds
 * the state they start from.  Entries and blocks carry frames (see
 * gpuplan_recorder_set_frame()) and, when given, times.
 * @return GPUPLAN_OK; GPUPLAN_EIO (cannot write path); GPUPLAN_ENOMEM
 *         (including a recorder that ran out of memory while recording).
 * @errors any  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_snapshot_write(gpuplan_cachealloc *a, const gpuplan_recorder *rec,
                                       const char *path);

/**
 * gpuplan_snapshot_write() in the layout of a torch release.  1.13: the
 * list of segments torch.cuda.memory_snapshot() returned in 1.13 (segment
 * dicts with device, address, total_size, allocated_size, active_size,
 * stream, segment_type and blocks of size and state; an allocated block's
 * history holds its allocation: addr, real_size and frames), which 1.13's
 * torch.cuda._memory_viz (stats, segments, memory) reads; that release
 * kept no trace in a snapshot, so none is written.  Any other release:
 * as gpuplan_snapshot_write().
 * @return as gpuplan_snapshot_write(); GPUPLAN_EINVAL for an unknown torch.
 * @errors any  @threads ctx  @since 0.2.0
 */
GPUPLAN_API int gpuplan_snapshot_write_as(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path,
                                          gpuplan_torch_version torch);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_REPLAY_H */
