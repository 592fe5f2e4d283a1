/*
 * replay.c: load torch memory snapshots and replay them through the
 * caching-allocator model (gpuplan/replay.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "replay/pickle.h"

typedef struct rblock {
  uint64_t addr, size, requested;
  int allocated;
} rblock;

typedef struct rseg {
  uint64_t addr, size, stream;
  int small;
  rblock *b;
  size_t n, cap;
} rseg;

struct gpuplan_snapshot {
  gpuplan_ctx *ctx;
  gpuplan_alloc_event *ev;
  size_t nev;
  rseg *segs;  /* final state, sorted by address */
  size_t nsegs;
  gpuplan_alloc_conf conf;
};

/* --- small helpers --------------------------------------------------------- */

static void segs_free(gpuplan_ctx *ctx, rseg *v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) gpuplan__free(ctx, v[i].b);
  gpuplan__free(ctx, v);
}

static int blk_push(gpuplan_ctx *ctx, rseg *s, size_t at, rblock b) {
  if (s->n == s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 4;
    rblock *nb = gpuplan__realloc(ctx, s->b, ncap * sizeof *nb);
    if (!nb) return gpuplan__nomem(ctx);
    s->b = nb;
    s->cap = ncap;
  }
  memmove(s->b + at + 1, s->b + at, (s->n - at) * sizeof *s->b);
  s->b[at] = b;
  s->n++;
  return GPUPLAN_OK;
}

static void blk_erase(rseg *s, size_t at) {
  memmove(s->b + at, s->b + at + 1, (s->n - at - 1) * sizeof *s->b);
  s->n--;
}

static int seg_cmp_addr(const void *x, const void *y) {
  const rseg *a = x, *b = y;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Index of the segment containing addr, or -1. */
static long seg_find(const rseg *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr + v[mid].size <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && v[lo].addr <= addr && addr < v[lo].addr + v[lo].size) return (long)lo;
  return -1;
}

/* Index of the block containing addr in s, or -1. */
static long blk_find(const rseg *s, uint64_t addr) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->b[mid].addr + s->b[mid].size <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->n && s->b[lo].addr <= addr) return (long)lo;
  return -1;
}

/* --- loading --------------------------------------------------------------- */

static int field_u64(gpuplan_ctx *ctx, const gpuplan__pv *d, const char *key, const char *what,
                     size_t idx, uint64_t *out) {
  int64_t v;
  if (gpuplan__pv_int(gpuplan__pv_get(d, key), &v) != 0 || v < 0)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot: %s %zu: field '%s' is missing or not a non-negative integer",
                          what, idx, key);
  *out = (uint64_t)v;
  return GPUPLAN_OK;
}

static void conf_from_settings(gpuplan_ctx *ctx, const gpuplan__pv *set, gpuplan_alloc_conf *c) {
  const gpuplan__pv *v;
  int64_t i;
  gpuplan_alloc_conf_parse(ctx, NULL, GPUPLAN_TORCH_LATEST, c);
  if (!set || set->type != GPUPLAN__PV_DICT) return;
  if (gpuplan__pv_int(gpuplan__pv_get(set, "max_split_size"), &i) == 0 && i > 0)
    c->max_split_size = (uint64_t)i;
  v = gpuplan__pv_get(set, "garbage_collection_threshold");
  if (v && v->type == GPUPLAN__PV_FLOAT && v->u.f > 0 && v->u.f < 1)
    c->garbage_collection_threshold = v->u.f;
  if (gpuplan__pv_int(gpuplan__pv_get(set, "expandable_segments"), &i) == 0)
    c->expandable_segments = i != 0;
  v = gpuplan__pv_get(set, "roundup_power2_divisions");
  if (v && v->type == GPUPLAN__PV_DICT) {
    size_t k;
    for (k = 0; k < v->u.dict.n; k++) {
      const char *key = gpuplan__pv_str(v->u.dict.keys[k]);
      int64_t d;
      if (key && gpuplan__pv_int(v->u.dict.vals[k], &d) == 0 && d >= 0) {
        long mb = strtol(key, NULL, 10);
        int idx = 0;
        while (mb > 1 && idx < 15) {
          mb >>= 1;
          idx++;
        }
        c->roundup_divisions[idx] = (unsigned)d;
      }
    }
  }
  gpuplan__clear(ctx);
}

static int action_of(const char *s, gpuplan_alloc_action *out) {
  static const char *const names[] = {"alloc", "free_requested", "free_completed",
                                      "segment_alloc", "segment_free", "segment_map",
                                      "segment_unmap", "oom", "snapshot"};
  size_t i;
  for (i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (gpuplan_alloc_action)i;
      return 1;
    }
  return 0;
}

