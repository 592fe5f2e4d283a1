/*
 * catalog.c: opening catalogs (embedded default, file, file layered over the
 * default), schema migrations, the in-memory snapshot, and imports.
 *
 * The default catalog is built at build time (mkimage.c): a SQLite database
 * image that is deserialized, read-only and in place, and the same rows as
 * const records, so that opening it runs no SQL and copies no rows.  Files
 * are read through SQLite, and every column of every row is checked on the
 * way in (fields.c): a file is outside data.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "catalog/catalog_int.h"
#include "catalog/embedded.h"

static int schema_latest(void) {
  int n = 0;
  while (gpuplan__catalog_schema[n].name) n++;
  return n;
}

int gpuplan_catalog_schema_latest(void) { return schema_latest(); }

/* Report a SQLite failure as GPUPLAN_ECATALOG (or ENOMEM) with its detail. */
static int sqlerr(gpuplan_ctx *ctx, sqlite3 *db, int rc, const char *where,
                  const char *what) {
  int ext = db ? sqlite3_extended_errcode(db) : rc;
  const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if ((rc & 0xff) == SQLITE_NOMEM) return gpuplan__nomem(ctx);
  gpuplan__error(ctx, GPUPLAN_ECATALOG, "catalog %s: %s: %s", where, what, msg);
  gpuplan__error_detail(ctx, ext);
  return GPUPLAN_ECATALOG;
}

static int exec(gpuplan_ctx *ctx, sqlite3 *db, const char *where,
                const char *sql) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return sqlerr(ctx, db, rc, where, "SQL failed");
  return GPUPLAN_OK;
}

static int int_pragma(gpuplan_ctx *ctx, sqlite3 *db, const char *where,
                      const char *sql, int *out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return GPUPLAN_OK;
  }
  rc = sqlerr(ctx, db, rc, where, "cannot read the database");
  sqlite3_finalize(st);
  return rc;
}

/* Apply schema files from version `from` (exclusive) to the latest. */
static int apply_schema(gpuplan_ctx *ctx, sqlite3 *db, const char *where,
                        int from) {
  int v;
  /* check_schema refuses any other version before it gets here (H1). */
  if (NEVER(from < 0 || from > schema_latest()))
    return gpuplan__error(ctx, GPUPLAN_ECATALOG, "catalog %s: no migration from "
                          "schema version %d", where, from);
  for (v = from; gpuplan__catalog_schema[v].name; v++) {
    int rc = sqlite3_exec(db, gpuplan__catalog_schema[v].text, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      char what[128];
      snprintf(what, sizeof what, "migration %s failed",
               gpuplan__catalog_schema[v].name);
      return sqlerr(ctx, db, rc, where, what);
    }
  }
  return GPUPLAN_OK;
}

/*
 * Put the built-in catalog image into schema `name` of db.  The image was
 * built and checked (schema version, foreign keys, field checks) by
 * gpuplan_mkimage at build time.
 *
 * Alone, the default catalog is never written: the image is used in place,
 * const data of the library, and SQLITE_DESERIALIZE_READONLY makes SQLite
 * read its pages where they lie and refuse every write, so casting the const
 * away is safe and nothing is copied.  Under a layered file the image gets a
 * private, writable copy, as the schema "base" always was: BEGIN IMMEDIATE
 * (imports, migrations) takes a write lock on every attached database and
 * fails on a read-only one.  The authorizer still refuses writes to "base".
 * The copy is SQLite's own memory (it frees it on close), which the
 * context's allocator cannot cover (style.md 9.5).
 */
static int load_image(gpuplan_ctx *ctx, sqlite3 *db, const char *where,
                      const char *name, int private_copy) {
  sqlite3_int64 n = (sqlite3_int64)gpuplan__catalog_image_size;
  unsigned char *data = (unsigned char *)gpuplan__catalog_image;
  unsigned flags = SQLITE_DESERIALIZE_READONLY;
  int rc;
  if (private_copy) {
    data = sqlite3_malloc64((sqlite3_uint64)n);
    if (!data) return gpuplan__nomem(ctx);
    memcpy(data, gpuplan__catalog_image, (size_t)n);
    flags = SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE;
  }
  /* On failure SQLite frees a FREEONCLOSE buffer itself. */
  rc = sqlite3_deserialize(db, name, data, n, n, flags);
  if (rc != SQLITE_OK)
    return sqlerr(ctx, db, rc, where, "cannot load the built-in catalog image");
  return GPUPLAN_OK;
}

