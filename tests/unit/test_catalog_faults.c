/*
 * test_catalog_faults.c: catalog files that are missing, truncated, corrupt,
 * not SQLite, not ours, empty, from the future, from the past (migrated),
 * read-only, or a directory.  Each gives a clear error, never a crash, and
 * nothing leaks.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

typedef struct ffixture {
  counting c;
  gpuplan_ctx *ctx;
} ffixture;

static int setup(void **state) {
  ffixture *f = calloc(1, sizeof *f);
  counting_init(&f->c);
  f->ctx = counting_ctx(&f->c);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  ffixture *f = *state;
  counting_done(&f->c, f->ctx);
  free(f);
  return 0;
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(data, 1, n, fp), n);
  fclose(fp);
}

static void run_sql(const char *path, const char *sql) {
  sqlite3 *db;
  int rc;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
  assert_int_equal(rc, SQLITE_OK);
  sqlite3_close(db);
}

static char *slurp(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  char *buf;
  long len;
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  buf = malloc((size_t)len + 1);
  assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
  buf[len] = '\0';
  fclose(fp);
  *n = (size_t)len;
  return buf;
}

/* A valid user catalog file with a few rows (created through the API). */
static void make_catalog(ffixture *f, const char *path) {
  gpuplan_catalog *cat = NULL;
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_CREATE, &cat),
                   GPUPLAN_OK);
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
        "context_bytes,source,note) VALUES ('g1','G1','A',80,85899345920,2e12,"
        "536870912,'s',printf('%.*c', 3000, 'x'));"
        "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
        "context_bytes,source,note) VALUES ('g2','G2','A',80,85899345920,2e12,"
        "536870912,'s',printf('%.*c', 3000, 'y'));"),
      GPUPLAN_OK);
  gpuplan_catalog_free(cat);
}

static void expect_open(ffixture *f, const char *path, unsigned flags, int code,
                        const char *needle) {
  gpuplan_catalog *cat = (gpuplan_catalog *)f;
  int rc = gpuplan_catalog_open(f->ctx, path, flags, &cat);
  if (rc != code || (needle && !strstr(gpuplan_errmsg(f->ctx), needle)))
    fprintf(stderr, "open %s: rc=%d (%s) msg=%s\n", path, rc, gpuplan_errname(rc),
            gpuplan_errmsg(f->ctx));
  assert_int_equal(rc, code);
  assert_null(cat);
  if (needle) assert_non_null(strstr(gpuplan_errmsg(f->ctx), needle));
}

static void test_faults__missing_file_is_enotfound(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "does-not-exist.sqlite");
  unlink(path);
  expect_open(f, path, 0, GPUPLAN_ENOTFOUND, "no such file");
  expect_open(f, path, GPUPLAN_CATALOG_READONLY, GPUPLAN_ENOTFOUND, path);
}

static void test_faults__bad_arguments(void **state) {
  ffixture *f = *state;
  gpuplan_catalog *cat;
  expect_open(f, "", 0, GPUPLAN_EINVAL, "path");
  expect_open(f, "x.sqlite", 0x100, GPUPLAN_EINVAL, "flags");
  expect_open(f, "x.sqlite", GPUPLAN_CATALOG_READONLY | GPUPLAN_CATALOG_CREATE,
              GPUPLAN_EINVAL, "READONLY");
  assert_int_equal(gpuplan_catalog_open(NULL, "x", 0, &cat), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_catalog_open(f->ctx, "x", 0, NULL), GPUPLAN_EMISUSE);
  assert_int_equal(gpuplan_catalog_open_default(NULL, &cat), GPUPLAN_EMISUSE);
  gpuplan_catalog_free(NULL);
}

static void test_faults__directory_is_eio(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "a-directory");
  mkdir(path, 0755);
  expect_open(f, path, 0, GPUPLAN_EIO, "directory");
  rmdir(path);
}