static int convert(gpuplan_ctx *ctx, const gpuplan__pv *root, int device, gpuplan_snapshot *s) {
  const gpuplan__pv *segs, *traces, *tr = NULL;
  size_t i, j;
  int64_t dev;
  if (!root || root->type != GPUPLAN__PV_DICT)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot: the pickle is not a dict (a torch.cuda.memory._snapshot() "
                          "has 'segments' and 'device_traces')");
  segs = gpuplan__pv_get(root, "segments");
  traces = gpuplan__pv_get(root, "device_traces");
  if (!segs || segs->type != GPUPLAN__PV_LIST)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: no 'segments' list");
  if (traces && traces->type != GPUPLAN__PV_LIST)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: 'device_traces' is not a list");
  if (traces && device >= 0 && (size_t)device < traces->u.seq.n) {
    tr = traces->u.seq.items[device];
    if (tr->type != GPUPLAN__PV_LIST)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: device_traces[%d] is not a list", device);
  }
  conf_from_settings(ctx, gpuplan__pv_get(root, "allocator_settings"), &s->conf);

  /* Segments of this device. */
  s->segs = gpuplan__calloc(ctx, segs->u.seq.n ? segs->u.seq.n : 1, sizeof *s->segs);
  if (!s->segs) return gpuplan__nomem(ctx);
  for (i = 0; i < segs->u.seq.n; i++) {
    const gpuplan__pv *d = segs->u.seq.items[i], *blocks, *type;
    rseg *r;
    uint64_t at;
    if (d->type != GPUPLAN__PV_DICT)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu is not a dict", i);
    if (gpuplan__pv_int(gpuplan__pv_get(d, "device"), &dev) == 0 && dev != device) continue;
    r = &s->segs[s->nsegs];
    GPUPLAN_TRY(field_u64(ctx, d, "address", "segment", i, &r->addr));
    GPUPLAN_TRY(field_u64(ctx, d, "total_size", "segment", i, &r->size));
    if (gpuplan__pv_get(d, "stream")) GPUPLAN_TRY(field_u64(ctx, d, "stream", "segment", i, &r->stream));
    type = gpuplan__pv_get(d, "segment_type");
    r->small = gpuplan__pv_str(type) ? strcmp(gpuplan__pv_str(type), "small") == 0
                                     : r->size == KSMALL_BUFFER;
    s->nsegs++;
    if (r->size == 0 || r->addr + r->size < r->addr)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: bad address/size", i);
    blocks = gpuplan__pv_get(d, "blocks");
    if (!blocks || blocks->type != GPUPLAN__PV_LIST)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: no 'blocks' list", i);
    at = r->addr;
    for (j = 0; j < blocks->u.seq.n; j++) {
      const gpuplan__pv *b = blocks->u.seq.items[j];
      rblock rb;
      const char *state;
      memset(&rb, 0, sizeof rb);
      if (b->type != GPUPLAN__PV_DICT)
        return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu block %zu is not a dict", i, j);
      GPUPLAN_TRY(field_u64(ctx, b, "size", "block", j, &rb.size));
      if (gpuplan__pv_get(b, "requested_size"))
        GPUPLAN_TRY(field_u64(ctx, b, "requested_size", "block", j, &rb.requested));
      rb.addr = at; /* blocks tile the segment in address order */
      state = gpuplan__pv_str(gpuplan__pv_get(b, "state"));
      rb.allocated = state && strcmp(state, "inactive") != 0;
      if (rb.size == 0 || rb.addr + rb.size > r->addr + r->size || rb.addr + rb.size < rb.addr)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: segment %zu block %zu: sizes overrun the segment", i, j);
      GPUPLAN_TRY(blk_push(ctx, r, r->n, rb));
      at += rb.size;
    }
    if (at != r->addr + r->size)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: segment %zu: blocks cover %llu of %llu bytes", i,
                            (unsigned long long)(at - r->addr), (unsigned long long)r->size);
  }
  qsort(s->segs, s->nsegs, sizeof *s->segs, seg_cmp_addr);
  for (i = 1; i < s->nsegs; i++)
    if (s->segs[i - 1].addr + s->segs[i - 1].size > s->segs[i].addr)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segments overlap at 0x%llx",
                            (unsigned long long)s->segs[i].addr);

  /* Trace events. */
  if (tr) {
    s->ev = gpuplan__calloc(ctx, tr->u.seq.n ? tr->u.seq.n : 1, sizeof *s->ev);
    if (!s->ev) return gpuplan__nomem(ctx);
    for (i = 0; i < tr->u.seq.n; i++) {
      const gpuplan__pv *e = tr->u.seq.items[i];
      gpuplan_alloc_event *o = &s->ev[s->nev];
      const char *act;
      if (e->type != GPUPLAN__PV_DICT)
        return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: trace event %zu is not a dict", i);
      act = gpuplan__pv_str(gpuplan__pv_get(e, "action"));
      if (!act) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: trace event %zu: no 'action'", i);
      if (!action_of(act, &o->action)) continue; /* annotations and future actions */
      if (o->action == GPUPLAN_ACT_OOM) {
        if (gpuplan__pv_get(e, "device_free"))
          GPUPLAN_TRY(field_u64(ctx, e, "device_free", "trace event", i, &o->device_free));
      } else if (o->action != GPUPLAN_ACT_SNAPSHOT) {
        GPUPLAN_TRY(field_u64(ctx, e, "addr", "trace event", i, &o->addr));
      }
      GPUPLAN_TRY(field_u64(ctx, e, "size", "trace event", i, &o->size));
      if (gpuplan__pv_get(e, "stream")) GPUPLAN_TRY(field_u64(ctx, e, "stream", "trace event", i, &o->stream));
      s->nev++;
    }
  }
  return GPUPLAN_OK;
}

