/* error.c: status codes, their names, and the per-context message. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct {
  int code;
  const char *name;
  const char *str;
} codes[] = {
  {GPUPLAN_OK, "GPUPLAN_OK", "not an error"},
  {GPUPLAN_ERROR, "GPUPLAN_ERROR", "generic error"},
  {GPUPLAN_ENOMEM, "GPUPLAN_ENOMEM", "out of memory"},
  {GPUPLAN_EINVAL, "GPUPLAN_EINVAL", "invalid argument"},
  {GPUPLAN_ENOTFOUND, "GPUPLAN_ENOTFOUND", "not found"},
  {GPUPLAN_EEXISTS, "GPUPLAN_EEXISTS", "already exists"},
  {GPUPLAN_EIO, "GPUPLAN_EIO", "input/output error"},
  {GPUPLAN_ECATALOG, "GPUPLAN_ECATALOG", "catalog database error"},
  {GPUPLAN_EUNSUPPORTED, "GPUPLAN_EUNSUPPORTED", "not supported"},
  {GPUPLAN_EBUSY, "GPUPLAN_EBUSY", "resource busy"},
  {GPUPLAN_EINTERRUPTED, "GPUPLAN_EINTERRUPTED", "interrupted"},
  {GPUPLAN_EMISUSE, "GPUPLAN_EMISUSE", "library misuse"},
  {GPUPLAN_EUSER, "GPUPLAN_EUSER", "user callback failed"},
  {GPUPLAN_EAMBIGUOUS, "GPUPLAN_EAMBIGUOUS", "ambiguous name"},
  {GPUPLAN_EOOM, "GPUPLAN_EOOM", "device out of memory"},
};

const char *gpuplan_errstr(int code) {
  size_t i;
  for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (codes[i].code == code) return codes[i].str;
  return "unknown error";
}

const char *gpuplan_errname(int code) {
  size_t i;
  for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (codes[i].code == code) return codes[i].name;
  return "GPUPLAN_UNKNOWN";
}

int gpuplan__verror(gpuplan_ctx *ctx, int code, const char *fmt, va_list ap) {
  if (!ctx) return code;
  ctx->errcode = code;
  ctx->errdetail = 0;
  if (fmt) {
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
  } else {
    snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", gpuplan_errstr(code));
  }
  return code;
}

int gpuplan__error(gpuplan_ctx *ctx, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gpuplan__verror(ctx, code, fmt, ap);
  va_end(ap);
  return code;
}

int gpuplan__nomem(gpuplan_ctx *ctx) {
  return gpuplan__error(ctx, GPUPLAN_ENOMEM, "out of memory");
}

void gpuplan__error_detail(gpuplan_ctx *ctx, int detail) {
  if (ctx) ctx->errdetail = detail;
}

void gpuplan__clear(gpuplan_ctx *ctx) {
  if (!ctx) return;
  ctx->errcode = GPUPLAN_OK;
  ctx->errdetail = 0;
  ctx->errmsg[0] = '\0';
}

const char *gpuplan_errmsg(const gpuplan_ctx *ctx) {
  if (!ctx) return "no context (NULL)";
  if (ctx->errcode == GPUPLAN_OK || ctx->errmsg[0] == '\0')
    return ctx->errcode == GPUPLAN_OK ? "not an error"
                                      : gpuplan_errstr(ctx->errcode);
  return ctx->errmsg;
}

int gpuplan_errcode(const gpuplan_ctx *ctx) {
  return ctx ? ctx->errcode : GPUPLAN_EMISUSE;
}

int gpuplan_errdetail(const gpuplan_ctx *ctx) {
  return ctx ? ctx->errdetail : 0;
}

int gpuplan_seterror(gpuplan_ctx *ctx, int code, const char *fmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = gpuplan__verror(ctx, code, fmt, ap);
  va_end(ap);
  return rc;
}
