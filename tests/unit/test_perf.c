/*
 * test_perf.c: the performance model against published measurements and
 * hand derivations written here: FLOPs per token against 6N; the pipeline
 * bubble; NVLink vs PCIe (the catalog's PCIe rows, PM-8); ZeRO-3 / FSDP
 * traffic per micro-batch (PM-1), per NIC (PM-2), each collective's own
 * latency (PM-3), bounded overlap (PM-4); micro-batch size (PM-7); NCCL's
 * latency model and the measured NCCL rows; Megatron's GPT-3 175B layout on
 * 1,024 A100s (20.3 s, 51.4% MFU); cost that grows with DP width; the
 * search (candidates, ties, why #1 beats #2, thread independence).
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

static void perf_k(fixture *f, const char *model, const gpuplan_cluster *cl, const gpuplan_memory_options *o,
                   int64_t gb, const gpuplan_perf_constants *k, gpuplan_perf *r) {
  const gpuplan_model *m;
  int rc;
  assert_int_equal(gpuplan_catalog_model(f->cat, model, &m), GPUPLAN_OK);
  rc = gpuplan_perf_eval(f->ctx, m, cl, o, gb, 0, k, r);
  if (rc) fprintf(stderr, "perf: %s\n", gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
}

static void perf(fixture *f, const char *model, const gpuplan_cluster *cl, const gpuplan_memory_options *o,
                 int64_t gb, gpuplan_perf *r) {
  perf_k(f, model, cl, o, gb, NULL, r);
}

static const gpuplan_perf_comm *comm_named(const gpuplan_perf *p, const char *name) {
  size_t i;
  for (i = 0; i < p->n_comm; i++)
    if (strcmp(p->comm[i].name, name) == 0) return &p->comm[i];
  return NULL;
}

static void cluster(fixture *f, const char *gpu, int64_t gpus, gpuplan_cluster *cl) {
  const gpuplan_gpu *g;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, gpu, &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_default(f->ctx, f->cat, g, gpus, 8, cl), GPUPLAN_OK);
}

static void test_perf__flops_per_token_is_about_6n(void **state) {
  fixture *f = *state;
  const gpuplan_model *m;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r;
  double n;
  cluster(f, "h100 sxm", 8, &cl);
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
  /* the compute parts add up */
  assert_true(fabs(r.gemm_s + r.attention_s + r.elementwise_s - r.compute_s) < 1e-9 * r.compute_s + 1e-12);
}

/* 1F1B: the bubble is (p - 1) / v stage-times of one micro-batch.  With 40
 * layers on 4 stages (10 each) and the logits on the last, the average
 * stage time is t_avg = (L t_layer + t_logits) / 4 and the slowest t_max =
 * 10 t_layer + t_logits, so bubble / compute = 3 t_avg / (16 t_max). */
static void test_perf__bubble(void **state) {
  fixture *f = *state;
  gpuplan_cluster c8;
  gpuplan_memory_options q = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf a, v2;
  cluster(f, "a100-80gb", 8, &c8);
  q.pp = 4;
  q.dp = 2;
  q.microbatches = 16;
  perf(f, "llama-2-13b", &c8, &q, 0, &a);
  assert_int_equal(a.global_batch, 32);
  assert_int_equal(a.microbatches, 16);
  /* t_avg <= t_max: the ratio is at most 3/16 and, the logits being a
   * small part of a 10-layer stage, above 0.9 of it */
  assert_true(a.bubble_s / a.compute_s <= 3.0 / 16 + 1e-12);
  assert_true(a.bubble_s / a.compute_s > 0.9 * 3.0 / 16);
  /* interleaving 2 chunks halves it */
  q.vpp = 2;
  q.schedule = GPUPLAN_SCHED_INTERLEAVED;
  perf(f, "llama-2-13b", &c8, &q, 0, &v2);
  assert_true(fabs(v2.bubble_s / a.bubble_s - 0.5) < 1e-9);
}

