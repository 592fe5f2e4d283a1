/*
 * test_memory.c: the memory model against independent truth: the seed
 * article's figures (shared/seeds/000), every cell of the ZeRO paper's
 * Table 1 (formulas.md B.3), every row of Korthikanti et al. Table 2
 * (formulas.md B.2), Megatron's theoretical memory for GPT-3 175B, and the
 * KV-cache formula; plus pipeline schedules, the fix ladder and bad input.
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"


static const gpuplan_model *model(fixture *f, const char *n) {
  const gpuplan_model *m;
  assert_int_equal(gpuplan_catalog_model(f->cat, n, &m), GPUPLAN_OK);
  return m;
}
static const gpuplan_gpu *gpu(fixture *f, const char *n) {
  const gpuplan_gpu *g;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, n, &g), GPUPLAN_OK);
  return g;
}

static void eval(fixture *f, const gpuplan_model *m, const gpuplan_gpu *g,
                 const gpuplan_memory_options *o, int64_t stage, gpuplan_memory *r) {
  int rc = gpuplan_memory_eval(f->ctx, m, g, o, stage, r);
  if (rc) fprintf(stderr, "eval: %s\n", gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
}

static double states(const gpuplan_memory *r) {
  return (double)(r->item[GPUPLAN_MEM_WEIGHTS].bytes + r->item[GPUPLAN_MEM_GRADIENTS].bytes +
                  r->item[GPUPLAN_MEM_MASTER].bytes + r->item[GPUPLAN_MEM_OPTIMIZER].bytes);
}

#define NEAR(x, want, tol) assert_true(fabs((double)(x) - (want)) <= (tol))

/* Seed 000: "7B params in FP16 ... 14 + 14 + 28 + 56", "more than 120 GB",
 * "A100-40GB is out; A100-80GB tight"; "8 GPUs and ZeRO-3: about 14 GB
 * persistent, 22-34 GB with activations depending on batch". */
static void test_memory__seed_7b_ticket(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "llama-2-7b");
  o.params_override = 7e9;
  o.precision = GPUPLAN_PREC_FP16_MIXED;
  o.convention = GPUPLAN_CONV_DEEPSPEED;
  eval(f, m, gpu(f, "a100-40gb"), &o, GPUPLAN_STAGE_WORST, &r);
  NEAR(r.item[GPUPLAN_MEM_WEIGHTS].bytes, 14e9, 1);
  NEAR(r.item[GPUPLAN_MEM_GRADIENTS].bytes, 14e9, 1);
  NEAR(r.item[GPUPLAN_MEM_MASTER].bytes, 28e9, 1);
  NEAR(r.item[GPUPLAN_MEM_OPTIMIZER].bytes, 56e9, 1);
  NEAR(states(&r), 112e9, 4);
  assert_true(r.total > 120e9);
  assert_false(r.fits);
  eval(f, m, gpu(f, "a100-80gb"), &o, GPUPLAN_STAGE_WORST, &r);
  assert_false(r.fits);

  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO3;
  o.seq_len = 2048;
  eval(f, m, gpu(f, "a100-40gb"), &o, GPUPLAN_STAGE_WORST, &r);
  NEAR(states(&r), 14e9, 4);
  assert_true(r.total >= 22e9 && r.total <= 34e9);
  assert_true(r.fits);
  assert_true(r.item[GPUPLAN_MEM_GATHER].bytes > 0);
}

/* ZeRO Table 1 (K = 12, GB = 1e9), every cell. */
static void test_memory__zero_table_1(void **state) {
  fixture *f = *state;
  static const double psi[3] = {7.5e9, 128e9, 1e12};
  static const int64_t nd[6] = {1, 4, 16, 64, 256, 1024};
  static const double table[6][9] = {
    {120, 120, 120, 2048, 2048, 2048, 16000, 16000, 16000},
    {52.5, 41.3, 30, 896, 704, 512, 7000, 5500, 4000},
    {35.6, 21.6, 7.5, 608, 368, 128, 4750, 2875, 1000},
    {31.4, 16.6, 1.88, 536, 284, 32, 4187.5, 2218.8, 250},
    {30.4, 15.4, 0.47, 518, 263, 8, 4046.9, 2054.7, 62.5},
    {30.1, 15.1, 0.12, 513.5, 257.8, 2, 4011.7, 2013.7, 15.6},
  };
  const gpuplan_model *m = model(f, "gpt-3-175b");
  int i, j, st;
  for (i = 0; i < 6; i++)
    for (j = 0; j < 3; j++)
      for (st = 1; st <= 3; st++) {
        gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
        gpuplan_memory r;
        double want = table[i][j * 3 + st - 1], got;
        o.params_override = psi[j];
        o.precision = GPUPLAN_PREC_FP16_MIXED;
        o.dp = nd[i];
        o.dp_mode = (gpuplan_dp_mode)st;
        eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
        got = states(&r) / 1e9;
        if (fabs(got - want) > 0.06 + 1e-3 * want)
          fprintf(stderr, "Psi=%g Nd=%lld stage %d: %g GB, table %g\n", psi[j],
                  (long long)nd[i], st, got, want);
        assert_true(fabs(got - want) <= 0.06 + 1e-3 * want);
      }
}