/* The embedded default catalog: an in-memory database over the image. */
static int open_default_db(gpuplan_ctx *ctx, sqlite3 **out) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(":memory:", &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                               SQLITE_OPEN_NOMUTEX,
                           NULL);
  if (rc != SQLITE_OK) {
    rc = sqlerr(ctx, db, rc, "(default)", "cannot open an in-memory database");
    sqlite3_close(db);
    return rc;
  }
  sqlite3_extended_result_codes(db, 1);
  rc = load_image(ctx, db, "(default)", "main", 0);
  if (rc != GPUPLAN_OK) {
    sqlite3_close(db);
    return rc;
  }
  *out = db;
  return GPUPLAN_OK;
}

static void catalog_release(gpuplan_catalog *cat);

static int catalog_alloc(gpuplan_ctx *ctx, const char *path,
                         gpuplan_catalog **out) {
  gpuplan_catalog *cat = gpuplan__calloc(ctx, 1, sizeof *cat);
  if (!cat) return gpuplan__nomem(ctx);
  cat->ctx = ctx;
  cat->path = gpuplan__strdup(ctx, path);
  if (!cat->path) {
    gpuplan__free(ctx, cat);
    return gpuplan__nomem(ctx);
  }
  gpuplan__ctx_ref(ctx);
  *out = cat;
  return GPUPLAN_OK;
}

/* --- snapshot ------------------------------------------------------------ */

static void snapshot_free(gpuplan_ctx *ctx, gpuplan__snapshot *s) {
  int k;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    if (!s->builtin) gpuplan__free(ctx, s->t[k].recs);
    gpuplan__free(ctx, s->t[k].keys);
  }
  gpuplan__arena_free(&s->arena);
  memset(s, 0, sizeof *s);
}

/* SELECT for one table: the default rows under the user's when layered. */
static int select_sql(gpuplan_catalog *cat, const gpuplan__kind_info *ki,
                      gpuplan__buf *b) {
  size_t i;
  gpuplan__buf cols;
  gpuplan__buf_init(&cols, cat->ctx);
  for (i = 0; i < ki->nfields; i++)
    gpuplan__buf_printf(&cols, "%s%s", i ? "," : "", ki->fields[i].name);
  if (cols.failed) {
    gpuplan__buf_dispose(&cols);
    return gpuplan__nomem(cat->ctx);
  }
  if (cat->layered)
    gpuplan__buf_printf(b,
                        "SELECT %s FROM main.%s UNION ALL SELECT %s FROM base.%s "
                        "WHERE id NOT IN (SELECT id FROM main.%s) ORDER BY 1",
                        cols.ptr, ki->table, cols.ptr, ki->table, ki->table);
  else
    gpuplan__buf_printf(b, "SELECT %s FROM main.%s ORDER BY 1", cols.ptr,
                        ki->table);
  gpuplan__buf_dispose(&cols);
  return b->failed ? gpuplan__nomem(cat->ctx) : GPUPLAN_OK;
}

/* Refuse a column that fails its check, naming table, row and column. */
static int bad_column(gpuplan_catalog *cat, const gpuplan__kind_info *ki,
                      const gpuplan_field *f, sqlite3_stmt *st, const char *why) {
  const char *id = sqlite3_column_type(st, 0) == SQLITE_TEXT
                       ? (const char *)sqlite3_column_text(st, 0)
                       : NULL;
  int rc;
  if (id)
    rc = gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                        "catalog %s: table %s, row '%s', column %s %s", cat->path,
                        ki->table, id, f->name, why);
  else
    rc = gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                        "catalog %s: table %s, a row without a text id: column %s %s",
                        cat->path, ki->table, f->name, why);
  return rc;
}

