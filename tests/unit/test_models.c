/*
 * test_models.c: describing a model any way (issue 12, part 1) and the
 * hardware checks (part 5), through the job API as every front end uses it.
 *
 * Truth: the parameter counts of the published Hugging Face models
 * (tests/data/hf-configs/README.md: sum(p.numel()) of each HF model), the
 * KV cache of Mistral-7B by hand (2 x 32 layers x 8 KV heads x 128 x 2 bytes
 * = 131,072 bytes = 128 KiB per token), the catalog's published sizes, and
 * the SKUs' compute capabilities (NVIDIA's CUDA GPUs table).
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

typedef struct kv {
  const char *name, *value;
} kv;

/* Run command with options; returns the document (NULL on error, rc set). */
static gpuplan_doc *run(fixture *f, const char *command, const kv *opts, int *rc) {
  gpuplan_job *j;
  gpuplan_doc *d = NULL;
  size_t i;
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &j), GPUPLAN_OK);
  for (i = 0; opts[i].name; i++) {
    int r = gpuplan_job_set(j, opts[i].name, opts[i].value);
    if (r) {
      fprintf(stderr, "set %s=%s: %s\n", opts[i].name, opts[i].value, gpuplan_errmsg(f->ctx));
      *rc = r;
      gpuplan_job_free(j);
      return NULL;
    }
  }
  *rc = gpuplan_job_run(j, command, &d);
  gpuplan_job_free(j);
  return d;
}

