/*
 * fuzz_oom.c: libFuzzer target for reading PyTorch's out-of-memory messages
 * (gpuplan_oom_parse) and explaining them (gpuplan_oom_explain).
 *
 * Any text must parse to GPUPLAN_OK or GPUPLAN_EINVAL (with a message); a
 * parsed message must be explained (GPUPLAN_OK, a verdict in range, text
 * that mentions it), and its figures must be consistent: reserved is
 * allocated plus unallocated.  Nothing may leak.
 */
#include <stdint.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpuplan_ctx_options co = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  gpuplan_oom_info o;
  gpuplan_oom_verdict v;
  counter c = {0};
  char *text, *expl = NULL;
  int rc;
  if (size > 1 << 16) return 0;
  text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  co.allocator.fn = counting;
  co.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &co) != GPUPLAN_OK) abort();
  rc = gpuplan_oom_parse(ctx, text, &o);
  if (rc == GPUPLAN_EINVAL) {
    if (!gpuplan_errmsg(ctx)[0]) abort();
  } else if (rc != GPUPLAN_OK) {
    abort();
  } else {
    if (o.messages < 1) abort();
    if (o.format == 1 && o.reserved != o.allocated + o.unallocated && o.reserved > o.allocated) abort();
    if (o.format == 2 && o.reserved != o.allocated + o.unallocated) abort();
    if (o.partial && (o.total || o.free || o.allocated || o.unallocated)) abort();
    if (gpuplan_oom_explain(ctx, &o, &v, &expl) != GPUPLAN_OK) abort();
    if ((unsigned)v > GPUPLAN_OOM_UNKNOWN || !expl || !strstr(expl, "Verdict: ")) abort();
    gpuplan_free(ctx, expl);
  }
  gpuplan_ctx_free(ctx);
  free(text);
  if (c.blocks != 0) abort();
  return 0;
}
