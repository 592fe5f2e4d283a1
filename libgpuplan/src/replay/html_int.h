/*
 * html_int.h: the replay command's HTML page (html.c): the allocated and
 * reserved bytes over the replay, the peak, the segment map at the peak (and
 * at the OOM), from the replay's result and timeline and the allocator
 * model's own trace entries.  Not installed.
 */
#ifndef GPUPLAN_REPLAY_HTML_INT_H
#define GPUPLAN_REPLAY_HTML_INT_H

#include "common/internal.h"
#include "replay/replay_int.h"

/* What the model did during a replay: pass gpuplan__html_trace with the
 * recorder as gpuplan_replay_options.trace / trace_payload, and x (with
 * timeline set) as the replay's ext: each entry is tagged with the trace
 * event being replayed (x->tl_n while it runs). */
typedef struct gpuplan__html gpuplan__html;

int gpuplan__html_new(gpuplan_ctx *ctx, const gpuplan__replay_ext *x, gpuplan__html **out);
void gpuplan__html_trace(void *payload, const gpuplan_alloc_event *ev);
void gpuplan__html_free(gpuplan__html *h);

/* The page's header, as the replay document says it. */
typedef struct gpuplan__html_page {
  const char *path;              /* where to write the page */
  const char *file;              /* the snapshot file; NULL: given as data */
  const void *data;              /* ... then its bytes */
  size_t len;
  int device;
  const char *mode;              /* "exact" or "what-if" */
  const char *torch, *rules;     /* the release and its behaviour class */
  const char *alloc_conf;        /* the settings replayed (NULL: the defaults) */
  const char *alloc_conf_source; /* option, an environment variable, snapshot, defaults */
  const char *gpu;               /* the catalog GPU the capacity came from, or NULL */
  uint64_t capacity;             /* 0: unlimited */
  const gpuplan_alloc_conf *conf; /* the settings as parsed (block rounding) */
} gpuplan__html_page;

/* Write the page.  GPUPLAN_OK; GPUPLAN_EIO ("html: cannot write ..."),
 * GPUPLAN_ENOMEM, or the snapshot reader's error. */
int gpuplan__html_write(gpuplan__html *h, const gpuplan__html_page *pg, const gpuplan_snapshot *s,
                        const gpuplan_replay_result *r, const gpuplan__replay_ext *x);

#endif /* GPUPLAN_REPLAY_HTML_INT_H */
