/*
 * replay.c: load torch memory snapshots and replay them through the
 * caching-allocator model (gpuplan/replay.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_int.h"
#include "common/amap.h"
#include "common/span.h"
#include "common/treap.h"
#include "replay/pickle.h"
#include "replay/replay_int.h"
#include "replay/snapshot_fields.h"

typedef struct rblock {
  uint64_t addr, size, requested;
  int allocated;
  int pending; /* active_pending_free (allocated too): freed by free_requested, awaiting free_completed */
  /* Rebuilt blocks live at the start whose size the file does not fix:
   * up to `slack` bytes more than rounded request (an unsplit remainder,
   * R11) may have been theirs. */
  uint64_t slack;
} rblock;

typedef struct rseg {
  uint64_t addr, size, stream;
  int small;
  int expandable;  /* a mapped range of an expandable segment (R26-R30) */
  int private_pool; /* segment_pool_id is not (0, 0): a MemPool's or a CUDA graph's */
  unsigned pool;    /* ... which: 1 + its index in pool_ids (0: default, or one of too many) */
  rblock *b;
  size_t n, cap;
  long troot;       /* while rebuilding: its blocks, a treap in the tpool (-1: none) */
  size_t tcount;    /* ... how many */
} rseg;

/* A state of the allocator: segments (by pointer, so that inserting and
 * erasing in the sorted array moves 8 bytes a segment) in address order.
 * The segments and their block arrays come from the state's arena: a
 * segment erased, or an array outgrown, stays there until the state is
 * freed (a rebuild makes thousands of them; one allocation each cost as
 * much as the rest of the rebuild). */
typedef struct state {
  rseg **v;
  size_t n, cap;
  gpuplan__arena ar;
} state;

struct gpuplan_snapshot {
  gpuplan_ctx *ctx;
  gpuplan_alloc_event *ev;
  size_t nev;
  rseg *segs;  /* final state, sorted by address */
  size_t nsegs;
  rblock *blocks; /* their blocks (segs[i].b point into it) */
  gpuplan_alloc_conf conf;
  gpuplan__snapshot_facts facts;
  int64_t pool_ids[GPUPLAN__MAX_POOLS_SEEN][2]; /* the private pools seen (facts.pools) */
  char *recorded_conf; /* facts.recorded_conf's storage */
  int device;
  int expandable_trace; /* the trace maps or unmaps (recorded with expandable segments) */
  /* Per trace event (allocs and OOMs): the private pool it was made in, as
   * far as the file shows it (route_pools); NULL when the file has none. */
  unsigned char *ev_pool;
  size_t private_cudamalloc; /* private pools' segments that are not expandable */
  /* The state the trace starts from, rebuilt once at load (no block sizes
   * learnt yet): every replay starts there.  start_diverged: where the
   * file contradicts itself while rebuilding (SIZE_MAX: nowhere). */
  state start;
  size_t start_diverged;
  char start_why[sizeof ((gpuplan_replay_result *)0)->divergence];
  /* why the recorded PYTORCH_CUDA_ALLOC_CONF text was not read (NULL: it
   * was, or there is none; ctx-allocated) */
  char *conf_unread;
  size_t skipped_events;  /* trace events of an action the model does not know, skipped */
  char skipped_action[40]; /* ... the first one's */
};

/* --- small helpers --------------------------------------------------------- */


static int seg_cmp_addr(const void *x, const void *y) {
  const rseg *a = x, *b = y;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The first of the file's segments (sorted by address) at or above addr. */
static size_t file_seg_lower(const gpuplan_snapshot *s, uint64_t addr) {
  size_t lo = 0, hi = s->nsegs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->segs[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Index of the block containing addr in s, or -1. */
GPUPLAN__SPAN_FIND(rblock_find, rblock, GPUPLAN__SPAN_DIRECT)
static long blk_find(const rseg *s, uint64_t addr) { return rblock_find(s->b, s->n, addr); }

/* --- loading --------------------------------------------------------------- */

/* The error of an integer field that is missing or negative: "snapshot:
 * segment 3: ...", or with its segment "snapshot: segment 3 block 5: ..."
 * (seg SIZE_MAX: none).  Error path only. */
static int bad_u64(gpuplan_ctx *ctx, const char *key, const char *what, size_t idx, size_t seg) {
  if (seg != SIZE_MAX)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot: segment %zu %s %zu: field '%s' is missing or not a non-negative integer", seg,
                          what, idx, key);
  return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: %s %zu: field '%s' is missing or not a non-negative integer",
                        what, idx, key);
}

/* --- the fields of many dicts ------------------------------------------------ */

/* Picklers write a key once and refer to it after (the memo), so the keys
 * of a snapshot's thousands of blocks and trace events are a few str
 * values: a key's pointer says which field it is, and its text is compared
 * only when a new one comes. */
#define FIELDS_MAX 8
#define FIELDS_SLOTS 32 /* a power of two */

typedef struct fields {
  const char *const *names; /* NULL-terminated, at most FIELDS_MAX */
  size_t n, len[FIELDS_MAX];
  /* Keys seen, by their address: slot[h].i is the field the key slot[h].k
   * names, or -1 for none of them (a slot is only a cache: a key that
   * lost its slot has its text compared again). */
  struct {
    const gpuplan__pv *k;
    int i;
  } slot[FIELDS_SLOTS];
} fields;

static void fields_init(fields *f, const char *const *names) {
  memset(f, 0, sizeof *f);
  f->names = names;
  while (names[f->n] && f->n < FIELDS_MAX) {
    f->len[f->n] = strlen(names[f->n]);
    f->n++;
  }
}

/* v[i]: the value of the last pair of d whose key is the str names[i], or
 * NULL; what gpuplan__pv_get(d, names[i]) gives, in one pass over d. */
static void fields_get(fields *f, const gpuplan__pv *d, const gpuplan__pv **v) {
  size_t i, j;
  for (i = 0; i < f->n; i++) v[i] = NULL;
  if (!d || d->type != GPUPLAN__PV_DICT) return;
  for (j = 0; j < d->u.dict.n; j++) {
    const gpuplan__pv *k = d->u.dict.keys[j];
    size_t h = (size_t)(((uintptr_t)k >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (FIELDS_SLOTS - 1);
    int at;
    if (f->slot[h].k == k) {
      at = f->slot[h].i;
    } else {
      at = -1;
      if (k->type == GPUPLAN__PV_STR)
        for (i = 0; i < f->n; i++)
          if (k->u.str.len == f->len[i] && memcmp(k->u.str.s, f->names[i], f->len[i]) == 0) {
            at = (int)i;
            break;
          }
      f->slot[h].k = k;
      f->slot[h].i = at;
    }
    if (at >= 0) v[at] = d->u.dict.vals[j];
  }
}

/* The fields of allocator_settings that conf_from_settings and convert
 * read, found by fields_get in one pass over the dict (five
 * gpuplan__pv_get a field were a tenth of a 33-event snapshot's
 * settings). */
enum { ST_TEXT, ST_EXPANDABLE, ST_ROUNDUP, ST_MAX_SPLIT, ST_GC };
static const char *const settings_fields[] = {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments",
                                              "roundup_power2_divisions", "max_split_size",
                                              "garbage_collection_threshold", NULL};

/* The file's allocator_settings onto a conf; a value PyTorch itself would
 * refuse is an error naming the field (review L6). */
static int conf_from_settings(gpuplan_ctx *ctx, const gpuplan__pv *set, const gpuplan__pv *const *sv,
                              gpuplan_alloc_conf *c, char **unread) {
  const gpuplan__pv *v;
  const char *text;
  int64_t i;
  gpuplan_alloc_conf_parse(ctx, NULL, GPUPLAN_TORCH_LATEST, c);
  gpuplan__clear(ctx);
  if (!set) return GPUPLAN_OK;
  /* Present fields of a type torch never writes are the file's error,
   * named (review 2026-12-02: were ignored without a word). */
  if (set->type != GPUPLAN__PV_DICT)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: allocator_settings is not a dict");
  v = sv[ST_TEXT];
  if (v && v->type != GPUPLAN__PV_STR && v->type != GPUPLAN__PV_NONE)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: allocator_settings.PYTORCH_CUDA_ALLOC_CONF is not a str");
  v = sv[ST_EXPANDABLE];
  if (v && v->type != GPUPLAN__PV_BOOL && v->type != GPUPLAN__PV_INT)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: allocator_settings.expandable_segments is not a bool");
  v = sv[ST_ROUNDUP];
  if (v && v->type != GPUPLAN__PV_DICT && v->type != GPUPLAN__PV_NONE)
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot: allocator_settings.roundup_power2_divisions is not a dict of sizes in MB to "
                          "divisions");
  /* The settings' text first (PyTorch records PYTORCH_CUDA_ALLOC_CONF as
   * the run had it): the keys the dict has no field for
   * (max_non_split_rounding_mb, large_segment_size_mb, ...) are only
   * there.  Text the model does not take is said, not fatal: the fields
   * below still hold the main settings. */
  text = gpuplan__pv_str(sv[ST_TEXT]);
  if (text && *text) {
    gpuplan_alloc_conf t;
    if (gpuplan_alloc_conf_parse(ctx, text, GPUPLAN_TORCH_LATEST, &t) == GPUPLAN_OK) {
      *c = t;
    } else {
      char why[GPUPLAN_ERRMSG_MAX];
      snprintf(why, sizeof why, "%s", gpuplan_errmsg(ctx));
      if (!(*unread = gpuplan__strdup(ctx, why))) return gpuplan__nomem(ctx);
    }
    gpuplan__clear(ctx);
  }
  if (gpuplan__pv_int(sv[ST_MAX_SPLIT], &i) == 0 && i != -1) {
    if (i < 0) /* (a pickled 2^63 or more reads as a negative int64: neither is a size) */
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: allocator_settings.max_split_size is neither -1 (unlimited) nor a size in "
                            "bytes (%lld as a signed 64-bit integer, %llu unsigned); PyTorch writes -1 or at least "
                            "20 MiB", (long long)i, (unsigned long long)i);
    if (i < (int64_t)(20 << 20))
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: allocator_settings.max_split_size is %lld bytes; PyTorch takes -1 "
                            "(unlimited) or at least 20 MiB (max_split_size_mb >= 20)", (long long)i);
    c->max_split_size = (uint64_t)i;
  }
  v = sv[ST_GC];
  if (v && v->type != GPUPLAN__PV_NONE) {
    double t;
    if (v->type == GPUPLAN__PV_FLOAT) t = v->u.f;
    else if (gpuplan__pv_int(v, &i) == 0) t = (double)i; /* (a hand-made file's 0) */
    else
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: allocator_settings.garbage_collection_threshold is not a number");
    if (!(t >= 0 && t < 1))
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: allocator_settings.garbage_collection_threshold is %g; it lies in [0, 1)", t);
    c->garbage_collection_threshold = t;
  }
  if (gpuplan__pv_int(sv[ST_EXPANDABLE], &i) == 0)
    c->expandable_segments = i != 0;
  v = sv[ST_ROUNDUP];
  if (v && v->type == GPUPLAN__PV_DICT) {
    size_t k;
    for (k = 0; k < v->u.dict.n; k++) {
      const char *key = gpuplan__pv_str(v->u.dict.keys[k]);
      int64_t d;
      const char *q = key;
      uint64_t mb = 0;
      int ok = key && *key >= '1' && *key <= '9';
      /* PyTorch writes each interval's size in MB, a power of two, as text
       * ("1" to "32768": read here, not with strtoull, 16 times a load) */
      for (; ok && *q; q++) {
        if (*q < '0' || *q > '9' || mb > (UINT64_MAX - 9) / 10) ok = 0;
        else mb = mb * 10 + (uint64_t)(*q - '0');
      }
      if (!ok || (mb & (mb - 1)))
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: allocator_settings.roundup_power2_divisions: key '%.24s' is not a "
                              "power-of-two size in MB", key ? key : "(not a str)");
      if (gpuplan__pv_int(v->u.dict.vals[k], &d) != 0 || d < 0 || d > (1 << 30) || (d & (d - 1)))
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: allocator_settings.roundup_power2_divisions['%.20s'] is not 0 or a power of "
                              "two up to 2^30", key);
      c->roundup_divisions[gpuplan__roundup_interval(mb)] = (unsigned)d;
    }
  }
  return GPUPLAN_OK;
}

/* An integer field (a value fields_get found) as a size: non-negative, or the file's error naming it. */
static inline int value_u64(gpuplan_ctx *ctx, const gpuplan__pv *v, const char *key, const char *what, size_t idx,
                            size_t seg, uint64_t *out) {
  int64_t i;
  if (v && v->type == GPUPLAN__PV_INT && v->u.i >= 0) { /* (the usual case, here) */
    *out = (uint64_t)v->u.i;
    return GPUPLAN_OK;
  }
  if (gpuplan__pv_int(v, &i) != 0 || i < 0) return bad_u64(ctx, key, what, idx, seg);
  *out = (uint64_t)i;
  return GPUPLAN_OK;
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


/* A list of dicts as loaded: a LIST of them, or decoded (RECORDS). */
static int dict_list(const gpuplan__pv *v) {
  return v && (v->type == GPUPLAN__PV_LIST || v->type == GPUPLAN__PV_RECORDS);
}

static size_t dict_count(const gpuplan__pv *v) {
  return v->type == GPUPLAN__PV_RECORDS ? v->u.rec.n : v->u.seq.n;
}

/* The fields f names of item i of such a list: a record's own, or a
 * dict's values found (fields_get) put in buf; NULL when the item is not a
 * dict.  A field's value is r[k].v (NULL: missing); its integer, pf_int or
 * pf_u64 (a record holds integers as &gpuplan__pf_int and r[k].i). */
static const gpuplan__pfield *dict_fields(fields *f, const gpuplan__pv *list, size_t i, gpuplan__pfield *buf) {
  const gpuplan__pv *v[FIELDS_MAX];
  size_t k;
  if (list->type == GPUPLAN__PV_RECORDS) return NULL; /* (NEVER: a record of another schema) */
  if (list->u.seq.items[i]->type != GPUPLAN__PV_DICT) return NULL;
  fields_get(f, list->u.seq.items[i], v);
  for (k = 0; k < f->n; k++) {
    buf[k].v = v[k];
    buf[k].i = 0;
  }
  return buf;
}

static inline const gpuplan__pfield *item_fields(fields *f, const gpuplan__pv *list, size_t i,
                                                 gpuplan__pfield *buf) {
  if (list->type == GPUPLAN__PV_RECORDS && !NEVER(list->u.rec.nf != f->n)) return gpuplan__pv_record(list, i);
  return dict_fields(f, list, i, buf);
}

/* gpuplan__pv_int of a field. */
static int pf_int(const gpuplan__pfield *r, int64_t *out) {
  gpuplan__pv tmp;
  return gpuplan__pv_int(gpuplan__pf_value(r, &tmp), out);
}

/* value_u64 of a field. */
static int pf_u64_value(gpuplan_ctx *ctx, const gpuplan__pfield *r, const char *key, const char *what, size_t idx,
                        size_t seg, uint64_t *out) {
  gpuplan__pv tmp;
  return value_u64(ctx, gpuplan__pf_value(r, &tmp), key, what, idx, seg, out);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline)) /* (convert's every integer: the compiler left it a call) */
#endif
static inline int pf_u64(gpuplan_ctx *ctx, const gpuplan__pfield *r, const char *key, const char *what, size_t idx,
                         size_t seg, uint64_t *out) {
  if (r->v == &gpuplan__pf_int && r->i >= 0) { /* (a record's integer: the usual case) */
    *out = (uint64_t)r->i;
    return GPUPLAN_OK;
  }
  return pf_u64_value(ctx, r, key, what, idx, seg, out);
}

