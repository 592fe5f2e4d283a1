/*
 * test_replay.c: every real snapshot in tests/data/torch-snapshots
 * replays with every allocation at its recorded address, every cudaMalloc of
 * its recorded size and the final layout equal to the file's segments
 * (allocator-rules.md section 8); crafted files diverge where they were
 * altered; a recorded OOM reproduces PyTorch's text; what-if replays with
 * the file's own settings reproduce the exact figures.
 */
#include <stdio.h>

#include "testutil.h"

static const struct {
  const char *file;
  size_t events, segments, allocs, segment_allocs;
  int rebuilt;
} traces[] = {
  {"linear-grad.pickle", 33, 7, 12, 7, 0},
  {"linear-no-grad.pickle", 33, 7, 12, 7, 0},
  {"cs336-small-forward.pickle", 8507, 30, 2998, 3, 1},
  {"cs336-ctx128-forward.pickle", 4657, 516, 2058, 289, 1},
  {"cs336-ctx256-forward.pickle", 3889, 620, 1301, 390, 1},
  {"cs336-2.7b-forward.pickle", 8694, 961, 3020, 178, 1},
  {"cs336-newest-format.pickle", 5163, 216, 1721, 0, 1},
};

/* The real snapshots are vendored in tests/data/torch-snapshots
 * (GPUPLAN_TRACES, set by CTest): a missing one is a failure. */
static int trace_path(char *buf, size_t cap, const char *name) {
  const char *dir = getenv("GPUPLAN_TRACES");
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  FILE *f;
  if (dir) snprintf(buf, cap, "%s/%s", dir, name);
  else snprintf(buf, cap, "%s/tests/data/torch-snapshots/%s", src ? src : "..", name);
  f = fopen(buf, "rb");
  if (!f) return 0;
  fclose(f);
  return 1;
}

static void data_path(char *buf, size_t cap, const char *name) {
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  snprintf(buf, cap, "%s/tests/data/replay/%s", src ? src : "..", name);
}

static void test_replay__real_traces_match_exactly(void **state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof traces / sizeof traces[0]; i++) {
    counting c;
    gpuplan_ctx *ctx;
    gpuplan_snapshot *s = NULL;
    gpuplan_replay_result r;
    char path[1024];
    if (!trace_path(path, sizeof path, traces[i].file))
      fail_msg("%s not found (vendored in tests/data/torch-snapshots)", path);
    counting_init(&c);
    ctx = counting_ctx(&c);
    assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
    assert_int_equal(gpuplan_snapshot_event_count(s), traces[i].events);
    assert_int_equal(gpuplan_snapshot_segment_count(s), traces[i].segments);
    assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
    if (!r.exact) fprintf(stderr, "%s: diverges at %zu: %s\n", traces[i].file, r.diverged_at, r.divergence);
    assert_true(r.exact);
    assert_int_equal(r.allocs, traces[i].allocs);
    assert_int_equal(r.segment_allocs, traces[i].segment_allocs);
    assert_int_equal(r.rebuilt_start, traces[i].rebuilt);
    assert_true(r.peak_reserved >= r.peak_allocated);
    /* What-if under the file's own settings on an unlimited device gives
     * the same figures as the exact replay. */
    {
      gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
      gpuplan_replay_result w;
      o.capacity = 1ull << 50;
      assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &w), GPUPLAN_OK);
      assert_int_equal(w.peak_reserved, r.peak_reserved);
      assert_int_equal(w.peak_allocated, r.peak_allocated);
      assert_int_equal(w.final_reserved, r.final_reserved);
      assert_true(w.oom_event == SIZE_MAX);
      o.alloc_conf = "expandable_segments:True";
      assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &w), GPUPLAN_OK);
      /* Expandable blocks split at 512 bytes: never more allocated slack. */
      assert_true(w.peak_allocated <= r.peak_allocated);
      assert_true(w.oom_event == SIZE_MAX);
    }
    gpuplan_snapshot_free(s);
    counting_done(&c, ctx);
  }
}

