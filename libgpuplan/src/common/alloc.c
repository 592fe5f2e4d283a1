/* alloc.c: allocation through the context's allocator, and a byte buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The header keeps max_align_t alignment for the block that follows. */
typedef union header {
  struct {
    size_t size; /* asked for */
    size_t cap;  /* given by the allocator (after the header) */
  } s;
  max_align_t align;
} header;

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

static void *raw(gpuplan_ctx *ctx, void *ptr, size_t osize, size_t nsize) {
  gpuplan_host_alloc_fn fn = ctx->alloc.fn ? ctx->alloc.fn : default_alloc;
  return fn(ctx->alloc.ud, ptr, osize, nsize);
}

/* The smallest spare that holds size bytes and is no more than four times
 * that, taken out of the context; NULL: none. */
static header *spare_take(gpuplan_ctx *ctx, size_t size) {
  size_t i, best = ctx->nspare;
  header *h;
  for (i = 0; i < ctx->nspare; i++) {
    const header *c = ctx->spare[i];
    if (c->s.cap >= size && c->s.cap / 4 <= size &&
        (best == ctx->nspare || c->s.cap < ((const header *)ctx->spare[best])->s.cap))
      best = i;
  }
  if (best == ctx->nspare) return NULL;
  h = ctx->spare[best];
  ctx->spare[best] = ctx->spare[--ctx->nspare];
  ctx->spare_bytes -= h->s.cap;
  return h;
}

void *gpuplan__malloc(gpuplan_ctx *ctx, size_t size) {
  header *h;
  if (size == 0 || size > SIZE_MAX - sizeof(header)) return NULL;
  if (size >= GPUPLAN__SPARE_MIN && (h = spare_take(ctx, size)) != NULL) {
    h->s.size = size;
    return h + 1;
  }
  h = raw(ctx, NULL, 0, size + sizeof(header));
  if (!h) return NULL;
  h->s.size = h->s.cap = size;
  return h + 1;
}

