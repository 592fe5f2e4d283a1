/*
 * schema.c: the registry of result kinds.  Each group of commands defines
 * its kinds' field descriptions next to its code (kinds_*.c); this file
 * lists them for gpuplan_result_fields() and the document builder.
 */
#include <string.h>

#include "doc/doc_int.h"

extern const gpuplan__kind_desc *const gpuplan__kinds_train[];   /* kinds_train.c */
extern const gpuplan__kind_desc *const gpuplan__kinds_tools[];   /* kinds_tools.c */
extern const gpuplan__kind_desc *const gpuplan__kinds_devices[]; /* kinds_devices.c */
extern const gpuplan__kind_desc *const gpuplan__kinds_validate[]; /* kinds_validate.c */
extern const gpuplan__kind_desc *const gpuplan__kinds_serve[];    /* kinds_serve.c */

static const gpuplan__kind_desc *const *const groups[] = {
  gpuplan__kinds_train,
  gpuplan__kinds_tools,
  gpuplan__kinds_devices,
  gpuplan__kinds_validate,
  gpuplan__kinds_serve,
};

static const gpuplan__kind_desc *nth(size_t i) {
  size_t g, k;
  for (g = 0; g < sizeof groups / sizeof groups[0]; g++)
    for (k = 0; groups[g][k]; k++)
      if (i-- == 0) return groups[g][k];
  return NULL;
}

const gpuplan__kind_desc *gpuplan__kind_find(const char *kind) {
  size_t i;
  const gpuplan__kind_desc *d;
  if (!kind) return NULL;
  for (i = 0; (d = nth(i)); i++)
    if (strcmp(d->kind, kind) == 0) return d;
  return NULL;
}

const char *gpuplan_result_kind(size_t i) {
  const gpuplan__kind_desc *d = nth(i);
  return d ? d->kind : NULL;
}

const gpuplan_result_field *gpuplan_result_fields(const char *kind, size_t *count, int *version) {
  const gpuplan__kind_desc *d = gpuplan__kind_find(kind);
  if (count) *count = d ? d->nfields : 0;
  if (version) *version = d ? d->version : 0;
  return d ? d->fields : NULL;
}

const char *gpuplan_result_table(const char *kind) {
  const gpuplan__kind_desc *d = gpuplan__kind_find(kind);
  return d ? d->table : NULL;
}
