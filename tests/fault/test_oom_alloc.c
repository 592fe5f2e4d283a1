/*
 * test_oom_alloc.c: out-of-memory sweeps of the allocator model, replay and
 * the replay (its html page included), explain-oom and catalog commands
 * (review M3; style.md 9.10):
 * every host allocation of a scenario fails in turn, once (transient) and
 * for good (persistent).  The only acceptable results are GPUPLAN_OK with
 * the same answer as without failures, or GPUPLAN_ENOMEM with its message;
 * nothing leaks, nothing asserts, and the context stays usable.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <unistd.h>

#include "../unit/testutil.h"

typedef int (*scenario)(gpuplan_ctx *ctx, const void *arg);

static char *slurp(const char *dir, const char *name, size_t *len) {
  char path[1024];
  FILE *f;
  char *buf;
  long n;
  snprintf(path, sizeof path, "%s%s%s", dir, *dir ? "/" : "", name);
  f = fopen(path, "rb");
  if (!f) fail_msg("%s: cannot open", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  rewind(f);
  buf = malloc((size_t)n);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static const char *traces(void) {
  const char *d = getenv("GPUPLAN_TRACES");
  return d ? d : "../tests/data/torch-snapshots";
}

static void replay_dir(char *buf, size_t cap) {
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  snprintf(buf, cap, "%s/tests/data/replay", src ? src : "..");
}

/* A snapshot's bytes and the answer a replay must give. */
typedef struct snap_case {
  const char *data;
  size_t len;
  const char *alloc_conf;
  uint64_t capacity;
  uint64_t peak_reserved; /* from a run without failures */
  int exact;
} snap_case;

static int sc_replay(gpuplan_ctx *ctx, const void *arg) {
  const snap_case *k = arg;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  int rc = gpuplan_snapshot_load_buffer(ctx, k->data, k->len, 0, &s);
  if (rc) {
    assert_null(s);
    return rc;
  }
  o.alloc_conf = k->alloc_conf;
  o.capacity = k->capacity;
  rc = gpuplan_snapshot_replay(ctx, s, &o, &r);
  if (rc == GPUPLAN_OK) {
    /* A failure the replay survived must not change its answer. */
    assert_int_equal(r.exact, k->exact);
    assert_int_equal(r.peak_reserved, k->peak_reserved);
  }
  gpuplan_snapshot_free(s);
  return rc;
}

/* The allocator itself with expandable segments on its mock device:
 * grow, split, free, unmap, OOM and retry. */
static int sc_expandable(gpuplan_ctx *ctx, const void *arg) {
  gpuplan_alloc_conf conf;
  gpuplan_cachealloc *a = NULL;
  uint64_t p[64];
  size_t i, n = 0;
  int rc;
  (void)arg;
  if ((rc = gpuplan_alloc_conf_parse(ctx, "expandable_segments:True", GPUPLAN_TORCH_LATEST, &conf))) return rc;
  if ((rc = gpuplan_cachealloc_new(ctx, &conf, 512ull << 20, NULL, &a))) return rc;
  for (i = 0; i < 64 && rc == GPUPLAN_OK; i++) {
    uint64_t size = (i % 5 == 0) ? (3ull << 20) + 4096 * i : (i % 3 == 0) ? 700 * 1024 : (17ull << 20) + 512 * i;
    rc = gpuplan_cachealloc_malloc(a, size, i % 2, &p[n]);
    if (rc == GPUPLAN_OK) n++;
    else if (rc == GPUPLAN_EOOM) rc = GPUPLAN_OK; /* the device is full: a result */
    if (rc == GPUPLAN_OK && i % 4 == 3 && n) {
      rc = gpuplan_cachealloc_release(a, p[--n]);
      if (rc == GPUPLAN_OK && n > 2) {
        rc = gpuplan_cachealloc_release(a, p[n / 2]);
        p[n / 2] = p[n - 1];
        n--;
      }
    }
    if (rc == GPUPLAN_OK && i % 16 == 15) gpuplan_cachealloc_empty_cache(a);
  }
  while (rc == GPUPLAN_OK && n) rc = gpuplan_cachealloc_release(a, p[--n]);
  if (rc == GPUPLAN_OK) {
    gpuplan_cachealloc_empty_cache(a);
    assert_int_equal(gpuplan_cachealloc_stats(a)->allocated_bytes[0].current, 0);
  }
  gpuplan_cachealloc_free(a);
  return rc;
}