static int read_column(gpuplan_catalog *cat, gpuplan__snapshot *s,
                       const gpuplan__kind_info *ki, size_t i, sqlite3_stmt *st,
                       char *rec) {
  const gpuplan_field *f = &ki->fields[i];
  void *p = rec + f->offset;
  int col = (int)i, null;
  char why[200];
  if (gpuplan__field_check(f, &ki->checks[i], st, col, why, sizeof why))
    return bad_column(cat, ki, f, st, why);
  null = sqlite3_column_type(st, col) == SQLITE_NULL;
  switch (f->type) {
  case GPUPLAN_FIELD_STRING: {
    const char *txt;
    if (null) {
      *(const char **)p = NULL;
      return GPUPLAN_OK;
    }
    txt = (const char *)sqlite3_column_text(st, col);
    if (!txt) return gpuplan__nomem(cat->ctx);
    *(const char **)p = gpuplan__arena_strdup(&s->arena, txt);
    if (!*(const char **)p) return gpuplan__nomem(cat->ctx);
    return GPUPLAN_OK;
  }
  case GPUPLAN_FIELD_INT:
  case GPUPLAN_FIELD_BOOL:
  case GPUPLAN_FIELD_UINT: {
    /* The check made it a whole number in range (or an allowed NULL: 0). */
    sqlite3_int64 v = null ? 0 : sqlite3_column_int64(st, col);
    if (f->type == GPUPLAN_FIELD_UINT)
      *(uint64_t *)p = (uint64_t)v;
    else if (f->type == GPUPLAN_FIELD_BOOL)
      *(int *)p = v != 0;
    else
      *(int64_t *)p = v;
    return GPUPLAN_OK;
  }
  case GPUPLAN_FIELD_REAL:
    *(double *)p = null ? NAN : sqlite3_column_double(st, col);
    return GPUPLAN_OK;
  }
  return GPUPLAN_OK;
}

static int load_table(gpuplan_catalog *cat, gpuplan__snapshot *s,
                      gpuplan_kind kind) {
  const gpuplan__kind_info *ki = &gpuplan__kinds[kind];
  gpuplan__table *t = &s->t[kind];
  gpuplan__buf sql;
  sqlite3_stmt *st = NULL;
  size_t cap = 0;
  int rc;

  gpuplan__buf_init(&sql, cat->ctx);
  rc = select_sql(cat, ki, &sql);
  if (rc) {
    gpuplan__buf_dispose(&sql);
    return rc;
  }
  rc = sqlite3_prepare_v2(cat->db, sql.ptr, -1, &st, NULL);
  gpuplan__buf_dispose(&sql);
  if (rc != SQLITE_OK) {
    char what[96];
    snprintf(what, sizeof what, "cannot read table '%s'", ki->table);
    return sqlerr(cat->ctx, cat->db, rc, cat->path, what);
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char *rec;
    size_t i;
    if (t->n == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      void *nr = gpuplan__realloc(cat->ctx, t->recs, ncap * ki->size);
      if (!nr) {
        sqlite3_finalize(st);
        return gpuplan__nomem(cat->ctx);
      }
      t->recs = nr;
      cap = ncap;
    }
    rec = (char *)t->recs + t->n * ki->size;
    memset(rec, 0, ki->size);
    for (i = 0; i < ki->nfields; i++) {
      int r = read_column(cat, s, ki, i, st, rec);
      if (r) {
        sqlite3_finalize(st);
        return r;
      }
    }
    t->n++;
  }
  if (rc != SQLITE_DONE) {
    char what[96];
    snprintf(what, sizeof what, "cannot read table '%s'", ki->table);
    rc = sqlerr(cat->ctx, cat->db, rc, cat->path, what);
    sqlite3_finalize(st);
    return rc;
  }
  sqlite3_finalize(st);
  return GPUPLAN_OK;
}

/* Build a complete new snapshot; on failure *s is left empty. */
static int load_snapshot(gpuplan_catalog *cat, gpuplan__snapshot *s) {
  int k, rc = GPUPLAN_OK;
  memset(s, 0, sizeof *s);
  gpuplan__arena_init(&s->arena, cat->ctx);
  for (k = 0; rc == GPUPLAN_OK && k < GPUPLAN_KIND_COUNT; k++)
    rc = load_table(cat, s, (gpuplan_kind)k);
  if (rc == GPUPLAN_OK) rc = gpuplan__catalog_index(cat, s);
  if (rc != GPUPLAN_OK) snapshot_free(cat->ctx, s);
  return rc;
}

/* --- opening ------------------------------------------------------------- */

