/*
 * treap.h: a treap of blocks keyed by their address, over one array of
 * nodes linked by index (-1: none), written once for the replay's rebuild
 * (replay/replay.c) and the page's walked segment map (replay/html.c),
 * which keep different blocks.  Not installed.
 *
 * GPUPLAN__TREAP(P, NODE) defines, for a NODE with fields b.addr (the key,
 * uint64_t), pri (uint32_t) and l, r (long), static functions:
 *   P_split(v, x, key, &a, &c)  the tree x into keys < key (a) and the rest (c)
 *   P_merge(v, a, c)            two trees, every key of a below c's: the root
 *   P_le(v, x, key)             the node of the highest key <= key, or -1
 *   P_gt(v, x, key)             the node of the lowest key > key, or -1
 *   P_link(v, &root, k)         insert node k (its key not in the tree)
 *   P_unlink(v, &root, key)     take the node at key out; it, or -1
 *
 * GPUPLAN__TREAP_POOL(P, NODE, BLOCK) defines the nodes' storage: the type
 * P_pool (ctx, the array v of n nodes in cap, a free list through l, a
 * priority seed that must start nonzero) and
 *   P_new(pool, &block)   a node holding a copy of block, or -1 (no memory)
 *   P_free(pool, k)       node k back to the free list
 */
#ifndef GPUPLAN_TREAP_H
#define GPUPLAN_TREAP_H

#include <stdint.h>

#include "common/internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define GPUPLAN__TREAP_FN static __attribute__((unused))
#else
#define GPUPLAN__TREAP_FN static
#endif

#define GPUPLAN__TREAP(P, NODE)                                                              \
  GPUPLAN__TREAP_FN void P##_split(NODE *v, long x, uint64_t key, long *a, long *c) {       \
    if (x < 0) {                                                                             \
      *a = *c = -1;                                                                          \
    } else if (v[x].b.addr < key) {                                                          \
      P##_split(v, v[x].r, key, &v[x].r, c);                                                 \
      *a = x;                                                                                \
    } else {                                                                                 \
      P##_split(v, v[x].l, key, a, &v[x].l);                                                 \
      *c = x;                                                                                \
    }                                                                                        \
  }                                                                                          \
  GPUPLAN__TREAP_FN long P##_merge(NODE *v, long a, long c) {                                \
    if (a < 0) return c;                                                                     \
    if (c < 0) return a;                                                                     \
    if (v[a].pri > v[c].pri) {                                                               \
      v[a].r = P##_merge(v, v[a].r, c);                                                      \
      return a;                                                                              \
    }                                                                                        \
    v[c].l = P##_merge(v, a, v[c].l);                                                        \
    return c;                                                                                \
  }                                                                                          \
  GPUPLAN__TREAP_FN long P##_le(const NODE *v, long x, uint64_t key) {                       \
    long best = -1;                                                                          \
    while (x >= 0) {                                                                         \
      if (v[x].b.addr <= key) {                                                              \
        best = x;                                                                            \
        x = v[x].r;                                                                          \
      } else {                                                                               \
        x = v[x].l;                                                                          \
      }                                                                                      \
    }                                                                                        \
    return best;                                                                             \
  }                                                                                          \
  GPUPLAN__TREAP_FN long P##_gt(const NODE *v, long x, uint64_t key) {                       \
    long best = -1;                                                                          \
    while (x >= 0) {                                                                         \
      if (v[x].b.addr > key) {                                                               \
        best = x;                                                                            \
        x = v[x].l;                                                                          \
      } else {                                                                               \
        x = v[x].r;                                                                          \
      }                                                                                      \
    }                                                                                        \
    return best;                                                                             \
  }                                                                                          \
  /* Down to where k's priority puts it; what lies below there is split */                \
  /* around it. */                                                                           \
  GPUPLAN__TREAP_FN void P##_link(NODE *v, long *root, long k) {                             \
    long *link = root;                                                                       \
    while (*link >= 0 && v[*link].pri > v[k].pri)                                            \
      link = v[*link].b.addr < v[k].b.addr ? &v[*link].r : &v[*link].l;                      \
    P##_split(v, *link, v[k].b.addr, &v[k].l, &v[k].r);                                     \
    *link = k;                                                                               \
  }                                                                                          \
  /* Its two subtrees merge in its place. */                                                 \
  GPUPLAN__TREAP_FN long P##_unlink(NODE *v, long *root, uint64_t key) {                     \
    long *link = root, m;                                                                    \
    while (*link >= 0 && v[*link].b.addr != key)                                             \
      link = v[*link].b.addr < key ? &v[*link].r : &v[*link].l;                              \
    if ((m = *link) < 0) return -1;                                                          \
    *link = P##_merge(v, v[m].l, v[m].r);                                                    \
    return m;                                                                                \
  }

#define GPUPLAN__TREAP_POOL(P, NODE, BLOCK)                                                  \
  typedef struct P##_pool {                                                                  \
    gpuplan_ctx *ctx;                                                                        \
    NODE *v;                                                                                 \
    size_t n, cap;                                                                           \
    long freed;                                                                              \
    uint32_t seed;                                                                           \
  } P##_pool;                                                                                \
  GPUPLAN__TREAP_FN long P##_new(P##_pool *t, const BLOCK *b) {                              \
    long k;                                                                                  \
    if (t->freed >= 0) {                                                                     \
      k = t->freed;                                                                          \
      t->freed = t->v[k].l;                                                                  \
    } else {                                                                                 \
      if (t->n == t->cap) {                                                                  \
        size_t ncap = t->cap ? t->cap * 2 : 1024;                                            \
        NODE *nv = gpuplan__realloc(t->ctx, t->v, ncap * sizeof *nv);                        \
        if (!nv) return -1;                                                                  \
        t->v = nv;                                                                           \
        t->cap = ncap;                                                                       \
      }                                                                                      \
      k = (long)t->n++;                                                                      \
    }                                                                                        \
    t->seed ^= t->seed << 13; /* xorshift32 */                                               \
    t->seed ^= t->seed >> 17;                                                                \
    t->seed ^= t->seed << 5;                                                                 \
    t->v[k].b = *b;                                                                          \
    t->v[k].pri = t->seed;                                                                   \
    t->v[k].l = t->v[k].r = -1;                                                              \
    return k;                                                                                \
  }                                                                                          \
  GPUPLAN__TREAP_FN void P##_free(P##_pool *t, long k) {                                     \
    t->v[k].l = t->freed;                                                                    \
    t->freed = k;                                                                            \
  }

#endif /* GPUPLAN_TREAP_H */