static int convert(gpuplan_ctx *ctx, const gpuplan__pv *root, int device, size_t values, gpuplan_snapshot *s) {
  static const char *const state_names[3] = {"inactive", "active_allocated", "active_pending_free"};
  const gpuplan__pv *segs, *traces, *tr = NULL, *seen_type[2] = {NULL, NULL}, *seen_state[3] = {NULL, NULL, NULL};
  size_t i, j, total = 0, used = 0;
  uint64_t reserved_sum = 0; /* the segments' total_size so far */
  int64_t dev;
  fields sf, bf;
  int list_format = root && root->type == GPUPLAN__PV_LIST;
  if (!root || (root->type != GPUPLAN__PV_DICT && !list_format))
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot: the pickle is not a dict (a torch.cuda.memory._snapshot() "
                          "has 'segments' and 'device_traces') or a list of segments (torch 1.13)");
  /* torch 1.13 wrote the list of segments alone; 2.x's _memory_viz reads it
   * as {'segments': data, 'traces': []} (_memory_viz._read). */
  segs = list_format ? root : gpuplan__pv_get(root, "segments");
  traces = list_format ? NULL : gpuplan__pv_get(root, "device_traces");
  if (!dict_list(segs)) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: no 'segments' list");
  if (traces && traces->type != GPUPLAN__PV_LIST)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: 'device_traces' is not a list");
  if (traces && device >= 0 && (size_t)device < traces->u.seq.n) {
    tr = traces->u.seq.items[device];
    if (!dict_list(tr))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: device_traces[%d] is not a list", device);
  }
  {
    const gpuplan__pv *set = list_format ? NULL : gpuplan__pv_get(root, "allocator_settings");
    const gpuplan__pv *sv[FIELDS_MAX];
    fields stf;
    const char *text;
    fields_init(&stf, settings_fields);
    fields_get(&stf, set, sv);
    GPUPLAN_TRY(conf_from_settings(ctx, set, sv, &s->conf, &s->conf_unread));
    text = gpuplan__pv_str(sv[ST_TEXT]);
    s->facts.has_settings = set && set->type == GPUPLAN__PV_DICT;
    if (text && *text) {
      if (!(s->recorded_conf = gpuplan__strdup(ctx, text))) return gpuplan__nomem(ctx);
      s->facts.recorded_conf = s->recorded_conf;
    }
    s->facts.format = list_format ? 1 : 2;
    s->facts.traced_devices = traces ? traces->u.seq.n : 0;
    s->facts.segments_all = dict_count(segs);
  }
  if (!list_format) {
    /* PyTorch main (pytorch#182407): pinned host memory, host_segments (a
     * list of segments) and host_traces (trace entries, flat or a list per
     * device).  Counted, not replayed. */
    static const char *const host_keys[] = {"host_segments", "host_traces"};
    size_t hk;
    for (hk = 0; hk < 2; hk++) {
      const gpuplan__pv *hv = gpuplan__pv_get(root, host_keys[hk]);
      if (!hv) continue;
      s->facts.has_host = 1;
      if (hv->type != GPUPLAN__PV_LIST) continue;
      for (i = 0; i < hv->u.seq.n; i++) {
        const gpuplan__pv *e = hv->u.seq.items[i];
        if (hk == 1 && e->type == GPUPLAN__PV_LIST) s->facts.host_entries += e->u.seq.n;
        else s->facts.host_entries++;
      }
    }
  }
  {
    /* 2.6+: torch.cuda.memory._record_memory_history's annotations
     * (record_function ranges), [{name, stage, device, time_us}]. */
    const gpuplan__pv *ann = list_format ? NULL : gpuplan__pv_get(root, "external_annotations");
    fields af;
    if (ann && !dict_list(ann) && ann->type != GPUPLAN__PV_NONE)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: 'external_annotations' is not a list");
    fields_init(&af, ann_fields);
    if (dict_list(ann))
      for (i = 0; i < dict_count(ann); i++) {
        gpuplan__pfield buf[FIELDS_MAX];
        const gpuplan__pfield *v = item_fields(&af, ann, i, buf);
        int64_t adev;
        if (!v) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: external_annotations[%zu] is not a dict", i);
        if (pf_int(&v[AF_DEVICE], &adev) == 0 && adev != device) continue;
        s->facts.annotations++;
      }
  }

  /* A pickle may refer to one dict many times (memo references): 2,000
   * references to a segment holding 2,000 references to a block are 4M
   * blocks from a 5 KB file.  A torch snapshot never shares them, and
   * every block it has cost the reader a value: more blocks than values
   * is sharing, refused before anything is expanded (review M1). */
  fields_init(&sf, seg_fields);
  fields_init(&bf, block_fields);
  {
    for (i = 0; i < dict_count(segs); i++) {
      gpuplan__pfield buf[FIELDS_MAX];
      const gpuplan__pfield *v = item_fields(&sf, segs, i, buf);
      if (v && dict_list(v[SF_BLOCKS].v)) total += dict_count(v[SF_BLOCKS].v);
      if (total > values)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: its segments or blocks are shared dicts (pickle memo references): "
                              "%zu segments hold more blocks than the file has values (%zu); a torch "
                              "snapshot never shares them", i + 1, values);
    }
  }
  if (!(s->blocks = gpuplan__calloc(ctx, total ? total : 1, sizeof *s->blocks))) return gpuplan__nomem(ctx);
  /* Segments of this device. */
  s->segs = gpuplan__calloc(ctx, dict_count(segs) ? dict_count(segs) : 1, sizeof *s->segs);
  if (!s->segs) return gpuplan__nomem(ctx);
  /* (seen_type: the segment_type strs met, [0] "large", [1] "small") */
  for (i = 0; i < dict_count(segs); i++) {
    const gpuplan__pv *blocks, *type;
    gpuplan__pfield buf[FIELDS_MAX];
    const gpuplan__pfield *v = item_fields(&sf, segs, i, buf);
    rseg *r;
    uint64_t at;
    if (!v) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu is not a dict", i);
    /* Fields present with a type torch never writes are the file's error,
     * named (review B-5: a device "x" was read as device 0). */
    if (v[SF_DEVICE].v && pf_int(&v[SF_DEVICE], &dev) != 0)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: field 'device' is not an integer", i);
    if (v[SF_DEVICE].v && dev != device) continue;
    r = &s->segs[s->nsegs];
    {
      int64_t xv;
      if (v[SF_EXPANDABLE].v && pf_int(&v[SF_EXPANDABLE], &xv) != 0)
        return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: field 'is_expandable' is not a bool", i);
      if (v[SF_EXPANDABLE].v && xv) s->facts.expandable_segments++, r->expandable = 1;
    }
    if (v[SF_POOL].v) {
      /* (0, 0): the default pool; anything else a MemPool or a CUDA
       * graph's private pool, whose blocks serve only that pool. */
      gpuplan__pv tmp;
      const gpuplan__pv *pid = gpuplan__pf_value(&v[SF_POOL], &tmp);
      int64_t p0, p1;
      if ((pid->type != GPUPLAN__PV_TUPLE && pid->type != GPUPLAN__PV_LIST) || pid->u.seq.n != 2 ||
          gpuplan__pv_int(pid->u.seq.items[0], &p0) != 0 || gpuplan__pv_int(pid->u.seq.items[1], &p1) != 0)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: segment %zu: field 'segment_pool_id' is not a pair of integers", i);
      if (p0 || p1) {
        size_t k;
        r->private_pool = 1;
        s->facts.private_segments++;
        for (k = 0; k < s->facts.pools && k < GPUPLAN__MAX_POOLS_SEEN; k++)
          if (s->pool_ids[k][0] == p0 && s->pool_ids[k][1] == p1) break;
        if (k == s->facts.pools && k < GPUPLAN__MAX_POOLS_SEEN) {
          s->pool_ids[k][0] = p0;
          s->pool_ids[k][1] = p1;
          s->facts.pools++;
        }
        if (k < GPUPLAN__MAX_POOLS_SEEN) r->pool = (unsigned)k + 1;
        if (!r->expandable) s->private_cudamalloc++;
      }
    }
    GPUPLAN_TRY(pf_u64(ctx, &v[SF_ADDRESS], "address", "segment", i, SIZE_MAX, &r->addr));
    GPUPLAN_TRY(pf_u64(ctx, &v[SF_TOTAL_SIZE], "total_size", "segment", i, SIZE_MAX, &r->size));
    if (v[SF_STREAM].v) GPUPLAN_TRY(pf_u64(ctx, &v[SF_STREAM], "stream", "segment", i, SIZE_MAX, &r->stream));
    type = v[SF_TYPE].v;
    if (!type) {
      r->small = r->size == KSMALL_BUFFER;
    } else {
      /* (a pickler writes "small" and "large" once and refers to them: the
       * text is read when a new str comes) */
      if (type != seen_type[0] && type != seen_type[1]) {
        const char *ts = gpuplan__pv_str(type);
        int sm = ts && strcmp(ts, "small") == 0;
        if (!sm && (!ts || strcmp(ts, "large") != 0))
          return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: field 'segment_type' is not 'small' "
                                "or 'large'", i);
        seen_type[sm] = type;
      }
      r->small = type == seen_type[1];
    }
    s->nsegs++;
    if (r->size == 0)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: total_size is 0", i);
    /* PyTorch's counters are int64: a file whose segments reserve more
     * overflowed them (review 2026-12-02: a signed overflow here, and a
     * summary of -3 B beside 8191 PiB) */
    if (r->size > INT64_MAX - reserved_sum)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: segment %zu: the segments' total_size add up to more than 2^63 - 1 bytes, "
                            "more than PyTorch's counters hold", i);
    reserved_sum += r->size;
    /* Small-pool segments are 2 MiB (kSmallBuffer) unless expandable */
    if (r->small && !r->expandable && r->size != KSMALL_BUFFER)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: segment %zu: a 'small' segment_type of %llu bytes: the small pool's segments "
                            "are 2 MiB (kSmallBuffer) unless expandable", i, (unsigned long long)r->size);
    if (r->addr + r->size < r->addr)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: segment %zu: address 0x%llx + total_size %llu passes the end of the address "
                            "space", i, (unsigned long long)r->addr, (unsigned long long)r->size);
    blocks = v[SF_BLOCKS].v;
    if (!dict_list(blocks))
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu: no 'blocks' list", i);
    /* their room in s->blocks (counted above) */
    if (NEVER(dict_count(blocks) > total - used)) return gpuplan__error(ctx, GPUPLAN_ERROR, "snapshot: blocks miscounted");
    r->b = s->blocks + used;
    r->cap = dict_count(blocks);
    used += r->cap;
    at = r->addr;
    for (j = 0; j < dict_count(blocks); j++) {
      gpuplan__pfield bbuf[FIELDS_MAX];
      const gpuplan__pfield *bv = item_fields(&bf, blocks, j, bbuf);
      rblock rb;
      const gpuplan__pv *bstate;
      memset(&rb, 0, sizeof rb);
      if (!bv) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segment %zu block %zu is not a dict", i, j);
      GPUPLAN_TRY(pf_u64(ctx, &bv[BF_SIZE], "size", "block", j, i, &rb.size));
      if (bv[BF_REQUESTED].v) {
        GPUPLAN_TRY(pf_u64(ctx, &bv[BF_REQUESTED], "requested_size", "block", j, i, &rb.requested));
      } else {
        /* Older files: the request is the first entry of the block's
         * history ({real_size, frames}), as _memory_viz._block_extra_legacy. */
        const gpuplan__pv *h = bv[BF_HISTORY].v;
        if (h && h->type == GPUPLAN__PV_LIST && h->u.seq.n)
          GPUPLAN_TRY(value_u64(ctx, gpuplan__pv_get(h->u.seq.items[0], "real_size"), "history[0].real_size", "block",
                                j, i, &rb.requested));
      }
      rb.addr = at; /* blocks tile the segment in address order */
      /* The three states torch writes; anything else is the file's error
       * (review 2026-12-02: 'bogus' counted as allocated, 7 as free).  As
       * segment_type's, each state's str is read when a new one comes. */
      bstate = bv[BF_STATE].v;
      if (bstate) {
        int st;
        for (st = 0; st < 3 && bstate != seen_state[st]; st++) continue;
        if (st == 3) {
          const char *t = gpuplan__pv_str(bstate);
          for (st = 0; st < 3 && !(t && strcmp(t, state_names[st]) == 0); st++) continue;
          if (st == 3)
            return gpuplan__error(ctx, GPUPLAN_EINVAL,
                                  "snapshot: segment %zu block %zu: field 'state' is not 'active_allocated', "
                                  "'active_pending_free' or 'inactive'", i, j);
          seen_state[st] = bstate;
        }
        rb.allocated = st != 0;
        rb.pending = st == 2;
      }
      /* A live block was asked for at most its size (a free one keeps the
       * requested_size of its last use, which a merge may exceed: real
       * files have them) */
      if (rb.allocated && rb.requested > rb.size)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: segment %zu block %zu: %s %llu of a live block is more than its size %llu",
                              i, j, bv[BF_REQUESTED].v ? "requested_size" : "its history's first real_size",
                              (unsigned long long)rb.requested, (unsigned long long)rb.size);
      if (rb.size == 0 || rb.addr + rb.size > r->addr + r->size || rb.addr + rb.size < rb.addr)
        return gpuplan__error(ctx, GPUPLAN_EINVAL,
                              "snapshot: segment %zu block %zu: sizes overrun the segment", i, j);
      r->b[r->n++] = rb;
      at += rb.size;
    }
    if (at != r->addr + r->size)
      return gpuplan__error(ctx, GPUPLAN_EINVAL,
                            "snapshot: segment %zu: blocks cover %llu of %llu bytes", i,
                            (unsigned long long)(at - r->addr), (unsigned long long)r->size);
  }
  /* (torch writes them sorted by address: sorted again only if not) */
  for (i = 1; i < s->nsegs && s->segs[i - 1].addr <= s->segs[i].addr; i++) continue;
  if (i < s->nsegs) qsort(s->segs, s->nsegs, sizeof *s->segs, seg_cmp_addr);
  for (i = 1; i < s->nsegs; i++)
    if (s->segs[i - 1].addr + s->segs[i - 1].size > s->segs[i].addr)
      return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: segments overlap at 0x%llx",
                            (unsigned long long)s->segs[i].addr);

  /* Trace events. */
  if (tr) {
    fields ef;
    /* the action strings seen, by pointer (as the keys) */
    const gpuplan__pv *act_pv[16];
    gpuplan_alloc_action act_of[16];
    size_t nact = 0, k;
    /* (each event zeroed as it is filled: not the whole array first) */
    if (dict_count(tr) > SIZE_MAX / sizeof *s->ev) return gpuplan__nomem(ctx);
    s->ev = gpuplan__malloc(ctx, (dict_count(tr) ? dict_count(tr) : 1) * sizeof *s->ev);
    if (!s->ev) return gpuplan__nomem(ctx);
    fields_init(&ef, event_fields);
    for (i = 0; i < dict_count(tr); i++) {
      gpuplan__pfield buf[FIELDS_MAX];
      const gpuplan__pfield *v = item_fields(&ef, tr, i, buf);
      const gpuplan__pv *act;
      gpuplan_alloc_event *o = &s->ev[s->nev];
      memset(o, 0, sizeof *o);
      if (!v) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: trace event %zu is not a dict", i);
      act = v[EF_ACTION].v;
      for (k = 0; k < nact && act_pv[k] != act; k++) continue;
      if (k < nact) {
        o->action = act_of[k];
      } else {
        if (!gpuplan__pv_str(act)) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: trace event %zu: no 'action'", i);
        if (!action_of(gpuplan__pv_str(act), &o->action)) {
          /* user_defined (record_annotation's entries, torch 2.6+) holds no
           * memory; any other is an action this model does not know (a
           * newer release's, or a damaged file): skipped and said (review
           * B-5: were skipped silently). */
          if (strcmp(gpuplan__pv_str(act), "user_defined") != 0 && !s->skipped_events++)
            snprintf(s->skipped_action, sizeof s->skipped_action, "%s", gpuplan__pv_str(act));
          continue;
        }
        if (nact < sizeof act_pv / sizeof act_pv[0]) {
          act_pv[nact] = act;
          act_of[nact++] = o->action;
        }
      }
      if (o->action == GPUPLAN_ACT_OOM) {
        if (v[EF_DEVICE_FREE].v)
          GPUPLAN_TRY(pf_u64(ctx, &v[EF_DEVICE_FREE], "device_free", "trace event", i, SIZE_MAX, &o->device_free));
      } else if (o->action != GPUPLAN_ACT_SNAPSHOT) {
        GPUPLAN_TRY(pf_u64(ctx, &v[EF_ADDR], "addr", "trace event", i, SIZE_MAX, &o->addr));
      }
      GPUPLAN_TRY(pf_u64(ctx, &v[EF_SIZE], "size", "trace event", i, SIZE_MAX, &o->size));
      if (v[EF_STREAM].v) GPUPLAN_TRY(pf_u64(ctx, &v[EF_STREAM], "stream", "trace event", i, SIZE_MAX, &o->stream));
      s->nev++;
    }
  }
  return GPUPLAN_OK;
}

static void state_free(gpuplan_ctx *ctx, state *st);
static int start_state(gpuplan_ctx *ctx, gpuplan_snapshot *s);
static int route_pools(gpuplan_ctx *ctx, gpuplan_snapshot *s);

