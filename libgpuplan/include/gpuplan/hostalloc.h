/*
 * gpuplan/hostalloc.h: the host-memory allocator hook.
 *
 * The hook has the signature and contract of Lua's lua_Alloc, so a Lua host
 * can pass lua_getallocf()'s function unchanged:
 *
 *   - nsize == 0: free ptr (which may be NULL) and return NULL;
 *   - ptr == NULL: allocate nsize bytes (osize carries no meaning then);
 *   - otherwise: resize the block of osize bytes at ptr to nsize bytes;
 *   - return NULL if and only if the request cannot be met, leaving the old
 *     block untouched.
 *
 * The hook is fixed per context at creation (gpuplan_ctx_options) and every
 * host allocation made on behalf of that context and its children goes
 * through it.  There is no process-wide allocator setting.  Not covered:
 * SQLite's own allocations (process-global in SQLite, never reconfigured
 * behind the host's back) and device (GPU) memory.
 */
#ifndef GPUPLAN_ALLOC_H
#define GPUPLAN_ALLOC_H

#include "common.h"

GPUPLAN_BEGIN_DECLS

/** An allocation function with lua_Alloc's contract (see above). */
typedef void *(*gpuplan_host_alloc_fn)(void *ud, void *ptr, size_t osize,
                                  size_t nsize);

/** An allocator: the function and its user data.  {NULL, NULL} = malloc/free. */
typedef struct gpuplan_host_allocator {
  gpuplan_host_alloc_fn fn;
  void *ud;
} gpuplan_host_allocator;

GPUPLAN_END_DECLS

#endif /* GPUPLAN_ALLOC_H */
