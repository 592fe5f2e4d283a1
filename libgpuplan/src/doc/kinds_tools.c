/*
 * kinds_tools.c: field descriptions of replay, explain-oom, validate,
 * catalog and version documents.
 */
#include "doc/doc_int.h"

#define S GPUPLAN_VALUE_STRING
#define I GPUPLAN_VALUE_INT
#define R GPUPLAN_VALUE_REAL
#define B GPUPLAN_VALUE_BOOL
#define A GPUPLAN_VALUE_ARRAY
#define O GPUPLAN_VALUE_OBJECT
#define N(arr) arr, sizeof arr / sizeof arr[0]

static const gpuplan_result_field version_fields[] = {
  {"schema", S, "", "gpuplan.version/1"},
  {"version", S, "", "the library's version (MAJOR.MINOR.PATCH)"},
  {"catalog_schema", I, "", "the newest catalog schema this library reads"},
};
static const gpuplan__kind_desc version_kind = {"version", 1, NULL, N(version_fields)};

const gpuplan__kind_desc *const gpuplan__kinds_tools[] = {&version_kind, NULL};
