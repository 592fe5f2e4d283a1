/*
 * test_catalog.c: the embedded catalog against the reference figures
 * (shared/reference/gpus.csv, vms.csv, formulas.md), lookups by id, name
 * and alias, ambiguity and suggestions, field descriptors, user catalogs
 * layered over the default, and imports.
 */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "testutil.h"


static const gpuplan_gpu *gpu(fixture *f, const char *name) {
  const gpuplan_gpu *g = NULL;
  int rc = gpuplan_catalog_gpu(f->cat, name, &g);
  if (rc) fprintf(stderr, "lookup '%s': %s\n", name, gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, GPUPLAN_OK);
  return g;
}

/* Figures from shared/reference/gpus.csv (dense columns), in SI units. */
static void test_catalog__gpu_figures_match_the_reference(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *g;

  g = gpu(f, "h100-sxm5-80gb");
  assert_string_equal(g->name, "H100 SXM5 80GB");
  assert_true(g->bf16_flops == 989e12);
  assert_true(g->fp8_flops == 1979e12);
  assert_true(g->mem_bw_bytes_s == 3.35e12);
  assert_true(g->memory_gb == 80);
  assert_true(g->memory_bytes == 80ull << 30);
  assert_true(g->sm_count == 132);
  assert_true(g->nvlink_bw_bytes_s == 900e9);
  assert_true(g->boost_clock_mhz == 1980);
  assert_true(g->tensor_clock_mhz == 1830);
  assert_true(g->matmul_bf16_flops == 794.5e12); /* formulas.md A.2 */
  assert_string_equal(g->compute_capability, "9.0");

  g = gpu(f, "h200-sxm-141gb");
  assert_true(g->memory_gb == 141);
  assert_true(g->mem_bw_bytes_s == 4.8e12);
  assert_true(g->bf16_flops == 989e12);

  g = gpu(f, "a100-sxm4-40gb");
  assert_true(g->mem_bw_bytes_s == 1.555e12);
  assert_true(g->bf16_flops == 312e12);
  assert_true(isnan(g->fp8_flops)); /* A100 has no FP8 */
  assert_true(g->memory_gb == 40);

  g = gpu(f, "t4");
  assert_true(g->memory_gb == 16);
  assert_true(g->fp16_flops == 65e12);
  assert_true(isnan(g->bf16_flops)); /* Turing has no BF16 */

  g = gpu(f, "v100-sxm2-32gb");
  assert_true(g->context_bytes == 1343ull * 1048576); /* formulas.md B.5 */

  g = gpu(f, "b200");
  assert_true(g->bf16_flops == 2250e12);
  assert_true(g->mem_bw_bytes_s == 8e12);
  assert_non_null(g->note); /* 180 vs 192 GB conflict stated */

  g = gpu(f, "gb200");
  assert_true(g->bf16_flops == 2500e12);
  assert_non_null(g->note);

  g = gpu(f, "rtx-4090");
  assert_true(g->bf16_flops == 165.2e12); /* FP32-accumulate rate */
}

static void test_catalog__every_gpu_has_source_and_sane_units(void **state) {
  fixture *f = *state;
  size_t i, n = gpuplan_catalog_count(f->cat, GPUPLAN_KIND_GPU);
  assert_true(n >= 17);
  for (i = 0; i < n; i++) {
    const gpuplan_gpu *g = gpuplan_catalog_at(f->cat, GPUPLAN_KIND_GPU, i);
    assert_non_null(g->source);
    assert_true(strlen(g->source) > 10);
    assert_true(g->memory_bytes >= 16ull << 30);
    assert_true(g->mem_bw_bytes_s >= 300e9 && g->mem_bw_bytes_s <= 10e12);
    if (!isnan(g->bf16_flops)) assert_true(g->bf16_flops > 50e12 && g->bf16_flops < 5e15);
    assert_true(g->context_bytes > 100ull << 20 && g->context_bytes < 4ull << 30);
    if (i > 0) {
      const gpuplan_gpu *p = gpuplan_catalog_at(f->cat, GPUPLAN_KIND_GPU, i - 1);
      assert_true(strcmp(p->id, g->id) < 0); /* sorted by id */
    }
  }
  assert_null(gpuplan_catalog_at(f->cat, GPUPLAN_KIND_GPU, n));
}