void gpuplan_snapshot_free(gpuplan_snapshot *s) {
  gpuplan_ctx *ctx;
  if (!s) return;
  ctx = s->ctx;
  state_free(ctx, &s->start);
  gpuplan__free(ctx, s->ev_pool);
  gpuplan__free(ctx, s->recorded_conf);
  gpuplan__free(ctx, s->conf_unread);
  gpuplan__free(ctx, s->segs);
  gpuplan__free(ctx, s->blocks);
  gpuplan__free(ctx, s->ev);
  gpuplan__free(ctx, s);
  gpuplan__ctx_unref(ctx);
}


/* The snapshot in buf[0..len), or (rd) the one rd reads. */
static int load_from(gpuplan_ctx *ctx, const void *buf, size_t len, const gpuplan__pickle_reader *rd,
                     int device, gpuplan_snapshot **out) {
  gpuplan__pickle p;
  const gpuplan__pv *root = NULL;
  gpuplan_snapshot *s;
  int rc;
  if (device < 0) return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot: device must be >= 0");
  rc = gpuplan__pickle_load_decode(ctx, buf, len, rd, NULL, snapshot_skipped, snapshot_decoded, &p, &root);
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
  s->device = device;
  gpuplan__ctx_ref(ctx);
  rc = convert(ctx, root, device, p.values, s);
  gpuplan__pickle_free(&p);
  if (rc == GPUPLAN_OK) rc = start_state(ctx, s);
  if (rc == GPUPLAN_OK && s->facts.pools) rc = route_pools(ctx, s);
  if (rc) {
    gpuplan_snapshot_free(s);
    return rc;
  }
  *out = s;
  gpuplan__clear(ctx);
  return GPUPLAN_OK;
}

int gpuplan_snapshot_load_buffer(gpuplan_ctx *ctx, const void *buf, size_t len, int device,
                                 gpuplan_snapshot **out) {
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out || (!buf && len)) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot: NULL argument");
  *out = NULL;
  return load_from(ctx, buf, len, NULL, device, out);
}

/* The file, read in pieces into the loader's window (pread: the file's own
 * position is never moved). */
typedef struct file_in {
  int fd;
  const char *path;
} file_in;

static int file_read(void *ud, gpuplan_ctx *ctx, uint64_t off, void *dst, size_t n, size_t *got) {
  const file_in *fi = ud;
  ssize_t r;
  do r = pread(fi->fd, dst, n, (off_t)off);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    int e = errno;
    int rc = gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: read failed: %s", fi->path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return rc;
  }
  *got = (size_t)r;
  return GPUPLAN_OK;
}

#define PROBE ((size_t)64 << 10) /* the first read's size (gpuplan_snapshot_load) */

int gpuplan_snapshot_load(gpuplan_ctx *ctx, const char *path, int device, gpuplan_snapshot **out) {
  gpuplan__pickle_reader rd;
  file_in fi;
  struct stat sb;
  int fd, rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!out || !path) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "snapshot: NULL argument");
  *out = NULL;
  /* O_NONBLOCK: a FIFO is refused below instead of waiting for a writer. */
  do fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    rc = gpuplan__error(ctx, e == ENOENT ? GPUPLAN_ENOTFOUND : GPUPLAN_EIO, "snapshot %s: %s",
                        path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return rc;
  }
  /* A file smaller than PROBE is read whole by one pread and loaded from
   * memory, without an fstat or the window (for a 22 KB snapshot they
   * were 0.2 and 0.2 us of an 11 us budget).  A regular file's read stops
   * short only at its end (cached data is not interrupted by signals on
   * local file systems); a read that fails (a directory, a FIFO), reads
   * nothing or fills PROBE goes the way below, which says what the file
   * is.  So does a load of the bytes that fails for any reason but memory:
   * what it reports then comes from the file's stated size, as before,
   * and a read cut short by a network file system cannot pass for the
   * whole file. */
  {
    unsigned char *head = gpuplan__malloc(ctx, PROBE);
    ssize_t r;
    if (!head) {
      close(fd);
      return gpuplan__nomem(ctx);
    }
    do r = pread(fd, head, PROBE, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0 && (size_t)r < PROBE) {
      rc = load_from(ctx, head, (size_t)r, NULL, device, out);
      if (rc == GPUPLAN_OK || rc == GPUPLAN_ENOMEM) {
        gpuplan__free(ctx, head);
        close(fd);
        return rc;
      }
    }
    gpuplan__free(ctx, head);
  }
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: cannot size the file", path);
  }
  if (S_ISDIR(sb.st_mode)) {
    /* A directory opens; its "size" is nonsense (review L6). */
    close(fd);
    return gpuplan__error(ctx, GPUPLAN_EINVAL,
                          "snapshot %s: is a directory (give the .pickle torch.cuda.memory._dump_snapshot() "
                          "wrote)", path);
  }
  if (!S_ISREG(sb.st_mode) || sb.st_size < 0) {
    close(fd);
    return gpuplan__error(ctx, GPUPLAN_EIO, "snapshot %s: cannot size the file (not a regular file)", path);
  }
  if (sb.st_size == 0) {
    close(fd);
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "snapshot %s: the file is empty", path);
  }
  /* Read in a window, not whole: a snapshot is mostly stack frames that a
   * replay skips, and a whole copy of it is as many new pages as the file
   * has (half a load's time on a 3 MB snapshot; all of a large one's
   * memory). */
  memset(&rd, 0, sizeof rd);
  fi.fd = fd;
  fi.path = path;
  rd.read = file_read;
  rd.ud = &fi;
  rd.size = (uint64_t)sb.st_size;
  rc = load_from(ctx, NULL, 0, &rd, device, out);
  close(fd);
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

const gpuplan__snapshot_facts *gpuplan__snapshot_facts_of(const gpuplan_snapshot *s) { return &s->facts; }

/* --- rebuilding the start state (rules section 8) ------------------------- */

static void state_free(gpuplan_ctx *ctx, state *st) {
  gpuplan__free(ctx, st->v);
  gpuplan__arena_free(&st->ar);
  memset(st, 0, sizeof *st);
}

/* A new segment of st, a copy of proto holding no blocks (NULL: out of
 * memory). */
static rseg *seg_new(state *st, const rseg *proto) {
  rseg *d = gpuplan__arena_alloc(&st->ar, sizeof *d);
  if (!d) return NULL;
  *d = *proto;
  d->b = NULL;
  d->n = d->cap = 0;
  return d;
}

/* Room for n blocks in segment g of st (what it holds is not kept). */
static int seg_room(state *st, rseg *g, size_t n) {
  rblock *b;
  if (n <= g->cap) return 0;
  if (n > SIZE_MAX / sizeof *b || !(b = gpuplan__arena_alloc(&st->ar, n * sizeof *b))) return -1;
  g->b = b;
  g->cap = n;
  return 0;
}

static int state_copy(gpuplan_ctx *ctx, const gpuplan_snapshot *s, state *st) {
  size_t i;
  st->cap = s->nsegs + 16;
  st->n = 0;
  gpuplan__arena_init(&st->ar, ctx);
  st->v = gpuplan__calloc(ctx, st->cap, sizeof *st->v);
  if (!st->v) return gpuplan__nomem(ctx);
  for (i = 0; i < s->nsegs; i++) {
    rseg *d = seg_new(st, &s->segs[i]);
    if (!d || seg_room(st, d, s->segs[i].n ? s->segs[i].n : 1) != 0) return gpuplan__nomem(ctx);
    memcpy(d->b, s->segs[i].b, s->segs[i].n * sizeof *d->b);
    d->n = s->segs[i].n;
    st->v[st->n++] = d;
  }
  return GPUPLAN_OK;
}

/* Index of the segment containing addr in a state, or -1. */
GPUPLAN__SPAN_FIND(pseg_find, rseg *, GPUPLAN__SPAN_POINTER)

/* pseg_find, trying *hint first (the segment found last: a trace's next
 * event is often in it); *hint becomes the segment found.  Segments do
 * not overlap, so a hint that still holds addr is the answer whatever
 * was inserted or erased since. */