/* A GPT-3-shaped layer (MHA, 4h GeLU MLP, dropout) for Table 2. */
static void korthikanti(fixture *f, int64_t t, int sp, gpuplan_recompute rec, double want_per_layer) {
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "gpt-3-175b");
  o.tp = t;
  o.sequence_parallel = sp;
  o.recompute = rec;
  o.flash_attention = 0;
  o.dropout = 1;
  o.micro_batch = 1;
  o.seq_len = 2048;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, want_per_layer * 96, 96);
}

static void test_memory__korthikanti_table_2(void **state) {
  fixture *f = *state;
  double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  korthikanti(f, 1, 0, GPUPLAN_RECOMPUTE_NONE, s * b * h * (34 + 5 * a * s / h));
  korthikanti(f, 8, 0, GPUPLAN_RECOMPUTE_NONE, s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  korthikanti(f, 8, 1, GPUPLAN_RECOMPUTE_NONE, s * b * h / t * (34 + 5 * a * s / h));
  korthikanti(f, 8, 0, GPUPLAN_RECOMPUTE_SELECTIVE, s * b * h * (10 + 24 / t));
  korthikanti(f, 8, 1, GPUPLAN_RECOMPUTE_SELECTIVE, 34 * s * b * h / t);
  korthikanti(f, 8, 0, GPUPLAN_RECOMPUTE_FULL, 2 * s * b * h);
  korthikanti(f, 1, 0, GPUPLAN_RECOMPUTE_FULL, 2 * s * b * h);
}

/* GQA and SwiGLU generalisation: Llama-2-70B, one layer by hand. */
static void test_memory__gqa_swiglu_activations(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "llama-2-70b");
  double s = 4096, h = 8192, kvd = 8 * 128, ff = 28672, per_tok;
  o.dropout = 0;
  o.flash_attention = 1;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  /* norms 4h, QKV in 2h, fc1 in 2h, Q 2h, K+V 4kvd, out-proj in 2h,
   * SwiGLU gate/up/fc2-in 6f, FlashAttention LSE 4a. */
  per_tok = 4 * h + 2 * h + 2 * h + 2 * h + 4 * kvd + 2 * h + 6 * ff + 4 * 64;
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, per_tok * s * 80, 80);
}

/* Megatron's theoretical memory for GPT-3 175B, t = 8, p = 8, d = 8, SP,
 * selective recompute, distributed optimizer: (6 + 12/d) bytes per
 * parameter of the most loaded shard, activations 34sbhL/t on stage 0. */
static void test_memory__megatron_gpt3_175b(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "gpt-3-175b");
  double L = 96, h = 12288, V = 50257, s = 2048, t = 8, p = 8, d = 8, shard, want;
  o.convention = GPUPLAN_CONV_MEGATRON;
  o.tp = 8;
  o.pp = 8;
  o.dp = 8;
  o.dp_mode = GPUPLAN_DP_ZERO1;
  o.sequence_parallel = 1;
  o.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  o.flash_attention = 0;
  eval(f, m, gpu(f, "a100-80gb"), &o, 0, &r);
  /* Megatron: (12 L h^2 (1 + 13/(12h)) / p + V h) / t parameters on stage 0
   * (its count ignores the few bias terms gpuplan also counts), plus the
   * learned position table, which is not vocab-parallel and so is whole on
   * every TP rank of stage 0. */
  shard = (12 * L * h * h * (1 + 13 / (12 * h)) / p + V * h) / t + 2048 * h;
  want = shard * (6 + 12 / d);
  assert_true(fabs(states(&r) - want) / want < 2e-3);
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, 34 * s * 1 * h * L / t, 96);
  assert_int_equal(r.stage, 0);
  assert_true(r.microbatches_in_flight == p);
}

