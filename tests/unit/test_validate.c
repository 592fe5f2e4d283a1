/*
 * test_validate.c: `validate` through the job API on the published runs in
 * the repository (data/reference/training_runs_calibration.csv and
 * tests/data/perf/narayanan2021_table2.csv), against issue 11's acceptance
 * (median |error| <= 6%, worst <= 20%, no framework x SKU group with a
 * median bias beyond +-8%, no row with the data skipped), and the review's
 * reproducers PM-9..PM-13 as one-row CSVs written here.
 */
#include <math.h>
#include <stdio.h>

#include "testutil.h"

static const char *ref_dir(void) {
  const char *d = getenv("GPUPLAN_REFERENCE");
  return d ? d : "data/reference";
}

static gpuplan_doc *run_validate(fixture *f, const char *path, const char *rows) {
  gpuplan_job *j = NULL;
  gpuplan_doc *d = NULL;
  int rc;
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &j), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "csv", path), GPUPLAN_OK);
  if (rows) assert_int_equal(gpuplan_job_set(j, "rows", rows), GPUPLAN_OK);
  rc = gpuplan_job_run(j, "validate", &d);
  if (rc) fprintf(stderr, "validate: %s\n", gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
  gpuplan_job_free(j);
  return d;
}

static const gpuplan_value *row_of(const gpuplan_doc *d, const char *id) {
  const gpuplan_value *rows = gpuplan_value_get(gpuplan_doc_root(d), "rows");
  size_t i, n = gpuplan_value_count(rows);
  for (i = 0; i < n; i++) {
    const gpuplan_value *r = gpuplan_value_at(rows, i);
    if (strcmp(gpuplan_value_string(gpuplan_value_get(r, "id"), NULL), id) == 0) return r;
  }
  return NULL;
}

static const char *str(const gpuplan_value *v, const char *k) {
  const char *s = gpuplan_value_string(gpuplan_value_get(v, k), NULL);
  return s ? s : "";
}
static double real(const gpuplan_value *v, const char *k) { return gpuplan_value_real(gpuplan_value_get(v, k)); }

/* The CSV header and one row of the calibration file, copied to a file of
 * its own after `edit` replaced text in it (the review's reproducers). */
static void one_row_csv(const char *src, const char *id, const char *from, const char *to, const char *out) {
  FILE *in = fopen(src, "rb"), *o;
  char line[16384], hdr[16384];
  int found = 0;
  assert_non_null(in);
  assert_non_null(fgets(hdr, sizeof hdr, in));
  o = fopen(out, "wb");
  assert_non_null(o);
  fputs(hdr, o);
  while (fgets(line, sizeof line, in)) {
    if (strncmp(line, id, strlen(id)) != 0 || line[strlen(id)] != ',') continue;
    if (from) {
      char *at = strstr(line, from), buf[16384];
      assert_non_null(at);
      snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - line), line, to, at + strlen(from));
      fputs(buf, o);
    } else {
      fputs(line, o);
    }
    found = 1;
  }
  fclose(in);
  fclose(o);
  assert_true(found);
}