void gpuplan_snapshot_free(gpuplan_snapshot *s) {
  gpuplan_ctx *ctx;
  if (!s) return;
  ctx = s->ctx;
  segs_free(ctx, s->segs, s->nsegs);
  gpuplan__free(ctx, s->ev);
  gpuplan__free(ctx, s);
  gpuplan__ctx_unref(ctx);
}

int gpuplan_snapshot_load_buffer(gpuplan_ctx *ctx, const void *buf, size_t len, int device,
                                 gpuplan_snapshot **out) {
  gpuplan__pickle p;
  const gpuplan__pv *root = NULL;
  gpuplan_snapshot *s;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out || (!buf && len)) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot: NULL argument");
  *out = NULL;
  if (device < 0) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: device must be >= 0");
  rc = gpuplan__pickle_load(ctx, buf, len, &p, &root);
  if (rc) {
    gpuplan__pickle_free(&p);
    return rc;
  }
  s = gpuplan__calloc(ctx, 1, sizeof *s);
  if (!s) {
    gpuplan__pickle_free(&p);
    return gpuplan__nomem(ctx);
  }
  s->ctx = ctx;
  gpuplan__ctx_ref(ctx);
  rc = convert(ctx, root, device, s);
  gpuplan__pickle_free(&p);
  if (rc) {
    gpuplan_snapshot_free(s);
    return rc;
  }
  *out = s;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_snapshot_load(gpuplan_ctx *ctx, const char *path, int device, gpuplan_snapshot **out) {
  FILE *f;
  char *buf;
  long len;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out || !path) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot: NULL argument");
  *out = NULL;
  f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    rc = gpuplan__error(ctx, e == ENOENT ? GPUPLAN_ENOTFOUND : GPUPLAN_EIO, "snapshot %s: %s",
                        path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return rc;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: cannot size the file", path);
  }
  buf = gpuplan__malloc(ctx, (size_t)len + 1);
  if (!buf) {
    fclose(f);
    return gpuplan__nomem(ctx);
  }
  if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
    fclose(f);
    gpuplan__free(ctx, buf);
    return gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: read failed", path);
  }
  fclose(f);
  rc = gpuplan_snapshot_load_buffer(ctx, buf, (size_t)len, device, out);
  gpuplan__free(ctx, buf);
  if (rc == GPUPLAN_EINVAL) {
    char msg[GPUPLAN_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", gpuplan_errmsg(ctx));
    gpuplan__error(ctx, GPUPLAN_EINVAL, "%s: %s", path, msg);
  }
  return rc;
}

size_t gpuplan_snapshot_event_count(const gpuplan_snapshot *s) { return s ? s->nev : 0; }
const gpuplan_alloc_event *gpuplan_snapshot_event(const gpuplan_snapshot *s, size_t i) {
  return s && i < s->nev ? &s->ev[i] : NULL;
}
size_t gpuplan_snapshot_segment_count(const gpuplan_snapshot *s) { return s ? s->nsegs : 0; }
const gpuplan_alloc_conf *gpuplan_snapshot_conf(const gpuplan_snapshot *s) { return s ? &s->conf : NULL; }

/* --- rebuilding the start state (rules section 8) ------------------------- */

/* The rebuilt state: segments (by pointer, so that inserting and erasing
 * in the sorted array moves 8 bytes a segment) in address order. */
typedef struct state {
  rseg **v;
  size_t n, cap;
} state;

static void state_free(gpuplan_ctx *ctx, state *st) {
  size_t i;
  for (i = 0; i < st->n; i++) {
    gpuplan__free(ctx, st->v[i]->b);
    gpuplan__free(ctx, st->v[i]);
  }
  gpuplan__free(ctx, st->v);
  memset(st, 0, sizeof *st);
}

static rseg *seg_clone(gpuplan_ctx *ctx, const rseg *src) {
  rseg *d = gpuplan__malloc(ctx, sizeof *d);
  if (!d) return NULL;
  *d = *src;
  d->cap = d->n ? d->n : 1;
  d->b = gpuplan__malloc(ctx, d->cap * sizeof *d->b);
  if (!d->b) {
    gpuplan__free(ctx, d);
    return NULL;
  }
  memcpy(d->b, src->b, d->n * sizeof *d->b);
  return d;
}

static int state_copy(gpuplan_ctx *ctx, const gpuplan_snapshot *s, state *st) {
  size_t i;
  st->cap = s->nsegs + 16;
  st->n = 0;
  st->v = gpuplan__calloc(ctx, st->cap, sizeof *st->v);
  if (!st->v) return gpuplan__nomem(ctx);
  for (i = 0; i < s->nsegs; i++) {
    if (!(st->v[st->n] = seg_clone(ctx, &s->segs[i]))) return gpuplan__nomem(ctx);
    st->n++;
  }
  return GPUPLAN_OK;
}

