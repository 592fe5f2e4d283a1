/* catalog_int.h: the catalog's private structures. */
#ifndef GPUPLAN_CATALOG_INT_H
#define GPUPLAN_CATALOG_INT_H

#include <sqlite3.h>

#include "common/internal.h"

/* What a column may hold (fields.c): a known value must lie in [min, max]. */
enum {
  GPUPLAN__CK_REQUIRED = 1 << 0,  /* NULL is refused */
  GPUPLAN__CK_INTEGRAL = 1 << 1   /* whole numbers only */
};
typedef struct gpuplan__check {
  double min, max;     /* numeric fields only */
  unsigned flags;
} gpuplan__check;

typedef struct gpuplan__kind_info {
  const char *name;    /* "gpu" */
  const char *label;   /* "GPU", for messages */
  const char *table;   /* SQL table */
  const gpuplan_field *fields;
  const gpuplan__check *checks;  /* one per field */
  size_t nfields;
  size_t size;         /* sizeof the record struct */
} gpuplan__kind_info;

extern const gpuplan__kind_info gpuplan__kinds[GPUPLAN_KIND_COUNT];

/*
 * Check column col of the current row of st against field f: its storage
 * type (a number for numeric fields, never a blob for text) and its range.
 * Returns 0 when the value is acceptable; otherwise 1, with the reason
 * ("is text ('abc'), not a number") in why.  Shared by the loader and the
 * build-time image tool, so the built-in data passes the same checks.
 */
int gpuplan__field_check(const gpuplan_field *f, const gpuplan__check *ck,
                         sqlite3_stmt *st, int col, char *why, size_t cap);

/* One lookup key: a normalised id, name or alias, pointing at a record. */
typedef struct gpuplan__key {
  char *norm;      /* lower case, separators removed */
  char *words;     /* lower case words separated by single spaces */
  size_t rec;      /* index into the kind's records */
} gpuplan__key;

typedef struct gpuplan__table {
  void *recs;      /* array of the kind's record struct */
  size_t n;
  gpuplan__key *keys;
  size_t nkeys;
} gpuplan__table;

/* The in-memory snapshot: all records plus the strings they point into. */
typedef struct gpuplan__snapshot {
  gpuplan__table t[GPUPLAN_KIND_COUNT];
  gpuplan__arena arena;  /* every string the records and keys point to */
  int builtin;           /* recs are the library's const arrays: not freed */
} gpuplan__snapshot;

struct gpuplan_catalog {
  gpuplan_ctx *ctx;
  char *path;       /* for messages; "(default)" for the embedded catalog */
  sqlite3 *db;
  int layered;      /* schema "base" holds the default rows under main */
  int readonly;
  int is_default;   /* no file: the embedded catalog alone */
  int schema_version;
  gpuplan__snapshot snap;
  char constraint_error[128]; /* quick_check found rows breaking a CHECK */
};

/* Build the lookup keys (ids, names, aliases) and check references. */
int gpuplan__catalog_index(gpuplan_catalog *cat, gpuplan__snapshot *s);

/* The same for the built-in records, checked at build time: keys only, the
 * aliases taken from the generated table instead of SQL. */
int gpuplan__catalog_index_builtin(gpuplan_catalog *cat, gpuplan__snapshot *s);

#endif
