/*
 * test_torch_releases.c: the allocator rules that differ between PyTorch
 * releases, one case per release boundary (docs/allocator.md, "Versions").
 * Every expected value is derived by hand from the PyTorch source cited in
 * libgpuplan/src/alloc/conf.c; the derivation is in the comment beside it.
 */
#include <stdio.h>
#include <unistd.h>

#include "testutil.h"

#define MiB 1048576ull

static int parse(gpuplan_ctx *ctx, const char *conf, gpuplan_torch_version v, gpuplan_alloc_conf *c) {
  return gpuplan_alloc_conf_parse(ctx, conf, v, c);
}

/* conf is refused under v with a message holding every needle (NULL-ended). */
static void refused(gpuplan_ctx *ctx, const char *conf, int v, ...) {
  gpuplan_alloc_conf c;
  va_list ap;
  const char *needle;
  int rc = parse(ctx, conf, (gpuplan_torch_version)v, &c);
  if (rc != GPUPLAN_EINVAL) fail_msg("'%s' under torch %d: rc %d, wanted EINVAL", conf, v, rc);
  va_start(ap, v);
  while ((needle = va_arg(ap, const char *)))
    if (!strstr(gpuplan_errmsg(ctx), needle)) {
      va_end(ap);
      fail_msg("'%s' under torch %d: no '%s' in: %s", conf, v, needle, gpuplan_errmsg(ctx));
    }
  va_end(ap);
}

static void accepted(gpuplan_ctx *ctx, const char *conf, gpuplan_torch_version v) {
  gpuplan_alloc_conf c;
  if (parse(ctx, conf, v, &c) != GPUPLAN_OK)
    fail_msg("'%s' under torch %d: %s", conf, (int)v, gpuplan_errmsg(ctx));
}

/* The block one request of size bytes gets from a fresh allocator (its
 * allocated_bytes: the rounded size, the rest of the segment split off). */
static uint64_t block_of(gpuplan_ctx *ctx, const char *conf, gpuplan_torch_version v, uint64_t size) {
  gpuplan_alloc_conf c;
  gpuplan_cachealloc *a = NULL;
  uint64_t addr, got;
  assert_int_equal(parse(ctx, conf, v, &c), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(ctx, &c, 80ull << 30, NULL, &a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, size, 0, &addr), GPUPLAN_OK);
  got = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[GPUPLAN_POOL_ALL].current;
  gpuplan_cachealloc_free(a);
  return got;
}

/* The values: one per release, major*100+minor; the four of 0.1 each
 * stand for one release. */
static void test_releases__values(void **state) {
  fixture *f = *state;
  gpuplan_alloc_conf c;
  assert_int_equal((int)GPUPLAN_TORCH_RELEASE(2, 4), 204);
  assert_int_equal((int)GPUPLAN_TORCH_V2_10, 210);
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_LATEST, &c), GPUPLAN_OK);
  assert_int_equal(c.release, 211); /* main after 2.10 */
  assert_int_equal(c.version, GPUPLAN_ALLOC_CONF_VERSION);
  assert_int_equal(c.roundup_bypass_threshold, UINT64_MAX);
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_2_X, &c), GPUPLAN_OK);
  assert_int_equal(c.release, 209);
  assert_int_equal(c.torch, GPUPLAN_TORCH_2_X); /* kept as given */
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_2_0, &c), GPUPLAN_OK);
  assert_int_equal(c.release, 200);
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_1_13, &c), GPUPLAN_OK);
  assert_int_equal(c.release, 113);
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_RELEASE(2, 7), &c), GPUPLAN_OK);
  assert_int_equal(c.release, 207);
  refused(f->ctx, NULL, GPUPLAN_TORCH_RELEASE(1, 12), "torch 112", "113", NULL);
  refused(f->ctx, NULL, GPUPLAN_TORCH_RELEASE(2, 11), "torch 211", NULL);
  refused(f->ctx, NULL, 4, "torch 4", NULL);
}

/* A version-1 structure (no release field) still makes an
 * allocator, under the release its torch value names. */