static int finish_open(gpuplan_catalog *cat, gpuplan_catalog **out) {
  int rc = int_pragma(cat->ctx, cat->db, cat->path, "PRAGMA main.user_version",
                      &cat->schema_version);
  if (rc == GPUPLAN_OK) rc = load_snapshot(cat, &cat->snap);
  if (rc == GPUPLAN_OK && cat->constraint_error[0]) {
    gpuplan__error(cat->ctx, GPUPLAN_ECATALOG,
                   "catalog %s: rows break the schema's constraints (%s); the "
                   "file was written with them off", cat->path,
                   cat->constraint_error);
    gpuplan__error_detail(cat->ctx, SQLITE_CONSTRAINT);
    rc = GPUPLAN_ECATALOG;
  }
  if (rc != GPUPLAN_OK) {
    catalog_release(cat);
    return rc;
  }
  gpuplan__clear(cat->ctx);
  *out = cat;
  return GPUPLAN_OK;
}

/* The built-in records, made and checked at build time: no copy. */
static int load_builtin(gpuplan_catalog *cat, gpuplan__snapshot *s) {
  const gpuplan__builtin *b = &gpuplan__catalog_builtin;
  int k, rc;
  memset(s, 0, sizeof *s);
  gpuplan__arena_init(&s->arena, cat->ctx);
  s->builtin = 1;
  for (k = 0; k < GPUPLAN_KIND_COUNT; k++) {
    s->t[k].recs = (void *)b->recs[k]; /* const: snapshot_free skips them */
    s->t[k].n = b->n[k];
  }
  rc = gpuplan__catalog_index_builtin(cat, s);
  if (rc != GPUPLAN_OK) snapshot_free(cat->ctx, s);
  return rc;
}

int gpuplan_catalog_open_default(gpuplan_ctx *ctx, gpuplan_catalog **out) {
  gpuplan_catalog *cat = NULL;
  int rc;
  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx) return GPUPLAN_EMISUSE;
  GPUPLAN_TRY(catalog_alloc(ctx, "(default)", &cat));
  cat->is_default = 1;
  cat->readonly = 1;
  /* The image's schema version was checked against the schema files by
   * gpuplan_mkimage; reading it back would cost a statement. */
  cat->schema_version = gpuplan__catalog_builtin.schema_version;
  rc = open_default_db(ctx, &cat->db);
  if (rc == GPUPLAN_OK) rc = load_builtin(cat, &cat->snap);
  if (rc != GPUPLAN_OK) {
    catalog_release(cat);
    return rc;
  }
  gpuplan__clear(ctx);
  *out = cat;
  return GPUPLAN_OK;
}

/* Attach the built-in catalog, read-only, as schema "base" of cat->db. */
static int attach_default(gpuplan_catalog *cat) {
  GPUPLAN_TRY(exec(cat->ctx, cat->db, cat->path, "ATTACH ':memory:' AS base"));
  GPUPLAN_TRY(load_image(cat->ctx, cat->db, cat->path, "base", 1));
  cat->layered = 1;
  return GPUPLAN_OK;
}

