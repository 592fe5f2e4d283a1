/*
 * test_mock_node.c: what the mock node tells nvidia-smi: the driver's
 * names, distinct identities, the driver modelled and its CUDA version
 * (the CUDA release notes' table), the NVLink topology of each kind of
 * node (NVSwitch, DGX-1's hybrid cube-mesh, bridged pairs), the processes
 * holding the memory, a training job's program over simulated time (start-
 * up, training, checkpoints, OOM), counters, and the smi/doctor documents
 * built from it through the job API (with every allocation counted).
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <math.h>
#include <string.h>

#include "gpuplan/mock.h"
#include "testutil.h"

#define MiB 1048576ull
#define GiB (1024 * MiB)

static gpuplan_mock *node(fixture *f, const char *spec, const char *fault) {
  gpuplan_mock *s = NULL;
  const char *faults[1] = {fault};
  assert_int_equal(gpuplan_mock_node(f->ctx, f->cat, spec, faults, fault ? 1 : 0, 600, 0.95, 0.87, &s), GPUPLAN_OK);
  return s;
}

static void test_mock_node__driver_versions_and_cuda(void **state) {
  fixture *f = *state;
  gpuplan_mock *s;
  gpuplan_backend *b;
  gpuplan_driver_info drv;
  (void)f;
  /* the CUDA each driver branch reports (CUDA Toolkit release notes) */
  assert_int_equal(gpuplan_driver_cuda_version("535.161.08"), 12020);
  assert_int_equal(gpuplan_driver_cuda_version("550.54.15"), 12040);
  assert_int_equal(gpuplan_driver_cuda_version("525.60.13"), 12000);
  assert_int_equal(gpuplan_driver_cuda_version("470.223.02"), 11040);
  assert_int_equal(gpuplan_driver_cuda_version("570.86.15"), 12080);
  assert_int_equal(gpuplan_driver_cuda_version("580.65.06"), 13000);
  assert_int_equal(gpuplan_driver_cuda_version("565.57.01"), 12070);
  assert_int_equal(gpuplan_driver_cuda_version("390.157"), 0);
  assert_int_equal(gpuplan_driver_cuda_version("535"), 0);
  assert_int_equal(gpuplan_driver_cuda_version("535.x"), 0);
  assert_int_equal(gpuplan_driver_cuda_version(NULL), 0);
  s = node(f, "a100-80gb:2", NULL);
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_driver(b, &drv), GPUPLAN_OK);
  assert_int_equal(drv.cuda_version, 12020);
  assert_int_equal(gpuplan_mock_set_driver(s, "550.54.15"), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_driver(b, &drv), GPUPLAN_OK);
  assert_int_equal(drv.cuda_version, 12040);
  assert_int_equal(gpuplan_mock_set_driver(s, "9.9"), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "driver: '9.9'"));
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
}