static void test_releases__conf_version_1(void **state) {
  fixture *f = *state;
  gpuplan_alloc_conf c;
  gpuplan_cachealloc *a = NULL;
  assert_int_equal(parse(f->ctx, NULL, GPUPLAN_TORCH_2_0, &c), GPUPLAN_OK);
  c.version = 1;
  c.release = 999; /* beyond a version-1 structure: never read */
  c.roundup_bypass_threshold = 0;
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, &c, 100 * MiB, NULL, &a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_conf(a)->release, 200);
  assert_int_equal(gpuplan_cachealloc_conf(a)->roundup_bypass_threshold, UINT64_MAX);
  gpuplan_cachealloc_free(a);
  a = NULL;
  c.version = 2; /* a version-2 release that names none is refused */
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, &c, 100 * MiB, NULL, &a), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "torch release"));
  c.version = 3;
  c.release = 200;
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, &c, 100 * MiB, NULL, &a), GPUPLAN_EINVAL);
}

/* Keys appear in the release whose parser first took them; before it the
 * release raised "Unrecognized CachingAllocator option: KEY". */
static void test_releases__keys_by_release(void **state) {
  fixture *f = *state;
  /* backend: CUDAAllocatorConfig of 2.0 (pytorch#82682); not in v1.13.1 */
  refused(f->ctx, "backend:native", GPUPLAN_TORCH_V1_13, "backend", "came in 2.0",
          "Unrecognized CachingAllocator option: backend", NULL);
  accepted(f->ctx, "backend:native", GPUPLAN_TORCH_V2_0);
  /* expandable_segments: pytorch#96995, 2.1 */
  refused(f->ctx, "expandable_segments:True", GPUPLAN_TORCH_V2_0, "expandable_segments", "torch 2.0", "came in 2.1",
          NULL);
  refused(f->ctx, "expandable_segments:True", GPUPLAN_TORCH_2_0, "came in 2.1", NULL);
  accepted(f->ctx, "expandable_segments:True", GPUPLAN_TORCH_V2_1);
  /* release_lock_on_cudamalloc (pytorch#108367), pinned_use_cuda_host_register and
   * pinned_num_register_threads (pytorch#108488): 2.2 */
  refused(f->ctx, "release_lock_on_cudamalloc:True", GPUPLAN_TORCH_V2_1, "came in 2.2", NULL);
  accepted(f->ctx, "release_lock_on_cudamalloc:True", GPUPLAN_TORCH_V2_2);
  refused(f->ctx, "pinned_use_cuda_host_register:True", GPUPLAN_TORCH_V2_1, "came in 2.2", NULL);
  accepted(f->ctx, "pinned_use_cuda_host_register:True,pinned_num_register_threads:8", GPUPLAN_TORCH_V2_2);
  refused(f->ctx, "pinned_num_register_threads:3", GPUPLAN_TORCH_V2_2, "power of two", NULL);
  refused(f->ctx, "pinned_num_register_threads:256", GPUPLAN_TORCH_V2_2, "up to 128", NULL);
  /* max_non_split_rounding_mb: pytorch#136174, 2.6 */
  refused(f->ctx, "max_non_split_rounding_mb:64", GPUPLAN_TORCH_V2_5, "max_non_split_rounding_mb", "came in 2.6",
          NULL);
  accepted(f->ctx, "max_non_split_rounding_mb:64", GPUPLAN_TORCH_V2_6);
  /* graph_capture_record_stream_reuse: pytorch#158352, 2.9 */
  refused(f->ctx, "graph_capture_record_stream_reuse:True", GPUPLAN_TORCH_V2_8, "came in 2.9", NULL);
  accepted(f->ctx, "graph_capture_record_stream_reuse:True", GPUPLAN_TORCH_V2_9);
  /* pinned_reserve_segment_size_mb (pytorch#164501), per_process_memory_fraction
   * (pytorch#161035): 2.10 */
  refused(f->ctx, "pinned_reserve_segment_size_mb:2048", GPUPLAN_TORCH_V2_9, "came in 2.10", NULL);
  refused(f->ctx, "per_process_memory_fraction:0.5", GPUPLAN_TORCH_2_X, "per_process_memory_fraction", "torch 2.9",
          "came in 2.10", NULL);
  accepted(f->ctx, "pinned_reserve_segment_size_mb:2048,per_process_memory_fraction:0.5", GPUPLAN_TORCH_V2_10);
  /* [0, 1], 0 included (val_env >= 0.0, [CFG] @ b944315b; was (0, 1]) */
  accepted(f->ctx, "per_process_memory_fraction:0", GPUPLAN_TORCH_V2_10);
  refused(f->ctx, "per_process_memory_fraction:1.5", GPUPLAN_TORCH_V2_10, "must be in [0, 1]", NULL);
  /* large_segment_size_mb: pytorch#172056, after the 2.10 branch; 2.10's
   * refactored parser said "Unrecognized key 'KEY' in CUDA allocator config." */
  refused(f->ctx, "large_segment_size_mb:32", GPUPLAN_TORCH_V2_10, "came in main after 2.10",
          "Unrecognized key 'large_segment_size_mb' in CUDA allocator config.", NULL);
  accepted(f->ctx, "large_segment_size_mb:32", GPUPLAN_TORCH_LATEST);
  /* roundup_bypass_threshold_mb: 1.13 only */
  accepted(f->ctx, "roundup_bypass_threshold_mb:64", GPUPLAN_TORCH_V1_13);
  refused(f->ctx, "roundup_bypass_threshold_mb:64", GPUPLAN_TORCH_V2_0, "removed in 2.0", NULL);
  /* a key no release knew: each release's own words */
  refused(f->ctx, "frobnicate:1", GPUPLAN_TORCH_V2_9, "unknown key 'frobnicate'",
          "Unrecognized CachingAllocator option: frobnicate", NULL);
  refused(f->ctx, "frobnicate:1", GPUPLAN_TORCH_V2_10, "unknown key 'frobnicate'",
          "Unrecognized key 'frobnicate' in CUDA allocator config.", NULL);
  refused(f->ctx, "frobnicate:1", GPUPLAN_TORCH_V1_13, "known: max_split_size_mb, roundup_power2_divisions, "
          "garbage_collection_threshold, roundup_bypass_threshold_mb)", NULL);
  /* True/False only, as ConfigTokenizer::toBool and the 2.1-2.9 parser check */
  refused(f->ctx, "expandable_segments:true", GPUPLAN_TORCH_LATEST, "True or False", NULL);
}

