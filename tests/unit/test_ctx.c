/* test_ctx.c: context, allocator contract, error codes, version twins. */
#include <stdio.h>

#include "testutil.h"

static void test_ctx__new_and_free_do_not_leak(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(c.blocks, 1);
  assert_string_equal(gpuplan_errmsg(ctx), "not an error");
  assert_int_equal(gpuplan_errcode(ctx), GPUPLAN_OK);
  counting_done(&c, ctx);
}

static void test_ctx__default_allocator_works(void **state) {
  gpuplan_ctx *ctx = NULL;
  void *p;
  (void)state;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  p = gpuplan_malloc(ctx, 100);
  assert_non_null(p);
  memset(p, 1, 100);
  gpuplan_free(ctx, p);
  gpuplan_free(ctx, NULL);
  gpuplan_ctx_free(ctx);
  gpuplan_ctx_free(NULL);
}

static void test_ctx__new_fails_cleanly_when_allocator_refuses(void **state) {
  counting c;
  gpuplan_ctx_options o = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = (gpuplan_ctx *)&c;
  (void)state;
  counting_init(&c);
  c.fail_at = 0;
  o.allocator.fn = counting_alloc;
  o.allocator.ud = &c;
  assert_int_equal(gpuplan_ctx_new(&ctx, &o), GPUPLAN_ENOMEM);
  assert_null(ctx);
  assert_int_equal(c.blocks, 0);
}

static void test_ctx__bad_options_are_einval(void **state) {
  gpuplan_ctx_options o = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx *ctx = NULL;
  int dummy;
  (void)state;
  assert_int_equal(gpuplan_ctx_new(NULL, NULL), GPUPLAN_EINVAL);
  o.version = 99;
  assert_int_equal(gpuplan_ctx_new(&ctx, &o), GPUPLAN_EINVAL);
  o.version = 0;
  assert_int_equal(gpuplan_ctx_new(&ctx, &o), GPUPLAN_EINVAL);
  o.version = GPUPLAN_CTX_OPTIONS_VERSION;
  o.allocator.ud = &dummy;
  assert_int_equal(gpuplan_ctx_new(&ctx, &o), GPUPLAN_EINVAL);
  assert_null(ctx);
}

static void test_ctx__malloc_goes_through_the_hook_with_exact_sizes(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  void *p;
  long long before;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  before = c.bytes;
  p = gpuplan_malloc(ctx, 1000);
  assert_non_null(p);
  assert_true(c.bytes - before >= 1000);
  assert_int_equal(c.blocks, 2);
  assert_null(gpuplan_malloc(ctx, 0));
  gpuplan_free(ctx, p);
  assert_int_equal(c.bytes, before);
  counting_done(&c, ctx);
}

static void test_errors__codes_are_pinned(void **state) {
  (void)state;
  assert_int_equal(GPUPLAN_OK, 0);
  assert_int_equal(GPUPLAN_ERROR, -1);
  assert_int_equal(GPUPLAN_ENOMEM, -2);
  assert_int_equal(GPUPLAN_EINVAL, -3);
  assert_int_equal(GPUPLAN_ENOTFOUND, -4);
  assert_int_equal(GPUPLAN_EEXISTS, -5);
  assert_int_equal(GPUPLAN_EIO, -6);
  assert_int_equal(GPUPLAN_ECATALOG, -7);
  assert_int_equal(GPUPLAN_EUNSUPPORTED, -8);
  assert_int_equal(GPUPLAN_EBUSY, -9);
  assert_int_equal(GPUPLAN_EINTERRUPTED, -10);
  assert_int_equal(GPUPLAN_EMISUSE, -11);
  assert_int_equal(GPUPLAN_EUSER, -12);
  assert_int_equal(GPUPLAN_EAMBIGUOUS, -13);
}

static void test_errors__names_and_strings(void **state) {
  int code;
  (void)state;
  assert_string_equal(gpuplan_errname(GPUPLAN_ENOMEM), "GPUPLAN_ENOMEM");
  assert_string_equal(gpuplan_errstr(GPUPLAN_ENOMEM), "out of memory");
  assert_string_equal(gpuplan_errname(GPUPLAN_EAMBIGUOUS), "GPUPLAN_EAMBIGUOUS");
  assert_string_equal(gpuplan_errname(-999), "GPUPLAN_UNKNOWN");
  assert_string_equal(gpuplan_errstr(-999), "unknown error");
  assert_string_equal(gpuplan_errstr(42), "unknown error");
  for (code = 0; code >= GPUPLAN_EAMBIGUOUS; code--) {
    assert_non_null(gpuplan_errname(code));
    assert_string_not_equal(gpuplan_errname(code), "GPUPLAN_UNKNOWN");
    assert_string_not_equal(gpuplan_errstr(code), "unknown error");
  }
}

