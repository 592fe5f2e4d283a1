/*
 * embedded.h: the built-in catalog compiled into the library.  Both parts are
 * generated at build time from the SQL under catalog/ (the one source; see
 * cmake/catalog_image.cmake).
 */
#ifndef GPUPLAN_CATALOG_EMBEDDED_H
#define GPUPLAN_CATALOG_EMBEDDED_H

#include <stddef.h>

#include "gpuplan.h"

typedef struct gpuplan__sql_file {
  const char *name;  /* file name, e.g. "001_init.sql"; NULL ends the list */
  const char *text;  /* NUL-terminated SQL */
  size_t len;
} gpuplan__sql_file;

/* Schema files in version order: file i brings the schema to version i+1.
 * They create and migrate user catalog files (cmake/embed.cmake). */
extern const gpuplan__sql_file gpuplan__catalog_schema[];

/* The default catalog as a SQLite database image: the schema files and then
 * the files under catalog/data, run and checked by gpuplan_mkimage at build time.  It
 * is opened with sqlite3_deserialize(..., SQLITE_DESERIALIZE_READONLY), so
 * SQLite reads the pages in place and never writes to them. */
extern const unsigned char gpuplan__catalog_image[];
extern const size_t gpuplan__catalog_image_size;

/* One alias of the built-in catalog, resolved at build time. */
typedef struct gpuplan__builtin_alias {
  int kind;            /* gpuplan_kind */
  const char *alias;
  size_t rec;          /* index of the target in that kind's records */
} gpuplan__builtin_alias;

/*
 * The same rows as records, in id order, made by gpuplan_mkimage from the
 * image with the loader's own SELECTs and field checks, so that opening the
 * default catalog reads no rows at run time.  test_catalog checks that they
 * equal the image read through SQLite.
 */
typedef struct gpuplan__builtin {
  const void *recs[GPUPLAN_KIND_COUNT];  /* gpuplan_gpu[], gpuplan_fabric[], ... */
  size_t n[GPUPLAN_KIND_COUNT];
  const gpuplan__builtin_alias *aliases; /* in the order SQLite returns them */
  size_t naliases;
  int schema_version;                    /* PRAGMA user_version of the image */
} gpuplan__builtin;

extern const gpuplan__builtin gpuplan__catalog_builtin;

#endif