/* PM-8: PCIe rates come from the catalog's fabric rows: a T4 is PCIe
 * Gen3, 8 GT/s x 16 lanes x 128/130 / 8 = 15.75 GB/s. */
static void test_perf__pcie_from_the_catalog(void **state) {
  fixture *f = *state;
  gpuplan_cluster t4, c8, pcie;
  const gpuplan_fabric *p3;
  gpuplan_memory_options q = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf a, b;
  cluster(f, "t4", 4, &t4);
  assert_int_equal(gpuplan_catalog_fabric(f->cat, "pcie3", &p3), GPUPLAN_OK);
  assert_true(t4.intra_bw_bytes_s == p3->bw_bytes_s);
  assert_true(fabs(t4.intra_bw_bytes_s / (8e9 * 16 * 128 / 130 / 8) - 1) < 1e-3);
  assert_string_equal(t4.intra_name, "pcie");
  /* tensor parallelism over PCIe is slower than over NVLink */
  cluster(f, "a100-80gb", 8, &c8);
  pcie = c8;
  pcie.intra_bw_bytes_s = 31.5e9;
  pcie.intra_latency_s = 1e-6;
  pcie.intra_name = "pcie";
  q.tp = 8;
  perf(f, "llama-2-13b", &c8, &q, 8, &a);
  perf(f, "llama-2-13b", &pcie, &q, 8, &b);
  assert_true(b.tp_comm_s > 5 * a.tp_comm_s);
  assert_true(b.step_s > a.step_s);
  assert_true(b.bytes_pcie_per_gpu > 0 && b.bytes_nvlink_per_gpu == 0);
}

static void test_perf__cost_and_errors(void **state) {
  fixture *f = *state;
  const gpuplan_node *n;
  const gpuplan_model *m;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r;
  gpuplan_perf_constants k;
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
  /* constants of another version are refused, naming them */
  gpuplan_perf_constants_default(&k);
  k.version = 99;
  assert_int_equal(gpuplan_perf_eval(f->ctx, m, &cl, &o, 512, 0, &k, &r), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "constants"));
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
 * (ring), 367.61 GB/s.  The model is within 5% of both.  Small messages:
 * NCCL's own latency model (src/graph/tuning.cc): a ring all-gather over
 * n ranks in N nodes costs baseLat + (n - N) intra hops + (N - 1) network
 * hops; for LL: 6.6 + (n - N) * max(0.6 * 1.8, 1.0) + (N - 1) * 2.7 us. */