static void test_faults__text_file_is_not_a_catalog(void **state) {
  ffixture *f = *state;
  char path[512];
  const char text[] = "sku,architecture\nH100,Hopper\n"
                      "this is a CSV file, not a SQLite database at all..........";
  tmp_path(path, sizeof path, "text.sqlite");
  write_file(path, text, sizeof text);
  expect_open(f, path, 0, GPUPLAN_ECATALOG, path);
  assert_int_equal(gpuplan_errdetail(f->ctx) & 0xff, SQLITE_NOTADB);
  unlink(path);
}

static void test_faults__empty_file_without_create(void **state) {
  ffixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  tmp_path(path, sizeof path, "empty.sqlite");
  write_file(path, "", 0);
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "empty");
  /* With CREATE it is initialised to the current schema. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_CREATE, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_schema_version(cat), gpuplan_catalog_schema_latest());
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), 0);
  gpuplan_catalog_free(cat);
  unlink(path);
}

static void test_faults__foreign_sqlite_database(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "foreign.sqlite");
  unlink(path);
  run_sql(path, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "not a gpuplan catalog");
  unlink(path);
}

static void test_faults__future_schema_is_refused(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "future.sqlite");
  make_catalog(f, path);
  run_sql(path, "PRAGMA user_version = 999");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "newer");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "999");
  unlink(path);
}

static void test_faults__old_schema_is_migrated_forward(void **state) {
  ffixture *f = *state;
  char path[512], schema[1024];
  const char *src = getenv("GPUPLAN_SOURCE_DIR");
  gpuplan_catalog *cat = NULL;
  size_t n;
  char *v1;
  assert_non_null(src);
  snprintf(schema, sizeof schema, "%s/catalog/schema/001_init.sql", src);
  v1 = slurp(schema, &n);
  tmp_path(path, sizeof path, "v1.sqlite");
  unlink(path);
  run_sql(path, v1);
  free(v1);
  run_sql(path, "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,"
                "mem_bw_bytes_s,context_bytes,source) VALUES "
                "('old','Old GPU','A',16,17179869184,3e11,1,'s')");
  /* Read-only cannot migrate: a clear error. */
  expect_open(f, path, GPUPLAN_CATALOG_READONLY, GPUPLAN_ECATALOG, "migrated");
  /* Writable: migrated to the latest version, rows kept. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, 0, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_schema_version(cat), gpuplan_catalog_schema_latest());
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), 1);
  gpuplan_catalog_free(cat);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_READONLY, &cat),
                   GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  unlink(path);
}

static void test_faults__truncated_file(void **state) {
  ffixture *f = *state;
  char path[512];
  size_t n;
  char *data;
  tmp_path(path, sizeof path, "truncated.sqlite");
  make_catalog(f, path);
  data = slurp(path, &n);
  assert_true(n > 4096);
  write_file(path, data, n / 2 + 100); /* cut mid-page */
  free(data);
  expect_open(f, path, 0, GPUPLAN_ECATALOG, path);
  unlink(path);
}

static void test_faults__corrupt_pages(void **state) {
  ffixture *f = *state;
  char path[512];
  size_t n, i;
  char *data;
  tmp_path(path, sizeof path, "corrupt.sqlite");
  make_catalog(f, path);
  data = slurp(path, &n);
  /* Scribble over everything after the first page (the header survives). */
  for (i = 4096; i < n; i++) data[i] = (char)(i * 7919u);
  write_file(path, data, n);
  free(data);
  expect_open(f, path, 0, GPUPLAN_ECATALOG, path);
  unlink(path);
}

static void test_faults__read_only_catalog_refuses_writes(void **state) {
  ffixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  tmp_path(path, sizeof path, "ro.sqlite");
  make_catalog(f, path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_READONLY, &cat),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), 2);
  assert_int_equal(gpuplan_catalog_import(cat, "DELETE FROM gpu"), GPUPLAN_EUNSUPPORTED);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "read-only"));
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_GPU), 2);
  gpuplan_catalog_free(cat);
  unlink(path);
}