static void test_memory__pipeline_schedules(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r0, r3;
  const gpuplan_model *m = model(f, "llama-2-13b");
  o.pp = 4;
  o.microbatches = 16;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r0);
  eval(f, m, gpu(f, "h100 sxm"), &o, 3, &r3);
  assert_true(r0.microbatches_in_flight == 4); /* 1F1B: p - stage */
  assert_true(r3.microbatches_in_flight == 1);
  assert_int_equal(r0.layers, 10);
  assert_true(r3.item[GPUPLAN_MEM_LOGITS].bytes > 0);
  assert_int_equal(r0.item[GPUPLAN_MEM_LOGITS].bytes, 0);
  o.schedule = GPUPLAN_SCHED_GPIPE;
  eval(f, m, gpu(f, "h100 sxm"), &o, 3, &r3);
  assert_true(r3.microbatches_in_flight == 16);
  o.schedule = GPUPLAN_SCHED_INTERLEAVED;
  o.vpp = 2;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r0);
  assert_true(fabs(r0.microbatches_in_flight - 4 * (1 + 3.0 / 8)) < 1e-12);
  /* Uneven split: 40 layers as 7 + 11 + 11 + 11. */
  o.schedule = GPUPLAN_SCHED_1F1B;
  o.vpp = 1;
  o.first_stage_layers = 7;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r0);
  assert_int_equal(r0.layers, 7);
  eval(f, m, gpu(f, "h100 sxm"), &o, 2, &r0);
  assert_int_equal(r0.layers, 11);
}

static void test_memory__conventions(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "llama-2-7b");
  double P;
  o.params_override = 1e9;
  P = 1e9;
  o.convention = GPUPLAN_CONV_MEGATRON;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 18 * P, 8); /* 2 + 4 + 4 + 8 */
  o.convention = GPUPLAN_CONV_HF;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 18 * P, 8);
  o.convention = GPUPLAN_CONV_DEEPSPEED;
  o.optimizer = GPUPLAN_OPT_MOMENTUM;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 12 * P, 8); /* 2 + 2 + 4 + 4 */
  o.optimizer = GPUPLAN_OPT_ADAM8BIT;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 10 * P, 8); /* 2 + 2 + 4 + 2 */
  o.optimizer = GPUPLAN_OPT_SGD;
  o.precision = GPUPLAN_PREC_FP32;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 8 * P, 8); /* 4 + 4 */
  o.optimizer = GPUPLAN_OPT_ADAMW;
  o.precision = GPUPLAN_PREC_BF16_MIXED;
  o.offload_optimizer = 1;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(states(&r), 4 * P, 8);
  NEAR(r.host_bytes, 12 * P, 8);
}

static void test_memory__inference_kv_cache(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  const gpuplan_model *m = model(f, "llama-2-70b");
  o.workload = GPUPLAN_INFER;
  o.context_len = 4096;
  o.batch = 8;
  eval(f, m, gpu(f, "h200"), &o, 0, &r);
  /* 2 x layers x kv_heads x head_dim x bytes = 2 x 80 x 8 x 128 x 2 */
  assert_int_equal(r.kv_bytes_per_token, 327680);
  NEAR(r.item[GPUPLAN_MEM_KV_CACHE].bytes, 8.0 * 4096 * 327680, 1);
  NEAR(r.item[GPUPLAN_MEM_WEIGHTS].bytes, gpuplan_model_params(m) * 2, 2);
  o.tp = 4;
  o.paged = 1;
  o.context_len = 1000;
  eval(f, m, gpu(f, "h200"), &o, 0, &r);
  assert_int_equal(r.kv_bytes_per_token, 327680 / 4);
  NEAR(r.item[GPUPLAN_MEM_KV_CACHE].bytes, 8.0 * 1008 * 327680 / 4, 1); /* 63 blocks of 16 */
  NEAR(r.kv_waste_bytes, 8.0 * 8 * 327680 / 4, 1);
  assert_true(r.max_sequences > 8);
  o.weight_dtype = GPUPLAN_DTYPE_INT4;
  o.group_size = 128;
  eval(f, m, gpu(f, "h200"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_WEIGHTS].bytes, r.params_rank * (0.5 + 4.0 / 128), 2);
}