static void test_mock_node__names_identities_and_processes(void **state) {
  fixture *f = *state;
  gpuplan_mock *s = node(f, "a100-80gb:8", "oom@5");
  gpuplan_backend *b;
  gpuplan_device_info a, c;
  gpuplan_device_process p[4];
  gpuplan_device_telemetry t0, t1;
  gpuplan_mock_memory m;
  size_t n;
  int i;
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  for (i = 0; i < 8; i++) {
    int j;
    assert_int_equal(gpuplan_backend_device_info(b, i, f->cat, &a), GPUPLAN_OK);
    assert_string_equal(a.name, "NVIDIA A100-SXM4-80GB");
    assert_non_null(a.sku); /* the driver's name matches back to the SKU */
    assert_string_equal(a.sku->id, "a100-sxm4-80gb");
    assert_int_equal(strlen(a.uuid), 40);
    for (j = 0; j < i; j++) {
      assert_int_equal(gpuplan_backend_device_info(b, j, NULL, &c), GPUPLAN_OK);
      assert_string_not_equal(a.uuid, c.uuid);
      assert_string_not_equal(a.pci_bus_id, c.pci_bus_id);
    }
  }
  /* neighbours read differently; serials differ */
  assert_int_equal(gpuplan_backend_telemetry(b, 0, &t0), GPUPLAN_OK);
  assert_int_equal(gpuplan_backend_telemetry(b, 1, &t1), GPUPLAN_OK);
  assert_true(t0.temperature_c != t1.temperature_c);
  assert_string_not_equal(t0.serial, t1.serial);
  assert_int_equal(t0.numa_node, 0);
  assert_int_equal(gpuplan_backend_telemetry(b, 7, &t1), GPUPLAN_OK);
  assert_int_equal(t1.numa_node, 1);
  assert_string_equal(t1.cpu_affinity, "48-95,144-191");
  assert_true(t0.energy_j > 600 * 60.0); /* 600 s above idle power */
  assert_true(t0.nvlink_bytes > 0);
  /* the memory nvidia-smi counts is held by the listed processes */
  assert_int_equal(gpuplan_backend_processes(b, 0, p, 4, &n), GPUPLAN_OK);
  assert_int_equal(n, 1);
  assert_int_equal(p[0].role, 1);
  gpuplan_mock_memory_info(s, 0, &m);
  assert_int_equal(p[0].used_bytes, m.used);
  assert_true(m.used > 60 * GiB);
  assert_int_equal(gpuplan_backend_processes(b, 5, p, 4, &n), GPUPLAN_OK);
  assert_int_equal(n, 2); /* the job (its context only: no room) and the stray process */
  assert_int_equal(p[1].role, 2);
  gpuplan_mock_memory_info(s, 5, &m);
  assert_int_equal(p[0].used_bytes + p[1].used_bytes, m.used);
  assert_int_equal(gpuplan_backend_processes(b, 9, p, 4, &n), GPUPLAN_EINVAL);
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
}

static int links(gpuplan_backend *b, int i, int j, char *pcie) {
  gpuplan_device_link l;
  assert_int_equal(gpuplan_backend_link(b, i, j, &l), GPUPLAN_OK);
  if (pcie) strcpy(pcie, l.pcie);
  return l.nvlinks;
}

static void test_mock_node__topologies(void **state) {
  fixture *f = *state;
  gpuplan_mock *s;
  gpuplan_backend *b;
  char p[8];
  int i, j;
  /* HGX A100: NVSwitch, every pair NV12; nvlink-down cuts one GPU off */
  s = node(f, "a100-80gb:8", "nvlink-down@2");
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  assert_int_equal(links(b, 0, 7, p), 12);
  assert_int_equal(links(b, 2, 3, p), 0);
  assert_string_equal(p, "PXB"); /* one PCIe switch per pair */
  assert_int_equal(links(b, 2, 5, p), 0);
  assert_string_equal(p, "SYS");
  assert_int_equal(links(b, 2, 0, p), 0);
  assert_string_equal(p, "NODE");
  assert_int_equal(links(b, 4, 4, p), 0);
  assert_string_equal(p, "X");
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
  /* DGX-1 (V100): six links per GPU over four peers, the rest cross the CPUs */
  s = node(f, "v100:8", NULL);
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  for (i = 0; i < 8; i++) {
    int sum = 0, peers = 0;
    for (j = 0; j < 8; j++) {
      int l = links(b, i, j, NULL);
      assert_int_equal(l, links(b, j, i, NULL)); /* symmetric */
      sum += l;
      peers += l > 0;
    }
    assert_int_equal(sum, 6);
    assert_int_equal(peers, 4);
  }
  assert_int_equal(links(b, 0, 3, NULL), 2);
  assert_int_equal(links(b, 0, 5, p), 0);
  assert_string_equal(p, "SYS");
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
  /* A100 PCIe: NVLink bridges join pairs only */
  s = node(f, "a100-pcie-80gb:4", NULL);
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  assert_int_equal(links(b, 0, 1, NULL), 12);
  assert_int_equal(links(b, 1, 2, NULL), 0);
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
  /* L40S: no NVLink at all */
  s = node(f, "l40s:2", NULL);
  assert_int_equal(gpuplan_mock_backend(s, &b), GPUPLAN_OK);
  assert_int_equal(links(b, 0, 1, NULL), 0);
  gpuplan_backend_free(b);
  gpuplan_mock_free(s);
}

