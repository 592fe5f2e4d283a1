/*
 * gpuplan/common.h: export macros and C++ guards shared by every public
 * header.  Nothing here allocates or has state.
 */
#ifndef GPUPLAN_COMMON_H
#define GPUPLAN_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * GPUPLAN_API marks the functions the library exports.  The library is built
 * with hidden visibility, so only symbols carrying it are visible.  On
 * Windows, GPUPLAN_BUILDING_SHARED is defined while building the DLL and
 * GPUPLAN_USING_SHARED by the CMake package for its users.
 */
#if defined(_WIN32)
#  if defined(GPUPLAN_BUILDING_SHARED)
#    define GPUPLAN_API __declspec(dllexport)
#  elif defined(GPUPLAN_USING_SHARED)
#    define GPUPLAN_API __declspec(dllimport)
#  else
#    define GPUPLAN_API
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define GPUPLAN_API __attribute__((visibility("default")))
#else
#  define GPUPLAN_API
#endif

/* GPUPLAN_DEPRECATED("use ...") marks an entry point kept until the next major. */
#if defined(GPUPLAN_NO_DEPRECATION_WARNINGS)
#  define GPUPLAN_DEPRECATED(msg)
#elif defined(__GNUC__) || defined(__clang__)
#  define GPUPLAN_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#  define GPUPLAN_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#  define GPUPLAN_DEPRECATED(msg)
#endif

#ifdef __cplusplus
#  define GPUPLAN_BEGIN_DECLS extern "C" {
#  define GPUPLAN_END_DECLS }
#else
#  define GPUPLAN_BEGIN_DECLS
#  define GPUPLAN_END_DECLS
#endif

#endif /* GPUPLAN_COMMON_H */