static long pseg_find_hint(rseg *const *v, size_t n, uint64_t addr, long *hint) {
  long h = *hint;
  if (h >= 0 && (size_t)h < n && v[h]->addr <= addr && addr - v[h]->addr < v[h]->size) return h;
  return *hint = pseg_find(v, n, addr);
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

/* Sizes the replay learnt for ambiguous blocks (rblock.slack): the block
 * at addr is extra bytes longer than its rounded request. */
#define MAX_LEARNT 64 /* replays a trace may take to learn block sizes */

typedef struct overrides {
  uint64_t addr[MAX_LEARNT], extra[MAX_LEARNT];
  uint64_t upto[MAX_LEARNT]; /* the size is known only within [extra, upto] */
  size_t n;
} overrides;

static long override_at(const overrides *ov, uint64_t addr) {
  size_t i;
  for (i = 0; ov && i < ov->n; i++)
    if (ov->addr[i] == addr) return (long)i;
  return -1;
}

static uint64_t override_of(const overrides *ov, uint64_t addr) {
  long i = override_at(ov, addr);
  return i < 0 ? 0 : ov->extra[i];
}

/* --- the blocks of a segment while rebuilding: a treap by address ---------- */

/* Undoing a trace edits blocks anywhere in a segment: a sorted array would
 * move its tail on every edit, quadratic in a segment of many blocks
 * allocated in descending (or random) address order (review M2).  While
 * rebuilding, each segment's blocks are a treap keyed by address, in one
 * pool of nodes; the state is flattened back to sorted arrays after. */
typedef struct tnode {
  rblock b;
  uint32_t pri;
  long l, r;
} tnode;

GPUPLAN__TREAP_POOL(tr, tnode, rblock) /* common/treap.h: tr_pool, tr_new, tr_free */
typedef tr_pool tpool;

GPUPLAN__TREAP(tr, tnode) /* common/treap.h: tr_split, tr_merge, tr_le, tr_link, tr_unlink */

static long t_eq(const tpool *t, long root, uint64_t key) {
  long x = tr_le(t->v, root, key);
  return x >= 0 && t->v[x].b.addr == key ? x : -1;
}

static int t_insert(tpool *t, rseg *g, const rblock *b) {
  long k = tr_new(t, b);
  if (k < 0) return gpuplan__nomem(t->ctx);
  tr_link(t->v, &g->troot, k);
  g->tcount++;
  return GPUPLAN_OK;
}

/* Erase the node at key (if any); it joins the free list. */
static void t_erase(tpool *t, rseg *g, uint64_t key) {
  long m = tr_unlink(t->v, &g->troot, key);
  if (m < 0) return;
  tr_free(t, m);
  g->tcount--;
}

/* In-order into a segment's array (which has room for count blocks). */
static void t_flatten(const tpool *t, long x, rseg *g) {
  while (x >= 0) {
    t_flatten(t, t->v[x].l, g);
    g->b[g->n++] = t->v[x].b;
    x = t->v[x].r;
  }
}

static size_t t_count(const tpool *t, long x) {
  size_t n = 0;
  while (x >= 0) {
    n += 1 + t_count(t, t->v[x].l);
    x = t->v[x].r;
  }
  return n;
}

/* Room for one more segment in st. */
static int state_room(gpuplan_ctx *ctx, state *st) {
  rseg **nv;
  size_t ncap;
  if (st->n < st->cap) return GPUPLAN_OK;
  ncap = st->cap * 2 + 16;
  if (!(nv = gpuplan__realloc(ctx, st->v, ncap * sizeof *nv))) return gpuplan__nomem(ctx);
  st->v = nv;
  st->cap = ncap;
  return GPUPLAN_OK;
}

/* A new segment (an expandable segment's mapped range) at index at of the
 * state, with its blocks' treap and their count. */
static int state_insert(gpuplan_ctx *ctx, state *st, size_t at, const rseg *proto, long root, size_t count) {
  rseg *ns;
  GPUPLAN_TRY(state_room(ctx, st));
  if (!(ns = seg_new(st, proto))) return gpuplan__nomem(ctx);
  ns->troot = root;
  ns->tcount = count;
  memmove(st->v + at + 1, st->v + at, (st->n - at) * sizeof *st->v);
  st->v[at] = ns;
  st->n++;
  return GPUPLAN_OK;
}

static void state_erase(state *st, size_t at) {
  memmove(st->v + at, st->v + at + 1, (st->n - at - 1) * sizeof *st->v);
  st->n--;
}

/* Undo a segment_map (R28): [addr, addr + size) of a mapped range, free,
 * becomes unmapped again; the range shrinks, splits in two or goes. */
static int undo_map(const gpuplan_alloc_event *e, size_t i, state *st, tpool *t, gpuplan_replay_result *r) {
  long si = pseg_find(st->v, st->n, e->addr), x, left, right;
  uint64_t end = e->addr + e->size, fend;
  rseg *g;
  if (si < 0 || !st->v[si]->expandable || end > st->v[si]->addr + st->v[si]->size)
    return diverge(r, i, "rebuilding: segment_map of %llu bytes at 0x%llx is not inside a mapped range of an "
                         "expandable segment at the end", (unsigned long long)e->size, (unsigned long long)e->addr),
           GPUPLAN_OK;
  g = st->v[si];
  x = tr_le(t->v, st->v[si]->troot, e->addr);
  if (x < 0 || t->v[x].b.allocated || end > t->v[x].b.addr + t->v[x].b.size)
    return diverge(r, i, "rebuilding: segment_map of %llu bytes at 0x%llx does not fit a free block",
                   (unsigned long long)e->size, (unsigned long long)e->addr), GPUPLAN_OK;
  fend = t->v[x].b.addr + t->v[x].b.size;
  if (t->v[x].b.addr < e->addr) t->v[x].b.size = e->addr - t->v[x].b.addr;
  else t_erase(t, st->v[si], e->addr);
  if (fend > end) {
    rblock tb;
    memset(&tb, 0, sizeof tb);
    tb.addr = end;
    tb.size = fend - end;
    GPUPLAN_TRY(t_insert(t, st->v[si], &tb));
  }
  tr_split(t->v, st->v[si]->troot, end, &left, &right);
  if (e->addr > g->addr && end < g->addr + g->size) {
    rseg proto = *g;
    proto.addr = end;
    proto.size = g->addr + g->size - end;
    g->size = e->addr - g->addr;
    st->v[si]->troot = left;
    st->v[si]->tcount = t_count(t, left);
    return state_insert(t->ctx, st, (size_t)si + 1, &proto, right, t_count(t, right));
  }
  if (e->addr > g->addr) {
    g->size = e->addr - g->addr;
    st->v[si]->troot = left;
  } else if (end < g->addr + g->size) {
    g->size = g->addr + g->size - end;
    g->addr = end;
    st->v[si]->troot = right;
  } else {
    state_erase(st, (size_t)si);
    return GPUPLAN_OK;
  }
  st->v[si]->tcount = t_count(t, st->v[si]->troot);
  return GPUPLAN_OK;
}

/* Join the mapped range after a into a when they touch (one reservation). */
static void join_ranges(state *st, tpool *t, size_t a) {
  size_t c = a + 1, n;
  rseg *ga, *gc;
  long x, y;
  if (c >= st->n) return;
  ga = st->v[a], gc = st->v[c];
  if (!ga->expandable || !gc->expandable || ga->addr + ga->size != gc->addr || ga->stream != gc->stream ||
      ga->small != gc->small)
    return;
  x = tr_le(t->v, st->v[a]->troot, gc->addr - 1); /* a's last block */
  y = t_eq(t, st->v[c]->troot, gc->addr);     /* c's first */
  n = st->v[a]->tcount + st->v[c]->tcount;
  if (x >= 0 && y >= 0 && !t->v[x].b.allocated && !t->v[y].b.allocated) {
    t->v[x].b.size += t->v[y].b.size;
    t_erase(t, st->v[c], gc->addr);
    n--;
  }
  st->v[a]->troot = tr_merge(t->v, st->v[a]->troot, st->v[c]->troot);
  ga->size += gc->size;
  st->v[c]->troot = -1;
  state_erase(st, c);
  st->v[a]->tcount = n;
}

/* Where a segment [addr, addr + size) would go among st's (*at: the first
 * at or above addr), and whether one there overlaps it: the one at *at
 * starting inside it (at addr, for size 0), or the one before reaching
 * past addr.  A segment_free or segment_unmap undone makes such a range
 * live again. */
static inline int range_taken(const state *st, uint64_t addr, uint64_t size, size_t *at) {
  size_t lo = 0, hi = st->n;
  while (lo < hi) {
    size_t m = lo + (hi - lo) / 2;
    if (st->v[m]->addr < addr) lo = m + 1;
    else hi = m;
  }
  *at = lo;
  return (lo < st->n && st->v[lo]->addr - addr < (size ? size : 1)) ||
         (lo > 0 && st->v[lo - 1]->addr + st->v[lo - 1]->size > addr);
}

/* Undo a segment_unmap (R29): [addr, addr + size) was mapped and free,
 * merged with the mapped ranges right before and after it. */
static int undo_unmap(const gpuplan_snapshot *s, const gpuplan_alloc_event *e, size_t i, state *st, tpool *t,
                      gpuplan_replay_result *r) {
  size_t lo;
  uint64_t end = e->addr + e->size;
  rseg proto;
  rblock b;
  if (range_taken(st, e->addr, e->size, &lo))
    return diverge(r, i, "rebuilding: segment_unmap of %llu bytes at 0x%llx overlaps a mapped range",
                   (unsigned long long)e->size, (unsigned long long)e->addr), GPUPLAN_OK;
  memset(&proto, 0, sizeof proto);
  proto.addr = e->addr;
  proto.size = e->size;
  proto.stream = e->stream;
  proto.expandable = 1;
  if (lo > 0 && st->v[lo - 1]->expandable && st->v[lo - 1]->addr + st->v[lo - 1]->size == e->addr)
    proto.small = st->v[lo - 1]->small, proto.private_pool = st->v[lo - 1]->private_pool, proto.pool = st->v[lo - 1]->pool;
  else if (lo < st->n && st->v[lo]->expandable && st->v[lo]->addr == end)
    proto.small = st->v[lo]->small, proto.private_pool = st->v[lo]->private_pool, proto.pool = st->v[lo]->pool;
  else
    proto.small = e->size % s->conf.large_segment_size != 0; /* small pages are 2 MiB */
  GPUPLAN_TRY(state_insert(t->ctx, st, lo, &proto, -1, 0));
  memset(&b, 0, sizeof b);
  b.addr = e->addr;
  b.size = e->size;
  GPUPLAN_TRY(t_insert(t, st->v[lo], &b));
  /* Join the range after, then the range before (same stream and pool). */
  join_ranges(st, t, lo);
  if (lo > 0) join_ranges(st, t, lo - 1);
  return GPUPLAN_OK;
}

/* Undo the trace from the end; on success *st is the state at its start.
 * Returns GPUPLAN_OK with r->diverged_at set when the file is inconsistent.
 *
 * Undoing a free_completed gives back a block of the rounded request,
 * carved from the free range it merged into.  Its size is then a choice:
 * a large-pool block is handed out whole when at most 1 MiB would be left
 * (R11; under max_split_size, an oversize one when less than
 * max_non_split_rounding would), so it may have been that much longer.
 * The choice is marked (slack); a free fragment the trace later shows
 * right after such a block, too small to be a free large block on its own
 * (<= 1 MiB), was its remainder and goes back to it. */
static int rebuild_tree(const gpuplan_snapshot *s, state *st, tpool *t, gpuplan_replay_result *r,
                        const overrides *ov) {
  size_t i = s->nev;
  gpuplan_ctx *ctx = t->ctx;
  long hint = -1;
  while (i-- > 0) {
    const gpuplan_alloc_event *e = &s->ev[i];
    long si, x, nx, px;
    rseg *g;
    switch (e->action) {
    case GPUPLAN_ACT_ALLOC:
      si = pseg_find_hint(st->v, st->n, e->addr, &hint);
      if (si < 0) return diverge(r, i, "rebuilding: alloc at 0x%llx lies in no segment", (unsigned long long)e->addr), GPUPLAN_OK;
      g = st->v[si];
      x = t_eq(t, st->v[si]->troot, e->addr);
      if (x < 0 || !t->v[x].b.allocated)
        return diverge(r, i, "rebuilding: alloc at 0x%llx is not an allocated block at the end", (unsigned long long)e->addr), GPUPLAN_OK;
      /* free it, merged with free neighbours */
      t->v[x].b.allocated = 0;
      t->v[x].b.slack = 0;
      nx = t_eq(t, st->v[si]->troot, t->v[x].b.addr + t->v[x].b.size);
      if (nx >= 0 && !t->v[nx].b.allocated) {
        t->v[x].b.size += t->v[nx].b.size;
        t_erase(t, st->v[si], t->v[nx].b.addr);
      }
      px = t->v[x].b.addr > g->addr ? tr_le(t->v, st->v[si]->troot, t->v[x].b.addr - 1) : -1;
      if (px >= 0 && !t->v[px].b.allocated) {
        t->v[px].b.size += t->v[x].b.size;
        t_erase(t, st->v[si], t->v[x].b.addr);
      }
      break;
    case GPUPLAN_ACT_FREE_COMPLETED: {
      uint64_t rsz = gpuplan__round_size(&s->conf, e->size), end, tail;
      rblock mid, f;
      si = pseg_find_hint(st->v, st->n, e->addr, &hint);
      if (si < 0) return diverge(r, i, "rebuilding: free at 0x%llx lies in no segment", (unsigned long long)e->addr), GPUPLAN_OK;
      g = st->v[si];
      x = tr_le(t->v, st->v[si]->troot, e->addr);
      if (x < 0 || t->v[x].b.allocated || e->addr + rsz > t->v[x].b.addr + t->v[x].b.size)
        return diverge(r, i, "rebuilding: free of %llu bytes at 0x%llx does not fit a free block", (unsigned long long)e->size, (unsigned long long)e->addr), GPUPLAN_OK;
      f = t->v[x].b;
      end = f.addr + f.size;
      tail = end - e->addr - rsz;
      {
        uint64_t extra = override_of(ov, e->addr);
        if (extra && extra < tail) rsz += extra, tail -= extra;
      }
      memset(&mid, 0, sizeof mid);
      if (g->small ? tail < KMIN_BLOCK : tail <= KSMALL_SIZE) {
        rsz += tail, tail = 0;
      } else if (!g->small) {
        int oversize = s->conf.max_split_size != UINT64_MAX && rsz >= s->conf.max_split_size;
        mid.slack = oversize ? s->conf.max_non_split_rounding : KSMALL_SIZE;
      }
      mid.addr = e->addr;
      mid.size = rsz;
      mid.requested = e->size;
      mid.allocated = 1;
      if (f.addr < e->addr) {
        uint64_t lead = e->addr - f.addr;
        px = f.addr > g->addr ? tr_le(t->v, st->v[si]->troot, f.addr - 1) : -1;
        if (!g->small && lead <= KSMALL_SIZE && px >= 0 && t->v[px].b.allocated && t->v[px].b.slack >= lead) {
          /* The fragment before this block was the remainder of the
           * ambiguous block before it (a free large block is > 1 MiB). */
          t->v[px].b.size += lead;
          t->v[px].b.slack = 0;
          t_erase(t, st->v[si], f.addr);
        } else {
          t->v[x].b.size = lead;
        }
        GPUPLAN_TRY(t_insert(t, st->v[si], &mid));
      } else {
        t->v[x].b = mid;
      }
      if (tail) {
        rblock tb;
        memset(&tb, 0, sizeof tb);
        tb.addr = e->addr + rsz;
        tb.size = tail;
        GPUPLAN_TRY(t_insert(t, st->v[si], &tb));
      }
      break;
    }
    case GPUPLAN_ACT_SEGMENT_ALLOC:
      si = pseg_find_hint(st->v, st->n, e->addr, &hint);
      if (si < 0 || st->v[si]->addr != e->addr || st->v[si]->tcount != 1 || t->v[st->v[si]->troot].b.allocated)
        return diverge(r, i, "rebuilding: segment_alloc at 0x%llx is not a whole free segment", (unsigned long long)e->addr), GPUPLAN_OK;
      t_erase(t, st->v[si], e->addr);
      state_erase(st, (size_t)si);
      break;
    case GPUPLAN_ACT_SEGMENT_FREE: {
      rseg *ns;
      rblock b;
      size_t lo;
      if (range_taken(st, e->addr, e->size, &lo))
        return diverge(r, i, "rebuilding: segment_free at 0x%llx overlaps a live segment", (unsigned long long)e->addr), GPUPLAN_OK;
      GPUPLAN_TRY(state_room(ctx, st));
      {
        rseg proto;
        memset(&proto, 0, sizeof proto);
        if (!(ns = seg_new(st, &proto))) return gpuplan__nomem(ctx);
      }
      ns->troot = -1;
      ns->addr = e->addr;
      ns->size = e->size;
      ns->stream = e->stream;
      ns->small = e->size == KSMALL_BUFFER;
      memmove(st->v + lo + 1, st->v + lo, (st->n - lo) * sizeof *st->v);
      st->v[lo] = ns;
      st->n++;
      memset(&b, 0, sizeof b);
      b.addr = e->addr;
      b.size = e->size;
      GPUPLAN_TRY(t_insert(t, ns, &b));
      break;
    }
    case GPUPLAN_ACT_SEGMENT_MAP:
      GPUPLAN_TRY(undo_map(e, i, st, t, r));
      if (r->diverged_at != SIZE_MAX) return GPUPLAN_OK;
      break;
    case GPUPLAN_ACT_SEGMENT_UNMAP:
      GPUPLAN_TRY(undo_unmap(s, e, i, st, t, r));
      if (r->diverged_at != SIZE_MAX) return GPUPLAN_OK;
      break;
    default:
      break;
    }
  }
  return GPUPLAN_OK;
}

static int rebuild(gpuplan_ctx *ctx, const gpuplan_snapshot *s, state *st, gpuplan_replay_result *r,
                   const overrides *ov) {
  tpool t;
  size_t i, j;
  int rc = GPUPLAN_OK, rc2 = GPUPLAN_OK;
  memset(&t, 0, sizeof t);
  t.ctx = ctx;
  t.freed = -1;
  t.seed = 2463534242u;
  for (i = 0; i < st->n; i++) {
    st->v[i]->troot = -1;
    st->v[i]->tcount = 0;
  }
  for (i = 0; i < st->n && !rc; i++)
    for (j = 0; j < st->v[i]->n && !rc; j++) rc = t_insert(&t, st->v[i], &st->v[i]->b[j]);
  if (rc) {
    /* (the arrays are as they were) */
    gpuplan__free(ctx, t.v);
    return rc;
  }
  rc = rebuild_tree(s, st, &t, r, ov);
  /* Back to arrays, whatever happened, so that the state can be freed. */
  for (i = 0; i < st->n; i++) {
    rseg *g = st->v[i];
    size_t n = g->tcount;
    if (seg_room(st, g, n) != 0) {
      rc2 = gpuplan__nomem(ctx);
      g->n = 0;
      continue;
    }
    g->n = 0;
    t_flatten(&t, g->troot, g);
  }
  gpuplan__free(ctx, t.v);
  return rc ? rc : rc2;
}

/* At load: the state the trace starts from, for every replay that has not
 * learnt block sizes (rebuilt as the replay would, with nothing learnt). */
static int start_state(gpuplan_ctx *ctx, gpuplan_snapshot *s) {
  gpuplan_replay_result r;
  size_t i;
  int rc;
  for (i = 0; i < s->nev; i++)
    if (s->ev[i].action == GPUPLAN_ACT_SEGMENT_MAP || s->ev[i].action == GPUPLAN_ACT_SEGMENT_UNMAP)
      s->expandable_trace = 1;
  s->facts.expandable = s->expandable_trace || s->conf.expandable_segments || s->facts.expandable_segments > 0;
  memset(&r, 0, sizeof r);
  r.diverged_at = SIZE_MAX;
  rc = state_copy(ctx, s, &s->start);
  if (rc == GPUPLAN_OK) rc = rebuild(ctx, s, &s->start, &r, NULL);
  s->start_diverged = r.diverged_at;
  memcpy(s->start_why, r.divergence, sizeof s->start_why);
  return rc;
}

/* An exact replay's expandable reservations: as large as the address
 * space PyTorch reserves on any GPU (1 1/8 of its memory), short of the
 * next reservation above. */
#define EXACT_VA (1ull << 40)

/* The start's expandable reservations (exact replay): one for each
 * (stream, pool) that has mapped ranges, from the lowest of them. */
typedef struct rres {
  uint64_t base, size, hi; /* hi: the end of what it has mapped so far */
  uint64_t stream;
  int small, rebuilt;      /* rebuilt: from the start state (its base assumed) */
} rres;

static uint64_t va_size(uint64_t base, uint64_t want, uint64_t page, const rres *res, size_t nres) {
  uint64_t size = (EXACT_VA + page - 1) / page * page;
  size_t k;
  if (size < want) size = want;
  for (k = 0; k < nres; k++)
    if (res[k].base > base && res[k].base - base < size) size = (res[k].base - base) / page * page;
  return size < want ? want : size;
}

/* Install a state into a fresh allocator; with res (room for st->n), the
 * mapped ranges of expandable segments as reservations (listed in *res),
 * else as plain segments. */
static int install(gpuplan_cachealloc *a, const state *st, rres *res, size_t *nres) {
  gpuplan_ctx *ctx = gpuplan__alloc_ctx(a);
  gpuplan__install_block *ib;
  size_t i, j, k, most = 1, all = 0;
  int rc = GPUPLAN_OK;
  for (i = 0; i < st->n; i++) {
    if (st->v[i]->n > most) most = st->v[i]->n;
    if (st->v[i]->expandable) all += st->v[i]->n;
  }
  if (res && all > most) most = all;
  if (!(ib = gpuplan__malloc(ctx, most * sizeof *ib))) return gpuplan__nomem(ctx);
  if (res) {
    /* The reservations first (their bases), then their blocks. */
    *nres = 0;
    for (i = 0; i < st->n; i++) {
      const rseg *g = st->v[i];
      if (!g->expandable) continue;
      for (k = 0; k < *nres && !(res[k].stream == g->stream && res[k].small == g->small); k++) continue;
      if (k == *nres) {
        res[k].base = g->addr;
        res[k].stream = g->stream;
        res[k].small = g->small;
        res[k].rebuilt = 1;
        ++*nres;
      }
      res[k].hi = g->addr + g->size;
    }
    for (k = 0; k < *nres && rc == GPUPLAN_OK; k++) {
      uint64_t page = res[k].small ? KSMALL_BUFFER : gpuplan__alloc_large_page(a);
      size_t n = 0;
      res[k].size = va_size(res[k].base, res[k].hi - res[k].base, page, res, *nres);
      for (i = 0; i < st->n; i++) {
        const rseg *g = st->v[i];
        if (!g->expandable || g->stream != res[k].stream || g->small != res[k].small) continue;
        for (j = 0; j < g->n; j++, n++) {
          ib[n].addr = g->b[j].addr;
          ib[n].size = g->b[j].size;
          ib[n].requested = g->b[j].requested;
          ib[n].allocated = g->b[j].allocated;
        }
      }
      rc = gpuplan__alloc_install_expandable(a, res[k].base, res[k].size, res[k].stream, res[k].small, ib, n);
    }
  }
  for (i = 0; i < st->n && rc == GPUPLAN_OK; i++) {
    const rseg *g = st->v[i];
    if (res && g->expandable) continue;
    for (j = 0; j < g->n; j++) {
      ib[j].addr = g->b[j].addr;
      ib[j].size = g->b[j].size;
      ib[j].requested = g->b[j].requested;
      ib[j].allocated = g->b[j].allocated;
    }
    /* A private pool's segment into its pool (route_pools routes the
     * trace's allocations to the same pool ids). */
    if (g->pool && (rc = gpuplan_cachealloc_begin_pool(a, g->pool))) break;
    rc = gpuplan__alloc_install(a, g->addr, g->size, g->stream, g->small, ib, g->n);
    if (g->pool && rc == GPUPLAN_OK) rc = gpuplan_cachealloc_end_pool(a);
  }
  gpuplan__free(ctx, ib);
  if (rc == GPUPLAN_OK) gpuplan__alloc_installed(a);
  return rc;
}

/* --- the exact-replay device -------------------------------------------------- */

typedef struct rdev {
  const gpuplan_alloc_event **pend;  /* segment_alloc/segment_free events expected next */
  size_t n, i, cap;
  int mismatch;
  int closing;                       /* the allocator is being freed: its cudaFrees are not the trace's */
  char why[256];
  uint64_t device_free;
  gpuplan_cachealloc *a;
  rres *res;                         /* expandable reservations */
  size_t nres, capres;
} rdev;

static void rdev_mismatch(rdev *d, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);
static void rdev_mismatch(rdev *d, const char *fmt, ...) {
  va_list ap;
  if (d->mismatch) return;
  d->mismatch = 1;
  va_start(ap, fmt);
  vsnprintf(d->why, sizeof d->why, fmt, ap);
  va_end(ap);
}

/* The pending event of this action at addr (size) from d->i on, moved to
 * d->i, or 0: PyTorch unmaps in pool order, the model in address order. */
static int rdev_take(rdev *d, gpuplan_alloc_action act, uint64_t addr, uint64_t size) {
  size_t k;
  for (k = d->i; k < d->n; k++)
    if (d->pend[k]->action == act && d->pend[k]->addr == addr && d->pend[k]->size == size) {
      const gpuplan_alloc_event *e = d->pend[k];
      d->pend[k] = d->pend[d->i];
      d->pend[d->i++] = e;
      return 1;
    }
  return 0;
}

/* A new expandable reservation: at the address of the segment_map the
 * trace has next (maps grow from the base). */
static int rdev_reserve(void *payload, uint64_t want, uint64_t page, uint64_t stream, int small, uint64_t *base,
                        uint64_t *size) {
  rdev *d = payload;
  const gpuplan_alloc_event *e;
  size_t k;
  if (d->i >= d->n || d->pend[d->i]->action != GPUPLAN_ACT_SEGMENT_MAP) return GPUPLAN_ENOTFOUND;
  e = d->pend[d->i];
  for (k = 0; k < d->nres; k++)
    if (d->res[k].base <= e->addr && e->addr < d->res[k].hi) {
      rdev_mismatch(d, "the model reserves a new expandable segment (stream %llu, %s pool) where the trace maps "
                       "%llu bytes at 0x%llx inside the one at 0x%llx",
                    (unsigned long long)stream, small ? "small" : "large", (unsigned long long)e->size,
                    (unsigned long long)e->addr, (unsigned long long)d->res[k].base);
      return GPUPLAN_ENOTFOUND;
    }
  if (d->nres == d->capres) {
    size_t ncap = d->capres * 2 + 8;
    rres *nr = gpuplan__realloc(gpuplan__alloc_ctx(d->a), d->res, ncap * sizeof *nr);
    if (!nr) return GPUPLAN_ENOMEM; /* the mock's space: the map check then fails */
    d->res = nr;
    d->capres = ncap;
  }
  *base = e->addr;
  *size = va_size(e->addr, want, page, d->res, d->nres);
  d->res[d->nres].base = e->addr;
  d->res[d->nres].size = *size;
  d->res[d->nres].hi = e->addr;
  d->res[d->nres].stream = stream;
  d->res[d->nres].small = small;
  d->res[d->nres].rebuilt = 0;
  d->nres++;
  return GPUPLAN_OK;
}

static int rdev_map(void *payload, uint64_t addr, uint64_t size) {
  rdev *d = payload;
  const gpuplan_alloc_event *e;
  size_t k;
  if (d->i >= d->n || d->pend[d->i]->action != GPUPLAN_ACT_SEGMENT_MAP)
    return GPUPLAN_ENOTFOUND; /* the real device refused: what the trace shows */
  e = d->pend[d->i++];
  if (e->addr != addr || e->size != size)
    rdev_mismatch(d, "segment_map of %llu bytes at 0x%llx where the trace maps %llu at 0x%llx",
                  (unsigned long long)size, (unsigned long long)addr, (unsigned long long)e->size,
                  (unsigned long long)e->addr);
  for (k = 0; k < d->nres; k++)
    if (d->res[k].base <= addr && addr < d->res[k].base + d->res[k].size && d->res[k].hi < addr + size)
      d->res[k].hi = addr + size;
  return GPUPLAN_OK;
}

static void rdev_unmap(void *payload, uint64_t addr, uint64_t size) {
  rdev *d = payload;
  if (d->closing || rdev_take(d, GPUPLAN_ACT_SEGMENT_UNMAP, addr, size)) return;
  rdev_mismatch(d, "segment_unmap of %llu bytes at 0x%llx that the trace does not unmap here",
                (unsigned long long)size, (unsigned long long)addr);
}

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
  if (d->closing) return;
  if (d->i < d->n && d->pend[d->i]->action == GPUPLAN_ACT_SEGMENT_FREE &&
      d->pend[d->i]->addr == addr && d->pend[d->i]->size == size) {
    d->i++;
    return;
  }
  /* past the unmaps of the same empty_cache() */
  if (d->i < d->n && d->pend[d->i]->action == GPUPLAN_ACT_SEGMENT_UNMAP &&
      rdev_take(d, GPUPLAN_ACT_SEGMENT_FREE, addr, size))
    return;
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
  *total_out = d->device_free + (d->a ? (uint64_t)gpuplan_cachealloc_stats(d->a)->reserved_bytes[0].current : 0);
}

