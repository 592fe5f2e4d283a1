/*
 * fuzz_alloc_conf.c: libFuzzer target for the allocator settings parser
 * (gpuplan_alloc_conf_parse, PYTORCH_ALLOC_CONF's syntax).
 *
 * The input's first byte picks the torch release, the rest is the text.
 * The parse must give GPUPLAN_OK with settings the allocator accepts, or
 * GPUPLAN_EINVAL with a message naming the problem; an allocator built on
 * accepted settings then serves a few requests sized from the input.
 * Nothing may leak.  Any other outcome aborts, so libFuzzer records it.
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

static int pow2_or_zero(unsigned x) { return (x & (x - 1)) == 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpuplan_ctx_options co = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  gpuplan_alloc_conf conf;
  counter c = {0};
  char *text;
  int rc, k;
  gpuplan_torch_version torch;
  if (size < 1 || size > 4096) return 0;
  torch = (gpuplan_torch_version)(data[0] % 4);
  text = malloc(size);
  if (!text) return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0'; /* the parser takes C text: stops at a NUL */
  co.allocator.fn = counting;
  co.allocator.ud = &c;
  if (gpuplan_ctx_new(&ctx, &co) != GPUPLAN_OK) abort();
  rc = gpuplan_alloc_conf_parse(ctx, text, torch, &conf);
  if (rc == GPUPLAN_EINVAL) {
    if (!gpuplan_errmsg(ctx)[0]) abort();
  } else if (rc != GPUPLAN_OK) {
    abort();
  } else {
    gpuplan_cachealloc *a = NULL;
    uint64_t p[8];
    size_t i, n = 0;
    if (conf.max_split_size < (20u << 20)) abort();
    if (!(conf.memory_fraction >= 0 && conf.memory_fraction <= 1)) abort(); /* 0: PyTorch takes it */
    if (!(conf.garbage_collection_threshold >= 0 && conf.garbage_collection_threshold < 1)) abort();
    for (k = 0; k < 16; k++)
      if (!pow2_or_zero(conf.roundup_divisions[k])) abort();
    /* What parses, the allocator takes. */
    if (gpuplan_cachealloc_new(ctx, &conf, 1ull << 30, NULL, &a) != GPUPLAN_OK) abort();
    for (i = 0; i + 1 < size && i < 8; i++) {
      uint64_t sz = (uint64_t)data[i + 1] << (10 + data[i] % 12);
      rc = gpuplan_cachealloc_malloc(a, sz, 0, &p[n]);
      if (rc == GPUPLAN_OK) n++;
      else if (rc != GPUPLAN_EOOM) abort();
    }
    while (n) if (gpuplan_cachealloc_release(a, p[--n]) != GPUPLAN_OK) abort();
    if (gpuplan_cachealloc_empty_cache(a) != GPUPLAN_OK) abort();
    if (gpuplan_cachealloc_stats(a)->allocated_bytes[0].current != 0) abort();
    gpuplan_cachealloc_free(a);
  }
  gpuplan_ctx_free(ctx);
  free(text);
  if (c.blocks != 0) abort();
  return 0;
}
