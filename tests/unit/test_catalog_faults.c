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
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
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
  run_sql(path, "UPDATE gpu SET memory_bytes = 1e30 WHERE id='g1'");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "memory_bytes");
  run_sql(path, "UPDATE gpu SET memory_bytes = 1024 WHERE id='g1';"
                "INSERT INTO alias VALUES ('gpu','ghost','nope')");
  expect_open(f, path, 0, GPUPLAN_ECATALOG, "ghost");
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
  };
  return cmocka_run_group_tests_name("catalog_faults", tests, NULL, NULL);
}
