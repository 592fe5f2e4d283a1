/*
 * test_cuda.c: the CUDA backend against a fake driver (tests/fake/
 * fake_cuda.c, built as libcuda.so.1 and found through GPUPLAN_FAKE_CUDA):
 * every entry point the backend uses, the failure modes a real machine
 * shows (no driver, no device, driver too old or mismatched, ECC, out of
 * memory), real allocations under the caching-allocator model, and that
 * everything is freed.  Plus matching device names to catalog SKUs.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *fake_path(void) {
  const char *p = getenv("GPUPLAN_FAKE_CUDA");
  assert_non_null(p);
  return p;
}

/* The test keeps its own handle on the fake, so its state survives the
 * backend's dlclose and fake_cuda_live() can be read after. */
static int live(void) {
  void *h = dlopen(fake_path(), RTLD_NOW | RTLD_NOLOAD);
  int (*fn)(void);
  int n;
  assert_non_null(h);
  *(void **)(&fn) = dlsym(h, "fake_cuda_live");
  assert_non_null(fn);
  n = fn();
  dlclose(h);
  return n;
}

static int setup_fake(void **state) {
  static void *keep;
  setenv("FAKE_CUDA_MODE", "ok", 1);
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  setenv("FAKE_CUDA_MIB", "40960", 1);
  setenv("FAKE_CUDA_USED_MIB", "0", 1);
  unsetenv("FAKE_CUDA_NAME");
  if (!keep) keep = dlopen(fake_path(), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(keep);
  return fixture_setup(state);
}

static void test_cuda__no_driver_says_so(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = (gpuplan_backend *)1;
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, "/nonexistent/libcuda.so.1", &b), GPUPLAN_EUNSUPPORTED);
  assert_null(b);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "no NVIDIA driver"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "couldn't communicate with the NVIDIA driver"));
}

static void test_cuda__old_library_missing_entry_points(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  const char *old = getenv("GPUPLAN_FAKE_CUDA_OLD");
  assert_non_null(old);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, old, &b), GPUPLAN_EUNSUPPORTED);
  assert_null(b);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "has no cuGetErrorName"));
}

static void test_cuda__devices(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  gpuplan_driver_info drv;
  gpuplan_device_info info;
  int n = 0;
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_string_equal(gpuplan_backend_kind(b), "cuda");
  assert_int_equal(gpuplan_backend_driver(b, &drv), GPUPLAN_OK);
  assert_int_equal(drv.cuda_version, 12040);
  assert_string_equal(drv.library, fake_path());
  assert_int_equal(gpuplan_backend_device_count(b, &n), GPUPLAN_OK);
  assert_int_equal(n, 2);
  assert_int_equal(gpuplan_backend_device_info(b, 1, f->cat, &info), GPUPLAN_OK);
  assert_int_equal(info.index, 1);
  assert_string_equal(info.name, "NVIDIA A100-SXM4-40GB");
  assert_string_equal(info.uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  assert_string_equal(info.pci_bus_id, "00000000:08:00.0");
  assert_int_equal(info.sm_count, 108);
  assert_int_equal(info.cc_major, 8);
  assert_int_equal(info.cc_minor, 0);
  assert_int_equal(info.clock_mhz, 1410);
  assert_int_equal(info.mem_clock_mhz, 1215);
  assert_int_equal(info.total_bytes, 40960ull << 20);
  assert_int_equal(info.free_bytes, (40960ull - 500) << 20); /* the fake's context */
  assert_non_null(info.sku);
  assert_string_equal(info.sku->id, "a100-sxm4-40gb");
  assert_int_equal(gpuplan_backend_device_info(b, 2, f->cat, &info), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_backend_device_info(b, -1, NULL, &info), GPUPLAN_EINVAL);
  gpuplan_backend_free(b);
  assert_int_equal(live(), 0); /* the primary context was released */
}

static void test_cuda__allocations_through_the_caching_allocator(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  const gpuplan_device_ops *dev;
  gpuplan_alloc_conf conf;
  gpuplan_cachealloc *a = NULL;
  uint64_t p1, p2, p3;
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_memory(b, 0, &dev), GPUPLAN_OK);
  assert_int_equal(gpuplan_alloc_conf_parse(f->ctx, NULL, GPUPLAN_TORCH_LATEST, &conf), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_new(f->ctx, &conf, 0, dev, &a), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, 1ull << 30, 0, &p1), GPUPLAN_OK);
  assert_int_equal(gpuplan_cachealloc_malloc(a, 3ull << 20, 0, &p2), GPUPLAN_OK);
  assert_true(live() >= 3); /* two segments and the context */
  /* 40 GiB less the context and what is held: 39 GiB more cannot fit */
  assert_int_equal(gpuplan_cachealloc_malloc(a, 39ull << 30, 0, &p3), GPUPLAN_EOOM);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "CUDA out of memory. Tried to allocate 39.00 GiB"));
  assert_int_equal(gpuplan_cachealloc_release(a, p1), GPUPLAN_OK);
  gpuplan_cachealloc_free(a); /* returns its segments */
  gpuplan_backend_free(b);
  assert_int_equal(live(), 0);
}