/* A command of the job API, with its options as name=value pairs. */
typedef struct job_case {
  const char *command;
  const char *opts[8];
  const char *path_opt; /* joined to GPUPLAN_TRACES */
} job_case;

static gpuplan_catalog *cat; /* opened once, without failures */

static int sc_job(gpuplan_ctx *ctx, const void *arg) {
  const job_case *k = arg;
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  size_t i;
  int rc = gpuplan_job_new(ctx, cat, &job);
  for (i = 0; rc == GPUPLAN_OK && i < 8 && k->opts[i]; i++) {
    char name[64];
    const char *eq = strchr(k->opts[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - k->opts[i]), k->opts[i]);
    rc = gpuplan_job_set(job, name, eq + 1);
  }
  if (rc == GPUPLAN_OK && k->path_opt) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", traces(), k->path_opt);
    rc = gpuplan_job_set(job, "file", path);
  }
  if (rc == GPUPLAN_OK) rc = gpuplan_job_run(job, k->command, &doc);
  if (rc == GPUPLAN_OK) {
    const char *json = gpuplan_doc_json(doc, GPUPLAN_JSON_PRETTY, NULL);
    if (!json) rc = GPUPLAN_ENOMEM;
  }
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  return rc;
}

/* replay's html option (replay/html.c): the page written in full as
 * without failures, or ENOMEM and no page. */
typedef struct html_case {
  const char *file;     /* in GPUPLAN_TRACES */
  const char *capacity; /* or NULL */
  char page[512];
  char *want;           /* the page without failures */
  size_t want_len;
} html_case;

static int sc_html(gpuplan_ctx *ctx, const void *arg) {
  const html_case *k = arg;
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
    if (k->want) {
      size_t len;
      char *got = slurp("", k->page, &len);
      assert_int_equal(len, k->want_len);
      assert_memory_equal(got, k->want, len);
      free(got);
    }
  }
  gpuplan_doc_free(doc);
  gpuplan_job_free(job);
  return rc;
}

/* A simulated run exported as a snapshot, read back. */
static int sc_export(gpuplan_ctx *ctx, const void *arg) {
  const char *path = arg;
  gpuplan_cachealloc *a = NULL;
  gpuplan_recorder *rec = NULL;
  gpuplan_snapshot *s = NULL;
  uint64_t p[8];
  int rc, i;
  unlink(path);
  rc = gpuplan_cachealloc_new(ctx, NULL, 1ull << 30, NULL, &a);
  if (rc == GPUPLAN_OK) rc = gpuplan_recorder_new(ctx, &rec);
  if (rc == GPUPLAN_OK) {
    gpuplan_cachealloc_set_trace(a, gpuplan_recorder_trace, rec);
    for (i = 0; i < 8 && rc == GPUPLAN_OK; i++) rc = gpuplan_cachealloc_malloc(a, (uint64_t)(i + 1) << 20, 0, &p[i]);
    for (i = 0; i < 8 && rc == GPUPLAN_OK; i += 2) rc = gpuplan_cachealloc_release(a, p[i]);
  }
  if (rc == GPUPLAN_OK) rc = gpuplan_snapshot_write(a, rec, path);
  if (rc == GPUPLAN_OK) rc = gpuplan_snapshot_load(ctx, path, 0, &s);
  if (rc == GPUPLAN_OK) {
    gpuplan_replay_result r;
    rc = gpuplan_snapshot_replay(ctx, s, NULL, &r);
    if (rc == GPUPLAN_OK) assert_true(r.exact);
  }
  gpuplan_snapshot_free(s);
  gpuplan_recorder_free(rec);
  gpuplan_cachealloc_free(a);
  return rc;
}