/* Published final-state figures for profile_grad (rules S18). */
static void test_replay__s18_profile_grad_layout(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r;
  char path[1024];
  (void)state;
  if (!trace_path(path, sizeof path, "linear-grad.pickle")) return;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
  assert_int_equal(r.final_reserved, 4439670784ull);
  assert_int_equal(r.final_allocated, 3234779136ull);
  gpuplan_snapshot_free(s);
  counting_done(&c, ctx);
}

static void expect_divergence(const char *file, size_t at, const char *needle) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r;
  char path[1024];
  counting_init(&c);
  ctx = counting_ctx(&c);
  data_path(path, sizeof path, file);
  assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
  assert_false(r.exact);
  assert_int_equal(r.diverged_at, at);
  assert_non_null(strstr(r.divergence, needle));
  gpuplan_snapshot_free(s);
  counting_done(&c, ctx);
}

static void test_replay__altered_files_diverge_where_altered(void **state) {
  (void)state;
  expect_divergence("linear-grad-moved-alloc.pickle", 7, "the trace at 0x7f0d06000200");
  expect_divergence("linear-grad-bad-final.pickle", 33, "final state");
}

static void test_replay__recorded_oom_reproduces_pytorch_text(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  char path[1024];
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  data_path(path, sizeof path, "s8-recorded-oom.pickle");
  assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
  assert_true(r.exact);
  assert_int_equal(r.oom_event, 5);
  assert_non_null(strstr(r.oom_message, "Tried to allocate 60.00 MiB. GPU 0 has a total capacity of 100.00 MiB of which 40.00 MiB is free. Of the allocated memory 10.00 MiB is allocated by PyTorch, and 50.00 MiB is reserved by PyTorch but unallocated."));
  /* On the same 100 MiB card with expandable segments it does not OOM. */
  o.alloc_conf = "expandable_segments:True";
  o.capacity = 100ull << 20;
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &r), GPUPLAN_OK);
  assert_true(r.oom_event == SIZE_MAX);
  assert_int_equal(r.peak_reserved, 80ull << 20);
  /* And with the default settings it does, with the same text. */
  o.alloc_conf = NULL;
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &r), GPUPLAN_OK);
  assert_int_equal(r.oom_event, 5);
  assert_int_equal(r.num_alloc_retries, 1);
  o.alloc_conf = "max_split_size_mb:5";
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(ctx), "max_split_size_mb"));
  gpuplan_snapshot_free(s);
  counting_done(&c, ctx);
}

static void test_replay__bad_files(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = (gpuplan_snapshot *)&c;
  static const char notsnap[] = "\x80\x04K\x2a.";                                        /* 42 */
  static const char nosegs[] = "\x80\x02}q\x00X\x01\x00\x00\x00" "aq\x01K\x01s."; /* {"a": 1} */
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(gpuplan_snapshot_load(ctx, "/nonexistent/x.pickle", 0, &s), GPUPLAN_ENOTFOUND);
  assert_null(s);
  assert_int_equal(gpuplan_snapshot_load_buffer(ctx, notsnap, sizeof notsnap - 1, 0, &s), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(ctx), "not a dict"));
  assert_int_equal(gpuplan_snapshot_load_buffer(ctx, nosegs, sizeof nosegs - 1, 0, &s), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(ctx), "segments"));
  assert_int_equal(gpuplan_snapshot_load_buffer(ctx, "cos\nsystem\n(S'echo hi'\ntR.", 26, 0, &s), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(ctx), "GLOBAL"));
  counting_done(&c, ctx);
}