/* Bring an opened file to the current schema, or refuse it. */
static int check_schema(gpuplan_catalog *cat, unsigned flags) {
  gpuplan_ctx *ctx = cat->ctx;
  int version = 0, ntables = 0, latest = schema_latest(), rc;

  GPUPLAN_TRY(int_pragma(ctx, cat->db, cat->path, "PRAGMA main.user_version",
                         &version));
  GPUPLAN_TRY(int_pragma(ctx, cat->db, cat->path,
                         "SELECT count(*) FROM main.sqlite_master WHERE type='table'",
                         &ntables));
  if (version < 0) {
    /* user_version is any 32-bit integer; a negative one used to index the
     * migrations backwards (review H1). */
    gpuplan__error(ctx, GPUPLAN_ECATALOG,
                   "catalog %s: schema version %d is not valid (a gpuplan "
                   "catalog has 1 to %d); the file is damaged or not a gpuplan "
                   "catalog", cat->path, version, latest);
    gpuplan__error_detail(ctx, SQLITE_CORRUPT);
    return GPUPLAN_ECATALOG;
  }
  if (version == 0 && ntables == 0) {
    if (!(flags & GPUPLAN_CATALOG_CREATE) || cat->readonly)
      return gpuplan__error(ctx, GPUPLAN_ECATALOG,
                            "catalog %s: the file is empty, not a gpuplan catalog "
                            "(open it with the create flag to initialise it)",
                            cat->path);
  } else if (version == 0) {
    return gpuplan__error(ctx, GPUPLAN_ECATALOG,
                          "catalog %s: not a gpuplan catalog (a SQLite database "
                          "with %d table(s) but no gpuplan schema version)",
                          cat->path, ntables);
  } else if (version > latest) {
    return gpuplan__error(ctx, GPUPLAN_ECATALOG,
                          "catalog %s: schema version %d is newer than this "
                          "gpuplan %s understands (%d); upgrade gpuplan",
                          cat->path, version, GPUPLAN_VERSION_STRING, latest);
  }
  if (version < latest) {
    if (cat->readonly)
      return gpuplan__error(ctx, GPUPLAN_ECATALOG,
                            "catalog %s: schema version %d must be migrated to "
                            "%d, but the file is open read-only",
                            cat->path, version, latest);
    GPUPLAN_TRY(exec(ctx, cat->db, cat->path, "BEGIN IMMEDIATE"));
    rc = apply_schema(ctx, cat->db, cat->path, version);
    if (rc == GPUPLAN_OK) rc = exec(ctx, cat->db, cat->path, "COMMIT");
    if (rc != GPUPLAN_OK) {
      sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
      return rc;
    }
  }
  /* A catalog name that is a view would run its query at every open (a
   * recursive one forever): only plain tables are read. */
  {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(
        cat->db,
        "SELECT name, type FROM main.sqlite_master WHERE type = 'view' AND "
        "name IN ('gpu','fabric','node','model','alias','catalog_info')",
        -1, &st, NULL);
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
      gpuplan__error(ctx, GPUPLAN_ECATALOG,
                     "catalog %s: '%s' is a %s, not a table", cat->path,
                     (const char *)sqlite3_column_text(st, 0),
                     (const char *)sqlite3_column_text(st, 1));
      sqlite3_finalize(st);
      return GPUPLAN_ECATALOG;
    }
    if (src != SQLITE_DONE) {
      rc = sqlerr(ctx, cat->db, src, cat->path, "cannot read the schema");
      sqlite3_finalize(st);
      return rc;
    }
    sqlite3_finalize(st);
  }
  /* A truncated or damaged file shows here rather than mid-lookup. */
  {
    sqlite3_stmt *st = NULL;
    int src = sqlite3_prepare_v2(cat->db, "PRAGMA main.quick_check", -1, &st, NULL);
    if (src == SQLITE_OK) src = sqlite3_step(st);
    if (src == SQLITE_ROW) {
      const char *r = (const char *)sqlite3_column_text(st, 0);
      if (r && (strncmp(r, "CHECK constraint failed", 23) == 0 ||
                strncmp(r, "NULL value in", 13) == 0)) {
        /* Rows written with the constraints off, not damage.  The loader
         * names the row and column when a field check fails too; whatever
         * it passes is still refused (finish_open). */
        snprintf(cat->constraint_error, sizeof cat->constraint_error, "%s", r);
      } else if (!r || strcmp(r, "ok") != 0) {
        gpuplan__error(ctx, GPUPLAN_ECATALOG,
                       "catalog %s: the database is corrupt: %s", cat->path,
                       r ? r : "(no detail)");
        gpuplan__error_detail(ctx, SQLITE_CORRUPT);
        sqlite3_finalize(st);
        return GPUPLAN_ECATALOG;
      }
    } else {
      rc = sqlerr(ctx, cat->db, src, cat->path, "integrity check failed");
      sqlite3_finalize(st);
      return rc;
    }
    sqlite3_finalize(st);
  }
  return GPUPLAN_OK;
}

