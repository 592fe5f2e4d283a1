/*
 * fuzz_snapshot.c: libFuzzer target for snapshot load + replay (issue 14:
 * "fuzz targets ... for snapshot load + replay").
 *
 * Each input is a torch.cuda.memory._dump_snapshot() pickle.  It is loaded
 * from the buffer; a snapshot that loads is replayed exactly (the recorded
 * addresses checked), then "what if" under expandable segments with a
 * small device and under a rounding/garbage-collection conf, and the
 * result is read.  Every call must return a status code, fill the result
 * consistently (peak reserved >= peak allocated, an OOM event inside the
 * trace) and leak nothing; anything else aborts, so libFuzzer records the
 * input.  The library's sources are compiled into the target (coverage
 * instrumented), as its internal symbols are hidden.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuplan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct counter {
  long long blocks;
} counter;

static void *counting(void *ud, void *ptr, size_t osize, size_t nsize) {
  counter *c = ud;
  void *p;
  (void)osize;
  if (nsize == 0) {
    if (ptr) c->blocks--;
    free(ptr);
    return NULL;
  }
  p = realloc(ptr, nsize);
  if (p && !ptr) c->blocks++;
  return p;
}

static void check(const gpuplan_snapshot *s, const gpuplan_replay_result *r) {
  size_t n = gpuplan_snapshot_event_count(s);
  if (r->peak_reserved < r->peak_allocated) abort();
  if (r->final_reserved < r->final_allocated) abort();
  /* an OOM names an event of the trace (0 also when the start state does not fit) */
  if (r->oom_event != SIZE_MAX && r->oom_event > n) abort();
  if (r->num_ooms < 0 || r->num_alloc_retries < 0) abort();
  if (memchr(r->oom_message, '\0', sizeof r->oom_message) == NULL) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *confs[] = {"expandable_segments:True",
                                "max_split_size_mb:20,roundup_power2_divisions:4,garbage_collection_threshold:0.6"};
  counter c = {0};
  gpuplan_ctx_options co = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r;
  size_t i;
  int rc;
  co.allocator.fn = counting;
  co.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &co) != GPUPLAN_OK) abort();
  rc = gpuplan_snapshot_load_buffer(ctx, data, size, 0, &s);
  if (rc == GPUPLAN_OK) {
    if (!s) abort();
    memset(&r, 0, sizeof r);
    rc = gpuplan_snapshot_replay(ctx, s, NULL, &r);
    if (rc == GPUPLAN_OK) check(s, &r);
    else if (rc != GPUPLAN_EUNSUPPORTED && rc != GPUPLAN_EINVAL && rc != GPUPLAN_ENOMEM) abort();
    for (i = 0; i < sizeof confs / sizeof confs[0]; i++) {
      gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
      o.alloc_conf = confs[i];
      o.capacity = i == 0 ? 64u << 20 : 0; /* a small device: the OOM path */
      memset(&r, 0, sizeof r);
      rc = gpuplan_snapshot_replay(ctx, s, &o, &r);
      if (rc == GPUPLAN_OK) check(s, &r);
      else if (rc != GPUPLAN_EINVAL && rc != GPUPLAN_ENOMEM) abort();
    }
    gpuplan_snapshot_free(s);
  } else if (s) {
    abort(); /* a failed load returns nothing */
  }
  gpuplan_ctx_free(ctx);
  if (c.blocks != 0) abort();
  return 0;
}