/* Index of the segment containing addr in a state, or -1. */
static long pseg_find(rseg *const *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid]->addr + v[mid]->size <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo < n && v[lo]->addr <= addr && addr < v[lo]->addr + v[lo]->size) return (long)lo;
  return -1;
}

static int diverge(gpuplan_replay_result *r, size_t i, const char *fmt, ...)
    GPUPLAN_PRINTF(3, 4);
static int diverge(gpuplan_replay_result *r, size_t i, const char *fmt, ...) {
  va_list ap;
  if (r->diverged_at != SIZE_MAX) return 1;
  r->diverged_at = i;
  va_start(ap, fmt);
  vsnprintf(r->divergence, sizeof r->divergence, fmt, ap);
  va_end(ap);
  return 1;
}

/* Merge free block k of s with free neighbours. */
static void merge_free(rseg *s, size_t k) {
  if (k + 1 < s->n && !s->b[k + 1].allocated) {
    s->b[k].size += s->b[k + 1].size;
    blk_erase(s, k + 1);
  }
  if (k > 0 && !s->b[k - 1].allocated) {
    s->b[k - 1].size += s->b[k].size;
    blk_erase(s, k);
  }
}

/* Undo the trace from the end; on success *st is the state at its start.
 * Returns GPUPLAN_OK with r->diverged_at set when the file is inconsistent. */
static int rebuild(gpuplan_ctx *ctx, const gpuplan_snapshot *s, state *st,
                   gpuplan_replay_result *r) {
  size_t i = s->nev;
  while (i-- > 0) {
    const gpuplan_alloc_event *e = &s->ev[i];
    long si, bi;
    rseg *g;
    switch (e->action) {
    case GPUPLAN_ACT_ALLOC:
      si = pseg_find(st->v, st->n, e->addr);
      if (si < 0) return diverge(r, i, "rebuilding: alloc at 0x%llx lies in no segment", (unsigned long long)e->addr), GPUPLAN_OK;
      g = st->v[si];
      bi = blk_find(g, e->addr);
      if (bi < 0 || g->b[bi].addr != e->addr || !g->b[bi].allocated)
        return diverge(r, i, "rebuilding: alloc at 0x%llx is not an allocated block at the end", (unsigned long long)e->addr), GPUPLAN_OK;
      g->b[bi].allocated = 0;
      merge_free(g, (size_t)bi);
      break;
    case GPUPLAN_ACT_FREE_COMPLETED: {
      uint64_t rsz = gpuplan__round_size(&s->conf, e->size), end, tail;
      rblock mid;
      si = pseg_find(st->v, st->n, e->addr);
      if (si < 0) return diverge(r, i, "rebuilding: free at 0x%llx lies in no segment", (unsigned long long)e->addr), GPUPLAN_OK;
      g = st->v[si];
      bi = blk_find(g, e->addr);
      if (bi < 0 || g->b[bi].allocated || e->addr + rsz > g->b[bi].addr + g->b[bi].size)
        return diverge(r, i, "rebuilding: free of %llu bytes at 0x%llx does not fit a free block", (unsigned long long)e->size, (unsigned long long)e->addr), GPUPLAN_OK;
      end = g->b[bi].addr + g->b[bi].size;
      tail = end - e->addr - rsz;
      if (g->small ? tail < KMIN_BLOCK : tail <= KSMALL_SIZE) rsz += tail, tail = 0;
      mid.addr = e->addr;
      mid.size = rsz;
      mid.requested = e->size;
      mid.allocated = 1;
      if (g->b[bi].addr < e->addr) {
        g->b[bi].size = e->addr - g->b[bi].addr;
        bi++;
        GPUPLAN_TRY(blk_push(ctx, g, (size_t)bi, mid));
      } else {
        g->b[bi] = mid;
      }
      if (tail) {
        rblock t;
        t.addr = e->addr + rsz;
        t.size = tail;
        t.requested = 0;
        t.allocated = 0;
        GPUPLAN_TRY(blk_push(ctx, g, (size_t)bi + 1, t));
      }
      break;
    }
    case GPUPLAN_ACT_SEGMENT_ALLOC:
      si = pseg_find(st->v, st->n, e->addr);
      if (si < 0 || st->v[si]->addr != e->addr || st->v[si]->n != 1 || st->v[si]->b[0].allocated)
        return diverge(r, i, "rebuilding: segment_alloc at 0x%llx is not a whole free segment", (unsigned long long)e->addr), GPUPLAN_OK;
      gpuplan__free(ctx, st->v[si]->b);
      gpuplan__free(ctx, st->v[si]);
      memmove(st->v + si, st->v + si + 1, (st->n - (size_t)si - 1) * sizeof *st->v);
      st->n--;
      break;
    case GPUPLAN_ACT_SEGMENT_FREE: {
      rseg *ns;
      rblock b;
      size_t lo = 0, hi = st->n;
      if (pseg_find(st->v, st->n, e->addr) >= 0)
        return diverge(r, i, "rebuilding: segment_free at 0x%llx overlaps a live segment", (unsigned long long)e->addr), GPUPLAN_OK;
      if (st->n == st->cap) {
        size_t ncap = st->cap * 2 + 16;
        rseg **nv = gpuplan__realloc(ctx, st->v, ncap * sizeof *nv);
        if (!nv) return gpuplan__nomem(ctx);
        st->v = nv;
        st->cap = ncap;
      }
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->v[mid]->addr < e->addr) lo = mid + 1;
        else hi = mid;
      }
      ns = gpuplan__calloc(ctx, 1, sizeof *ns);
      if (!ns) return gpuplan__nomem(ctx);
      ns->addr = e->addr;
      ns->size = e->size;
      ns->stream = e->stream;
      ns->small = e->size == KSMALL_BUFFER;
      b.addr = e->addr;
      b.size = e->size;
      b.requested = 0;
      b.allocated = 0;
      if (blk_push(ctx, ns, 0, b) != GPUPLAN_OK) {
        gpuplan__free(ctx, ns);
        return GPUPLAN_ENOMEM;
      }
      memmove(st->v + lo + 1, st->v + lo, (st->n - lo) * sizeof *st->v);
      st->v[lo] = ns;
      st->n++;
      break;
    }
    default:
      break;
    }
  }
  return GPUPLAN_OK;
}