static void test_faults__bad_rows_in_a_user_file(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "badrows.sqlite");
  make_catalog(f, path);
  /* Written behind gpuplan's back: a negative byte count, a dangling alias. */
  run_sql(path, "UPDATE gpu SET memory_bytes = -5 WHERE id='g1'");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "memory_bytes");
  /* A file made before the typeof() CHECKs, or written with them off. */
  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "UPDATE gpu SET memory_bytes = 1e30 WHERE id='g1'");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "memory_bytes");
  run_sql(path, "UPDATE gpu SET memory_bytes = 17179869184 WHERE id='g1';"
                "INSERT INTO alias VALUES ('gpu','ghost','nope')");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "ghost");
  unlink(path);
}

/* H1: PRAGMA user_version is any 32-bit integer; a negative one indexed the
 * migrations backwards (SIGSEGV, SIGBUS, or library strings run as SQL). */
static void test_faults__negative_schema_version_is_refused(void **state) {
  ffixture *f = *state;
  static const char *const versions[] = {"-1", "-2", "-3", "-1000", "-100000000",
                                         "-2147483648"};
  static const unsigned flags[] = {0, GPUPLAN_CATALOG_LAYER, GPUPLAN_CATALOG_READONLY,
                                   GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER};
  char path[512], sql[64];
  size_t i, j;
  tmp_path(path, sizeof path, "negative.sqlite");
  make_catalog(f, path);
  for (i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    snprintf(sql, sizeof sql, "PRAGMA user_version = %s", versions[i]);
    run_sql(path, sql);
    for (j = 0; j < sizeof flags / sizeof flags[0]; j++) {
      expect_open(f, path, flags[j], GPUPLAN_ECATALOG, versions[i]);
      assert_non_null(strstr(gpuplan_errmsg(f->ctx), path));
      assert_non_null(strstr(gpuplan_errmsg(f->ctx), "schema version"));
    }
  }
  unlink(path);
}

/* H2: text in a numeric column.  New files refuse it by CHECK; a file made
 * before the typeof() CHECKs (here: written with them off) is refused on
 * read, naming table, row and column, instead of dividing by zero. */
static void test_faults__text_in_a_numeric_column(void **state) {
  ffixture *f = *state;
  char path[512];
  gpuplan_catalog *cat = NULL;
  const char *msg;
  tmp_path(path, sizeof path, "textnum.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  /* The review's reproducer, through the API. */
  assert_int_equal(
      gpuplan_catalog_import(cat,
        "INSERT INTO model SELECT 'evil',name,family,arch,params,layers,hidden,heads,"
        "'abc',head_dim,ffn_hidden,ffn_type,vocab,seq_len,max_seq_len,tied_embeddings,"
        "position,norm,linear_bias,experts,top_k,source,note FROM base.model "
        "WHERE id='llama-2-7b'"),
      GPUPLAN_ECATALOG);
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "kv_heads"));
  assert_int_equal(gpuplan_catalog_count(cat, GPUPLAN_KIND_MODEL),
                   gpuplan_catalog_count(cat, GPUPLAN_KIND_MODEL));
  gpuplan_catalog_free(cat);

  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "INSERT INTO model(id,name,family,arch,params,layers,hidden,heads,kv_heads,"
                "head_dim,ffn_hidden,ffn_type,vocab,seq_len,tied_embeddings,position,norm,"
                "linear_bias,source) VALUES ('evil','Evil','x','decoder',7e9,32,4096,32,"
                "'abc',128,11008,'swiglu',32000,4096,0,'rope','rmsnorm',0,'s')");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "kv_heads");
  msg = gpuplan_errmsg(f->ctx);
  assert_non_null(strstr(msg, path));
  assert_non_null(strstr(msg, "table model"));
  assert_non_null(strstr(msg, "'evil'"));
  assert_non_null(strstr(msg, "not a number"));
  expect_open(f, path, GPUPLAN_CATALOG_READONLY | GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG,
              "kv_heads");
  /* A blob, a real where an integer belongs, text in a REAL column. */
  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "UPDATE model SET kv_heads = x'08' WHERE id='evil'");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "blob");
  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "UPDATE model SET kv_heads = 2.5 WHERE id='evil'");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "whole number");
  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "UPDATE model SET kv_heads = 8, params = 'seven' WHERE id='evil'");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "params");
  run_sql(path, "UPDATE model SET params = 7e9 WHERE id='evil'");
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_LAYER, &cat), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  unlink(path);
}