static void test_perf__collectives_match_nccl(void **state) {
  fixture *f = *state;
  gpuplan_cluster ca, ch, big;
  gpuplan_coll_time t, ring, tree, hier;
  double gib16 = 16.0 * 1073741824.0, want;
  cluster(f, "a100-80gb", 8, &ca);
  cluster(f, "h200", 8, &ch);
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, gib16, 8, NULL, &t),
                   GPUPLAN_OK);
  assert_true(fabs(t.busbw_bytes_s / 234.89e9 - 1) < 0.05);
  assert_int_equal(gpuplan_collective_time(f->ctx, &ch, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, gib16, 8, NULL, &t),
                   GPUPLAN_OK);
  assert_true(fabs(t.busbw_bytes_s / 367.61e9 - 1) < 0.05);
  /* NVLS (in-switch reduction) measured at 482.26 GB/s on 8 x H200 (R0396):
   * what NCCL would pick for a large all-reduce in an NVSwitch node */
  assert_int_equal(gpuplan_collective_time(f->ctx, &ch, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_AUTO, gib16, 8, NULL, &t),
                   GPUPLAN_OK);
  assert_string_equal(t.algo, "nvls");
  assert_true(fabs(t.busbw_bytes_s / 482.26e9 - 1) < 0.05);
  /* an 8-byte all-gather over 512 A100s (64 nodes): NCCL's LL latency */
  cluster(f, "a100-80gb", 512, &big);
  assert_int_equal(gpuplan_collective_time(f->ctx, &big, GPUPLAN_ALL_GATHER, GPUPLAN_ALGO_RING, 8, 512, NULL, &t),
                   GPUPLAN_OK);
  want = (6.6 + (512 - 64) * fmax(0.6 * 1.8, 1.0) + 63 * 2.7) * 1e-6;
  assert_string_equal(t.proto, "LL");
  assert_true(fabs(t.latency_s / want - 1) < 1e-6);
  /* small messages: the tree's log2(n) latency beats the ring's n-1 hops */
  gpuplan_collective_time(f->ctx, &big, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, 8192, 512, NULL, &ring);
  gpuplan_collective_time(f->ctx, &big, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_TREE, 8192, 512, NULL, &tree);
  assert_true(tree.seconds < ring.seconds / 10);
  assert_int_equal(gpuplan_collective_time(f->ctx, &big, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_AUTO, 8192, 512, NULL, &t),
                   GPUPLAN_OK);
  assert_string_equal(t.algo, "tree");
  /* large messages across nodes: hierarchical puts most bytes on NVLink */
  gpuplan_collective_time(f->ctx, &big, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_HIERARCHICAL, gib16, 512, NULL, &hier);
  assert_true(hier.bytes_inter < hier.bytes_intra);
  assert_true(hier.seconds > 0);
  /* bad input names the field */
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, 1, 9, NULL, &t),
                   GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "n:"));
  assert_int_equal(gpuplan_collective_time(f->ctx, &ca, GPUPLAN_ALL_REDUCE, GPUPLAN_ALGO_RING, -1, 8, NULL, &t),
                   GPUPLAN_EINVAL);
}

/* PM-1, PM-2, PM-3: the review's pick, GPT-3 175B, tp 2, dp 512, ZeRO-3, SP.
 * Per micro-batch each GPU all-gathers its P_r = P / 2 parameters for
 * forward and again for backward (2 bytes each) and reduce-scatters P_r
 * gradients (2 bytes, the DeepSpeed convention): 6 P_r (n-1)/n bytes of
 * ring traffic.  The dp group has k = 8 / tp = 4 GPUs in each node, which
 * own 4 NICs: each NIC carries a quarter.  Every collective (one per layer
 * per micro-batch and kind) pays its own latency. */