/* max_split_size_mb and max_non_split_rounding_mb: "> 20" up to 2.9
 * (val1 > kLargeBuffer / mb), ">= 20" from 2.10 (val_env >= 20). */
static void test_releases__min_split_size(void **state) {
  fixture *f = *state;
  gpuplan_alloc_conf c;
  refused(f->ctx, "max_split_size_mb:20", GPUPLAN_TORCH_V1_13, "more than 20", NULL);
  refused(f->ctx, "max_split_size_mb:20", GPUPLAN_TORCH_V2_9, "max_split_size_mb", "more than 20", "torch 2.9", NULL);
  accepted(f->ctx, "max_split_size_mb:21", GPUPLAN_TORCH_V2_9);
  assert_int_equal(parse(f->ctx, "max_split_size_mb:20", GPUPLAN_TORCH_V2_10, &c), GPUPLAN_OK);
  assert_int_equal(c.max_split_size, 20 * MiB);
  refused(f->ctx, "max_split_size_mb:19", GPUPLAN_TORCH_V2_10, "at least 20", NULL);
  refused(f->ctx, "max_non_split_rounding_mb:20", GPUPLAN_TORCH_V2_9, "max_non_split_rounding_mb", "more than 20",
          NULL);
  assert_int_equal(parse(f->ctx, "max_non_split_rounding_mb:20", GPUPLAN_TORCH_V2_10, &c), GPUPLAN_OK);
  assert_int_equal(c.max_non_split_rounding, 20 * MiB);
}

/* roundup_power2_divisions: the list form from 2.0; '>' fills from the
 * last key (overwriting it) up to 2.9, after it from 2.10. */
