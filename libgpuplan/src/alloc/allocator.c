/*
 * allocator.c: PyTorch's native CUDA caching allocator (CUDACachingAllocator.cpp),
 * rule for rule.  Rule numbers refer to ../shared/reference/allocator-rules.md.
 *
 * Free blocks live in two sorted arrays (small and large pool) ordered by
 * (stream, size, address), as the std::set with BlockComparatorSize (R8);
 * allocated blocks are found by address in a hash table.  Sorted arrays
 * make the best-fit lookup a binary search and keep the order of
 * release_blocks (R19) for free; pools rarely hold more than a few thousand
 * blocks, so the memmove on insert is cheaper than a tree's pointer chase.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_int.h"

#define MiB 1048576ull

/* --- configuration ------------------------------------------------------- */

static void conf_defaults(gpuplan_alloc_conf *c, gpuplan_torch_version v) {
  memset(c, 0, sizeof *c);
  c->version = GPUPLAN_ALLOC_CONF_VERSION;
  c->torch = v;
  c->max_split_size = UINT64_MAX;
  c->max_non_split_rounding = 20 * MiB;
  c->large_segment_size = 20 * MiB;
  c->memory_fraction = 1.0;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static int ilog2(uint64_t x) {
  int r = -1;
  while (x) {
    x >>= 1;
    r++;
  }
  return r;
}

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Parse an unsigned decimal; returns the end or NULL. */
static const char *parse_u64(const char *p, uint64_t *out) {
  uint64_t v = 0;
  const char *s = p;
  while (*p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return NULL;
    v = v * 10 + d;
    p++;
  }
  if (p == s) return NULL;
  *out = v;
  return p;
}

static int conf_err(gpuplan_ctx *ctx, const char *key, const char *fmt, const char *val) {
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf%s%s: %s (got '%.60s')", *key ? " " : "", key, fmt, val);
}

/* roundup_power2_divisions: "4" or "[256:1,512:2,1024:4,>:8]" (R5). */
static const char *parse_divisions(gpuplan_ctx *ctx, const char *p, gpuplan_alloc_conf *c,
                                   int *rc) {
  uint64_t v;
  int i;
  *rc = GPUPLAN_OK;
  p = skip_ws(p);
  if (*p != '[') {
    const char *e = parse_u64(p, &v);
    if (!e || (v != 0 && !is_pow2(v)) || v > 65536) {
      *rc = conf_err(ctx, "roundup_power2_divisions", "must be 0 or a power of two", p);
      return NULL;
    }
    for (i = 0; i < 16; i++) c->roundup_divisions[i] = (unsigned)v;
    return e;
  }
  {
    int last = -1, first = 1;
    p++;
    for (;;) {
      uint64_t key = 0, val;
      int gt = 0, idx;
      p = skip_ws(p);
      if (*p == '>') {
        gt = 1;
        p++;
      } else {
        p = parse_u64(p, &key);
        if (!p || !is_pow2(key)) {
          *rc = conf_err(ctx, "roundup_power2_divisions", "keys are power-of-two sizes in MB or '>'", p ? p : "?");
          return NULL;
        }
      }
      p = skip_ws(p);
      if (*p != ':') {
        *rc = conf_err(ctx, "roundup_power2_divisions", "expected ':' in [size:divisions,...]", p);
        return NULL;
      }
      p = parse_u64(skip_ws(p + 1), &val);
      if (!p || (val != 0 && !is_pow2(val)) || val > 65536) {
        *rc = conf_err(ctx, "roundup_power2_divisions", "divisions must be 0 or a power of two", p ? p : "?");
        return NULL;
      }
      if (gt) {
        /* Newest code fills from last+1; older code from last, overwriting
         * the last explicit key (R5). */
        int from = c->torch == GPUPLAN_TORCH_LATEST ? last + 1 : (last < 0 ? 0 : last);
        for (i = from; i < 16; i++) c->roundup_divisions[i] = (unsigned)val;
      } else {
        idx = ilog2(key);
        if (idx > 15) idx = 15;
        if (first)
          for (i = 0; i < idx; i++) c->roundup_divisions[i] = (unsigned)val;
        c->roundup_divisions[idx] = (unsigned)val;
        last = idx;
      }
      first = 0;
      p = skip_ws(p);
      if (*p == ',') {
        p++;
        continue;
      }
      if (*p == ']') return p + 1;
      *rc = conf_err(ctx, "roundup_power2_divisions", "expected ',' or ']'", p);
      return NULL;
    }
  }
}

/* A real number that is the whole of v[0..n). */
static int parse_real(const char *v, size_t n, double *out) {
  char buf[64];
  char *e;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, v, n);
  buf[n] = '\0';
  *out = strtod(buf, &e);
  return *e == '\0';
}

static int parse_bool(const char *v, size_t n, int *out) {
  if (n == 4 && (strncmp(v, "True", 4) == 0 || strncmp(v, "true", 4) == 0)) *out = 1;
  else if (n == 5 && (strncmp(v, "False", 5) == 0 || strncmp(v, "false", 5) == 0)) *out = 0;
  else return 0;
  return 1;
}

int gpuplan_alloc_conf_parse(gpuplan_ctx *ctx, const char *s, gpuplan_torch_version v,
                             gpuplan_alloc_conf *out) {
  const char *p;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "alloc conf: out is NULL");
  if ((unsigned)v > GPUPLAN_TORCH_1_13)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "alloc conf: unknown torch version %d", (int)v);
  conf_defaults(out, v);
  if (!s) return GPUPLAN_OK;
  p = s;
  while (*(p = skip_ws(p))) {
    const char *k = p, *val;
    size_t klen, vlen;
    while (*p && *p != ':' && *p != ',') p++;
    klen = (size_t)(p - k);
    while (klen && (k[klen - 1] == ' ')) klen--;
    if (*p != ':')
      return conf_err(ctx, "", "expected key:value", k);
    val = skip_ws(p + 1);
#define KEY(name) (klen == sizeof(name) - 1 && strncmp(k, name, klen) == 0)
    if (KEY("roundup_power2_divisions")) {
      p = parse_divisions(ctx, val, out, &rc);
      if (!p) return rc;
    } else {
      p = val;
      while (*p && *p != ',') p++;
      vlen = (size_t)(p - val);
      while (vlen && val[vlen - 1] == ' ') vlen--;
      if (KEY("max_split_size_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen)
          return conf_err(ctx, "max_split_size_mb", "must be an integer number of MiB", val);
        if (mb < 20)
          return conf_err(ctx, "max_split_size_mb", "must be at least 20 (kLargeBuffer)", val);
        out->max_split_size = mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20;
      } else if (KEY("max_non_split_rounding_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen || mb > (1ull << 40))
          return conf_err(ctx, "max_non_split_rounding_mb", "must be an integer number of MiB", val);
        out->max_non_split_rounding = mb << 20;
      } else if (KEY("garbage_collection_threshold")) {
        double t;
        if (!parse_real(val, vlen, &t) || !(t > 0 && t < 1))
          return conf_err(ctx, "garbage_collection_threshold", "must be in (0, 1)", val);
        out->garbage_collection_threshold = t;
      } else if (KEY("expandable_segments")) {
        if (!parse_bool(val, vlen, &out->expandable_segments))
          return conf_err(ctx, "expandable_segments", "must be True or False", val);
      } else if (KEY("large_segment_size_mb")) {
        uint64_t mb;
        const char *e = parse_u64(val, &mb);
        if (!e || (size_t)(e - val) != vlen || mb < 2 || mb > 65536)
          return conf_err(ctx, "large_segment_size_mb", "must be an integer number of MiB >= 2", val);
        out->large_segment_size = mb << 20;
      } else if (KEY("per_process_memory_fraction")) {
        double t;
        if (!parse_real(val, vlen, &t) || !(t > 0 && t <= 1))
          return conf_err(ctx, "per_process_memory_fraction", "must be in (0, 1]", val);
        out->memory_fraction = t;
      } else if (KEY("backend")) {
        if (!(vlen == 6 && strncmp(val, "native", 6) == 0))
          return conf_err(ctx, "backend", "only 'native' is modelled (cudaMallocAsync is not)", val);
      } else if (KEY("release_lock_on_cudamalloc") || KEY("pinned_use_cuda_host_register") ||
                 KEY("pinned_num_register_threads") || KEY("graph_capture_record_stream_reuse") ||
                 KEY("pinned_use_background_threads")) {
        /* Accepted; no effect on a single-threaded model. */
      } else {
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(klen < 60 ? klen : 60), k);
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "alloc conf: unknown key '%s' (known: max_split_size_mb, "
                              "roundup_power2_divisions, garbage_collection_threshold, "
                              "expandable_segments, max_non_split_rounding_mb, "
                              "large_segment_size_mb, per_process_memory_fraction, backend)", key);
      }
    }
#undef KEY
    p = skip_ws(p);
    if (*p == ',') p++;
    else if (*p) return conf_err(ctx, "", "expected ',' between settings", p);
  }
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