static void test_catalog__lookup_ignores_case_and_separators(void **state) {
  fixture *f = *state;
  assert_string_equal(gpu(f, "H100 SXM")->id, "h100-sxm5-80gb");
  assert_string_equal(gpu(f, "h100_sxm5_80gb")->id, "h100-sxm5-80gb");
  assert_string_equal(gpu(f, "a100-80gb")->id, "a100-sxm4-80gb");
  assert_string_equal(gpu(f, "A100 PCIe")->id, "a100-pcie-80gb");
  assert_string_equal(gpu(f, "NVIDIA A100-SXM4-40GB")->id, "a100-sxm4-40gb");
  assert_string_equal(gpu(f, "NVIDIA H100 80GB HBM3")->id, "h100-sxm5-80gb");
  assert_string_equal(gpu(f, "H200")->id, "h200-sxm-141gb");
  assert_string_equal(gpu(f, "a10")->id, "a10");
  assert_string_equal(gpu(f, "L4")->id, "l4");
}

static void test_catalog__ambiguous_name_lists_candidates(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *g = (const gpuplan_gpu *)f;
  const char *msg;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "h100", &g), GPUPLAN_EAMBIGUOUS);
  assert_null(g);
  assert_int_equal(gpuplan_errcode(f->ctx), GPUPLAN_EAMBIGUOUS);
  msg = gpuplan_errmsg(f->ctx);
  assert_non_null(strstr(msg, "ambiguous"));
  assert_non_null(strstr(msg, "h100-sxm5-80gb"));
  assert_non_null(strstr(msg, "h100-pcie-80gb"));
  assert_non_null(strstr(msg, "h100-nvl-94gb"));
  assert_null(strstr(msg, "h200"));
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "a100", &g), GPUPLAN_EAMBIGUOUS);
}

static void test_catalog__unknown_name_suggests_nearest(void **state) {
  fixture *f = *state;
  const gpuplan_gpu *g;
  const gpuplan_model *m;
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "h10O-sxm", &g), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "did you mean"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "h100-sxm5-80gb"));
  assert_int_equal(gpuplan_catalog_model(f->cat, "lamma-2-7b", &m), GPUPLAN_ENOTFOUND);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "llama-2-7b"));
  assert_int_equal(gpuplan_catalog_gpu(f->cat, "zzzzzzzzzzzzzzzz", &g), GPUPLAN_ENOTFOUND);
  assert_null(strstr(gpuplan_errmsg(f->ctx), "did you mean"));
}