static void sweep(scenario fn, const void *arg, int persistent) {
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
    rc = fn(ctx, arg);
    c.fail_at = -1;
    if (rc != GPUPLAN_OK && rc != GPUPLAN_ENOMEM)
      fail_msg("N=%lld (%s): rc=%s %s", n, persistent ? "persistent" : "transient", gpuplan_errname(rc),
               gpuplan_errmsg(ctx));
    if (rc == GPUPLAN_ENOMEM) {
      assert_true(c.failures > 0);
      /* "out of memory", with what was being done if the API says it */
      assert_memory_equal(gpuplan_errmsg(ctx), "out of memory", 13);
      /* The context is still usable. */
      if (n % 5 == 0) assert_int_equal(fn(ctx, arg), GPUPLAN_OK);
    }
    counting_done(&c, ctx);
    if (c.failures == 0) {
      assert_int_equal(rc, GPUPLAN_OK);
      break;
    }
  }
  assert_true(n > 0);
}

static void both(scenario fn, const void *arg) {
  sweep(fn, arg, 0);
  sweep(fn, arg, 1);
}

/* The answer without failures. */
static void settle(snap_case *k) {
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  gpuplan_replay_result r;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_load_buffer(ctx, k->data, k->len, 0, &s), GPUPLAN_OK);
  o.alloc_conf = k->alloc_conf;
  o.capacity = k->capacity;
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &r), GPUPLAN_OK);
  k->peak_reserved = r.peak_reserved;
  k->exact = r.exact;
  gpuplan_snapshot_free(s);
  gpuplan_ctx_free(ctx);
}

/* M3: linear-grad replayed at 3 GiB with expandable segments (was:
 * "pool_remove: Assertion '0' failed" at some failing allocations). */
static void test_oom_alloc__replay_expandable(void **state) {
  snap_case k;
  (void)state;
  memset(&k, 0, sizeof k);
  k.data = slurp(traces(), "linear-grad.pickle", &k.len);
  k.alloc_conf = "expandable_segments:True";
  k.capacity = 3ull << 30;
  settle(&k);
  both(sc_replay, &k);
  free((void *)k.data);
}

static void test_oom_alloc__expandable_segments(void **state) {
  (void)state;
  both(sc_expandable, NULL);
}

/* The exact replay, the rebuild, the learning of ambiguous starts, and
 * the routing of allocations to private pools. */
static void test_oom_alloc__replay_exact(void **state) {
  static const char *const files[] = {"linear-grad-cut-free-completed.pickle", "unsplit-remainder-elsewhere.pickle",
                                      "s8-recorded-oom.pickle", "private-pool.pickle", "private-pool-freed.pickle"};
  char dir[1024];
  size_t i;
  (void)state;
  replay_dir(dir, sizeof dir);
  for (i = 0; i < sizeof files / sizeof files[0]; i++) {
    snap_case k;
    memset(&k, 0, sizeof k);
    k.data = slurp(dir, files[i], &k.len);
    settle(&k);
    both(sc_replay, &k);
    k.capacity = 100ull << 20; /* and as a what-if */
    settle(&k);
    both(sc_replay, &k);
    free((void *)k.data);
  }
}