static void test_mock_node__a_job_over_time(void **state) {
  fixture *f = *state;
  gpuplan_mock_node_options o = GPUPLAN_MOCK_NODE_OPTIONS_INIT;
  gpuplan_mock *s = NULL;
  gpuplan_mock_job j;
  gpuplan_mock_telemetry t;
  const char *faults[1] = {"oom@1"};
  o.spec = "a100-80gb:2";
  o.load_s = 30;
  o.startup_s = 60;
  o.step_s = 2.0;
  o.checkpoint_every_s = 300;
  o.checkpoint_s = 30;
  o.job_bytes = (int64_t)(40 * GiB);
  o.faults = faults;
  o.nfaults = 1;
  assert_int_equal(gpuplan_mock_node_ex(f->ctx, f->cat, &o, &s), GPUPLAN_OK);
  /* 30 s in: starting, nearly idle, no cache yet */
  assert_int_equal(gpuplan_mock_job_read(s, 0, &j), GPUPLAN_OK);
  assert_string_equal(j.state, "starting");
  assert_true(j.bytes < GiB);
  gpuplan_mock_telemetry_read(s, 0, &t);
  assert_true(t.gpu_util < 0.1);
  /* the first step allocates the cache; GPU 1's other process leaves no room: OOM */
  assert_int_equal(gpuplan_mock_advance(s, 60), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_job_read(s, 0, &j), GPUPLAN_OK);
  assert_string_equal(j.state, "training");
  assert_true(j.bytes >= 40 * GiB);
  assert_true(j.steps > 10 && j.steps < 16); /* 30 s of 2 s steps */
  gpuplan_mock_telemetry_read(s, 0, &t);
  assert_true(fabs(t.gpu_util - 0.95) < 1e-9);
  assert_int_equal(gpuplan_mock_job_read(s, 1, &j), GPUPLAN_OK);
  assert_string_equal(j.state, "failed");
  assert_non_null(strstr(j.message, "CUDA out of memory. Tried to allocate 40.00 GiB. GPU 1"));
  gpuplan_mock_telemetry_read(s, 1, &t);
  assert_true(t.gpu_util == 0);
  /* 300 s of training, then a checkpoint: the GPU waits on storage */
  assert_int_equal(gpuplan_mock_advance(s, 300), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_job_read(s, 0, &j), GPUPLAN_OK);
  assert_string_equal(j.state, "checkpoint");
  assert_int_equal(gpuplan_mock_advance(s, 30), GPUPLAN_OK);
  assert_int_equal(gpuplan_mock_job_read(s, 0, &j), GPUPLAN_OK);
  assert_string_equal(j.state, "training");
  assert_int_equal(gpuplan_mock_advance(s, -1), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_mock_job_read(s, 2, &j), GPUPLAN_EINVAL);
  gpuplan_mock_free(s);
  /* bad options are named */
  o.job_bytes = -5;
  assert_int_equal(gpuplan_mock_node_ex(f->ctx, f->cat, &o, &s), GPUPLAN_EINVAL);
  o.job_bytes = -1;
  o.driver = "abc";
  assert_int_equal(gpuplan_mock_node_ex(f->ctx, f->cat, &o, &s), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "driver:"));
  o.driver = NULL;
  o.version = 99;
  assert_int_equal(gpuplan_mock_node_ex(f->ctx, f->cat, &o, &s), GPUPLAN_EMISUSE);
}

/* smi, topo and doctor through the job API: one document each, with its
 * schema; the same options give the same document. */