/* The fix ladder (MM-10): what practitioners try, cheapest in step time
 * first; each rung saves memory; micro-batch 2 before 1; one GPU ends with
 * ZeRO-Offload (7B then fits one A100-40GB, review MM-10) before any new
 * hardware.  The order changed deliberately from the seed article's
 * (micro-batch -> checkpointing -> ZeRO -> bf16 -> GPUs), review MM-10. */
static void test_memory__fix_ladder_for_the_ticket(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_fix fixes[16];
  size_t n = 0, i, mb2 = 99, mb1 = 99, rec = 99;
  o.params_override = 7e9;
  o.precision = GPUPLAN_PREC_FP32;
  o.micro_batch = 4;
  assert_int_equal(gpuplan_memory_ladder(f->ctx, f->cat, model(f, "llama-2-7b"),
                                         gpu(f, "a100-40gb"), &o, 8, fixes, 16, &n),
                   GPUPLAN_OK);
  assert_true(n >= 4);
  assert_string_equal(fixes[0].kind, "precision"); /* faster as well as smaller */
  assert_true(fixes[0].time_cost < 0);
  for (i = 0; i < n; i++) {
    if (strstr(fixes[i].what, "micro-batch 4 -> 2")) mb2 = i;
    if (strstr(fixes[i].what, "micro-batch 2 -> 1")) mb1 = i;
    if (!strcmp(fixes[i].kind, "recompute")) rec = i;
  }
  assert_true(mb2 < mb1 && mb1 < rec); /* cheaper rungs first */
  for (i = 1; i < n; i++) assert_true(fixes[i].total < fixes[i - 1].total || fixes[i].gpu != fixes[i - 1].gpu);
  assert_true(fixes[n - 1].fits);
  assert_string_equal(fixes[n - 1].kind, "offload");
  assert_true(fixes[n - 1].gpus == 1 && fixes[n - 1].gpu == gpu(f, "a100-40gb"));
  for (i = 0; i + 1 < n; i++) assert_false(fixes[i].fits);
  /* With data-parallel GPUs: sequence parallelism and ZeRO come before recompute. */
  {
    gpuplan_memory_options p = GPUPLAN_MEMORY_OPTIONS_INIT;
    size_t k, sp = 99, z = 99, r = 99;
    p.tp = 8;
    p.pp = 2;
    p.dp = 4;
    p.dp_mode = GPUPLAN_DP_ZERO1;
    assert_int_equal(gpuplan_memory_ladder(f->ctx, f->cat, model(f, "llama-3-70b"), gpu(f, "h100 sxm"), &p, 64,
                                           fixes, 16, &n),
                     GPUPLAN_OK);
    for (k = 0; k < n; k++) {
      if (!strcmp(fixes[k].kind, "sp")) sp = k;
      if (!strcmp(fixes[k].kind, "zero2")) z = k;
      if (!strcmp(fixes[k].kind, "recompute")) r = k;
    }
    assert_int_equal(sp, 0); /* MM-10: --sp alone takes 95.66 to 51.80 GiB */
    assert_true(sp < z || z == 99);
    assert_true(r == 99 || r > sp);
    assert_true(fixes[n - 1].fits);
  }
}

/* --- activations as the code keeps them (MM-1, MM-3, MM-4) ---------------- */

/* A cs336-style layer (MHA, SwiGLU, RMSNorm, RoPE, no dropout, explicit
 * attention) in fp32, by hand from what the real snapshots hold per layer
 * (tests/data/torch-snapshots/MODELS.md): 10 hidden-sized tensors (two per
 * RMSNorm, RoPE'd q and k, v, the out-projection input, two residuals), 5
 * ffn-sized (w1x, w3x, sigmoid, silu, product), 2 score tensors (exp and
 * softmax), all fp32.  Compiled keeps 8 hidden, 3 ffn and 2 scores. */