int gpuplan_catalog_open(gpuplan_ctx *ctx, const char *path, unsigned flags,
                         gpuplan_catalog **out) {
  gpuplan_catalog *cat = NULL;
  struct stat sb;
  int exists, oflags, rc;

  if (!out) return GPUPLAN_EMISUSE;
  *out = NULL;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!path || !*path)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "catalog path: must not be empty");
  if (flags & ~(unsigned)(GPUPLAN_CATALOG_READONLY | GPUPLAN_CATALOG_CREATE |
                          GPUPLAN_CATALOG_LAYER))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "catalog flags: unknown bits 0x%x (allowed: READONLY, "
                          "CREATE, LAYER)", flags);
  if ((flags & GPUPLAN_CATALOG_READONLY) && (flags & GPUPLAN_CATALOG_CREATE))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "catalog flags: READONLY and CREATE exclude each other");

  exists = stat(path, &sb) == 0;
  if (!exists && errno != ENOENT) {
    int e = errno;
    gpuplan__error(ctx, GPUPLAN_EIO, "catalog %s: %s", path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return GPUPLAN_EIO;
  }
  if (!exists && !(flags & GPUPLAN_CATALOG_CREATE))
    return gpuplan__error(ctx, GPUPLAN_ENOTFOUND,
                          "catalog %s: no such file (use the create flag to make "
                          "a new catalog)", path);
  if (exists && S_ISDIR(sb.st_mode))
    return gpuplan__error(ctx, GPUPLAN_EIO, "catalog %s: is a directory", path);

  GPUPLAN_TRY(catalog_alloc(ctx, path, &cat));
  oflags = SQLITE_OPEN_NOMUTEX;
  if (flags & GPUPLAN_CATALOG_READONLY)
    oflags |= SQLITE_OPEN_READONLY;
  else
    oflags |= SQLITE_OPEN_READWRITE |
              ((flags & GPUPLAN_CATALOG_CREATE) ? SQLITE_OPEN_CREATE : 0);
  rc = sqlite3_open_v2(path, &cat->db, oflags, NULL);
  if (rc != SQLITE_OK) {
    if ((rc & 0xff) == SQLITE_NOMEM) {
      rc = gpuplan__nomem(ctx);
    } else {
      gpuplan__error(ctx, GPUPLAN_EIO, "catalog %s: cannot open: %s", path,
                     cat->db ? sqlite3_errmsg(cat->db) : sqlite3_errstr(rc));
      gpuplan__error_detail(ctx, rc);
      rc = GPUPLAN_EIO;
    }
    catalog_release(cat);
    return rc;
  }
  sqlite3_extended_result_codes(cat->db, 1);
  sqlite3_busy_timeout(cat->db, 2000);
  cat->readonly = sqlite3_db_readonly(cat->db, "main") == 1;

  rc = check_schema(cat, flags);
  if (rc == GPUPLAN_OK && (flags & GPUPLAN_CATALOG_LAYER))
    rc = attach_default(cat);
  if (rc != GPUPLAN_OK) {
    catalog_release(cat);
    return rc;
  }
  return finish_open(cat, out);
}

static void catalog_release(gpuplan_catalog *cat) {
  gpuplan_ctx *ctx = cat->ctx;
  snapshot_free(ctx, &cat->snap);
  if (cat->db) sqlite3_close(cat->db);
  gpuplan__free(ctx, cat->path);
  gpuplan__free(ctx, cat);
  gpuplan__ctx_unref(ctx);
}

void gpuplan_catalog_free(gpuplan_catalog *cat) {
  if (!cat) return;
  catalog_release(cat);
}

int gpuplan_catalog_schema_version(const gpuplan_catalog *cat) {
  return cat ? cat->schema_version : 0;
}

/* --- import -------------------------------------------------------------- */

static int authorize(void *payload, int action, const char *a, const char *b,
                     const char *db, const char *trigger) {
  static const char *const tables[] = {"gpu",   "fabric", "node", "model",
                                       "alias", "catalog_info"};
  size_t i;
  (void)payload;
  (void)b;
  (void)trigger;
  switch (action) {
  case SQLITE_SELECT:
  case SQLITE_READ:
  case SQLITE_FUNCTION:
  case SQLITE_RECURSIVE:
    return SQLITE_OK;
  case SQLITE_INSERT:
  case SQLITE_UPDATE:
  case SQLITE_DELETE:
    if (!db || strcmp(db, "main") != 0) return SQLITE_DENY;
    for (i = 0; i < sizeof tables / sizeof tables[0]; i++)
      if (a && strcmp(a, tables[i]) == 0) return SQLITE_OK;
    return SQLITE_DENY;
  default:
    return SQLITE_DENY;
  }
}