static void test_catalog__bad_lookup_arguments(void **state) {
  fixture *f = *state;
  const void *r;
  char longname[400];
  assert_int_equal(gpuplan_catalog_find(f->cat, GPUPLAN_KIND_GPU, NULL, &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_find(f->cat, GPUPLAN_KIND_GPU, "", &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_find(f->cat, GPUPLAN_KIND_GPU, " - _", &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_find(f->cat, (gpuplan_kind)9, "h100", &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_find(NULL, GPUPLAN_KIND_GPU, "h100", &r), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_catalog_find(f->cat, GPUPLAN_KIND_GPU, "h100", NULL), GPUPLAN_EMISUSE);
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  assert_int_equal(gpuplan_catalog_find(f->cat, GPUPLAN_KIND_GPU, longname, &r), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_count(NULL, GPUPLAN_KIND_GPU), 0);
  assert_int_equal(gpuplan_catalog_count(f->cat, (gpuplan_kind)7), 0);
}

static void test_catalog__nodes_and_fractional_gpus(void **state) {
  fixture *f = *state;
  const gpuplan_node *n;
  const gpuplan_gpu *g;
  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_ND96asr_v4", &n), GPUPLAN_OK);
  assert_int_equal(n->gpu_count, 8);
  assert_string_equal(n->gpu_id, "a100-sxm4-40gb");
  assert_true(n->price_per_hour == 27.197); /* vms.csv */
  assert_string_equal(n->currency, "USD");
  assert_true(n->nic_count == 8);
  assert_true(n->nic_bw_bytes_s == 25e9); /* 200 Gb/s HDR per GPU */

  assert_int_equal(gpuplan_catalog_node(f->cat, "standard_nv6ads_a10_v5", &n), GPUPLAN_OK);
  assert_string_equal(n->gpu_id, "a10");
  assert_true(fabs(n->gpu_fraction - 1.0 / 6) < 1e-9);
  assert_true(n->gpu_memory_bytes == 4ull << 30);
  assert_int_equal(gpuplan_catalog_gpu(f->cat, n->gpu_id, &g), GPUPLAN_OK);
  assert_true(g->memory_gb == 24);

  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_D16s_v5", &n), GPUPLAN_OK);
  assert_null(n->gpu_id);
  assert_int_equal(n->gpu_count, 0);
  assert_int_equal(n->vcpus, 16);
  assert_true(n->cpu_fp32_flops > 1e11 && n->cpu_fp32_flops < 1e13);

  assert_int_equal(gpuplan_catalog_node(f->cat, "Standard_ND96isr_H100_v5", &n), GPUPLAN_OK);
  assert_int_equal(n->gpu_count, 8); /* not the SkyPilot catalog's 12 */
  assert_true(n->price_per_hour == 98.32);
}

static void test_catalog__models_have_the_published_shapes(void **state) {
  fixture *f = *state;
  const gpuplan_model *m;
  assert_int_equal(gpuplan_catalog_model(f->cat, "llama-2-70b", &m), GPUPLAN_OK);
  assert_int_equal(m->layers, 80);
  assert_int_equal(m->hidden, 8192);
  assert_int_equal(m->heads, 64);
  assert_int_equal(m->kv_heads, 8);
  assert_int_equal(m->ffn_hidden, 28672);
  assert_string_equal(m->ffn_type, "swiglu");
  assert_int_equal(m->vocab, 32000);

  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt-3-175b", &m), GPUPLAN_OK);
  assert_int_equal(m->layers, 96);
  assert_int_equal(m->hidden, 12288);
  assert_int_equal(m->heads, 96);

  assert_int_equal(gpuplan_catalog_model(f->cat, "mixtral-8x7b", &m), GPUPLAN_OK);
  assert_int_equal(m->experts, 8);
  assert_int_equal(m->top_k, 2);

  assert_int_equal(gpuplan_catalog_model(f->cat, "llama-3.1-405b", &m), GPUPLAN_OK);
  assert_int_equal(m->layers, 126);
  assert_int_equal(m->hidden, 16384);
  assert_int_equal(m->vocab, 128256);

  /* The Narayanan et al. Table 1 family (formulas.md B.1). */
  assert_int_equal(gpuplan_catalog_model(f->cat, "megatron-gpt-1008b", &m), GPUPLAN_OK);
  assert_int_equal(m->hidden, 25600);
  assert_int_equal(m->layers, 128);
  assert_int_equal(m->heads, 160);
  assert_int_equal(gpuplan_catalog_model(f->cat, "megatron-gpt-18.4b", &m), GPUPLAN_OK);
  assert_int_equal(m->hidden, 6144);
  assert_int_equal(m->layers, 40);

  assert_int_equal(gpuplan_catalog_model(f->cat, "bert-large", &m), GPUPLAN_OK);
  assert_string_equal(m->arch, "encoder");
  assert_int_equal(gpuplan_catalog_model(f->cat, "gpt2", &m), GPUPLAN_OK);
  assert_int_equal(m->vocab, 50257);
}

static void test_catalog__fabrics(void **state) {
  fixture *f = *state;
  const gpuplan_fabric *fb;
  assert_int_equal(gpuplan_catalog_fabric(f->cat, "ib-hdr", &fb), GPUPLAN_OK);
  assert_true(fb->bw_bytes_s == 25e9);
  assert_string_equal(fb->scope, "inter");
  assert_int_equal(gpuplan_catalog_fabric(f->cat, "nvlink4", &fb), GPUPLAN_OK);
  assert_true(fb->bw_bytes_s == 450e9); /* 900 GB/s bidirectional */
  assert_int_equal(gpuplan_catalog_fabric(f->cat, "pcie5", &fb), GPUPLAN_OK);
  assert_true(fb->bw_bytes_s > 60e9 && fb->bw_bytes_s < 66e9);
  assert_true(gpuplan_catalog_count(f->cat, GPUPLAN_KIND_FABRIC) >= 12);
}

static void test_catalog__field_descriptors_cover_the_structs(void **state) {
  size_t n, i;
  const gpuplan_field *fd;
  size_t sizes[GPUPLAN_KIND_COUNT] = {sizeof(gpuplan_gpu), sizeof(gpuplan_fabric),
                                      sizeof(gpuplan_node), sizeof(gpuplan_model)};
  int k;
  (void)state;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    fd = gpuplan_kind_fields((gpuplan_kind)k, &n);
    assert_non_null(fd);
    assert_true(n > 5);
    assert_string_equal(fd[0].name, "id");
    assert_string_equal(fd[1].name, "name");
    for (i = 0; i < n; i++) assert_true(fd[i].offset < sizes[k]);
  }
  assert_null(gpuplan_kind_fields((gpuplan_kind)99, &n));
  assert_int_equal(n, 0);
  assert_string_equal(gpuplan_kind_name(GPUPLAN_KIND_NODE), "node");
  assert_null(gpuplan_kind_name((gpuplan_kind)99));
}

static void test_catalog__default_is_read_only(void **state) {
  fixture *f = *state;
  assert_int_equal(gpuplan_catalog_import(f->cat, "DELETE FROM gpu"), GPUPLAN_EUNSUPPORTED);
  assert_int_equal(gpuplan_catalog_schema_version(f->cat), gpuplan_catalog_schema_latest());
}

static void test_catalog__layered_file_overrides_and_extends(void **state) {
  fixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  const gpuplan_gpu *g;
  const gpuplan_node *n;
  size_t base = gpuplan_catalog_count(f->cat, GPUPLAN_KIND_GPU);
  tmp_path(path, sizeof path, "layered.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), base);
  /* A new SKU, a changed context reserve, a node that uses a default GPU. */
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
        "bf16_flops,context_bytes,source) VALUES ('mi300x','MI300X','CDNA3',192,"
        "206158430208,5.3e12,1307.4e12,536870912,'AMD MI300X datasheet');"
        "INSERT INTO gpu SELECT * FROM base.gpu WHERE id='h100-sxm5-80gb';"
        "UPDATE gpu SET context_bytes=600000000 WHERE id='h100-sxm5-80gb';"
        "INSERT INTO node(id,name,provider,gpu_id,gpu_count,vcpus,source) VALUES "
        "('lab-box','lab-box','on-prem','a100-sxm4-80gb',4,64,'our rack');"
        "INSERT INTO alias(kind,alias,target) VALUES ('gpu','amd-mi300x','mi300x');"),
      GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), base + 1);
  assert_int_equal(gpuplan_catalog_gpu(cat, "AMD MI300X", &g), GPUPLAN_OK);
  assert_true(g->memory_gb == 192);
  assert_int_equal(gpuplan_catalog_gpu(cat, "h100 sxm", &g), GPUPLAN_OK);
  assert_true(g->context_bytes == 600000000);
  assert_int_equal(gpuplan_catalog_node(cat, "lab-box", &n), GPUPLAN_OK);
  assert_int_equal(n->gpu_count, 4);
  gpuplan_catalog_free(cat);

  /* Reopened, the rows are still there: the import was committed. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_LAYER, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(cat, "mi300x", &g), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  /* Read-only and layered: the built-in rows under the file's. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_READONLY | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), base + 1);
  assert_int_equal(gpuplan_catalog_gpu(cat, "h100 sxm", &g), GPUPLAN_OK);
  assert_true(g->context_bytes == 600000000);
  assert_int_equal(gpuplan_catalog_gpu(cat, "a100-80gb", &g), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_import(cat, "DELETE FROM gpu"), GPUPLAN_EUNSUPPORTED);
  gpuplan_catalog_free(cat);

  /* Alone (not layered), the file has only its own rows; its node refers
   * to a GPU it does not hold, which is an error naming the field. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, 0, &cat), GPUPLAN_ECATALOG);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "gpu_id"));
  assert_null(cat);
  unlink(path);
}

static void test_catalog__import_is_all_or_nothing(void **state) {
  fixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  const gpuplan_gpu *g;
  tmp_path(path, sizeof path, "atomic.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  /* Second statement violates NOT NULL: the first must not persist. */
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
        "context_bytes,source) VALUES ('x1','X1','Y',1,1073741824,1e12,1,'s');"
        "INSERT INTO gpu(id,name) VALUES ('x2','X2');"),
      GPUPLAN_ECATALOG);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "NOT NULL"));
  assert_true(gpuplan_errdetail(f->ctx) != 0);
  assert_int_equal(gpuplan_catalog_gpu(cat, "x1", &g), GPUPLAN_ENOTFOUND);
  /* A dangling reference is caught before commit. */
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO node(id,name,provider,gpu_id,gpu_count,vcpus,source) VALUES "
        "('n1','n1','x','no-such-gpu',1,1,'s')"),
      GPUPLAN_ECATALOG);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "no-such-gpu"));
  /* Only row changes on catalog tables are allowed. */
  assert_int_equal(gpuplan_catalog_import(cat, "DROP TABLE gpu"), GPUPLAN_ECATALOG);
  assert_int_equal(gpuplan_catalog_import(cat, "ATTACH 'x.db' AS x"), GPUPLAN_ECATALOG);
  assert_int_equal(gpuplan_catalog_import(cat, "PRAGMA user_version=99"), GPUPLAN_ECATALOG);
  assert_int_equal(gpuplan_catalog_import(cat, "DELETE FROM base.gpu"), GPUPLAN_ECATALOG);
  assert_int_equal(gpuplan_catalog_import(cat, "CREATE TABLE t(x)"), GPUPLAN_ECATALOG);
  assert_int_equal(gpuplan_catalog_import(cat, NULL), GPUPLAN_EINVAL);
  assert_int_equal(gpuplan_catalog_gpu(cat, "h100 sxm", &g), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  unlink(path);
}