static void test_errors__null_ctx_accessors_do_not_crash(void **state) {
  (void)state;
  assert_non_null(gpuplan_errmsg(NULL));
  assert_int_equal(gpuplan_errcode(NULL), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_errdetail(NULL), 0);
  assert_null(gpuplan_malloc(NULL, 10));
}

static void test_version__runtime_twins_match_headers(void **state) {
  char buf[32];
  (void)state;
  assert_int_equal(gpuplan_version_number(), GPUPLAN_VERSION_NUMBER);
  assert_string_equal(gpuplan_version_string(), GPUPLAN_VERSION_STRING);
  snprintf(buf, sizeof buf, "%d.%d.%d", GPUPLAN_VERSION_MAJOR, GPUPLAN_VERSION_MINOR,
           GPUPLAN_VERSION_PATCH);
  assert_string_equal(buf, GPUPLAN_VERSION_STRING);
  assert_true(GPUPLAN_VERSION_CHECK(0, 0, 1));
  assert_false(GPUPLAN_VERSION_CHECK(GPUPLAN_VERSION_MAJOR + 1, 0, 0));
}

/* A large block freed stays in the context and serves the next large
 * allocation it fits, without the allocator; the context keeps at most
 * 32 of them, 16 MiB in all (gpuplan/ctx.h), and gives every one back
 * when it is freed, with exact sizes (counting_done). */
static void test_ctx__large_blocks_are_kept_for_reuse(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  void *p, *q, *big[40];
  long long calls, bytes, blocks;
  size_t i;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  blocks = c.blocks;
  p = gpuplan_malloc(ctx, 300000);
  assert_non_null(p);
  memset(p, 7, 300000);
  gpuplan_free(ctx, p);
  assert_int_equal(c.blocks, blocks + 1); /* kept */
  calls = c.calls;
  bytes = c.bytes;
  q = gpuplan_malloc(ctx, 200000); /* fits the block kept: no call */
  assert_ptr_equal(q, p);
  assert_int_equal(c.calls, calls);
  assert_int_equal(c.bytes, bytes);
  gpuplan_free(ctx, q);
  q = gpuplan_malloc(ctx, 50000); /* a quarter of it or less: not that block */
  assert_ptr_not_equal(q, p);
  gpuplan_free(ctx, q);
  /* Many: a bounded number and size kept. */
  for (i = 0; i < 40; i++) assert_non_null(big[i] = gpuplan_malloc(ctx, 1000000));
  for (i = 0; i < 40; i++) gpuplan_free(ctx, big[i]);
  assert_true(c.blocks - blocks <= 32);
  assert_true(c.bytes <= (16ll << 20) + 100000);
  /* Too large to keep. */
  p = gpuplan_malloc(ctx, (16u << 20) + 1);
  assert_non_null(p);
  bytes = c.bytes;
  gpuplan_free(ctx, p);
  assert_true(c.bytes <= bytes - (16ll << 20));
  counting_done(&c, ctx); /* nothing is left */
}

static void test_ctx__free_with_live_child_is_deferred(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat = NULL;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  gpuplan_ctx_free(ctx); /* deferred: the catalog still lives */
  assert_true(c.blocks > 0);
  assert_true(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU) > 0);
  gpuplan_catalog_free(cat); /* releases the context too */
  assert_int_equal(c.blocks, 0);
  assert_int_equal(c.bytes, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ctx__new_and_free_do_not_leak),
    cmocka_unit_test(test_ctx__default_allocator_works),
    cmocka_unit_test(test_ctx__new_fails_cleanly_when_allocator_refuses),
    cmocka_unit_test(test_ctx__bad_options_are_einval),
    cmocka_unit_test(test_ctx__malloc_goes_through_the_hook_with_exact_sizes),
    cmocka_unit_test(test_errors__codes_are_pinned),
    cmocka_unit_test(test_errors__names_and_strings),
    cmocka_unit_test(test_errors__null_ctx_accessors_do_not_crash),
    cmocka_unit_test(test_version__runtime_twins_match_headers),
    cmocka_unit_test(test_ctx__large_blocks_are_kept_for_reuse),
    cmocka_unit_test(test_ctx__free_with_live_child_is_deferred),
  };
  return cmocka_run_group_tests_name("ctx", tests, NULL, NULL);
}
