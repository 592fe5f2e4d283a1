/*
 * test_mempool.c: private memory pools (torch.cuda.MemPool, CUDA-graph
 * pools; docs/src/allocator.md "Private pools", R33) with hand-derived
 * expectations: a 1 MiB request is a small-pool block of a 2 MiB segment
 * (R6-R7), cached in the pool it was allocated in; the release rules of
 * private pools under expandable segments (R34) and in the OOM text (R35).
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define MiB 1048576ull

typedef struct mfix {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_cachealloc *a;
} mfix;

static int setup(void **state) {
  mfix *f = calloc(1, sizeof *f);
  counting_init(&f->c);
  f->ctx = counting_ctx(&f->c);
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, NULL, 1024 * MiB, NULL, &f->a), GPUPLAN_OK);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  mfix *f = *state;
  gpuplan_cachealloc_free(f->a);
  counting_done(&f->c, f->ctx);
  free(f);
  return 0;
}

static uint64_t A(mfix *f, uint64_t size) {
  uint64_t addr = 0;
  int rc = gpuplan_cachealloc_malloc(f->a, size, 0, &addr);
  if (rc) fprintf(stderr, "malloc(%llu): %s\n", (unsigned long long)size, gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
  return addr;
}

static void F(mfix *f, uint64_t addr) { assert_int_equal(gpuplan_cachealloc_release(f->a, addr), GPUPLAN_OK); }

#define RES(f) ((uint64_t)gpuplan_cachealloc_stats((f)->a)->reserved_bytes[GPUPLAN_POOL_ALL].current)
#define NSEG(f) gpuplan_cachealloc_segment_count((f)->a)

/* The segment of a holding addr. */
static gpuplan_segment_info seg_at(gpuplan_cachealloc *a, uint64_t addr) {
  size_t i, n = gpuplan_cachealloc_segment_count(a);
  gpuplan_segment_info s;
  for (i = 0; i < n; i++) {
    assert_int_equal(gpuplan_cachealloc_segment(a, i, &s, NULL, 0), GPUPLAN_OK);
    if (addr >= s.addr && addr < s.addr + s.total_size) return s;
  }
  fail_msg("no segment holds 0x%llx", (unsigned long long)addr);
  memset(&s, 0, sizeof s);
  return s;
}

/* The pool of the segment holding addr. */
static uint64_t pool_at(mfix *f, uint64_t addr) { return seg_at(f->a, addr).pool_id; }

/* (1)-(3): a pool's block is reused only inside the pool; empty_cache keeps
 * the pool's segment while it is in use, frees it once released. */
static void test_pool_lifecycle(void **state) {
  mfix *f = *state;
  uint64_t x, y, z;
  /* (1) 1 MiB in pool 1: a 2 MiB segment of pool 1; freed, cached there. */
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 1), GPUPLAN_OK); /* use_count 1 */
  x = A(f, MiB);
  assert_int_equal(RES(f), 2 * MiB);
  assert_int_equal(pool_at(f, x), 1);
  F(f, x);
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_OK);
  /* Outside the pool the cached block is not a candidate: a new segment. */
  y = A(f, MiB);
  assert_true(y != x);
  assert_int_equal(RES(f), 4 * MiB);
  assert_int_equal(NSEG(f), 2);
  assert_int_equal(pool_at(f, y), 0);
  /* (2) inside pool 1 again: its cached block, same address, no new segment. */
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 1), GPUPLAN_OK); /* use_count 2 */
  z = A(f, MiB);
  assert_int_equal(z, x);
  assert_int_equal(RES(f), 4 * MiB);
  F(f, z); /* back to pool 1 */
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_OK);
  /* (3) empty_cache frees the default segment of y only. */
  F(f, y);
  assert_int_equal(gpuplan_cachealloc_empty_cache(f->a), GPUPLAN_OK);
  assert_int_equal(RES(f), 2 * MiB);
  assert_int_equal(NSEG(f), 1);
  assert_int_equal(pool_at(f, x), 1);
  /* One release per begin: at use_count 1 the pool is still in use. */
  assert_int_equal(gpuplan_cachealloc_release_pool(f->a, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_empty_cache(f->a), GPUPLAN_OK);
  assert_int_equal(RES(f), 2 * MiB);
  /* use_count 0: the next empty_cache frees its segment (2 MiB) and the pool. */
  assert_int_equal(gpuplan_cachealloc_release_pool(f->a, 1), GPUPLAN_OK);
  assert_int_equal(RES(f), 2 * MiB);
  assert_int_equal(gpuplan_cachealloc_empty_cache(f->a), GPUPLAN_OK);
  assert_int_equal(RES(f), 0);
  assert_int_equal(NSEG(f), 0);
  /* Deleted: releasing it again names an unknown pool. */
  assert_int_equal(gpuplan_cachealloc_release_pool(f->a, 1), GPUPLAN_EINVAL);
}

/* A released pool whose block is still allocated keeps its segment; the
 * freed block goes back to that pool and the next empty_cache frees it. */
static void test_pool_freed_late(void **state) {
  mfix *f = *state;
  uint64_t x, y;
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 7), GPUPLAN_OK);
  x = A(f, 30 * MiB); /* large pool: a 30 MiB segment (R7: 2 MiB multiple) */
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_release_pool(f->a, 7), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_empty_cache(f->a), GPUPLAN_OK);
  assert_int_equal(RES(f), 30 * MiB);
  F(f, x);
  /* Outside the pool its free 30 MiB block is not reused. */
  y = A(f, 30 * MiB);
  assert_true(y != x);
  assert_int_equal(RES(f), 60 * MiB);
  assert_int_equal(gpuplan_cachealloc_empty_cache(f->a), GPUPLAN_OK);
  assert_int_equal(RES(f), 30 * MiB);
  assert_int_equal(pool_at(f, y), 0);
  F(f, y);
}