void *gpuplan__calloc(gpuplan_ctx *ctx, size_t n, size_t size) {
  void *p;
  if (size != 0 && n > SIZE_MAX / size) return NULL;
  p = gpuplan__malloc(ctx, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void *gpuplan__realloc(gpuplan_ctx *ctx, void *ptr, size_t size) {
  header *h, *nh;
  if (!ptr) return gpuplan__malloc(ctx, size);
  if (size == 0) {
    gpuplan__free(ctx, ptr);
    return NULL;
  }
  if (size > SIZE_MAX - sizeof(header)) return NULL;
  h = (header *)ptr - 1;
  if (size <= h->s.cap && size >= h->s.cap / 2) {
    /* (within its room: in place) */
    h->s.size = size;
    return ptr;
  }
  nh = raw(ctx, h, h->s.cap + sizeof(header), size + sizeof(header));
  if (!nh) return NULL;
  nh->s.size = nh->s.cap = size;
  return nh + 1;
}

void gpuplan__free(gpuplan_ctx *ctx, void *ptr) {
  header *h;
  if (!ptr) return;
  h = (header *)ptr - 1;
  if (h->s.cap >= GPUPLAN__SPARE_MIN && h->s.cap <= GPUPLAN__SPARE_MAX) {
    /* Kept for the next large allocation, in place of the smallest kept
     * when there is no room. */
    size_t i, small = 0;
    for (i = 1; i < ctx->nspare; i++)
      if (((header *)ctx->spare[i])->s.cap < ((header *)ctx->spare[small])->s.cap) small = i;
    while (ctx->nspare && (ctx->nspare == GPUPLAN__SPARES || ctx->spare_bytes + h->s.cap > GPUPLAN__SPARE_MAX) &&
           ((header *)ctx->spare[small])->s.cap < h->s.cap) {
      header *o = ctx->spare[small];
      ctx->spare[small] = ctx->spare[--ctx->nspare];
      ctx->spare_bytes -= o->s.cap;
      raw(ctx, o, o->s.cap + sizeof(header), 0);
      for (small = 0, i = 1; i < ctx->nspare; i++)
        if (((header *)ctx->spare[i])->s.cap < ((header *)ctx->spare[small])->s.cap) small = i;
    }
    if (ctx->nspare < GPUPLAN__SPARES && ctx->spare_bytes + h->s.cap <= GPUPLAN__SPARE_MAX) {
      ctx->spare[ctx->nspare++] = h;
      ctx->spare_bytes += h->s.cap;
      return;
    }
  }
  raw(ctx, h, h->s.cap + sizeof(header), 0);
}

void gpuplan__ctx_drop_spares(gpuplan_ctx *ctx) {
  while (ctx->nspare) {
    header *h = ctx->spare[--ctx->nspare];
    raw(ctx, h, h->s.cap + sizeof(header), 0);
  }
  ctx->spare_bytes = 0;
}

char *gpuplan__strdup(gpuplan_ctx *ctx, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = gpuplan__malloc(ctx, n);
  if (p) memcpy(p, s, n);
  return p;
}

void *gpuplan_malloc(gpuplan_ctx *ctx, size_t size) {
  if (!ctx) return NULL;
  return gpuplan__malloc(ctx, size);
}

void gpuplan_free(gpuplan_ctx *ctx, void *ptr) {
  if (!ctx) return;
  gpuplan__free(ctx, ptr);
}

/* --- buffer ------------------------------------------------------------ */

void gpuplan__buf_init(gpuplan__buf *b, gpuplan_ctx *ctx) {
  b->ctx = ctx;
  b->ptr = NULL;
  b->len = b->cap = 0;
  b->failed = 0;
}

static int grow(gpuplan__buf *b, size_t extra) {
  size_t need, cap;
  char *p;
  if (b->failed) return 0;
  if (extra > SIZE_MAX - b->len - 1) {
    b->failed = 1;
    return 0;
  }
  need = b->len + extra + 1;
  if (need <= b->cap) return 1;
  cap = b->cap ? b->cap : 64;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  p = gpuplan__realloc(b->ctx, b->ptr, cap);
  if (!p) {
    b->failed = 1;
    return 0;
  }
  b->ptr = p;
  b->cap = cap;
  return 1;
}

void gpuplan__buf_put(gpuplan__buf *b, const char *s, size_t n) {
  if (!grow(b, n)) return;
  memcpy(b->ptr + b->len, s, n);
  b->len += n;
  b->ptr[b->len] = '\0';
}

void gpuplan__buf_puts(gpuplan__buf *b, const char *s) {
  gpuplan__buf_put(b, s, strlen(s));
}

void gpuplan__buf_printf(gpuplan__buf *b, const char *fmt, ...) {
  va_list ap;
  int n;
  char small[256];
  va_start(ap, fmt);
  n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if ((size_t)n < sizeof small) {
    gpuplan__buf_put(b, small, (size_t)n);
    return;
  }
  if (!grow(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void gpuplan__buf_dispose(gpuplan__buf *b) {
  gpuplan__free(b->ctx, b->ptr);
  b->ptr = NULL;
  b->len = b->cap = 0;
}

/* --- arena --------------------------------------------------------------- */

struct gpuplan__chunk {
  struct gpuplan__chunk *next;
  size_t used, cap;
  max_align_t data[1];
};

#define CHUNK_DEFAULT 16384

void gpuplan__arena_init(gpuplan__arena *a, gpuplan_ctx *ctx) {
  a->ctx = ctx;
  a->head = NULL;
}

void *gpuplan__arena_alloc(gpuplan__arena *a, size_t size) {
  struct gpuplan__chunk *c = a->head;
  size_t align = sizeof(max_align_t);
  size_t need = (size + align - 1) / align * align;
  if (size == 0 || need < size) return NULL;
  if (!c || c->cap - c->used < need) {
    size_t cap = need > CHUNK_DEFAULT ? need : CHUNK_DEFAULT;
    if (cap > SIZE_MAX - sizeof *c) return NULL;
    c = gpuplan__malloc(a->ctx, sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
  }
  {
    void *p = (char *)c->data + c->used;
    c->used += need;
    return p;
  }
}

char *gpuplan__arena_strdup(gpuplan__arena *a, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = gpuplan__arena_alloc(a, n);
  if (p) memcpy(p, s, n);
  return p;
}

void gpuplan__arena_free(gpuplan__arena *a) {
  struct gpuplan__chunk *c = a->head;
  while (c) {
    struct gpuplan__chunk *next = c->next;
    gpuplan__free(a->ctx, c);
    c = next;
  }
  a->head = NULL;
}