static void test_releases__divisions_parse(void **state) {
  fixture *f = *state;
  gpuplan_alloc_conf c;
  const char *list = "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]";
  int i;
  refused(f->ctx, list, GPUPLAN_TORCH_V1_13, "list form came in torch 2.0", "torch 1.13", NULL);
  /* The single value must be a power of two in every release: 0 too is
   * refused (llvm::isPowerOf2_64(0) is false). */
  refused(f->ctx, "roundup_power2_divisions:0", GPUPLAN_TORCH_V1_13, "power of two", NULL);
  refused(f->ctx, "roundup_power2_divisions:0", GPUPLAN_TORCH_LATEST, "power of two", NULL);
  accepted(f->ctx, "roundup_power2_divisions:[256:0]", GPUPLAN_TORCH_V2_0);
  /* A bad list names its bad token (review A-7: '[300:2]' quoted ':2]',
   * '[256:3]' quoted ']', '[]' quoted '?'). */
  refused(f->ctx, "roundup_power2_divisions:[300:2]", GPUPLAN_TORCH_LATEST, "(got '300')", NULL);
  refused(f->ctx, "roundup_power2_divisions:[256:3]", GPUPLAN_TORCH_LATEST, "(got '3')", NULL);
  refused(f->ctx, "roundup_power2_divisions:[256:2x]", GPUPLAN_TORCH_LATEST, "(got '2x')", NULL);
  refused(f->ctx, "roundup_power2_divisions:[18446744073709551616:4]", GPUPLAN_TORCH_LATEST,
          "(got '18446744073709551616')", NULL);
  refused(f->ctx, "roundup_power2_divisions:[]", GPUPLAN_TORCH_LATEST, "got nothing before ']'", NULL);
  refused(f->ctx, "roundup_power2_divisions:[256:]", GPUPLAN_TORCH_LATEST, "divisions", "got nothing before ']'", NULL);
  refused(f->ctx, "roundup_power2_divisions:[256:2", GPUPLAN_TORCH_LATEST, "not closed with ']'", NULL);
  /* 256 MB -> index log2(256) = 8, the first key fills 0..7; 512 -> 9;
   * 1024 -> 10; '>' from index 10 (2.9) or 11 (2.10) to 15. */
  assert_int_equal(parse(f->ctx, list, GPUPLAN_TORCH_V2_9, &c), GPUPLAN_OK);
  for (i = 0; i <= 8; i++) assert_int_equal(c.roundup_divisions[i], 1);
  assert_int_equal(c.roundup_divisions[9], 2);
  for (i = 10; i < 16; i++) assert_int_equal(c.roundup_divisions[i], 8);
  assert_int_equal(parse(f->ctx, list, GPUPLAN_TORCH_V2_10, &c), GPUPLAN_OK);
  assert_int_equal(c.roundup_divisions[9], 2);
  assert_int_equal(c.roundup_divisions[10], 4);
  for (i = 11; i < 16; i++) assert_int_equal(c.roundup_divisions[i], 8);
  assert_int_equal(parse(f->ctx, list, GPUPLAN_TORCH_V2_0, &c), GPUPLAN_OK);
  assert_int_equal(c.roundup_divisions[10], 8);
  /* Review 2026-12-02, hand-run through PyTorch's parsers ([CFG] id
   * 706613213 for 2.9, [ACF] @ 0ac71663 for 2.10).  A '>' first: it fills
   * from last_index, 0, and is not the "first value": the key after it
   * still fills 0..7 (was: 8 8 8 8 8 8 8 8 1 8..., the '>' had cleared it). */
  assert_int_equal(parse(f->ctx, "roundup_power2_divisions:[>:8,256:1]", GPUPLAN_TORCH_V2_9, &c), GPUPLAN_OK);
  for (i = 0; i <= 8; i++) assert_int_equal(c.roundup_divisions[i], 1);
  for (i = 9; i < 16; i++) assert_int_equal(c.roundup_divisions[i], 8);
  /* 2.10 fills from last_index + 1: with no key before, index 0 (under
   * 2 MiB) keeps 0, 512-byte rounding (was: all 16 set). */
  assert_int_equal(parse(f->ctx, "roundup_power2_divisions:[>:8]", GPUPLAN_TORCH_V2_10, &c), GPUPLAN_OK);
  assert_int_equal(c.roundup_divisions[0], 0);
  for (i = 1; i < 16; i++) assert_int_equal(c.roundup_divisions[i], 8);
  assert_int_equal(parse(f->ctx, "roundup_power2_divisions:[>:8]", GPUPLAN_TORCH_V2_9, &c), GPUPLAN_OK);
  for (i = 0; i < 16; i++) assert_int_equal(c.roundup_divisions[i], 8);
  /* No cap at 65536 in PyTorch (isPowerOf2_64 only): 2^20 is taken; past
   * 2^30 (stoi's largest power of two) gpuplan refuses, naming it. */
  assert_int_equal(parse(f->ctx, "roundup_power2_divisions:[256:1048576]", GPUPLAN_TORCH_V2_9, &c), GPUPLAN_OK);
  assert_int_equal(c.roundup_divisions[8], 1048576);
  assert_int_equal(parse(f->ctx, "roundup_power2_divisions:131072", GPUPLAN_TORCH_V2_9, &c), GPUPLAN_OK);
  refused(f->ctx, "roundup_power2_divisions:[256:2147483648]", GPUPLAN_TORCH_LATEST, "up to 2^30", NULL);
  refused(f->ctx, "roundup_power2_divisions:2147483648", GPUPLAN_TORCH_LATEST, "up to 2^30", NULL);
}

