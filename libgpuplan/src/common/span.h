/*
 * span.h: the binary search for the span (a segment, a block: a struct
 * with uint64_t `addr` and `size`) holding an address, in an array sorted
 * by address whose spans do not overlap.  Written once for the replay and
 * the HTML page's maps; each instance is a static function of its element
 * type, reached directly (GPUPLAN__SPAN_DIRECT: an array of spans) or
 * through a pointer (GPUPLAN__SPAN_POINTER: an array of pointers to them).
 * Not installed.
 */
#ifndef GPUPLAN_SPAN_H
#define GPUPLAN_SPAN_H

#include <stddef.h>
#include <stdint.h>

#define GPUPLAN__SPAN_DIRECT(x) (x)
#define GPUPLAN__SPAN_POINTER(x) (*(x))

/* Defines `static long name(T const *v, size_t n, uint64_t addr)`: the index
 * of the span of v[0..n) holding addr, or -1.  AT is GPUPLAN__SPAN_DIRECT or
 * GPUPLAN__SPAN_POINTER. */
#define GPUPLAN__SPAN_FIND(name, T, AT)                                                                      \
  static long name(T const *v, size_t n, uint64_t addr) {                                                    \
    size_t lo = 0, hi = n;                                                                                   \
    while (lo < hi) {                                                                                        \
      size_t mid = lo + (hi - lo) / 2;                                                                       \
      if (AT(v[mid]).addr + AT(v[mid]).size <= addr) lo = mid + 1;                                           \
      else hi = mid;                                                                                         \
    }                                                                                                        \
    return lo < n && AT(v[lo]).addr <= addr ? (long)lo : -1;                                                 \
  }

#endif