static void test_memory__eager_and_compiled_layers(void **state) {
  fixture *f = *state;
  gpuplan_model m = *model(f, "llama-2-7b");
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  double h = 4096, ff = 11008, a = 32, s = 512, b = 2, L = 32, want;
  o.precision = GPUPLAN_PREC_FP32;
  o.flash_attention = 0;
  o.dropout = 0;
  o.seq_len = 512;
  o.micro_batch = 2;
  o.impl = GPUPLAN_IMPL_EAGER;
  o.convention = GPUPLAN_CONV_HF;
  eval(f, &m, gpu(f, "h100 sxm"), &o, 0, &r);
  want = (4 * (10 * h + 5 * ff) + 2 * 4 * a * s) * s * b * L;
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, want, L);
  o.impl = GPUPLAN_IMPL_COMPILED;
  eval(f, &m, gpu(f, "h100 sxm"), &o, 0, &r);
  want = (4 * (8 * h + 3 * ff) + 2 * 4 * a * s) * s * b * L;
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, want, L);
  /* Eager is about 1.6x Korthikanti's count for this layer (the lab). */
  {
    gpuplan_memory k;
    o.impl = GPUPLAN_IMPL_EAGER;
    eval(f, &m, gpu(f, "h100 sxm"), &o, 0, &r);
    o.impl = GPUPLAN_IMPL_FUSED;
    eval(f, &m, gpu(f, "h100 sxm"), &o, 0, &k);
    assert_true((double)r.item[GPUPLAN_MEM_ACTIVATIONS].bytes / (double)k.item[GPUPLAN_MEM_ACTIVATIONS].bytes > 1.4);
  }
  /* The loss as cross-entropy keeps it (MM-4): logits, two fp32 CE tensors
   * and the previous step's logits, plus the final norm's two tensors. */
  o.impl = GPUPLAN_IMPL_EAGER;
  eval(f, &m, gpu(f, "h100 sxm"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_LOGITS].bytes, (4 * 32000.0 * 4 + 2 * 4 * h) * s * b, 1);
}

/* Autocast keeps fp32 where the code does (MM-3), a BERT layer by hand:
 * fp32: 66h + 9as bytes per token (4-byte tensors: layer input, q/k/v copies,
 * context, two LayerNorm inputs and the first output, fc1 and GELU outputs;
 * 1-byte masks; softmax out 4 + mask 1 + dropout out 4).  fp16 autocast:
 * 42h + 7as (16-bit copies for every GEMM input, fp32 LayerNorm inputs; the
 * fp32 dropout output feeds only the cast: softmax 4 + mask 1 + copy 2). */
static void test_memory__autocast_keeps_fp32(void **state) {
  fixture *f = *state;
  const gpuplan_model *m = model(f, "bert-large");
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  double h = 1024, a = 16, s = 512, b = 4, L = 24, tok = s * b;
  o.impl = GPUPLAN_IMPL_EAGER;
  o.convention = GPUPLAN_CONV_HF;
  o.flash_attention = 0;
  o.dropout = 1;
  o.seq_len = 512;
  o.micro_batch = 4;
  o.head_labels = 2;
  o.precision = GPUPLAN_PREC_FP32;
  eval(f, m, gpu(f, "v100"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, (66 * h + 9 * a * s) * tok * L, L);
  o.precision = GPUPLAN_PREC_FP16_MIXED;
  eval(f, m, gpu(f, "v100"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_ACTIVATIONS].bytes, (42 * h + 7 * a * s) * tok * L, L);
  /* a classifier has no vocabulary-sized logits */
  assert_true(r.item[GPUPLAN_MEM_LOGITS].bytes < 1e6);
}

/* --- the step's phases (MM-5, MM-6) ---------------------------------------- */

/* foreach AdamW (torch.optim's default) allocates a state-sized list in
 * step(); the first step creates the states lazily after the activations
 * are freed; set_to_none gradients appear in backward. */
static void test_memory__phases_and_optimizer_step(void **state) {
  fixture *f = *state;
  const gpuplan_model *m = model(f, "gpt2");
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  double P, W, G, M, O, T, fixed;
  o.impl = GPUPLAN_IMPL_EAGER;
  o.convention = GPUPLAN_CONV_FSDP; /* torch.optim AdamW, set_to_none */
  o.micro_batch = 1;
  o.seq_len = 128;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  P = r.params_rank;
  W = (double)r.item[GPUPLAN_MEM_WEIGHTS].bytes;
  G = (double)r.item[GPUPLAN_MEM_GRADIENTS].bytes;
  M = (double)r.item[GPUPLAN_MEM_MASTER].bytes;
  O = (double)r.item[GPUPLAN_MEM_OPTIMIZER].bytes;
  T = (double)r.item[GPUPLAN_MEM_OPT_STEP].bytes;
  fixed = (double)(r.item[GPUPLAN_MEM_CONTEXT].bytes + r.item[GPUPLAN_MEM_WORKSPACE].bytes);
  NEAR(T, 4 * P, 1);        /* _foreach_sqrt(exp_avg_sq): fp32, one per parameter */
  NEAR(G, 4 * P, 1);
  /* step(): weights, master, states, gradients, temporaries and the loop's logits */
  NEAR(r.step_bytes, W + M + O + G + T + fixed + 128 * 50257 * 2, 64);
  assert_string_equal(r.peak_phase, "optimizer step");
  assert_true(r.total == r.step_bytes && r.total < r.sum_bytes);
  assert_true(r.first_step_bytes <= r.steady_bytes);
  o.optimizer_impl = GPUPLAN_OPTIMPL_FUSED;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  assert_int_equal(r.item[GPUPLAN_MEM_OPT_STEP].bytes, 0);
  /* the first step of a long-sequence run: its forward/backward has no states */
  o.seq_len = 1024;
  o.micro_batch = 8;
  o.phase = GPUPLAN_PHASE_FIRST;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r);
  assert_true(r.total == r.first_step_bytes);
  assert_true(r.fwdbwd_bytes + O <= r.steady_bytes + 1);
}