/* round_size with a division of 1: up to 2.3 the request is returned as it
 * is (roundup_power2_next_division: "if (size <= 4 || divisions <= 1)
 * return size;"), from 2.4 it is rounded to 512 bytes (d > 1 is tested,
 * pytorch#126830).  Two divisions or more round the same in every release. */
static void test_releases__division_of_one(void **state) {
  fixture *f = *state;
  /* 3000 > 512 * 1: 2.3 keeps 3000; 2.4 rounds up to 6 * 512 = 3072 */
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_V2_3, 3000), 3000);
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_V2_4, 3000), 3072);
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_V1_13, 3000), 3000);
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_LATEST, 3000), 3072);
  /* 100 MiB + 1 in the large pool (a 102 MiB segment, the rest split off):
   * 2.3 104857601, 2.4 the next multiple of 512, 104858112 */
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_V2_3, 100 * MiB + 1), 104857601);
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:1", GPUPLAN_TORCH_V2_4, 100 * MiB + 1), 104858112);
  /* 614401 with 4 divisions: floor power 2^19, step 2^17, 5 steps = 655360 */
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:4", GPUPLAN_TORCH_V2_3, 614401), 655360);
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:4", GPUPLAN_TORCH_V2_4, 614401), 655360);
}

/* 1.13's roundup_bypass_threshold_mb: requests above it get 512-byte
 * rounding only. */
static void test_releases__bypass_threshold_113(void **state) {
  fixture *f = *state;
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:4", GPUPLAN_TORCH_V1_13, 614401), 655360);
  /* 614401 > 0 MiB: 1201 * 512 = 614912 */
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:4,roundup_bypass_threshold_mb:0", GPUPLAN_TORCH_V1_13,
                            614401), 614912);
  /* 614401 < 1 MiB: not bypassed */
  assert_int_equal(block_of(f->ctx, "roundup_power2_divisions:4,roundup_bypass_threshold_mb:1", GPUPLAN_TORCH_V1_13,
                            614401), 655360);
}

/* The OOM text: capacity 30 MiB, 20 MiB allocated, a 5 MiB request asks
 * for a 20 MiB segment; 10 MiB free. */
static const char *oom_text(gpuplan_ctx *ctx, gpuplan_torch_version v, char *buf, size_t cap) {
  gpuplan_alloc_conf c;
  gpuplan_cachealloc *a = NULL;
  uint64_t x;
  assert_int_equal(parse(ctx, NULL, v, &c), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(ctx, &c, 30 * MiB, NULL, &a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, 20 * MiB, 0, &x), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, 5 * MiB, 0, &x), GPUPLAN_EOOM);
  snprintf(buf, cap, "%s", gpuplan_errmsg(ctx));
  gpuplan_cachealloc_free(a);
  return buf;
}