/* Install a state into a fresh allocator. */
static int install(gpuplan_cachealloc *a, const state *st) {
  size_t i, j;
  for (i = 0; i < st->n; i++) {
    const rseg *g = st->v[i];
    gpuplan__seg *seg = gpuplan__alloc_add_segment(a, g->addr, g->size, g->stream, g->small);
    if (!seg) return gpuplan__nomem(a->ctx);
    for (j = 0; j < g->n; j++)
      GPUPLAN_TRY(gpuplan__alloc_add_block(a, seg, g->b[j].addr, g->b[j].size, g->b[j].requested,
                                           g->b[j].allocated));
  }
  gpuplan__alloc_recount(a);
  return GPUPLAN_OK;
}

/* --- the exact-replay device -------------------------------------------------- */

typedef struct rdev {
  const gpuplan_alloc_event **pend;  /* segment_alloc/segment_free events expected next */
  size_t n, i, cap;
  int mismatch;
  char why[256];
  uint64_t device_free;
  gpuplan_cachealloc *a;
} rdev;

static int rdev_malloc(void *payload, uint64_t size, uint64_t *addr_out) {
  rdev *d = payload;
  if (d->i < d->n && d->pend[d->i]->action == GPUPLAN_ACT_SEGMENT_ALLOC) {
    const gpuplan_alloc_event *e = d->pend[d->i++];
    if (e->size != size && !d->mismatch) {
      d->mismatch = 1;
      snprintf(d->why, sizeof d->why, "cudaMalloc of %llu bytes where the trace has %llu at 0x%llx",
               (unsigned long long)size, (unsigned long long)e->size, (unsigned long long)e->addr);
    }
    *addr_out = e->addr;
    return GPUPLAN_OK;
  }
  return GPUPLAN_ENOTFOUND; /* the real device refused: what the trace shows */
}

static void rdev_free(void *payload, uint64_t addr, uint64_t size) {
  rdev *d = payload;
  if (d->i < d->n && d->pend[d->i]->action == GPUPLAN_ACT_SEGMENT_FREE &&
      d->pend[d->i]->addr == addr && d->pend[d->i]->size == size) {
    d->i++;
    return;
  }
  if (!d->mismatch) {
    d->mismatch = 1;
    snprintf(d->why, sizeof d->why, "cudaFree of the %llu-byte segment at 0x%llx that the trace does not free here",
             (unsigned long long)size, (unsigned long long)addr);
  }
}

static void rdev_info(void *payload, uint64_t *free_out, uint64_t *total_out) {
  rdev *d = payload;
  *free_out = d->device_free;
  /* A snapshot does not record the card's capacity; what PyTorch held plus
   * what the driver still had free is the best lower bound. */
  *total_out = d->device_free + (d->a ? (uint64_t)d->a->st.reserved_bytes[0].current : 0);
}

/* --- address map for what-if replays ---------------------------------------- */

typedef struct amap {
  uint64_t *k, *v;
  size_t cap, n;
} amap;

static size_t aslot(uint64_t k, size_t cap) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1); }

static int amap_put(gpuplan_ctx *ctx, amap *m, uint64_t k, uint64_t v) {
  size_t i;
  if ((m->n + 1) * 2 > m->cap) {
    amap nm;
    nm.cap = m->cap ? m->cap * 2 : 1024;
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
        size_t j = aslot(m->k[i], nm.cap);
        while (nm.k[j]) j = (j + 1) & (nm.cap - 1);
        nm.k[j] = m->k[i];
        nm.v[j] = m->v[i];
        nm.n++;
      }
    gpuplan__free(ctx, m->k);
    gpuplan__free(ctx, m->v);
    *m = nm;
  }
  i = aslot(k, m->cap);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) m->n++;
  m->k[i] = k;
  m->v[i] = v;
  return GPUPLAN_OK;
}