/* --- LoRA and QLoRA (DM-5) --------------------------------------------------- */

/* QLoRA (Dettmers et al. 2023): LLaMA-65B on one 48 GB card.  NF4 with
 * double quantisation: 0.5 + 1/64 + 4/(64 x 256) bytes per weight of the
 * block linears; embeddings and norms in 16-bit; r = 64 on every linear in
 * bf16 (the paper's recipe); paged AdamW (states in host memory under
 * pressure); gradient checkpointing. */
static void test_memory__qlora_65b_on_48gb(void **state) {
  fixture *f = *state;
  const gpuplan_model *m = model(f, "llama-65b");
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  double h = 8192, ff = 22016, L = 80, lin, other, lora;
  o.impl = GPUPLAN_IMPL_EAGER;
  o.convention = GPUPLAN_CONV_HF;
  o.finetune = GPUPLAN_FT_QLORA;
  o.base_dtype = GPUPLAN_DTYPE_NF4;
  o.lora_rank = 64;
  o.lora_modules = GPUPLAN_LORA_ALL;
  o.paged_optimizer = 1;
  o.recompute = GPUPLAN_RECOMPUTE_FULL;
  o.seq_len = 512;
  eval(f, m, gpu(f, "l40s"), &o, 0, &r);
  lin = L * (4 * h * h + 3 * h * ff);
  other = gpuplan_model_params(m) - lin;
  lora = L * 64 * (4 * 2 * h + 3 * (h + ff));
  NEAR(r.item[GPUPLAN_MEM_WEIGHTS].bytes, lin * (0.5 + 1.0 / 64 + 4.0 / 16384) + other * 2, 4);
  NEAR(r.item[GPUPLAN_MEM_ADAPTERS].bytes, lora * 2, 1);
  NEAR(r.item[GPUPLAN_MEM_GRADIENTS].bytes, lora * 2, 1);
  assert_int_equal(r.item[GPUPLAN_MEM_OPTIMIZER].bytes, 0); /* paged to the host */
  NEAR(r.host_bytes, lora * 8, 8);
  NEAR(r.trainable_params, lora, 1);
  assert_true(r.fits);
  assert_true(r.capacity == (uint64_t)46068 * 1048576); /* L40S: NVML's 46,068 MiB */
  /* The same model fully fine-tuned needs more than 15 such cards' worth */
  {
    gpuplan_memory_options full = GPUPLAN_MEMORY_OPTIONS_INIT;
    full.seq_len = 512;
    eval(f, m, gpu(f, "l40s"), &full, 0, &r);
    assert_true(r.total > 15.0 * 48e9);
  }
  /* Llama-2-70B too (GQA) */
  eval(f, model(f, "llama-2-70b"), gpu(f, "l40s"), &o, 0, &r);
  assert_true(r.fits);
}

/* LoRA of a 7B model on a 24 GB card: bf16 base 2 bytes/param, r = 16 on q
 * and v (PEFT's default for Llama) in fp32 with fp32 gradients and Adam;
 * gradient checkpointing at 2,048 tokens, as the usual recipes run it. */