static void test_cuda__backend_frees_what_is_left(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  const gpuplan_device_ops *dev;
  uint64_t addr;
  int i;
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_memory(b, 1, &dev), GPUPLAN_OK);
  for (i = 0; i < 100; i++) assert_int_equal(dev->malloc(dev->payload, 2u << 20, &addr), GPUPLAN_OK);
  assert_int_equal(live(), 101);
  gpuplan_backend_free(b); /* no frees by the caller: the backend frees all */
  assert_int_equal(live(), 0);
}

static void test_cuda__never_asks_for_more_than_is_free(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  const gpuplan_device_ops *dev;
  uint64_t addr, fr, tot;
  setenv("FAKE_CUDA_USED_MIB", "39000", 1); /* another process holds most of it */
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_memory(b, 0, &dev), GPUPLAN_OK);
  dev->mem_info(dev->payload, &fr, &tot);
  assert_int_equal(fr, (40960ull - 500 - 39000) << 20);
  assert_int_equal(dev->malloc(dev->payload, 2ull << 30, &addr), GPUPLAN_ENOTFOUND);
  assert_int_equal(dev->malloc(dev->payload, 1ull << 30, &addr), GPUPLAN_OK);
  gpuplan_backend_free(b);
  assert_int_equal(live(), 0);
}

static void test_cuda__failure_modes(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  const gpuplan_device_ops *dev;
  uint64_t addr;
  setenv("FAKE_CUDA_MODE", "nodevice", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "CUDA_ERROR_NO_DEVICE"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "CUDA_VISIBLE_DEVICES"));
  setenv("FAKE_CUDA_MODE", "olddriver", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_ERROR);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "CUDA_ERROR_INSUFFICIENT_DRIVER"));
  setenv("FAKE_CUDA_MODE", "mismatch", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_ERROR);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "do not match"));
  setenv("FAKE_CUDA_DEVICES", "0", 1);
  setenv("FAKE_CUDA_MODE", "ok", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_ENOTFOUND);
  setenv("FAKE_CUDA_DEVICES", "1", 1);
  setenv("FAKE_CUDA_MODE", "ecc", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_memory(b, 0, &dev), GPUPLAN_OK);
  assert_int_equal(dev->malloc(dev->payload, 2u << 20, &addr), GPUPLAN_ENOTFOUND);
  gpuplan_backend_free(b);
  setenv("FAKE_CUDA_MODE", "oom", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_device_memory(b, 0, &dev), GPUPLAN_OK);
  assert_int_equal(dev->malloc(dev->payload, 2u << 20, &addr), GPUPLAN_ENOTFOUND);
  gpuplan_backend_free(b);
  assert_int_equal(live(), 0);
}

static int nvml_inited(void) {
  void *h = dlopen(getenv("GPUPLAN_LIBNVML"), RTLD_NOW | RTLD_NOLOAD);
  int (*fn)(void);
  int n;
  if (!h) return 0; /* unloaded: nothing initialised */
  *(void **)(&fn) = dlsym(h, "fake_nvml_inited");
  n = fn ? fn() : -1;
  dlclose(h);
  return n;
}