static void test_oom_alloc__commands(void **state) {
  static const job_case cases[] = {
    {"replay", {"summary=true", "timeline=true", NULL}, "linear-grad.pickle"},
    {"replay", {"alloc_conf=expandable_segments:True", "capacity=4GiB", NULL}, "linear-grad.pickle"},
    /* 2.10's two variables: the split into the job's arena, the unread keys' warning */
    {"replay",
     {"env_alloc_conf=expandable_segments:True,x:1", "env_cuda_alloc_conf=per_process_memory_fraction:0.5,max_split_size_mb:64",
      "torch=2.10", "capacity=4GiB", NULL},
     "linear-grad.pickle"},
    /* a recorded conf the release does not take (its warning), exact */
    {"replay", {"torch=1.13", "summary=true", NULL}, "linear-grad.pickle"},
    /* 2.1's wording, a container's self-listed process */
    {"explain-oom",
     {"message=CUDA out of memory. Tried to allocate 1.15 GiB. GPU 0 has a total capacty of 23.69 GiB of which "
      "912.81 MiB is free. Process 454738 has 22.79 GiB memory in use. Of the allocated memory 21.50 GiB is "
      "allocated by PyTorch, and 1001.89 MiB is reserved by PyTorch but unallocated. If reserved but unallocated "
      "memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory "
      "Management and PYTORCH_CUDA_ALLOC_CONF",
      NULL},
     NULL},
    {"explain-oom",
     {"message=CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which "
      "1.20 GiB is free. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.50 GiB is reserved by "
      "PyTorch but unallocated.",
      NULL},
     NULL},
    /* a CUDA graph capture that runs out of memory: the private pool, the
     * capture flag, the pool's figures */
    {"simulate", {"model=gpt-2", "gpu=t4", "micro_batch=8", "steps=2", "cuda_graph=true", NULL}, NULL},
    {"catalog", {"subcommand=models", NULL}, NULL},
    {"catalog", {"subcommand=show", "name=H100 SXM", NULL}, NULL},
    {"catalog", {"subcommand=info", NULL}, NULL},
  };
  gpuplan_ctx *ctx;
  size_t i;
  (void)state;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) both(sc_job, &cases[i]);
  gpuplan_catalog_free(cat);
  cat = NULL;
  gpuplan_ctx_free(ctx);
}

static void test_oom_alloc__export(void **state) {
  char path[512];
  (void)state;
  tmp_path(path, sizeof path, "oom-export.pickle");
  both(sc_export, path);
  unlink(path);
}

static void html_sweeps(html_case *k) {
  gpuplan_ctx *ctx;
  tmp_path(k->page, sizeof k->page, k->capacity ? "oom-html-whatif.html" : "oom-html.html");
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(sc_html(ctx, k), GPUPLAN_OK);
  gpuplan_ctx_free(ctx);
  k->want = slurp("", k->page, &k->want_len);
  assert_non_null(strstr(k->want, "id=\"gpuplan-data\""));
  both(sc_html, k);
  free(k->want);
  unlink(k->page);
}

static void test_oom_alloc__replay_html(void **state) {
  html_case exact, oom;
  gpuplan_ctx *ctx;
  (void)state;
  assert_int_equal(gpuplan_ctx_new(&ctx, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  memset(&exact, 0, sizeof exact);
  exact.file = "linear-grad.pickle";
  html_sweeps(&exact);
  memset(&oom, 0, sizeof oom);
  oom.file = "linear-grad.pickle";
  oom.capacity = "3500"; /* an OOM at event 16: the page's OOM map */
  html_sweeps(&oom);
  gpuplan_catalog_free(cat);
  cat = NULL;
  gpuplan_ctx_free(ctx);
}

/* A page that cannot be written names the option. */
static void test_oom_alloc__html_unwritable(void **state) {
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
    cmocka_unit_test(test_oom_alloc__replay_expandable),
    cmocka_unit_test(test_oom_alloc__expandable_segments),
    cmocka_unit_test(test_oom_alloc__replay_exact),
    cmocka_unit_test(test_oom_alloc__commands),
    cmocka_unit_test(test_oom_alloc__export),
    cmocka_unit_test(test_oom_alloc__replay_html),
    cmocka_unit_test(test_oom_alloc__html_unwritable),
  };
  return cmocka_run_group_tests_name("oom_alloc", tests, NULL, NULL);
}