/* --- address map for what-if replays ---------------------------------------- */

static void layout_dispose(gpuplan_ctx *ctx, gpuplan__replay_layout *l) {
  gpuplan__free(ctx, l->segs);
  gpuplan__free(ctx, l->blocks);
  memset(l, 0, sizeof *l);
}

/* --- private pools in the trace -------------------------------------------- */

#define POOL_CAPTURING 0x80 /* ev_pool: the OOM of a CUDA graph capture */

/* A segment alive at some point of the trace, and its pool. */
typedef struct lseg {
  uint64_t addr, size;
  unsigned pool;
} lseg;

static int lseg_cmp(const void *x, const void *y) {
  const lseg *a = x, *b = y;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static size_t lseg_upper(const lseg *v, size_t n, uint64_t addr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo; /* the first segment above addr */
}

/*
 * Trace entries name no pool (2.1-2.10), but the file's segments do
 * (segment_pool_id), and a private pool keeps its segments while it is in
 * use: a CUDA graph's for as long as the graph lives, a MemPool's until it
 * is released and the cache emptied.  So a segment the trace allocates and
 * never frees is the one the file shows at that address, with its pool;
 * one the trace starts with is the start state's; an allocation was made in
 * the pool of the segment it lies in.  A segment freed within the trace
 * shows no pool: taken as the default pool's (a released MemPool's segment
 * is not told apart; what then diverges is reported unchecked, as for any
 * file with private pools).
 *
 * Expandable segments have no lifetimes to follow (pages are mapped and
 * unmapped inside a reservation, one per stream and pool, and reservations
 * do not interleave): an allocation in no cudaMalloc segment is taken to
 * be in the pool of the nearest mapped range at or below it that the file
 * shows (the start's or the end's).  A guess, checked like every other
 * placement: where it is wrong the replay diverges, and for a file with
 * private pools that is reported unchecked, never as a figure.
 */
static int route_pools(gpuplan_ctx *ctx, gpuplan_snapshot *s) {
  gpuplan__amap freed_later;
  lseg *live = NULL, *mapped = NULL; /* mapped: the expandable ranges the file shows, by address */
  unsigned *born = NULL; /* per segment_alloc event: its pool */
  size_t i, n = 0, nm = 0, cap = s->start.n + 16;
  unsigned char last = 0;
  int rc = GPUPLAN_OK, freed = 0;
  if (!s->nev) return GPUPLAN_OK;
  memset(&freed_later, 0, sizeof freed_later);
  if (!(s->ev_pool = gpuplan__calloc(ctx, s->nev, 1)) || !(born = gpuplan__calloc(ctx, s->nev, sizeof *born)) ||
      !(live = gpuplan__malloc(ctx, cap * sizeof *live)) ||
      !(mapped = gpuplan__malloc(ctx, (s->nsegs + s->start.n + 1) * sizeof *mapped))) {
    rc = gpuplan__nomem(ctx);
    goto out;
  }
  for (i = 0; i < s->nsegs; i++)
    if (s->segs[i].expandable) {
      mapped[nm].addr = s->segs[i].addr;
      mapped[nm].size = s->segs[i].size;
      mapped[nm++].pool = s->segs[i].pool;
    }
  for (i = 0; i < s->start.n; i++)
    if (s->start.v[i]->expandable) {
      mapped[nm].addr = s->start.v[i]->addr;
      mapped[nm].size = s->start.v[i]->size;
      mapped[nm++].pool = s->start.v[i]->pool;
    }
  if (nm) qsort(mapped, nm, sizeof *mapped, lseg_cmp);
  /* Backwards: a segment_alloc no segment_free at its address follows is
   * the lifetime the file's segments show. */
  for (i = s->nev; i-- > 0;) {
    const gpuplan_alloc_event *e = &s->ev[i];
    if (e->action == GPUPLAN_ACT_SEGMENT_FREE) {
      if ((rc = gpuplan__amap_put(ctx, &freed_later, e->addr ? e->addr : 1, 1))) goto out;
    } else if (e->action == GPUPLAN_ACT_SEGMENT_ALLOC) {
      if (!gpuplan__amap_take(&freed_later, e->addr ? e->addr : 1)) {
        size_t lo = file_seg_lower(s, e->addr);
        if (lo < s->nsegs && s->segs[lo].addr == e->addr) born[i] = s->segs[lo].pool;
      }
    }
  }
  /* Forwards: the cudaMalloc segments alive, from the start state's. */
  for (i = 0; i < s->start.n; i++) {
    if (s->start.v[i]->expandable) continue;
    live[n].addr = s->start.v[i]->addr;
    live[n].size = s->start.v[i]->size;
    live[n].pool = s->start.v[i]->pool;
    n++;
  }
  for (i = 0; i < s->nev; i++) {
    const gpuplan_alloc_event *e = &s->ev[i];
    size_t at = lseg_upper(live, n, e->addr);
    switch (e->action) {
    case GPUPLAN_ACT_SEGMENT_ALLOC:
      if (n == cap) {
        lseg *nl = gpuplan__realloc(ctx, live, 2 * cap * sizeof *nl);
        if (!nl) {
          rc = gpuplan__nomem(ctx);
          goto out;
        }
        live = nl;
        cap *= 2;
      }
      memmove(live + at + 1, live + at, (n - at) * sizeof *live);
      live[at].addr = e->addr;
      live[at].size = e->size;
      live[at].pool = born[i];
      n++;
      break;
    case GPUPLAN_ACT_SEGMENT_FREE:
      if (at > 0 && live[at - 1].addr == e->addr) {
        memmove(live + at - 1, live + at, (n - at) * sizeof *live);
        n--;
      }
      freed = 1;
      break;
    case GPUPLAN_ACT_ALLOC:
      if (at > 0 && e->addr < live[at - 1].addr + live[at - 1].size) {
        last = (unsigned char)live[at - 1].pool;
      } else {
        size_t x = lseg_upper(mapped, nm, e->addr);
        last = x > 0 ? (unsigned char)mapped[x - 1].pool : 0;
      }
      s->ev_pool[i] = last;
      freed = 0;
      break;
    case GPUPLAN_ACT_SEGMENT_UNMAP:
      freed = 1;
      break;
    case GPUPLAN_ACT_OOM:
      /* The request went where the allocation before it went.  Made in a
       * private pool with no cudaFree before the OOM, it ran out during a
       * CUDA graph capture, whose OOM path does not empty the cache (R36);
       * a MemPool's would have (whatever it could free, it did). */
      s->ev_pool[i] = (unsigned char)(last | (last && !freed ? POOL_CAPTURING : 0));
      break;
    default:
      break;
    }
  }
out:
  gpuplan__amap_dispose(ctx, &freed_later);
  gpuplan__free(ctx, live);
  gpuplan__free(ctx, mapped);
  gpuplan__free(ctx, born);
  return rc;
}

/* Route allocations to the pool the trace made event i in (route_pools;
 * s->ev_pool set): *cur the pool in force (0: default). */
static int route(gpuplan_cachealloc *a, const gpuplan_snapshot *s, size_t i, unsigned *cur) {
  unsigned want = s->ev_pool[i] & ~(unsigned)POOL_CAPTURING;
  int rc;
  gpuplan__cachealloc_capturing(a, (s->ev_pool[i] & POOL_CAPTURING) != 0);
  if (want == *cur) return GPUPLAN_OK;
  if (*cur && (rc = gpuplan_cachealloc_end_pool(a))) return rc;
  *cur = 0;
  if (want && (rc = gpuplan_cachealloc_begin_pool(a, want))) return rc;
  *cur = want;
  return GPUPLAN_OK;
}

/* --- replay ------------------------------------------------------------------- */

/* layout_at_peak: the allocator's layout now, into l (pending: the
 * addresses freed by free_requested that await their free_completed). */
static int layout_capture(gpuplan_ctx *ctx, gpuplan_cachealloc *a, const gpuplan__amap *pending, size_t event,
                          gpuplan__replay_layout *l) {
  gpuplan_segment_info *segs = NULL;
  gpuplan_block_info *blocks = NULL;
  size_t n = 0, nb = 0, i, k, out = 0;
  int rc;
  layout_dispose(ctx, l);
  if ((rc = gpuplan__alloc_layout(a, &segs, &blocks, &n))) return rc;
  for (i = 0; i < n; i++) nb += segs[i].nblocks;
  /* Each pending block may cut a free one in three. */
  l->segs = gpuplan__calloc(ctx, n ? n : 1, sizeof *l->segs);
  l->blocks = gpuplan__calloc(ctx, nb + 2 * pending->n + 1, sizeof *l->blocks);
  if (!l->segs || !l->blocks) {
    gpuplan__free(ctx, segs);
    gpuplan__free(ctx, blocks);
    layout_dispose(ctx, l);
    return gpuplan__nomem(ctx);
  }
  for (i = 0, nb = 0; i < n; i++) {
    gpuplan__layout_seg *g = &l->segs[i];
    g->addr = segs[i].addr;
    g->size = segs[i].total_size;
    g->stream = segs[i].stream;
    g->small = !segs[i].large;
    g->expandable = segs[i].expandable;
    g->pool = segs[i].pool_id;
    g->first = out;
    for (k = 0; k < segs[i].nblocks; k++, nb++) {
      const gpuplan_block_info *b = &blocks[nb];
      uint64_t at = b->addr, end = b->addr + b->size;
      if (b->state) {
        l->blocks[out].addr = b->addr;
        l->blocks[out].size = b->size;
        l->blocks[out].requested = b->requested;
        l->blocks[out++].state = GPUPLAN__LB_ALLOCATED;
        continue;
      }
      /* The model frees at free_requested, so a block still pending free
       * (awaiting free_completed) has merged into a free one: drawn apart,
       * at the size it had (pending: address -> size). */
      while (at < end) {
        uint64_t p = end, psz = 0;
        size_t q;
        for (q = 0; q < pending->cap; q++)
          if (pending->k[q] >= at && pending->k[q] < p && pending->k[q] < end) p = pending->k[q], psz = pending->v[q];
        if (p > at) { /* free up to the next pending block */
          l->blocks[out].addr = at;
          l->blocks[out].size = p - at;
          l->blocks[out++].state = GPUPLAN__LB_INACTIVE;
          at = p;
          continue;
        }
        if (psz <= 1 || psz > end - at) psz = end - at; /* its size unknown: the rest of the free block */
        l->blocks[out].addr = at;
        l->blocks[out].size = psz;
        l->blocks[out++].state = GPUPLAN__LB_PENDING_FREE;
        at += psz;
      }
    }
    g->n = out - g->first;
  }
  l->nsegs = n;
  l->nblocks = out;
  l->event = event;
  l->valid = 1;
  gpuplan__free(ctx, segs);
  gpuplan__free(ctx, blocks);
  return GPUPLAN_OK;
}

/* The second replay of layout_at_peak, after event i (SIZE_MAX: before the
 * first): capture what is due.  *done: nothing is left to capture. */
static int layout_step(gpuplan_ctx *ctx, gpuplan_cachealloc *a, const gpuplan__amap *pending, gpuplan__replay_ext *x, size_t i,
                       int *done) {
  int k;
  *done = 0;
  if (!x->lay_capturing) return GPUPLAN_OK;
  for (k = 0; k < 2; k++)
    if (!x->lay[k].valid && x->lay_at[k] == i && (k == 0 || i != SIZE_MAX))
      GPUPLAN_TRY(layout_capture(ctx, a, pending, i, &x->lay[k]));
  *done = x->lay[0].valid && (x->lay_at[1] == SIZE_MAX || x->lay[1].valid);
  return GPUPLAN_OK;
}

void gpuplan__replay_ext_init(gpuplan__replay_ext *x) {
  memset(x, 0, sizeof *x);
  x->layout = GPUPLAN_TORCH_LATEST;
  x->unchecked_from = x->unchecked_to = SIZE_MAX;
  x->lay_at[0] = x->lay_at[1] = SIZE_MAX;
}

void gpuplan__replay_ext_dispose(gpuplan_ctx *ctx, gpuplan__replay_ext *x) {
  layout_dispose(ctx, &x->lay[0]);
  layout_dispose(ctx, &x->lay[1]);
  gpuplan__free(ctx, x->summary_text);
  gpuplan__free(ctx, x->tl_allocated);
  gpuplan__free(ctx, x->tl_reserved);
  x->summary_text = NULL;
  x->have_stats = 0;
  x->tl_allocated = x->tl_reserved = NULL;
  x->tl_n = x->tl_cap = 0;
}

static void warn(gpuplan__replay_ext *x, const char *fmt, ...) GPUPLAN_PRINTF(2, 3);
static void warn(gpuplan__replay_ext *x, const char *fmt, ...) {
  va_list ap;
  if (x->nwarn == GPUPLAN__REPLAY_MAX_WARN) return;
  va_start(ap, fmt);
  vsnprintf(x->warn[x->nwarn++], sizeof x->warn[0], fmt, ap);
  va_end(ap);
}

/* Memory after a trace event, for the timeline. */
static int tl_push(gpuplan_ctx *ctx, gpuplan__replay_ext *x, const gpuplan_cachealloc *a) {
  if (!x->timeline) return GPUPLAN_OK;
  if (x->tl_n == x->tl_cap) {
    size_t cap = x->tl_cap ? x->tl_cap * 2 : 4096;
    int64_t *na = gpuplan__realloc(ctx, x->tl_allocated, cap * sizeof *na), *nr;
    if (!na) return gpuplan__nomem(ctx);
    x->tl_allocated = na;
    nr = gpuplan__realloc(ctx, x->tl_reserved, cap * sizeof *nr);
    if (!nr) return gpuplan__nomem(ctx);
    x->tl_reserved = nr;
    x->tl_cap = cap;
  }
  x->tl_allocated[x->tl_n] = gpuplan_cachealloc_stats(a)->allocated_bytes[GPUPLAN_POOL_ALL].current;
  x->tl_reserved[x->tl_n] = gpuplan_cachealloc_stats(a)->reserved_bytes[GPUPLAN_POOL_ALL].current;
  x->tl_n++;
  return GPUPLAN_OK;
}

/* memory_summary() and memory_stats() of the allocator as the replay
 * leaves it. */
static int summarize(const gpuplan_snapshot *s, gpuplan_cachealloc *a, gpuplan__replay_ext *x) {
  if (x->want_stats) {
    x->stats = *gpuplan_cachealloc_stats(a);
    x->have_stats = 1;
  }
  if (!x->summary) return GPUPLAN_OK;
  return gpuplan__alloc_summary(a, s->device, x->abbreviated, x->layout, &x->summary_text);
}

static void track_peak(gpuplan_cachealloc *a, gpuplan_replay_result *r) {
  const gpuplan_alloc_stats *st = gpuplan_cachealloc_stats(a);
  uint64_t res = (uint64_t)st->reserved_bytes[0].current;
  if (res > r->peak_reserved) {
    r->peak_reserved = res;
    r->allocated_at_peak_reserved = (uint64_t)st->allocated_bytes[0].current;
    gpuplan_cachealloc_free_space(a, &r->largest_free_at_peak, &r->total_free_at_peak);
  }
}

/* Whether the allocator's segments and blocks are exactly the file's final
 * ones, walked in place (the common case; compare_final says what differs). */
/* The file's final blocks of f as the model holds them: the model frees a
 * block at free_requested, so a block still pending free at the end is
 * free space, merged with the free blocks beside it.  From *k: the next
 * run; 0 after the last. */
static int final_run(const rseg *f, size_t *k, uint64_t *addr, uint64_t *size, int *allocated) {
  const rblock *b;
  if (*k >= f->n) return 0;
  b = &f->b[(*k)++];
  *addr = b->addr;
  *size = b->size;
  *allocated = b->allocated && !b->pending;
  if (!*allocated)
    while (*k < f->n && (!f->b[*k].allocated || f->b[*k].pending)) *size += f->b[(*k)++].size;
  return 1;
}

static int same_final(const gpuplan_cachealloc *a, const gpuplan_snapshot *s) {
  gpuplan__layout_it it;
  uint64_t addr, size;
  size_t n = 0, last = 0;
  int exp;
  memset(&it, 0, sizeof it);
  while (gpuplan__alloc_next_segment(a, &it, &addr, &size, &exp)) {
    size_t lo, k = 0;
    const rseg *f;
    int allocated;
    if (exp || ++n > s->nsegs) return 0;
    if (last > 0 && s->segs[last - 1].addr == addr) {
      /* (the one below the last: the allocator lists the segments it was
       * given newest first, so those of the start come in descending
       * address order) */
      lo = last - 1;
    } else {
      lo = file_seg_lower(s, addr);
    }
    last = lo;
    if (lo == s->nsegs || (f = &s->segs[lo])->addr != addr || f->size != size) return 0;
    while (gpuplan__alloc_next_block(&it, &addr, &size, &allocated)) {
      uint64_t fa, fs;
      int fal;
      if (!final_run(f, &k, &fa, &fs, &fal) || fa != addr || fs != size || fal != allocated) return 0;
    }
    if (k != f->n) return 0;
  }
  return n == s->nsegs;
}

/* Compare the allocator's final segments with the file's. */
static int compare_final(gpuplan_cachealloc *a, const gpuplan_snapshot *s, gpuplan_replay_result *r) {
  gpuplan_ctx *ctx = gpuplan__alloc_ctx(a);
  gpuplan_segment_info *segs;
  gpuplan_block_info *blocks, *b;
  size_t n, i, k, fk;
  if (same_final(a, s)) return GPUPLAN_OK;
  GPUPLAN_TRY(gpuplan__alloc_layout(a, &segs, &blocks, &n));
  if (n != s->nsegs) diverge(r, s->nev, "final state: %zu segments, the file has %zu", n, s->nsegs);
  for (i = 0, b = blocks; i < n && r->diverged_at == SIZE_MAX; b += segs[i].nblocks, i++) {
    const gpuplan_segment_info *g = &segs[i];
    const rseg *f = &s->segs[i];
    if (f->addr != g->addr || f->size != g->total_size) {
      diverge(r, s->nev, "final state: segment 0x%llx (%llu bytes) is not in the file",
              (unsigned long long)g->addr, (unsigned long long)g->total_size);
      break;
    }
    for (k = 0, fk = 0; k < g->nblocks; k++) {
      uint64_t fa, fs;
      int fal;
      if (!final_run(f, &fk, &fa, &fs, &fal) || fa != b[k].addr || fs != b[k].size || fal != b[k].state) {
        diverge(r, s->nev, "final state: segment 0x%llx block %zu differs (model 0x%llx %llu %s)",
                (unsigned long long)g->addr, k, (unsigned long long)b[k].addr, (unsigned long long)b[k].size,
                b[k].state ? "allocated" : "free");
        break;
      }
    }
    if (r->diverged_at == SIZE_MAX && fk != f->n)
      diverge(r, s->nev, "final state: segment 0x%llx has %zu blocks, the file %zu",
              (unsigned long long)g->addr, k, f->n);
  }
  gpuplan__free(ctx, segs);
  gpuplan__free(ctx, blocks);
  return GPUPLAN_OK;
}

static const char *pend_name(gpuplan_alloc_action a) {
  return a == GPUPLAN_ACT_SEGMENT_ALLOC ? "cudaMalloc"
         : a == GPUPLAN_ACT_SEGMENT_FREE ? "cudaFree"
         : a == GPUPLAN_ACT_SEGMENT_MAP  ? "segment_map"
                                         : "segment_unmap";
}

/* The file's settings under the release the replay was asked to follow
 * (its rules: division 1, private pools' segments, the OOM text...); the
 * settings themselves are the file's. */
static void replay_rules(gpuplan_alloc_conf *conf, const gpuplan_replay_options *o) {
  unsigned release = gpuplan__release_of(o->torch);
  if (!release) return;
  conf->torch = o->torch;
  conf->release = release;
}

static int run_exact(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st,
                     const gpuplan_replay_options *o, gpuplan_replay_result *r, gpuplan__replay_ext *x) {
  rdev d;
  gpuplan_device_ops ops;
  gpuplan__va_ops va;
  gpuplan_alloc_conf conf = s->conf;
  gpuplan_cachealloc *a = NULL;
  gpuplan__amap requested; /* addresses freed by free_requested, awaiting free_completed */
  size_t i;
  unsigned pool = 0; /* the private pool allocations are routed to (route) */
  int rc;
  memset(&requested, 0, sizeof requested);
  memset(&d, 0, sizeof d);
  ops.malloc = rdev_malloc;
  ops.free = rdev_free;
  ops.mem_info = rdev_info;
  ops.payload = &d;
  d.cap = 64;
  d.pend = gpuplan__malloc(ctx, d.cap * sizeof *d.pend);
  if (!d.pend) return gpuplan__nomem(ctx);
  /* Maps in the trace: it was recorded with expandable segments, whatever
   * allocator_settings say (2.1-2.3 wrote none). */
  if (s->expandable_trace) conf.expandable_segments = 1;
  replay_rules(&conf, o);
  if (conf.memory_fraction < 1) {
    /* PyTorch's limit is the fraction of the card's total, which a
     * snapshot does not record: the exact replay cannot apply it (it took
     * a total of 0 and refused every cudaMalloc).  The trace's own
     * cudaMallocs and cudaFrees stand for it; garbage collection, a share
     * of the limit, cannot run either. */
    warn(x, "the file's settings set per_process_memory_fraction %g%s, a share of the card's memory, which a "
            "snapshot does not record: the exact replay follows the trace's cudaMallocs without that limit%s; "
            "give --gpu (or a capacity) to replay it under the limit",
         conf.memory_fraction, conf.garbage_collection_threshold > 0 ? " and garbage_collection_threshold" : "",
         conf.garbage_collection_threshold > 0 ? " and cannot run the garbage collection it bounds (segments "
                                                 "it freed are matched as if a cudaMalloc had failed, counted in "
                                                 "cudaMalloc retries, or the replay diverges where they were freed)" : "");
    conf.memory_fraction = 1;
  }
  rc = gpuplan_cachealloc_new(ctx, &conf, 0, &ops, &a);
  d.a = a;
  if (rc == GPUPLAN_OK) {
    d.capres = st->n + 8;
    if (!(d.res = gpuplan__malloc(ctx, d.capres * sizeof *d.res))) rc = gpuplan__nomem(ctx);
  }
  if (rc == GPUPLAN_OK) rc = install(a, st, d.res, &d.nres);
  if (rc) goto out;
  va.reserve = rdev_reserve;
  va.map = rdev_map;
  va.unmap = rdev_unmap;
  va.payload = &d;
  gpuplan__alloc_set_va_ops(a, &va);
  if (o->trace) gpuplan_cachealloc_set_trace(a, o->trace, o->trace_payload);
  r->start_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].current;
  r->start_reserved = (uint64_t)gpuplan_cachealloc_stats(a)->reserved_bytes[0].current;
  track_peak(a, r);
  if (x->lay_capturing) {
    int done;
    if ((rc = layout_step(ctx, a, &requested, x, SIZE_MAX, &done)) || done) goto out;
  }

#define CHECK_CONSUMED(idx)                                                           \
  do {                                                                                \
    if (d.mismatch) diverge(r, idx, "%s", d.why);                                     \
    else if (d.i != d.n) /* (at that event: the end's check had named one past the last) */ \
      diverge(r, (size_t)(d.pend[d.i] - s->ev), "the trace has a %s of %llu bytes at 0x%llx that the model did not do", \
              pend_name(d.pend[d.i]->action),                                         \
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
    case GPUPLAN_ACT_SEGMENT_MAP:
    case GPUPLAN_ACT_SEGMENT_UNMAP:
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
      if (e->action == GPUPLAN_ACT_SEGMENT_ALLOC || e->action == GPUPLAN_ACT_SEGMENT_MAP) r->segment_allocs++;
      break;
    case GPUPLAN_ACT_ALLOC:
    case GPUPLAN_ACT_OOM:
      /* A run of cudaFrees not ended by a cudaMalloc was an empty_cache(). */
      if (d.n && (d.pend[d.n - 1]->action == GPUPLAN_ACT_SEGMENT_FREE || d.pend[d.n - 1]->action == GPUPLAN_ACT_SEGMENT_UNMAP) &&
          e->action == GPUPLAN_ACT_ALLOC) {
        if ((rc = gpuplan_cachealloc_empty_cache(a))) goto out;
        CHECK_CONSUMED(i);
        if (r->diverged_at != SIZE_MAX) break;
      }
      d.device_free = e->device_free;
      if (s->ev_pool && (rc = route(a, s, i, &pool))) goto out;
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
        x->div_model_addr = addr;
      } else {
        r->allocs++;
      }
      rc = GPUPLAN_OK;
      CHECK_CONSUMED(i);
      break;
    case GPUPLAN_ACT_FREE_REQUESTED:
      if (d.n) {
        if ((rc = gpuplan_cachealloc_empty_cache(a))) goto out;
        CHECK_CONSUMED(i);
        if (r->diverged_at != SIZE_MAX) break;
      }
      {
        /* The page (a layout capture) draws the pending block at its size;
         * the normal run only needs to know it is pending. */
        uint64_t bsz = x->lay_capturing ? gpuplan__alloc_block_size(a, e->addr) : 1;
        rc = gpuplan_cachealloc_release(a, e->addr);
        if (rc == GPUPLAN_EINVAL)
          diverge(r, i, "free of 0x%llx: not an allocated block in the model", (unsigned long long)e->addr);
        else if (rc || (rc = gpuplan__amap_put(ctx, &requested, e->addr, bsz ? bsz : 1)))
          goto out;
      }
      rc = GPUPLAN_OK;
      break;
    case GPUPLAN_ACT_FREE_COMPLETED:
      /* The model frees at free_requested.  A free_completed without one
       * ends a free the ring buffer began before the trace: the block was
       * live at the start (the rebuild made it so) and is released now. */
      if (gpuplan__amap_take(&requested, e->addr)) break;
      if (d.n) {
        if ((rc = gpuplan_cachealloc_empty_cache(a))) goto out;
        CHECK_CONSUMED(i);
        if (r->diverged_at != SIZE_MAX) break;
      }
      rc = gpuplan_cachealloc_release(a, e->addr);
      if (rc == GPUPLAN_EINVAL)
        diverge(r, i, "free_completed of 0x%llx: not an allocated block in the model", (unsigned long long)e->addr);
      else if (rc)
        goto out;
      rc = GPUPLAN_OK;
      break;
    default:
      break;
    }
    track_peak(a, r);
    if ((rc = tl_push(ctx, x, a))) goto out;
    if (x->lay_capturing) {
      int done;
      if ((rc = layout_step(ctx, a, &requested, x, i, &done)) || done) goto out;
    }
  }
  if (r->diverged_at == SIZE_MAX && d.n) {
    if ((rc = gpuplan_cachealloc_empty_cache(a))) goto out;
    CHECK_CONSUMED(s->nev);
  }
