/* embedded.h: the catalog SQL compiled into the library (cmake/embed.cmake). */
#ifndef GPUPLAN_CATALOG_EMBEDDED_H
#define GPUPLAN_CATALOG_EMBEDDED_H

#include <stddef.h>

typedef struct gpuplan__sql_file {
  const char *name;  /* file name, e.g. "001_init.sql"; NULL ends the list */
  const char *text;  /* NUL-terminated SQL */
  size_t len;
} gpuplan__sql_file;

/* Schema files in version order: file i brings the schema to version i+1. */
extern const gpuplan__sql_file gpuplan__catalog_schema[];
/* Default data files, applied after the schema. */
extern const gpuplan__sql_file gpuplan__catalog_data[];

#endif