static void test_perf__zero3_traffic_per_microbatch_and_nic(void **state) {
  fixture *f = *state;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory mem;
  const gpuplan_model *m;
  gpuplan_perf one, nine, three;
  const gpuplan_perf_comm *g1, *g9, *rs, *gb;
  double pr, ring, n = 512;
  cluster(f, "a100-80gb", 1024, &cl);
  o.tp = 2;
  o.dp = 512;
  o.sequence_parallel = 1;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  perf(f, "gpt-3-175b", &cl, &o, 512, &one);
  perf(f, "gpt-3-175b", &cl, &o, 4608, &nine);
  perf(f, "gpt-3-175b", &cl, &o, 1536, &three);
  assert_int_equal(one.microbatches, 1);
  assert_int_equal(nine.microbatches, 9);
  /* network bytes grow with the micro-batches: 9 x */
  assert_true(fabs(nine.bytes_network_per_gpu / one.bytes_network_per_gpu - 9) < 0.05);
  g1 = comm_named(&one, "zero3_gather_fwd");
  g9 = comm_named(&nine, "zero3_gather_fwd");
  assert_non_null(g1);
  assert_non_null(g9);
  assert_true(fabs(g9->count / g1->count - 9) < 1e-9);
  /* the hand count, at the review's 3 micro-batches (global batch 1536) */
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-3-175b", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_memory_eval(f->ctx, m, cl.gpu, &o, GPUPLAN_STAGE_WORST, &mem), GPUPLAN_OK);
  pr = mem.params_rank;
  assert_true(fabs(pr / (gpuplan_model_params(m) / 2) - 1) < 0.01);
  ring = 3 * 6 * pr * (n - 1) / n;
  g1 = comm_named(&three, "zero3_gather_fwd");
  gb = comm_named(&three, "zero3_gather_bwd");
  rs = comm_named(&three, "zero3_reduce_scatter");
  assert_non_null(gb);
  assert_non_null(rs);
  assert_true(fabs((g1->bytes_per_gpu + gb->bytes_per_gpu + rs->bytes_per_gpu) / ring - 1) < 0.01);
  /* the review's 1.5 TB of ring traffic and ~390 GB through each NIC */
  assert_true(ring > 1.5e12 && ring < 1.6e12);
  assert_int_equal(g1->ranks_per_node, 4);
  assert_true(fabs((g1->bytes_per_nic + gb->bytes_per_nic + rs->bytes_per_nic) / (ring / 4) - 1) < 0.01);
  /* each collective's latency: count = layers x micro-batches, each at
   * NCCL's ring latency over 512 ranks in 128 nodes (Simple protocol for
   * these 3.6 GB messages: 8.4 + 384 x 3.4 + 127 x 14 us) */
  assert_true(fabs(g1->count - 96 * 3) < 1e-9);
  assert_string_equal(g1->proto, "Simple");
  assert_true(fabs(g1->latency_s / g1->count / ((8.4 + 384 * 3.4 + 127 * 14.0) * 1e-6) - 1) < 1e-6);
  /* exposed + hidden = its seconds, for every collective */
  {
    size_t i;
    for (i = 0; i < three.n_comm; i++)
      assert_true(fabs(three.comm[i].exposed_s + three.comm[i].hidden_s - three.comm[i].seconds) <
                  1e-9 * three.comm[i].seconds + 1e-12);
  }
}

/* PM-2 at tp 8: a dp group with one GPU per node owns one NIC (25 GB/s),
 * not the node's eight: its bus bandwidth is one NIC's. */
static void test_perf__rail_optimised_nics(void **state) {
  fixture *f = *state;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r1, r8;
  const gpuplan_perf_comm *a1, *a8;
  cluster(f, "a100-80gb", 64, &cl);
  o.dp = 8;
  o.tp = 8;
  perf(f, "llama-2-13b", &cl, &o, 64, &r8);
  o.tp = 1;
  o.dp = 64;
  perf(f, "llama-2-13b", &cl, &o, 64, &r1);
  a8 = comm_named(&r8, "dp_allreduce");
  a1 = comm_named(&r1, "dp_allreduce");
  assert_non_null(a8);
  assert_non_null(a1);
  assert_int_equal(a8->ranks_per_node, 1);
  assert_true(a8->nics_per_node == 1);
  assert_int_equal(a1->ranks_per_node, 8);
  assert_true(a1->nics_per_node == 8);
  /* bytes per NIC = ring bytes / k */
  assert_true(fabs(a8->bytes_per_nic / a8->bytes_per_gpu - 1) < 1e-9);
  assert_true(fabs(a1->bytes_per_nic / a1->bytes_per_gpu - 1.0 / 8) < 1e-9);
}

/* PM-4: hiding is bounded by the compute of the same phase.  Llama-2-7B
 * ZeRO-3 on 16 single-T4 VMs (25 GbE): every micro-batch moves 6 P bytes
 * of ring traffic through 3.1 GB/s; that cannot hide behind a T4's
 * compute, and most of it must show. */