/* L8: numbers no part has, which overflowed or divided by zero downstream. */
static void test_faults__hostile_numbers_are_range_checked(void **state) {
  ffixture *f = *state;
  static const struct {
    const char *set, *field;
  } cases[] = {
      {"context_bytes = 9223372036854775807", "context_bytes"},
      {"context_bytes = -1", "context_bytes"},
      {"bf16_flops = 0", "bf16_flops"},
      {"bf16_flops = 9e999", "bf16_flops"}, /* +inf */
      {"bf16_flops = -989e12", "bf16_flops"},
      {"mem_bw_bytes_s = 3.35", "mem_bw_bytes_s"}, /* TB/s typed as bytes/s */
      {"memory_bytes = 80", "memory_bytes"},
      {"fp8_flops = 1979", "fp8_flops"},
  };
  char path[512], sql[256];
  gpuplan_catalog *cat = NULL;
  const gpuplan_gpu *g;
  size_t i;
  tmp_path(path, sizeof path, "hostile.sqlite");
  unlink(path);
  assert_int_equal(gpuplan_catalog_open(f->ctx, path,
                                        GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER, &cat),
                   GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_import(cat, "INSERT INTO gpu SELECT * FROM base.gpu "
                                               "WHERE id='h100-sxm5-80gb';"
                                               "UPDATE gpu SET id='zz', name='ZZ'"),
                   GPUPLAN_OK);
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* Through an import: refused before commit, the field named. */
    snprintf(sql, sizeof sql, "UPDATE gpu SET %s WHERE id='zz'", cases[i].set);
    assert_int_equal(gpuplan_catalog_import(cat, sql), GPUPLAN_ECATALOG);
    if (!strstr(gpuplan_errmsg(f->ctx), cases[i].field) ||
        !strstr(gpuplan_errmsg(f->ctx), "'zz'"))
      fprintf(stderr, "%s: %s\n", cases[i].set, gpuplan_errmsg(f->ctx));
    assert_non_null(strstr(gpuplan_errmsg(f->ctx), cases[i].field));
    assert_non_null(strstr(gpuplan_errmsg(f->ctx), "'zz'"));
    assert_int_equal(gpuplan_catalog_gpu(cat, "zz", &g), GPUPLAN_OK);
    assert_true(g->context_bytes < (1ull << 40) && g->bf16_flops == 989e12);
  }
  gpuplan_catalog_free(cat);
  /* Written behind gpuplan's back: refused on open. */
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(sql, sizeof sql, "PRAGMA ignore_check_constraints=ON; "
                              "UPDATE gpu SET %s WHERE id='zz'", cases[i].set);
    run_sql(path, sql);
    expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, cases[i].field);
    assert_non_null(strstr(gpuplan_errmsg(f->ctx), "out of range"));
    run_sql(path, "DELETE FROM gpu; PRAGMA ignore_check_constraints=ON;");
    assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_LAYER, &cat),
                     GPUPLAN_OK);
    assert_int_equal(gpuplan_catalog_import(cat, "INSERT INTO gpu SELECT * FROM base.gpu "
                                                 "WHERE id='h100-sxm5-80gb';"
                                                 "UPDATE gpu SET id='zz', name='ZZ'"),
                     GPUPLAN_OK);
    gpuplan_catalog_free(cat);
  }
  /* The other kinds: a node with no NICs or no share of a GPU, a model
   * with zero layers or a vocabulary past any tokenizer. */
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_LAYER, &cat), GPUPLAN_OK);
  assert_int_equal(gpuplan_catalog_import(cat, "INSERT INTO node SELECT * FROM base.node "
                                               "WHERE id='standard_nd96asr_v4';"
                                               "INSERT INTO model SELECT * FROM base.model "
                                               "WHERE id='llama-2-7b'"),
                   GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  run_sql(path, "UPDATE node SET nic_count = 0");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "nic_count");
  run_sql(path, "UPDATE node SET nic_count = 8, gpu_fraction = 0");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "gpu_fraction");
  run_sql(path, "UPDATE node SET gpu_fraction = 1;"
                "PRAGMA ignore_check_constraints=ON; UPDATE model SET layers = 0");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "layers");
  run_sql(path, "UPDATE model SET layers = 32, vocab = 9223372036854775807");
  expect_open(f, path, GPUPLAN_CATALOG_LAYER, GPUPLAN_ECATALOG, "vocab");
  run_sql(path, "UPDATE model SET vocab = 32000");
  assert_int_equal(gpuplan_catalog_open(f->ctx, path, GPUPLAN_CATALOG_LAYER, &cat), GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  unlink(path);
}

