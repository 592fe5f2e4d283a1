/*
 * test_perf.c: the performance model's arithmetic and its physics: FLOPs
 * per token against 6N, scaling with GPUs, the pipeline bubble, NVLink vs
 * PCIe for tensor parallelism, data-parallel traffic volumes, cost.
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

static void perf(fixture *f, const char *model, const gpuplan_cluster *cl,
                 gpuplan_memory_options *o, int64_t gb, gpuplan_perf *r) {
  const gpuplan_model *m;
  int rc;
  assert_int_equal(gpuplan_catalog_model(f->cat, model, &m), GPUPLAN_OK);
  rc = gpuplan_perf_eval(f->ctx, m, cl, o, gb, 0, NULL, r);
  if (rc) fprintf(stderr, "perf: %s\n", gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
}

static void test_perf__flops_per_token_is_about_6n(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *g;
  const gpuplan_model *m;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r;
  double n;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "h100 sxm", &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, g, 8, 8, &cl), GPUPLAN_OK);
  o.dp = 8;
  o.seq_len = 2048;
  perf(f, "gpt-3-175b", &cl, &o, 64, &r);
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-3-175b", &m), GPUPLAN_OK);
  n = gpuplan_model_params(m);
  /* 6N plus attention (6 L s h with causal halving) within a few percent. */
  assert_true(fabs(r.model_flops_per_token / (6 * n + 6.0 * 96 * 2048 * 12288) - 1) < 0.02);
  assert_true(r.hfu == r.mfu);
  o.recompute = GPUPLAN_RECOMPUTE_FULL;
  perf(f, "gpt-3-175b", &cl, &o, 64, &r);
  assert_true(fabs(r.hardware_flops_per_token / r.model_flops_per_token - 4.0 / 3) < 0.01);
}

static void test_perf__scaling_bubble_and_fabrics(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *g;
  gpuplan_cluster c8, c64, pcie;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf a, b;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-80gb", &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, g, 8, 8, &c8), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, g, 64, 8, &c64), GPUPLAN_OK);
  o.dp = 8;
  perf(f, "llama-2-7b", &c8, &o, 64, &a);
  o.dp = 64;
  perf(f, "llama-2-7b", &c64, &o, 512, &b);
  /* weak scaling: 8x the GPUs, close to 8x the tokens/s, never more */
  assert_true(b.tokens_per_s <= 8.0001 * a.tokens_per_s && b.tokens_per_s > 6 * a.tokens_per_s);
  assert_true(b.bytes_network_per_gpu > 0 && a.bytes_network_per_gpu == 0);
  /* pipeline bubble = (p - 1) / m of the compute */
  {
    gpuplan_memory_options q = GPUPLAN_MEMORY_OPTIONS_INIT;
    q.pp = 4;
    q.dp = 2;
    q.microbatches = 16;
    perf(f, "llama-2-13b", &c8, &q, 0, &a);
    assert_true(fabs(a.bubble_s / a.compute_s - 3.0 / 16) < 1e-9);
    assert_int_equal(a.global_batch, 32);
  }
  /* tensor parallelism over PCIe is slower than over NVLink */
  pcie = c8;
  pcie.intra_bw_bytes_s = 31.5e9;
  pcie.intra_name = "pcie";
  {
    gpuplan_memory_options q = GPUPLAN_MEMORY_OPTIONS_INIT;
    q.tp = 8;
    perf(f, "llama-2-13b", &c8, &q, 8, &a);
    perf(f, "llama-2-13b", &pcie, &q, 8, &b);
    assert_true(b.tp_comm_s > 5 * a.tp_comm_s);
    assert_true(b.step_s > a.step_s);
    assert_true(b.bytes_pcie_per_gpu > 0 && b.bytes_nvlink_per_gpu == 0);
  }
}