static void test_perf__overlap_is_bounded(void **state) {
  fixture *f = *state;
  const gpuplan_node *n;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r;
  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_NC4as_T4_v3", &n), GPUPLAN_OK);
  assert_int_equal(gpuplan_cluster_from_node(f->ctx, f->cat, n, 16, &cl), GPUPLAN_OK);
  o.dp = 16;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  o.recompute = GPUPLAN_RECOMPUTE_FULL;
  o.precision = GPUPLAN_PREC_FP16_MIXED;
  perf(f, "llama-2-7b", &cl, &o, 512, &r);
  assert_true(r.comm_s > r.compute_s);
  assert_true(r.dp_comm_s >= r.comm_s - r.compute_s);
  assert_true(r.dp_comm_s > 0.5 * r.comm_s);
  /* ~1.2 TB per step through 3.125 GB/s: minutes, not zero */
  assert_true(r.bytes_network_per_gpu > 1e12);
  assert_true(r.step_s > 300);
}

/* PM-7: the tokens of a micro-batch are a GEMM's M: micro-batch 1, 2 and
 * 4 give different step times, larger ones faster. */
static void test_perf__micro_batch_changes_step_time(void **state) {
  fixture *f = *state;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf r[3];
  int i;
  cluster(f, "a100-80gb", 8, &cl);
  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  o.seq_len = 2048;
  for (i = 0; i < 3; i++) {
    o.micro_batch = 1 << i;
    perf(f, "llama-2-7b", &cl, &o, 96, &r[i]);
  }
  assert_true(r[0].step_s > r[1].step_s);
  assert_true(r[1].step_s > r[2].step_s);
  assert_true(r[0].step_s / r[2].step_s > 1.01);
  assert_true(r[0].gemm_eff < r[2].gemm_eff);
}

/* Megatron-LM's published GPT-3 175B figure: 51.4% MFU (Korthikanti et al.
 * 2022, Megatron-LM README, calibration row R0012) with SP and selective
 * recompute; on 1,024 A100s at global batch 1536 (3.1 M tokens, ~1.08
 * TFLOP per token) that is 20.3 s per step.  tp 8, pp 16, dp 8 with the
 * distributed optimizer is within 10% of it. */
static void test_perf__megatron_gpt3_175b_on_1024_a100s(void **state) {
  fixture *f = *state;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf_constants k;
  gpuplan_perf r;
  double step;
  cluster(f, "a100-80gb", 1024, &cl);
  o.tp = 8;
  o.pp = 16;
  o.dp = 8;
  o.sequence_parallel = 1;
  o.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  o.convention = GPUPLAN_CONV_MEGATRON;
  gpuplan_perf_constants_framework(GPUPLAN_FW_MEGATRON, &k);
  perf_k(f, "gpt-3-175b", &cl, &o, 1536, &k, &r);
  step = 1536.0 * 2048 * r.model_flops_per_token / (1024 * 312e12 * 0.514);
  assert_true(fabs(step / 20.3 - 1) < 0.03); /* the hand figure */
  assert_true(fabs(r.step_s / 20.3 - 1) < 0.10);
  assert_int_equal(r.framework, GPUPLAN_FW_MEGATRON);
}

/* What grows with data-parallel width: the ring latency of every
 * collective ((n - 1) hops) and the wait for the slowest rank. */
static void test_perf__cost_grows_with_dp_width(void **state) {
  fixture *f = *state;
  gpuplan_cluster c64, c512;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf a, b;
  const gpuplan_perf_comm *ga, *gb;
  cluster(f, "h100 sxm", 64, &c64);
  cluster(f, "h100 sxm", 512, &c512);
  o.dp_mode = GPUPLAN_DP_FSDP_FULL;
  o.convention = GPUPLAN_CONV_FSDP;
  o.micro_batch = 6;
  o.dp = 64;
  perf(f, "llama-2-7b", &c64, &o, 384, &a);
  o.dp = 512;
  perf(f, "llama-2-7b", &c512, &o, 3072, &b);
  ga = comm_named(&a, "zero3_gather_fwd");
  gb = comm_named(&b, "zero3_gather_fwd");
  assert_true(gb->latency_s > 5 * ga->latency_s);
  assert_true(b.straggler_s > a.straggler_s);
  /* weak scaling: per-GPU throughput falls, never rises */
  assert_true(b.tokens_per_s / 512 < a.tokens_per_s / 64);
}

