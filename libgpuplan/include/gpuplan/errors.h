/*
 * gpuplan/errors.h: status codes and their names.
 *
 * Every fallible function returns int: GPUPLAN_OK (0) or one of the negative
 * codes below.  The values are pinned: new codes are appended, existing ones
 * never change.  A binding that meets a code it does not know treats it as
 * GPUPLAN_ERROR.  The message for the last failure is per context:
 * gpuplan_errmsg() in gpuplan/ctx.h.
 */
#ifndef GPUPLAN_ERRORS_H
#define GPUPLAN_ERRORS_H

#include "common.h"

GPUPLAN_BEGIN_DECLS

/** Status codes.  @since 0.1.0 */
enum gpuplan_status {
  GPUPLAN_OK           =   0, /**< success */
  GPUPLAN_ERROR        =  -1, /**< generic failure */
  GPUPLAN_ENOMEM       =  -2, /**< the allocator refused a request */
  GPUPLAN_EINVAL       =  -3, /**< an argument or input field is invalid */
  GPUPLAN_ENOTFOUND    =  -4, /**< no such SKU, node, model, fabric or file */
  GPUPLAN_EEXISTS      =  -5, /**< the object already exists */
  GPUPLAN_EIO          =  -6, /**< reading or writing a file failed */
  GPUPLAN_ECATALOG     =  -7, /**< the catalog database failed (see gpuplan_errdetail) */
  GPUPLAN_EUNSUPPORTED =  -8, /**< valid request that this build or device cannot do */
  GPUPLAN_EBUSY        =  -9, /**< the resource is in use */
  GPUPLAN_EINTERRUPTED = -10, /**< a callback asked to stop */
  GPUPLAN_EMISUSE      = -11, /**< the API was called in a way it forbids (NULL handle, ...) */
  GPUPLAN_EUSER        = -12, /**< a user callback failed; the binding keeps its error */
  GPUPLAN_EAMBIGUOUS   = -13, /**< a name matches several catalog rows */
  GPUPLAN_EOOM         = -14  /**< the simulated GPU is out of memory (PyTorch's OOM text in errmsg) */
};

/**
 * English description of a status code, e.g. "out of memory".
 * @return a static string, never NULL; "unknown error" for unknown codes.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_errstr(int code);

/**
 * Symbolic name of a status code, e.g. "GPUPLAN_ENOMEM".  Stable across
 * versions, so bindings use it as the error identifier.
 * @return a static string, never NULL; "GPUPLAN_UNKNOWN" for unknown codes.
 * @errors none  @threads any  @since 0.1.0
 */
GPUPLAN_API const char *gpuplan_errname(int code);

GPUPLAN_END_DECLS

#endif /* GPUPLAN_ERRORS_H */