/*
 * The work an import may do is bounded by its size (review L12): a few
 * hundred bytes of SQL must not hold the write lock for ever, as an
 * unbounded recursive CTE would.  SQLite calls the progress handler every
 * PROGRESS_OPS virtual-machine instructions; an import gets IMPORT_OPS_BASE
 * plus IMPORT_OPS_PER_BYTE for each byte of its text.  The shipped data
 * files cost 0.1 to 0.25 instructions per byte (CHECKs included), so honest
 * imports, INSERT ... SELECT over the default rows too, stay thousands of
 * times inside the bound, while a runaway query stops within a second.
 */
#define PROGRESS_OPS 10000
#define IMPORT_OPS_BASE 10000000ull
#define IMPORT_OPS_PER_BYTE 1000ull

typedef struct import_budget {
  unsigned long long bound; /* instructions allowed in all */
  unsigned long long left;  /* of them, still */
  int tripped;
} import_budget;

static int on_progress(void *payload) {
  import_budget *b = payload;
  if (b->left <= PROGRESS_OPS) {
    b->tripped = 1;
    return 1; /* SQLite stops the statement with SQLITE_INTERRUPT */
  }
  b->left -= PROGRESS_OPS;
  return 0;
}

int gpuplan_catalog_import(gpuplan_catalog *cat, const char *sql) {
  gpuplan_ctx *ctx;
  gpuplan__snapshot fresh;
  import_budget budget = {0, 0, 0};
  char *err = NULL;
  size_t len;
  int rc;

  if (!cat) return GPUPLAN_EMISUSE;
  ctx = cat->ctx;
  if (!sql)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "import: SQL text is NULL");
  if (cat->is_default)
    return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,
                          "catalog (default): the embedded catalog is read-only; "
                          "open a file with CREATE|LAYER to add or override rows");
  if (cat->readonly)
    return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,
                          "catalog %s: opened read-only", cat->path);

  len = strlen(sql);
  budget.bound = len < (ULLONG_MAX - IMPORT_OPS_BASE) / IMPORT_OPS_PER_BYTE
                     ? IMPORT_OPS_BASE + (unsigned long long)len * IMPORT_OPS_PER_BYTE
                     : ULLONG_MAX;
  budget.left = budget.bound;
  GPUPLAN_TRY(exec(ctx, cat->db, cat->path, "BEGIN IMMEDIATE"));
  sqlite3_set_authorizer(cat->db, authorize, NULL);
  sqlite3_progress_handler(cat->db, PROGRESS_OPS, on_progress, &budget);
  rc = sqlite3_exec(cat->db, sql, NULL, NULL, &err);
  sqlite3_progress_handler(cat->db, 0, NULL, NULL);
  sqlite3_set_authorizer(cat->db, NULL, NULL);
  if (rc != SQLITE_OK) {
    int ext = sqlite3_extended_errcode(cat->db);
    if ((rc & 0xff) == SQLITE_NOMEM) {
      gpuplan__nomem(ctx);
    } else if (budget.tripped) {
      gpuplan__error(ctx, GPUPLAN_ECATALOG,
                     "catalog %s: import stopped, nothing written: its %zu bytes "
                     "of SQL ran past %llu SQLite instructions, the bound for "
                     "that size (an unbounded recursive query?)",
                     cat->path, len, budget.bound);
      gpuplan__error_detail(ctx, ext);
    } else {
      gpuplan__error(ctx, GPUPLAN_ECATALOG,
                     "catalog %s: import failed, nothing written: %s%s",
                     cat->path, err ? err : sqlite3_errstr(rc),
                     (rc & 0xff) == SQLITE_AUTH
                         ? " (only INSERT/UPDATE/DELETE on gpu, fabric, node, "
                           "model, alias, catalog_info are allowed)"
                         : "");
      gpuplan__error_detail(ctx, ext);
    }
    sqlite3_free(err);
    sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
    return (rc & 0xff) == SQLITE_NOMEM ? GPUPLAN_ENOMEM : GPUPLAN_ECATALOG;
  }
  /* Validate the result as a whole before it becomes permanent. */
  rc = load_snapshot(cat, &fresh);
  if (rc != GPUPLAN_OK) {
    sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
  }
  rc = exec(ctx, cat->db, cat->path, "COMMIT");
  if (rc != GPUPLAN_OK) {
    sqlite3_exec(cat->db, "ROLLBACK", NULL, NULL, NULL);
    snapshot_free(ctx, &fresh);
    return rc;
  }
  snapshot_free(ctx, &cat->snap);
  cat->snap = fresh;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}
