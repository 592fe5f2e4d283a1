/*
 * internal.h: what every libgpuplan source file shares.  Not installed.
 * Internal non-static functions are gpuplan__<module>_<name> and hidden.
 */
#ifndef GPUPLAN_INTERNAL_H
#define GPUPLAN_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "gpuplan.h"

#if defined(__GNUC__) || defined(__clang__)
#  define GPUPLAN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define GPUPLAN_PRINTF(f, a)
#endif

#define GPUPLAN_ERRMSG_MAX 1024

/* Large blocks a context keeps when they are freed, for its next large
 * allocations (gpuplan__malloc): at most GPUPLAN__SPARES of them, of
 * GPUPLAN__SPARE_MIN bytes or more, GPUPLAN__SPARE_MAX in all.  Measured
 * on a loop of snapshot load + replay: a 2.7b call frees some 30 such
 * blocks (the arena's 16 KiB chunks among them); with 8 of 64 KiB or
 * more it still took 57 page faults a call, with 16 of 16 KiB 64, with
 * 32 none (design-notes, "A context keeps the large blocks it frees"). */
#define GPUPLAN__SPARES 32
#define GPUPLAN__SPARE_MIN ((size_t)16 << 10)
#define GPUPLAN__SPARE_MAX ((size_t)16 << 20)

struct gpuplan_ctx {
  gpuplan_host_allocator alloc;
  void *spare[GPUPLAN__SPARES]; /* freed large blocks (their headers), kept */
  size_t nspare, spare_bytes;
  int errcode;
  int errdetail;
  size_t children;  /* live child objects; ctx_free waits for them */
  int closing;      /* gpuplan_ctx_free was called while children lived */
  char errmsg[GPUPLAN_ERRMSG_MAX];
};

/*
 * Allocation through the context's allocator.  Blocks carry a small header
 * holding their size and the room the allocator gave, so that gpuplan__free
 * can give the allocator the exact osize that lua_Alloc-style allocators
 * need.  A large block freed is kept in the context (spare) and serves a
 * later large allocation it fits; a realloc within a block's room stays in
 * place.  gpuplan__ctx_drop_spares gives them back (at the context's end).
 */
void gpuplan__ctx_drop_spares(gpuplan_ctx *ctx);
void *gpuplan__malloc(gpuplan_ctx *ctx, size_t size);
void *gpuplan__calloc(gpuplan_ctx *ctx, size_t n, size_t size);
void *gpuplan__realloc(gpuplan_ctx *ctx, void *ptr, size_t size);
void gpuplan__free(gpuplan_ctx *ctx, void *ptr);
char *gpuplan__strdup(gpuplan_ctx *ctx, const char *s);

/* Set the context's error and return code.  GPUPLAN_ENOMEM never allocates. */
int gpuplan__error(gpuplan_ctx *ctx, int code, const char *fmt, ...)
    GPUPLAN_PRINTF(3, 4);
int gpuplan__verror(gpuplan_ctx *ctx, int code, const char *fmt, va_list ap);
int gpuplan__nomem(gpuplan_ctx *ctx);
void gpuplan__error_detail(gpuplan_ctx *ctx, int detail);
/* Write len bytes of data to path whole (created or truncated); a FIFO
 * with no reader is refused, not waited on.  GPUPLAN_OK, or GPUPLAN_EIO
 * with "<what> <path>: cannot write: <why>" (io.c). */
int gpuplan__write_file(gpuplan_ctx *ctx, const char *path, const void *data, size_t len, const char *what);
void gpuplan__clear(gpuplan_ctx *ctx);

/* Forward a failure: GPUPLAN_TRY(expr) returns expr's code if negative. */
#define GPUPLAN_TRY(expr) \
  do { int gpuplan__rc = (expr); if (gpuplan__rc < 0) return gpuplan__rc; } while (0)

/* Children keep their context alive (style.md 9.3). */
void gpuplan__ctx_ref(gpuplan_ctx *ctx);
void gpuplan__ctx_unref(gpuplan_ctx *ctx);

/* A growable byte buffer allocated through a context. */
typedef struct gpuplan__buf {
  gpuplan_ctx *ctx;
  char *ptr;
  size_t len, cap;
  int failed;   /* an allocation failed; further appends are no-ops */
} gpuplan__buf;

void gpuplan__buf_init(gpuplan__buf *b, gpuplan_ctx *ctx);
void gpuplan__buf_put(gpuplan__buf *b, const char *s, size_t n);
void gpuplan__buf_puts(gpuplan__buf *b, const char *s);
void gpuplan__buf_printf(gpuplan__buf *b, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);
void gpuplan__buf_dispose(gpuplan__buf *b);

/* An arena for many small strings freed together. */
typedef struct gpuplan__arena {
  gpuplan_ctx *ctx;
  struct gpuplan__chunk *head;
} gpuplan__arena;

void gpuplan__arena_init(gpuplan__arena *a, gpuplan_ctx *ctx);
void *gpuplan__arena_alloc(gpuplan__arena *a, size_t size);
char *gpuplan__arena_strdup(gpuplan__arena *a, const char *s);
void gpuplan__arena_free(gpuplan__arena *a);

/* Test hooks: ALWAYS/NEVER mark defensive branches (SQLite's idiom). */
#if defined(GPUPLAN_TESTING)
#  include <assert.h>
#  define ALWAYS(x) ((x) ? 1 : (assert(0), 0))
#  define NEVER(x) ((x) ? (assert(0), 1) : 0)
#else
#  define ALWAYS(x) (x)
#  define NEVER(x) (x)
#endif

#endif /* GPUPLAN_INTERNAL_H */