#undef CHECK_CONSUMED
  if (r->diverged_at == SIZE_MAX && (rc = compare_final(a, s, r))) goto out;
  r->exact = r->diverged_at == SIZE_MAX;
  r->peak_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].peak;
  r->final_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].current;
  r->final_reserved = (uint64_t)gpuplan_cachealloc_stats(a)->reserved_bytes[0].current;
  r->num_alloc_retries = gpuplan_cachealloc_stats(a)->num_alloc_retries;
  r->num_ooms = gpuplan_cachealloc_stats(a)->num_ooms;
  rc = summarize(s, a, x);
out:
  d.closing = 1;
  gpuplan_cachealloc_free(a); /* returns the segments through rdev_free: ignored */
  gpuplan__free(ctx, d.pend);
  gpuplan__free(ctx, d.res);
  gpuplan__amap_dispose(ctx, &requested);
  return rc;
}

/* What-if: the allocator state at the start of the trace, as rebuilt, then
 * the trace under other settings and on a device of the given capacity.
 * With the file's own settings and no capacity limit this reproduces the
 * exact replay's figures. */
static int run_whatif(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st,
                      const gpuplan_replay_options *o, gpuplan_replay_result *r, gpuplan__replay_ext *x) {
  gpuplan_alloc_conf conf;
  gpuplan_cachealloc *a = NULL;
  gpuplan__amap m, requested;
  size_t i;
  uint64_t top = 0, capacity = o->capacity ? o->capacity : (1ull << 56);
  uint64_t oom_addr = 0; /* a recorded OOM's request that succeeded here, released after its event */
  int64_t start_mallocs = 0;
  unsigned pool = 0; /* the private pool allocations are routed to (route) */
  int rc;
  memset(&m, 0, sizeof m);
  memset(&requested, 0, sizeof requested);
  if (o->alloc_conf) rc = gpuplan_alloc_conf_parse(ctx, o->alloc_conf, o->torch, &conf);
  else conf = s->conf, replay_rules(&conf, o), rc = GPUPLAN_OK;
  if (rc) return rc;
  rc = gpuplan_cachealloc_new(ctx, &conf, capacity, NULL, &a);
  if (rc) return rc;
  if (o->capacity && o->device_total > o->capacity) gpuplan__alloc_mock_total(a, o->device_total);
  if ((rc = install(a, st, NULL, NULL))) goto out;
  for (i = 0; i < st->n; i++)
    if (st->v[i]->addr + st->v[i]->size > top) top = st->v[i]->addr + st->v[i]->size;
  /* New segments come from above the recorded ones; the recorded ones
   * count against the device. */
  gpuplan__alloc_mock_above(a, top);
  if (o->trace) gpuplan_cachealloc_set_trace(a, o->trace, o->trace_payload);
  r->start_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].current;
  r->start_reserved = (uint64_t)gpuplan_cachealloc_stats(a)->reserved_bytes[0].current;
  start_mallocs = gpuplan_cachealloc_stats(a)->num_device_alloc; /* the start's segments */
  if (r->start_reserved > capacity) {
    /* Cached segments would have been released when memory ran short. */
    char A[32], C[32], F[32];
    if ((rc = gpuplan_cachealloc_empty_cache(a))) goto out;
    gpuplan__alloc_mock_above(a, 0);
    gpuplan__alloc_reset_peaks(a); /* (the installed cache never fit the card: not a peak of it) */
    gpuplan_format_size(r->start_reserved, A, sizeof A);
    gpuplan_format_size(capacity, C, sizeof C);
    gpuplan_format_size(r->start_reserved - gpuplan__alloc_mock_reserved(a), F, sizeof F);
    warn(x, "the %s reserved when the trace starts do not fit the device's %s: the %s of whole free "
            "(cached) segments among them were released first, as PyTorch's OOM retry releases them; "
            "the peaks are over the rest",
         A, C, F);
    if (gpuplan__alloc_mock_reserved(a) > capacity) {
      gpuplan_format_size(gpuplan__alloc_mock_reserved(a), A, sizeof A);
      gpuplan_format_size(capacity, C, sizeof C);
      r->oom_event = 0;
      gpuplan__alloc_count_oom(a);
      snprintf(r->oom_message, sizeof r->oom_message,
               "the %s of blocks live when the trace starts do not fit the device's %s", A, C);
    }
  }
  track_peak(a, r);
  if (x->lay_capturing) {
    int done;
    if ((rc = layout_step(ctx, a, &requested, x, SIZE_MAX, &done)) || done) goto out;
  }

  for (i = 0; i < s->nev && r->oom_event == SIZE_MAX; i++) {
    const gpuplan_alloc_event *e = &s->ev[i];
    uint64_t addr;
    r->events++;
    switch (e->action) {
    case GPUPLAN_ACT_SEGMENT_FREE:
    case GPUPLAN_ACT_SEGMENT_UNMAP:
      /* A run of cudaFrees (unmaps) that no cudaMalloc (map) or OOM ends was
       * an empty_cache(). */
      if ((i + 1 == s->nev || (s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_FREE &&
                               s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_ALLOC &&
                               s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_UNMAP &&
                               s->ev[i + 1].action != GPUPLAN_ACT_SEGMENT_MAP &&
                               s->ev[i + 1].action != GPUPLAN_ACT_OOM)) &&
          (rc = gpuplan_cachealloc_empty_cache(a)))
        goto out;
      break;
    case GPUPLAN_ACT_ALLOC:
    case GPUPLAN_ACT_OOM:
      if (s->ev_pool && (rc = route(a, s, i, &pool))) goto out;
      rc = gpuplan_cachealloc_malloc(a, e->size, e->stream, &addr);
      if (rc == GPUPLAN_EOOM) {
        r->oom_event = i;
        snprintf(r->oom_message, sizeof r->oom_message, "%s", gpuplan_errmsg(ctx));
        rc = GPUPLAN_OK;
        break;
      }
      if (rc) goto out;
      if (e->action == GPUPLAN_ACT_OOM) {
        /* The program never got it (after the OOM the trace goes on
         * without it): released once this event's figures are taken, so
         * that the timeline, the peak and the layout at the peak show the
         * request that succeeded here (review A-6: the peak counted it,
         * the timeline and "at peak reserved" did not). */
        oom_addr = addr;
      } else {
        r->allocs++;
        if (addr != e->addr && (rc = gpuplan__amap_put(ctx, &m, e->addr, addr))) goto out;
      }
      break;
    case GPUPLAN_ACT_FREE_REQUESTED:
    case GPUPLAN_ACT_FREE_COMPLETED:
      /* As in the exact replay: a free_completed without its
       * free_requested releases a block live at the start. */
      if (e->action == GPUPLAN_ACT_FREE_COMPLETED && gpuplan__amap_take(&requested, e->addr)) break;
      addr = gpuplan__amap_take(&m, e->addr);
      {
        uint64_t bsz = x->lay_capturing ? gpuplan__alloc_block_size(a, addr ? addr : e->addr) : 1;
        /* Blocks live at the start keep their recorded addresses.  A free
         * the model cannot match (an allocation that ran out of memory
         * here) is the trace's, not an error. */
        if (gpuplan_cachealloc_release(a, addr ? addr : e->addr) == GPUPLAN_ENOMEM) {
          rc = GPUPLAN_ENOMEM;
          goto out;
        }
        if (e->action == GPUPLAN_ACT_FREE_REQUESTED && (rc = gpuplan__amap_put(ctx, &requested, e->addr, bsz ? bsz : 1)))
          goto out;
      }
      break;
    default:
      break;
    }
    track_peak(a, r);
    if ((rc = tl_push(ctx, x, a))) goto out;
    if (x->lay_capturing) {
      int done;
      if ((rc = layout_step(ctx, a, &requested, x, i, &done)) || done) goto out;
    }
    if (oom_addr) {
      rc = gpuplan_cachealloc_release(a, oom_addr);
      oom_addr = 0;
      if (rc) goto out;
    }
  }
  r->exact = 0;
  r->peak_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].peak;
  r->final_allocated = (uint64_t)gpuplan_cachealloc_stats(a)->allocated_bytes[0].current;
  r->final_reserved = (uint64_t)gpuplan_cachealloc_stats(a)->reserved_bytes[0].current;
  r->segment_allocs = (size_t)(gpuplan_cachealloc_stats(a)->num_device_alloc - start_mallocs); /* the trace's */
  r->num_alloc_retries = gpuplan_cachealloc_stats(a)->num_alloc_retries;
  r->num_ooms = gpuplan_cachealloc_stats(a)->num_ooms;
  rc = summarize(s, a, x);
