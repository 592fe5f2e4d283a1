/*
 * mkimage.c: a build-time host tool that turns the catalog's SQL (the single
 * source: the files under catalog/schema, then those under catalog/data) into
 * the built-in catalog the library embeds (issue 10 item 4; review SP-1):
 *
 *   1. a SQLite database image: the SQL run once, here, then
 *      sqlite3_serialize()d.  gpuplan_catalog_open_default() hands it to
 *      sqlite3_deserialize() instead of running ~100 KB of SQL at every open,
 *      and a layered open attaches it as schema "base";
 *   2. the same rows as const record structs (gpuplan_gpu[], ...) and the
 *      aliases resolved to record indexes, read from that database with the
 *      loader's SELECTs and checked with the loader's field checks
 *      (fields.c), so that opening the default catalog reads no rows.
 *
 *   gpuplan_mkimage OUT.c SCHEMA.sql... -- DATA.sql...
 *
 * Every check build_default() used to make at each open is made here once:
 * each statement must succeed, the schema version must equal the number of
 * schema files, the rows must be referentially whole, every column must pass
 * its field check and every alias must name a record.  A failure names the
 * file or the row and stops the build.
 *
 * This is not part of the library: it runs on the build host, uses the C
 * library's allocator, and exits on failure.
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog_int.h"

static void die(const char *what, const char *detail) {
  fprintf(stderr, "gpuplan_mkimage: %s: %s\n", what, detail);
  exit(1);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf;
  long n = 0;
  if (!f) die(path, "cannot open");
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
    die(path, "cannot size");
  buf = malloc((size_t)n + 1);
  if (!buf) die(path, "out of memory");
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) die(path, "cannot read");
  fclose(f);
  buf[n] = '\0';
  if (strlen(buf) != (size_t)n) die(path, "contains a NUL byte");
  return buf;
}

static void run(sqlite3 *db, const char *name, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    die(name, err ? err : sqlite3_errmsg(db));
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(sql, sqlite3_errmsg(db));
  return st;
}

/* A C string literal; '?' is escaped against trigraphs, bytes >= 0x80 and
 * controls as octal. */
static void put_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\' || c == '?') fprintf(f, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) fprintf(f, "\\%03o", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void put_double(FILE *f, double v) {
  char buf[64];
  if (isnan(v)) {
    fputs("NAN", f);
    return;
  }
  snprintf(buf, sizeof buf, "%.17g", v);
  /* Make it a floating constant, so that no integer literal overflows. */
  fputs(buf, f);
  if (!strpbrk(buf, ".eEn")) fputs(".0", f);
}

