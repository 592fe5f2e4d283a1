/*
 * test_options.c: memory options by name (gpuplan_option_*), the parser the
 * Python and Lua bindings share: every name round-trips into the right
 * field, wrong types and unknown names fail with the option named, and the
 * options so set give the same plan as the struct set by hand.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static void test_options__every_name_is_settable(void **state) {
  fixture *f = *state;
  size_t i, n = 0;
  const char *name;
  for (i = 0; (name = gpuplan_option_name(i)) != NULL; i++, n++) {
    gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
    int t = gpuplan_option_kind(name);
    int rc;
    assert_true(t >= 0);
    switch (t) {
    case GPUPLAN_OPTION_INT: rc = gpuplan_option_set_string(f->ctx, &o, name, "2"); break;
    case GPUPLAN_OPTION_BOOL: rc = gpuplan_option_set_string(f->ctx, &o, name, "false"); break;
    case GPUPLAN_OPTION_REAL: rc = gpuplan_option_set_real(f->ctx, &o, name, 7e9); break;
    default: rc = gpuplan_option_set_string(f->ctx, &o, name,
                                            strcmp(name, "workload") == 0 ? "infer"
                                            : strstr(name, "dtype") ? "fp8"
                                            : strcmp(name, "dp_mode") == 0 ? "zero3"
                                            : strcmp(name, "precision") == 0 ? "fp32"
                                            : strcmp(name, "optimizer") == 0 ? "sgd"
                                            : strcmp(name, "recompute") == 0 ? "full"
                                            : strcmp(name, "schedule") == 0 ? "gpipe" : "megatron");
    }
    if (rc) fprintf(stderr, "%s: %s\n", name, gpuplan_errmsg(f->ctx));
    assert_int_equal(rc, GPUPLAN_OK);
  }
  assert_true(n >= 38);
  assert_int_equal(gpuplan_option_kind("colour"), -1);
  assert_null(gpuplan_option_name(n));
}

static void test_options__fields(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT;
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "tp", 8), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "pp", 4.0), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "micro_batch", "2"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "dp_mode", "ZeRO3"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "kv_dtype", "fp8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "sequence_parallel", 1), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "flash_attention", "no"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "grad_bytes", 4), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "workload", "infer"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "params", 7e9), GPUPLAN_OK);
  assert_int_equal(o.tp, 8);
  assert_int_equal(o.pp, 4);
  assert_int_equal(o.micro_batch, 2);
  assert_int_equal(o.dp_mode, GPUPLAN_DP_ZERO3);
  assert_int_equal(o.kv_dtype, GPUPLAN_DTYPE_FP8);
  assert_int_equal(o.sequence_parallel, 1);
  assert_int_equal(o.flash_attention, 0);
  assert_int_equal(o.grad_bytes, 4);
  assert_int_equal(o.workload, GPUPLAN_INFER);
  assert_true(o.params_override == 7e9);
}

static void test_options__same_plan_as_the_struct(void **state) {
  fixture *f = *state;
  gpuplan_memory_options a = GPUPLAN_MEMORY_OPTIONS_INIT, b = GPUPLAN_MEMORY_OPTIONS_INIT;
  const gpuplan_model *m;
  const gpuplan_gpu *g;
  gpuplan_memory ra, rb;
  assert_int_equal(gpuplan_catalog_model(f->ctx ? f->cat : NULL, "llama-2-70b", &m), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "h100-sxm5-80gb", &g), GPUPLAN_OK);
  a.tp = 8;
  a.pp = 4;
  a.dp = 2;
  a.sequence_parallel = 1;
  a.recompute = GPUPLAN_RECOMPUTE_SELECTIVE;
  a.dp_mode = GPUPLAN_DP_ZERO1;
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "tp", "8"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "pp", "4"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "dp", "2"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "sequence_parallel", "true"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "recompute", "selective"), GPUPLAN_OK);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &b, "dp_mode", "zero1"), GPUPLAN_OK);
  assert_int_equal(gpuplan_memory_eval(f->ctx, m, g, &a, GPUPLAN_STAGE_WORST, &ra), GPUPLAN_OK);
  assert_int_equal(gpuplan_memory_eval(f->ctx, m, g, &b, GPUPLAN_STAGE_WORST, &rb), GPUPLAN_OK);
  assert_int_equal(ra.total, rb.total);
}

static void test_options__bad_input_names_the_option(void **state) {
  fixture *f = *state;
  gpuplan_memory_options o = GPUPLAN_MEMORY_OPTIONS_INIT, keep = GPUPLAN_MEMORY_OPTIONS_INIT;
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "colour", 1), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "colour"));
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "dp_mode", "zero4"), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "dp_mode"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "zero3"));  /* lists the allowed names */
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "tp", "eight"), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "tp"));
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "tp", 2.5), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "precision", 3), GPUPLAN_EINVAL);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "precision"));
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "paged", 2), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "paged", "maybe"), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_int(f->ctx, &o, "grad_bytes", 1LL << 40), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "params", -1), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "params", 1.0 / 0.0), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_real(f->ctx, &o, "tp", 1e300), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "workload", "serve"), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_option_set_string(f->ctx, NULL, "tp", "1"), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_option_set_string(f->ctx, &o, "tp", NULL), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_option_set_int(NULL, &o, "colour", 1), GPUPLAN_ENOTFOUND);
  /* failures leave the options as they were */
  assert_int_equal(o.tp, keep.tp);
  assert_int_equal(o.dp_mode, keep.dp_mode);
  assert_int_equal(o.precision, keep.precision);
  assert_int_equal(o.paged, keep.paged);
  assert_int_equal(o.grad_bytes, keep.grad_bytes);
  assert_int_equal(o.workload, keep.workload);
  assert_true(o.params_override == keep.params_override);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_options__every_name_is_settable),
    T(test_options__fields),
    T(test_options__same_plan_as_the_struct),
    T(test_options__bad_input_names_the_option),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