/* A row without an id (TEXT PRIMARY KEY admits NULL in SQLite) and a catalog
 * table replaced by a view (a recursive one ran at every open, forever). */
static void test_faults__null_ids_and_views_are_refused(void **state) {
  ffixture *f = *state;
  char path[512];
  tmp_path(path, sizeof path, "nullid.sqlite");
  make_catalog(f, path);
  run_sql(path, "PRAGMA ignore_check_constraints=ON;"
                "INSERT INTO gpu(id,name,architecture,memory_gb,memory_bytes,mem_bw_bytes_s,"
                "context_bytes,source) VALUES (NULL,'G0','A',80,85899345920,2e12,1,'s');"
                "INSERT INTO node(id,name,provider,gpu_id,gpu_count,vcpus,source) "
                "VALUES ('n1','N1','p','g2',1,1,'s')");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "id");
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "table gpu"));
  unlink(path);

  make_catalog(f, path);
  run_sql(path, "DROP TABLE fabric;"
                "CREATE VIEW fabric(id,name,kind,scope,generation,bw_bytes_s,latency_s,"
                "source,note) AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 "
                "FROM c) SELECT 'f'||x,'F','pcie','intra',NULL,1e9,1e-6,'s',NULL FROM c "
                "WHERE x<0");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "view");
  assert_non_null(strstr(gpuplan_errmsg(f->ctx), "fabric"));
  expect_open(f, path, GPUPLAN_CATALOG_LAYER | GPUPLAN_CATALOG_READONLY, GPUPLAN_ECATALOG,
              "view");
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
    T(test_faults__missing_file_is_enotfound),
    T(test_faults__bad_arguments),
    T(test_faults__directory_is_eio),
    T(test_faults__text_file_is_not_a_catalog),
    T(test_faults__empty_file_without_create),
    T(test_faults__foreign_sqlite_database),
    T(test_faults__future_schema_is_refused),
    T(test_faults__old_schema_is_migrated_forward),
    T(test_faults__truncated_file),
    T(test_faults__corrupt_pages),
    T(test_faults__read_only_catalog_refuses_writes),
    T(test_faults__bad_rows_in_a_user_file),
    T(test_faults__negative_schema_version_is_refused),
    T(test_faults__text_in_a_numeric_column),
    T(test_faults__hostile_numbers_are_range_checked),
    T(test_faults__null_ids_and_views_are_refused),
  };
  return cmocka_run_group_tests_name("catalog_faults", tests, NULL, NULL);
}
