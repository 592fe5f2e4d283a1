/*
 * test_job.c: the job API (gpuplan/job.h) and result documents (gpuplan/doc.h).
 *
 * The option table is one namespace (unique names; flags unique per
 * command); values are
 * parsed strictly, ranges checked, and errors name the option and what it
 * allows; a command refuses options it does not take; one job gives the
 * same document however its options were spelled; documents carry their
 * schema, read back through the getters, print as JSON whose numbers read
 * back to the same doubles, and survive allocation failures without leaks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static gpuplan_job *new_job(fixture *f) {
  gpuplan_job *j = NULL;
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &j), GPUPLAN_OK);
  return j;
}

static void test_job__table_is_one_namespace(void **state) {
  const gpuplan_option_info *a, *b;
  size_t i, k, n = 0;
  (void)state;
  for (i = 0; (a = gpuplan_job_option(i)); i++, n++) {
    assert_non_null(a->help);
    assert_true(a->commands != 0);
    assert_non_null(a->group);
    if (a->type == GPUPLAN_OPT_ENUM) assert_non_null(a->choices);
    /* names are one namespace (Python, Lua); a CLI flag is unique among
     * the options of each command that takes it */
    for (k = i + 1; (b = gpuplan_job_option(k)); k++) {
      if (strcmp(a->name, b->name) == 0 || (strcmp(a->flag, b->flag) == 0 && (a->commands & b->commands))) {
        fprintf(stderr, "duplicate option %s/%s and %s/%s\n", a->name, a->flag, b->name, b->flag);
        fail();
      }
    }
    assert_ptr_equal(gpuplan_job_option_find(a->name, NULL), a);
  }
  assert_true(n >= 60);
  {
    int neg = 0;
    assert_ptr_equal(gpuplan_job_option_find("no-flash", &neg), gpuplan_job_option_find("flash_attention", NULL));
    assert_int_equal(neg, 1);
  }
  assert_int_equal(gpuplan_command_find("plan"), 0);
  assert_int_equal(gpuplan_command_find("serve-me"), -1);
}

static void test_job__strict_values_name_the_option(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  static const struct {
    const char *name, *value, *msg;
  } bad[] = {
    {"ep", "0x10", "ep: '0x10' is not an integer in 1..65536"},
    {"gpus", " 5", "gpus: ' 5' is not an integer in 1..16777216"},
    {"tp", "0", "tp: 0 is out of range (allowed: an integer in 1..65536)"},
    {"nics", "1e-300", "nics: '1e-300' is not an integer in 1..64"},
    {"tokens", "inf", "tokens: 'inf' is not a number in 1..1e+18"},
    {"tokens", "nan", "tokens: 'nan' is not a number"},
    {"precision", "fp7", "precision: 'fp7' is not one of bf16-mixed, fp16-mixed, fp32, bf16, fp8"},
    {"flash_attention", "maybe", "flash_attention (--flash): 'maybe' is not true or false"},
    {"grad_bytes", "3", "grad_bytes (--grad-bytes): 3 is not 2 or 4"},
    {"cuda_context", "12 MiB", "cuda_context (--cuda-context): '12 MiB' is not a size"},
  };
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(gpuplan_job_set(j, bad[i].name, bad[i].value), GPUPLAN_EINVAL);
    if (!strstr(gpuplan_errmsg(f->ctx), bad[i].msg)) {
      fprintf(stderr, "got '%s', wanted '%s'\n", gpuplan_errmsg(f->ctx), bad[i].msg);
      fail();
    }
  }
  assert_int_equal(gpuplan_job_set_text(j, "precision", "bf16\0x", 6), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "precision: the value contains a NUL byte"));
  assert_int_equal(gpuplan_job_set(j, "colour", "blue"), GPUPLAN_ENOTFOUND);
  assert_int_equal(gpuplan_job_set(j, "micro_bach", "2"), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "did you mean 'micro_batch'"));
  assert_int_equal(gpuplan_job_set_int(j, "precision", 3), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_job_set_real(j, "tp", 2.5), GPUPLAN_EINVAL);
  gpuplan_job_free(j);
}

