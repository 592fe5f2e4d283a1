/*
 * amap.h: an open-addressing map from a nonzero 64-bit key (an address) to a
 * 64-bit value (0: absent), with linear probing kept at most half full and
 * backward-shift deletion.  Written once for the replay (pending frees,
 * moved addresses, live blocks) and the snapshot recorder (the frame of
 * each address's allocation).  Static inline: the replay's per-event loops
 * call it.  Not installed.
 */
#ifndef GPUPLAN_AMAP_H
#define GPUPLAN_AMAP_H

#include <stdint.h>

#include "common/internal.h"

typedef struct gpuplan__amap {
  uint64_t *k, *v; /* keys (0: empty) and their values */
  size_t cap, n;
} gpuplan__amap;

static inline size_t gpuplan__amap_slot(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1); }

static inline int gpuplan__amap_put(gpuplan_ctx *ctx, gpuplan__amap *m, uint64_t k, uint64_t v) {
  size_t i;
  if ((m->n + 1) * 2 > m->cap) {
    gpuplan__amap nm;
    nm.cap = m->cap ? m->cap * 2 : 64;
    nm.n = 0;
    nm.k = gpuplan__calloc(ctx, nm.cap, sizeof *nm.k);
    nm.v = gpuplan__calloc(ctx, nm.cap, sizeof *nm.v);
    if (!nm.k || !nm.v) {
      gpuplan__free(ctx, nm.k);
      gpuplan__free(ctx, nm.v);
      return gpuplan__nomem(ctx);
    }
    for (i = 0; i < m->cap; i++)
      if (m->k[i]) {
        size_t j = gpuplan__amap_slot(m->k[i], nm.cap);
        while (nm.k[j]) j = (j + 1) & (nm.cap - 1);
        nm.k[j] = m->k[i];
        nm.v[j] = m->v[i];
        nm.n++;
      }
    gpuplan__free(ctx, m->k);
    gpuplan__free(ctx, m->v);
    *m = nm;
  }
  i = gpuplan__amap_slot(k, m->cap);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) m->n++;
  m->k[i] = k;
  m->v[i] = v;
  return GPUPLAN_OK;
}

/* Take (find and delete) k; 0 if absent.  Backward-shift deletion. */
static inline uint64_t gpuplan__amap_take(gpuplan__amap *m, uint64_t k) {
  size_t i, j;
  uint64_t v;
  if (!m->cap) return 0;
  i = gpuplan__amap_slot(k, m->cap);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) return 0;
  v = m->v[i];
  m->k[i] = 0;
  m->n--;
  j = i;
  for (;;) {
    size_t h;
    j = (j + 1) & (m->cap - 1);
    if (!m->k[j]) break;
    h = gpuplan__amap_slot(m->k[j], m->cap);
    if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
      m->k[i] = m->k[j];
      m->v[i] = m->v[j];
      m->k[j] = 0;
      i = j;
    }
  }
  return v;
}

/* The value at k, or 0. */
static inline uint64_t gpuplan__amap_get(const gpuplan__amap *m, uint64_t k) {
  size_t i;
  if (!m->cap) return 0;
  for (i = gpuplan__amap_slot(k, m->cap); m->k[i]; i = (i + 1) & (m->cap - 1))
    if (m->k[i] == k) return m->v[i];
  return 0;
}

static inline void gpuplan__amap_dispose(gpuplan_ctx *ctx, gpuplan__amap *m) {
  gpuplan__free(ctx, m->k);
  gpuplan__free(ctx, m->v);
  m->k = m->v = NULL;
  m->cap = m->n = 0;
}

#endif /* GPUPLAN_AMAP_H */