static void test_memory__lora_7b_on_24gb(void **state) {
  fixture *f = *state;
  const gpuplan_model *m = model(f, "llama-2-7b");
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r;
  double lora = 32 * 16 * (2 * (4096 + 4096));
  o.impl = GPUPLAN_IMPL_EAGER;
  o.convention = GPUPLAN_CONV_HF;
  o.finetune = GPUPLAN_FT_LORA;
  o.lora_rank = 16;
  o.recompute = GPUPLAN_RECOMPUTE_FULL;
  o.seq_len = 2048;
  eval(f, m, gpu(f, "a10"), &o, 0, &r);
  NEAR(r.item[GPUPLAN_MEM_WEIGHTS].bytes, gpuplan_model_params(m) * 2, 2);
  NEAR(r.item[GPUPLAN_MEM_ADAPTERS].bytes, lora * 4, 1);
  NEAR(r.item[GPUPLAN_MEM_OPTIMIZER].bytes, lora * 8, 1);
  assert_true(r.fits);
  /* a full fine-tune does not (16 bytes per parameter alone are 108 GB) */
  o.finetune = GPUPLAN_FT_FULL;
  eval(f, m, gpu(f, "a10"), &o, 0, &r);
  assert_false(r.fits);
}

/* --- capacity as the driver reports it (MM-2) ------------------------------ */

static void test_memory__nvml_capacity(void **state) {
  fixture *f = *state;
  const char *src = NULL;
  /* the catalog notes' NVML figures (Modal's measurements) */
  assert_true(gpuplan_gpu_usable_bytes(gpu(f, "h100 sxm"), &src) == (uint64_t)81559 * 1048576);
  assert_non_null(strstr(src, "NVML"));
  assert_true(gpuplan_gpu_usable_bytes(gpu(f, "h200"), NULL) == (uint64_t)143771 * 1048576);
  assert_true(gpuplan_gpu_usable_bytes(gpu(f, "t4"), NULL) == (uint64_t)15360 * 1048576);
  assert_true(gpuplan_gpu_usable_bytes(gpu(f, "a100-80gb"), NULL) == (uint64_t)81920 * 1048576);
  /* no figure: the marketed size, said so */
  assert_true(gpuplan_gpu_usable_bytes(gpu(f, "v100"), &src) == gpu(f, "v100")->memory_bytes);
  assert_non_null(strstr(src, "marketed"));
  assert_int_equal(gpuplan_gpu_cc(gpu(f, "a100-80gb")), 80);
  assert_int_equal(gpuplan_gpu_cc(gpu(f, "l4")), 89);
}

static void expect_einval(fixture *f, const gpuplan_model *m, gpuplan_memory_options *o,
                          const char *field) {
  gpuplan_memory r;
  int rc = gpuplan_memory_eval(f->ctx, m, gpu(f, "h100 sxm"), o, GPUPLAN_STAGE_WORST, &r);
  if (rc != GPUPLAN_EINVAL || !strstr(gpuplan_errmsg(f->ctx), field))
    fprintf(stderr, "want EINVAL naming %s, got %s: %s\n", field, gpuplan_errname(rc),
            gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), field));
}

static void test_memory__bad_input_names_the_field(void **state) {
  fixture *f = *state;
  const gpuplan_model *m = model(f, "llama-2-7b");
  gpuplan_model bad = *m;
  gpuplan_memory_options o;
  gpuplan_memory r;
#define RESET() do { gpuplan_memory_options d_ = GPUPLAN_MEMORY_OPTIONS_INIT; o = d_; } while (0)
  RESET(); o.tp = 3; expect_einval(f, m, &o, "tp");
  RESET(); o.pp = 5; expect_einval(f, m, &o, "pp");
  RESET(); o.micro_batch = 0; expect_einval(f, m, &o, "micro_batch");
  RESET(); o.micro_batch = -4; expect_einval(f, m, &o, "micro_batch");
  RESET(); o.dp = 0; expect_einval(f, m, &o, "dp");
  RESET(); o.seq_len = -1; expect_einval(f, m, &o, "seq_len");
  RESET(); o.micro_batch = 1 << 24; o.seq_len = 100000000; expect_einval(f, m, &o, "overflow");
  RESET(); o.ep = 2; expect_einval(f, m, &o, "ep");
  RESET(); o.schedule = GPUPLAN_SCHED_INTERLEAVED; expect_einval(f, m, &o, "interleaved");
  RESET(); o.grad_bytes = 3; expect_einval(f, m, &o, "grad_bytes");
  RESET(); o.precision = (gpuplan_precision)42; expect_einval(f, m, &o, "precision");
  RESET(); o.params_override = -1; expect_einval(f, m, &o, "params_override");
  RESET(); o.workload = GPUPLAN_INFER; o.batch = 0; expect_einval(f, m, &o, "batch");
  RESET(); o.pp = 2; o.first_stage_layers = 40; expect_einval(f, m, &o, "first_stage_layers");
  RESET(); bad.layers = 0; expect_einval(f, &bad, &o, "model.layers");
  bad = *m; bad.kv_heads = 5; expect_einval(f, &bad, &o, "kv_heads");
  bad = *m; bad.hidden = -1; expect_einval(f, &bad, &o, "model.hidden");
  RESET();
  assert_int_equal(gpuplan_memory_eval(f->ctx, m, gpu(f, "h100 sxm"), &o, 7, &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_memory_eval(f->ctx, NULL, gpu(f, "h100 sxm"), &o, 0, &r), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_memory_eval(NULL, m, gpu(f, "h100 sxm"), &o, 0, &r), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_enum_parse(f->ctx, "optimizer", "adamw"), GPUPLAN_OPT_ADAMW);
  assert_int_equal(gpuplan_enum_parse(f->ctx, "dp", "FSDP_FULL"), GPUPLAN_DP_FSDP_FULL);
  assert_int_equal(gpuplan_enum_parse(f->ctx, "optimizer", "lion"), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "adamw"));
}

