/*
 * testutil.h: the counting allocator every test context uses.  It counts live
 * blocks and bytes exactly (lua_Alloc's osize makes that possible), and can
 * be told to fail the Nth allocation (transient) or every allocation from
 * the Nth on (persistent), for out-of-memory sweeps.
 */
#ifndef GPUPLAN_TESTUTIL_H
#define GPUPLAN_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpuplan.h"
#include "gpuplan/backend.h"

typedef struct counting {
  long blocks;          /* live blocks */
  long long bytes;      /* live bytes */
  long long calls;      /* allocations and growths so far */
  long long fail_at;    /* fail the call with this index (-1: never) */
  int persistent;       /* keep failing after fail_at */
  long long failures;   /* injected failures */
} counting;

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  counting *c = ud;
  void *p;
  if (nsize == 0) {
    if (ptr) {
      c->blocks--;
      c->bytes -= (long long)osize;
    }
    free(ptr);
    return NULL;
  }
  if (!ptr || nsize > osize) {
    long long i = c->calls++;
    if (c->fail_at >= 0 && (i == c->fail_at || (c->persistent && i > c->fail_at))) {
      c->failures++;
      return NULL;
    }
  }
  p = realloc(ptr, nsize);
  if (!p) return NULL;
  if (!ptr) {
    c->blocks++;
    c->bytes += (long long)nsize;
  } else {
    c->bytes += (long long)nsize - (long long)osize;
  }
  return p;
}

static inline void counting_init(counting *c) {
  memset(c, 0, sizeof *c);
  c->fail_at = -1;
}

/* A context over a counting allocator. */
static inline gpuplan_ctx *counting_ctx(counting *c) {
  gpuplan_ctx_options o = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  o.allocator.fn = counting_alloc;
  o.allocator.ud = c;
  assert_int_equal(gpuplan_ctx_new(&ctx, &o), GPUPLAN_OK);
  return ctx;
}

/* Free the context and fail the test on any leak. */
static inline void counting_done(counting *c, gpuplan_ctx *ctx) {
  gpuplan_ctx_free(ctx);
  assert_int_equal(c->blocks, 0);
  assert_int_equal(c->bytes, 0);
}

/* Path of a scratch file; GPUPLAN_TEST_TMP is set by CTest.  A test run by
 * hand writes to /tmp, never into the source tree it is run from. */
static inline void tmp_path(char *buf, size_t cap, const char *name) {
  const char *dir = getenv("GPUPLAN_TEST_TMP");
  snprintf(buf, cap, "%s/%s", dir && *dir ? dir : "/tmp", name);
}

/* A fixture: a counting context and the built-in catalog. */
typedef struct fixture {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
} fixture;

static inline int fixture_setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  counting_init(&f->c);
  f->ctx = counting_ctx(&f->c);
  assert_int_equal(gpuplan_catalog_open_default(f->ctx, &f->cat), GPUPLAN_OK);
  *state = f;
  return 0;
}

static inline int fixture_teardown(void **state) {
  fixture *f = *state;
  gpuplan_catalog_free(f->cat);
  counting_done(&f->c, f->ctx);
  free(f);
  return 0;
}

#endif
