/*
 * test_sim_faults.c: mock-GPU telemetry and the seven injectable faults of
 * the seed article (shared/seeds/000: OOM, CUDA version mismatch, GPU not
 * found, ECC, thermal throttling, low utilisation, NVLink not detected),
 * and the mock devices as a device backend.
 */
#include <math.h>
#include <string.h>

#include "gpuplan/mock.h"
#include "testutil.h"

typedef struct simfix {
  fixture *f; /* the counting context: its allocator lives in the fixture */
  gpuplan_mock *sim;
} simfix;

static int setup(void **state) {
  simfix *s = calloc(1, sizeof *s);
  void *inner;
  const gpuplan_gpu *g;
  fixture_setup(&inner);
  s->f = inner;
  assert_int_equal(gpuplan_mock_new(s->f->ctx, &s->sim), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(s->f->cat, "a100-sxm4-80gb", &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_add_gpu(s->sim, g, -1, NULL), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_add_gpu(s->sim, g, -1, NULL), GPUPLAN_OK);
  *state = s;
  return 0;
}

static int teardown(void **state) {
  simfix *s = *state;
  void *inner = s->f;
  gpuplan_mock_free(s->sim);
  free(s);
  return fixture_teardown(&inner);
}

static gpuplan_mock_telemetry tel(simfix *s, int dev) {
  gpuplan_mock_telemetry t;
  assert_int_equal(gpuplan_mock_telemetry_read(s->sim, dev, &t), GPUPLAN_OK);
  return t;
}

static void test_sim_faults__names(void **state) {
  int f;
  (void)state;
  for (f = 0; f < GPUPLAN_FAULT_COUNT; f++)
    assert_int_equal(gpuplan_mock_fault_parse(gpuplan_mock_fault_name((gpuplan_mock_fault)f)), f);
  assert_int_equal(gpuplan_mock_fault_parse("gremlins"), -1);
  assert_int_equal(gpuplan_mock_fault_parse(NULL), -1);
  assert_null(gpuplan_mock_fault_name(GPUPLAN_FAULT_COUNT));
}

static void test_sim_faults__healthy_device_under_load(void **state) {
  simfix *s = *state;
  gpuplan_mock_telemetry t = tel(s, 0);
  assert_int_equal(t.pstate, 8); /* idle */
  assert_true(t.throttle & GPUPLAN_THROTTLE_GPU_IDLE);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, 600, 0.95, NULL), GPUPLAN_OK);
  t = tel(s, 0);
  /* steady state 30 C inlet + 40 C at 400 W: about 68 C at 95% busy */
  assert_true(t.temperature_c > 60 && t.temperature_c < 72);
  assert_int_equal(t.pstate, 0);
  assert_int_equal(t.throttle, 0);
  assert_int_equal(t.sm_clock_mhz, 1410);
  assert_true(fabs(t.gpu_util - 0.95) < 1e-9);
  assert_true(t.power_w > 350 && t.power_w <= 400);
  assert_true(t.power_limit_w == 400);
  assert_int_equal(t.nvlink_links, 12); /* A100: 600 GB/s = 12 links of 50 */
  assert_int_equal(t.nvlink_up, 12);
  assert_true(t.speed == 1.0);
}

