/*
 * test_oom_html.c: the replay command's html option (replay/html.c) under
 * out-of-memory sweeps: every host allocation of the replay and the page
 * fails in turn, once (transient) and for good (persistent).  The only
 * acceptable results are GPUPLAN_OK with the page written as without
 * failures, or GPUPLAN_ENOMEM saying "out of memory"; nothing leaks.  Also:
 * a path that cannot be written is the option's error.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>

#include "../unit/testutil.h"

static const char *traces(void) {
  const char *d = getenv("GPUPLAN_TRACES");
  return d ? d : "../tests/data/torch-snapshots";
}

typedef struct html_case {
  const char *file;     /* in GPUPLAN_TRACES */
  const char *capacity; /* or NULL */
  char page[512];
  char *want;           /* the page without failures */
  size_t want_len;
} html_case;

static gpuplan_catalog *cat;

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  rewind(f);
  buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

static int run(gpuplan_ctx *ctx, html_case *k) {
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  char path[1024];
  int rc;
  unlink(k->page);
  snprintf(path, sizeof path, "%s/%s", traces(), k->file);
  rc = gpuplan_job_new(ctx, cat, &job);
  if (rc == GPUPLAN_OK) rc = gpuplan_job_set(job, "file", path);
  if (rc == GPUPLAN_OK) rc = gpuplan_job_set(job, "html", k->page);
  if (rc == GPUPLAN_OK && k->capacity) rc = gpuplan_job_set(job, "capacity", k->capacity);
  if (rc == GPUPLAN_OK) rc = gpuplan_job_run(job, "replay", &doc);
  if (rc == GPUPLAN_OK) {
    const char *p = gpuplan_value_string(gpuplan_value_get(gpuplan_doc_root(doc), "html"), NULL);
    assert_non_null(p);
    assert_string_equal(p, k->page);
  }
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  return rc;
}

static void sweep(html_case *k, int persistent) {
  long long n;
  for (n = 0;; n++) {
    counting c;
    gpuplan_ctx *ctx;
    int rc;
    counting_init(&c);
    ctx = counting_ctx(&c);
    c.calls = 0;
    c.fail_at = n;
    c.persistent = persistent;
    rc = run(ctx, k);
    c.fail_at = -1;
    if (rc != GPUPLAN_OK && rc != GPUPLAN_ENOMEM)
      fail_msg("N=%lld (%s): rc=%s %s", n, persistent ? "persistent" : "transient", gpuplan_errname(rc),
               gpuplan_errmsg(ctx));
    if (rc == GPUPLAN_ENOMEM) {
      assert_true(c.failures > 0);
      assert_memory_equal(gpuplan_errmsg(ctx), "out of memory", 13);
    } else {
      /* Written in full, as without failures. */
      size_t len;
      char *got = slurp(k->page, &len);
      assert_non_null(got);
      assert_int_equal(len, k->want_len);
      assert_memory_equal(got, k->want, len);
      free(got);
    }
    counting_done(&c, ctx);
    if (c.failures == 0) {
      assert_int_equal(rc, GPUPLAN_OK);
      break;
    }
  }
  assert_true(n > 0);
}

static void check(html_case *k) {
  counting c;
  gpuplan_ctx *ctx;
  const char *dir = getenv("GPUPLAN_TEST_TMP");
  snprintf(k->page, sizeof k->page, "%s/oom-html-%s%s.html", dir ? dir : ".", k->file, k->capacity ? "-whatif" : "");
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(run(ctx, k), GPUPLAN_OK);
  counting_done(&c, ctx);
  k->want = slurp(k->page, &k->want_len);
  assert_non_null(k->want);
  assert_non_null(strstr(k->want, "id=\"gpuplan-data\""));
  sweep(k, 0);
  sweep(k, 1);
  free(k->want);
  unlink(k->page);
}

static void test_oom_html__sweeps(void **state) {
  html_case exact, oom;
  gpuplan_ctx *ctx;
  (void)state;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  memset(&exact, 0, sizeof exact);
  exact.file = "linear-grad.pickle";
  check(&exact);
  memset(&oom, 0, sizeof oom);
  oom.file = "linear-grad.pickle";
  oom.capacity = "3500";
  check(&oom);
  gpuplan_catalog_free(cat);
  cat = NULL;
  gpuplan_ctx_free(ctx);
}

/* A page that cannot be written names the option. */
static void test_oom_html__unwritable(void **state) {
  gpuplan_ctx *ctx;
  gpuplan_job *job;
  gpuplan_doc *doc = NULL;
  char path[1024];
  (void)state;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_new(ctx, cat, &job), GPUPLAN_OK);
  snprintf(path, sizeof path, "%s/linear-grad.pickle", traces());
  assert_int_equal(gpuplan_job_set(job, "file", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "html", "/nonexistent-dir/page.html"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "replay", &doc), GPUPLAN_EIO);
  assert_null(doc);
  assert_memory_equal(gpuplan_errmsg(ctx), "html", 4);
  assert_non_null(strstr(gpuplan_errmsg(ctx), "/nonexistent-dir/page.html"));
  assert_int_equal(gpuplan_job_set(job, "html", ""), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "replay", &doc), GPUPLAN_EINVAL);
  assert_memory_equal(gpuplan_errmsg(ctx), "html", 4);
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  cat = NULL;
  gpuplan_ctx_free(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_oom_html__sweeps),
    cmocka_unit_test(test_oom_html__unwritable),
  };
  return cmocka_run_group_tests_name("oom_html", tests, NULL, NULL);
}
