/*
 * replay_int.h: what the replay command asks of a replay beyond
 * gpuplan_replay_result (the timeline, memory_summary(), warnings, the
 * events a rebuilt start cannot check).  Not installed.
 */
#ifndef GPUPLAN_REPLAY_INT_H
#define GPUPLAN_REPLAY_INT_H

#include "common/internal.h"

#define GPUPLAN__REPLAY_MAX_WARN 8

/* The allocator's own layout at one moment of a replay (layout_at_peak):
 * what the snapshot would show, segment by segment (an expandable
 * segment's mapped ranges, one each), blocks in address order. */
enum { GPUPLAN__LB_INACTIVE = 0, GPUPLAN__LB_ALLOCATED = 1, GPUPLAN__LB_PENDING_FREE = 2 };
typedef struct gpuplan__layout_block {
  uint64_t addr, size, requested;
  int state; /* GPUPLAN__LB_*: active_pending_free, a block freed by free_requested awaiting free_completed */
} gpuplan__layout_block;
typedef struct gpuplan__layout_seg {
  uint64_t addr, size, stream;
  int small;      /* the small pool's (else the large pool's) */
  int expandable; /* a mapped range of an expandable segment */
  uint64_t pool;   /* a private pool's (1 + its index among the file's), or 0: the default pools */
  size_t first, n; /* its blocks: blocks[first, first + n) */
} gpuplan__layout_seg;
typedef struct gpuplan__replay_layout {
  int valid;
  size_t event;    /* after this trace event; SIZE_MAX: the start (no event replayed) */
  gpuplan__layout_seg *segs;
  size_t nsegs;
  gpuplan__layout_block *blocks;
  size_t nblocks;
} gpuplan__replay_layout;

typedef struct gpuplan__replay_ext {
  /* in */
  int timeline;                 /* record memory after every trace event */
  int summary;                  /* produce memory_summary() at the end */
  int want_stats;               /* copy memory_stats() at the end into stats */
  int abbreviated;              /* ... without the pool rows */
  gpuplan_torch_version layout; /* ... in this release's layout */
  int layout_at_peak;           /* capture the allocator's layout at the timeline's peak of allocated
                                 * bytes and at the first OOM (a second replay up to them; needs timeline) */
  /* out (ctx-allocated; gpuplan__replay_ext_dispose frees) */
  char *summary_text;
  int64_t *tl_allocated, *tl_reserved; /* after trace event i */
  size_t tl_n, tl_cap;
  int tl_failed;
  size_t nwarn;                 /* warn[0, nwarn) */
  /* A rebuilt start the file does not determine (AL-1): events
   * [unchecked_from, unchecked_to) were replayed but cannot be checked, and
   * why (unchecked_why); SIZE_MAX when every event was checked. */
  size_t unchecked_from, unchecked_to;
  uint64_t div_model_addr;      /* internal: where the model put the allocation that diverged */
  /* layout_at_peak: lay[0] at the peak (the first event where the timeline's
   * allocated bytes are highest; with no event replayed, the start), lay[1]
   * at the first OOM when that is another event. */
  gpuplan__replay_layout lay[2];
  size_t lay_at[2];             /* internal: capture after these events (SIZE_MAX: not) */
  int lay_capturing;            /* internal: the second replay */
  int have_stats;               /* stats were taken (the replay ran to its end: not when it diverged) */
  gpuplan_alloc_stats stats;    /* want_stats: the allocator's statistics as the replay leaves it */
  char warn[GPUPLAN__REPLAY_MAX_WARN][400];
  char unchecked_why[768];
} gpuplan__replay_ext;

void gpuplan__replay_ext_init(gpuplan__replay_ext *x);
void gpuplan__replay_ext_dispose(gpuplan_ctx *ctx, gpuplan__replay_ext *x);

/* gpuplan_snapshot_replay, with the extras (x may be NULL). */
int gpuplan__snapshot_replay_ext(gpuplan_ctx *ctx, const gpuplan_snapshot *s,
                                 const gpuplan_replay_options *o, gpuplan_replay_result *r,
                                 gpuplan__replay_ext *x);

/* What the file says about itself. */
typedef struct gpuplan__snapshot_facts {
  const char *recorded_conf;  /* allocator_settings' PYTORCH_CUDA_ALLOC_CONF, or NULL */
  int has_settings;           /* the file has allocator_settings */
  int format;                 /* 1: torch 1.13's plain list of segments; 2: a dict */
  size_t traced_devices;      /* entries of device_traces */
  size_t segments_all;        /* segments of every device */
  size_t expandable_segments; /* segments with is_expandable */
  int expandable;             /* recorded with expandable segments (maps in the trace, settings, segments) */
  size_t annotations;         /* external_annotations of this device */
  size_t pools;               /* private pools (segment_pool_id not (0, 0)) among its segments */
  size_t private_segments;    /* its segments in them */
  int has_host;               /* the file has host_segments or host_traces (pinned host memory, PyTorch main) */
  size_t host_entries;        /* ... their entries (host_segments' segments and host_traces' trace entries); read, not replayed */
} gpuplan__snapshot_facts;
#define GPUPLAN__MAX_POOLS_SEEN 64 /* pools counts up to this many */
const gpuplan__snapshot_facts *gpuplan__snapshot_facts_of(const gpuplan_snapshot *s);

/* gpuplan_snapshot_write_as() with the settings' text the run was given
 * (conf_text, as PYTORCH_CUDA_ALLOC_CONF held it; NULL: as the public
 * function writes it), recorded as allocator_settings'
 * PYTORCH_CUDA_ALLOC_CONF so that a replay reads every setting back
 * (export.c). */
int gpuplan__snapshot_write_conf(gpuplan_cachealloc *a, const gpuplan_recorder *rec, const char *path,
                                 gpuplan_torch_version torch, const char *conf_text);

#endif /* GPUPLAN_REPLAY_INT_H */