/* Context parallelism splits tokens; expert parallelism splits experts;
 * HYBRID_SHARD shards over the shard group only. */
static void test_memory__cp_ep_hybrid(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  gpuplan_memory r1, r2;
  const gpuplan_model *mx = model(f, "mixtral-8x7b"), *m = model(f, "llama-2-7b");
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r1);
  o.cp = 4;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r2);
  NEAR(r2.item[GPUPLAN_MEM_ACTIVATIONS].bytes, r1.item[GPUPLAN_MEM_ACTIVATIONS].bytes / 4.0, 4);
  o.cp = 1;
  o.dp = 8;
  eval(f, mx, gpu(f, "h100 sxm"), &o, 0, &r1);
  o.ep = 8;
  eval(f, mx, gpu(f, "h100 sxm"), &o, 0, &r2);
  /* 8 experts over 8 ranks: one expert's MLP each, 3 x h x f per layer. */
  NEAR(r1.params_rank - r2.params_rank, 32.0 * 7 * 3 * 4096 * 14336, 64);
  assert_true(r2.item[GPUPLAN_MEM_MOE_A2A].bytes > 0);
  o.ep = 1;
  o.dp_mode = GPUPLAN_DP_FSDP_HYBRID;
  o.convention = GPUPLAN_CONV_FSDP;
  o.shard_group = 4;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r1);
  NEAR(r1.item[GPUPLAN_MEM_OPTIMIZER].bytes, r1.params_rank * 8 / 4, 8);
  o.dp_mode = GPUPLAN_DP_FSDP_FULL;
  eval(f, m, gpu(f, "h100 sxm"), &o, 0, &r2);
  NEAR(r2.item[GPUPLAN_MEM_OPTIMIZER].bytes, r2.params_rank * 8 / 8, 8);
}

static void test_memory__params_from_shape(void **state) {
  fixture *f = *state;
  /* Published counts (HF configs), from the shape alone. */
  assert_true(fabs(gpuplan_model_params(model(f, "llama-2-7b")) - 6738415616.0) < 1);
  assert_true(fabs(gpuplan_model_params(model(f, "llama-2-70b")) - 68976648192.0) < 1);
  assert_true(fabs(gpuplan_model_params(model(f, "gpt2")) - 124439808.0) < 1);
  assert_true(fabs(gpuplan_model_params(model(f, "mixtral-8x7b")) - 46702792704.0) < 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_memory__seed_7b_ticket),
    T(test_memory__zero_table_1),
    T(test_memory__korthikanti_table_2),
    T(test_memory__gqa_swiglu_activations),
    T(test_memory__megatron_gpt3_175b),
    T(test_memory__pipeline_schedules),
    T(test_memory__conventions),
    T(test_memory__inference_kv_cache),
    T(test_memory__fix_ladder_for_the_ticket),
    T(test_memory__bad_input_names_the_field),
    T(test_memory__params_from_shape),
    T(test_memory__cp_ep_hybrid),
    T(test_memory__eager_and_compiled_layers),
    T(test_memory__autocast_keeps_fp32),
    T(test_memory__phases_and_optimizer_step),
    T(test_memory__qlora_65b_on_48gb),
    T(test_memory__lora_7b_on_24gb),
    T(test_memory__nvml_capacity),
  };
  return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