/* Take (find and delete) k; 0 if absent.  Backward-shift deletion. */
static uint64_t amap_take(amap *m, uint64_t k) {
  size_t i, j;
  uint64_t v;
  if (!m->cap) return 0;
  i = aslot(k, m->cap);
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
    h = aslot(m->k[j], m->cap);
    if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
      m->k[i] = m->k[j];
      m->v[i] = m->v[j];
      m->k[j] = 0;
      i = j;
    }
  }
  return v;
}

/* --- replay ------------------------------------------------------------------- */

static void track_peak(gpuplan_cachealloc *a, gpuplan_replay_result *r) {
  const gpuplan_alloc_stats *st = gpuplan_cachealloc_stats(a);
  uint64_t res = (uint64_t)st->reserved_bytes[0].current;
  if (res > r->peak_reserved) {
    r->peak_reserved = res;
    r->allocated_at_peak_reserved = (uint64_t)st->allocated_bytes[0].current;
    gpuplan_cachealloc_free_space(a, &r->largest_free_at_peak, &r->total_free_at_peak);
  }
}

/* Compare the allocator's final segments with the file's. */
static void compare_final(gpuplan_cachealloc *a, const gpuplan_snapshot *s, gpuplan_replay_result *r) {
  gpuplan__seg *g;
  size_t n = 0, i;
  for (g = a->segs; g; g = g->snext) n++;
  if (n != s->nsegs) {
    diverge(r, s->nev, "final state: %zu segments, the file has %zu", n, s->nsegs);
    return;
  }
  for (g = a->segs; g; g = g->snext) {
    long si = seg_find(s->segs, s->nsegs, g->addr);
    const rseg *f;
    gpuplan__blk *b;
    if (si < 0 || s->segs[si].addr != g->addr || s->segs[si].size != g->size) {
      diverge(r, s->nev, "final state: segment 0x%llx (%llu bytes) is not in the file",
              (unsigned long long)g->addr, (unsigned long long)g->size);
      return;
    }
    f = &s->segs[si];
    for (i = 0, b = g->first; b; b = b->next, i++) {
      if (i >= f->n || f->b[i].addr != b->addr || f->b[i].size != b->size ||
          f->b[i].allocated != b->allocated) {
        diverge(r, s->nev, "final state: segment 0x%llx block %zu differs (model 0x%llx %llu %s)",
                (unsigned long long)g->addr, i, (unsigned long long)b->addr,
                (unsigned long long)b->size, b->allocated ? "allocated" : "free");
        return;
      }
    }
    if (i != f->n) {
      diverge(r, s->nev, "final state: segment 0x%llx has %zu blocks, the file %zu",
              (unsigned long long)g->addr, i, f->n);
      return;
    }
  }
}