/* Issue 11's acceptance on the calibration file. */
static void test_validate__calibration_meets_the_bar(void **state) {
  fixture *f = *state;
  char path[1024];
  gpuplan_doc *d;
  const gpuplan_value *r, *rows, *groups;
  size_t i, n;
  snprintf(path, sizeof path, "%s/training_runs_calibration.csv", ref_dir());
  d = run_validate(f, path, NULL);
  r = gpuplan_doc_root(d);
  assert_string_equal(gpuplan_doc_schema(d), "gpuplan.validate/1");
  assert_true(gpuplan_value_int(gpuplan_value_get(r, "rows_total")) == 159);
  assert_true(gpuplan_value_int(gpuplan_value_get(r, "rows_scored")) >= 130);
  assert_true(real(r, "median_abs_error") <= 0.06);
  assert_true(fabs(real(r, "worst_error")) <= 0.20);
  assert_true(real(r, "p90_abs_error") <= 0.15);
  groups = gpuplan_value_path(r, "by.framework_gpu");
  n = gpuplan_value_count(groups);
  assert_true(n >= 5);
  for (i = 0; i < n; i++) {
    const gpuplan_value *g = gpuplan_value_at(groups, i);
    if (fabs(real(g, "median_error")) > 0.08) fprintf(stderr, "group %s: %+.3f\n", str(g, "key"), real(g, "median_error"));
    assert_true(fabs(real(g, "median_error")) <= 0.08);
  }
  /* every breakdown the issue asks for is there */
  assert_true(gpuplan_value_count(gpuplan_value_path(r, "by.framework")) >= 3);
  assert_true(gpuplan_value_count(gpuplan_value_path(r, "by.gpu")) >= 3);
  assert_true(gpuplan_value_count(gpuplan_value_path(r, "by.family")) >= 4);
  assert_true(gpuplan_value_count(gpuplan_value_path(r, "by.dp_width")) >= 3);
  /* no row with the data is skipped: every skip names data the source lacks */
  rows = gpuplan_value_get(r, "rows");
  n = gpuplan_value_count(rows);
  for (i = 0; i < n; i++) {
    const gpuplan_value *x = gpuplan_value_at(rows, i);
    if (strcmp(str(x, "status"), "skipped") != 0) continue;
    assert_true(strstr(str(x, "reason"), "not given") != NULL);
  }
  /* the rows the review names are modelled as run */
  {
    const gpuplan_value *x = row_of(d, "R0009"), *y = row_of(d, "R0006"), *z = row_of(d, "R0028");
    /* PM-11: "1 layer/virtual stage" on 105 layers, pp 35: vpp 3; R0006: 5 layers per chunk, 60 on pp 4: 3 */
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(x, "vpp")), 3);
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(y, "vpp")), 3);
    /* PM-12: BLOOM's Jean Zay nodes, 8 GPUs and 4 x 100 Gb/s Omni-Path */
    assert_int_equal(gpuplan_value_int(gpuplan_value_get(z, "gpus_per_node")), 8);
    assert_true(real(z, "nics_per_node") == 4);
    assert_string_equal(str(z, "inter"), "roce-100");
    /* the MosaicML rows are FSDP, as run (PM-9), on full GPU ids (PM-13) */
    x = row_of(d, "R0240");
    assert_string_equal(str(x, "dp_mode"), "fsdp-full");
    assert_string_equal(str(x, "framework"), "composer");
    assert_string_equal(str(x, "gpu"), "a100-sxm4-80gb");
    x = row_of(d, "R0158");
    assert_string_equal(str(x, "dp_mode"), "fsdp-grad-op");
    x = row_of(d, "R0077");
    assert_string_equal(str(x, "framework"), "nemo");
    assert_string_equal(str(x, "dp_mode"), "zero1");
  }
  gpuplan_doc_free(d);
}

/* Narayanan et al. 2021 Table 2: ZeRO-3 without model parallelism stops
 * scaling (a fixed per-step communication cost: 74 days for 300 B tokens
 * on 768 and on 1,536 GPUs), PTD-P keeps scaling.  The model says the
 * same, within 20% of every row. */
static void test_validate__zero3_stops_scaling(void **state) {
  fixture *f = *state;
  char path[1024];
  gpuplan_doc *d;
  const gpuplan_value *z768, *z1536, *p768, *p1536;
  double days768, days1536;
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/data/perf/narayanan2021_table2.csv", src ? src : ".");
  d = run_validate(f, path, NULL);
  z768 = row_of(d, "N0002");
  z1536 = row_of(d, "N0003");
  p768 = row_of(d, "N0008");
  p1536 = row_of(d, "N0009");
  assert_string_equal(str(z1536, "dp_mode"), "zero3");
  assert_string_equal(str(z1536, "framework"), "deepspeed");
  /* time to train = tokens / predicted tokens/s: ZeRO-3 flat from 768 to
   * 1,536 GPUs (within 15%), PTD-P nearly halves */
  days768 = 1 / real(z768, "predicted_tokens_per_s");
  days1536 = 1 / real(z1536, "predicted_tokens_per_s");
  assert_true(days1536 / days768 > 0.85);
  assert_true(real(p768, "predicted_tokens_per_s") / real(p1536, "predicted_tokens_per_s") < 0.6);
  assert_true(fabs(real(gpuplan_doc_root(d), "worst_error")) <= 0.20);
  gpuplan_doc_free(d);
}

/* PM-9: FSDP text variants are FSDP; PM-10: a run that does not fit as
 * modelled is a model error, not scored; PM-13: GB200 through the
 * catalog's aliases. */