/* A replay of a crafted file through the job API: its document. */
static gpuplan_doc *replay_doc(gpuplan_ctx *ctx, gpuplan_catalog **cat, const char *file, const char *conf) {
  gpuplan_job *job;
  gpuplan_doc *doc = NULL;
  char path[1024];
  data_path(path, sizeof path, file);
  assert_int_equal(gpuplan_catalog_open_default(ctx, cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_new(ctx, *cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "file", path), GPUPLAN_OK);
  if (conf) assert_int_equal(gpuplan_job_set(job, "alloc_conf", conf), GPUPLAN_OK);
  if (gpuplan_job_run(job, "replay", &doc)) fail_msg("%s: %s", file, gpuplan_errmsg(ctx));
  gpuplan_job_free(job);
  return doc;
}

static const gpuplan_value *dget(const gpuplan_doc *d, const char *path) {
  return gpuplan_value_path(gpuplan_doc_root(d), path);
}

static void expect_exact(const char *file, size_t allocs, size_t segment_allocs) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r, w;
  gpuplan_replay_options o = GPUPLAN_REPLAY_OPTIONS_INIT;
  char path[1024];
  counting_init(&c);
  ctx = counting_ctx(&c);
  data_path(path, sizeof path, file);
  assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
  if (!r.exact) fail_msg("%s: diverges at %zu: %s", file, r.diverged_at, r.divergence);
  assert_true(r.rebuilt_start);
  assert_int_equal(r.allocs, allocs);
  assert_int_equal(r.segment_allocs, segment_allocs);
  /* The what-if replay with the file's settings agrees. */
  o.capacity = 1ull << 50;
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, &o, &w), GPUPLAN_OK);
  assert_int_equal(w.peak_reserved, r.peak_reserved);
  assert_int_equal(w.peak_allocated, r.peak_allocated);
  assert_int_equal(w.final_allocated, r.final_allocated);
  gpuplan_snapshot_free(s);
  counting_done(&c, ctx);
}

/* AL-1: the ring buffer dropped the free_requested of the trace's first
 * event, a free_completed.  Was: "DIVERGES at event 5" (the block the
 * rebuild made live was never released). */
static void test_replay__al1_trace_starting_with_free_completed(void **state) {
  (void)state;
  expect_exact("linear-grad-cut-free-completed.pickle", 6, 2);
}

/* AL-1: a block handed out whole before the trace (an unsplit remainder),
 * which the rebuild infers from a free fragment too small to be one. */
static void test_replay__al1_unsplit_remainder_inferred(void **state) {
  (void)state;
  expect_exact("unsplit-remainder.pickle", 1, 0);
}

/* AL-1: the same remainder, learnt from an allocation that went elsewhere
 * (the 5 MiB allocation "placed in another segment"): exact, and the
 * report says the block's size is known only within a range. */
static void test_replay__al1_unsplit_remainder_learnt(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_doc *d;
  const char *w;
  (void)state;
  expect_exact("unsplit-remainder-elsewhere.pickle", 1, 0);
  counting_init(&c);
  ctx = counting_ctx(&c);
  d = replay_doc(ctx, &cat, "unsplit-remainder-elsewhere.pickle", NULL);
  assert_true(gpuplan_value_bool(dget(d, "exact")));
  assert_int_equal(gpuplan_value_count(dget(d, "warnings")), 1);
  w = gpuplan_value_string(gpuplan_value_at(dget(d, "warnings"), 0), NULL);
  assert_non_null(strstr(w, "the block at 0x7f0000300000"));
  assert_non_null(strstr(w, "314880 to 1048576 bytes longer"));
  gpuplan_doc_free(d);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}

/* AL-1: when the file leaves the start state open beyond what the replay
 * learns, the events from there are reported unchecked, with the trace's
 * own peaks, not as a divergence with a wrong peak. */
static void test_replay__al1_undetermined_start_is_unchecked(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_doc *d;
  int64_t start;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  d = replay_doc(ctx, &cat, "unsplit-remainder-many.pickle", NULL);
  assert_false(gpuplan_value_bool(dget(d, "exact")));
  assert_int_equal(gpuplan_value_type_of(dget(d, "diverged_at")), GPUPLAN_VALUE_NULL);
  assert_int_equal(gpuplan_value_int(dget(d, "unchecked.from_event")), 0);
  assert_int_equal(gpuplan_value_int(dget(d, "unchecked.to_event")), 195);
  assert_non_null(strstr(gpuplan_value_string(dget(d, "unchecked.why"), NULL), "does not determine the start state"));
  /* The trace's peak: what was live at the start plus its 65 x 5 MiB. */
  start = gpuplan_value_int(dget(d, "start_allocated_bytes"));
  assert_int_equal(gpuplan_value_int(dget(d, "peak_allocated_bytes")), start + 65 * 5 * 1048576ll);
  assert_int_equal(gpuplan_value_int(dget(d, "peak_reserved_bytes")), gpuplan_value_int(dget(d, "start_reserved_bytes")));
  gpuplan_doc_free(d);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}