static void test_job__sizes_in_their_unit(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  gpuplan_doc *d;
  /* cuda_context in MiB unless a unit is given: 1343 MiB = 1408237568 B */
  assert_int_equal(gpuplan_job_set(j, "model", "gpt-2"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "t4"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "cuda_context", "1343"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "plan", &d), GPUPLAN_OK);
  {
    const gpuplan_value *c = gpuplan_value_path(gpuplan_doc_root(d), "worst.components");
    size_t i;
    int seen = 0;
    for (i = 0; i < gpuplan_value_count(c); i++)
      if (strcmp(gpuplan_value_string(gpuplan_value_get(gpuplan_value_at(c, i), "name"), NULL), "CUDA context") == 0) {
        assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_value_at(c, i), "bytes")), 1408237568);
        seen = 1;
      }
    assert_true(seen);
  }
  gpuplan_doc_free(d);
  assert_int_equal(gpuplan_job_set(j, "cuda_context", "1.5GiB"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "cuda_context", "512MB"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set_real(j, "cuda_context", 0.5), GPUPLAN_OK);
  gpuplan_job_free(j);
}

/* The review's AR-1 case: the same job by --fsdp and by dp_mode gives the
 * FSDP convention and the same document (the CLI printed the FSDP
 * convention, the Python binding the DeepSpeed one, with other bytes). */
static void test_job__one_job_one_document(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  gpuplan_doc *a, *b;
  const char *ja, *jb;
  assert_int_equal(gpuplan_job_set(j, "model", "llama-2-13b"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "a100-80gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set_int(j, "gpus", 8), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "fsdp", "full"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "plan", &a), GPUPLAN_OK);
  gpuplan_job_reset(j);
  assert_int_equal(gpuplan_job_set(j, "model", "llama-2-13b"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "A100-80GB"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpus", "8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "dp-mode", "FSDP_full"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "plan", &b), GPUPLAN_OK);
  assert_string_equal(gpuplan_doc_schema(a), "gpuplan.plan/1");
  assert_string_equal(gpuplan_value_string(gpuplan_value_path(gpuplan_doc_root(a), "options.convention"), NULL),
                      "fsdp");
  assert_true(gpuplan_value_int(gpuplan_value_path(gpuplan_doc_root(a), "worst.total_bytes")) > 0);
  ja = gpuplan_doc_json(a, 0, NULL);
  jb = gpuplan_doc_json(b, 0, NULL);
  assert_non_null(ja);
  /* both jobs set the same options: the documents are the same text */
  assert_string_equal(ja, jb);
  assert_non_null(strstr(gpuplan_doc_json(a, GPUPLAN_JSON_PRETTY, NULL), "\"schema\": \"gpuplan.plan/1\""));
  gpuplan_doc_free(a);
  gpuplan_doc_free(b);
  /* zero and fsdp together contradict each other */
  assert_int_equal(gpuplan_job_set_int(j, "zero", 3), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "plan", &a), GPUPLAN_EINVAL);
  assert_null(a);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "zero, fsdp, dp_mode"));
  gpuplan_job_free(j);
}

