/* ctx.c: the context object and the version twins. */
#include <string.h>

#include "internal.h"

int gpuplan_ctx_new(gpuplan_ctx **out, const gpuplan_ctx_options *options) {
  gpuplan_ctx_options defaults = GPUPLAN_CTX_OPTIONS_INIT;
  gpuplan_ctx boot;
  gpuplan_ctx *ctx;

  if (!out) return GPUPLAN_EINVAL;
  *out = NULL;
  if (!options) options = &defaults;
  if (options->version < 1 || options->version > GPUPLAN_CTX_OPTIONS_VERSION)
    return GPUPLAN_EINVAL;
  if (!options->allocator.fn && options->allocator.ud) return GPUPLAN_EINVAL;

  /* Allocate the context through its own allocator. */
  memset(&boot, 0, sizeof boot);
  boot.alloc = options->allocator;
  ctx = gpuplan__malloc(&boot, sizeof *ctx);
  if (!ctx) return GPUPLAN_ENOMEM;
  memset(ctx, 0, sizeof *ctx);
  ctx->alloc = options->allocator;
  gpuplan__clear(ctx);
  *out = ctx;
  return GPUPLAN_OK;
}

static void release(gpuplan_ctx *ctx) {
  gpuplan_ctx boot;
  gpuplan__ctx_drop_spares(ctx);
  memset(&boot, 0, sizeof boot);
  boot.alloc = ctx->alloc;
  gpuplan__free(&boot, ctx);
}

void gpuplan_ctx_free(gpuplan_ctx *ctx) {
  if (!ctx) return;
  if (ctx->children > 0) {
    ctx->closing = 1;
    return;
  }
  release(ctx);
}

void gpuplan__ctx_ref(gpuplan_ctx *ctx) { ctx->children++; }

void gpuplan__ctx_unref(gpuplan_ctx *ctx) {
  if (NEVER(ctx->children == 0)) return;
  ctx->children--;
  if (ctx->children == 0 && ctx->closing) release(ctx);
}

int gpuplan_version_number(void) { return GPUPLAN_VERSION_NUMBER; }

const char *gpuplan_version_string(void) { return GPUPLAN_VERSION_STRING; }