/* AL-2: torch 1.13 wrote a plain list of segments (was: "the pickle is not
 * a dict").  Read as 2.x's _memory_viz reads it: segments, no trace. */
static void test_replay__al2_torch113_list_is_read(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_snapshot *s = NULL;
  gpuplan_replay_result r;
  gpuplan_doc *d;
  char path[1024];
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  data_path(path, sizeof path, "linear-grad-113-list.pickle");
  assert_int_equal(gpuplan_snapshot_load(ctx, path, 0, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_snapshot_event_count(s), 0);
  assert_int_equal(gpuplan_snapshot_segment_count(s), 7);
  assert_int_equal(gpuplan_snapshot_replay(ctx, s, NULL, &r), GPUPLAN_OK);
  /* profile_grad's final state (rules S18), from the segments alone */
  assert_int_equal(r.final_reserved, 4439670784ull);
  assert_int_equal(r.final_allocated, 3234779136ull);
  gpuplan_snapshot_free(s);
  d = replay_doc(ctx, &cat, "linear-grad-113-list.pickle", NULL);
  assert_int_equal(gpuplan_value_int(dget(d, "format")), 1);
  assert_false(gpuplan_value_bool(dget(d, "exact")));
  assert_false(gpuplan_value_bool(dget(d, "rebuilt_start")));
  assert_non_null(strstr(gpuplan_value_string(gpuplan_value_at(dget(d, "warnings"), 0), NULL), "torch 1.13"));
  gpuplan_doc_free(d);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}

/* AL-5: an empty trace is not "exact match: 0 allocations". */
static void test_replay__al5_empty_trace_is_not_a_success(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_doc *d;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  d = replay_doc(ctx, &cat, "empty-trace.pickle", NULL);
  assert_false(gpuplan_value_bool(dget(d, "exact")));
  assert_int_equal(gpuplan_value_count(dget(d, "warnings")), 1);
  assert_non_null(strstr(gpuplan_value_string(gpuplan_value_at(dget(d, "warnings"), 0), NULL), "nothing was replayed"));
  gpuplan_doc_free(d);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}

/* AL-5: segments cached when the trace starts that do not fit a smaller
 * card are released, and the report says so (was: silently). */
static void test_replay__al5_dropped_start_segments_are_said(void **state) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat;
  gpuplan_job *job;
  gpuplan_doc *d;
  char path[1024];
  const char *w;
  (void)state;
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_true(trace_path(path, sizeof path, "cs336-ctx256-forward.pickle"));
  assert_int_equal(gpuplan_catalog_open_default(ctx, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_new(ctx, cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "file", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "gpu", "a100-40gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "replay", &d), GPUPLAN_OK);
  assert_int_equal(gpuplan_value_count(dget(d, "warnings")), 1);
  w = gpuplan_value_string(gpuplan_value_at(dget(d, "warnings"), 0), NULL);
  assert_non_null(strstr(w, "59.00 GiB reserved when the trace starts do not fit the device's 39.50 GiB"));
  assert_non_null(strstr(w, "45.99 GiB of whole free (cached) segments"));
  gpuplan_doc_free(d);
  gpuplan_job_free(job);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_replay__real_traces_match_exactly),
    cmocka_unit_test(test_replay__s18_profile_grad_layout),
    cmocka_unit_test(test_replay__altered_files_diverge_where_altered),
    cmocka_unit_test(test_replay__recorded_oom_reproduces_pytorch_text),
    cmocka_unit_test(test_replay__bad_files),
    cmocka_unit_test(test_replay__al1_trace_starting_with_free_completed),
    cmocka_unit_test(test_replay__al1_unsplit_remainder_inferred),
    cmocka_unit_test(test_replay__al1_unsplit_remainder_learnt),
    cmocka_unit_test(test_replay__al1_undetermined_start_is_unchecked),
    cmocka_unit_test(test_replay__al2_torch113_list_is_read),
    cmocka_unit_test(test_replay__al5_empty_trace_is_not_a_success),
    cmocka_unit_test(test_replay__al5_dropped_start_segments_are_said),
  };
  return cmocka_run_group_tests_name("replay", tests, NULL, NULL);
}