/* An allocator of capacity bytes under release torch with settings conf. */
static gpuplan_cachealloc *new_under(mfix *f, const char *conf, gpuplan_torch_version torch, uint64_t capacity) {
  gpuplan_alloc_conf c;
  gpuplan_cachealloc *a = NULL;
  assert_int_equal(gpuplan_alloc_conf_parse(f->ctx, conf, torch, &c), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, &c, capacity, NULL, &a), GPUPLAN_OK);
  return a;
}

/* R34: with expandable_segments, a private pool's 1 MiB block lives in a
 * 2 MiB cudaMalloc segment up to 2.4 (alloc_block's !owner_PrivatePool)
 * and in an expandable one (a 2 MiB page of the small pool's reservation)
 * from 2.5 (pytorch#128068); the default pool's is expandable in both. */
static void test_pool_expandable_by_release(void **state) {
  mfix *f = *state;
  static const struct {
    gpuplan_torch_version torch;
    int expandable;
  } cases[] = {{GPUPLAN_TORCH_V2_4, 0}, {GPUPLAN_TORCH_V2_5, 1}, {GPUPLAN_TORCH_LATEST, 1}};
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpuplan_cachealloc *a = new_under(f, "expandable_segments:True", cases[i].torch, 1024 * MiB);
    uint64_t x = 0, y = 0;
    gpuplan_segment_info s;
    assert_int_equal(gpuplan_cachealloc_begin_pool(a, 1), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_malloc(a, MiB, 0, &x), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_end_pool(a), GPUPLAN_OK);
    s = seg_at(a, x);
    assert_int_equal(s.pool_id, 1);
    assert_int_equal(s.expandable, cases[i].expandable);
    assert_int_equal(s.total_size, 2 * MiB);
    assert_int_equal(gpuplan_cachealloc_malloc(a, MiB, 0, &y), GPUPLAN_OK);
    s = seg_at(a, y);
    assert_int_equal(s.pool_id, 0);
    assert_int_equal(s.expandable, 1);
    assert_int_equal(gpuplan_cachealloc_stats(a)->reserved_bytes[GPUPLAN_POOL_ALL].current, 4 * MiB);
    gpuplan_cachealloc_free(a);
  }
}

/* R35: a private pool's cached free block is "allocated in private pools"
 * in the OOM text from 2.4 (pytorch#124673), counted with what PyTorch
 * allocated and not as reserved-but-unallocated; 2.3 counts it as
 * unallocated.  64 MiB device: pool 1 keeps a free 2 MiB segment (in use,
 * so the retry's empty_cache keeps it), the default pool a live 60 MiB
 * one; 20 MiB more cannot be had. */
static void test_oom_names_private_pools(void **state) {
  mfix *f = *state;
  static const struct {
    gpuplan_torch_version torch;
    const char *text;
  } cases[] = {
      {GPUPLAN_TORCH_V2_3, "Of the allocated memory 60.00 MiB is allocated by PyTorch, and 2.00 MiB is reserved by "
                           "PyTorch but unallocated."},
      {GPUPLAN_TORCH_V2_4, "Of the allocated memory 62.00 MiB is allocated by PyTorch, with 2.00 MiB allocated in "
                           "private pools (e.g., CUDA Graphs), and 0 bytes is reserved by PyTorch but unallocated."},
      {GPUPLAN_TORCH_LATEST, "Of the allocated memory 62.00 MiB is allocated by PyTorch, with 2.00 MiB allocated in "
                             "private pools (e.g., CUDA Graphs), and 0 bytes is reserved by PyTorch but unallocated."},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpuplan_cachealloc *a = new_under(f, NULL, cases[i].torch, 64 * MiB);
    uint64_t x = 0, y = 0, z = 0;
    assert_int_equal(gpuplan_cachealloc_begin_pool(a, 1), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_malloc(a, MiB, 0, &x), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_release(a, x), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_end_pool(a), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_malloc(a, 60 * MiB, 0, &y), GPUPLAN_OK);
    assert_int_equal(gpuplan_cachealloc_malloc(a, 20 * MiB, 0, &z), GPUPLAN_EOOM);
    if (!strstr(gpuplan_errmsg(f->ctx), cases[i].text))
      fail_msg("torch %d: %s\nexpected: %s", (int)cases[i].torch, gpuplan_errmsg(f->ctx), cases[i].text);
    gpuplan_cachealloc_free(a);
  }
}

/* (4) misuse. */
static void test_pool_errors(void **state) {
  mfix *f = *state;
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "gpuplan_cachealloc_end_pool"));
  assert_int_equal(gpuplan_cachealloc_release_pool(f->a, 3), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "pool 3"));
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 0), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 2), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_begin_pool(f->a, 5), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "pool 2"));
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_end_pool(f->a), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_cachealloc_begin_pool(NULL, 1), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_cachealloc_end_pool(NULL), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_cachealloc_release_pool(NULL, 1), GPUPLAN_EMISUSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pool_lifecycle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pool_freed_late, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pool_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pool_expandable_by_release, setup, teardown),
      cmocka_unit_test_setup_teardown(test_oom_names_private_pools, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