/* PM-14: offload is not free.  Llama-2-7B ZeRO-3 on one A100-40GB with
 * the optimizer in host memory: the fp16 gradients go down and the
 * parameters come back over PCIe Gen4 every step, 4 bytes x 6.7 B = 27 GB
 * at ~31.5 GB/s (the catalog's pcie4 row): about a second, plus CPU Adam. */
static void test_perf__offload_crosses_pcie(void **state) {
  fixture *f = *state;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf on, off;
  cluster(f, "a100-40gb", 1, &cl);
  o.dp_mode = GPUPLAN_DP_ZERO3;
  o.recompute = GPUPLAN_RECOMPUTE_FULL;
  perf(f, "llama-2-7b", &cl, &o, 8, &off);
  o.offload_optimizer = 1;
  perf(f, "llama-2-7b", &cl, &o, 8, &on);
  assert_true(on.bytes_pcie_per_gpu > 25e9 && on.bytes_pcie_per_gpu < 30e9);
  assert_true(on.optimizer_s > 0.8 && on.optimizer_s > 5 * off.optimizer_s);
  assert_true(fabs(cl.host_bw_bytes_s - 31.5e9) < 1e6);
}

/* Framework profiles: names, constants by name, TP overlap. */
static void test_perf__frameworks(void **state) {
  fixture *f = *state;
  gpuplan_framework fw;
  gpuplan_perf_constants k, nemo;
  gpuplan_cluster cl;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf off, on;
  double v;
  int i;
  for (i = 0; i < GPUPLAN_FW_COUNT; i++) {
    assert_int_equal(gpuplan_framework_parse(gpuplan_framework_name((gpuplan_framework)i), &fw), GPUPLAN_OK);
    assert_int_equal(fw, i);
  }
  assert_int_equal(gpuplan_framework_parse("Megatron-Core", &fw), GPUPLAN_OK);
  assert_int_equal(fw, GPUPLAN_FW_MEGATRON);
  assert_int_equal(gpuplan_framework_parse("llm-foundry", &fw), GPUPLAN_OK);
  assert_int_equal(fw, GPUPLAN_FW_COMPOSER);
  assert_int_equal(gpuplan_framework_parse("colossal", &fw), GPUPLAN_ENOTFOUND);
  gpuplan_perf_constants_framework(GPUPLAN_FW_MEGATRON, &k);
  assert_int_equal(gpuplan_perf_constant_set(&k, "overlap_eff", 0.5), GPUPLAN_OK);
  assert_true(k.overlap_eff == 0.5);
  assert_int_equal(gpuplan_perf_constant_set(&k, "no_such", 1), GPUPLAN_ENOTFOUND);
  for (i = 0; gpuplan_perf_constant_at(&k, (size_t)i, &v); i++) assert_true(isfinite(v));
  assert_true(i > 20);
  /* NeMo overlaps TP communication with GEMMs, Megatron by default not */
  gpuplan_perf_constants_framework(GPUPLAN_FW_NEMO, &nemo);
  assert_true(nemo.tp_overlap > 0);
  gpuplan_perf_constants_framework(GPUPLAN_FW_MEGATRON, &k);
  assert_true(k.tp_overlap == 0);
  cluster(f, "h100 sxm", 8, &cl);
  o.tp = 8;
  o.sequence_parallel = 1;
  perf_k(f, "llama-2-70b", &cl, &o, 16, &k, &off);
  k.tp_overlap = nemo.tp_overlap;
  perf_k(f, "llama-2-70b", &cl, &o, 16, &k, &on);
  assert_true(on.tp_comm_s < off.tp_comm_s);
  assert_true(fabs(on.comm_s - off.comm_s) < 1e-9 * off.comm_s);
}