out:
  gpuplan__amap_dispose(ctx, &m);
  gpuplan__amap_dispose(ctx, &requested);
  gpuplan_cachealloc_free(a);
  return rc;
}

/* --- start states the file does not determine (AL-1) ------------------------ */

/* The trace was recorded with expandable segments (R26-R30). */
static int recorded_expandable(const gpuplan_snapshot *s) {
  return s->conf.expandable_segments || s->expandable_trace;
}

/* Whether a rebuilt start holds mapped ranges of expandable segments, whose
 * reservations' bases the file does not give; *n: how many reservations. */
static int rebuilt_expandable(const state *st, int *n) {
  size_t i, k;
  uint64_t seen[16][2];
  size_t ns = 0;
  *n = 0;
  for (i = 0; i < st->n; i++) {
    const rseg *g = st->v[i];
    if (!g->expandable) continue;
    for (k = 0; k < ns && !(seen[k][0] == g->stream && seen[k][1] == (uint64_t)g->small); k++) continue;
    if (k == ns && ns < 16) seen[ns][0] = g->stream, seen[ns][1] = (uint64_t)g->small, ns++;
  }
  *n = (int)ns;
  return ns > 0;
}

/* The ambiguous blocks of a rebuilt start: count, and whether one lies in
 * a segment holding addr or addr2 (addr 0: any). */
static size_t slack_blocks(const state *st, uint64_t addr, uint64_t addr2, int *in_segment) {
  size_t i, j, n = 0;
  long si = addr ? pseg_find(st->v, st->n, addr) : -1, si2 = addr2 ? pseg_find(st->v, st->n, addr2) : -1;
  *in_segment = 0;
  for (i = 0; i < st->n; i++)
    for (j = 0; j < st->v[i]->n; j++)
      if (st->v[i]->b[j].allocated && st->v[i]->b[j].slack) {
        n++;
        if (!addr || (long)i == si || (long)i == si2) *in_segment = 1;
      }
  return n;
}

/* The free block of a start state holding addr (at its start when
 * at_start) right after an ambiguous block whose size is not yet known
 * exactly, or NULL.  *k_out: the block's override, or -1. */
static const rblock *after_slack(const state *st, const overrides *ov, uint64_t addr, int at_start,
                                 const rseg **g_out, long *bi_out, long *k_out) {
  long si = pseg_find(st->v, st->n, addr), bi, k;
  const rseg *g;
  if (si < 0) return NULL;
  g = st->v[si];
  if ((bi = blk_find(g, addr)) <= 0 || g->b[bi].allocated || !g->b[bi - 1].allocated || !g->b[bi - 1].slack ||
      (at_start && g->b[bi].addr != addr))
    return NULL;
  k = override_at(ov, g->b[bi - 1].addr);
  if (k >= 0 && ov->upto[k] == ov->extra[k]) return NULL; /* known */
  *g_out = g;
  *bi_out = bi;
  *k_out = k;
  return &g->b[bi];
}

/* Learn an ambiguous block's size from the allocation that diverged; 1
 * when something was learnt.  Two things give it away:
 *  - the trace placed the allocation inside the free range that follows
 *    the block, within its slack: the block ended there;
 *  - the model placed it at the start of that range and the trace
 *    elsewhere: the range was too small for it, so the block was longer
 *    by more than the range's excess (known from then on only as a range,
 *    which the report says). */
static int learn(const gpuplan_snapshot *s, const state *st, const gpuplan_replay_result *r,
                 const gpuplan__replay_ext *x, overrides *ov) {
  const gpuplan_alloc_event *e;
  const rblock *f;
  const rseg *g;
  long bi, k;
  uint64_t need, lo, hi, now;
  if (r->diverged_at >= s->nev) return 0;
  e = &s->ev[r->diverged_at];
  if (e->action != GPUPLAN_ACT_ALLOC) return 0;
  if ((f = after_slack(st, ov, e->addr, 0, &g, &bi, &k)) != NULL) {
    now = k >= 0 ? ov->extra[k] : 0;
    lo = hi = now + (e->addr - f->addr);
  } else if (x->div_model_addr && (f = after_slack(st, ov, x->div_model_addr, 1, &g, &bi, &k)) != NULL) {
    need = gpuplan__round_size(&s->conf, e->size);
    if (f->size < need) return 0;
    now = k >= 0 ? ov->extra[k] : 0;
    lo = now + f->size - need + KMIN_BLOCK;
    hi = k >= 0 ? ov->upto[k] : now + (g->b[bi - 1].slack < f->size ? g->b[bi - 1].slack : f->size);
  } else {
    return 0;
  }
  if (lo <= now || lo > hi || lo > (k >= 0 ? ov->upto[k] : g->b[bi - 1].slack)) return 0;
  if (k < 0) {
    if (ov->n == MAX_LEARNT) return 0;
    k = (long)ov->n++;
    ov->addr[k] = g->b[bi - 1].addr;
  }
  ov->extra[k] = lo;
  ov->upto[k] = hi;
  return 1;
}

/* v + sign * n, saturated to int64_t's range: a file's sizes are any
 * uint64_t, and a hostile one must not overflow the running sums. */
static int64_t sat_add(int64_t v, uint64_t n, int sign) {
  int64_t d = n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n;
  if (sign > 0) return v > INT64_MAX - d ? INT64_MAX : v + d;
  return v < INT64_MIN + d ? INT64_MIN : v - d;
}

/* Memory as the trace itself records it, from a start state: reserved
 * from its cudaMalloc/cudaFree (and maps), allocated from its allocations
 * (rounded requests) and frees. */
static int trace_figures(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st, gpuplan_replay_result *r,
                         size_t *contradiction);

/* A divergence the file leaves open (x->unchecked_* set): the figures
 * become the trace's own.  Unless those contradict themselves (more bytes
 * in blocks than in segments at some event): then the file is not a
 * consistent trace, and the divergence stands, said so. */
static int unrounded_blocks(const gpuplan_snapshot *s);

static int unchecked_figures(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *cur, gpuplan_replay_result *r,
                             gpuplan__replay_ext *x) {
  gpuplan_replay_result kept = *r;
  size_t at;
  int rc;
  r->diverged_at = SIZE_MAX;
  r->divergence[0] = 0;
  r->exact = 0;
  if ((rc = trace_figures(ctx, s, cur, r, &at)) || at == SIZE_MAX) return rc;
  *r = kept;
  {
    char d[sizeof r->divergence];
    if (gpuplan__rounding_rules(s->conf.release) == 2 && unrounded_blocks(s))
      /* (review C-4: such a file is consistent under the release that wrote it) */
      snprintf(d, sizeof d, "%.260s; and with this release's rounding the trace's own figures contradict "
                            "themselves at event %zu (more allocated than its segments hold): its blocks are not "
                            "all 512-byte aligned, so it is not this release's trace",
               kept.divergence, at);
    else
      snprintf(d, sizeof d, "%.300s; and the trace's own figures contradict themselves at event %zu (more bytes "
                            "allocated than its segments hold): the file is not a consistent trace",
               kept.divergence, at);
    memcpy(r->divergence, d, sizeof d);
  }
  r->exact = 0;
  x->unchecked_from = x->unchecked_to = SIZE_MAX;
  x->unchecked_why[0] = 0;
  return GPUPLAN_OK;
}

static int trace_figures(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *st, gpuplan_replay_result *r,
                         size_t *contradiction) {
  gpuplan__amap live, requested;
  size_t i, j;
  int64_t alloc = 0, res = 0;
  int rc = GPUPLAN_OK;
  *contradiction = SIZE_MAX;
  memset(&live, 0, sizeof live);
  memset(&requested, 0, sizeof requested);
  for (i = 0; i < st->n && !rc; i++) {
    res = sat_add(res, st->v[i]->size, 1);
    for (j = 0; j < st->v[i]->n && !rc; j++)
      if (st->v[i]->b[j].allocated) {
        alloc = sat_add(alloc, st->v[i]->b[j].size, 1);
        rc = gpuplan__amap_put(ctx, &live, st->v[i]->b[j].addr, st->v[i]->b[j].size);
      }
  }
  r->peak_allocated = (uint64_t)alloc;
  r->peak_reserved = (uint64_t)res;
  r->allocated_at_peak_reserved = (uint64_t)alloc;
  for (i = 0; i < s->nev && !rc; i++) {
    const gpuplan_alloc_event *e = &s->ev[i];
    uint64_t sz;
    switch (e->action) {
    case GPUPLAN_ACT_ALLOC:
      sz = gpuplan__round_size(&s->conf, e->size);
      alloc = sat_add(alloc, sz, 1);
      rc = gpuplan__amap_put(ctx, &live, e->addr, sz);
      break;
    case GPUPLAN_ACT_FREE_REQUESTED:
      alloc = sat_add(alloc, gpuplan__amap_take(&live, e->addr), -1);
      rc = gpuplan__amap_put(ctx, &requested, e->addr, 1);
      break;
    case GPUPLAN_ACT_FREE_COMPLETED:
      if (!gpuplan__amap_take(&requested, e->addr)) alloc = sat_add(alloc, gpuplan__amap_take(&live, e->addr), -1);
      break;
    case GPUPLAN_ACT_SEGMENT_ALLOC:
    case GPUPLAN_ACT_SEGMENT_MAP: res = sat_add(res, e->size, 1); break;
    case GPUPLAN_ACT_SEGMENT_FREE:
    case GPUPLAN_ACT_SEGMENT_UNMAP: res = sat_add(res, e->size, -1); break;
    default: break;
    }
    if (alloc > res && *contradiction == SIZE_MAX) *contradiction = i; /* more in blocks than in segments */
    if (alloc > (int64_t)r->peak_allocated) r->peak_allocated = (uint64_t)alloc;
    if (res > (int64_t)r->peak_reserved) {
      r->peak_reserved = (uint64_t)res;
      r->allocated_at_peak_reserved = (uint64_t)alloc;
    }
  }
  r->final_allocated = (uint64_t)alloc;
  r->final_reserved = (uint64_t)res;
  gpuplan__amap_dispose(ctx, &live);
  gpuplan__amap_dispose(ctx, &requested);
  return rc;
}

/* layout_at_peak: replay again, as the last run did, up to the timeline's
 * peak of allocated bytes and the first OOM, and capture the allocator's
 * layout there (free in the normal path: nothing is copied per event). */