static int run_exact(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st,
                     const gpuplan_replay_options *o, gpuplan_replay_result *r) {
  rdev d;
  gpuplan_device_ops ops;
  gpuplan_cachealloc *a = NULL;
  size_t i;
  int rc;
  memset(&d, 0, sizeof d);
  ops.malloc = rdev_malloc;
  ops.free = rdev_free;
  ops.mem_info = rdev_info;
  ops.payload = &d;
  d.cap = 64;
  d.pend = gpuplan__malloc(ctx, d.cap * sizeof *d.pend);
  if (!d.pend) return gpuplan__nomem(ctx);
  rc = gpuplan_cachealloc_new(ctx, &s->conf, 0, &ops, &a);
  d.a = a;
  if (rc == GPUPLAN_OK) rc = install(a, st);
  if (rc) goto out;
  if (o->trace) gpuplan_cachealloc_set_trace(a, o->trace, o->trace_payload);
  r->start_allocated = (uint64_t)a->st.allocated_bytes[0].current;
  r->start_reserved = (uint64_t)a->st.reserved_bytes[0].current;
  track_peak(a, r);

#define CHECK_CONSUMED(idx)                                                           \
  do {                                                                                \
    if (d.mismatch) diverge(r, idx, "%s", d.why);                                     \
    else if (d.i != d.n)                                                              \
      diverge(r, idx, "the trace has a %s of %llu bytes at 0x%llx that the model did not do", \
              d.pend[d.i]->action == GPUPLAN_ACT_SEGMENT_ALLOC ? "cudaMalloc" : "cudaFree", \
              (unsigned long long)d.pend[d.i]->size, (unsigned long long)d.pend[d.i]->addr); \
    d.n = d.i = 0;                                                                    \
  } while (0)

  for (i = 0; i < s->nev && r->diverged_at == SIZE_MAX; i++) {
    const gpuplan_alloc_event *e = &s->ev[i];
    uint64_t addr;
    r->events++;
    switch (e->action) {
    case GPUPLAN_ACT_SEGMENT_ALLOC:
    case GPUPLAN_ACT_SEGMENT_FREE:
      if (d.n == d.cap) {
        const gpuplan_alloc_event **np = gpuplan__realloc(ctx, d.pend, d.cap * 2 * sizeof *np);
        if (!np) {
          rc = gpuplan__nomem(ctx);
          goto out;
        }
        d.pend = np;
        d.cap *= 2;
      }
      d.pend[d.n++] = e;
      if (e->action == GPUPLAN_ACT_SEGMENT_ALLOC) r->segment_allocs++;
      break;
    case GPUPLAN_ACT_ALLOC:
    case GPUPLAN_ACT_OOM:
      /* A run of cudaFrees not ended by a cudaMalloc was an empty_cache(). */
      if (d.n && d.pend[d.n - 1]->action == GPUPLAN_ACT_SEGMENT_FREE && e->action == GPUPLAN_ACT_ALLOC) {
        gpuplan_cachealloc_empty_cache(a);
        CHECK_CONSUMED(i);
        if (r->diverged_at != SIZE_MAX) break;
      }
      d.device_free = e->device_free;
      rc = gpuplan_cachealloc_malloc(a, e->size, e->stream, &addr);
      if (rc == GPUPLAN_ENOMEM) goto out;
      if (e->action == GPUPLAN_ACT_OOM) {
        if (rc != GPUPLAN_EOOM) diverge(r, i, "the trace ran out of memory; the model allocated %llu bytes", (unsigned long long)e->size);
        else if (r->oom_event == SIZE_MAX) {
          r->oom_event = i;
          snprintf(r->oom_message, sizeof r->oom_message, "%s", gpuplan_errmsg(ctx));
        }
      } else if (rc == GPUPLAN_EOOM) {
        diverge(r, i, "alloc of %llu bytes: the model ran out of memory, PyTorch did not", (unsigned long long)e->size);
      } else if (addr != e->addr) {
        diverge(r, i, "alloc of %llu bytes: the model placed it at 0x%llx, the trace at 0x%llx",
                (unsigned long long)e->size, (unsigned long long)addr, (unsigned long long)e->addr);
      } else {
        r->allocs++;
      }
      rc = GPUPLAN_OK;
      CHECK_CONSUMED(i);
      break;
    case GPUPLAN_ACT_FREE_REQUESTED:
      if (d.n) {
        gpuplan_cachealloc_empty_cache(a);
        CHECK_CONSUMED(i);
        if (r->diverged_at != SIZE_MAX) break;
      }
      if (gpuplan_cachealloc_release(a, e->addr) != GPUPLAN_OK)
        diverge(r, i, "free of 0x%llx: not an allocated block in the model", (unsigned long long)e->addr);
      break;
    default:
      break;
    }
    track_peak(a, r);
  }
  if (r->diverged_at == SIZE_MAX && d.n) {
    gpuplan_cachealloc_empty_cache(a);
    CHECK_CONSUMED(s->nev);
  }
#undef CHECK_CONSUMED
  if (r->diverged_at == SIZE_MAX) compare_final(a, s, r);
  r->exact = r->diverged_at == SIZE_MAX;
  r->peak_allocated = (uint64_t)a->st.allocated_bytes[0].peak;
  r->final_allocated = (uint64_t)a->st.allocated_bytes[0].current;
  r->final_reserved = (uint64_t)a->st.reserved_bytes[0].current;
  r->num_alloc_retries = a->st.num_alloc_retries;
  r->num_ooms = a->st.num_ooms;
out:
  gpuplan_cachealloc_free(a); /* returns the segments through rdev_free: ignore that */
  gpuplan__free(ctx, d.pend);
  return rc;
}

/* What-if: the allocator state at the start of the trace, as rebuilt, then
 * the trace under other settings and on a device of the given capacity.
 * With the file's own settings and no capacity limit this reproduces the
 * exact replay's figures. */