static void test_releases__oom_text(void **state) {
  fixture *f = *state;
  char t[1024];
  static const char tail22[] =
      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 30.00 MiB of which 10.00 MiB "
      "is free. Of the allocated memory 20.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
      "unallocated. If reserved but unallocated memory is large try setting ";
  /* 1.13 and 2.0: the "(GPU 0; ...)" text */
  assert_non_null(strstr(oom_text(f->ctx, GPUPLAN_TORCH_V1_13, t, sizeof t), "(GPU 0; 30.00 MiB total capacity;"));
  assert_non_null(strstr(oom_text(f->ctx, GPUPLAN_TORCH_V2_0, t, sizeof t), "(GPU 0; 30.00 MiB total capacity;"));
  /* 2.1: its own wording, "capacty" (sic), max_split_size_mb, no link
   * (pytorch#99699; was 2.2's, review 2026-12-02) */
  assert_string_equal(oom_text(f->ctx, GPUPLAN_TORCH_V2_1, t, sizeof t),
                      "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 30.00 MiB of "
                      "which 10.00 MiB is free. Of the allocated memory 20.00 MiB is allocated by PyTorch, and 0 "
                      "bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try "
                      "setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management "
                      "and PYTORCH_CUDA_ALLOC_CONF");
  {
    /* ... and explain-oom reads it back whole (it had no "capacty") */
    gpuplan_oom_info oi;
    assert_int_equal(gpuplan_oom_parse(f->ctx, t, &oi), GPUPLAN_OK);
    assert_int_equal(oi.format, 2);
    assert_int_equal(oi.partial, 0);
    assert_int_equal(oi.total, 30 * MiB);
    assert_int_equal(oi.free, 10 * MiB);
    assert_int_equal(oi.allocated, 20 * MiB);
    assert_int_equal(oi.conf_var, 1);
  }
  /* 2.2 to 2.9: PYTORCH_CUDA_ALLOC_CONF, the pytorch.org link (pytorch#113481) */
  oom_text(f->ctx, GPUPLAN_TORCH_V2_2, t, sizeof t);
  assert_memory_equal(t, tail22, sizeof tail22 - 1);
  assert_string_equal(t + sizeof tail22 - 1,
                      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                      "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
  oom_text(f->ctx, GPUPLAN_TORCH_V2_9, t, sizeof t);
  assert_non_null(strstr(t, "setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
  /* 2.10: PYTORCH_ALLOC_CONF, the same link */
  oom_text(f->ctx, GPUPLAN_TORCH_V2_10, t, sizeof t);
  assert_string_equal(t + sizeof tail22 - 1,
                      "PYTORCH_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                      "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)");
  /* main after 2.10: PYTORCH_CUDA_ALLOC_CONF again, docs.pytorch.org */
  oom_text(f->ctx, GPUPLAN_TORCH_LATEST, t, sizeof t);
  assert_string_equal(t + sizeof tail22 - 1,
                      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation "
                      "for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html"
                      "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)");
}

/* memory_summary(): 1.13's layout (KB/MB, no "Requested memory") before 2.0. */
static void test_releases__summary_layout(void **state) {
  fixture *f = *state;
  static const gpuplan_torch_version v[] = {GPUPLAN_TORCH_V1_13, GPUPLAN_TORCH_1_13, GPUPLAN_TORCH_V2_0,
                                            GPUPLAN_TORCH_V2_10};
  size_t i;
  for (i = 0; i < sizeof v / sizeof v[0]; i++) {
    gpuplan_alloc_conf c;
    gpuplan_cachealloc *a = NULL;
    char *s = NULL;
    uint64_t x;
    int old = i < 2;
    assert_int_equal(parse(f->ctx, NULL, v[i], &c), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_new(f->ctx, &c, 100 * MiB, NULL, &a), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_malloc(a, 3 * MiB, 0, &x), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_summary(a, &s), GPUPLAN_OK);
    /* 3 MiB = 3072 KiB, under 768 MiB so shown in KiB: "{:7d} {}" with KB
     * in 1.13, "{:6d} {}" with KiB since */
    assert_int_equal(strstr(s, "Requested memory") != NULL, !old);
    assert_non_null(strstr(s, old ? "| Allocated memory      |    3072 KB |" : "| Allocated memory      |   3072 KiB |"));
    gpuplan_free(f->ctx, s);
    gpuplan_cachealloc_free(a);
  }
}

/* The simulate command: torch, summary, and the environment as the release
 * read it (PYTORCH_ALLOC_CONF reaches the CUDA allocator from 2.10). */
static gpuplan_doc *simulate(fixture *f, const char *torch, const char *conf, const char *from, int summary) {
  gpuplan_job *job = NULL;
  gpuplan_doc *doc = NULL;
  int rc;
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "model", "gpt-2"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "gpu", "a100-40gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "steps", "1"), GPUPLAN_OK);
  if (torch) assert_int_equal(gpuplan_job_set(job, "torch", torch), GPUPLAN_OK);
  /* from: the environment variable conf is the value of (else the option) */
  if (conf)
    assert_int_equal(gpuplan_job_set(job, !from ? "alloc_conf"
                                          : !strcmp(from, "PYTORCH_ALLOC_CONF") ? "env_alloc_conf" : "env_cuda_alloc_conf",
                                     conf),
                     GPUPLAN_OK);
  /* summary: 1 memory_summary(), 2 memory_stats() */
  if (summary & 1) assert_int_equal(gpuplan_job_set(job, "summary", "true"), GPUPLAN_OK);
  if (summary & 2) assert_int_equal(gpuplan_job_set(job, "memory_stats", "true"), GPUPLAN_OK);
  rc = gpuplan_job_run(job, "simulate", &doc);
  gpuplan_job_free(job);
  if (rc) return NULL;
  return doc;
}

static const char *dstr(const gpuplan_doc *d, const char *path) {
  const gpuplan_value *v = gpuplan_value_path(gpuplan_doc_root(d), path);
  return v ? gpuplan_value_string(v, NULL) : NULL;
}

static void test_releases__simulate_job(void **state) {
  fixture *f = *state;
  gpuplan_doc *d;
  const char *s;
  /* 2.9: PYTORCH_ALLOC_CONF was not read; the defaults ran, with a warning */
  assert_non_null(d = simulate(f, "2.9", "expandable_segments:True", "PYTORCH_ALLOC_CONF", 0));
  assert_string_equal(dstr(d, "alloc_conf"), "");
  assert_string_equal(dstr(d, "alloc_conf_source"), "defaults");
  assert_string_equal(dstr(d, "torch"), "2.9");
  assert_non_null(s = dstr(d, "warnings.0"));
  assert_non_null(strstr(s, "does not read PYTORCH_ALLOC_CONF"));
  assert_null(gpuplan_value_path(gpuplan_doc_root(d), "summary"));
  gpuplan_doc_free(d);
  /* 2.10 reads it; PYTORCH_CUDA_ALLOC_CONF is read by every release */
  assert_non_null(d = simulate(f, "2.10", "expandable_segments:True", "PYTORCH_ALLOC_CONF", 0));
  assert_string_equal(dstr(d, "alloc_conf"), "expandable_segments:True");
  assert_string_equal(dstr(d, "alloc_conf_source"), "PYTORCH_ALLOC_CONF");
  assert_null(dstr(d, "warnings.0"));
  gpuplan_doc_free(d);
  assert_non_null(d = simulate(f, "2.9", "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF", 0));
  assert_string_equal(dstr(d, "alloc_conf"), "expandable_segments:True");
  gpuplan_doc_free(d);
  /* a key the release lacked is the setting's error, naming where it came from */
  assert_null(simulate(f, "2.0", "expandable_segments:True", "PYTORCH_CUDA_ALLOC_CONF", 0));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "alloc_conf (from PYTORCH_CUDA_ALLOC_CONF)"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "came in 2.1"));
  assert_null(simulate(f, "2.4", "max_split_size_mb:20", NULL, 0));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "alloc_conf (--alloc-conf)"));
  /* summary: memory_summary() of the run, in the release's layout */
  assert_non_null(d = simulate(f, "1.13", NULL, NULL, 1));
  assert_non_null(s = dstr(d, "summary"));
  assert_non_null(strstr(s, "PyTorch CUDA memory summary, device ID 0"));
  assert_null(strstr(s, "Requested memory"));
  assert_string_equal(dstr(d, "rules"), "1.13");
  gpuplan_doc_free(d);
  assert_non_null(d = simulate(f, NULL, NULL, NULL, 1));
  assert_non_null(strstr(dstr(d, "summary"), "Requested memory"));
  assert_string_equal(dstr(d, "torch"), "latest");
  gpuplan_doc_free(d);
}