static int capture_layouts(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const state *cur,
                           const gpuplan_replay_options *o, int whatif, const gpuplan_replay_result *r,
                           gpuplan__replay_ext *x) {
  gpuplan_replay_options q = *o;
  gpuplan_replay_result rr;
  gpuplan__replay_ext *y;
  size_t peak = SIZE_MAX, i;
  int rc, k;
  for (i = 0; i < x->tl_n; i++)
    if (peak == SIZE_MAX || x->tl_allocated[i] > x->tl_allocated[peak]) peak = i;
  if (!(y = gpuplan__malloc(ctx, sizeof *y))) return gpuplan__nomem(ctx);
  gpuplan__replay_ext_init(y);
  y->lay_capturing = 1;
  y->lay_at[0] = peak; /* SIZE_MAX: nothing replayed, the start */
  if (peak != SIZE_MAX && r->oom_event != SIZE_MAX && r->oom_event != peak && r->oom_event < x->tl_n)
    y->lay_at[1] = r->oom_event;
  q.trace = NULL;
  q.trace_payload = NULL;
  memset(&rr, 0, sizeof rr);
  rr.diverged_at = SIZE_MAX;
  rr.oom_event = SIZE_MAX;
  rc = whatif ? run_whatif(ctx, s, cur, &q, &rr, y) : run_exact(ctx, s, cur, &q, &rr, y);
  for (k = 0; k < 2; k++) {
    layout_dispose(ctx, &x->lay[k]);
    if (rc == GPUPLAN_OK && y->lay[k].valid) x->lay[k] = y->lay[k], memset(&y->lay[k], 0, sizeof y->lay[k]);
  }
  gpuplan__replay_ext_dispose(ctx, y);
  gpuplan__free(ctx, y);
  return rc == GPUPLAN_ENOMEM ? rc : GPUPLAN_OK; /* no layout: the page rebuilds its maps */
}

int gpuplan_snapshot_replay(gpuplan_ctx *ctx, const gpuplan_snapshot *s,
                            const gpuplan_replay_options *options, gpuplan_replay_result *r) {
  gpuplan__replay_ext x;
  int rc;
  gpuplan__replay_ext_init(&x);
  rc = gpuplan__snapshot_replay_ext(ctx, s, options, r, &x);
  if (ctx) gpuplan__replay_ext_dispose(ctx, &x);
  return rc;
}

static int replay_under(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const gpuplan_replay_options *options,
                        gpuplan_replay_result *r, gpuplan__replay_ext *x);

/* A block of the file's (or an allocation of its trace) not at a multiple
 * of 512 bytes: only a release before 2.4 with a division of 1 hands such
 * blocks out. */
static int unrounded_blocks(const gpuplan_snapshot *s) {
  size_t i, j;
  for (i = 0; i < s->nev; i++)
    if (s->ev[i].action == GPUPLAN_ACT_ALLOC && s->ev[i].addr % KMIN_BLOCK) return 1;
  for (i = 0; i < s->nsegs; i++)
    for (j = 0; j < s->segs[i].n; j++)
      if (s->segs[i].b[j].addr % KMIN_BLOCK) return 1;
  return 0;
}

/* The start state is rebuilt at load under the latest release's rules.  A
 * replay under a release that rounds requests otherwise (--torch 2.0 with
 * roundup_power2_divisions:1 leaves a request unrounded, the latest rounds
 * it to 512 bytes) rebuilds it under its own, on a shallow copy of the
 * snapshot: the file's events and segments are shared, read only. */
int gpuplan__snapshot_replay_ext(gpuplan_ctx *ctx, const gpuplan_snapshot *s,
                                 const gpuplan_replay_options *options, gpuplan_replay_result *r,
                                 gpuplan__replay_ext *x) {
  gpuplan_snapshot under;
  gpuplan_replay_options full;
  unsigned release;
  int rc;
  if (options && options->version == 1) {
    /* a version-1 caller's options end before device_total */
    memset(&full, 0, sizeof full);
    memcpy(&full, options, offsetof(gpuplan_replay_options, device_total));
    full.version = GPUPLAN_REPLAY_OPTIONS_VERSION;
    options = &full;
  }
  if (!ctx || !s || !options || options->version != GPUPLAN_REPLAY_OPTIONS_VERSION ||
      !(release = gpuplan__release_of(options->torch)) ||
      gpuplan__rounding_rules(release) == gpuplan__rounding_rules(s->conf.release))
    return replay_under(ctx, s, options, r, x);
  under = *s;
  memset(&under.start, 0, sizeof under.start);
  replay_rules(&under.conf, options);
  if ((rc = start_state(ctx, &under)) == GPUPLAN_OK) rc = replay_under(ctx, &under, options, r, x);
  state_free(ctx, &under.start);
  return rc;
}

static int replay_under(gpuplan_ctx *ctx, const gpuplan_snapshot *s, const gpuplan_replay_options *options,
                        gpuplan_replay_result *r, gpuplan__replay_ext *x) {
  gpuplan_replay_options defaults = GPUPLAN_REPLAY_OPTIONS_INIT;
  const gpuplan_replay_options *o = options ? options : &defaults;
  gpuplan__replay_ext local;
  state st;     /* a start rebuilt with learnt block sizes */
  const state *cur = NULL;
  int rc;
  if (!ctx) return GPUPLAN_EMISUSE;
  if (!x) {
    /* Nothing asked for: the extras cost nothing and are dropped. */
    gpuplan__replay_ext_init(&local);
    x = &local;
  }
  if (!s || !r) return gpuplan__error(ctx, GPUPLAN_EMISUSE, "replay: NULL argument");
  if (o->version != GPUPLAN_REPLAY_OPTIONS_VERSION)
    return gpuplan__error(ctx, GPUPLAN_EINVAL, "replay: options.version %u is unknown", o->version);
  memset(r, 0, sizeof *r);
  r->diverged_at = SIZE_MAX;
  r->oom_event = SIZE_MAX;
  if (s->facts.expandable && !gpuplan__has_expandable_segments(gpuplan__release_of(o->torch))) {
    /* Review A-9: expandable segments came in 2.1 (pytorch#96995). */
    char rel[32];
    gpuplan__torch_release_name(gpuplan__release_of(o->torch), rel, sizeof rel);
    warn(x, "the file was recorded with expandable segments (segment maps, is_expandable segments or the "
            "setting), which came in torch 2.1: torch %s had none, so no run of that release wrote this file; "
            "the replay follows the file's segments with %s's other rules; replay it with --torch 2.1 or later",
         rel, rel);
  }
  if (s->private_cudamalloc && s->conf.expandable_segments &&
      gpuplan__private_pools_expandable(gpuplan__release_of(o->torch))) {
    /* R34: only a release before 2.5 gives private pools cudaMalloc
     * segments under expandable_segments. */
    char rel[32];
    gpuplan__torch_release_name(gpuplan__release_of(o->torch), rel, sizeof rel);
    warn(x, "the file's private pools have %zu cudaMalloc segment(s) under expandable_segments, as releases "
            "before 2.5 made them (R34, pytorch#128068): it was recorded with torch 2.4 or earlier, and the "
            "replay follows %s's rules; replay it with --torch 2.4 (or the release that recorded it)",
         s->private_cudamalloc, rel);
  }
  {
    overrides ov;
    int whatif = o->alloc_conf || o->capacity;
    /* A what-if starts from the state the exact replay settles on: learn
     * the ambiguous blocks' sizes with exact replays first (not when the
     * trace was recorded with expandable segments: no exact replay). */
    int learning = whatif && !recorded_expandable(s);
    gpuplan_replay_options quiet = GPUPLAN_REPLAY_OPTIONS_INIT;
    gpuplan__replay_ext scratch; /* (4 KiB: made ready only when learning) */
    int ran = 0; /* the last run is the one the results are of */
    memset(&ov, 0, sizeof ov);
    memset(&st, 0, sizeof st);
    for (;;) {
      int learnt;
      if (ov.n == 0) {
        /* Nothing learnt: the state rebuilt at load. */
        cur = &s->start;
        rc = GPUPLAN_OK;
        if (s->start_diverged != SIZE_MAX) {
          r->diverged_at = s->start_diverged;
          memcpy(r->divergence, s->start_why, sizeof r->divergence);
        }
      } else {
        state_free(ctx, &st);
        rc = state_copy(ctx, s, &st);
        if (rc == GPUPLAN_OK) rc = rebuild(ctx, s, &st, r, &ov);
        cur = &st;
      }
      if (rc == GPUPLAN_OK && r->diverged_at != SIZE_MAX) {
        /* The file contradicts itself; nothing to replay. */
        r->exact = 0;
        break;
      }
      if (rc) break;
      /* The allocator was not empty when the trace began. */
      r->rebuilt_start = cur->n > 0 && s->nev > 0;
      if (learning) {
        int any;
        learning = slack_blocks(cur, 0, 0, &any) > 0; /* nothing ambiguous: nothing to learn */
      }
      if (learning) {
        gpuplan__replay_ext_init(&scratch);
        rc = run_exact(ctx, s, cur, &quiet, r, &scratch);
        learnt = rc == GPUPLAN_OK && r->diverged_at != SIZE_MAX && learn(s, cur, r, &scratch, &ov);
        if (!learnt) learning = 0; /* what there is to learn is learnt: now the what-if */
        gpuplan__replay_ext_dispose(ctx, &scratch);
        if (rc) break;
      } else {
        rc = whatif ? run_whatif(ctx, s, cur, o, r, x) : run_exact(ctx, s, cur, o, r, x);
        ran = rc == GPUPLAN_OK;
        if (rc || whatif || r->diverged_at == SIZE_MAX || !learn(s, cur, r, x, &ov)) break;
        /* A block's size learnt from the trace: rebuild and replay again. */
        gpuplan__replay_ext_dispose(ctx, x);
        ran = 0;
        x->nwarn = 0;
        x->div_model_addr = 0;
      }
      memset(r, 0, sizeof *r);
      r->diverged_at = SIZE_MAX;
      r->oom_event = SIZE_MAX;
    }
    if (rc == GPUPLAN_OK) {
      size_t k, loose = 0;
      uint64_t low = 0;
      for (k = 0; k < ov.n; k++)
        if (ov.upto[k] > ov.extra[k]) loose++, low += ov.upto[k] - ov.extra[k];
      for (k = 0; k < ov.n && loose <= 2; k++)
        if (ov.upto[k] > ov.extra[k])
          warn(x, "the block at 0x%llx, live when the trace starts, was %llu to %llu bytes longer than its "
                  "request (an unsplit remainder); the file does not say which: allocated figures may be up to "
                  "%llu bytes low while it lives",
               (unsigned long long)ov.addr[k], (unsigned long long)ov.extra[k], (unsigned long long)ov.upto[k],
               (unsigned long long)(ov.upto[k] - ov.extra[k]));
      if (loose > 2)
        warn(x, "%zu blocks live when the trace starts were longer than their requests by amounts the file "
                "bounds but does not fix (unsplit remainders; the first at 0x%llx): allocated figures may be up "
                "to %llu bytes low while they live",
             loose, (unsigned long long)ov.addr[0], (unsigned long long)low);
    }
    if (rc == GPUPLAN_OK && s->nev == 0) {
      /* Nothing was replayed, so nothing was checked (review AL-5). */
      r->exact = 0;
      if (s->facts.traced_devices <= (size_t)s->device)
        warn(x, "the file has no trace for device %d (%s): nothing was replayed or checked; the figures are "
                "those of its final segments",
             s->device, s->facts.format == 1 ? "torch 1.13 files have none" : "it traced fewer devices");
      else
        warn(x, "the trace of device %d is empty: nothing was replayed or checked; the figures are those of "
                "the file's final segments", s->device);
    }
    if (rc == GPUPLAN_OK && !whatif && r->diverged_at != SIZE_MAX && r->diverged_at < s->nev) {
      int in_seg;
      size_t n = slack_blocks(cur, s->ev[r->diverged_at].action == GPUPLAN_ACT_ALLOC ? s->ev[r->diverged_at].addr : 0,
                              x->div_model_addr, &in_seg);
      if (n && in_seg) {
        /* Not a divergence: the start state is one of several the file
         * allows, and from here on the placement depends on which. */
        x->unchecked_from = r->diverged_at;
        x->unchecked_to = s->nev;
        snprintf(x->unchecked_why, sizeof x->unchecked_why,
                 "the file does not determine the start state: %zu block(s) live when the trace starts were "
                 "freed in it and may each have been up to 1 MiB longer than their request (PyTorch hands a "
                 "block out whole when at most 1 MiB would be left), and event %zu (%.120s) lands where only "
                 "another choice puts it; the peaks are the trace's own (its cudaMallocs and allocations)",
                 n, r->diverged_at, r->divergence);
        rc = unchecked_figures(ctx, s, cur, r, x);
      } else if (rebuilt_expandable(cur, &in_seg) || s->facts.private_segments) {
        /* Not a divergence either: what the file leaves open decides. */
        x->unchecked_from = r->diverged_at;
        x->unchecked_to = s->nev;
        if (in_seg)
          snprintf(x->unchecked_why, sizeof x->unchecked_why,
                   "the trace starts mid-run with %d expandable segment(s) mapped: the file shows their mapped "
                   "ranges but not where each reservation begins (pages below the lowest may have been mapped "
                   "and unmapped before the trace) nor which pages were mapped first; the replay assumed each "
                   "starts at its lowest mapped range, and event %zu (%.200s) lands where only another start "
                   "puts it; the peaks are the trace's own (its maps and allocations)",
                   in_seg, r->diverged_at, r->divergence);
        else
          snprintf(x->unchecked_why, sizeof x->unchecked_why,
                   "the file has %zu segment(s) of %zu private pool(s) (segment_pool_id not (0, 0): a MemPool's "
                   "or a CUDA graph's, whose blocks serve only allocations made in that pool), and its trace "
                   "entries do not say which pool an allocation was made in (torch 2.1-2.10 record none): from "
                   "event %zu (%.160s) the placement depends on it; the peaks are the trace's own",
                   s->facts.private_segments, s->facts.pools, r->diverged_at, r->divergence);
        rc = unchecked_figures(ctx, s, cur, r, x);
      }
    }
    if (rc == GPUPLAN_OK && ran && x->layout_at_peak && x->timeline)
      rc = capture_layouts(ctx, s, cur, o, whatif, r, x);
    if (rc == GPUPLAN_OK && s->skipped_events)
      warn(x, "%zu trace event(s) with an action the model does not know ('%s'%s) were skipped: the figures "
              "are those of the other events",
           s->skipped_events, s->skipped_action, s->skipped_events > 1 ? " was the first" : "");
    if (rc == GPUPLAN_OK && s->conf_unread && !o->alloc_conf)
      warn(x, "the file's recorded PYTORCH_CUDA_ALLOC_CONF '%.120s' was not read (%.200s): the settings "
              "replayed are allocator_settings' own fields (max_split_size, garbage_collection_threshold, "
              "expandable_segments, roundup_power2_divisions)",
           s->recorded_conf ? s->recorded_conf : "", s->conf_unread);
    else if (rc == GPUPLAN_OK && s->recorded_conf && *s->recorded_conf && !o->alloc_conf &&
             gpuplan__release_of(o->torch) != gpuplan__release_of(GPUPLAN_TORCH_LATEST)) {
      /* The text is read under the newest rules (the file does not say
       * its release); a key the asked release does not take means no run
       * of it recorded this file (review 2026-12-02: large_segment_size_mb
       * was modelled under --torch 1.13 without a word, while --alloc-conf
       * refuses it). */
      gpuplan_alloc_conf t;
      char rel[32], why[GPUPLAN_ERRMSG_MAX];
      if (gpuplan_alloc_conf_parse(ctx, s->recorded_conf, o->torch, &t) != GPUPLAN_OK) {
        snprintf(why, sizeof why, "%s", gpuplan_errmsg(ctx));
        gpuplan__clear(ctx);
        gpuplan__torch_release_name(gpuplan__release_of(o->torch), rel, sizeof rel);
        warn(x, "the file's recorded PYTORCH_CUDA_ALLOC_CONF '%.120s' is not what torch %s takes (%.200s): no run "
                "of that release recorded this file; the replay keeps the recorded settings under %s's other "
                "rules; replay it with the --torch that recorded it",
             s->recorded_conf, rel, why, rel);
      }
    }
    if (rc == GPUPLAN_OK && !r->exact && s->nev && gpuplan__rounding_rules(gpuplan__release_of(o->torch)) == 2 &&
        unrounded_blocks(s))
      warn(x, "the file's blocks are not all 512-byte aligned: it was recorded by torch 2.3 or earlier with a "
              "roundup_power2_divisions of 1, which left those requests unrounded (2.4 rounds them to 512 "
              "bytes, pytorch#126830); replay it with --torch 2.3 (or the release that recorded it)");
  }
  state_free(ctx, &st);
  if (r->peak_reserved)
    r->fragmentation = 1.0 - (double)r->peak_allocated / (double)r->peak_reserved;
  if (rc == GPUPLAN_OK) gpuplan__clear(ctx);
  return rc;
}
