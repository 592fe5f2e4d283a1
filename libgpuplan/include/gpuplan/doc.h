/*
 * gpuplan/doc.h: result documents.
 *
 * Every result gpuplan produces (a plan, a step-time estimate, a search, a
 * replay, an nvidia-smi view, ...) is one document: a tree of objects,
 * arrays, strings, numbers, booleans and nulls whose root object carries a
 * "schema" key ("gpuplan.plan/1").  The library builds it once; the CLI
 * renders its text, JSON and CSV from it, and the Python and Lua bindings
 * expose it as dicts and tables, so the three front ends cannot disagree.
 *
 * Each result kind has one field description (gpuplan_result_fields()): the
 * key paths, types, units and meaning of its fields.  The library checks the
 * documents it builds against it in its test builds, and the reference in
 * docs/results.md is generated from it.
 *
 * A document is immutable and owned by its creator; the gpuplan_value
 * pointers inside it are valid until gpuplan_doc_free().  Documents may be
 * read from several threads at once.
 */
#ifndef GPUPLAN_DOC_H
#define GPUPLAN_DOC_H

#include "common.h"
#include "ctx.h"

GPUPLAN_BEGIN_DECLS

/** A result document (opaque). */
typedef struct gpuplan_doc gpuplan_doc;
/** A value inside a document (opaque; valid while its document lives). */
typedef struct gpuplan_value gpuplan_value;

/** Types of values. */
typedef enum gpuplan_value_type {
  GPUPLAN_VALUE_NULL = 0, /**< not known or not applicable (JSON null) */
  GPUPLAN_VALUE_BOOL,
  GPUPLAN_VALUE_INT,      /**< a 64-bit signed integer */
  GPUPLAN_VALUE_REAL,     /**< a finite double (non-finite values are stored as null) */
  GPUPLAN_VALUE_STRING,   /**< UTF-8, NUL-terminated, may be empty */
  GPUPLAN_VALUE_ARRAY,
  GPUPLAN_VALUE_OBJECT    /**< keys in insertion order, unique */
} gpuplan_value_type;

/**
 * The root object of a document.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const gpuplan_value *gpuplan_doc_root(const gpuplan_doc *doc);

/**
 * The document's schema, "gpuplan.<kind>/<version>" (static storage).
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_doc_schema(const gpuplan_doc *doc);

/**
 * The document's kind ("plan", "perf", ...; static storage).
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_doc_kind(const gpuplan_doc *doc);

/**
 * Free a document and every value in it.  NULL is a no-op.
 * @errors none  @threads the owner's  @since 0.2.0
 */
GPUPLAN_API void gpuplan_doc_free(gpuplan_doc *doc);

/**
 * The type of a value; GPUPLAN_VALUE_NULL for a NULL pointer (an absent key).
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API gpuplan_value_type gpuplan_value_type_of(const gpuplan_value *v);

/** Scalar getters.  A wrong type gives 0 / 0.0 / NULL: check the type first
 *  where it matters.  gpuplan_value_real() converts integers.
 *  gpuplan_value_string() sets *len (if not NULL) to the length in bytes.
 *  @errors none  @threads any  @since 0.2.0 */
GPUPLAN_API int gpuplan_value_bool(const gpuplan_value *v);
GPUPLAN_API int64_t gpuplan_value_int(const gpuplan_value *v);
GPUPLAN_API double gpuplan_value_real(const gpuplan_value *v);
GPUPLAN_API const char *gpuplan_value_string(const gpuplan_value *v, size_t *len);

/**
 * Members of an object or elements of an array: their number, the i-th
 * value, and (objects) the i-th key.  Out of range or not a container:
 * 0 / NULL.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API size_t gpuplan_value_count(const gpuplan_value *v);
GPUPLAN_API const gpuplan_value *gpuplan_value_at(const gpuplan_value *v, size_t i);
GPUPLAN_API const char *gpuplan_value_key(const gpuplan_value *v, size_t i);

/**
 * The member of an object by key, or by a dotted path with array indexes
 * ("worst.components.0.bytes"); NULL when absent.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const gpuplan_value *gpuplan_value_get(const gpuplan_value *v, const char *key);
GPUPLAN_API const gpuplan_value *gpuplan_value_path(const gpuplan_value *v, const char *path);

/** Output flags of gpuplan_doc_json(). */
#define GPUPLAN_JSON_PRETTY 1u  /**< two-space indentation and newlines */

/**
 * The document as JSON text (numbers as the shortest text that reads back to
 * the same double; non-finite numbers as null; strings escaped, control
 * characters as \\u00XX).  The text is owned by the document, cached, and
 * NUL-terminated; *len (if not NULL) gets its length.
 * @return the text, or NULL on GPUPLAN_ENOMEM (the message is in the
 *         document's context).
 * @errors GPUPLAN_ENOMEM  @threads the owner's  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_doc_json(gpuplan_doc *doc, unsigned flags, size_t *len);

/**
 * The document's table as CSV (RFC 4180; a header row of column names):
 * for tabular kinds (search, catalog lists, smi queries, validate, ...) the
 * array the field description marks as the table; others: GPUPLAN_EUNSUPPORTED.
 * Nested values in a row are written as JSON text.  Owned by the document.
 * @errors GPUPLAN_ENOMEM, GPUPLAN_EUNSUPPORTED  @threads the owner's  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_doc_csv(gpuplan_doc *doc, size_t *len);

/** One field of a result kind. */
typedef struct gpuplan_result_field {
  const char *path;      /**< "worst.total_bytes"; array elements as "ladder[].change" */
  gpuplan_value_type type; /**< the type when known (a field may also be null) */
  const char *unit;      /**< "B", "s", "B/s", "USD/h", "1" (fraction), "" (none) */
  const char *help;      /**< one line */
} gpuplan_result_field;

/**
 * The field description of a result kind: the number of fields in *count,
 * the schema version in *version (either may be NULL).  NULL for an unknown
 * kind.  Static storage.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const gpuplan_result_field *gpuplan_result_fields(const char *kind, size_t *count,
                                                             int *version);

/**
 * The i-th result kind ("plan", "perf", ...), NULL past the last.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_result_kind(size_t i);

/**
 * The column of the table of a tabular kind ("best" for search), or NULL.
 * @errors none  @threads any  @since 0.2.0
 */
GPUPLAN_API const char *gpuplan_result_table(const char *kind);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_DOC_H */