/* The built-in records are generated at build time (mkimage.c) so that
 * opening the default catalog reads no rows.  They must be exactly the rows
 * of the embedded image as the loader reads them through SQLite, with every
 * field check and cross-record check: a layered open of an empty file does
 * that read. */
static void test_catalog__builtin_records_equal_the_image(void **state) {
  fixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  int k;
  tmp_path(path, sizeof path, "builtin-vs-image.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_schema_version(f->cat), gpuplan_catalog_schema_version(cat));
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    size_t nf, i, j, n = gpuplan_catalog_count(f->cat, (gpuplan_kind)k);
    const gpuplan_field *fd = gpuplan_kind_fields((gpuplan_kind)k, &nf);
    assert_true(n > 0);
    assert_int_equal(gpuplan_catalog_count(cat, (gpuplan_kind)k), n);
    for (i = 0; i < n; i++) {
      const char *a = gpuplan_catalog_at(f->cat, (gpuplan_kind)k, i);
      const char *b = gpuplan_catalog_at(cat, (gpuplan_kind)k, i);
      const void *hit = NULL;
      for (j = 0; j < nf; j++) {
        const char *pa = a + fd[j].offset, *pb = b + fd[j].offset;
        switch (fd[j].type) {
        case GPUPLAN_FIELD_STRING: {
          const char *sa = *(const char *const *)pa, *sb = *(const char *const *)pb;
          if (!sa || !sb) assert_true(sa == sb);
          else assert_string_equal(sa, sb);
          break;
        }
        case GPUPLAN_FIELD_REAL: {
          double da = *(const double *)pa, db = *(const double *)pb;
          if (isnan(da) || isnan(db)) assert_true(isnan(da) && isnan(db));
          else assert_memory_equal(&da, &db, sizeof da); /* bit for bit */
          break;
        }
        case GPUPLAN_FIELD_INT:
          assert_true(*(const int64_t *)pa == *(const int64_t *)pb);
          break;
        case GPUPLAN_FIELD_UINT:
          assert_true(*(const uint64_t *)pa == *(const uint64_t *)pb);
          break;
        case GPUPLAN_FIELD_BOOL:
          assert_int_equal(*(const int *)pa, *(const int *)pb);
          break;
        }
      }
      /* Every record is found by its id and name, in both. */
      assert_int_equal(gpuplan_catalog_find(f->cat, (gpuplan_kind)k, *(const char *const *)a, &hit),
                       GPUPLAN_OK);
      assert_ptr_equal(hit, a);
    }
  }
  /* Aliases resolve to the same records. */
  {
    static const char *const names[] = {"a100-80gb", "H100 SXM", "NVIDIA H100 80GB HBM3",
                                        "NVIDIA A100-SXM4-40GB", "H200"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
      const gpuplan_gpu *ga, *gb;
      assert_int_equal(gpuplan_catalog_gpu(f->cat, names[i], &ga), GPUPLAN_OK);
      assert_int_equal(gpuplan_catalog_gpu(cat, names[i], &gb), GPUPLAN_OK);
      assert_string_equal(ga->id, gb->id);
    }
  }
  gpuplan_catalog_free(cat);
  unlink(path);
}