static gpuplan_doc *ok(fixture *f, const char *command, const kv *opts) {
  int rc;
  gpuplan_doc *d = run(f, command, opts, &rc);
  if (rc) fprintf(stderr, "%s: %s\n", command, gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
  return d;
}

/* The error's text, or fail. */
static const char *fails(fixture *f, const char *command, const kv *opts, int want) {
  int rc;
  gpuplan_doc *d = run(f, command, opts, &rc);
  if (rc != want) fprintf(stderr, "wanted %s, got %s: %s\n", gpuplan_errname(want), gpuplan_errname(rc),
                          gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, want);
  assert_null(d);
  return gpuplan_errmsg(f->ctx);
}

static const gpuplan_value *at(const gpuplan_doc *d, const char *path) {
  const gpuplan_value *v = gpuplan_value_path(gpuplan_doc_root(d), path);
  if (!v) fprintf(stderr, "no %s in the document\n", path);
  assert_non_null(v);
  return v;
}
static double num(const gpuplan_doc *d, const char *path) { return gpuplan_value_real(at(d, path)); }
static const char *str(const gpuplan_doc *d, const char *path) { return gpuplan_value_string(at(d, path), NULL); }

static char cfg_path[1024];
static const char *config(const char *file) {
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  assert_non_null(src);
  snprintf(cfg_path, sizeof cfg_path, "%s/tests/data/hf-configs/%s", src, file);
  return cfg_path;
}

/* Every family's config.json gives the published model's exact count. */
static void test_models__config_json_families(void **state) {
  fixture *f = *state;
  static const struct {
    const char *file, *arch;
    double params;
  } cases[] = {
    {"mistral-7b-v0.1", "decoder", 7241732096.0},      {"llama-2-7b-hf.json", "decoder", 6738415616.0},
    {"meta-llama-3-8b.json", "decoder", 8030261248.0},  {"mixtral-8x7b-v0.1.json", "decoder", 46702792704.0},
    {"qwen2.5-7b.json", "decoder", 7615616512.0},       {"qwen3-8b.json", "decoder", 8190735360.0},
    {"qwen3-30b-a3b.json", "decoder", 30532122624.0},   {"gemma-7b.json", "decoder", 8537680896.0},
    {"gemma-2-9b.json", "decoder", 9241705984.0},       {"phi-3-mini-4k.json", "decoder", 3821079552.0},
    {"gpt2.json", "decoder", 124439808.0},              {"gpt-neox-20b.json", "decoder", 20554567680.0},
    {"falcon-7b.json", "decoder", 6921720704.0},        {"bert-large-uncased.json", "encoder", 335174458.0},
    {"roberta-base.json", "encoder", 124697433.0},      {"t5-base.json", "encoder-decoder", 222903552.0},
    {"deepseek-v3.json", "decoder", 671026419200.0},
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kv o[] = {{"model", config(cases[i].file)}, {"gpu", "h100-sxm5-80gb"}, {NULL, NULL}};
    gpuplan_doc *d = ok(f, "plan", o);
    if (num(d, "params") != cases[i].params)
      fprintf(stderr, "%s: %.0f parameters, the HF model has %.0f\n", cases[i].file, num(d, "params"), cases[i].params);
    assert_true(num(d, "params") == cases[i].params);
    assert_string_equal(str(d, "model_source"), "config");
    assert_string_equal(str(d, "arch"), cases[i].arch);
    assert_string_equal(str(d, "impl"), "eager"); /* a HF config runs as Transformers' code */
    gpuplan_doc_free(d);
  }
}

/* Mistral-7B: 7.24 B parameters, KV cache 128 KiB per token in bf16 (GQA). */
static void test_models__mistral_kv_cache(void **state) {
  fixture *f = *state;
  kv o[] = {{"model", config("mistral-7b-v0.1")}, {"gpu", "a100-80gb"}, {"workload", "infer"},
            {"context_len", "32768"}, {"batch", "8"}, {NULL, NULL}};
  kv size[] = {{"model", "7.24B"}, {"gpu", "a100-80gb"}, {"workload", "infer"},
               {"context_len", "32768"}, {"batch", "8"}, {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", o);
  assert_true(fabs(num(d, "params") / 1e9 - 7.24) < 0.005);
  assert_true(num(d, "worst.kv_bytes_per_token") == 2.0 * 32 * 8 * 128 * 2);
  assert_true(num(d, "worst.kv_bytes_per_token") == 128 * 1024);
  gpuplan_doc_free(d);
  /* DM-4: the size 7.24B is Mistral-7B's shape, so its KV cache is GQA's:
   * 8 sequences x 32,768 tokens x 128 KiB = 32 GiB, not MHA's 128 GiB. */
  d = ok(f, "plan", size);
  assert_string_equal(str(d, "model"), "mistral-7b");
  assert_string_equal(str(d, "model_source"), "size");
  assert_true(num(d, "worst.kv_bytes_per_token") == 131072);
  gpuplan_doc_free(d);
}

/* A size maps to a real family shape and says which, or is refused naming the
 * nearest; it never rescales another model's shape (DM-1). */
static void test_models__sizes_name_a_real_model(void **state) {
  fixture *f = *state;
  kv s70[] = {{"model", "70B"}, {"gpu", "h100-sxm5-80gb"}, {"gpus", "8"}, {"zero", "3"}, {NULL, NULL}};
  kv s7[] = {{"model", "6.7B"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv s7b[] = {{"model", "7B"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv big[] = {{"model", "1.2T"}, {"gpu", "h100-sxm5-80gb"}, {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", s70);
  const char *e;
  /* llama-3-70b (70.55 B) is the nearest 70B-class model; 80 layers, not Llama-2-7B's 32 */
  assert_string_equal(str(d, "model_source"), "size");
  assert_string_equal(str(d, "shape_of"), "llama-3-70b");
  assert_true(num(d, "layers") == 80);
  assert_true(num(d, "params") == 70553706496.0);
  assert_non_null(strstr(str(d, "model_note"), "llama-3-70b"));
  gpuplan_doc_free(d);
  d = ok(f, "plan", s7);
  assert_string_equal(str(d, "shape_of"), "llama-2-7b");
  assert_true(num(d, "params") == 6738415616.0); /* the model's own count, not 6.7e9 */
  gpuplan_doc_free(d);
  /* 7B: the nearest 7B-class model is Mistral-7B (7.24 B: 3.4% off; Llama-2-7B 6.74 B: 3.8%), and the
   * note names the others of that size */
  d = ok(f, "plan", s7b);
  assert_string_equal(str(d, "shape_of"), "mistral-7b");
  assert_non_null(strstr(str(d, "model_note"), "llama-2-7b"));
  gpuplan_doc_free(d);
  e = fails(f, "plan", big, GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(e, "nearest"));
  assert_non_null(strstr(e, "megatron-gpt-1008b"));
  assert_non_null(strstr(e, "layers"));
}

/* Hyperparameters as options: alone, over a catalog model, and what is missing. */
static void test_models__shape_options(void **state) {
  fixture *f = *state;
  kv llama[] = {{"model", "my-llama"}, {"layers", "32"}, {"hidden", "4096"}, {"heads", "32"},
                {"ffn", "11008"}, {"vocab", "32000"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv over[] = {{"model", "llama-2-7b"}, {"layers", "16"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv moe[] = {{"layers", "4"}, {"hidden", "1024"}, {"heads", "8"}, {"kv_heads", "2"}, {"vocab", "1000"},
              {"experts", "8"}, {"top_k", "2"}, {"expert_ffn", "512"}, {"shared_experts", "1"},
              {"dense_layers", "1"}, {"ffn", "4096"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv missing[] = {{"layers", "32"}, {"hidden", "4096"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", llama);
  const char *e;
  double h = 1024, kvd = 2 * 128, per_attn, expert, dense_layer, moe_layer, want;
  /* Llama-2-7B's shape by its hyperparameters: its exact count */
  assert_true(num(d, "params") == 6738415616.0);
  assert_string_equal(str(d, "model"), "my-llama");
  assert_string_equal(str(d, "model_source"), "shape");
  gpuplan_doc_free(d);
  /* half the layers: 16 x 202,383,360 + 2 x 131,072,000 + 4,096 */
  d = ok(f, "plan", over);
  assert_true(num(d, "params") == 16.0 * 202383360 + 2.0 * 131072000 + 4096);
  assert_string_equal(str(d, "shape_of"), "llama-2-7b");
  gpuplan_doc_free(d);
  /* MoE by hand: attention h(2h + 2kvd); an expert 3 h f_e; router h E; one
   * dense layer with ffn 4096; shared expert; RMSNorms 2h per layer. */
  d = ok(f, "plan", moe);
  per_attn = h * (2 * h + 2 * kvd);
  expert = 3 * h * 512;
  dense_layer = per_attn + 3 * h * 4096 + 2 * h;
  moe_layer = per_attn + 8 * expert + 1 * expert + h * 8 + 2 * h;
  want = 1000 * h * 2 + dense_layer + 3 * moe_layer + h;
  assert_true(num(d, "params") == want);
  gpuplan_doc_free(d);
  e = fails(f, "plan", missing, GPUPLAN_EINVAL);
  assert_non_null(strstr(e, "heads"));
  assert_non_null(strstr(e, "vocab"));
}

/* An unknown model_type is an error naming the missing fields; with arch and
 * the missing ones as options it is read with the Llama-style keys. */
static void test_models__unknown_model_type(void **state) {
  fixture *f = *state;
  kv o[] = {{"model", config("unknown-type.json")}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv filled[] = {{"model", config("unknown-type.json")}, {"arch", "decoder"}, {"heads", "16"}, {"ffn", "4096"},
                 {"gpu", "a100-80gb"}, {NULL, NULL}};
  const char *e = fails(f, "plan", o, GPUPLAN_EINVAL);
  gpuplan_doc *d;
  assert_non_null(strstr(e, "'foo'"));
  assert_non_null(strstr(e, "num_attention_heads"));
  assert_non_null(strstr(e, "intermediate_size"));
  assert_null(strstr(e, "hidden_size (")); /* present in the file */
  d = ok(f, "plan", filled);
  assert_string_equal(str(d, "model_source"), "config");
  assert_true(num(d, "layers") == 12);
  gpuplan_doc_free(d);
}

/* The implementation profile each source defaults to is stated. */
static void test_models__impl_default_is_stated(void **state) {
  fixture *f = *state;
  kv meg[] = {{"model", "megatron-gpt-18.4b"}, {"gpu", "a100-80gb"}, {"gpus", "8"}, {"tp", "8"}, {NULL, NULL}};
  kv hf[] = {{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {NULL, NULL}};
  kv given[] = {{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {"impl", "compiled"}, {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", meg);
  assert_string_equal(str(d, "impl"), "fused");
  assert_non_null(strstr(str(d, "impl_why"), "Megatron"));
  gpuplan_doc_free(d);
  d = ok(f, "plan", hf);
  assert_string_equal(str(d, "impl"), "eager");
  {
    const gpuplan_value *dl = at(d, "defaults");
    size_t i, n = gpuplan_value_count(dl);
    int found = 0;
    for (i = 0; i < n; i++)
      if (!strcmp(gpuplan_value_string(gpuplan_value_get(gpuplan_value_at(dl, i), "option"), NULL), "impl")) found = 1;
    assert_true(found);
  }
  gpuplan_doc_free(d);
  d = ok(f, "plan", given);
  assert_string_equal(str(d, "impl"), "compiled");
  assert_string_equal(str(d, "impl_why"), "given");
  gpuplan_doc_free(d);
}

/* Hardware: fp8 needs compute capability 8.9, bf16 8.0; a default bf16 on a
 * T4 becomes fp16-mixed and says so; FlashAttention-2 needs 8.0 (V100 and T4
 * get memory-efficient SDPA, which keeps no s^2 either). */
static void test_models__hardware_capabilities(void **state) {
  fixture *f = *state;
  kv fp8[] = {{"model", "llama-3-8b"}, {"gpu", "a100-80gb"}, {"gpus", "8"}, {"precision", "fp8"}, {NULL, NULL}};
  kv fp8h[] = {{"model", "llama-3-8b"}, {"gpu", "h100-sxm5-80gb"}, {"gpus", "8"}, {"precision", "fp8"}, {NULL, NULL}};
  kv bf16[] = {{"model", "gpt2"}, {"gpu", "t4"}, {"precision", "bf16-mixed"}, {NULL, NULL}};
  kv dflt[] = {{"model", "gpt2"}, {"gpu", "t4"}, {NULL, NULL}};
  const char *e = fails(f, "plan", fp8, GPUPLAN_EINVAL);
  gpuplan_doc *d;
  assert_non_null(strstr(e, "fp8"));
  assert_non_null(strstr(e, "A100 SXM4 80GB"));
  assert_non_null(strstr(e, "8.9"));
  e = fails(f, "perf", fp8, GPUPLAN_EINVAL);
  assert_non_null(strstr(e, "fp8"));
  gpuplan_doc_free(ok(f, "plan", fp8h));
  e = fails(f, "plan", bf16, GPUPLAN_EINVAL);
  assert_non_null(strstr(e, "bf16-mixed"));
  assert_non_null(strstr(e, "T4"));
  d = ok(f, "plan", dflt);
  assert_string_equal(str(d, "options.precision"), "fp16-mixed");
  assert_non_null(strstr(str(d, "attention"), "memory-efficient"));
  gpuplan_doc_free(d);
}

/* A vGPU slice has the slice's memory and computes as its share of the card. */
static void test_models__vgpu_slice_compute(void **state) {
  fixture *f = *state;
  kv slice[] = {{"model", "gpt2"}, {"node", "Standard_NV6ads_A10_v5"}, {"global_batch", "8"}, {NULL, NULL}};
  kv whole[] = {{"model", "gpt2"}, {"gpu", "a10"}, {"gpus", "1"}, {"global_batch", "8"}, {NULL, NULL}};
  gpuplan_doc *a = ok(f, "perf", slice), *b = ok(f, "perf", whole);
  double ra = num(a, "tokens_per_s"), rb = num(b, "tokens_per_s");
  /* 1/6 of an A10, time-sliced: at most a sixth of the whole card's rate (and a 4 GiB slice) */
  assert_true(ra <= rb / 6 * 1.01);
  assert_true(num(a, "gpu_memory_bytes") == 4294967296.0);
  gpuplan_doc_free(a);
  gpuplan_doc_free(b);
}

/* "Fits" against NVML's total with a 2% margin; the NVML figure is the one
 * the catalog's note records (H200: 143,771 MiB; H100 80GB: 81,559 MiB). */
static void test_models__verdict_and_capacity(void **state) {
  fixture *f = *state;
  kv h200[] = {{"model", "llama-2-7b"}, {"gpu", "h200"}, {NULL, NULL}};
  kv h100[] = {{"model", "gpt2"}, {"gpu", "h100-sxm5-80gb"}, {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", h200);
  char total[64];
  double t;
  assert_true(num(d, "worst.capacity_bytes") == 143771.0 * 1048576);
  assert_non_null(strstr(str(d, "worst.capacity_source"), "NVML"));
  assert_true(num(d, "worst.marketed_bytes") == 141.0 * 1073741824);
  gpuplan_doc_free(d);
  d = ok(f, "plan", h100);
  assert_true(num(d, "worst.capacity_bytes") == 81559.0 * 1048576);
  t = num(d, "worst.total_bytes");
  assert_string_equal(str(d, "worst.verdict"), "fits");
  gpuplan_doc_free(d);
  /* 1% to spare is "at the limit", not "fits"; 3% fits */
  {
    kv lim[] = {{"model", "gpt2"}, {"gpu", "h100-sxm5-80gb"}, {"gpu_total", total}, {NULL, NULL}};
    snprintf(total, sizeof total, "%.0fB", ceil(t * 1.01));
    d = ok(f, "plan", lim);
    assert_string_equal(str(d, "worst.verdict"), "at the limit");
    assert_false(gpuplan_value_bool(at(d, "worst.fits")));
    assert_true(gpuplan_value_bool(at(d, "worst.at_limit")));
    gpuplan_doc_free(d);
    snprintf(total, sizeof total, "%.0fB", ceil(t * 1.03));
    d = ok(f, "plan", lim);
    assert_string_equal(str(d, "worst.verdict"), "fits");
    gpuplan_doc_free(d);
  }
}

/* Encoders keep no KV cache (MM-9). */
static void test_models__encoder_inference(void **state) {
  fixture *f = *state;
  kv o[] = {{"model", "bert-large"}, {"gpu", "v100"}, {"workload", "infer"}, {"batch", "64"}, {"context_len", "512"},
            {NULL, NULL}};
  gpuplan_doc *d = ok(f, "plan", o);
  const gpuplan_value *c = at(d, "worst.components");
  size_t i;
  for (i = 0; i < gpuplan_value_count(c); i++)
    assert_string_not_equal(gpuplan_value_string(gpuplan_value_get(gpuplan_value_at(c, i), "name"), NULL), "KV cache");
  assert_null(gpuplan_value_path(gpuplan_doc_root(d), "worst.kv_bytes_per_token"));
  assert_true(num(d, "worst.max_sequences") > 64);
  gpuplan_doc_free(d);
}

/* The performance model's FLOPs follow the shape's extensions: DeepSeek-V3
 * (config.json) by hand, per token at 4,096 tokens of context.  Matmul
 * weights a token passes per layer:
 *   MLA: q down 7168x1536 + q up 1536x128x(128+64) + kv down 7168x(512+64)
 *        + kv up 512x128x(128+128) + out 128x128x7168      = 187,105,280
 *   dense MLP (first_k_dense_replace = 3): 3 x 7168 x 18432 = 396,361,728
 *   MoE: (8 routed + 1 shared) x 3 x 7168 x 2048 = 396,361,728, router 7168 x 256
 * so 3 x 583,467,008 + 58 x 585,302,016 = 35,697,917,952 weights; the
 * forward is 2 FLOPs per weight, causal attention 61 x 0.5 x 2 x 128 x
 * (192 + 128) x 4096, the LM head 2 x 7168 x 129280; training is 3x the
 * forward.  (Before, every routed expert was counted at the dense FFN's
 * 18,432 width: 1,363 GFLOP per token, 5.4x too many.) */
static void test_models__moe_mla_flops(void **state) {
  fixture *f = *state;
  kv o[] = {{"model", config("deepseek-v3.json")}, {"gpu", "h100-sxm5-80gb"}, {"gpus", "64"}, {"seq_len", "4096"},
            {NULL, NULL}};
  double weights = 3.0 * 583467008 + 58.0 * 585302016;
  double fwd = 2 * weights + 61 * 0.5 * 2 * 128 * (192 + 128) * 4096.0 + 2 * 7168 * 129280.0;
  gpuplan_doc *d = ok(f, "perf", o);
  assert_true(weights == 35697917952.0);
  assert_true(fabs(num(d, "model_flops_per_token") / (3 * fwd) - 1) < 1e-12);
  gpuplan_doc_free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_models__config_json_families),
    T(test_models__mistral_kv_cache),
    T(test_models__sizes_name_a_real_model),
    T(test_models__shape_options),
    T(test_models__unknown_model_type),
    T(test_models__impl_default_is_stated),
    T(test_models__hardware_capabilities),
    T(test_models__vgpu_slice_compute),
    T(test_models__verdict_and_capacity),
    T(test_models__encoder_inference),
    T(test_models__moe_mla_flops),
  };
  return cmocka_run_group_tests_name("models", tests, NULL, NULL);
}