static void test_mock_node__documents(void **state) {
  fixture *f = *state;
  gpuplan_job *job;
  gpuplan_doc *d1, *d2;
  const gpuplan_value *r;
  char *a;
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &job), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "sim", "a100-80gb:8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "fault", "thermal@3"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "fault", "ecc@5"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "query_gpu", "index,temperature.gpu,pstate"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set_int(job, "samples", 3), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "smi", &d1), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "smi", &d2), GPUPLAN_OK);
  assert_string_equal(gpuplan_doc_schema(d1), "gpuplan.smi/1");
  a = strdup(gpuplan_doc_json(d1, 0, NULL));
  assert_non_null(a);
  assert_string_equal(a, gpuplan_doc_json(d2, 0, NULL));
  free(a);
  r = gpuplan_doc_root(d1);
  assert_int_equal(gpuplan_value_count(gpuplan_value_get(r, "samples")), 3);
  assert_int_equal(gpuplan_value_count(gpuplan_value_get(r, "rows")), 24); /* 8 GPUs x 3 samples */
  assert_true(gpuplan_value_real(gpuplan_value_path(r, "gpus.3.temperature.gpu_c")) >= 82.9);
  assert_true(gpuplan_value_real(gpuplan_value_path(r, "gpus.2.temperature.gpu_c")) < 75);
  assert_int_equal(gpuplan_value_int(gpuplan_value_path(r, "gpus.5.ecc.volatile_uncorrected")), 2);
  assert_non_null(gpuplan_doc_csv(d1, NULL));
  gpuplan_doc_free(d1);
  gpuplan_doc_free(d2);
  /* doctor: the findings are data */
  gpuplan_job_reset(job);
  assert_int_equal(gpuplan_job_set(job, "sim", "a100-80gb:8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "fault", "thermal"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set_real(job, "torch_cuda", 12.4), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "doctor", &d1), GPUPLAN_OK);
  r = gpuplan_doc_root(d1);
  assert_false(gpuplan_value_bool(gpuplan_value_get(r, "ok")));
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(r, "failures")), 1); /* thermal, grouped; 12.4 passes */
  gpuplan_doc_free(d1);
  /* L2: non-finite runtime versions are refused, naming the option */
  assert_int_equal(gpuplan_job_set_real(job, "torch_cuda", INFINITY), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "torch_cuda"));
  assert_int_equal(gpuplan_job_set(job, "torch_cuda", "nan"), GPUPLAN_EINVAL);
  /* options the command does not take */
  gpuplan_job_reset(job);
  assert_int_equal(gpuplan_job_set(job, "layout", "8,1,1"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "smi", &d1), GPUPLAN_EINVAL);
  /* L3: topo's layout product overflow */
  gpuplan_job_reset(job);
  assert_int_equal(gpuplan_job_set(job, "gpu", "a100-80gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "nodes", "16"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(job, "layout", "4294967296,4294967296,1"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "topo", &d1), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "overflows"));
  assert_int_equal(gpuplan_job_set(job, "layout", "8,2,8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(job, "topo", &d1), GPUPLAN_OK);
  assert_string_equal(gpuplan_doc_schema(d1), "gpuplan.topo/1");
  gpuplan_doc_free(d1);
  gpuplan_job_free(job);
}

/* Out of memory anywhere in smi and doctor: GPUPLAN_ENOMEM, no leak. */
static void test_mock_node__oom_sweep(void **state) {
  fixture *f = *state;
  long long n;
  int rc = GPUPLAN_ENOMEM, cmd;
  for (cmd = 0; cmd < 2; cmd++) {
    for (n = 0, rc = GPUPLAN_ENOMEM; rc == GPUPLAN_ENOMEM && n < 5000; n++) {
      gpuplan_job *job = NULL;
      gpuplan_doc *d = NULL;
      f->c.fail_at = -1;
      if (gpuplan_job_new(f->ctx, f->cat, &job)) fail();
      gpuplan_job_set(job, "sim", "h100-sxm5-80gb:2");
      gpuplan_job_set(job, "fault", "nvlink-down@1");
      f->c.fail_at = f->c.calls + n;
      rc = gpuplan_job_run(job, cmd ? "doctor" : "smi", &d);
      f->c.fail_at = -1;
      assert_true(rc == GPUPLAN_OK || rc == GPUPLAN_ENOMEM);
      gpuplan_doc_free(d);
      gpuplan_job_free(job);
    }
    assert_int_equal(rc, GPUPLAN_OK);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_mock_node__driver_versions_and_cuda),
    T(test_mock_node__names_identities_and_processes),
    T(test_mock_node__topologies),
    T(test_mock_node__a_job_over_time),
    T(test_mock_node__documents),
    T(test_mock_node__oom_sweep),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