/* memory_stats: torch.cuda.memory_stats()'s flat keys as each release has
 * them (Module.cpp _cuda_memoryStats: 8 StatArrays of 3 pools x 4 metrics,
 * 2 Stats, 3 counters = 107 in 1.13; requested_bytes adds 12 in 2.0; the
 * three device counters came in 2.3), sorted as memory_stats() sorts them,
 * the figures the document's own. */
static void test_releases__memory_stats_keys(void **state) {
  fixture *f = *state;
  static const struct {
    const char *torch;
    size_t keys;
    int requested, counters;
  } want[] = {{"1.13", 107, 0, 0}, {"2.0", 119, 1, 0}, {"2.2", 119, 1, 0}, {"2.3", 122, 1, 1}, {NULL, 122, 1, 1}};
  size_t i, k;
  for (i = 0; i < sizeof want / sizeof want[0]; i++) {
    gpuplan_doc *d;
    const gpuplan_value *root, *m;
    assert_non_null(d = simulate(f, want[i].torch, NULL, NULL, 2));
    root = gpuplan_doc_root(d);
    assert_non_null(m = gpuplan_value_get(root, "memory_stats"));
    assert_int_equal(gpuplan_value_count(m), want[i].keys);
    for (k = 1; k < gpuplan_value_count(m); k++)
      assert_true(strcmp(gpuplan_value_key(m, k - 1), gpuplan_value_key(m, k)) < 0);
    assert_int_equal(gpuplan_value_get(m, "requested_bytes.all.peak") != NULL, want[i].requested);
    assert_int_equal(gpuplan_value_get(m, "num_device_alloc") != NULL, want[i].counters);
    assert_int_equal(gpuplan_value_get(m, "num_sync_all_streams") != NULL, want[i].counters);
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(m, "allocated_bytes.all.peak")),
                     gpuplan_value_int(gpuplan_value_get(root, "peak_allocated_bytes")));
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(m, "reserved_bytes.all.peak")),
                     gpuplan_value_int(gpuplan_value_get(root, "peak_reserved_bytes")));
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(m, "max_split_size")), -1);
    /* the aggregate is the sum of the pools */
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(m, "allocation.all.allocated")),
                     gpuplan_value_int(gpuplan_value_get(m, "allocation.large_pool.allocated")) +
                         gpuplan_value_int(gpuplan_value_get(m, "allocation.small_pool.allocated")));
    assert_null(gpuplan_value_path(root, "summary"));
    gpuplan_doc_free(d);
  }
}

