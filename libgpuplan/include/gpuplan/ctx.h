/*
 * gpuplan/ctx.h: the context, the root of every gpuplan object tree.
 *
 * A context owns the allocator and the last error message.  Everything
 * created from it (catalogs, plans, simulations) is a child.  One thread at a
 * time may use a context and its children; different contexts may be used
 * from different threads at once.  The library has no global mutable state,
 * so it needs no global initialisation.
 */
#ifndef GPUPLAN_CTX_H
#define GPUPLAN_CTX_H

#include "common.h"
#include "hostalloc.h"
#include "errors.h"

GPUPLAN_BEGIN_DECLS

/** Opaque context. */
typedef struct gpuplan_ctx gpuplan_ctx;

/** Version of gpuplan_ctx_options understood by this header. */
#define GPUPLAN_CTX_OPTIONS_VERSION 1

/**
 * Options for gpuplan_ctx_new().  Start from GPUPLAN_CTX_OPTIONS_INIT; new
 * fields are only ever appended.
 */
typedef struct gpuplan_ctx_options {
  unsigned version;            /**< GPUPLAN_CTX_OPTIONS_VERSION */
  gpuplan_host_allocator allocator; /**< {NULL, NULL}: the C library's malloc */
} gpuplan_ctx_options;

/** Initialiser for gpuplan_ctx_options: default allocator. */
#define GPUPLAN_CTX_OPTIONS_INIT { GPUPLAN_CTX_OPTIONS_VERSION, { NULL, NULL } }

/**
 * Create a context.  Construction only allocates; it does no I/O.
 *
 * Memory: every allocation goes through the context's allocator.  A block
 * of 16 KiB or more that the library frees is kept by the context (at
 * most 32 of them, 16 MiB in all) and serves its next allocation of a
 * size the block fits, so that work repeated on one context (a snapshot
 * loaded and replayed again and again) does not hand memory back to the
 * system and fault it in again each time.  gpuplan_ctx_free() gives them
 * back.  (The blocks kept: since 0.2.0.)
 *
 * @param[out] out   receives the new context, owned by the caller and freed
 *                   with gpuplan_ctx_free(); set to NULL on failure.
 * @param options    NULL for the defaults.
 * @return GPUPLAN_OK, GPUPLAN_ENOMEM (the allocator refused), GPUPLAN_EINVAL
 *         (NULL out, unknown options version, or an allocator with ud but no
 *         fn).  There is no context to hold a message on failure.
 * @errors nomem  @threads any  @since 0.1.0
 */
GPUPLAN_API int gpuplan_ctx_new(gpuplan_ctx **out,
                                const gpuplan_ctx_options *options);

/**
 * Release a context.  Accepts NULL.  If children (catalogs, ...) are still
 * alive, the release is deferred until the last of them is freed, so a
 * garbage-collected host may free in any order.  Error-preserving.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API void gpuplan_ctx_free(gpuplan_ctx *ctx);

/**
 * Message describing the last failure on this context: one line of English
 * that names the offending field and the allowed values.  Never NULL;
 * "not an error" when the last call succeeded or cleared it.  Owned by the
 * context, valid until the next non-preserving call on it.  Error-preserving.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_errmsg(const gpuplan_ctx *ctx);

/**
 * Code of the last failure on this context (GPUPLAN_OK if none).
 * Error-preserving.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_errcode(const gpuplan_ctx *ctx);

/**
 * Extended detail of the last failure: the SQLite extended result code after
 * GPUPLAN_ECATALOG, the errno after GPUPLAN_EIO, otherwise 0.
 * Error-preserving.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_errdetail(const gpuplan_ctx *ctx);

/**
 * Record a failure on ctx, for code that plugs into the library from
 * outside it (device backends such as sim/, allocator devices, callbacks):
 * sets the code and a printf-formatted message that gpuplan_errmsg()
 * returns.  Returns code, so `return gpuplan_seterror(ctx, ...)` works.
 * Accepts a NULL ctx (then only returns code).
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API int gpuplan_seterror(gpuplan_ctx *ctx, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/**
 * Allocate size bytes through the context's allocator.  Returns NULL when
 * size is 0 or the allocator refuses.  Free with gpuplan_free().
 * @errors nomem  @threads ctx  @since 0.1.0
 */
GPUPLAN_API void *gpuplan_malloc(gpuplan_ctx *ctx, size_t size);

/**
 * Free a buffer that the library returned to the caller (or that
 * gpuplan_malloc() made).  Accepts NULL.  Never use free() on it.
 * @errors none  @threads ctx  @since 0.1.0
 */
GPUPLAN_API void gpuplan_free(gpuplan_ctx *ctx, void *ptr);

/**
 * Run-time twin of GPUPLAN_VERSION_NUMBER: the version of the library that is
 * actually loaded.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API int gpuplan_version_number(void);

/**
 * Run-time twin of GPUPLAN_VERSION_STRING, e.g. "0.1.0".  Static, never NULL.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_version_string(void);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_CTX_H */
