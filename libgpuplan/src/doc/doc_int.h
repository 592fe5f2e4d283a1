/*
 * doc_int.h: building result documents (gpuplan/doc.h).  Not installed.
 *
 * A builder opens the root object of a document of a kind, adds members
 * and elements, and finishes.  Calls never fail individually: an allocation
 * failure marks the builder, later calls do nothing, and finish returns
 * GPUPLAN_ENOMEM.  Keys must be static strings (they are not copied);
 * string values are copied.  Inside arrays, pass NULL as the key.
 *
 * In GPUPLAN_TESTING builds finish checks the document against its kind's
 * field description (every path described, every type as described) and
 * fails with GPUPLAN_ERROR naming the first stray path.
 */
#ifndef GPUPLAN_DOC_INT_H
#define GPUPLAN_DOC_INT_H

#include "common/internal.h"
#include "gpuplan/doc.h"

typedef struct gpuplan__docb gpuplan__docb;

/* Start a document of kind (a name gpuplan_result_fields() knows); the root
 * object is open and has its "schema" key.  NULL on ENOMEM (ctx's error set). */
gpuplan__docb *gpuplan__doc_begin(gpuplan_ctx *ctx, const char *kind);
/* Open an object or array as a member (key) or element (key NULL). */
void gpuplan__doc_obj(gpuplan__docb *b, const char *key);
void gpuplan__doc_arr(gpuplan__docb *b, const char *key);
/* Close the innermost open object or array. */
void gpuplan__doc_end(gpuplan__docb *b);
void gpuplan__doc_int(gpuplan__docb *b, const char *key, int64_t v);
void gpuplan__doc_uint(gpuplan__docb *b, const char *key, uint64_t v); /* > INT64_MAX: real */
void gpuplan__doc_real(gpuplan__docb *b, const char *key, double v);   /* non-finite: null */
void gpuplan__doc_bool(gpuplan__docb *b, const char *key, int v);
void gpuplan__doc_str(gpuplan__docb *b, const char *key, const char *s); /* NULL: null */
void gpuplan__doc_strn(gpuplan__docb *b, const char *key, const char *s, size_t n);
void gpuplan__doc_null(gpuplan__docb *b, const char *key);
/* A string value with printf formatting. */
void gpuplan__doc_strf(gpuplan__docb *b, const char *key, const char *fmt, ...) GPUPLAN_PRINTF(3, 4);
/* Copy a value (and its children) from another document. */
void gpuplan__doc_copy(gpuplan__docb *b, const char *key, const gpuplan_value *v);
/* Mark the builder failed with the context's current error (e.g. a computation
 * failed half-way); finish then returns that code. */
void gpuplan__doc_fail(gpuplan__docb *b, int code);
/* The context of the builder. */
gpuplan_ctx *gpuplan__doc_ctx(gpuplan__docb *b);

/* Close everything still open and hand over the document.  On failure the
 * builder is freed and *out is NULL. */
int gpuplan__doc_finish(gpuplan__docb *b, gpuplan_doc **out);
/* Drop a builder (on an error path). NULL is a no-op. */
void gpuplan__doc_abort(gpuplan__docb *b);

/* The kind registry (schema.c). */
typedef struct gpuplan__kind_desc {
  const char *kind;
  int version;
  const char *table;                 /* the tabular array for CSV, or NULL */
  const gpuplan_result_field *fields;
  size_t nfields;
} gpuplan__kind_desc;

const gpuplan__kind_desc *gpuplan__kind_find(const char *kind);

/* Shortest "%.*g" text that reads back to v (finite v); buf of 32 bytes. */
void gpuplan__fmt_real(char *buf, size_t cap, double v);

#endif /* GPUPLAN_DOC_INT_H */