/* --- rounding (R2-R4, R7) ------------------------------------------------ */

static unsigned divisions_for(const gpuplan_alloc_conf *c, uint64_t n) {
  int idx = ilog2(n) - 20;
  if (idx < 0) idx = 0;
  if (idx > 15) idx = 15;
  return c->roundup_divisions[idx];
}

static uint64_t next_division(uint64_t n, uint64_t d) {
  uint64_t f, step;
  if (is_pow2(n)) return n;
  f = 1ull << ilog2(n);
  step = f >> ilog2(d);
  if (step == 0) return 2 * f;
  return (n + step - 1) / step * step;
}

uint64_t gpuplan__round_size(const gpuplan_alloc_conf *c, uint64_t n) {
  uint64_t d;
  if (n < KMIN_BLOCK) return KMIN_BLOCK;
  d = divisions_for(c, n);
  if ((c->torch == GPUPLAN_TORCH_LATEST ? d > 1 : d > 0) && n > KMIN_BLOCK * d)
    return next_division(n, d);
  return (n + KMIN_BLOCK - 1) / KMIN_BLOCK * KMIN_BLOCK;
}

uint64_t gpuplan__allocation_size(const gpuplan_alloc_conf *c, uint64_t size) {
  if (size <= KSMALL_SIZE) return KSMALL_BUFFER;
  if (size < KMIN_LARGE_ALLOC) return c->large_segment_size;
  return (size + KROUND_LARGE - 1) / KROUND_LARGE * KROUND_LARGE;
}

/* --- stats --------------------------------------------------------------- */

static void stat_add(gpuplan_stat *s, int64_t d) {
  s->current += d;
  if (d > 0) s->allocated += d;
  else s->freed -= d;
  if (s->current > s->peak) s->peak = s->current;
}

static void stat3(gpuplan_stat *arr, int small, int64_t d) {
  stat_add(&arr[GPUPLAN_POOL_ALL], d);
  stat_add(&arr[small ? GPUPLAN_POOL_SMALL : GPUPLAN_POOL_LARGE], d);
}

static void emit(gpuplan_cachealloc *a, gpuplan_alloc_action act, uint64_t addr, uint64_t size,
                 uint64_t stream, uint64_t device_free) {
  gpuplan_alloc_event ev;
  if (!a->trace) return;
  ev.action = act;
  ev.addr = addr;
  ev.size = size;
  ev.stream = stream;
  ev.device_free = device_free;
  a->trace(a->trace_payload, &ev);
}

/* --- pools (R8) -------------------------------------------------------- */

static int blk_less(const gpuplan__blk *x, uint64_t stream, uint64_t size, uint64_t addr) {
  if (x->stream != stream) return x->stream < stream;
  if (x->size != size) return x->size < size;
  return x->addr < addr;
}

