/* catalog_int.h: the catalog's private structures. */
#ifndef GPUPLAN_CATALOG_INT_H
#define GPUPLAN_CATALOG_INT_H

#include <sqlite3.h>

#include "common/internal.h"

typedef struct gpuplan__kind_info {
  const char *name;    /* "gpu" */
  const char *label;   /* "GPU", for messages */
  const char *table;   /* SQL table */
  const gpuplan_field *fields;
  size_t nfields;
  size_t size;         /* sizeof the record struct */
} gpuplan__kind_info;

extern const gpuplan__kind_info gpuplan__kinds[GPUPLAN_KIND_COUNT];

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
};

/* Build the lookup keys (ids, names, aliases) and check references. */
int gpuplan__catalog_index(gpuplan_catalog *cat, gpuplan__snapshot *s);

#endif