/* The records of one kind; ids[] receives their ids, in order, for aliases. */
static size_t emit_kind(FILE *f, sqlite3 *db, int kind, char ***ids_out) {
  const gpuplan__kind_info *ki = &gpuplan__kinds[kind];
  char sql[4096], why[256];
  size_t i, n = 0, len = 0, cap = 0;
  char **ids = NULL;
  sqlite3_stmt *st;

  /* The loader's query for an unlayered catalog (catalog.c select_sql). */
  len = (size_t)snprintf(sql, sizeof sql, "SELECT ");
  for (i = 0; i < ki->nfields; i++)
    len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", i ? "," : "",
                            ki->fields[i].name);
  snprintf(sql + len, sizeof sql - len, " FROM main.%s ORDER BY 1", ki->table);
  st = prepare(db, sql);

  fprintf(f, "static const %s builtin_%s[] = {\n",
          kind == GPUPLAN_KIND_GPU      ? "gpuplan_gpu"
          : kind == GPUPLAN_KIND_FABRIC ? "gpuplan_fabric"
          : kind == GPUPLAN_KIND_NODE   ? "gpuplan_node"
                                        : "gpuplan_model",
          ki->table);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *id = (const char *)sqlite3_column_text(st, 0);
    fputs("  {", f);
    for (i = 0; i < ki->nfields; i++) {
      const gpuplan_field *fd = &ki->fields[i];
      int col = (int)i, null = sqlite3_column_type(st, col) == SQLITE_NULL;
      if (gpuplan__field_check(fd, &ki->checks[i], st, col, why, sizeof why)) {
        char where[512];
        snprintf(where, sizeof where, "table %s, row '%s', column %s", ki->table,
                 id ? id : "(NULL)", fd->name);
        die(where, why);
      }
      fprintf(f, "%s.%s = ", i ? ", " : "", fd->name);
      switch (fd->type) {
      case GPUPLAN_FIELD_STRING:
        if (null) fputs("NULL", f);
        else put_string(f, (const char *)sqlite3_column_text(st, col));
        break;
      case GPUPLAN_FIELD_INT:
        fprintf(f, "INT64_C(%lld)", (long long)sqlite3_column_int64(st, col));
        break;
      case GPUPLAN_FIELD_UINT:
        fprintf(f, "UINT64_C(%llu)", (unsigned long long)sqlite3_column_int64(st, col));
        break;
      case GPUPLAN_FIELD_BOOL:
        fprintf(f, "%d", sqlite3_column_int64(st, col) != 0);
        break;
      case GPUPLAN_FIELD_REAL:
        put_double(f, null ? NAN : sqlite3_column_double(st, col));
        break;
      }
    }
    fputs("},\n", f);
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      ids = realloc(ids, cap * sizeof *ids);
      if (!ids) die("(image)", "out of memory");
    }
    ids[n] = malloc(strlen(id) + 1);
    if (!ids[n]) die("(image)", "out of memory");
    strcpy(ids[n], id);
    n++;
  }
  sqlite3_finalize(st);
  /* An empty array is not valid C: keep one zeroed record that n hides. */
  if (n == 0) fputs("  {0},\n", f);
  fputs("};\n\n", f);
  *ids_out = ids;
  return n;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv) {
  sqlite3 *db = NULL;
  sqlite3_int64 size = 0, k;
  sqlite3_stmt *st;
  unsigned char *img;
  const char *out;
  char tmp[4096];
  char **ids[GPUPLAN_KIND_COUNT];
  size_t n[GPUPLAN_KIND_COUNT], naliases = 0, i;
  FILE *f;
  int a, nschema = 0, data = 0, version = 0, kind;

  if (argc < 3) {
    fprintf(stderr, "usage: gpuplan_mkimage OUT.c SCHEMA.sql... -- DATA.sql...\n");
    return 2;
  }
  out = argv[1];
  if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
      SQLITE_OK)
    die(":memory:", "cannot open");
  /* Everything is written in one transaction with the foreign keys on,
   * exactly as build_default() did at run time. */
  run(db, "(image)", "PRAGMA foreign_keys=ON; BEGIN");
  for (a = 2; a < argc; a++) {
    char *sql;
    if (strcmp(argv[a], "--") == 0) {
      data = 1;
      continue;
    }
    sql = slurp(argv[a]);
    run(db, argv[a], sql);
    free(sql);
    if (!data) nschema++;
  }
  run(db, "(image)", "COMMIT");
  st = prepare(db, "PRAGMA user_version");
  if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (version != nschema) {
    snprintf(tmp, sizeof tmp, "schema version %d after %d schema files", version, nschema);
    die("(image)", tmp);
  }
  st = prepare(db, "PRAGMA foreign_key_check");
  if (sqlite3_step(st) == SQLITE_ROW) {
    snprintf(tmp, sizeof tmp, "dangling reference in table %s, row %lld",
             (const char *)sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1));
    die("(image)", tmp);
  }
  sqlite3_finalize(st);
  /* Compact the pages (no free list): the image is as small as the data,
   * and the same bytes for the same SQL. */
  run(db, "(image)", "VACUUM");
  img = sqlite3_serialize(db, "main", &size, 0);
  if (!img || size <= 0) die("(image)", "sqlite3_serialize failed");

  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  f = fopen(tmp, "wb");
  if (!f) die(tmp, "cannot create");
  fprintf(f,
          "/* Generated by gpuplan_mkimage from catalog/schema and catalog/data;"
          " do not edit. */\n"
          "#include <math.h>\n#include <stdint.h>\n\n"
          "#include \"catalog/embedded.h\"\n\n"
          "/* The SQLite database image (schema version %d, %lld bytes). */\n"
          "_Alignas(16) const unsigned char gpuplan__catalog_image[] = {\n",
          version, (long long)size);
  for (k = 0; k < size; k++)
    fprintf(f, "%u,%s", (unsigned)img[k], (k % 24 == 23) ? "\n" : "");
  fprintf(f, "\n};\nconst size_t gpuplan__catalog_image_size = %lld;\n\n", (long long)size);
  sqlite3_free(img);

  /* The records, from the same database. */
  fputs("/* Its rows as records, in id order. */\n", f);
  for (kind = 0; kind < GPUPLAN_KIND_COUNT; kind++) n[kind] = emit_kind(f, db, kind, &ids[kind]);

  /* The aliases, in the order the loader's query returns them. */
  fputs("static const gpuplan__builtin_alias builtin_aliases[] = {\n", f);
  st = prepare(db, "SELECT kind, alias, target FROM main.alias");
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *kn = (const char *)sqlite3_column_text(st, 0);
    const char *alias = (const char *)sqlite3_column_text(st, 1);
    const char *target = (const char *)sqlite3_column_text(st, 2);
    char **hit;
    for (kind = 0; kind < GPUPLAN_KIND_COUNT; kind++)
      if (kn && strcmp(kn, gpuplan__kinds[kind].name) == 0) break;
    if (kind == GPUPLAN_KIND_COUNT || !alias || !target) die("alias", alias ? alias : "(NULL)");
    hit = n[kind] ? bsearch(&target, ids[kind], n[kind], sizeof *ids[kind], cmp_str) : NULL;
    if (!hit) {
      snprintf(tmp, sizeof tmp, "target %s '%s' is not in the catalog", kn, target);
      die(alias, tmp);
    }
    fprintf(f, "  {%d, ", kind);
    put_string(f, alias);
    fprintf(f, ", %u},\n", (unsigned)(hit - ids[kind]));
    naliases++;
  }
  sqlite3_finalize(st);
  if (naliases == 0) fputs("  {0, 0, 0},\n", f);
  fputs("};\n\n", f);

  fputs("const gpuplan__builtin gpuplan__catalog_builtin = {\n"
        "  {builtin_gpu, builtin_fabric, builtin_node, builtin_model},\n",
        f);
  fprintf(f, "  {%u, %u, %u, %u},\n  builtin_aliases, %u, %d\n};\n", (unsigned)n[0],
          (unsigned)n[1], (unsigned)n[2], (unsigned)n[3], (unsigned)naliases, version);
  if (fclose(f) != 0) die(tmp, "cannot write");

  for (kind = 0; kind < GPUPLAN_KIND_COUNT; kind++) {
    for (i = 0; i < n[kind]; i++) free(ids[kind][i]);
    free(ids[kind]);
  }
  sqlite3_close(db);
  if (rename(tmp, out) != 0) die(out, "cannot rename into place");
  return 0;
}