static size_t lower_bound(const gpuplan__pool *p, uint64_t stream, uint64_t size, uint64_t addr) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (blk_less(p->v[mid], stream, size, addr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Insert b at index i of a growable pointer array / remove index i. */
static int parr_insert(gpuplan_cachealloc *a, gpuplan__blk ***v, size_t *n, size_t *cap, size_t i,
                       gpuplan__blk *b) {
  if (*n == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    gpuplan__blk **nv = gpuplan__realloc(a->ctx, *v, ncap * sizeof *nv);
    if (!nv) return gpuplan__nomem(a->ctx);
    *v = nv;
    *cap = ncap;
  }
  memmove(*v + i + 1, *v + i, (*n - i) * sizeof **v);
  (*v)[i] = b;
  (*n)++;
  return GPUPLAN_OK;
}

static void parr_erase(gpuplan__blk **v, size_t *n, size_t i) {
  memmove(v + i, v + i + 1, (*n - i - 1) * sizeof *v);
  (*n)--;
}

static int pool_insert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b) {
  b->gc_count = 0;
  return parr_insert(a, &p->v, &p->n, &p->cap, lower_bound(p, b->stream, b->size, b->addr), b);
}

static void pool_remove(gpuplan__pool *p, gpuplan__blk *b) {
  size_t i = lower_bound(p, b->stream, b->size, b->addr);
  if (NEVER(i >= p->n || p->v[i] != b)) return;
  parr_erase(p->v, &p->n, i);
}

static gpuplan__pool *pool_of(gpuplan_cachealloc *a, int small) {
  return small ? &a->small : &a->large;
}

/* The unmapped set, ordered by (stream, address) (BlockComparatorAddress). */
static size_t ulower(const gpuplan__pool *p, uint64_t stream, uint64_t addr) {
  size_t lo = 0, hi = p->un;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const gpuplan__blk *x = p->u[mid];
    if (x->stream < stream || (x->stream == stream && x->addr < addr)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static int u_insert(gpuplan_cachealloc *a, gpuplan__pool *p, gpuplan__blk *b) {
  return parr_insert(a, &p->u, &p->un, &p->ucap, ulower(p, b->stream, b->addr), b);
}

static void u_remove(gpuplan__pool *p, gpuplan__blk *b) {
  size_t i = ulower(p, b->stream, b->addr);
  if (NEVER(i >= p->un || p->u[i] != b)) return;
  parr_erase(p->u, &p->un, i);
}

/* --- allocated-block hash ------------------------------------------------ */

static size_t hslot(uint64_t addr, size_t cap) {
  uint64_t h = addr * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (cap - 1);
}

static int hash_put(gpuplan_cachealloc *a, gpuplan__blk *b) {
  if (a->hcount * 2 >= a->hcap) {
    size_t ncap = a->hcap ? a->hcap * 2 : 1024, i;
    gpuplan__blk **nh = gpuplan__calloc(a->ctx, ncap, sizeof *nh);
    if (!nh) return gpuplan__nomem(a->ctx);
    for (i = 0; i < a->hcap; i++) {
      gpuplan__blk *c = a->hash[i];
      while (c) {
        gpuplan__blk *next = c->hnext;
        size_t s = hslot(c->addr, ncap);
        c->hnext = nh[s];
        nh[s] = c;
        c = next;
      }
    }
    gpuplan__free(a->ctx, a->hash);
    a->hash = nh;
    a->hcap = ncap;
  }
  {
    size_t s = hslot(b->addr, a->hcap);
    b->hnext = a->hash[s];
    a->hash[s] = b;
    a->hcount++;
  }
  return GPUPLAN_OK;
}

static gpuplan__blk *hash_take(gpuplan_cachealloc *a, uint64_t addr) {
  gpuplan__blk **pp;
  if (!a->hcap) return NULL;
  for (pp = &a->hash[hslot(addr, a->hcap)]; *pp; pp = &(*pp)->hnext) {
    if ((*pp)->addr == addr) {
      gpuplan__blk *b = *pp;
      *pp = b->hnext;
      b->hnext = NULL;
      a->hcount--;
      return b;
    }
  }
  return NULL;
}

/* --- block structs --------------------------------------------------------- */

static gpuplan__blk *blk_new(gpuplan_cachealloc *a) {
  gpuplan__blk *b = a->spare;
  if (b) a->spare = b->hnext;
  else b = gpuplan__malloc(a->ctx, sizeof *b);
  if (b) {
    memset(b, 0, sizeof *b);
    b->mapped = 1;
  }
  return b;
}

static void blk_del(gpuplan_cachealloc *a, gpuplan__blk *b) {
  b->hnext = a->spare;
  a->spare = b;
}

/* --- the mock device ------------------------------------------------------ */

static int mock_malloc(void *payload, uint64_t size, uint64_t *addr_out) {
  gpuplan__mockdev *m = payload;
  size_t i;
  if (size > m->capacity - m->reserved) return GPUPLAN_ENOTFOUND;
  for (i = 0; i < m->nfree; i++) {
    if (m->free_size[i] >= size) {
      *addr_out = m->free_addr[i];
      m->free_addr[i] += size;
      m->free_size[i] -= size;
      if (!m->free_size[i]) {
        m->free_addr[i] = m->free_addr[m->nfree - 1];
        m->free_size[i] = m->free_size[m->nfree - 1];
        m->nfree--;
      }
      m->reserved += size;
      return GPUPLAN_OK;
    }
  }
  *addr_out = m->next_addr;
  m->next_addr += size;
  m->reserved += size;
  return GPUPLAN_OK;
}

static void mock_free(void *payload, uint64_t addr, uint64_t size) {
  gpuplan__mockdev *m = payload;
  m->reserved -= size;
  if (addr + size == m->next_addr) {
    m->next_addr = addr;
    return;
  }
  if (m->nfree == m->capfree) {
    size_t ncap = m->capfree ? m->capfree * 2 : 16;
    uint64_t *na = gpuplan__realloc(m->ctx, m->free_addr, ncap * sizeof *na);
    uint64_t *ns;
    if (!na) return; /* the range is lost to reuse, not to accounting */
    m->free_addr = na;
    ns = gpuplan__realloc(m->ctx, m->free_size, ncap * sizeof *ns);
    if (!ns) return;
    m->free_size = ns;
    m->capfree = ncap;
  }
  m->free_addr[m->nfree] = addr;
  m->free_size[m->nfree] = size;
  m->nfree++;
}

static int mock_map(void *payload, uint64_t size) {
  gpuplan__mockdev *m = payload;
  if (size > m->capacity - m->reserved) return GPUPLAN_ENOTFOUND;
  m->reserved += size;
  return GPUPLAN_OK;
}

static void mock_unmap(void *payload, uint64_t size) {
  gpuplan__mockdev *m = payload;
  m->reserved -= size;
}

static void mock_info(void *payload, uint64_t *free_out, uint64_t *total_out) {
  gpuplan__mockdev *m = payload;
  *free_out = m->capacity - m->reserved;
  *total_out = m->capacity;
}

/* --- segments ------------------------------------------------------------- */

gpuplan__seg *gpuplan__alloc_add_segment(gpuplan_cachealloc *a, uint64_t addr, uint64_t size,
                                         uint64_t stream, int small) {
  gpuplan__seg *s = gpuplan__calloc(a->ctx, 1, sizeof *s);
  if (!s) return NULL;
  s->addr = addr;
  s->size = size;
  s->stream = stream;
  s->small = small;
  s->snext = a->segs;
  if (a->segs) a->segs->sprev = s;
  a->segs = s;
  a->nsegs++;
  stat3(a->st.segment, small, 1);
  stat3(a->st.reserved_bytes, small, (int64_t)size);
  if (size >= a->conf.max_split_size) stat_add(&a->st.oversize_segments, 1);
  return s;
}

static void seg_unlink(gpuplan_cachealloc *a, gpuplan__seg *s) {
  if (s->sprev) s->sprev->snext = s->snext;
  else a->segs = s->snext;
  if (s->snext) s->snext->sprev = s->sprev;
  a->nsegs--;
  stat3(a->st.segment, s->small, -1);
  stat3(a->st.reserved_bytes, s->small, -(int64_t)s->size);
  if (s->size >= a->conf.max_split_size) stat_add(&a->st.oversize_segments, -1);
  gpuplan__free(a->ctx, s);
}

/* Append a block at the end of a segment's block list (replay setup). */
int gpuplan__alloc_add_block(gpuplan_cachealloc *a, gpuplan__seg *s, uint64_t addr,
                             uint64_t size, uint64_t requested, int allocated) {
  gpuplan__blk *b = blk_new(a), *last;
  int rc;
  if (!b) return gpuplan__nomem(a->ctx);
  b->addr = addr;
  b->size = size;
  b->requested = requested;
  b->stream = s->stream;
  b->seg = s;
  b->small = s->small;
  b->allocated = allocated;
  for (last = s->first; last && last->next; last = last->next) {}
  b->prev = last;
  if (last) last->next = b;
  else s->first = b;
  if (allocated) {
    rc = hash_put(a, b);
    stat3(a->st.allocation, b->small, 1);
    stat3(a->st.allocated_bytes, b->small, (int64_t)size);
    stat3(a->st.active, b->small, 1);
    stat3(a->st.active_bytes, b->small, (int64_t)size);
    stat3(a->st.requested_bytes, b->small, (int64_t)requested);
    if (size >= a->conf.max_split_size) stat_add(&a->st.oversize_allocations, 1);
  } else {
    /* Appended unsorted; gpuplan__alloc_recount sorts the pools once. */
    gpuplan__pool *p = pool_of(a, b->small);
    rc = GPUPLAN_OK;
    if (p->n == p->cap) {
      size_t ncap = p->cap ? p->cap * 2 : 64;
      gpuplan__blk **nv = gpuplan__realloc(a->ctx, p->v, ncap * sizeof *nv);
      if (!nv) rc = gpuplan__nomem(a->ctx);
      else p->v = nv, p->cap = ncap;
    }
    if (rc == GPUPLAN_OK) p->v[p->n++] = b;
  }
  if (rc) return rc;
  return GPUPLAN_OK;
}

static int blk_cmp(const void *x, const void *y) {
  const gpuplan__blk *a = *(const gpuplan__blk *const *)x, *b = *(const gpuplan__blk *const *)y;
  if (a->stream != b->stream) return a->stream < b->stream ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* --- allocator object ----------------------------------------------------- */

int gpuplan_cachealloc_new(gpuplan_ctx *ctx, const gpuplan_alloc_conf *conf, uint64_t capacity,
                          const gpuplan_device_ops *device, gpuplan_cachealloc **out) {
  gpuplan_cachealloc *a;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "allocator: out is NULL");
  *out = NULL;
  if (conf && (conf->version != GPUPLAN_ALLOC_CONF_VERSION || conf->max_split_size < 20 * MiB ||
               !(conf->memory_fraction > 0 && conf->memory_fraction <= 1) ||
               conf->large_segment_size < 2 * MiB))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "allocator: invalid conf (version, max_split_size >= 20 MiB, "
                          "memory_fraction in (0, 1], large_segment_size >= 2 MiB)");
  if (!device && capacity == 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "allocator: capacity must be positive");
  if (device && (!device->malloc || !device->free || !device->mem_info))
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "allocator: device ops must all be set");
  a = gpuplan__calloc(ctx, 1, sizeof *a);
  if (!a) return gpuplan__nomem(ctx);
  a->ctx = ctx;
  if (conf) a->conf = *conf;
  else conf_defaults(&a->conf, GPUPLAN_TORCH_LATEST);
  a->mock.capacity = capacity;
  a->mock.next_addr = 0x7f0000000000ull; /* looks like a CUDA device address */
  a->mock.next_va = 1ull << 56;          /* expandable reservations live apart */
  a->mock.ctx = ctx;
  if (device) {
    a->dev = *device;
  } else {
    a->dev.malloc = mock_malloc;
    a->dev.free = mock_free;
    a->dev.mem_info = mock_info;
    a->dev.map = mock_map;
    a->dev.unmap = mock_unmap;
    a->dev.payload = &a->mock;
  }
  {
    uint64_t f, t;
    a->dev.mem_info(a->dev.payload, &f, &t);
    a->total_memory = t;
  }
  a->st.max_split_size = a->conf.max_split_size == UINT64_MAX ? -1 : (int64_t)a->conf.max_split_size;
  gpuplan__ctx_ref(ctx);
  *out = a;
  return GPUPLAN_OK;
}

void gpuplan_cachealloc_free(gpuplan_cachealloc *a) {
  gpuplan_ctx *ctx;
  if (!a) return;
  ctx = a->ctx;
  while (a->segs) {
    gpuplan__seg *s = a->segs;
    gpuplan__blk *b = s->first;
    while (b) {
      gpuplan__blk *n = b->next;
      gpuplan__free(ctx, b);
      b = n;
    }
    a->segs = s->snext;
    if (!s->expandable) a->dev.free(a->dev.payload, s->addr, s->size);
    gpuplan__free(ctx, s);
  }
  while (a->spare) {
    gpuplan__blk *n = a->spare->hnext;
    gpuplan__free(ctx, a->spare);
    a->spare = n;
  }
  gpuplan__free(ctx, a->small.v);
  gpuplan__free(ctx, a->large.v);
  gpuplan__free(ctx, a->small.u);
  gpuplan__free(ctx, a->large.u);
  gpuplan__free(ctx, a->hash);
  gpuplan__free(ctx, a->mock.free_addr);
  gpuplan__free(ctx, a->mock.free_size);
  gpuplan__free(ctx, a);
  gpuplan__ctx_unref(ctx);
}

void gpuplan_cachealloc_set_trace(gpuplan_cachealloc *a, gpuplan_alloc_trace_fn fn, void *payload) {
  if (!a) return;
  a->trace = fn;
  a->trace_payload = payload;
}

const gpuplan_alloc_stats *gpuplan_cachealloc_stats(const gpuplan_cachealloc *a) {
  return a ? &a->st : NULL;
}

const gpuplan_alloc_conf *gpuplan_cachealloc_conf(const gpuplan_cachealloc *a) {
  return a ? &a->conf : NULL;
}

/* --- the algorithm --------------------------------------------------------- */

static int gc_enabled(const gpuplan_cachealloc *a) {
  return a->conf.memory_fraction < 1 && a->conf.garbage_collection_threshold > 0;
}

static uint64_t allowed_max(const gpuplan_cachealloc *a) {
  return (uint64_t)(a->conf.memory_fraction * (double)a->total_memory);
}

static uint64_t exp_size(const gpuplan__blk *b) {
  return b->size + (b->next && !b->next->mapped ? b->next->size : 0);
}

/* R9, R10: the single best-fit candidate, or NULL. */
static gpuplan__blk *get_free_block(gpuplan_cachealloc *a, gpuplan__pool *p, uint64_t size,
                                    uint64_t stream) {
  size_t i;
  gpuplan__blk *b;
  uint64_t M = a->conf.max_split_size;
  if (gc_enabled(a) && p == &a->large) {
    size_t k;
    p->get_free_blocks_call_count++;
    for (k = 0; k < p->n; k++) p->v[k]->gc_count++;
  }
  i = lower_bound(p, stream, size, 0);
  if (i >= p->n) return NULL;
  b = p->v[i];
  if (b->stream != stream) return NULL;
  if (b->expandable) {
    /* R27: a block that can grow into unmapped space counts at the size it
     * can grow to, so the free tail of a segment is used last. */
    while (i + 1 < p->n && p->v[i]->expandable && p->v[i + 1]->stream == stream &&
           exp_size(p->v[i + 1]) < exp_size(p->v[i]))
      i++;
    b = p->v[i];
  }
  if (size < M && b->size >= M) return NULL;
  if (size >= M && b->size >= size + a->conf.max_non_split_rounding) return NULL;
  pool_remove(p, b);
  return b;
}

/* cudaFree of the whole free segment of b, which the caller has taken out
 * of its pool. */
static void release_segment(gpuplan_cachealloc *a, gpuplan__blk *b) {
  gpuplan__seg *s = b->seg;
  a->dev.free(a->dev.payload, s->addr, s->size);
  a->st.num_device_free++;
  emit(a, GPUPLAN_ACT_SEGMENT_FREE, s->addr, s->size, s->stream, 0);
  blk_del(a, b);
  seg_unlink(a, s);
}

static void release_block(gpuplan_cachealloc *a, gpuplan__blk *b) {
  pool_remove(pool_of(a, b->small), b);
  release_segment(a, b);
}

static void unmap_block(gpuplan_cachealloc *a, gpuplan__blk *b);

/* R19 step 2: every unsplit free block of a pool, in pool order; then the
 * free pages of the pool's expandable segments are unmapped (R29).  The
 * end state does not depend on the order in which those are unmapped. */
static void release_blocks(gpuplan_cachealloc *a, gpuplan__pool *p) {
  size_t i, w = 0;
  gpuplan__seg *s;
  int small = p == &a->small;
  /* One compacting pass: the pool keeps its order, no per-block memmove. */
  for (i = 0; i < p->n; i++) {
    gpuplan__blk *b = p->v[i];
    if (!b->expandable && !b->prev && !b->next) release_segment(a, b);
    else p->v[w++] = b;
  }
  p->n = w;
  for (s = a->segs; s; s = s->snext) {
    gpuplan__blk *b;
    if (!s->expandable || s->small != small) continue;
    for (b = s->first; b; b = b->next)
      if (!b->allocated && b->mapped) unmap_block(a, b);
  }
}

static void release_cached_blocks(gpuplan_cachealloc *a) {
  a->st.num_sync_all_streams++;
  release_blocks(a, &a->large);
  release_blocks(a, &a->small);
}

/* R21 (only when max_split_size is set). */
static int release_available_cached_blocks(gpuplan_cachealloc *a, gpuplan__pool *p, uint64_t size,
                                           uint64_t stream) {
  uint64_t M = a->conf.max_split_size, key = size > M ? size : M, freed = 0;
  size_t i;
  if (M == UINT64_MAX) return 0;
  i = lower_bound(p, stream, key, 0);
  if (i < p->n && p->v[i]->stream == stream && !p->v[i]->expandable) {
    release_block(a, p->v[i]);
    return 1;
  }
  /* From the largest block of this stream downwards. */
  i = lower_bound(p, stream + 1, 0, 0);
  while (i > 0 && freed < key) {
    gpuplan__blk *b = p->v[i - 1];
    if (b->stream != stream || b->size < M) break;
    i--;
    if (!b->expandable && !b->prev && !b->next) {
      freed += b->size;
      release_block(a, b);
    }
  }
  return freed >= key;
}

/* R20. */
static void garbage_collect(gpuplan_cachealloc *a) {
  uint64_t threshold = (uint64_t)(a->conf.garbage_collection_threshold * (double)allowed_max(a));
  uint64_t reserved = (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current, target, reclaimed = 0;
  gpuplan__pool *p = &a->large;
  if (reserved <= threshold) return;
  target = reserved - threshold;
  for (;;) {
    double total_age = 0, avg;
    size_t i, n = 0, freed_any = 0;
    for (i = 0; i < p->n; i++)
      if (!p->v[i]->expandable && !p->v[i]->prev && !p->v[i]->next) {
        total_age += (double)p->v[i]->gc_count;
        n++;
      }
    if (n == 0) break;
    avg = total_age / (double)n;
    i = 0;
    while (i < p->n) {
      gpuplan__blk *b = p->v[i];
      if (!b->expandable && !b->prev && !b->next && (double)b->gc_count >= avg) {
        reclaimed += b->size;
        freed_any++;
        release_block(a, b);
      } else {
        i++;
      }
    }
    if (reclaimed >= target || !freed_any) break;
  }
}

/* --- expandable segments (R26-R30) ----------------------------------------- */

static uint64_t page_of(const gpuplan_cachealloc *a, int small) {
  return small ? KSMALL_BUFFER : a->conf.large_segment_size;
}

/* Merge b with its neighbour n if both are free and equally mapped. */
static void merge_mapped(gpuplan_cachealloc *a, gpuplan__blk *b, gpuplan__blk *n);

/* Map the pages covering [b->addr, b->addr + size) of the unmapped block b. */
static int map_block(gpuplan_cachealloc *a, gpuplan__blk *b, uint64_t size) {
  gpuplan__pool *p = pool_of(a, b->small);
  uint64_t page = b->seg->page, off = b->addr - b->seg->addr;
  uint64_t end = (off + size + page - 1) / page * page, mapped;
  if (end > b->seg->size) end = b->seg->size;
  mapped = end - off;
  uint64_t at = b->addr;
  if (a->dev.map && a->dev.map(a->dev.payload, mapped) != GPUPLAN_OK) return 0;
  u_remove(p, b);
  b->mapped = 1;
  if (mapped < b->size) {
    gpuplan__blk *r = blk_new(a);
    if (!r || u_insert(a, p, r) != GPUPLAN_OK) {
      /* Out of host memory: undo, as a failed cuMemCreate would. */
      if (r) blk_del(a, r);
      b->mapped = 0;
      u_insert(a, p, b);
      if (a->dev.unmap) a->dev.unmap(a->dev.payload, mapped);
      return 0;
    }
    u_remove(p, r);
    r->addr = b->addr + mapped;
    r->size = b->size - mapped;
    r->stream = b->stream;
    r->seg = b->seg;
    r->small = b->small;
    r->expandable = 1;
    r->mapped = 0;
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = mapped;
    u_insert(a, p, r); /* cannot fail: capacity was just ensured */
  }
  merge_mapped(a, b, b->prev);
  merge_mapped(a, b, b->next);
  pool_insert(a, p, b);
  stat3(a->st.reserved_bytes, b->small, (int64_t)mapped);
  a->st.num_device_alloc++;
  emit(a, GPUPLAN_ACT_SEGMENT_MAP, at, mapped, b->stream, 0);
  return 1;
}

/* R29: unmap the whole pages inside the free mapped block b. */
static void unmap_block(gpuplan_cachealloc *a, gpuplan__blk *b) {
  gpuplan__pool *p = pool_of(a, b->small);
  uint64_t page = b->seg->page, base = b->seg->addr;
  uint64_t lo = (b->addr - base + page - 1) / page * page + base;
  uint64_t hi = (b->addr + b->size - base) / page * page + base;
  gpuplan__blk *before = NULL, *after = NULL;
  if (lo >= hi) return;
  if (lo > b->addr && !(before = blk_new(a))) return;
  if (hi < b->addr + b->size && !(after = blk_new(a))) {
    if (before) blk_del(a, before);
    return;
  }
  pool_remove(p, b);
  if (before) {
    before->addr = b->addr;
    before->size = lo - b->addr;
    before->stream = b->stream;
    before->seg = b->seg;
    before->small = b->small;
    before->expandable = 1;
    before->prev = b->prev;
    before->next = b;
    if (b->prev) b->prev->next = before;
    else b->seg->first = before;
    b->prev = before;
    pool_insert(a, p, before);
  }
  if (after) {
    after->addr = hi;
    after->size = b->addr + b->size - hi;
    after->stream = b->stream;
    after->seg = b->seg;
    after->small = b->small;
    after->expandable = 1;
    after->prev = b;
    after->next = b->next;
    if (b->next) b->next->prev = after;
    b->next = after;
    pool_insert(a, p, after);
  }
  b->addr = lo;
  b->size = hi - lo;
  b->mapped = 0;
  if (a->dev.unmap) a->dev.unmap(a->dev.payload, hi - lo);
  stat3(a->st.reserved_bytes, b->small, -(int64_t)(hi - lo));
  a->st.num_device_free++;
  emit(a, GPUPLAN_ACT_SEGMENT_UNMAP, lo, hi - lo, b->stream, 0);
  /* Merge with unmapped neighbours (they are in the unmapped set). */
  if (b->prev && !b->prev->mapped) {
    gpuplan__blk *n = b->prev;
    u_remove(p, n);
    b->addr = n->addr;
    b->size += n->size;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
    else b->seg->first = b;
    blk_del(a, n);
  }
  if (b->next && !b->next->mapped) {
    gpuplan__blk *n = b->next;
    u_remove(p, n);
    b->size += n->size;
    b->next = n->next;
    if (b->next) b->next->prev = b;
    blk_del(a, n);
  }
  u_insert(a, p, b);
}

static int allocatable(const gpuplan__blk *b) { return b && !b->allocated; }

static int has_room(const gpuplan__blk *b, uint64_t size) {
  uint64_t bytes = 0;
  while (bytes < size && allocatable(b)) {
    bytes += b->size;
    b = b->next;
  }
  return bytes >= size;
}

/* find_expandable_block: the lowest unmapped range on this stream (with a
 * free block right before it) that has room, or a new reservation. */
static gpuplan__blk *find_expandable(gpuplan_cachealloc *a, uint64_t stream, int small, uint64_t size) {
  gpuplan__pool *p = pool_of(a, small);
  size_t i;
  gpuplan__seg *s;
  gpuplan__blk *c;
  uint64_t page = page_of(a, small), va;
  for (i = ulower(p, stream, 0); i < p->un && p->u[i]->stream == stream; i++) {
    c = p->u[i];
    if (allocatable(c->prev)) c = c->prev;
    if (has_room(c, size)) return c;
  }
  /* Reserve address space for 1 1/8 of the device's memory. */
  va = a->total_memory + a->total_memory / 8;
  va = (va + page - 1) / page * page;
  if (va < size) va = (size + page - 1) / page * page;
  s = gpuplan__calloc(a->ctx, 1, sizeof *s);
  c = s ? blk_new(a) : NULL;
  if (!c || u_insert(a, p, c) != GPUPLAN_OK) {
    if (c) blk_del(a, c);
    gpuplan__free(a->ctx, s);
    return NULL;
  }
  u_remove(p, c);
  s->addr = a->mock.next_va;
  a->mock.next_va += va + (1ull << 30);
  s->size = va;
  s->stream = stream;
  s->small = small;
  s->expandable = 1;
  s->page = page;
  s->snext = a->segs;
  if (a->segs) a->segs->sprev = s;
  a->segs = s;
  a->nsegs++;
  c->addr = s->addr;
  c->size = va;
  c->stream = stream;
  c->seg = s;
  c->small = small;
  c->expandable = 1;
  c->mapped = 0;
  s->first = c;
  u_insert(a, p, c);
  return c;
}

/* try_allocate_expandable_block: grow into unmapped space until a free
 * block of size bytes exists; returns it out of the pool. */
static gpuplan__blk *alloc_expandable(gpuplan_cachealloc *a, uint64_t stream, int small, uint64_t size) {
  gpuplan__blk *c = find_expandable(a, stream, small, size);
  if (!c) return NULL;
  if (!c->mapped) {
    uint64_t want = c->size < size ? c->size : size;
    if (!map_block(a, c, want)) return NULL;
  }
  while (c->size < size) {
    gpuplan__blk *n = c->next;
    uint64_t rem = size - c->size;
    if (!n || n->mapped) return NULL;
    if (!map_block(a, n, rem < n->size ? rem : n->size)) return NULL;
    c = n; /* n absorbed c when it merged backwards */
  }
  pool_remove(pool_of(a, small), c);
  return c;
}

/* R18: a new segment from the device. */
static gpuplan__blk *alloc_block(gpuplan_cachealloc *a, uint64_t alloc_size, uint64_t expand_size,
                                 uint64_t stream, int small, int is_retry, int *rc) {
  uint64_t addr;
  gpuplan__seg *s;
  gpuplan__blk *b;
  *rc = GPUPLAN_OK;
  if (is_retry) a->st.num_alloc_retries++;
  if (a->conf.memory_fraction < 1 &&
      (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current + alloc_size > allowed_max(a))
    return NULL;
  if (a->conf.expandable_segments) {
    (void)addr;
    return alloc_expandable(a, stream, small, expand_size);
  }
  if (a->dev.malloc(a->dev.payload, alloc_size, &addr) != GPUPLAN_OK) return NULL;
  s = gpuplan__alloc_add_segment(a, addr, alloc_size, stream, small);
  b = s ? blk_new(a) : NULL;
  if (!b) {
    if (s) seg_unlink(a, s);
    a->dev.free(a->dev.payload, addr, alloc_size);
    *rc = gpuplan__nomem(a->ctx);
    return NULL;
  }
  a->st.num_device_alloc++;
  emit(a, GPUPLAN_ACT_SEGMENT_ALLOC, addr, alloc_size, stream, 0);
  b->addr = addr;
  b->size = alloc_size;
  b->stream = stream;
  b->seg = s;
  b->small = small;
  s->first = b;
  return b;
}

static void oom_message(gpuplan_cachealloc *a, uint64_t alloc_size, uint64_t request) {
  char A[32], T[32], F[32], P[32], U[32], R[32], AL[48] = "";
  uint64_t dfree, dtotal, allocated, reserved;
  a->dev.mem_info(a->dev.payload, &dfree, &dtotal);
  allocated = (uint64_t)a->st.allocated_bytes[GPUPLAN_POOL_ALL].current;
  reserved = (uint64_t)a->st.reserved_bytes[GPUPLAN_POOL_ALL].current;
  gpuplan_format_size(alloc_size, A, sizeof A);
  gpuplan_format_size(dtotal, T, sizeof T);
  gpuplan_format_size(dfree, F, sizeof F);
  gpuplan_format_size(allocated, P, sizeof P);
  gpuplan_format_size(reserved - allocated, U, sizeof U);
  gpuplan_format_size(reserved, R, sizeof R);
  if (a->conf.memory_fraction < 1) {
    char m[32];
    gpuplan_format_size(allowed_max(a), m, sizeof m);
    snprintf(AL, sizeof AL, "%s allowed; ", m);
  }
  (void)request;
  if (a->conf.torch == GPUPLAN_TORCH_2_0 || a->conf.torch == GPUPLAN_TORCH_1_13) {
    gpuplan__error(a->ctx, GPUPLAN_EOOM,
                   "CUDA out of memory. Tried to allocate %s (GPU 0; %s total capacity; %s already "
                   "allocated; %s free; %s%s reserved in total by PyTorch) If reserved memory is >> "
                   "allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
                   "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
                   A, T, P, F, AL, R);
  } else {
    gpuplan__error(a->ctx, GPUPLAN_EOOM,
                   "CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of "
                   "which %s is free. %sOf the allocated memory %s is allocated by PyTorch, and %s "
                   "is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
                   "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                   "fragmentation.  See documentation for Memory Management  (%s)",
                   A, T, F, AL, P, U,
                   a->conf.torch == GPUPLAN_TORCH_LATEST
                       ? "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
                       : "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables");
  }
}

int gpuplan_cachealloc_malloc(gpuplan_cachealloc *a, uint64_t orig, uint64_t stream,
                             uint64_t *addr_out) {
  uint64_t size, alloc_size, remaining, M;
  gpuplan__pool *p;
  gpuplan__blk *b;
  int small, rc = GPUPLAN_OK;
  if (!a) return GPUPLAN_EMISUSE;
  if (!addr_out) return gpuplan__error(a->ctx, GPUPLAN_EMISUSE, "allocator: addr_out is NULL");
  *addr_out = 0;
  if (orig == 0) return GPUPLAN_OK; /* R24 */
  if (orig >= (1ull << 60)) {      /* R23 */
    a->st.num_ooms++;
    return gpuplan__error(a->ctx, GPUPLAN_EOOM,
                          "CUDA out of memory. Tried to allocate more than 1EB memory.");
  }
  M = a->conf.max_split_size;
  size = gpuplan__round_size(&a->conf, orig);
  small = size <= KSMALL_SIZE;
  p = pool_of(a, small);
  alloc_size = gpuplan__allocation_size(&a->conf, size);

  b = get_free_block(a, p, size, stream);
  if (!b) {
    if (gc_enabled(a)) garbage_collect(a);
    b = alloc_block(a, alloc_size, size, stream, small, 0, &rc);
    if (!b && !rc && release_available_cached_blocks(a, p, size, stream))
      b = alloc_block(a, alloc_size, size, stream, small, 0, &rc);
    if (!b && !rc) {
      release_cached_blocks(a);
      b = alloc_block(a, alloc_size, size, stream, small, 1, &rc);
    }
    if (rc) return rc;
    if (!b) {
      uint64_t dfree, dtotal;
      a->dev.mem_info(a->dev.payload, &dfree, &dtotal);
      emit(a, GPUPLAN_ACT_OOM, 0, size, stream, dfree);
      a->st.num_ooms++;
      oom_message(a, alloc_size, size);
      return GPUPLAN_EOOM;
    }
  }

  /* R11, R12: split and account. */
  remaining = b->size - size;
  {
    int was_split = (b->prev || b->next) && !b->expandable;
    int split = small || a->conf.expandable_segments ? remaining >= KMIN_BLOCK
                                                      : (size < M && remaining > KSMALL_SIZE);
    if (split) {
      gpuplan__blk *r = blk_new(a);
      if (!r) {
        pool_insert(a, p, b); /* put it back; state unchanged */
        return gpuplan__nomem(a->ctx);
      }
      r->addr = b->addr + size;
      r->size = remaining;
      r->stream = stream;
      r->seg = b->seg;
      r->small = b->small;
      r->expandable = b->expandable;
      r->prev = b;
      r->next = b->next;
      if (b->next) b->next->prev = r;
      b->next = r;
      b->size = size;
      if ((rc = pool_insert(a, p, r)) != GPUPLAN_OK) {
        b->next = r->next;
        if (r->next) r->next->prev = b;
        b->size += remaining;
        blk_del(a, r);
        pool_insert(a, p, b);
        return rc;
      }
      if (b->expandable) {
        /* R12: no inactive_split accounting for expandable blocks. */
      } else if (!was_split) {
        stat3(a->st.inactive_split, small, 1);
        stat3(a->st.inactive_split_bytes, small, (int64_t)remaining);
      } else {
        stat3(a->st.inactive_split_bytes, small, -(int64_t)size);
      }
    } else if (was_split) {
      stat3(a->st.inactive_split, small, -1);
      stat3(a->st.inactive_split_bytes, small, -(int64_t)b->size);
    }
  }
  b->allocated = 1;
  b->requested = orig;
  if ((rc = hash_put(a, b)) != GPUPLAN_OK) {
    b->allocated = 0;
    pool_insert(a, p, b);
    return rc;
  }
  stat3(a->st.allocation, small, 1);
  stat3(a->st.allocated_bytes, small, (int64_t)b->size);
  stat3(a->st.active, small, 1);
  stat3(a->st.active_bytes, small, (int64_t)b->size);
  stat3(a->st.requested_bytes, small, (int64_t)orig);
  if (b->size >= M) stat_add(&a->st.oversize_allocations, 1);
  emit(a, GPUPLAN_ACT_ALLOC, b->addr, orig, stream, 0);
  *addr_out = b->addr;
  return GPUPLAN_OK;
}

/* R14: merge a free block with a free neighbour; returns the merged size. */
static uint64_t try_merge(gpuplan_cachealloc *a, gpuplan__blk *b, gpuplan__blk *n) {
  uint64_t sz;
  if (!n || n->allocated || n->mapped != b->mapped) return 0;
  pool_remove(pool_of(a, n->small), n);
  sz = n->size;
  if (b->prev == n) {
    b->addr = n->addr;
    b->prev = n->prev;
    if (b->prev) b->prev->next = b;
    else b->seg->first = b;
  } else {
    b->next = n->next;
    if (b->next) b->next->prev = b;
  }
  b->size += sz;
  blk_del(a, n);
  return sz;
}

static void merge_mapped(gpuplan_cachealloc *a, gpuplan__blk *b, gpuplan__blk *n) {
  (void)try_merge(a, b, n);
}

int gpuplan_cachealloc_release(gpuplan_cachealloc *a, uint64_t addr) {
  gpuplan__blk *b;
  int64_t orig_size, net_n = 0, net_bytes = 0;
  int small;
  if (!a) return GPUPLAN_EMISUSE;
  b = hash_take(a, addr);
  if (!b)
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL,
                          "allocator: free of 0x%llx, which is not an allocated block",
                          (unsigned long long)addr);
  small = b->small;
  orig_size = (int64_t)b->size;
  stat3(a->st.allocation, small, -1);
  stat3(a->st.allocated_bytes, small, -orig_size);
  if (b->size >= a->conf.max_split_size) stat_add(&a->st.oversize_allocations, -1);
  emit(a, GPUPLAN_ACT_FREE_REQUESTED, b->addr, b->requested, b->stream, 0);
  b->allocated = 0;
  /* free_block: merge, then account the net change in inactive_split. */
  {
    gpuplan__blk *prev = b->prev, *next = b->next;
    int exp = b->expandable;
    if (!exp && prev && !prev->allocated) {
      net_n--;
      net_bytes -= (int64_t)prev->size;
    }
    if (!exp && next && !next->allocated) {
      net_n--;
      net_bytes -= (int64_t)next->size;
    }
    (void)try_merge(a, b, prev);
    (void)try_merge(a, b, next);
    if (!exp && (b->prev || b->next)) {
      net_n++;
      net_bytes += (int64_t)b->size;
    }
  }
  emit(a, GPUPLAN_ACT_FREE_COMPLETED, addr, b->requested, b->stream, 0);
  stat3(a->st.active, small, -1);
  stat3(a->st.active_bytes, small, -orig_size);
  stat3(a->st.requested_bytes, small, -(int64_t)b->requested);
  if (net_n) stat3(a->st.inactive_split, small, net_n);
  if (net_bytes) stat3(a->st.inactive_split_bytes, small, net_bytes);
  if (pool_insert(a, pool_of(a, small), b) != GPUPLAN_OK) {
    /* The block stays out of the pool: memory is lost to reuse, not to
     * accounting; report the host failure. */
    return GPUPLAN_ENOMEM;
  }
  return GPUPLAN_OK;
}

void gpuplan_cachealloc_empty_cache(gpuplan_cachealloc *a) {
  if (a) release_cached_blocks(a);
}

void gpuplan_cachealloc_free_space(const gpuplan_cachealloc *a, uint64_t *largest_out,
                                  uint64_t *total_out) {
  uint64_t largest = 0, total = 0;
  size_t i;
  const gpuplan__pool *ps[2];
  int k;
  if (a) {
    ps[0] = &a->small;
    ps[1] = &a->large;
    for (k = 0; k < 2; k++)
      for (i = 0; i < ps[k]->n; i++) {
        total += ps[k]->v[i]->size;
        if (ps[k]->v[i]->size > largest) largest = ps[k]->v[i]->size;
      }
  }
  if (largest_out) *largest_out = largest;
  if (total_out) *total_out = total;
}

/* --- inspection ------------------------------------------------------------ */

/* What the snapshot calls a segment: a cudaMalloc, or one contiguous mapped
 * range of an expandable segment (R30). */
typedef struct view {
  uint64_t addr, size, stream;
  gpuplan__blk *first;
  size_t nblocks;
  int small, expandable;
} view;

static int view_cmp(const void *x, const void *y) {
  const view *a = x, *b = y;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* All views in address order; *n_out views (the array is ctx-allocated). */
static int collect_views(gpuplan_cachealloc *a, view **out, size_t *n_out) {
  gpuplan__seg *s;
  gpuplan__blk *b;
  size_t n = gpuplan_cachealloc_segment_count(a), k = 0;
  view *v;
  *n_out = n;
  *out = NULL;
  if (!n) return GPUPLAN_OK;
  v = gpuplan__malloc(a->ctx, n * sizeof *v);
  if (!v) return gpuplan__nomem(a->ctx);
  for (s = a->segs; s; s = s->snext) {
    if (!s->expandable) {
      v[k].addr = s->addr;
      v[k].size = s->size;
      v[k].stream = s->stream;
      v[k].first = s->first;
      v[k].small = s->small;
      v[k].expandable = 0;
      for (v[k].nblocks = 0, b = s->first; b; b = b->next) v[k].nblocks++;
      k++;
      continue;
    }
    for (b = s->first; b; b = b->next) {
      if (!b->mapped || (b->prev && b->prev->mapped)) continue;
      v[k].addr = b->addr;
      v[k].size = 0;
      v[k].stream = s->stream;
      v[k].first = b;
      v[k].small = s->small;
      v[k].expandable = 1;
      v[k].nblocks = 0;
      {
        gpuplan__blk *c;
        for (c = b; c && c->mapped; c = c->next) {
          v[k].size += c->size;
          v[k].nblocks++;
        }
      }
      k++;
    }
  }
  qsort(v, n, sizeof *v, view_cmp);
  *out = v;
  return GPUPLAN_OK;
}

size_t gpuplan_cachealloc_segment_count(const gpuplan_cachealloc *a) {
  gpuplan__seg *s;
  gpuplan__blk *b;
  size_t n = 0;
  if (!a) return 0;
  for (s = a->segs; s; s = s->snext) {
    if (!s->expandable) {
      n++;
      continue;
    }
    for (b = s->first; b; b = b->next)
      if (b->mapped && (!b->prev || !b->prev->mapped)) n++;
  }
  return n;
}

int gpuplan_cachealloc_segment(gpuplan_cachealloc *a, size_t i, gpuplan_segment_info *out,
                        gpuplan_block_info *blocks, size_t cap) {
  view *v;
  size_t n, k;
  gpuplan__blk *b;
  int rc;
  if (!a || !out) return GPUPLAN_EMISUSE;
  if ((rc = collect_views(a, &v, &n))) return rc;
  if (i >= n) {
    gpuplan__free(a->ctx, v);
    return gpuplan__error(a->ctx, GPUPLAN_EINVAL, "segment %zu out of range (%zu segments)", i, n);
  }
  memset(out, 0, sizeof *out);
  out->addr = v[i].addr;
  out->total_size = v[i].size;
  out->stream = v[i].stream;
  out->large = !v[i].small;
  out->expandable = v[i].expandable;
  out->nblocks = v[i].nblocks;
  for (k = 0, b = v[i].first; k < v[i].nblocks; k++, b = b->next) {
    if (b->allocated) {
      out->allocated_size += b->size;
      out->requested_size += b->requested;
    }
    if (blocks && k < cap) {
      blocks[k].addr = b->addr;
      blocks[k].size = b->size;
      blocks[k].requested = b->requested;
      blocks[k].state = b->allocated;
    }
  }
  gpuplan__free(a->ctx, v);
  return GPUPLAN_OK;
}

void gpuplan_format_size(uint64_t n, char *buf, size_t cap) {
  if (n <= 1024) snprintf(buf, cap, "%llu bytes", (unsigned long long)n);
  else if (n <= 1048576) snprintf(buf, cap, "%.2f KiB", (double)n / 1024.0);
  else if (n <= 1073741824ull) snprintf(buf, cap, "%.2f MiB", (double)n / 1048576.0);
  else snprintf(buf, cap, "%.2f GiB", (double)n / 1073741824.0);
}

/* After a state was installed: sort the pools, recompute inactive_split. */
void gpuplan__alloc_recount(gpuplan_cachealloc *a) {
  gpuplan__seg *s;
  int k;
  if (a->small.n) qsort(a->small.v, a->small.n, sizeof *a->small.v, blk_cmp);
  if (a->large.n) qsort(a->large.v, a->large.n, sizeof *a->large.v, blk_cmp);
  for (k = 0; k < 3; k++) {
    memset(&a->st.inactive_split[k], 0, sizeof a->st.inactive_split[k]);
    memset(&a->st.inactive_split_bytes[k], 0, sizeof a->st.inactive_split_bytes[k]);
  }
  for (s = a->segs; s; s = s->snext) {
    gpuplan__blk *b;
    if (!s->first || !s->first->next) continue;
    for (b = s->first; b; b = b->next)
      if (!b->allocated) {
        stat3(a->st.inactive_split, b->small, 1);
        stat3(a->st.inactive_split_bytes, b->small, (int64_t)b->size);
      }
  }
}

/* --- memory_summary() --------------------------------------------------------- */

/* memory.py _format_size: integer division while the preferred value is at
 * least 768 of the unit.  torch <= 1.13 wrote "KB"/"MB" in "{:7d} {}";
 * 2.0 and later "KiB"/"MiB" in "{:6d} {}" (a column of the same width). */
static void fmt_size(gpuplan__buf *b, int64_t sz, double pref, int old) {
  static const char *const pfx[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char *const opfx[] = {"B ", "KB", "MB", "GB", "TB", "PB"};
  int k = 0;
  while (k < 5 && pref >= 768 * 1024) {
    k++;
    sz /= 1024;
    pref /= 1024;
  }
  if (old) gpuplan__buf_printf(b, "%7lld %s", (long long)sz, opfx[k]);
  else gpuplan__buf_printf(b, "%6lld %s", (long long)sz, pfx[k]);
}

static void fmt_count(gpuplan__buf *b, int64_t c, double pref) {
  static const char *const pfx[] = {" ", "K", "M"};
  int k = 0;
  while (k < 2 && pref >= 750 * 1000) {
    k++;
    c /= 1000;
    pref /= 1000;
  }
  gpuplan__buf_printf(b, "%7lld %s ", (long long)c, pfx[k]);
}

static void sum_line(gpuplan__buf *b, const char *name, const gpuplan_stat *s,
                     const gpuplan_stat *pref, int bytes, int old) {
  gpuplan__buf_printf(b, "| %-21s | ", name);
  if (bytes) {
    fmt_size(b, s->current, (double)pref->current, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->peak, (double)pref->peak, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->allocated, (double)pref->allocated, old); gpuplan__buf_puts(b, " | ");
    fmt_size(b, s->freed, (double)pref->freed, old);
  } else {
    fmt_count(b, s->current, (double)pref->current); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->peak, (double)pref->peak); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->allocated, (double)pref->allocated); gpuplan__buf_puts(b, " | ");
    fmt_count(b, s->freed, (double)pref->freed);
  }
  gpuplan__buf_puts(b, " |\n");
}

/* torch.cuda.memory_summary(device, abbreviated): torch/cuda/memory.py's
 * table, line for line.  2.0 added the "Requested memory" rows
 * (requested_bytes) and the KiB/MiB units; 1.13 is the layout before. */
int gpuplan__alloc_summary(gpuplan_cachealloc *a, int device, int abbreviated, gpuplan_torch_version layout,
                           char **out) {
  gpuplan__buf b;
  const gpuplan_alloc_stats *st;
  static const char rule[] = "|---------------------------------------------------------------------------|\n";
  static const char dbl[] = "|===========================================================================|\n";
  struct { const char *name; const gpuplan_stat *s; int bytes; } m[9];
  int i, old = layout == GPUPLAN_TORCH_1_13;
  char hdr[128];
  if (!a || !out) return GPUPLAN_EMISUSE;
  *out = NULL;
  st = &a->st;
  m[0].name = "Allocated memory"; m[0].s = st->allocated_bytes; m[0].bytes = 1;
  m[1].name = "Active memory"; m[1].s = st->active_bytes; m[1].bytes = 1;
  m[2].name = "Requested memory"; m[2].s = st->requested_bytes; m[2].bytes = 1;
  m[3].name = "GPU reserved memory"; m[3].s = st->reserved_bytes; m[3].bytes = 1;
  m[4].name = "Non-releasable memory"; m[4].s = st->inactive_split_bytes; m[4].bytes = 1;
  m[5].name = "Allocations"; m[5].s = st->allocation; m[5].bytes = 0;
  m[6].name = "Active allocs"; m[6].s = st->active; m[6].bytes = 0;
  m[7].name = "GPU reserved segments"; m[7].s = st->segment; m[7].bytes = 0;
  m[8].name = "Non-releasable allocs"; m[8].s = st->inactive_split; m[8].bytes = 0;
  gpuplan__buf_init(&b, a->ctx);
  gpuplan__buf_puts(&b, dbl);
  gpuplan__buf_printf(&b, "| %16s PyTorch CUDA memory summary, device ID %-17d |\n", "", device);
  gpuplan__buf_puts(&b, rule);
  snprintf(hdr, sizeof hdr, "|  %9s CUDA OOMs: %-12lld | %6s cudaMalloc retries: %-8lld  |\n", "",
           (long long)st->num_ooms, "", (long long)st->num_alloc_retries);
  gpuplan__buf_puts(&b, hdr);
  gpuplan__buf_puts(&b, dbl);
  gpuplan__buf_puts(&b, "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n");
  for (i = 0; i < 9; i++) {
    if (old && m[i].s == st->requested_bytes) continue;
    gpuplan__buf_puts(&b, rule);
    sum_line(&b, m[i].name, &m[i].s[GPUPLAN_POOL_ALL], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
    if (abbreviated) continue;
    sum_line(&b, "      from large pool", &m[i].s[GPUPLAN_POOL_LARGE], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
    sum_line(&b, "      from small pool", &m[i].s[GPUPLAN_POOL_SMALL], &m[i].s[GPUPLAN_POOL_ALL], m[i].bytes, old);
  }
  gpuplan__buf_puts(&b, rule);
  sum_line(&b, "Oversize allocations", &st->oversize_allocations, &st->oversize_allocations, 0, old);
  gpuplan__buf_puts(&b, rule);
  sum_line(&b, "Oversize GPU segments", &st->oversize_segments, &st->oversize_segments, 0, old);
  gpuplan__buf_puts(&b, dbl);
  if (b.failed) {
    gpuplan__buf_dispose(&b);
    return gpuplan__nomem(a->ctx);
  }
  *out = b.ptr;
  return GPUPLAN_OK;
}

int gpuplan_cachealloc_summary(gpuplan_cachealloc *a, char **out) {
  if (!a || !out) return GPUPLAN_EMISUSE;
  return gpuplan__alloc_summary(a, 0, 0, a->conf.torch, out);
}