/* L12: an unbounded recursive CTE held the write lock for ever.  The import
 * is stopped at a bound set by its size, rolled back, and said so. */
static void test_catalog__runaway_import_is_stopped(void **state) {
  fixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  const gpuplan_gpu *g;
  tmp_path(path, sizeof path, "runaway.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO gpu SELECT * FROM base.gpu WHERE id='t4';"
        "UPDATE gpu SET id='t4-mine', name='T4 mine';"
        "INSERT INTO catalog_info SELECT 'k'||x,'v' FROM (WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c WHERE x<0);"),
      GPUPLAN_ECATALOG);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "import stopped"));
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "nothing written"));
  assert_int_equal(gpuplan_errdetail(f->ctx) & 0xff, 9 /* SQLITE_INTERRUPT */);
  assert_int_equal(gpuplan_catalog_gpu(cat, "t4-mine", &g), GPUPLAN_ENOTFOUND);
  /* The handler is gone afterwards, and honest work still passes: a CTE
   * that ends, writing a few thousand rows. */
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO catalog_info SELECT 'k'||x,'v' FROM (WITH RECURSIVE c(x) AS "
        "(SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<5000) SELECT x FROM c);"
        "INSERT INTO gpu SELECT * FROM base.gpu WHERE id='t4';"
        "UPDATE gpu SET id='t4-mine', name='T4 mine';"),
      GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_gpu(cat, "t4-mine", &g), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, fixture_setup, fixture_teardown)
    T(test_catalog__gpu_figures_match_the_reference),
    T(test_catalog__every_gpu_has_source_and_sane_units),
    T(test_catalog__lookup_ignores_case_and_separators),
    T(test_catalog__ambiguous_name_lists_candidates),
    T(test_catalog__unknown_name_suggests_nearest),
    T(test_catalog__bad_lookup_arguments),
    T(test_catalog__nodes_and_fractional_gpus),
    T(test_catalog__models_have_the_published_shapes),
    T(test_catalog__fabrics),
    T(test_catalog__field_descriptors_cover_the_structs),
    T(test_catalog__default_is_read_only),
    T(test_catalog__layered_file_overrides_and_extends),
    T(test_catalog__import_is_all_or_nothing),
    T(test_catalog__builtin_records_equal_the_image),
    T(test_catalog__runaway_import_is_stopped),
  };
  return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