static void test_perf__cost_and_errors(void **state) {
  fixture *f = *state;
  const gpuplan_node *n;
  const gpuplan_model *m;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r;
  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_ND96asr_v4", &n), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_from_node(f->ctx, f->cat, n, 2, &cl), GPUPLAN_OK);
  assert_int_equal(cl.gpus_per_node, 8);
  assert_true(cl.inter_bw_bytes_s == 8 * 25e9);
  o.dp = 16;
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-2-medium", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cl, &o, 512, 1e9, NULL, &r), GPUPLAN_OK);
  assert_true(fabs(r.cost_per_hour - 2 * 27.197) < 1e-9);
  assert_true(fabs(r.cost_per_mtok - r.cost_per_hour / (r.tokens_per_s * 3600) * 1e6) < 1e-12);
  assert_true(fabs(r.train_seconds - 1e9 / r.tokens_per_s) < 1e-6);
  o.dp = 8; /* 16 GPUs in the cluster */
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cl, &o, 512, 0, NULL, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "gpus"));
  o.dp = 16;
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cl, &o, 100, 0, NULL, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "global batch"));
}

static void test_perf__cpu_vms_vs_gpu_nodes(void **state) {
  fixture *f = *state;
  const gpuplan_node *cpu, *gpu;
  const gpuplan_model *m;
  gpuplan_cluster cc, gc;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf rc, rg;
  /* Seed 002: 8 x Standard_D16s_v5 against 2 x Standard_ND96asr_v4. */
  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_D16s_v5", &cpu), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_ND96asr_v4", &gpu), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-2-medium", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_from_node(f->ctx, f->cat, cpu, 8, &cc), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_from_node(f->ctx, f->cat, gpu, 2, &gc), GPUPLAN_OK);
  o.dp = 8;
  o.precision = GPUPLAN_PREC_FP32;
  o.micro_batch = 8;
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cc, &o, 512, 2e9, NULL, &rc), GPUPLAN_OK);
  o.dp = 16;
  o.precision = GPUPLAN_PREC_BF16_MIXED;
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &gc, &o, 512, 2e9, NULL, &rg), GPUPLAN_OK);
  /* at least the order of magnitude the article tells (47 h vs 90 min) */
  assert_true(rc.train_seconds / rg.train_seconds > 30);
}

/* Measured NCCL all-reduce bus bandwidth at 16 GiB (calibration rows
 * R0394-R0395): 8 x A100 on NVLink 3, 234.89 GB/s; 8 x H200 on NVLink 4
 * (ring), 367.61 GB/s.  The model is within 5% of both. */
static void test_perf__collectives_match_nccl_measurements(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *a100, *h200;
  gpuplan_cluster ca, ch, two;
  gpuplan_coll_time t, ring, tree, hier;
  double gib16 = 16.0 * 1073741824.0;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100-80gb", &a100), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "h200", &h200), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, a100, 8, 8, &ca), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, h200, 8, 8, &ch), GPUPLAN_OK);
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, gib16, 8, NULL, &t), GPUPLAN_OK);
  assert_true(fabs(t.busbw_bytes_s / 234.89e9 - 1) < 0.05);
  assert_int_equal(gpuplan_collective_time(f->ctx, &ch, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, gib16, 8, NULL, &t), GPUPLAN_OK);
  assert_true(fabs(t.busbw_bytes_s / 367.61e9 - 1) < 0.05);
  /* small messages: the tree's log2(n) latency beats the ring's n-1 hops */
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, a100, 512, 8, &two), GPUPLAN_OK);
  gpuplan_collective_time(f->ctx, &two, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, 8192, 512, NULL, &ring);
  gpuplan_collective_time(f->ctx, &two, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_TREE, 8192, 512, NULL, &tree);
  assert_true(tree.seconds < ring.seconds / 10);
  /* large messages across nodes: hierarchical puts most bytes on NVLink */
  gpuplan_collective_time(f->ctx, &two, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_HIERARCHICAL, gib16, 512, NULL, &hier);
  assert_true(hier.bytes_inter < hier.bytes_intra);
  assert_true(hier.seconds > 0);
  /* bad input names the field */
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, 1, 9, NULL, &t), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "n:"));
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, -1, 8, NULL, &t), GPUPLAN_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_perf__flops_per_token_is_about_6n),
    T(test_perf__scaling_bubble_and_fabrics),
    T(test_perf__cost_and_errors),
    T(test_perf__cpu_vms_vs_gpu_nodes),
    T(test_perf__collectives_match_nccl_measurements),
  };
  return cmocka_run_group_tests_name("perf", tests, NULL, NULL);
}