/* Review A-3: a run recorded by torch 2.0 with roundup_power2_divisions:1
 * (requests left unrounded, 1.13 to 2.3) replays exactly under --torch 2.0:
 * the start state is rebuilt under that release's rounding, not the
 * latest's (was: "events 1924 to 2050 cannot be checked", the peaks
 * doubled).  Under the latest rules the file cannot be followed, and the
 * replay says which release to name. */
static void test_releases__division_of_one_round_trip(void **state) {
  fixture *f = *state;
  gpuplan_job *job = NULL;
  gpuplan_doc *d = NULL, *back = NULL;
  const gpuplan_value *w;
  char path[1024];
  size_t i;
  int warned = 0;
  tmp_path(path, sizeof path, "division-of-one-2.0.pickle");
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "model", "gpt-2"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "gpu", "t4"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "micro_batch", "4"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "torch", "2.0"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "alloc_conf", "roundup_power2_divisions:1"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "snapshot", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "simulate", &d), GPUPLAN_OK);
  gpuplan_job_free(job);
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "file", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "torch", "2.0"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "replay", &back), GPUPLAN_OK);
  gpuplan_job_free(job);
  assert_true(gpuplan_value_bool(gpuplan_value_get(gpuplan_doc_root(back), "exact")));
  assert_false(gpuplan_value_bool(gpuplan_value_get(gpuplan_doc_root(back), "rebuilt_start")));
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(back), "peak_reserved_bytes")),
                   gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(d), "peak_reserved_bytes")));
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(back), "peak_allocated_bytes")),
                   gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(d), "peak_allocated_bytes")));
  gpuplan_doc_free(back);
  /* the latest rules round to 512 bytes: not this file's, and it says so */
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "file", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "replay", &back), GPUPLAN_OK);
  gpuplan_job_free(job);
  assert_false(gpuplan_value_bool(gpuplan_value_get(gpuplan_doc_root(back), "exact")));
  w = gpuplan_value_get(gpuplan_doc_root(back), "warnings");
  for (i = 0; i < gpuplan_value_count(w); i++)
    warned |= strstr(gpuplan_value_string(gpuplan_value_at(w, i), NULL), "replay it with --torch 2.3") != NULL;
  assert_true(warned);
  gpuplan_doc_free(back);
  gpuplan_doc_free(d);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_releases__values, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__conf_version_1, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__keys_by_release, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__min_split_size, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__divisions_parse, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__division_of_one, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__bypass_threshold_113, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__oom_text, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__summary_layout, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__simulate_job, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__memory_stats_keys, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_releases__division_of_one_round_trip, fixture_setup, fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