/* The search over the whole space: at least 1 M candidates for GPT-3 175B
 * on 1,024 A100s; the same answer on one thread and on several; ties
 * within the model's error; #1 is not a layout with an order of magnitude
 * more network traffic than Megatron's tp 8 pp 16 dp 8. */
static void test_perf__search(void **state) {
  fixture *f = *state;
  const gpuplan_model *m;
  gpuplan_cluster cl;
  gpuplan_candidate a[5], b[5];
  gpuplan_search_stats sa, sb;
  gpuplan_search_options so = GPUPLAN_SEARCH_OPTIONS_INIT;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_perf ref;
  size_t na = 0, nb = 0, i;
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-3-175b", &m), GPUPLAN_OK);
  cluster(f, "a100-80gb", 1024, &cl);
  so.threads = 1;
  assert_int_equal(gpuplan_search_ex(f->ctx, m, &cl, NULL, 1536, GPUPLAN_OBJ_TIME, &so, a, 5, &na, &sa, NULL, NULL),
                   GPUPLAN_OK);
  so.threads = 3;
  assert_int_equal(gpuplan_search_ex(f->ctx, m, &cl, NULL, 1536, GPUPLAN_OBJ_TIME, &so, b, 5, &nb, &sb, NULL, NULL),
                   GPUPLAN_OK);
  assert_true(sa.candidates >= 1000000);
  assert_true(sa.candidates == sa.pruned + sa.invalid + sa.too_big + sa.timed);
  assert_true(sa.candidates == sb.candidates && sa.timed == sb.timed);
  assert_int_equal(na, 5);
  assert_int_equal(nb, 5);
  for (i = 0; i < na; i++) {
    assert_true(a[i].perf.step_s == b[i].perf.step_s);
    assert_memory_equal(&a[i].options, &b[i].options, sizeof a[i].options);
    if (i) assert_true(a[i].score >= a[i - 1].score);
    assert_int_equal(a[i].tied_with_first, a[i].score <= a[0].score * (1 + GPUPLAN_PERF_MODEL_ERROR));
  }
  /* Megatron's layout, for the traffic comparison */
  o.tp = 8;
  o.pp = 16;
  o.dp = 8;
  o.sequence_parallel = 1;
  o.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  perf(f, "gpt-3-175b", &cl, &o, 1536, &ref);
  assert_true(a[0].perf.step_s <= ref.step_s);
  assert_true(a[0].perf.bytes_network_per_gpu < 10 * ref.bytes_network_per_gpu);
  /* nothing fits: an empty answer, not an error */
  {
    const gpuplan_model *big;
    gpuplan_cluster one;
    assert_int_equal(gpuplan_catalog_model(f->cat, "llama-2-70b", &big), GPUPLAN_OK);
    cluster(f, "t4", 1, &one);
    assert_int_equal(gpuplan_search_ex(f->ctx, big, &one, NULL, 8, GPUPLAN_OBJ_TIME, NULL, a, 5, &na, NULL, NULL,
                                       NULL),
                     GPUPLAN_OK);
    assert_int_equal(na, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_perf__flops_per_token_is_about_6n),
    T(test_perf__bubble),
    T(test_perf__pcie_from_the_catalog),
    T(test_perf__cost_and_errors),
    T(test_perf__cpu_vms_vs_gpu_nodes),
    T(test_perf__collectives_match_nccl),
    T(test_perf__zero3_traffic_per_microbatch_and_nic),
    T(test_perf__rail_optimised_nics),
    T(test_perf__overlap_is_bounded),
    T(test_perf__micro_batch_changes_step_time),
    T(test_perf__megatron_gpt3_175b_on_1024_a100s),
    T(test_perf__cost_grows_with_dp_width),
    T(test_perf__offload_crosses_pcie),
    T(test_perf__frameworks),
    T(test_perf__search),
  };
  return cmocka_run_group_tests_name("perf", tests, NULL, NULL);
}