static void test_sim_faults__thermal_throttling(void **state) {
  simfix *s = *state;
  gpuplan_mock_telemetry t;
  assert_int_equal(gpuplan_mock_inject(s->sim, 1, GPUPLAN_FAULT_THERMAL, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_run(s->sim, 1, 30, 0.95, NULL), GPUPLAN_OK);
  t = tel(s, 1);
  assert_true(t.temperature_c < 83); /* not there yet: the heat takes time */
  assert_int_equal(t.pstate, 0);
  assert_int_equal(gpuplan_mock_run(s->sim, 1, 600, 0.95, NULL), GPUPLAN_OK);
  t = tel(s, 1);
  assert_true(fabs(t.temperature_c - 83) < 0.5); /* held at the slowdown threshold */
  assert_int_equal(t.pstate, 2);                  /* P0 -> P2, as the seed says */
  assert_true(t.throttle & GPUPLAN_THROTTLE_SW_THERMAL);
  assert_true(t.sm_clock_mhz < 1410 && t.sm_clock_mhz > 700);
  assert_true(t.speed < 0.9);
  assert_true(t.power_w < 300);
  /* the healthy neighbour is unaffected */
  assert_int_equal(tel(s, 0).pstate, 8);
  /* fixing the cooling brings the clocks back */
  assert_int_equal(gpuplan_mock_inject(s->sim, 1, GPUPLAN_FAULT_THERMAL, 0), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_run(s->sim, 1, 600, 0.95, NULL), GPUPLAN_OK);
  t = tel(s, 1);
  assert_int_equal(t.pstate, 0);
  assert_true(t.temperature_c < 72);
}

static void test_sim_faults__data_starvation(void **state) {
  simfix *s = *state;
  gpuplan_mock_telemetry t;
  assert_int_equal(gpuplan_mock_inject(s->sim, -1, GPUPLAN_FAULT_DATA_STARVATION, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, 600, 0.95, NULL), GPUPLAN_OK);
  t = tel(s, 0);
  assert_true(t.gpu_util < 0.5); /* the seed's symptom: GPU-Util below 50% while training */
  assert_true(t.speed < 0.5);
  assert_true(t.temperature_c < 60);
}

static void test_sim_faults__stops_the_work(void **state) {
  simfix *s = *state;
  const char *msg;
  gpuplan_mock_telemetry t;
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_ECC, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, 10, 0.9, &msg), GPUPLAN_ERROR);
  assert_string_equal(msg, "RuntimeError: CUDA error: uncorrectable ECC error encountered");
  t = tel(s, 0);
  assert_true(t.ecc_uncorrected > 0);
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_ECC, 0), GPUPLAN_OK);
  assert_int_equal(tel(s, 0).ecc_uncorrected, 0); /* volatile: a reset clears it */
  assert_int_equal(gpuplan_mock_inject(s->sim, 1, GPUPLAN_FAULT_CUDA_MISMATCH, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_run(s->sim, 1, 10, 0.9, &msg), GPUPLAN_ERROR);
  assert_string_equal(msg, "RuntimeError: CUDA error: no kernel image is available for execution on the device");
  assert_int_equal(gpuplan_mock_run(s->sim, 0, 10, 0.9, &msg), GPUPLAN_OK);
  assert_null(msg);
}

static void test_sim_faults__nvlink_down(void **state) {
  simfix *s = *state;
  assert_int_equal(gpuplan_mock_inject(s->sim, 1, GPUPLAN_FAULT_NVLINK_DOWN, 1), GPUPLAN_OK);
  assert_int_equal(tel(s, 1).nvlink_up, 0);
  assert_int_equal(tel(s, 1).nvlink_links, 12);
  assert_int_equal(tel(s, 0).nvlink_up, 12);
  assert_true(gpuplan_mock_has_fault(s->sim, 1, GPUPLAN_FAULT_NVLINK_DOWN));
  assert_false(gpuplan_mock_has_fault(s->sim, 0, GPUPLAN_FAULT_NVLINK_DOWN));
}

static void test_sim_faults__oom_from_another_process(void **state) {
  simfix *s = *state;
  gpuplan_mock_memory mem;
  gpuplan_alloc_conf conf;
  gpuplan_cachealloc *a = NULL;
  uint64_t p;
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_OOM, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_memory_info(s->sim, 0, &mem), GPUPLAN_OK);
  assert_true(mem.others > mem.total / 100 * 90);
  assert_int_equal(gpuplan_alloc_conf_parse(s->f->ctx, NULL, GPUPLAN_TORCH_LATEST, &conf), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(s->f->ctx, &conf, 0, gpuplan_mock_device(s->sim, 0), &a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, 8ull << 30, 0, &p), GPUPLAN_EOOM);
  assert_non_null(strstr(gpuplan_errmsg(s->f->ctx), "CUDA out of memory. Tried to allocate 8.00 GiB"));
  gpuplan_cachealloc_free(a);
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_OOM, 0), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_memory_info(s->sim, 0, &mem), GPUPLAN_OK);
  assert_int_equal(mem.others, 0);
}