static void test_cuda__nvml_telemetry(void **state) {
  fixture *f = *state;
  gpuplan_backend *b = NULL;
  gpuplan_device_telemetry t;
  const char *nvml = getenv("GPUPLAN_LIBNVML");
  assert_non_null(nvml);
  setenv("FAKE_NVML_TEMP", "86", 1);
  setenv("FAKE_NVML_PSTATE", "2", 1);
  setenv("FAKE_NVML_CLOCK", "1005", 1);
  setenv("FAKE_NVML_THROTTLE", "40", 1); /* SW thermal | HW slowdown */
  setenv("FAKE_NVML_ECC", "3", 1);
  setenv("FAKE_NVML_NVLINK_UP", "0", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_telemetry(b, 1, &t), GPUPLAN_OK);
  assert_true(t.temperature_c == 86);
  assert_true(t.power_w == 72 && t.power_limit_w == 400);
  assert_true(fabs(t.gpu_util - 0.94) < 1e-9);
  assert_int_equal(t.sm_clock_mhz, 1005);
  assert_int_equal(t.max_sm_clock_mhz, 1410);
  assert_int_equal(t.pstate, 2);
  assert_int_equal(t.throttle, GPUPLAN_THROTTLE_SW_THERMAL | GPUPLAN_THROTTLE_HW_SLOWDOWN);
  assert_int_equal(t.ecc_uncorrected, 3);
  assert_int_equal(t.ecc_corrected, 0);
  assert_int_equal(t.nvlink_links, 12);
  assert_int_equal(t.nvlink_up, 0);
  assert_string_equal(t.driver_version, "550.54.15");
  assert_int_equal(gpuplan_backend_telemetry(b, 2, &t), GPUPLAN_EINVAL);
  assert_int_equal(nvml_inited(), 1);
  gpuplan_backend_free(b);
  assert_int_equal(nvml_inited(), 0); /* nvmlShutdown, dlclose */
  unsetenv("FAKE_NVML_TEMP");
  unsetenv("FAKE_NVML_PSTATE");
  unsetenv("FAKE_NVML_CLOCK");
  unsetenv("FAKE_NVML_THROTTLE");
  unsetenv("FAKE_NVML_ECC");
  unsetenv("FAKE_NVML_NVLINK_UP");
  /* NVML missing or failing: telemetry says why, the rest still works */
  setenv("GPUPLAN_LIBNVML", "/nonexistent/libnvidia-ml.so.1", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_telemetry(b, 0, &t), GPUPLAN_EUNSUPPORTED);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "NVML unavailable"));
  assert_true(isnan(t.temperature_c));
  assert_int_equal(t.pstate, -1);
  gpuplan_backend_free(b);
  setenv("GPUPLAN_LIBNVML", nvml, 1);
  setenv("FAKE_NVML_MODE", "initfail", 1);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_telemetry(b, 0, &t), GPUPLAN_EUNSUPPORTED);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "nvmlInit"));
  gpuplan_backend_free(b);
  unsetenv("FAKE_NVML_MODE");
  assert_int_equal(live(), 0);
}

static void test_cuda__misuse(void **state) {
  fixture *f = *state;
  gpuplan_backend *b;
  gpuplan_device_info info;
  int n;
  assert_int_equal(gpuplan_backend_open_cuda(NULL, fake_path(), &b), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_backend_open_cuda(f->ctx, fake_path(), NULL), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_backend_device_count(NULL, &n), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_backend_device_info(NULL, 0, NULL, &info), GPUPLAN_EMISUSE);
  assert_null(gpuplan_backend_kind(NULL));
  gpuplan_backend_free(NULL);
}

static void test_cuda__match_device_names(void **state) {
  fixture *f = *state;
  static const struct { const char *name; double gib; const char *want; } cases[] = {
    {"NVIDIA H100 80GB HBM3", 79.6, "h100-sxm5-80gb"},
    {"NVIDIA H100 PCIe", 79.6, "h100-pcie-80gb"},
    {"NVIDIA H100 NVL", 93.1, "h100-nvl-94gb"},
    {"NVIDIA A100-SXM4-40GB", 39.4, "a100-sxm4-40gb"},
    {"NVIDIA A100-SXM4-80GB", 79.2, "a100-sxm4-80gb"},
    {"NVIDIA A100 80GB PCIe", 79.2, "a100-pcie-80gb"},
    {"NVIDIA H200", 139.8, "h200-sxm-141gb"},
    {"NVIDIA B200", 178.4, "b200"},
    {"Tesla T4", 14.6, "t4"},
    {"NVIDIA L4", 22.0, "l4"},
    {"NVIDIA L40S", 44.4, "l40s"},
    {"NVIDIA A10", 22.1, "a10"},
    {"NVIDIA A10G", 22.0, "a10g"},
    {"Tesla V100-SXM2-32GB", 31.7, "v100-sxm2-32gb"},
    {"NVIDIA GeForce RTX 4090", 23.6, "rtx-4090"},
  };
  const gpuplan_gpu *g;
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = gpuplan_catalog_match_device(f->cat, cases[i].name, (uint64_t)(cases[i].gib * 1073741824.0), &g);
    if (rc || strcmp(g->id, cases[i].want))
      fprintf(stderr, "%s -> %s (want %s)\n", cases[i].name, rc ? "none" : g->id, cases[i].want);
    assert_int_equal(rc, GPUPLAN_OK);
    assert_string_equal(g->id, cases[i].want);
  }
  assert_int_equal(gpuplan_catalog_match_device(f->cat, "AMD Instinct MI300X", 192ull << 30, &g), GPUPLAN_ENOTFOUND);
  assert_null(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup_fake, fixture_teardown)
    T(test_cuda__no_driver_says_so),
    T(test_cuda__old_library_missing_entry_points),
    T(test_cuda__devices),
    T(test_cuda__allocations_through_the_caching_allocator),
    T(test_cuda__backend_frees_what_is_left),
    T(test_cuda__never_asks_for_more_than_is_free),
    T(test_cuda__failure_modes),
    T(test_cuda__nvml_telemetry),
    T(test_cuda__misuse),
    T(test_cuda__match_device_names),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
