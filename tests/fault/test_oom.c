/*
 * test_oom.c: out-of-memory sweeps (SQLite's faultsim, Lua's failnext).
 * Each scenario runs with "fail allocation N" for N = 0, 1, 2, ... until it
 * succeeds with no failure injected, in transient (one failure) and
 * persistent (every allocation from N on fails) modes.  The only acceptable
 * results are GPUPLAN_OK or GPUPLAN_ENOMEM with its message; nothing leaks;
 * the context stays usable.
 */
#include <stdio.h>
#include <unistd.h>

#include "../unit/testutil.h"

typedef int (*scenario)(gpuplan_ctx *ctx, const char *arg);

static int sc_open_default(gpuplan_ctx *ctx, const char *arg) {
  gpuplan_catalog *cat = NULL;
  int rc = gpuplan_catalog_open_default(ctx, &cat);
  (void)arg;
  if (rc == GPUPLAN_OK) assert_true(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU) >= 17);
  else assert_null(cat);
  gpuplan_catalog_free(cat);
  return rc;
}

static int sc_open_layered(gpuplan_ctx *ctx, const char *path) {
  gpuplan_catalog *cat = NULL;
  int rc = gpuplan_catalog_open(ctx, path, GPUPLAN_CATALOG_LAYER, &cat);
  gpuplan_catalog_free(cat);
  return rc;
}

/* Lookups on a catalog opened without failures. */
static gpuplan_catalog *shared_cat;

static int sc_lookups(gpuplan_ctx *ctx, const char *arg) {
  const void *r;
  int rc;
  static const struct { gpuplan_kind k; const char *name; int expect; } q[] = {
    {GPUPLAN_KIND_GPU, "h100 sxm", GPUPLAN_OK},
    {GPUPLAN_KIND_GPU, "h100", GPUPLAN_EAMBIGUOUS},
    {GPUPLAN_KIND_GPU, "h10O-sxm", GPUPLAN_ENOTFOUND},
    {GPUPLAN_KIND_NODE, "nd96asr_v4", GPUPLAN_OK},
    {GPUPLAN_KIND_MODEL, "llama-2-7b", GPUPLAN_OK},
    {GPUPLAN_KIND_MODEL, "lamma", GPUPLAN_ENOTFOUND},
    {GPUPLAN_KIND_FABRIC, "ib-ndr", GPUPLAN_OK},
  };
  size_t i;
  (void)ctx;
  (void)arg;
  for (i = 0; i < sizeof q / sizeof q[0]; i++) {
    rc = gpuplan_catalog_find(shared_cat, q[i].k, q[i].name, &r);
    if (rc == GPUPLAN_ENOMEM) return rc;
    assert_int_equal(rc, q[i].expect);
  }
  return GPUPLAN_OK;
}

static int sc_import(gpuplan_ctx *ctx, const char *path) {
  gpuplan_catalog *cat = NULL;
  int rc;
  unlink(path);
  rc = gpuplan_catalog_open(ctx, path, GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat);
  if (rc == GPUPLAN_OK)
    rc = gpuplan_catalog_import(cat,
        "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
        "context_bytes,source) VALUES ('z','Z','A',8,8589934592,1e12,1,'s')");
  if (rc == GPUPLAN_OK) {
    const gpuplan_gpu *g;
    assert_int_equal(gpuplan_catalog_gpu(cat, "z", &g), GPUPLAN_OK);
  }
  gpuplan_catalog_free(cat);
  return rc;
}

static void sweep(scenario fn, const char *arg, int persistent, gpuplan_ctx *shared_ctx,
                  counting *shared_c) {
  long long n;
  for (n = 0;; n++) {
    counting c;
    gpuplan_ctx *ctx;
    int rc;
    counting *cc = shared_c ? shared_c : &c;
    if (!shared_c) {
      counting_init(&c);
      ctx = counting_ctx(&c);
    } else {
      ctx = shared_ctx;
    }
    cc->calls = 0;
    cc->failures = 0;
    cc->fail_at = n;
    cc->persistent = persistent;
    rc = fn(ctx, arg);
    cc->fail_at = -1;
    if (rc != GPUPLAN_OK && rc != GPUPLAN_ENOMEM)
      fprintf(stderr, "N=%lld: rc=%s %s\n", n, gpuplan_errname(rc), gpuplan_errmsg(ctx));
    assert_true(rc == GPUPLAN_OK || rc == GPUPLAN_ENOMEM);
    if (rc == GPUPLAN_ENOMEM) {
      assert_true(cc->failures > 0);
      assert_string_equal(gpuplan_errmsg(ctx), "out of memory");
    }
    /* The context is still usable: the same scenario succeeds now. */
    if (rc == GPUPLAN_ENOMEM && n % 7 == 0) assert_int_equal(fn(ctx, arg), GPUPLAN_OK);
    if (!shared_c) counting_done(&c, ctx);
    if (cc->failures == 0) {
      assert_int_equal(rc, GPUPLAN_OK);
      break;
    }
  }
  assert_true(n > 0); /* the scenario did allocate */
}

static void test_oom__open_default(void **state) {
  (void)state;
  sweep(sc_open_default, NULL, 0, NULL, NULL);
  sweep(sc_open_default, NULL, 1, NULL, NULL);
}

static void test_oom__open_layered_file(void **state) {
  char path[512];
  gpuplan_ctx *ctx = NULL;
  gpuplan_catalog *cat = NULL;
  (void)state;
  tmp_path(path, sizeof path, "oom-layer.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_open(ctx, path, GPUPLAN_CATALOG_CREATE, &cat), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  gpuplan_ctx_free(ctx);
  sweep(sc_open_layered, path, 0, NULL, NULL);
  sweep(sc_open_layered, path, 1, NULL, NULL);
  unlink(path);
}

static void test_oom__every_lookup(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &shared_cat), GPUPLAN_OK);
  /* Lookups need no allocation for a catalog this size; the sweep proves
   * they cannot fail with anything but their own answers. */
  {
    long long n;
    for (n = 0; n < 4; n++) {
      c.calls = 0;
      c.fail_at = n;
      c.persistent = 1;
      assert_int_equal(sc_lookups(ctx, NULL), GPUPLAN_OK);
    }
    c.fail_at = -1;
  }
  gpuplan_catalog_free(shared_cat);
  shared_cat = NULL;
  counting_done(&c, ctx);
}

static void test_oom__import(void **state) {
  char path[512];
  (void)state;
  tmp_path(path, sizeof path, "oom-import.sqlite");
  sweep(sc_import, path, 0, NULL, NULL);
  sweep(sc_import, path, 1, NULL, NULL);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_oom__open_default),
    cmocka_unit_test(test_oom__open_layered_file),
    cmocka_unit_test(test_oom__every_lookup),
    cmocka_unit_test(test_oom__import),
  };
  return cmocka_run_group_tests_name("oom", tests, NULL, NULL);
}