static void test_sim_faults__as_a_backend(void **state) {
  simfix *s = *state;
  gpuplan_backend *b = NULL;
  gpuplan_driver_info drv;
  gpuplan_device_info info;
  const gpuplan_device_ops *dev;
  int n;
  assert_int_equal(gpuplan_mock_backend(s->sim, &b), GPUPLAN_OK);
  assert_string_equal(gpuplan_backend_kind(b), "mock");
  assert_int_equal(gpuplan_backend_driver(b, &drv), GPUPLAN_OK);
  assert_int_equal(drv.cuda_version, 12020);
  assert_int_equal(gpuplan_backend_device_count(b, &n), GPUPLAN_OK);
  assert_int_equal(n, 2);
  assert_int_equal(gpuplan_backend_device_info(b, 1, s->f->cat, &info), GPUPLAN_OK);
  assert_string_equal(info.name, "NVIDIA A100-SXM4-80GB"); /* the driver's name, not the catalog's */
  assert_non_null(info.sku);
  assert_string_equal(info.sku->id, "a100-sxm4-80gb");
  assert_int_equal(info.sm_count, 108);
  assert_int_equal(info.cc_major, 8);
  assert_int_equal(info.total_bytes, 80ull << 30);
  assert_int_equal(gpuplan_backend_device_memory(b, 0, &dev), GPUPLAN_OK);
  assert_ptr_equal(dev, gpuplan_mock_device(s->sim, 0));
  assert_int_equal(gpuplan_backend_device_info(b, 5, NULL, &info), GPUPLAN_EINVAL);
  /* one GPU not found: it fell off the bus (Xid 79); the others answer */
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_GPU_NOT_FOUND, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_count(b, &n), GPUPLAN_OK);
  {
    gpuplan_device_telemetry t;
    assert_int_equal(gpuplan_backend_telemetry(b, 0, &t), GPUPLAN_OK);
    assert_true(t.lost);
    assert_int_equal(t.xid, 79);
    assert_true(isnan(t.temperature_c));
    assert_int_equal(gpuplan_backend_telemetry(b, 1, &t), GPUPLAN_OK);
    assert_false(t.lost);
    assert_int_equal(t.xid, 0);
  }
  /* every GPU not found: the driver fails as a machine without one does */
  assert_int_equal(gpuplan_mock_inject(s->sim, -1, GPUPLAN_FAULT_GPU_NOT_FOUND, 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_count(b, &n), GPUPLAN_EUNSUPPORTED);
  assert_non_null(strstr(gpuplan_errmsg(s->f->ctx), "couldn't communicate with the NVIDIA driver"));
  gpuplan_backend_free(b);
}

static void test_sim_faults__bad_input(void **state) {
  simfix *s = *state;
  gpuplan_mock_telemetry t;
  assert_int_equal(gpuplan_mock_inject(s->sim, 2, GPUPLAN_FAULT_ECC, 1), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_inject(s->sim, 0, GPUPLAN_FAULT_COUNT, 1), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_inject(NULL, 0, GPUPLAN_FAULT_ECC, 1), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, -1, 0.5, NULL), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, 1, 1.5, NULL), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_run(s->sim, 0, NAN, 0.5, NULL), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_run(s->sim, 3, 1, 0.5, NULL), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_telemetry_read(s->sim, 3, &t), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_backend(NULL, NULL), GPUPLAN_EMISUSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
    T(test_sim_faults__names),
    T(test_sim_faults__healthy_device_under_load),
    T(test_sim_faults__thermal_throttling),
    T(test_sim_faults__data_starvation),
    T(test_sim_faults__stops_the_work),
    T(test_sim_faults__nvlink_down),
    T(test_sim_faults__oom_from_another_process),
    T(test_sim_faults__as_a_backend),
    T(test_sim_faults__bad_input),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