static void test_job__commands_refuse_foreign_options(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  gpuplan_doc *d = NULL;
  assert_int_equal(gpuplan_job_set(j, "model", "llama-2-7b"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "a100-80gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set_int(j, "top", 3), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "plan", &d), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "top: plan does not take this option (search"));
  assert_int_equal(gpuplan_job_unset(j, "top"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "no-such-command", &d), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_job_run(j, "plan", &d), GPUPLAN_OK);
  gpuplan_doc_free(d);
  gpuplan_job_free(j);
}

/* Numbers in the JSON text read back to the doubles in the document. */
static void test_job__json_numbers_round_trip(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  gpuplan_doc *d;
  const gpuplan_value *r;
  const char *json, *p;
  static const char *const keys[] = {"\"step_s\":", "\"mfu\":", "\"tokens_per_s\":", "\"model_flops_per_token\":"};
  size_t i;
  assert_int_equal(gpuplan_job_set(j, "model", "gpt-3-175b"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "a100-80gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpus", "1024"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "tp", "8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "pp", "16"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "global_batch", "1536"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "perf", &d), GPUPLAN_OK);
  r = gpuplan_doc_root(d);
  json = gpuplan_doc_json(d, 0, NULL);
  for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    double want;
    char key[64];
    size_t n = strlen(keys[i]) - 3;
    memcpy(key, keys[i] + 1, n);
    key[n] = 0;
    want = gpuplan_value_real(gpuplan_value_get(r, key));
    assert_true(want > 0);
    p = strstr(json, keys[i]);
    assert_non_null(p);
    assert_true(strtod(p + strlen(keys[i]), NULL) == want);
  }
  /* CSV is for tabular kinds only */
  assert_null(gpuplan_doc_csv(d, NULL));
  assert_int_equal(gpuplan_errcode(f->ctx), GPUPLAN_EUNSUPPORTED);
  gpuplan_doc_free(d);
  gpuplan_job_free(j);
}

static void test_job__search_table_as_csv(void **state) {
  fixture *f = *state;
  gpuplan_job *j = new_job(f);
  gpuplan_doc *d;
  const char *csv;
  assert_int_equal(gpuplan_job_set(j, "model", "llama-2-7b"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpu", "a100-80gb"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "gpus", "64"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "global_batch", "512"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "top", "3"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "search", &d), GPUPLAN_OK);
  csv = gpuplan_doc_csv(d, NULL);
  assert_non_null(csv);
  assert_int_equal(strncmp(csv, "rank,tp,pp,cp,dp,", 17), 0);
  {
    /* a header and three rows */
    int lines = 0;
    const char *p;
    for (p = csv; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 4);
  }
  gpuplan_doc_free(d);
  gpuplan_job_free(j);
}

/* Every allocation of a plan, a perf and a search may fail: the result is
 * GPUPLAN_OK or GPUPLAN_ENOMEM, never a crash or a leak. */
static void test_job__allocation_failures(void **state) {
  static const char *const cmds[] = {"plan", "perf", "search"};
  size_t k;
  (void)state;
  for (k = 0; k < 3; k++) {
    long long at;
    for (at = 0; at < 400; at++) {
      counting c;
      gpuplan_ctx *ctx;
      gpuplan_catalog *cat = NULL;
      gpuplan_job *j = NULL;
      gpuplan_doc *d = NULL;
      int rc;
      counting_init(&c);
      ctx = counting_ctx(&c);
      if (gpuplan_catalog_open_default(ctx, &cat) != GPUPLAN_OK) fail();
      c.fail_at = c.calls + at;
      rc = gpuplan_job_new(ctx, cat, &j);
      if (rc == GPUPLAN_OK) rc = gpuplan_job_set(j, "model", "llama-2-7b");
      if (rc == GPUPLAN_OK) rc = gpuplan_job_set(j, "gpu", "a100-80gb");
      if (rc == GPUPLAN_OK) rc = gpuplan_job_set(j, "gpus", "16");
      if (rc == GPUPLAN_OK && k) rc = gpuplan_job_set(j, "global_batch", "64");
      if (rc == GPUPLAN_OK) rc = gpuplan_job_run(j, cmds[k], &d);
      if (rc == GPUPLAN_OK && !gpuplan_doc_json(d, GPUPLAN_JSON_PRETTY, NULL)) rc = GPUPLAN_ENOMEM;
      assert_true(rc == GPUPLAN_OK || rc == GPUPLAN_ENOMEM);
      gpuplan_doc_free(d);
      gpuplan_job_free(j);
      gpuplan_catalog_free(cat);
      counting_done(&c, ctx);
      if (!c.failures) break; /* every allocation has been failed once */
    }
  }
}

static void test_job__field_descriptions(void **state) {
  const char *kind;
  size_t i, n;
  int version;
  (void)state;
  for (i = 0; (kind = gpuplan_result_kind(i)); i++) {
    const gpuplan_result_field *fd = gpuplan_result_fields(kind, &n, &version);
    assert_non_null(fd);
    assert_true(n >= 1);
    assert_true(version >= 1);
    assert_string_equal(fd[0].path, "schema");
  }
  assert_true(i >= 5);
  assert_null(gpuplan_result_fields("no-such-kind", &n, NULL));
  assert_string_equal(gpuplan_result_table("search"), "best");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_job__table_is_one_namespace),
    cmocka_unit_test_setup_teardown(test_job__strict_values_name_the_option, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_job__sizes_in_their_unit, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_job__one_job_one_document, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_job__commands_refuse_foreign_options, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_job__json_numbers_round_trip, fixture_setup, fixture_teardown),
    cmocka_unit_test_setup_teardown(test_job__search_table_as_csv, fixture_setup, fixture_teardown),
    cmocka_unit_test(test_job__allocation_failures),
    cmocka_unit_test(test_job__field_descriptions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
