/*
 * test_sim.c: the mock GPU: capacity from the SKU minus the CUDA context,
 * 2 MiB driver granularity, allocation that fails when full, nvidia-smi's
 * used = reserved + context + other processes, several devices, and the
 * caching allocator on top of it.
 */
#include <stdio.h>

#include "gpuplan/mock.h"
#include "testutil.h"

#define MiB 1048576ull
#define GiB (1024 * MiB)

static void test_sim__granularity_capacity_and_smi_view(void **state) {
  fixture *f = *state;
  gpuplan_mock *s = NULL;
  const gpuplan_gpu *g;
  const gpuplan_device_ops *d;
  gpuplan_mock_memory m;
  uint64_t a1, a2, a3, fr, tot;
  int idx = -1;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-40gb", &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_new(f->ctx, &s), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_add_gpu(s, g, -1, &idx), GPUPLAN_OK);
  assert_int_equal(idx, 0);
  d = gpuplan_mock_device(s, 0);
  assert_non_null(d);
  assert_null(gpuplan_mock_device(s, 1));
  assert_int_equal(gpuplan_mock_memory_info(s, 0, &m), GPUPLAN_OK);
  assert_int_equal(m.total, 40 * GiB);
  assert_int_equal(m.context, g->context_bytes);
  assert_int_equal(m.used, g->context_bytes);
  /* 2 MiB granularity: 1 byte takes 2 MiB, 3 MiB takes 4 MiB. */
  assert_int_equal(d->malloc(d->payload, 1, &a1), GPUPLAN_OK);
  assert_int_equal(d->malloc(d->payload, 3 * MiB, &a2), GPUPLAN_OK);
  gpuplan_mock_memory_info(s, 0, &m);
  assert_int_equal(m.reserved, 6 * MiB);
  assert_int_equal(a2, a1 + 2 * MiB);
  /* Other processes: nvidia-smi used grows, free shrinks. */
  assert_int_equal(gpuplan_mock_set_other_processes(s, 0, 10 * GiB), GPUPLAN_OK);
  gpuplan_mock_memory_info(s, 0, &m);
  assert_int_equal(m.used, 6 * MiB + g->context_bytes + 10 * GiB);
  d->mem_info(d->payload, &fr, &tot);
  assert_int_equal(tot, 40 * GiB);
  assert_int_equal(fr, 40 * GiB - m.used);
  /* Fails for real when full; a freed range is reused. */
  assert_int_equal(d->malloc(d->payload, fr + 1, &a3), GPUPLAN_ENOTFOUND);
  assert_int_equal(d->malloc(d->payload, fr, &a3), GPUPLAN_OK);
  gpuplan_mock_memory_info(s, 0, &m);
  assert_int_equal(m.free, 0);
  assert_int_equal(m.failed_allocations, 1);
  d->free(d->payload, a1, 1);
  assert_int_equal(d->malloc(d->payload, 2 * MiB, &a1), GPUPLAN_OK);
  d->free(d->payload, a3, fr);
  d->free(d->payload, a2, 3 * MiB);
  d->free(d->payload, a1, 2 * MiB);
  gpuplan_mock_memory_info(s, 0, &m);
  assert_int_equal(m.reserved, 0);
  assert_int_equal(m.allocations, 0);
  assert_int_equal(gpuplan_mock_set_other_processes(s, 0, 41 * GiB), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_add_device(s, "bad", 1 * GiB, 2 * GiB, NULL), GPUPLAN_EINVAL);
  gpuplan_mock_free(s);
}

static void test_sim__allocator_on_a_vgpu_slice_and_several_devices(void **state) {
  fixture *f = *state;
  gpuplan_mock *s = NULL;
  gpuplan_cachealloc *a0 = NULL, *a1 = NULL;
  const gpuplan_node *n;
  gpuplan_mock_memory m;
  uint64_t x;
  int i0, i1;
  assert_int_equal(gpuplan_catalog_node(f->cat, "NV6ads_A10_v5", &n), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_new(f->ctx, &s), GPUPLAN_OK);
  /* A 1/6 A10 slice: 4 GiB, with a 300 MiB context. */
  assert_int_equal(gpuplan_mock_add_device(s, "A10 1/6", n->gpu_memory_bytes, 300 * MiB, &i0), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_add_device(s, "second", 8 * GiB, 300 * MiB, &i1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_count(s), 2);
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, NULL, 0, gpuplan_mock_device(s, i0), &a0), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, NULL, 0, gpuplan_mock_device(s, i1), &a1), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a0, 3 * GiB, 0, &x), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a0, 1 * GiB, 0, &x), GPUPLAN_EOOM);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "GPU 0 has a total capacity of 4.00 GiB of which 724.00 MiB is free"));
  assert_int_equal(gpuplan_cachealloc_malloc(a1, 1 * GiB, 0, &x), GPUPLAN_OK); /* the other device is separate */
  gpuplan_mock_memory_info(s, i0, &m);
  assert_int_equal(m.used, 3 * GiB + 300 * MiB);
  gpuplan_cachealloc_free(a0);
  gpuplan_cachealloc_free(a1);
  gpuplan_mock_memory_info(s, i0, &m);
  assert_int_equal(m.reserved, 0);
  gpuplan_mock_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_sim__granularity_capacity_and_smi_view),
    T(test_sim__allocator_on_a_vgpu_slice_and_several_devices),
  };
  return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