static int run_whatif(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st,
                      const gpuplan_replay_options *o, gpuplan_replay_result *r) {
  gpuplan_alloc_conf conf;
  gpuplan_cachealloc *a = NULL;
  amap m;
  size_t i;
  uint64_t top = 0, capacity = o->capacity ? o->capacity : (1ull << 56);
  int rc;
  memset(&m, 0, sizeof m);
  if (o->alloc_conf) rc = gpuplan_alloc_conf_parse(ctx, o->alloc_conf, o->torch, &conf);
  else conf = s->conf, rc = GPUPLAN_OK;
  if (rc) return rc;
  rc = gpuplan_cachealloc_new(ctx, &conf, capacity, NULL, &a);
  if (rc) return rc;
  if ((rc = install(a, st))) goto out;
  for (i = 0; i < st->n; i++)
    if (st->v[i]->addr + st->v[i]->size > top) top = st->v[i]->addr + st->v[i]->size;
  /* New segments come from above the recorded ones; the recorded ones
   * count against the device. */
  if (top > a->mock.next_addr) a->mock.next_addr = (top + (1ull << 30)) & ~((1ull << 21) - 1);
  a->mock.reserved = (uint64_t)a->st.reserved_bytes[0].current;
  if (o->trace) gpuplan_cachealloc_set_trace(a, o->trace, o->trace_payload);
  r->start_allocated = (uint64_t)a->st.allocated_bytes[0].current;
  r->start_reserved = (uint64_t)a->st.reserved_bytes[0].current;
  if (r->start_reserved > capacity) {
    /* Cached segments would have been released when memory ran short. */
    gpuplan_cachealloc_empty_cache(a);
    a->mock.reserved = (uint64_t)a->st.reserved_bytes[0].current;
    if (a->mock.reserved > capacity) {
      char A[32], C[32];
      gpuplan_format_size(a->mock.reserved, A, sizeof A);
      gpuplan_format_size(capacity, C, sizeof C);
      r->oom_event = 0;
      snprintf(r->oom_message, sizeof r->oom_message,
               "the %s of blocks live when the trace starts do not fit the device's %s", A, C);
    }
  }
  track_peak(a, r);

  for (i = 0; i < s->nev && r->oom_event == SIZE_MAX; i++) {
    const gpuplan_alloc_event *e = &s->ev[i];
    uint64_t addr;
    r->events++;
    switch (e->action) {
    case GPUPLAN_ACT_SEGMENT_FREE:
      /* A run of cudaFrees that no cudaMalloc or OOM ends was an empty_cache(). */
      if (i + 1 == s->nev || (s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_FREE &&
                              s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_ALLOC &&
                              s->ev[i + 1].action != GPUPLAN_ACT_OOM))
        gpuplan_cachealloc_empty_cache(a);
      break;
    case GPUPLAN_ACT_ALLOC:
    case GPUPLAN_ACT_OOM:
      rc = gpuplan_cachealloc_malloc(a, e->size, e->stream, &addr);
      if (rc == GPUPLAN_EOOM) {
        r->oom_event = i;
        snprintf(r->oom_message, sizeof r->oom_message, "%s", gpuplan_errmsg(ctx));
        rc = GPUPLAN_OK;
        break;
      }
      if (rc) goto out;
      if (e->action == GPUPLAN_ACT_OOM) {
        gpuplan_cachealloc_release(a, addr); /* the program never got it */
      } else {
        r->allocs++;
        if (addr != e->addr && (rc = amap_put(ctx, &m, e->addr, addr))) goto out;
      }
      break;
    case GPUPLAN_ACT_FREE_REQUESTED:
      addr = amap_take(&m, e->addr);
      /* Blocks live at the start keep their recorded addresses. */
      gpuplan_cachealloc_release(a, addr ? addr : e->addr);
      break;
    default:
      break;
    }
    track_peak(a, r);
  }
  r->exact = 0;
  r->peak_allocated = (uint64_t)a->st.allocated_bytes[0].peak;
  r->final_allocated = (uint64_t)a->st.allocated_bytes[0].current;
  r->final_reserved = (uint64_t)a->st.reserved_bytes[0].current;
  r->segment_allocs = (size_t)a->st.num_device_alloc;
  r->num_alloc_retries = a->st.num_alloc_retries;
  r->num_ooms = a->st.num_ooms;
out:
  gpuplan__free(ctx, m.k);
  gpuplan__free(ctx, m.v);
  gpuplan_cachealloc_free(a);
  return rc;
}

int gpuplan_snapshot_replay(gpuplan_ctx *ctx, const gpuplan_snapshot *s,
                            const gpuplan_replay_options *options, gpuplan_replay_result *r) {
  gpuplan_replay_options defaults = GPUPLAN_REPLAY_OPTIONS_INIT;
  const gpuplan_replay_options *o = options ? options : &defaults;
  state st;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!s || !r) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "replay: NULL argument");
  if (o->version != GPUPLAN_REPLAY_OPTIONS_VERSION)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "replay: options.version %u is unknown", o->version);
  memset(r, 0, sizeof *r);
  r->diverged_at = SIZE_MAX;
  r->oom_event = SIZE_MAX;
  if (!o->alloc_conf && !o->capacity) {
    size_t i;
    int mapped = s->conf.expandable_segments;
    for (i = 0; i < s->nev && !mapped; i++)
      mapped = s->ev[i].action == GPUPLAN_ACT_SEGMENT_MAP || s->ev[i].action == GPUPLAN_ACT_SEGMENT_UNMAP;
    if (mapped)
      return gpuplan__error(ctx, GPUPLAN_EUNSUPPORTED,
                            "replay: the trace was recorded with expandable_segments; the exact check "
                            "supports the native segments only (a what-if replay, with --alloc-conf or "
                            "--gpu, works)");
  }
  memset(&st, 0, sizeof st);
  rc = state_copy(ctx, s, &st);
  if (rc == GPUPLAN_OK) rc = rebuild(ctx, s, &st, r);
  if (rc == GPUPLAN_OK && r->diverged_at != SIZE_MAX) {
    /* The file contradicts itself; nothing to replay. */
    r->exact = 0;
  } else if (rc == GPUPLAN_OK) {
    r->rebuilt_start = st.n > 0; /* the allocator was not empty when the trace began */
    rc = o->alloc_conf || o->capacity ? run_whatif(ctx, s, &st, o, r) : run_exact(ctx, s, &st, o, r);
  }
  state_free(ctx, &st);
  if (r->peak_reserved)
    r->fragmentation = 1.0 - (double)r->peak_allocated / (double)r->peak_reserved;
  if (rc == GPUPLAN_OK) gpuplan__clear(ctx);
  return rc;
}