static void test_validate__reproducers(void **state) {
  fixture *f = *state;
  char src[1024], path[1024];
  gpuplan_doc *d;
  const gpuplan_value *x;
  snprintf(src, sizeof src, "%s/training_runs_calibration.csv", ref_dir());
  /* PM-9: "FSDP" and "FSDP=8 (+DP)" */
  tmp_path(path, sizeof path, "pm9.csv");
  one_row_csv(src, "R0240", "PyTorch FSDP FULL_SHARD (mixed precision mode DEFAULT)", "FSDP", path);
  d = run_validate(f, path, NULL);
  x = row_of(d, "R0240");
  assert_string_equal(str(x, "dp_mode"), "fsdp-full");
  assert_non_null(strstr(str(x, "assumptions"), "FULL_SHARD"));
  gpuplan_doc_free(d);
  one_row_csv(src, "R0240", "PyTorch FSDP FULL_SHARD (mixed precision mode DEFAULT)", "FSDP=4 (+DP)", path);
  d = run_validate(f, path, NULL);
  assert_string_equal(str(row_of(d, "R0240"), "dp_mode"), "fsdp-hybrid");
  gpuplan_doc_free(d);
  /* PM-10: the same 7B run as DDP at micro-batch 6 does not fit in 80 GB */
  one_row_csv(src, "R0240", "PyTorch FSDP FULL_SHARD (mixed precision mode DEFAULT)", "none (DDP)", path);
  d = run_validate(f, path, NULL);
  x = row_of(d, "R0240");
  assert_string_equal(str(x, "status"), "model error");
  assert_non_null(strstr(str(x, "reason"), "does not fit"));
  assert_int_equal(gpuplan_value_type_of(gpuplan_value_get(x, "error")), GPUPLAN_VALUE_NULL);
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(d), "rows_scored")), 0);
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(d), "rows_model_error")), 1);
  gpuplan_doc_free(d);
  /* PM-13: GB200 (NVL72) resolves and is modelled on its NVLink domain */
  one_row_csv(src, "R0240", ",A100 80GB,", ",GB200 (NVL72),", path);
  d = run_validate(f, path, NULL);
  x = row_of(d, "R0240");
  assert_string_equal(str(x, "gpu"), "gb200");
  assert_string_equal(str(x, "intra"), "nvl72");
  assert_string_equal(str(x, "status"), "scored");
  gpuplan_doc_free(d);
  /* H100 named without a form factor: the SXM board, said so */
  one_row_csv(src, "R0240", ",A100 80GB,", ",H100 80GB,", path);
  d = run_validate(f, path, NULL);
  x = row_of(d, "R0240");
  assert_string_equal(str(x, "gpu"), "h100-sxm5-80gb");
  assert_non_null(strstr(str(x, "assumptions"), "SXM"));
  gpuplan_doc_free(d);
}

/* Errors name the option; the rows filter; constants by name. */
static void test_validate__options(void **state) {
  fixture *f = *state;
  char path[1024];
  gpuplan_job *j = NULL;
  gpuplan_doc *d = NULL;
  snprintf(path, sizeof path, "%s/training_runs_calibration.csv", ref_dir());
  d = run_validate(f, path, "R0009,R0240");
  assert_int_equal(gpuplan_value_int(gpuplan_value_get(gpuplan_doc_root(d), "rows_total")), 2);
  gpuplan_doc_free(d);
  assert_int_equal(gpuplan_job_new(f->ctx, f->cat, &j), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "csv", "/nonexistent/file.csv"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "validate", &d), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "csv"));
  assert_int_equal(gpuplan_job_set(j, "csv", path), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "constants", "no_such=1"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "validate", &d), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "constants"));
  assert_int_equal(gpuplan_job_set(j, "constants", "composer.overlap_eff=0.5,straggler=0"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_set(j, "rows", "R0240"), GPUPLAN_OK);
  assert_int_equal(gpuplan_job_run(j, "validate", &d), GPUPLAN_OK);
  assert_string_equal(str(gpuplan_doc_root(d), "constants"), "composer.overlap_eff=0.5,straggler=0");
  gpuplan_doc_free(d);
  gpuplan_job_free(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_validate__calibration_meets_the_bar),
    T(test_validate__zero3_stops_scaling),
    T(test_validate__reproducers),
    T(test_validate__options),
  };
  return cmocka_run_group_tests_name("validate", tests, NULL, NULL);
}
